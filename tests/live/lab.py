"""The explorers in a real JupyterLab, driven by a browser: what ``tests/test_live.py`` and ``--bench --live`` use.

:class:`LabServer` starts JupyterLab on 127.0.0.1 (a free port, a random token,
its own temporary configuration, data, runtime, settings and workspace folders,
and a copy of the book, so nothing a run does reaches the checkout or the
user's set-up) and stops it, killing it if it does not stop.  :class:`Lab`
drives it with Playwright and a system Chromium (Playwright downloads nothing):
open a notebook, run all its cells, read its outputs, find the explorers' live
views and press keys on their controls.  :func:`bench_live` measures, per
explorer, the time from the last of three key presses on its first slider to
the figure's redraw in the browser.

Every wait has a timeout and fails with :class:`LiveError` saying what it
waited for.  Nothing here asserts what a chapter shows; the checks are in
``tests/test_live.py``.
"""

from __future__ import annotations

import ast
import json
import os
import re
import secrets
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
import urllib.request
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[2]
BOOK = ROOT / "book"
CHROMIUM_FLAGS = [
    "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
    "--disable-background-networking", "--disable-component-update", "--disable-sync",
]
#: JupyterLab settings of the test's user: no autosave (the copy stays as it was opened), every cell
#: rendered (no windowing, so every explorer is in the page), no news prompt
LAB_SETTINGS = {
    "@jupyterlab/docmanager-extension/plugin": {"autosave": False},
    "@jupyterlab/notebook-extension/tracker": {"windowingMode": "none"},
    "@jupyterlab/apputils-extension/notification": {"fetchNews": "false", "checkForUpdates": False},
}
_SHOW = re.compile(r"widgets\.show\(")


class LiveError(RuntimeError):
    """A wait on the live JupyterLab ran out, or the server or a page failed."""


def chromium() -> str | None:
    """Path of the system Chromium, or None."""
    return shutil.which("chromium") or shutil.which("chromium-browser")


def explorer_cells(path: Path) -> list[tuple[str, dict]]:
    """(explorer name, keyword arguments) of every ``widgets.show(...)`` call in a notebook's code cells."""
    nb = json.loads(Path(path).read_text(encoding="utf-8"))
    out = []
    for cell in nb["cells"]:
        src = "".join(cell["source"]) if isinstance(cell["source"], list) else cell["source"]
        if cell["cell_type"] != "code" or not _SHOW.search(src):
            continue
        for node in ast.walk(ast.parse(src)):
            if isinstance(node, ast.Call) and getattr(node.func, "attr", None) == "show":
                out.append((ast.literal_eval(node.args[0]),
                            {k.arg: ast.literal_eval(k.value) for k in node.keywords}))
    return out


def explorer_notebooks() -> list[str]:
    """Names of the book's notebooks that show an explorer."""
    return sorted(p.name for p in BOOK.glob("*.ipynb") if explorer_cells(p))


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class LabServer:
    """JupyterLab on 127.0.0.1 with a temporary token and folders; a context manager that stops it."""

    def __init__(self, *, startup_timeout: float = 90.0):
        self.startup_timeout = startup_timeout
        self.proc: subprocess.Popen | None = None

    def __enter__(self) -> LabServer:  # noqa: PYI034 - not subclassed
        try:
            self.start()
        except BaseException:
            self.stop()
            raise
        return self

    def __exit__(self, *exc) -> None:
        self.stop()

    def start(self) -> None:
        self.tmp = Path(tempfile.mkdtemp(prefix="blockcd-lab-"))
        self.root = self.tmp / "book"
        shutil.copytree(BOOK, self.root, ignore=shutil.ignore_patterns("_build", ".ipynb_checkpoints"))
        dirs = {k: self.tmp / k for k in ("config", "data", "runtime", "settings", "workspaces", "ipython")}
        for d in dirs.values():
            d.mkdir()
        for plugin, values in LAB_SETTINGS.items():
            f = dirs["settings"] / f"{plugin}.jupyterlab-settings"
            f.parent.mkdir(parents=True, exist_ok=True)
            f.write_text(json.dumps(values))
        self.port = _free_port()
        self.token = secrets.token_hex(24)
        env = dict(os.environ, JUPYTER_CONFIG_DIR=str(dirs["config"]), JUPYTER_DATA_DIR=str(dirs["data"]),
                   JUPYTER_RUNTIME_DIR=str(dirs["runtime"]), JUPYTERLAB_SETTINGS_DIR=str(dirs["settings"]),
                   JUPYTERLAB_WORKSPACES_DIR=str(dirs["workspaces"]), IPYTHONDIR=str(dirs["ipython"]),
                   # the kernels import this checkout's library (they inherit the server's environment)
                   PYTHONPATH=os.pathsep.join([str(ROOT), *filter(None, [os.environ.get("PYTHONPATH")])]))
        cmd = [sys.executable, "-m", "jupyterlab", "--no-browser", "--ServerApp.ip=127.0.0.1",
               f"--ServerApp.port={self.port}", "--ServerApp.port_retries=0",
               f"--IdentityProvider.token={self.token}", f"--ServerApp.root_dir={self.root}",
               "--LabApp.expose_app_in_browser=True", "--LabApp.extension_manager=readonly",
               "--LabApp.check_for_updates_class=jupyterlab.NeverCheckForUpdate", "--LabApp.news_url=None"]
        if hasattr(os, "geteuid") and os.geteuid() == 0:
            cmd.append("--ServerApp.allow_root=True")
        self.log_path = self.tmp / "server.log"
        self._log = open(self.log_path, "w")  # noqa: SIM115 - closed in stop()
        self.proc = subprocess.Popen(cmd, env=env, stdout=self._log, stderr=subprocess.STDOUT,
                                     start_new_session=True)
        self.base = f"http://127.0.0.1:{self.port}"
        deadline = time.monotonic() + self.startup_timeout
        while True:
            if self.proc.poll() is not None:
                raise LiveError(f"JupyterLab exited with code {self.proc.returncode}:\n{self.log()}")
            try:
                with urllib.request.urlopen(f"{self.base}/api/status?token={self.token}", timeout=2) as r:
                    json.loads(r.read())
                return
            except OSError:
                if time.monotonic() > deadline:
                    raise LiveError(f"JupyterLab did not answer within {self.startup_timeout:g} s:\n"
                                    f"{self.log()}") from None
                time.sleep(0.25)

    def url(self, notebook: str) -> str:
        """The notebook in a reset workspace (JupyterLab would otherwise reopen every notebook opened before)."""
        return f"{self.base}/lab/tree/{notebook}?reset&token={self.token}"

    def log(self, tail: int = 4000) -> str:
        try:
            return self.log_path.read_text(errors="replace")[-tail:]
        except (AttributeError, OSError):
            return ""

    def stop(self) -> None:
        """Stop the server (SIGTERM to its process group, SIGKILL after 20 s) and remove its folders."""
        if self.proc is not None and self.proc.poll() is None:
            try:
                os.killpg(self.proc.pid, signal.SIGTERM)
                self.proc.wait(20)
            except subprocess.TimeoutExpired:
                os.killpg(self.proc.pid, signal.SIGKILL)
                self.proc.wait(10)
            except ProcessLookupError:
                pass
        if getattr(self, "_log", None) is not None:
            self._log.close()
        if getattr(self, "tmp", None) is not None:
            shutil.rmtree(self.tmp, ignore_errors=True)


# --------------------------------------------------------------------------- the page
_JS_READY = """async (ms) => {
  const app = window.jupyterapp, p = app.shell.currentWidget;
  const t = new Promise((_, no) => setTimeout(() => no(new Error('kernel not ready after ' + ms + ' ms')), ms));
  await Promise.race([Promise.all([p.context.ready, p.sessionContext.ready]), t]);
  return p.context.model.dirty;
}"""
_JS_RUN_ALL = """async (ms) => {
  const app = window.jupyterapp;
  const t = new Promise((_, no) => setTimeout(() => no(new Error('cells still running after ' + ms + ' ms')), ms));
  return await Promise.race([app.commands.execute('notebook:run-all-cells'), t]);
}"""
_JS_OUTPUTS = """() => {
  const p = window.jupyterapp.shell.currentWidget, out = [];
  let i = -1;
  for (const c of p.content.model.cells) {
    i += 1;
    if (c.type !== 'code') continue;
    for (const o of c.outputs.toJSON()) out.push({cell: i, count: c.executionCount, type: o.output_type,
      name: o.name || '', text: o.text || '', ename: o.ename || '', evalue: o.evalue || '',
      mimes: Object.keys(o.data || {})});
  }
  return out;
}"""
#: the explorers' panels: a VBox holding an image, not inside another one
_PANEL = ".jp-OutputArea-output .widget-vbox:has(> .widget-image)"
_JS_CONTROLS = """(panel) => [...panel.querySelectorAll('.widget-slider, .widget-dropdown')].map(el => {
  const label = el.querySelector('.widget-label').textContent.trim();
  const sel = el.querySelector('select');
  if (sel) return {label, kind: 'dropdown', value: sel.value, index: sel.selectedIndex,
                   count: sel.options.length, disabled: sel.disabled};
  const s = el.querySelector('.noUi-target'), h = el.querySelector('.noUi-handle');
  return {label, kind: 'slider', raw: Number(s.noUiSlider.get(true)), min: Number(h.getAttribute('aria-valuemin')),
          max: Number(h.getAttribute('aria-valuemax')), readout: el.querySelector('.widget-readout').textContent.trim(),
          disabled: s.hasAttribute('disabled')};
})"""
_JS_MODELS = """async (idx) => {
  const p = window.jupyterapp.shell.currentWidget, ids = [];
  let manager = null;
  for (const cell of p.content.widgets) {
    if (!cell.outputArea) continue;
    for (const o of cell.model.outputs.toJSON()) {
      const v = (o.data || {})['application/vnd.jupyter.widget-view+json'];
      if (v) ids.push(v.model_id);
    }
    for (const child of cell.outputArea.widgets)
      for (const w of (child.widgets || [])) if (w._manager) manager = w._manager.promise || w._manager;
  }
  const root = await (await manager).get_model(ids[idx]);
  const out = [];
  const walk = (m) => {
    const name = m.get('_model_name'), kids = m.get('children');
    if (kids) { kids.forEach(walk); return; }
    if (/Slider|Dropdown/.test(name)) out.push({description: m.get('description'), model: name, value: m.get('value'),
      index: m.get('index'), options: m.get('_options_labels'), disabled: m.get('disabled')});
  };
  walk(root);
  return out;
}"""
_JS_PROBE = """(panel) => {
  const img = panel.querySelector(':scope > .widget-image');
  if (!panel.__probe) {
    panel.__probe = {keys: [], loads: []};
    panel.addEventListener('keydown', () => panel.__probe.keys.push(performance.now()), true);
    img.addEventListener('load', () => panel.__probe.loads.push(performance.now()));
  }
  panel.__probe.keys.length = 0; panel.__probe.loads.length = 0;
  return img.src;
}"""


class Explorer:
    """One explorer's live view in the page: its controls, its image and the line under it."""

    def __init__(self, lab: Lab, index: int, name: str, kwargs: dict):
        self.lab, self.index, self.name, self.kwargs = lab, index, name, kwargs
        self.handle = lab.page.locator(_PANEL).nth(index)

    def controls(self) -> list[dict]:
        return self.handle.evaluate(_JS_CONTROLS)

    def values(self) -> dict[str, float | int | str]:
        """Control description -> value, read from the widget models in the page (what the kernel holds)."""
        out = {}
        for c in self.lab.page.evaluate(_JS_MODELS, self.index):
            if "Dropdown" in c["model"]:  # no index: a blank dropdown (value None)
                out[c["description"]] = None if c["index"] is None else c["options"][c["index"]]
            elif "Selection" in c["model"]:  # a slider over numbers, labelled with "%g"
                out[c["description"]] = float(c["options"][c["index"]])
            else:
                out[c["description"]] = c["value"]
        return out

    def src(self) -> str:
        return self.handle.evaluate("p => p.querySelector(':scope > .widget-image').src")

    def info(self) -> str:
        return self.handle.evaluate("p => p.querySelector(':scope > .widget-html').innerText")

    def image_ok(self) -> bool:
        return self.handle.evaluate(
            "p => { const i = p.querySelector(':scope > .widget-image'); "
            "return !!i && i.complete && i.naturalWidth > 0 && i.src.startsWith('blob:'); }")

    def key_for(self, control: dict) -> str:
        """The key that moves a control one step inside its range (forward unless at the end)."""
        if control["kind"] == "dropdown":
            # JupyterLab takes a select's arrow keys for moving between cells; End and Home reach the select
            return "End" if control["index"] < control["count"] - 1 else "Home"
        return "ArrowRight" if control["raw"] < control["max"] else "ArrowLeft"

    def focus(self, i: int) -> None:
        el = self.handle.locator(".widget-slider, .widget-dropdown").nth(i)
        el.locator("select, .noUi-handle").first.focus()

    def press(self, i: int, key: str, times: int = 1, delay: float = 0.03) -> None:
        """Focus control ``i`` and press ``key`` ``times`` times, ``delay`` seconds apart."""
        self.focus(i)
        for k in range(times):
            if k:
                time.sleep(delay)
            self.lab.page.keyboard.press(key)

    def arm(self) -> str:
        """Start recording key presses and image loads in the page; returns the image's current source."""
        return self.handle.evaluate(_JS_PROBE)

    def wait_redraw(self, old_src: str, timeout: float = 60.0) -> None:
        """Wait until the figure shows a new image (a new source, loaded)."""
        from playwright.sync_api import Error

        try:
            self.handle.evaluate(
                """async (p, [old, ms]) => { const t0 = performance.now();
                   while (true) { const i = p.querySelector(':scope > .widget-image');
                     if (i.src !== old && i.complete && i.naturalWidth > 0) return true;
                     if (performance.now() - t0 > ms) throw new Error('no redraw');
                     await new Promise(r => setTimeout(r, 20)); } }""",
                [old_src, timeout * 1e3])
        except Error as exc:
            raise LiveError(f"{self.name} explorer: the figure did not change within {timeout:g} s "
                            f"({exc})") from None

    def wait_settled(self, quiet: float = 1.0, timeout: float = 60.0) -> tuple[list[float], list[float]]:
        """Wait until no image has loaded for ``quiet`` s after the last key press; (key times, load times) in ms."""
        deadline = time.monotonic() + timeout
        while True:
            probe = self.handle.evaluate("p => [p.__probe.keys.slice(), p.__probe.loads.slice(), performance.now()]")
            keys, loads, now = probe
            if keys and loads and loads[-1] > keys[-1] and now - loads[-1] > quiet * 1e3:
                return keys, loads
            if time.monotonic() > deadline:
                raise LiveError(f"{self.name} explorer: no settled redraw {timeout:g} s after the key presses "
                                f"(keys {len(keys)}, images loaded {len(loads)})")
            time.sleep(0.05)


class Lab:
    """A browser page on a :class:`LabServer`: open a notebook, run it, find its explorers."""

    def __init__(self, server: LabServer, browser, *, viewport=(1400, 1000)):
        self.server = server
        self.context = browser.new_context(viewport={"width": viewport[0], "height": viewport[1]})
        self.page = self.context.new_page()
        self.console_errors: list[str] = []
        self.page.on("console", lambda m: self.console_errors.append(m.text) if m.type == "error" else None)
        self.page.on("pageerror", lambda e: self.console_errors.append(str(e)))

    def close(self) -> None:
        self.context.close()

    def open(self, notebook: str, timeout: float = 120.0) -> bool:
        """Open a notebook and wait for its kernel; returns whether JupyterLab marks it modified."""
        from playwright.sync_api import Error

        self.notebook = notebook
        self.page.goto(self.server.url(notebook), timeout=timeout * 1e3)
        try:
            self.page.wait_for_function(
                f"() => window.jupyterapp && window.jupyterapp.shell.currentWidget && "
                f"window.jupyterapp.shell.currentWidget.title.label === {json.dumps(notebook)}",
                timeout=timeout * 1e3)
            return self.page.evaluate(_JS_READY, timeout * 1e3)
        except Error as exc:
            raise LiveError(f"{notebook}: JupyterLab did not open it with a ready kernel within "
                            f"{timeout:g} s ({exc})\n{self.server.log()}") from None

    def dirty(self) -> bool:
        return self.page.evaluate("() => window.jupyterapp.shell.currentWidget.context.model.dirty")

    def run_all(self, timeout: float = 900.0) -> list[dict]:
        """Run all cells and wait for the last; returns the outputs (cell, type, name, text, ename, mimes)."""
        from playwright.sync_api import Error

        try:
            ok = self.page.evaluate(_JS_RUN_ALL, timeout * 1e3)
        except Error as exc:
            raise LiveError(f"{self.notebook}: running all cells failed or took over {timeout:g} s "
                            f"({exc})") from None
        outputs = self.page.evaluate(_JS_OUTPUTS)
        if not ok and not any(o["type"] == "error" for o in outputs):
            raise LiveError(f"{self.notebook}: run all cells reported failure without an error output")
        return outputs

    def explorers(self) -> list[Explorer]:
        """The live views of the notebook's explorers, in order, named from its ``widgets.show`` calls."""
        calls = explorer_cells(self.server.root / self.notebook)
        return [Explorer(self, i, name, kw) for i, (name, kw) in enumerate(calls)]

    def markdown(self, timeout: float = 60.0) -> dict:
        """What JupyterLab's MyST renderer (jupyterlab-myst) made of the markdown cells, once all are rendered.

        Returns ``{"cells", "myst", "proofs", "cites", "texts"}``: the number of
        markdown cells, how many of them the MyST renderer drew (a ``.myst``
        node), the proof-like blocks (``aside.myst-proof``: prf directives),
        the text of every citation (one element per key) and the rendered text of every cell.
        """
        from playwright.sync_api import Error

        js = """() => { const p = window.jupyterapp.shell.currentWidget;
          const cells = p.content.widgets.filter(c => c.model.type === 'markdown');
          const nodes = cells.map(c => c.node.querySelector('.myst')).filter(n => n);
          return {cells: cells.length, myst: nodes.length,
                  proofs: nodes.reduce((k, n) => k + n.querySelectorAll('aside.myst-proof').length, 0),
                  cites: nodes.flatMap(n => [...n.querySelectorAll('cite, [title="Citation Not Found"]')]
                                              .map(e => e.textContent.trim())),
                  texts: nodes.map(n => n.innerText)}; }"""
        try:  # JupyterLab draws markdown cells out of view when idle; this draws them all now
            self.page.evaluate("() => window.jupyterapp.commands.execute('notebook:render-all-markdown')")
        except Error as exc:
            raise LiveError(f"{self.notebook}: rendering the markdown cells failed ({exc})") from None
        # a cell being redrawn has no MyST node for a moment: wait until two looks 0.5 s apart agree
        deadline, last = time.monotonic() + timeout, None
        while True:
            md = self.page.evaluate(js)
            if md["myst"] == md["cells"] and last is not None and last["myst"] == md["cells"]:
                return md
            if time.monotonic() > deadline:
                return md  # the caller reports myst < cells
            last = md
            time.sleep(0.5)

    def panel_count(self) -> int:
        return self.page.locator(_PANEL).count()

    def widget_errors(self) -> list[str]:
        """Texts of widget views that failed to render (ipywidgets writes 'Error displaying widget')."""
        return self.page.evaluate(
            "() => [...document.querySelectorAll('.jp-OutputArea-output')].map(e => e.innerText)"
            ".filter(t => /Error displaying widget|Loading widget/.test(t))")

    def shutdown(self) -> None:
        """Shut the notebook's kernel down and close it without saving (the copy is discarded anyway)."""
        self.page.evaluate("""async () => { const p = window.jupyterapp.shell.currentWidget;
            await p.sessionContext.shutdown(); p.context.model.dirty = false; p.dispose(); }""")


def launch_browser(pw):
    """Chromium from the system (Playwright downloads nothing)."""
    exe = chromium()
    if exe is None:
        raise LiveError("Chromium is not installed (Debian: apt-get install chromium)")
    return pw.chromium.launch(executable_path=exe, args=CHROMIUM_FLAGS)


def first_slider(controls: list[dict]) -> int:
    return next(i for i, c in enumerate(controls) if c["kind"] == "slider" and not c["disabled"])


def measure(ex: Explorer, repeats: int = 5, presses: int = 3) -> list[float]:
    """Seconds from the last of ``presses`` key presses on the first slider to the last redraw, ``repeats`` times.

    Each repetition moves the slider ``presses`` steps, 30 ms apart, as a reader
    holding an arrow key, and waits until no new image has loaded for a second.
    All repetitions go the same way: forward, or backward when the range
    ahead is too short for all of them (a slider at the end of its range), so
    every repetition reaches values not drawn before (none is served from a
    cache of an earlier one).  ``ex.redraws`` keeps the number of images drawn
    per repetition (``presses`` without coalescing, fewer with it).
    """
    out = []
    ex.redraws = []
    controls = ex.controls()
    i = first_slider(controls)
    c = controls[i]
    key = "ArrowRight" if c["raw"] + presses * repeats <= c["max"] else "ArrowLeft"
    for _ in range(repeats):
        ex.arm()
        ex.press(i, key, presses)
        keys, loads = ex.wait_settled()
        out.append((loads[-1] - keys[-1]) / 1e3)
        ex.redraws.append(sum(t > keys[0] for t in loads))
    return out


#: the notebook :func:`bench_live` writes into the server's copy of the book for the largest sizes
LARGEST_NOTEBOOK = "largest_sizes.ipynb"


def largest_notebook(names=None) -> dict:
    """A notebook showing each explorer at its largest sizes (``LARGEST`` of ``latency``)."""
    from .latency import LARGEST

    cells = [{"cell_type": "code", "execution_count": None, "id": "setup", "metadata": {}, "outputs": [],
              "source": "from blockcd import widgets"}]
    for name, kw in LARGEST.items():
        if names and name not in names:
            continue
        args = "".join(f", {k}={v!r}" for k, v in kw.items())
        cells.append({"cell_type": "code", "execution_count": None, "id": name, "metadata": {}, "outputs": [],
                      "source": f"widgets.show({name!r}{args})"})
    return {"cells": cells, "nbformat": 4, "nbformat_minor": 5,
            "metadata": {"kernelspec": {"display_name": "Python 3 (ipykernel)", "language": "python",
                                        "name": "python3"}}}


def bench_live(notebooks=None, *, names=None, repeats: int = 5, largest: bool = True,
               verbose: bool = True) -> dict[str, dict]:
    """Browser-measured latency of the explorers (see :func:`measure`).

    Parameters
    ----------
    notebooks : list of notebook file names, default every one that shows an explorer
    names : explorer names to keep (default all); notebooks without one of them are not opened
    repeats : int >= 1, repetitions per explorer
    largest : bool
        Also measure every explorer at its largest sizes, in a notebook written into the
        server's copy of the book (:func:`largest_notebook`; keys ``"largest:<explorer>"``).

    Returns
    -------
    dict
        ``"<notebook>:<explorer>"`` -> {"notebook", "times" (seconds), "median", "redraws"}.
    """
    from playwright.sync_api import sync_playwright

    if not isinstance(repeats, int) or repeats < 1:
        raise ValueError(f"repeats must be an integer >= 1, got {repeats!r}")
    notebooks = explorer_notebooks() if notebooks is None else list(notebooks)
    if names:
        notebooks = [nb for nb in notebooks if any(n in names for n, _ in explorer_cells(BOOK / nb))]
    out = {}
    if verbose:
        print(f"{'explorer':30s} {'median':>8s}   (ms, last of 3 key presses -> redrawn figure; "
              f"{repeats} repetitions)", flush=True)
    with LabServer() as server, sync_playwright() as pw:
        if largest:
            (server.root / LARGEST_NOTEBOOK).write_text(json.dumps(largest_notebook(names), indent=1))
            notebooks = [*notebooks, LARGEST_NOTEBOOK]
        browser = launch_browser(pw)
        try:
            for nb in notebooks:
                lab = Lab(server, browser)
                try:
                    lab.open(nb)
                    lab.run_all()
                    for ex in lab.explorers():
                        if names and ex.name not in names:
                            continue
                        t = measure(ex, repeats)
                        key = f"{'largest' if nb == LARGEST_NOTEBOOK else nb[:-6]}:{ex.name}"
                        out[key] = {"notebook": nb, "times": t, "median": float(np.median(t)),
                                    "redraws": ex.redraws}
                        if verbose:
                            print(f"{key:30s} {out[key]['median'] * 1e3:8.0f}   "
                                  f"({', '.join(f'{x * 1e3:.0f}' for x in t)}; redraws "
                                  f"{', '.join(map(str, ex.redraws))})", flush=True)
                    lab.shutdown()
                finally:
                    lab.close()
        finally:
            browser.close()
    return out
