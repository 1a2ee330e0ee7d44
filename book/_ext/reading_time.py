"""Reading time and running time at the top of each chapter, computed at build time.

Under each chapter's title (a numbered notebook, ``book/NN_*.ipynb``, and the playground) the book
prints one line, in the HTML and the PDF alike:

    Reading time: about 31 minutes (4,650 words before the exercises). Running it: about 12 s
    (its cells, when the outputs shown were computed, 6 December 2026).

Nothing in it is typed by hand:

- the words are counted from the chapter's Markdown cells up to its "Exercises" heading, and its
  figures' captions (:func:`prose_words`: displayed maths, code, directive options and comments
  left out, an inline formula one word, a cross-reference two); the minutes are the words at
  :data:`WORDS_PER_MINUTE`, a pace for mathematical prose read with care (a reader of the
  exercises needs more);
- the running time is the sum of the code cells' execution times that Jupyter recorded in the
  notebook (``metadata.execution``: busy to idle, per cell) when the stored outputs were computed,
  the run strict nbval checks; the kernel's start is not included. A reader's machine will differ.

``tests/test_reading_time.py`` checks the count on the chapters (none over :data:`MAX_WORDS`
words before its exercises) and the line in the built pages.
"""

from __future__ import annotations

import datetime as _dt
import json
import re
from pathlib import Path

from docutils import nodes

#: words a minute for the book's prose, formulas included (a careful reading; 200-250 is the usual
#: figure for plain prose)
WORDS_PER_MINUTE = 150
#: the most running prose a chapter may have before its exercises
MAX_WORDS = 5000

_EXERCISES = re.compile(r"^#{1,6}\s+Exercises\b", re.MULTILINE)
_FENCE = re.compile(r"^(`{3,}|:{3,})(.*)$")
_NOT_PROSE = ("{math}", "{code-cell}", "{code-block}", "{code}", "{raw}", "{image}", "{list-table}")


def _strip_markdown(src: str) -> str:
    """The words a reader reads in one Markdown cell's source, as plain text."""
    src = re.sub(r"<!--.*?-->", " ", src, flags=re.DOTALL)
    src = re.sub(r"\$\$.*?\$\$", " ", src, flags=re.DOTALL)  # displayed maths
    out = []
    fences: list[tuple[str, bool]] = []  # open fences: (marker, whether its body is prose)
    for line in src.splitlines():
        stripped = line.strip()
        fence = _FENCE.match(stripped)
        if fence:
            marker, info = fence.groups()
            if fences and marker == fences[-1][0] and not info.strip():
                fences.pop()  # a closing fence
                continue
            name = info.strip().split()[0] if info.strip() else ""
            # code and maths are not prose; a directive's body (a theorem, a caption, an exercise) is
            prose = name.startswith("{") and name not in _NOT_PROSE
            fences.append((marker, prose))
            if prose and all(p for _, p in fences):
                out.append(info.strip()[len(name):])  # a theorem's or an admonition's title
            continue
        if not all(prose for _, prose in fences):
            continue
        if re.match(r"^:[\w-]+:", stripped) or re.match(r"^\([\w-]+\)=$", stripped):
            continue  # a directive's option, a target
        out.append(line)
    text = "\n".join(out)
    text = re.sub(r"\{[\w:-]+\}`([^`<]*?)\s*<[^`]*>`", r"\1", text)  # {doc}`chapter 4 <04_ibcd>`
    text = re.sub(r"\{[\w:-]+\}`[^`]*`", " Lemma 3.1 ", text)  # {prf:ref}`lem-key`: "Lemma 3.1", two words
    text = re.sub(r"(?<!\\)\$[^$]+\$", " formula ", text)  # an inline formula: one word
    text = re.sub(r"!?\[([^\]]*)\]\([^)]*\)", r"\1", text)  # a link: its text
    return text


def _words(text: str) -> int:
    return len(re.findall(r"[^\W_][\w'’.-]*", text))


def prose_words(notebook: dict) -> int:
    """Words of running prose before a notebook's "Exercises" heading: its Markdown cells and the
    captions of the figures its code cells draw."""
    count = 0
    for cell in notebook.get("cells", []):
        if cell.get("cell_type") != "markdown":
            caption = cell.get("metadata", {}).get("mystnb", {}).get("figure", {}).get("caption", "")
            count += _words(_strip_markdown(caption)) if isinstance(caption, str) else 0
            continue
        src = "".join(cell.get("source", ""))
        head = _EXERCISES.split(src, maxsplit=1)
        count += _words(_strip_markdown(head[0]))
        if len(head) > 1:
            break
    return count


def running_seconds(notebook: dict) -> float | None:
    """Seconds the code cells took when the stored outputs were computed, or None if not recorded."""
    total, seen = 0.0, False
    for cell in notebook.get("cells", []):
        timing = cell.get("metadata", {}).get("execution") if cell.get("cell_type") == "code" else None
        if not timing or "iopub.status.busy" not in timing or "iopub.status.idle" not in timing:
            continue
        start = _dt.datetime.fromisoformat(timing["iopub.status.busy"].replace("Z", "+00:00"))
        end = _dt.datetime.fromisoformat(timing["iopub.status.idle"].replace("Z", "+00:00"))
        total += (end - start).total_seconds()
        seen = True
    return total if seen else None


def run_date(notebook: dict) -> str | None:
    """The date (UTC) the stored outputs were computed: that of the last recorded cell."""
    stamps = [c["metadata"]["execution"]["iopub.status.idle"] for c in notebook.get("cells", [])
              if c.get("cell_type") == "code" and "iopub.status.idle" in c.get("metadata", {}).get("execution", {})]
    if not stamps:
        return None
    when = _dt.datetime.fromisoformat(max(stamps).replace("Z", "+00:00"))
    return f"{when.day} {when:%B %Y}"


def minutes(words: int) -> int:
    return max(1, round(words / WORDS_PER_MINUTE))


def _seconds_text(seconds: float) -> str:
    if seconds < 90:
        return f"about {max(1, round(seconds))} s"
    return f"about {round(seconds / 60)} minutes"


def summary(notebook: dict) -> str:
    """The line printed under a chapter's title."""
    words = prose_words(notebook)
    line = f"Reading time: about {minutes(words)} minutes ({words:,} words before the exercises)."
    seconds = running_seconds(notebook)
    if seconds is not None:
        line += (f" Running it: {_seconds_text(seconds)} of computing (its cells, timed when the"
                 f" outputs shown were computed, {run_date(notebook)}).")
    return line


def is_chapter(docname: str) -> bool:
    name = docname.rpartition("/")[2]
    return bool(re.match(r"\d\d", name)) or name == "playground"


def _doctree_read(app, doctree):
    docname = app.env.docname
    path = Path(app.env.doc2path(docname))
    if path.suffix != ".ipynb" or not is_chapter(docname):
        return
    notebook = json.loads(path.read_text(encoding="utf-8"))
    section = next(iter(doctree.findall(nodes.section)), None)
    if section is None or not isinstance(section[0], nodes.title):
        return
    para = nodes.paragraph("", "", nodes.emphasis("", summary(notebook)), classes=["blockcd-reading-time"])
    section.insert(1, para)


def setup(app):
    app.connect("doctree-read", _doctree_read)
    return {"parallel_read_safe": True, "parallel_write_safe": True}
