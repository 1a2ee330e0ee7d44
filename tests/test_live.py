"""The book's explorers in a real JupyterLab, driven by Debian's Chromium as a reader would.

One JupyterLab server for the module (127.0.0.1, a free port, a random token,
temporary configuration, data, runtime, settings and workspace folders and a
copy of the book: ``live.lab.LabServer``), stopped by the
fixture's teardown, also when a test fails.  For every notebook that shows an
explorer (``widgets.show(...)``): the notebook opens unmodified, all its cells
run without an error output, every widget view renders as a live widget, the
kernel-free sweep and the note on running live (for the static HTML) are hidden, and
every slider and dropdown of every explorer, moved with the keyboard (arrow
keys on a slider, End or Home on a dropdown), changes the figure and leaves a
readout that agrees with :mod:`blockcd.theory` and :mod:`blockcd.network` for
the values the kernel now holds (read from the widget models in the page).

Skipped, with the reason, without Chromium, Playwright or JupyterLab, except
when ``BLOCKCD_REQUIRE_BROWSER=1`` (set by ``.ci/run``), where they are
required.  The latency of the explorers is measured, not asserted, by
``python -m tests.live --bench --live``.
"""

from __future__ import annotations

import importlib.util
import inspect
import math
import os
import re
import time

import numpy as np
import pytest
from conftest import Z

REQUIRED = os.environ.get("BLOCKCD_REQUIRE_BROWSER") == "1"
_missing = []
if importlib.util.find_spec("jupyterlab") is None:
    _missing.append("JupyterLab is not installed (pip install -r requirements.txt)")
if importlib.util.find_spec("playwright") is None:
    _missing.append("Playwright is not installed (pip install playwright)")
from live import lab as live

if live.chromium() is None:
    _missing.append("Chromium is not installed (Debian: apt-get install chromium)")
if _missing:
    if REQUIRED:
        raise RuntimeError("; ".join(_missing) + "; BLOCKCD_REQUIRE_BROWSER=1 demands the live test")
    pytest.skip("; ".join(_missing), allow_module_level=True)

from playwright.sync_api import sync_playwright

from blockcd import network, problems, theory, widgets
from blockcd.widgets.controls import fmt_int

NOTEBOOKS = live.explorer_notebooks()
#: control description -> builder argument
PARAM = {"workers n": "n", "blocks m": "m", "sent τ": "tau", "step / theory": "step_scale", "seed": "seed",
         "dimension d": "d", "iterations": "iters", "method": "method", "split": "split", "problem": "problem",
         "link": "link", "model": "model", "Gbit/s": "bandwidth", "latency µs": "latency", "parameters d": "d"}
#: what the module moved, (notebook, explorer, control, key), for the line printed at the end
MOVED: list[tuple[str, str, str, str]] = []


def test_the_book_has_explorers():
    assert len(NOTEBOOKS) >= 6, f"expected the chapters' explorers, found notebooks {NOTEBOOKS}"


@pytest.fixture(scope="module")
def server(request):
    t0 = time.monotonic()
    with live.LabServer() as s:
        yield s
    if MOVED:  # the count of controls moved, on the terminal (not a check)
        controls = {(nb, ex, label) for nb, ex, label, _ in MOVED}
        with request.config.pluginmanager.get_plugin("capturemanager").global_and_fixture_disabled():
            print(f"\nlive test: {len(controls)} controls moved ({len(MOVED)} key presses) in "
                  f"{len({nb for nb, *_ in MOVED})} notebooks, {time.monotonic() - t0:.0f} s", flush=True)


@pytest.fixture(scope="module")
def browser():
    with sync_playwright() as pw:
        b = live.launch_browser(pw)
        yield b
        b.close()


@pytest.fixture(scope="module", params=NOTEBOOKS)
def notebook(request, server, browser):
    """A notebook opened in JupyterLab and run: (lab, name, modified after opening, outputs)."""
    name = request.param
    lab = live.Lab(server, browser)
    try:
        lab.open(name)
        time.sleep(2.0)  # JupyterLab rewrites stale metadata (the kernel's name) once the kernel has answered
        modified = lab.dirty()
        outputs = lab.run_all()
        yield lab, name, modified, outputs
        lab.shutdown()
    finally:
        lab.close()


def test_notebook_opens_unmodified(notebook):
    _, name, modified, _ = notebook
    assert not modified, f"{name}: JupyterLab marks it modified on opening (closing it would ask to save)"


def test_cells_run_without_error_output(notebook):
    _, name, _, outputs = notebook
    bad = [o for o in outputs if o["type"] == "error" or (o["type"] == "stream" and o["name"] == "stderr")]
    assert not bad, f"{name}: " + "; ".join(
        f"cell {o['cell']}: {o['ename'] or 'stderr'} {o['evalue'] or ''.join(o['text'])[:300]}" for o in bad)
    assert any(o["type"] == "execute_result" or o["type"] == "display_data" for o in outputs), (
        f"{name}: no output at all after running all cells")


def test_every_widget_view_renders_live(notebook):
    lab, name, _, outputs = notebook
    views = [o for o in outputs if "application/vnd.jupyter.widget-view+json" in o["mimes"]]
    calls = live.explorer_cells(lab.server.root / name)
    assert len(views) == len(calls), f"{name}: {len(calls)} explorers shown but {len(views)} widget views output"
    assert not lab.widget_errors(), f"{name}: widget views not rendered: {lab.widget_errors()}"
    assert lab.panel_count() == len(calls), (
        f"{name}: {lab.panel_count()} live explorer panels in the page for {len(calls)} explorers")
    for ex in lab.explorers():
        assert ex.image_ok(), f"{name}: the {ex.name} explorer's figure is not a loaded image"
        assert ex.controls(), f"{name}: the {ex.name} explorer shows no controls"


def test_the_kernel_free_sweep_and_its_note_are_hidden_live(notebook):
    lab, name, _, _ = notebook
    shown = lab.page.evaluate(
        "() => [...document.querySelectorAll('.jp-OutputArea-output .blockcd-sweep, "
        ".jp-OutputArea-output .blockcd-note')].map(e => e.offsetParent !== null)")
    n = len(live.explorer_cells(lab.server.root / name))
    assert len(shown) == 2 * n, f"{name}: {len(shown)} sweeps and notes for {n} explorers (expected one of each)"
    assert not any(shown), f"{name}: the pre-rendered sweep or the note on running live shows under a live kernel"


_RAW_MYST = re.compile(r"\{(cite|prf|numref|ref|eq|doc)(:[a-z]+)?\}`|^(`{3,}|:{3,})\{[a-z:-]+\}|^:label:", re.MULTILINE)


def _markdown_sources(path) -> str:
    import json

    nb = json.loads(path.read_text(encoding="utf-8"))
    return "\n".join("".join(c["source"]) for c in nb["cells"] if c["cell_type"] == "markdown")


def test_myst_markup_renders_in_jupyterlab(notebook):
    """jupyterlab-myst draws the book's MyST: prf directives as proof blocks, cite roles as citations.

    The source's directives ({prf:lemma}, {prf:proof}, ...) each become an
    ``aside.myst-proof``; each key of a {cite}/{cite:t} role a citation element.  No rendered cell shows the markup itself.  (jupyterlab-myst does not read
    BibTeX files, so a citation shows its key, marked "Citation Not Found": rendered,
    not raw text; the book's HTML resolves it from book/references.bib.)
    """
    lab, name, _, _ = notebook
    src = _markdown_sources(lab.server.root / name)
    md = lab.markdown()
    assert md["cells"] and md["myst"] == md["cells"], (
        f"{name}: {md['myst']} of {md['cells']} markdown cells drawn by the MyST renderer (jupyterlab-myst)")
    raw = [m.group(0) for t in md["texts"] for m in [_RAW_MYST.search(t)] if m]
    assert not raw, f"{name}: MyST markup shown as text in JupyterLab: {raw[:5]}"
    directives = len(re.findall(r"^(`{3,}|:{3,})\{prf:[a-z]+\}", src, flags=re.MULTILINE))
    assert md["proofs"] == directives, f"{name}: {directives} prf directives, {md['proofs']} proof blocks drawn"
    keys = [k.strip() for m in re.finditer(r"\{cite(?::[a-z]+)?\}`([^`]+)`", src) for k in m.group(1).split(",")]
    assert sorted(md["cites"]) == sorted(keys), (
        f"{name}: the source cites {sorted(keys)}, JupyterLab draws the citations {sorted(md['cites'])}")
    if name == "04_ibcd.ipynb":  # the chapter this test is written against: a theorem and {cite:t}
        assert directives >= 3 and any("mishchenko2020" in c for c in md["cites"])


# --------------------------------------------------------------------------- readouts against the theory
def _settings(ex: live.Explorer, values: dict) -> dict:
    """The builder's defaults, the chapter's arguments, then the controls' values (what the kernel holds)."""
    s = {k: p.default for k, p in inspect.signature(widgets.EXPLORERS[ex.name]).parameters.items()}
    s.update(ex.kwargs)
    s.update({PARAM[k]: v for k, v in values.items()})
    return s


def _problem(kind, n, d, split, seed):
    """The explorers' problems as the convergence_explorer docstring documents them."""
    if kind == "breast cancer":
        return problems.breast_cancer(n, split=split, seed=seed)
    if kind == "digits":
        return problems.digits(n, split=split, seed=seed)
    extra = {"ridge": {}, "interpolating": {"interpolating": True}, "heterogeneous": {"heterogeneity": 1.0},
             "logistic": {"loss": "logistic", "lam": 1e-2}}[kind]
    return problems.synthetic(n, max(min(100, math.ceil(2000 / n)), math.ceil(2 * d / n)), d, cond=10, split=split, seed=seed, **extra)


def _expect_in(info: str, parts: list[str], what: str) -> None:
    missing = [p for p in parts if p not in info]
    assert not missing, f"{what}: the readout lacks {missing}; it reads: {info!r}"


def check_template(s, info, what):
    n, m, tau, d = s["n"], s["m"], s["tau"], s["d"]
    p = _problem(s["problem"], n, d, "contiguous", s["seed"])
    _expect_in(info, [f"n d = {n * d:,.0f} numbers",
                      f"1 + (m/τ − 1) r/n = {theory.predicted_ratio(p, 'ibcd', m, tau):.3g}, r = {p.r:.3g}"], what)


def check_variance(s, info, what):
    n, m, tau, d = s["n"], s["m"], s["tau"], s["d"]
    if tau == m:
        _expect_in(info, ["ω = 0"], what)
        return
    G = _problem("ridge", n, d, "contiguous", s["seed"]).local_grads(np.zeros(d))
    norm = float(np.mean(np.sum(G**2, axis=1)))
    ind = theory.aggregation_variance(G, m, tau, "independent") / norm
    sh = theory.aggregation_variance(G, m, tau, "shared") / norm
    _expect_in(info, [f"ω = m/τ − 1 = {theory.omega(m, tau):.3g}", f"predicted ω/n = {ind:.3g}",
                      f"= {sh:.3g} ({s['trials']} draws"], what)
    # the Monte-Carlo numbers shown agree with the key lemma within Z standard errors (3 digits shown)
    for label, pred in (("Independent", ind), ("shared", sh)):
        mo = re.search(label + r": measured ([-\d.e+]+) ± ([-\d.e+]+)", info)
        assert mo, f"{what}: no measured variance for {label} in {info!r}"
        est, se = float(mo.group(1)), float(mo.group(2))
        assert abs(est - pred) <= Z * se + 5e-3 * abs(pred), f"{what}: {label} measured {est} ± {se}, lemma {pred}"


def check_convergence(s, info, what):
    method, n, m, tau, seed = s["method"], s["n"], s["m"], s["tau"], s["seed"]
    p = _problem(s["problem"], n, s["d"], s["split"], seed)
    try:
        step0 = theory.step_size(p, method, m, tau)
    except ValueError as exc:  # the method's theory does not cover this problem: the explorer must say why
        _expect_in(info, [str(exc)], what)
        return
    step = s["step_scale"] * step0
    parts = [f"step γ = {step:.3g} ({s['step_scale']:g} × the theory's {step0:.3g})",
             f"κ = {p.kappa:.3g}, r = {p.r:.3g}"]
    if s["step_scale"] <= 1 + 1e-12:
        pred = theory.predicted_iterations(p, method, m, tau, s["eps"], step=step)
        parts.append(f"theorem ≤ {fmt_int(pred)}" if math.isfinite(pred) else "lies inside its neighbourhood")
    elif "Diverged" in info:  # above the theory's step nothing is promised; the message must say so
        _expect_in(info, [f"a step {s['step_scale']:g} × the theory's is above the stable range"], what)
        return
    _expect_in(info, parts, what)


def check_time(s, info, what):
    n, tau, m, d = s["n"], s["tau"], s["m"], round(s["d"])
    bw, lat, r, cpp = s["bandwidth"] * 1e9, s["latency"] * 1e-6, min(s["r"], s["n"]), s["compute_per_parameter"]
    T = network.round_time(n, d, m, tau, bandwidth=bw, latency=lat, compute=cpp * d)
    K = network.iterations(s["kappa"], r, n, m, tau, s["eps"])
    c0, c1 = network.round_cost_coefficients(n, d, m, bandwidth=bw, latency=lat, compute=cpp * d)
    t_star = theory.time_optimal_tau(1.0, r, n, m, c0, c1)
    _expect_in(info, [f"τ = {tau}: a round takes {T * 1e3:.3g} ms", f"K(τ) = {K:,.0f} rounds",
                      f"= {t_star:.3g} against m/n = {m / n:.3g}"], what)


CHECKS = {"template": check_template, "variance": check_variance, "convergence": check_convergence,
          "playground": check_convergence, "time": check_time}


def test_every_control_moves_the_figure_and_the_readout_follows_theory(notebook):
    lab, name, _, _ = notebook
    for ex in lab.explorers():
        check = CHECKS[ex.name]
        controls = ex.controls()
        assert controls, f"{name}: the {ex.name} explorer has no controls"
        for i in range(len(controls)):
            c = ex.controls()[i]
            if c["disabled"]:  # e.g. d for a real data set; it must say so by being disabled, and is not moved
                continue
            keys = [ex.key_for(c)]
            if c["kind"] == "dropdown":  # there and back: End then Home, or Home then End
                keys.append("Home" if keys[0] == "End" else "End")
            for key in keys:
                before, old_info, old = ex.values(), ex.info(), ex.arm()
                ex.press(i, key)
                ex.wait_redraw(old)
                values = ex.values()
                what = f"{name}, {ex.name} explorer, {c['label']} {key}"
                assert values[c["label"]] != before[c["label"]], f"{what}: the control's value did not change"
                info = ex.info()
                assert info != old_info, f"{what}: the figure changed but the readout did not"
                check(_settings(ex, values), info, what)
                MOVED.append((name, ex.name, c["label"], key))

