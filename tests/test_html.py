"""The built HTML book as readers see it, checked in headless Chromium.

Every page listed in ``_toc.yml`` is opened from a local HTTP server in
Debian's Chromium, driven by Playwright (``executable_path`` points at the
system browser; Playwright downloads nothing).  Requests that leave the local
server (CDNs, launch services) are refused, as on an offline machine, so the
checks see what the book itself ships.

Two checks measure what a reader sees at a 1,400-px window: no element of the text column is wider
than the column (``OVERFLOW_JS``), and axe-core, the accessibility checker (npm's tarball, fetched
once with ``npm pack`` and checked by SHA-256, injected by the test), finds nothing serious or
critical on any page.

Uses ``_build/html`` if it exists (the README's build command makes it) and
builds the book otherwise.  Without Chromium the module is skipped, except
when ``BLOCKCD_REQUIRE_BROWSER=1`` (set by ``.ci/run``), where it fails.
"""

from __future__ import annotations

import functools
import http.server
import json
import os
import re
import shutil
import subprocess
import threading
from pathlib import Path
from urllib.parse import urldefrag, urljoin, urlparse

import pytest
import yaml
from live.lab import CHROMIUM_FLAGS, chromium

ROOT = Path(__file__).resolve().parents[1]
HTML = ROOT / "_build" / "html"
SHOTS = ROOT / "_build" / "screenshots"
CHROMIUM = chromium()
REQUIRED = os.environ.get("BLOCKCD_REQUIRE_BROWSER") == "1"
FLAGS = CHROMIUM_FLAGS  # the live test's flags too: one set for both browser tests

if CHROMIUM is None:
    msg = "Chromium is not installed (Debian: apt-get install chromium)"
    if REQUIRED:
        raise RuntimeError(msg + "; BLOCKCD_REQUIRE_BROWSER=1 demands the browser test")
    pytest.skip(msg, allow_module_level=True)
if REQUIRED:
    from playwright import sync_api
else:
    sync_api = pytest.importorskip("playwright.sync_api", reason="pip install playwright")


def toc_files() -> list[str]:
    """Document names in the order of ``_toc.yml`` (root first)."""
    toc = yaml.safe_load((ROOT / "_toc.yml").read_text())
    files = [toc["root"]]

    def walk(entries):
        for e in entries or []:
            if "file" in e:
                files.append(e["file"])
            walk(e.get("sections"))

    for part in toc.get("parts", []):
        walk(part.get("chapters"))
    walk(toc.get("chapters"))
    return [re.sub(r"\.(ipynb|md)$", "", f) for f in files]


PAGES = toc_files()
#: the chapters and their sections with a notebook of their own (book/06b_is_saga, a section of chapter 6)
CHAPTERS = [f for f in PAGES if re.match(r"book/\d\d[a-z]?_", f)]
#: the short results-at-a-glance page, right after the introduction
GLANCE = "book/glance"
#: the reference page with the full table of every method and the dependency map
RESULTS = "book/results"
#: the paper's theorem each method's row of the glance table must name (the paper's own numbering)
PAPER_THEOREMS = {"ibcd": "Theorem 1", "ibgd": "Theorem 4", "is-sgd": "Theorem 6", "isega": "Theorem 3",
                  "isaga-shared": "Theorem 2", "isaga-local": "Theorem 5", "is-asgd": "Theorem 8"}
#: figures drawn by blockcd.plotting.selection_grid: (page, figure name)
#: the figures that draw an idea (the block choices, the shifts, a round of the time model, the ranks' messages)
IDEA_FIGURES = [("book/01_template", "fig-selection-template"), ("book/03_key_lemma", "fig-selection-key"),
                ("book/06_heterogeneous", "fig-isega-shifts"), ("book/09_time", "fig-round-timeline"),
                ("book/10_mpi", "fig-mpi-round")]


#: the window the reader's checks use: the column of the text is then 784 px wide
READER_VIEWPORT = (1400, 900)
#: axe-core, the accessibility checker, from npm's tarball (fetched once with ``npm pack`` and checked
#: against this SHA-256, as the book's own vendored scripts are: book/_ext/offline_assets.py); it is
#: injected into the pages by the test and is not part of the book
AXE = ("axe-core@4.14.1", "e6b0ce02b84d892e2e33e403485e7f3d6c29e2be6df65daf44d89ba564139745")
#: the impacts the book must not have on any page
AXE_FAILING = ("serious", "critical")
#: left to the explorers' own test (tests of blockcd.widgets): the widgets' controls and views
AXE_EXCLUDE = [".blockcd-explorer", ".jupyter-widgets", ".widget-subarea"]
#: boxes made to scroll sideways: the reference table of every method (book/results.md), ten columns
#: of formulas with the method column held in place (_static/glance.css)
SCROLLING_BY_DESIGN = ".glance-scroll"


@functools.lru_cache(maxsize=1)
def axe_source() -> str:
    import sys
    import tarfile

    sys.path.insert(0, str(ROOT / "book" / "_ext"))
    from offline_assets import _npm_tarball

    with tarfile.open(_npm_tarball(*AXE)) as tar:
        return tar.extractfile("package/axe.min.js").read().decode("utf-8")


AXE_JS = """async (exclude) => {
  const r = await axe.run({exclude: exclude.map(s => [s])}, {resultTypes: ['violations']});
  return r.violations.map(v => ({id: v.id, impact: v.impact,
    nodes: v.nodes.map(n => n.target.join(' ') + ': ' + n.html.slice(0, 120))}));
}"""


class _Quiet(http.server.SimpleHTTPRequestHandler):
    def log_message(self, *args):
        pass


@pytest.fixture(scope="module")
def site():
    if not (HTML / "index.html").exists():
        proc = subprocess.run(
            [shutil.which("jupyter-book") or "jupyter-book", "build", str(ROOT), "-W", "-n", "--keep-going"],
            cwd=ROOT, capture_output=True, text=True, check=False,
        )
        assert proc.returncode == 0, "book build failed:\n" + proc.stdout[-3000:] + proc.stderr[-3000:]
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), functools.partial(_Quiet, directory=str(HTML)))
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{server.server_address[1]}/"
    server.shutdown()


@pytest.fixture(scope="module")
def browser():
    with sync_api.sync_playwright() as pw:
        b = pw.chromium.launch(executable_path=CHROMIUM, args=FLAGS)
        yield b
        b.close()


def _open(browser, base, path, viewport=(1366, 900), scale=1):
    """Open a page; return (page, console errors, blocked external requests)."""
    ctx = browser.new_context(viewport={"width": viewport[0], "height": viewport[1]}, device_scale_factor=scale)
    page = ctx.new_page()
    errors, blocked = [], []

    def route(r):
        if r.request.url.startswith(base):
            r.continue_()
        else:
            blocked.append(r.request.url)
            r.abort()

    page.route("**/*", route)
    page.on("console", lambda m: errors.append((m.text, (m.location or {}).get("url", ""))) if m.type == "error" else None)
    page.on("pageerror", lambda e: errors.append((str(e), "pageerror")))
    # a chapter page is about 1 MB with its figures; on a loaded shared machine its load event
    # came after 20-30 s (Playwright's default limit is 30 s)
    page.goto(urljoin(base, path), wait_until="load", timeout=120000)
    page.wait_for_function("() => !window.MathJax || (window.MathJax.startup && window.MathJax.startup.promise)")
    page.evaluate("() => window.MathJax ? MathJax.startup.promise.then(() => true) : true")
    # the widget manager draws the page's widget views after the load event, and its faults (a font
    # not found, a script error) come then: wait until every view is drawn, or give up after 30 s
    # (test_widget_manager_loads_offline then says which views are missing)
    try:
        page.wait_for_function(WIDGETS_DRAWN_JS, timeout=30000)
    except sync_api.TimeoutError:
        pass
    return page, errors, blocked


#: every widget view of the page drawn by the widget manager: [views, drawn]
WIDGETS_JS = """() => [
  document.querySelectorAll('script[type="application/vnd.jupyter.widget-view+json"]').length,
  document.querySelectorAll('.widget-subarea > .jupyter-widgets').length]"""
WIDGETS_DRAWN_JS = f"() => {{ const [views, drawn] = ({WIDGETS_JS})(); return drawn >= views; }}"


def _own_errors(errors, base, blocked):
    """Console errors not caused by refusing an external request."""
    out = []
    for text, url in errors:
        if url and not url.startswith(base) and url != "pageerror":
            continue  # a resource we refused to fetch from outside
        if "net::ERR_FAILED" in text and blocked:
            continue
        out.append(f"{text} [{url}]")
    return out


TEXT_JS = """() => {
  const main = document.querySelector('main') || document.body;
  const c = main.cloneNode(true);
  c.querySelectorAll('pre, code, script, style, mjx-container, .MathJax').forEach(e => e.remove());
  return c.innerText;
}"""

#: the text column's elements wider than the column, as a reader at this window sees them: a box that
#: scrolls sideways (a code or output block, a display equation, a table) or an element that sticks
#: out of the column.  Solutions are opened first (a reader opens them); code cells hidden behind
#: "Show code cell source" stay closed.  The explorers' widgets are left to their own test.
OVERFLOW_JS = """(allowed) => {
  const col = document.querySelector('main article.bd-article');
  if (!col) return [];
  col.querySelectorAll('details:not(.hide)').forEach(d => { d.open = true; });
  const cs = getComputedStyle(col), box = col.getBoundingClientRect();
  const left = box.left + parseFloat(cs.paddingLeft), right = box.right - parseFloat(cs.paddingRight);
  const skip = '.blockcd-explorer, .jupyter-widgets, .widget-subarea, [class*="widget-"], details.hide, '
    + 'mjx-assistive-mml, ' + allowed;
  const clips = e => getComputedStyle(e).overflowX !== 'visible';
  const out = [];
  for (const e of col.querySelectorAll('*')) {
    // inside a formula only the formula's own box counts (MathJax's stretchy parts clip themselves)
    if (e.closest(skip) || (e.tagName !== 'MJX-CONTAINER' && e.closest('mjx-container'))) continue;
    if (out.some(o => o.el.contains(e))) continue;   // inside a box already counted
    const r = e.getBoundingClientRect();
    if (r.width === 0 || r.height === 0) continue;
    // an inline element has no client width: only boxes can scroll.  MathJax puts an invisible
    // copy of each formula (MathML for screen readers) beside the visible one, a few pixels wider:
    // a box holding formulas is measured by what it shows
    let wide = e.scrollWidth;
    const shown = e.querySelectorAll('mjx-math');
    if (shown.length) {
      const x0 = r.left + e.clientLeft - e.scrollLeft;   // the left edge of its padding box
      wide = Math.max(...Array.from(shown, m => m.getBoundingClientRect().right - x0));
    }
    const scrolls = e.clientWidth > 0 && clips(e) && wide > e.clientWidth + 1;
    let sticks = r.right > right + 1 || r.left < left - 1;
    if (sticks) {
      for (let a = e.parentElement; a && a !== col; a = a.parentElement) {
        if (clips(a)) { sticks = false; break; }
      }
    }
    if (!scrolls && !sticks) continue;
    out.push({el: e, tag: e.tagName.toLowerCase(), cls: String(e.className).slice(0, 60),
              width: Math.round(scrolls ? wide : r.width), column: Math.round(right - left),
              text: (e.innerText || e.textContent || '').trim().split('\\n')[0].slice(0, 100)});
  }
  return out.map(({el, ...o}) => o);
}"""

LINKS_JS = """() => Array.from(document.querySelectorAll('main a[href], nav a[href]')).map(a => a.href)"""


@pytest.fixture(scope="module")
def visited(site, browser):
    """Open every page once and collect what the checks need."""
    data = {}
    for doc in PAGES:
        page, errors, blocked = _open(browser, site, doc + ".html", viewport=READER_VIEWPORT)
        data[doc] = {
            "errors": _own_errors(errors, site, blocked),
            "text": page.evaluate(TEXT_JS),
            "math_nodes": page.locator("main .math").count(),
            "mjx": page.locator("mjx-container").count(),
            "broken_images": page.evaluate(
                "() => Array.from(document.images).filter(i => !i.complete || i.naturalWidth === 0)"
                ".map(i => i.getAttribute('src'))"),
            "images": page.evaluate("() => document.querySelectorAll('main img').length"),
            "unresolved": page.evaluate(
                "() => Array.from(document.querySelectorAll('main .xref')).filter(e => !e.closest('a'))"
                ".map(e => e.textContent)"),
            "refs": page.evaluate(
                "() => Array.from(document.querySelectorAll('main a.reference.internal[href*=\"#\"]'))"
                ".map(a => a.getAttribute('href'))"),
            "links": page.evaluate(LINKS_JS),
            "widgets": page.locator('script[type="application/vnd.jupyter.widget-view+json"]').count(),
            "widgets_drawn": page.evaluate(WIDGETS_JS)[1],
            "scripts": page.evaluate("() => Array.from(document.scripts).map(s => s.src).filter(Boolean)"),
            "blocked": blocked,
            "animations": page.locator("main .animation input.anim-slider").count(),
            "nav": page.evaluate(
                "() => Array.from(document.querySelectorAll('nav.bd-docs-nav a.reference.internal'))"
                ".map(a => a.href)"),
            "buttons": page.evaluate(
                "() => Array.from(document.querySelectorAll('.article-header-buttons a, .dropdown-menu a'))"
                ".map(a => a.getAttribute('href') || '')"),
            "title": page.title(),
            "overflow": page.evaluate(OVERFLOW_JS, SCROLLING_BY_DESIGN),
        }
        page.add_script_tag(content=axe_source())
        data[doc]["axe"] = page.evaluate(AXE_JS, AXE_EXCLUDE)
        page.context.close()
    return data


@pytest.mark.parametrize("doc", PAGES)
def test_page_loads_without_console_errors(visited, doc):
    assert visited[doc]["errors"] == [], f"{doc}: console errors {visited[doc]['errors']}"


@pytest.mark.parametrize("doc", PAGES)
def test_math_is_typeset(visited, doc):
    v = visited[doc]
    raw = [s for s in ("$$", "\\(", "\\[", "\\begin{") if s in v["text"]]
    assert not raw, f"{doc}: raw TeX left in the text: {raw}"
    if v["math_nodes"]:
        assert v["mjx"] > 0, f"{doc}: {v['math_nodes']} math nodes but MathJax rendered none"


@pytest.mark.parametrize("doc", PAGES)
def test_nothing_is_wider_than_the_column(visited, doc):
    # at a 1,400-px window: no code or output block that scrolls sideways, no display equation wider
    # than the column, nothing sticking out of it (OVERFLOW_JS; the explorers' widgets are left to
    # their own test, the reference table of results.md scrolls by design)
    wide = visited[doc]["overflow"]
    lines = [f"  <{o['tag']} class={o['cls']!r}> {o['width']} px in {o['column']} px: {o['text'][:80]!r}"
             for o in wide]
    assert not wide, f"{doc}: {len(wide)} elements wider than the column:\n" + "\n".join(lines)


@pytest.mark.parametrize("doc", PAGES)
def test_no_serious_accessibility_violation(visited, doc):
    # axe-core on the whole page, the explorers' widgets excepted (AXE_EXCLUDE: the widgets' own test
    # covers their controls); moderate and minor findings are not failures
    bad = [v for v in visited[doc]["axe"] if v["impact"] in AXE_FAILING]
    assert not bad, f"{doc}: axe-core finds\n" + "\n".join(
        f"  {v['id']} ({v['impact']}, {len(v['nodes'])}): " + "; ".join(v["nodes"][:3]) for v in bad)


@pytest.mark.parametrize("doc", PAGES)
def test_images_load(visited, doc):
    assert visited[doc]["broken_images"] == [], f"{doc}: images that did not load {visited[doc]['broken_images']}"


@pytest.mark.parametrize("doc", PAGES)
def test_references_resolve(visited, doc):
    assert visited[doc]["unresolved"] == [], f"{doc}: unresolved references {visited[doc]['unresolved']}"
    assert "??" not in visited[doc]["text"], f"{doc}: '??' in the text (a broken numbered reference)"


def _ids(path: Path) -> set[str]:
    from bs4 import BeautifulSoup

    soup = BeautifulSoup(path.read_text(encoding="utf-8"), "html.parser")
    return {t.get("id") for t in soup.find_all(id=True)} | {t.get("name") for t in soup.find_all(attrs={"name": True})}


def test_internal_links_point_to_existing_pages_and_anchors(visited, site):
    ids_cache: dict[Path, set[str]] = {}
    bad, checked = [], 0
    for doc, v in visited.items():
        for href in v["links"]:
            if not href.startswith(site):
                continue
            url, frag = urldefrag(href)
            rel = urlparse(url).path.lstrip("/") or "index.html"
            target = HTML / rel
            if target.is_dir():
                target = target / "index.html"
            checked += 1
            if not target.exists():
                bad.append(f"{doc}: {href} (no such file)")
                continue
            if frag and target.suffix == ".html":
                if target not in ids_cache:
                    ids_cache[target] = _ids(target)
                if frag not in ids_cache[target]:
                    bad.append(f"{doc}: {href} (no anchor #{frag})")
    assert checked > 50, f"only {checked} internal links found: is the navigation missing?"
    assert not bad, "broken internal links:\n" + "\n".join(bad[:30])


@pytest.mark.parametrize("doc", PAGES)
def test_widgets_have_a_static_replacement(visited, doc):
    v = visited[doc]
    assert "Loading widget" not in v["text"], f"{doc}: a bare 'Loading widget' text is visible"
    if v["widgets"]:
        assert v["animations"] > 0, f"{doc}: {v['widgets']} widget view(s) but no kernel-free moving figure"


#: the pages whose committed notebook carries widget state (chapters' explorers, the playground)
WIDGET_PAGES = [d for d in PAGES if (ROOT / (d + ".ipynb")).exists()
                and "application/vnd.jupyter.widget-state+json"
                in json.loads((ROOT / (d + ".ipynb")).read_text()).get("metadata", {}).get("widgets", {})]


def test_widget_pages_are_the_notebooks_with_widget_state(visited):
    # the HTML draws widgets exactly where a committed notebook stores their state
    assert len(WIDGET_PAGES) >= 8, WIDGET_PAGES
    assert sorted(d for d, v in visited.items() if v["widgets"]) == sorted(WIDGET_PAGES)


@pytest.mark.parametrize("doc", WIDGET_PAGES)
def test_widget_manager_loads_offline(visited, site, doc):
    # every request outside the local server is refused (_open): require.js and the widget manager
    # come from the book's own _static (book/_ext/offline_assets.py) and draw every widget view;
    # their console errors (fonts not found, MathJax 2 calls) fail test_page_loads_without_console_errors
    v = visited[doc]
    local = [urlparse(s).path for s in v["scripts"] if s.startswith(site)]
    assert "/_static/vendor/requirejs/require.js" in local, v["scripts"]
    assert "/_static/vendor/html-manager/embed-amd.js" in local, v["scripts"]
    assert not [s for s in v["scripts"] if not s.startswith(site)], v["scripts"]
    assert v["blocked"] == [], f"{doc}: requests that left the book {v['blocked']}"
    assert v["widgets"] > 0 and v["widgets_drawn"] == v["widgets"], \
        f"{doc}: the widget manager drew {v['widgets_drawn']} of {v['widgets']} widget views"


def test_animation_moves_without_a_kernel(site, browser):
    docs = [d for d in CHAPTERS if d in ("book/01_template", "book/03_key_lemma")] or CHAPTERS[:1]
    page, _, _ = _open(browser, site, docs[0] + ".html")
    anim = page.locator("main .animation").first
    if anim.count() == 0:
        pytest.fail(f"{docs[0]} has no kernel-free animation")
    img = anim.locator("img").first
    # it plays by itself on load (chapter 1 says so): the frame changes with nobody touching it
    first = img.get_attribute("src")
    page.wait_for_timeout(2500)  # the players show 1.5 frames a second
    playing = img.get_attribute("src")
    # paused, the slider moves it to the frame chosen (one other than the one shown)
    anim.locator("button[title='Pause']").first.click()
    slider = anim.locator("input.anim-slider").first
    target = "2" if slider.input_value() == "1" else "1"
    before = img.get_attribute("src")
    slider.fill(target)
    slider.dispatch_event("input")
    after = img.get_attribute("src")
    page.context.close()
    assert first != playing, "the kernel-free figure does not play by itself on load"
    assert before != after, "moving the slider of the static figure did not change the frame"


def test_search_finds_sparsification(site, browser):
    page, _, _ = _open(browser, site, "search.html?q=sparsification")
    page.wait_for_function("() => document.querySelectorAll('#search-results li').length > 0", timeout=20000)
    hits = page.locator("#search-results li").count()
    page.context.close()
    assert hits >= 3, f"search for 'sparsification' found {hits} pages"


def test_site_quality(visited, site):
    landing = visited[PAGES[0]]
    assert "distributed" in landing["title"].lower(), landing["title"]
    assert "1901.09437" in landing["text"] and "Mishchenko" in landing["text"], "the paper is not cited on the landing page"
    # the sidebar follows _toc.yml
    nav = [re.sub(r"\.html.*$", "", h[len(site):]) for h in landing["nav"] if h.startswith(site)]
    expected = PAGES[1:]
    got = [h for h in nav if h in expected]
    assert got == expected, f"navigation order {got} differs from _toc.yml {expected}"
    bib = [d for d in PAGES if d.endswith("bibliography")]
    assert bib, "no bibliography page in _toc.yml"
    assert "Mishchenko" in visited[bib[0]]["text"]


@pytest.mark.parametrize("doc", CHAPTERS)
def test_chapter_has_download_and_launch_buttons(visited, doc):
    hrefs = visited[doc]["buttons"]
    assert any(h.endswith(".ipynb") for h in hrefs), f"{doc}: no download-notebook button in {hrefs}"
    assert any("mybinder.org" in h for h in hrefs), f"{doc}: no Binder launch button"
    assert any("colab.research.google.com" in h for h in hrefs), f"{doc}: no Colab launch button"


@pytest.mark.parametrize("doc", CHAPTERS)
def test_repository_and_launch_buttons_use_the_library_address(visited, doc):
    # the address is written in pyproject.toml only; book/_ext/repository_address.py gives
    # blockcd.__url__ to the buttons (without it they would point at Jupyter Book's repository)
    import blockcd

    hrefs = visited[doc]["buttons"]
    repo = urlparse(blockcd.__url__).path.strip("/")
    assert blockcd.__url__ in hrefs, f"{doc}: no repository button for {blockcd.__url__} in {hrefs}"
    launch = [h for h in hrefs if "colab.research.google.com" in h or "mybinder.org" in h]
    assert launch and all(f"/github/{repo}/blob/" in h or f"/gh/{repo}/" in h for h in launch), launch


@pytest.mark.parametrize("doc", CHAPTERS)
def test_first_cell_installs_the_library_when_missing(doc):
    nb = json.loads((ROOT / (doc + ".ipynb")).read_text())
    first = next(c for c in nb["cells"] if c["cell_type"] == "code")
    src = "".join(first["source"])
    assert "except ImportError" in src and "pip" in src and "blockcd" in src, f"{doc}: first cell does not install blockcd"
    # %pip works in JupyterLab, Colab and Pyodide kernels; a subprocess does not in the last
    assert "%pip install" in src and "subprocess" not in src, f"{doc}: first cell installs without %pip"


SCREENS = {"laptop": ((1366, 900), 1), "phone": ((390, 844), 2)}


@pytest.mark.parametrize("kind", list(SCREENS))
def test_screenshots(site, browser, kind):
    """Screenshots of the landing page and chapters 1 and 4, for a person to look at."""
    SHOTS.mkdir(parents=True, exist_ok=True)
    viewport, scale = SCREENS[kind]
    targets = [PAGES[0]] + [d for d in CHAPTERS if d.startswith(("book/01_", "book/04_"))]
    for doc in targets:
        page, _, _ = _open(browser, site, doc + ".html", viewport=viewport, scale=scale)
        out = SHOTS / f"{kind}-{Path(doc).name}.png"
        page.screenshot(path=str(out), full_page=False)
        # nothing may overflow the viewport sideways (figures, tables, equations scroll inside the page)
        overflow = page.evaluate("() => document.documentElement.scrollWidth - window.innerWidth")
        page.context.close()
        assert out.stat().st_size > 10_000, f"{out} looks empty"
        assert overflow <= 1, f"{doc} on a {kind}: the page is {overflow} px wider than the screen"


@pytest.mark.parametrize("doc", CHAPTERS)
def test_chapter_title_is_numbered_by_the_toc_only(doc):
    """Parts are numbered, so a title '# 3. ...' would read '3. 3. ...' in the page and sidebar."""
    nb = json.loads((ROOT / (doc + ".ipynb")).read_text())
    md = next(c for c in nb["cells"] if c["cell_type"] == "markdown")
    title = next(line for line in "".join(md["source"]).splitlines() if line.startswith("# "))
    assert not re.match(r"#\s+\d+\.", title), f"{doc}: title carries its own number: {title!r}"


def _resolves(site, href, ids_cache) -> str | None:
    """None if a local link points to an existing page and anchor, else what is wrong."""
    url, frag = urldefrag(href)
    target = HTML / (urlparse(url).path.lstrip("/") or "index.html")
    if target.is_dir():
        target = target / "index.html"
    if not target.exists():
        return f"{href}: no such file"
    if frag and target.suffix == ".html":
        if target not in ids_cache:
            ids_cache[target] = _ids(target)
        if frag not in ids_cache[target]:
            return f"{href}: no anchor #{frag}"
    return None


def test_glance_page_follows_the_introduction():
    assert GLANCE in PAGES, f"{GLANCE} is not in _toc.yml"
    assert PAGES.index(GLANCE) == 1, f"{GLANCE} should come right after the introduction, not at {PAGES.index(GLANCE)}"


GLANCE_JS = """() => {
  const t = document.querySelector('main table.glance-table');
  if (!t) return null;
  return {
    header: Array.from(t.querySelectorAll('thead th')).map(c => c.innerText.trim().replace(/\u2019/g, "'")),
    rows: Array.from(t.querySelectorAll('tbody tr')).map(r => ({
      cells: Array.from(r.cells).map(c => c.innerText.trim().replace(/\u2019/g, "'")),
      links: Array.from(r.querySelectorAll('a.reference.internal')).map(a => a.href),
      unresolved: Array.from(r.querySelectorAll('.xref')).filter(e => !e.closest('a')).map(e => e.textContent),
      math: r.querySelectorAll('mjx-container').length,
    })),
  };
}"""


def test_glance_table_has_one_row_per_method_and_its_links_resolve(site, browser):
    from blockcd.registry import METHODS, REGISTRY

    page, _, _ = _open(browser, site, RESULTS + ".html")
    table = page.evaluate(GLANCE_JS)
    page.context.close()
    assert table is not None, f"{RESULTS}: no table of class glance-table"
    assert len(table["header"]) == 10 and "the paper's theorem" in table["header"], table["header"]
    names = []
    for row in table["rows"]:
        assert len(row["cells"]) == len(table["header"]), row["cells"][0]
        found = re.search(r'"([a-z-]+)"', row["cells"][0])
        assert found, f"the first cell names no method: {row['cells'][0]!r}"
        names.append(found.group(1))
    assert sorted(names) == sorted(METHODS), f"rows {names} differ from the library's methods {METHODS}"
    ids_cache: dict[Path, set[str]] = {}
    for name, row in zip(names, table["rows"]):
        assert row["unresolved"] == [], f"{name}: unresolved references {row['unresolved']}"
        assert row["math"] > 0, f"{name}: no typeset formula in the row"
        chapter = REGISTRY[name].chapter
        assert any(urlparse(h).path.endswith(f"/book/{chapter}.html") and "#" not in h for h in row["links"]), \
            f"{name}: no link to its chapter {chapter}"
        assert any("#" in h and (h.split("#")[1].startswith(("thm-", "lem-", "cor-"))) for h in row["links"]), \
            f"{name}: no link to a theorem"
        paper = row["cells"][table["header"].index("the paper's theorem")]
        if name in PAPER_THEOREMS:
            assert PAPER_THEOREMS[name] in paper, f"{name}: the paper's theorem should be {PAPER_THEOREMS[name]}, got {paper!r}"
        bad = [m for m in (_resolves(site, h, ids_cache) for h in row["links"] if h.startswith(site)) if m]
        assert not bad, f"{name}: broken links {bad}"


def test_results_page_maps_the_dependencies(site, browser):
    page, _, _ = _open(browser, site, RESULTS + ".html")
    refs = page.evaluate("() => Array.from(document.querySelectorAll('main li a.reference.internal[href*=\"#\"]'))"
                         ".map(a => a.getAttribute('href').split('#')[1])")
    page.context.close()
    for label in ("lem-key", "lem-ibcd-es", "thm-ibcd", "cor-mn-rule", "lem-composition", "thm-is-sgd",
                  "lem-isega-estimator", "thm-isega", "thm-is-saga", "lem-rho-tau", "lem-coverage"):
        assert label in refs, f"the dependency map does not link {label}"


@pytest.mark.parametrize("doc, name", IDEA_FIGURES)
def test_idea_figures_are_shown_with_caption_and_reference(site, browser, doc, name):
    page, _, _ = _open(browser, site, doc + ".html")
    fig = page.evaluate("""(id) => {
      const f = document.getElementById(id);
      if (!f) return null;
      const img = f.querySelector('img'), cap = f.querySelector('figcaption');
      return {loaded: !!img && img.complete && img.naturalWidth > 0, width: img ? img.getBoundingClientRect().width : 0,
              natural: img ? img.naturalWidth : 0, caption: cap ? cap.innerText : '',
              refs: document.querySelectorAll('main a[href="#' + id + '"]').length};
    }""", name)
    page.context.close()
    assert fig is not None, f"{doc}: no figure #{name}"
    assert fig["loaded"], f"{doc}: the image of #{name} did not load"
    assert fig["caption"].startswith("Fig"), f"{doc}: #{name} has no numbered caption: {fig['caption'][:60]!r}"
    assert fig["refs"] >= 1, f"{doc}: the text never refers to #{name}"
    # shown at least 60% of its drawn size, so that the counts in the cells stay readable
    assert fig["width"] >= 0.6 * min(fig["natural"], 1000), f"{doc}: #{name} is shrunk to {fig['width']} px"


def test_chapter_6_has_its_starred_section_and_figures(visited):
    """IS-SAGA is a section of chapter 6 with its own page: numbered under chapter 6, marked (optional),
    listed in the sidebar; chapter 6 draws the shifts and labels the regimes of its tau sweep."""
    if "book/06b_is_saga" not in visited:
        pytest.skip("no IS-SAGA section in _toc.yml")
    title = visited["book/06b_is_saga"]["title"]
    assert re.match(r"6\.\d+\. IS-SAGA", title) and "(optional)" in title, f"IS-SAGA's page title reads {title!r}"
    assert any(h.split("#")[0].endswith("/book/06b_is_saga.html") for h in visited["book/06_heterogeneous"]["nav"])
    ids = _ids(HTML / "book" / "06_heterogeneous.html")
    assert {"fig-isega-shifts", "fig-isega-terms", "fig-isega-real"} <= ids
    assert {"fig-is-saga", "fig-isaga-local"} <= _ids(HTML / "book" / "06b_is_saga.html")


def test_chapter_5_has_its_optional_section_and_figures(visited):
    """Decreasing steps and the non-convex rate are a section of chapter 5 with its own page, as IS-SAGA
    is of chapter 6: numbered under chapter 5, marked (optional), listed in the sidebar, with its figures."""
    doc = "book/05b_decreasing_nonconvex"
    if doc not in visited:
        pytest.skip("no optional section of chapter 5 in _toc.yml")
    title = visited[doc]["title"]
    assert re.match(r"5\.\d+\. Decreasing steps", title) and "(optional)" in title, f"the page title reads {title!r}"
    assert any(h.split("#")[0].endswith(f"/{doc}.html") for h in visited["book/05_is_sgd"]["nav"])
    assert "fig-is-sgd-sweep" in _ids(HTML / "book" / "05_is_sgd.html")
    assert {"fig-is-sgd-decreasing", "fig-is-sgd-threshold"} <= _ids(HTML / f"{doc}.html")


# ---- the API reference: an index page (book/api) and one page per module group (book/api/*)
API_PAGES = [d for d in PAGES if d == "book/api" or d.startswith("book/api/")]
#: the most text one reference page may hold (the single page of before was about 250k characters)
API_PAGE_MAX_CHARS = 80_000

API_JS = """() => {
  const main = document.querySelector('main');
  const c = main.cloneNode(true);
  c.querySelectorAll('pre, script, style, mjx-container, .MathJax, .math').forEach(e => e.remove());
  const fields = Array.from(main.querySelectorAll('dl.field-list > dt'));
  return {
    all: main.innerText,
    prose: c.innerText,
    // napoleon turns 'name: text' in an attribute's first line into a field 'Type'
    types: fields.filter(dt => dt.textContent.replace(':', '').trim() === 'Type').length,
    // 'a, b : int' in an Attributes section renders as 'b (a,)': the names read as the type
    entries: Array.from(main.querySelectorAll('dl.field-list > dd li')).map(li => li.textContent.trim()),
    ids: Array.from(main.querySelectorAll('dt.sig[id]')).map(dt => dt.id),
  };
}"""


@pytest.fixture(scope="module")
def api_pages(site, browser):
    out = {}
    for doc in API_PAGES:
        page, _, _ = _open(browser, site, doc + ".html")
        out[doc] = page.evaluate(API_JS)
        page.context.close()
    return out


def test_api_reference_is_an_index_and_one_page_per_module_group(api_pages):
    assert "book/api" in API_PAGES and len(API_PAGES) >= 8, f"the reference's pages in _toc.yml: {API_PAGES}"
    sizes = {d: len(v["all"]) for d, v in api_pages.items()}
    big = {d: n for d, n in sizes.items() if n > API_PAGE_MAX_CHARS}
    assert not big, f"reference pages longer than {API_PAGE_MAX_CHARS} characters: {big}"
    index = api_pages["book/api"]["all"]
    for doc in API_PAGES[1:]:
        assert sizes[doc] > 2000, f"{doc} documents almost nothing ({sizes[doc]} characters)"
    # every module group is linked from the index by its page title
    assert all(t in index for t in ("Running methods", "Problems and data", "Widgets")), index[:500]


@pytest.mark.parametrize("doc", API_PAGES)
def test_api_docstrings_render_as_written(api_pages, doc):
    v = api_pages[doc]
    assert v["types"] == 0, f"{doc}: {v['types']} attribute docstrings read as 'Type: ...' (a colon in the first line)"
    grouped = [e[:80] for e in v["entries"] if re.match(r"\S+ \((\w+, )*\w+,\)", e)]
    assert not grouped, f"{doc}: attributes grouped in one entry render the names as a type: {grouped}"
    raw = sorted(set(re.findall(r"\\[a-zA-Z]+|\bfrac\d|\blVert|\$[^$\n]*\$", v["prose"])))
    assert not raw, f"{doc}: raw LaTeX outside math: {raw}"


def test_api_run_names_every_registry_method(api_pages):
    from blockcd.registry import ALIASES, METHODS

    page = next(d for d in API_PAGES if "blockcd.run" in api_pages[d]["ids"])
    text = api_pages[page]["all"]
    start = text.index("blockcd.run(")
    # the entry of the parameter 'method', up to the next parameter's ('m')
    entry = re.search(r"\bmethod \(.*?(?=\n\s*m \()", text[start:], re.DOTALL)
    assert entry, f"{page}: blockcd.run's parameter 'method' not found"
    missing = [m for m in (*METHODS, *ALIASES) if f"'{m}'" not in entry.group(0)]
    assert not missing, f"{page}: blockcd.run's parameter 'method' does not list {missing}"
