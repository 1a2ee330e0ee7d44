"""The whole book as one PDF (``jupyter-book build . --builder pdflatex``), and its version.

For the LaTeX builder only:

1. No notebook is executed: the PDF typesets the outputs stored in the notebooks, the same
   outputs strict nbval checks against a fresh run, so the PDF build does not run the book a
   second time.
2. A stand-in ``bbm.sty`` (``book/_ext/latex``) is copied next to the ``.tex``; the class of
   Jupyter Book loads ``bbm``, which Debian ships only in its 1.4 GB ``texlive-fonts-extra``.
3. The preamble defines the MathJax macros of ``_config.yml`` (``\\R``, ``\\E``, ...) for LaTeX
   too, allows lists nested deeper than LaTeX's four levels (the glance page's dependency
   tree), and typesets ★ in an upright font that has the glyph.
4. Pages the HTML leaves unnumbered (the introduction, the glance page, the appendix and the
   back matter) are unnumbered chapters in the PDF too, so that chapter, section and figure
   numbers agree with the HTML's.
5. Solutions (``BLOCKCD_SOLUTIONS``, :data:`SOLUTIONS`): by default (``hidden``) they are left out
   of the PDF and are dropdowns in the HTML; ``inline`` keeps them under their exercises in the
   PDF and, opened, in the HTML (the instructor's copy); ``none`` leaves them out of the HTML too
   (the student's edition: not in its pages, nor in its search index). The Sphinx tag
   ``solutions_hidden``, ``solutions_inline`` or ``solutions_none`` lets a page say which
   edition it is in (``{only}``).
6. Domain indices other than the Python module index are left out (the proof index would list
   raw labels).
7. Tables fit the page: one wider than :data:`MAX_COLUMNS` columns is split into narrower ones
   that repeat its first column, a long one and the notation page's get columns that wrap (ragged
   right), and all of them can break across pages. The landing page is a chapter with its title,
   the bibliography page one chapter (not two), a box's title is not left alone at a page's foot,
   and the back of the title page gives the copyright, the licences and where to report a mistake.

For every builder: the package version and the build date (``SOURCE_DATE_EPOCH`` if set, else
today, UTC) are the Sphinx ``version``/``release``, shown in every HTML page's footer and on the
PDF's title page.
"""

import datetime as _dt
import os
from pathlib import Path

from docutils import nodes

HERE = Path(__file__).parent

#: numbered depth of the chapters (chapter, section, subsection: as Sphinx sets it for this book)
SECNUMDEPTH = 2
#: the HTML's numfig_secnum_depth (Sphinx's default): figures, theorems and exercises by chapter
HTML_NUMFIG_SECNUM_DEPTH = 1


#: ``BLOCKCD_SOLUTIONS``: where the solutions go (the default first)
SOLUTIONS = ("hidden", "inline", "none")


def solutions() -> str:
    """``BLOCKCD_SOLUTIONS``: ``hidden`` (the default), ``inline`` or ``none``."""
    value = os.environ.get("BLOCKCD_SOLUTIONS", "").strip() or SOLUTIONS[0]
    if value not in SOLUTIONS:
        raise ValueError(f"BLOCKCD_SOLUTIONS must be one of {', '.join(SOLUTIONS)}; got {value!r}")
    return value


def instructor() -> bool:
    """Whether solutions are printed inline (``BLOCKCD_SOLUTIONS=inline``)."""
    return solutions() == "inline"


def build_date() -> str:
    epoch = os.environ.get("SOURCE_DATE_EPOCH")
    when = _dt.datetime.fromtimestamp(int(epoch), _dt.timezone.utc) if epoch else _dt.datetime.now(_dt.timezone.utc)
    return when.strftime("%Y-%m-%d")


def _macros(config) -> str:
    """``\\newcommand`` lines for the MathJax macros of ``mathjax3_config``."""
    macros = (config.mathjax3_config or {}).get("tex", {}).get("macros", {})
    lines = []
    for name, body in macros.items():
        nargs = 0
        if isinstance(body, (list, tuple)):
            body, nargs = body[0], int(body[1])
        args = f"[{nargs}]" if nargs else ""
        lines.append(rf"\providecommand{{\{name}}}{{}}\renewcommand{{\{name}}}{args}{{{body}}}")
    return "\n".join(lines)


PREAMBLE = r"""
% ---- blockcd (book/_ext/latex_book.py) ----
%% lists nested deeper than four levels
\usepackage{enumitem}
\setlistdepth{9}
\renewlist{itemize}{itemize}{9}
\setlist[itemize]{label=\textbullet}
\renewlist{enumerate}{enumerate}{9}
\setlist[enumerate]{label=\arabic*.}
%% the star of the exercises' levels, upright, from a font that has it
\usepackage{newunicodechar}
\newfontfamily\blockcdstarfont{FreeSerif}[Extension=.otf,UprightFont=*,ItalicFont=*,BoldFont=*Bold,BoldItalicFont=*Bold]
\newunicodechar{★}{{\blockcdstarfont\char"2605}}
%% the bibliography page (book/bibliography.md) is the chapter: its list opens no second chapter
%% "Bibliography" and no second line in the contents
\makeatletter
\renewenvironment{sphinxthebibliography}[1]{%
  \let\blockcd@chapter\chapter\def\chapter##1##2{}%
  \let\blockcd@mkboth\@mkboth\def\@mkboth##1##2{}%
  \begin{thebibliography}{#1}%
  \let\chapter\blockcd@chapter\let\@mkboth\blockcd@mkboth}{\end{thebibliography}}
\makeatother
%% a box's title (a theorem's, an exercise's) is not left alone at the foot of a page: it starts a
%% new page unless a few lines of its body fit under it
\AddToHook{env/sphinxadmonition/before}{\Needspace{6\baselineskip}}
\usepackage{needspace}
%% table columns are set ragged right, those of set widths (\X: the split, long and notation tables)
%% and tabulary's (T, Sphinx's justified J until now): justified narrow columns left wide gaps
\newcolumntype{T}{L}
\makeatletter
\newcolumntype{\X}[2]{>{\raggedright\arraybackslash}p{\dimexpr
      (\linewidth-\spx@arrayrulewidth)*#1/#2-\tw@\tabcolsep-\spx@arrayrulewidth\relax}}
\makeatother
%% a long table continued on the next page says so without a number: the book numbers no table
\protected\def\sphinxtablecontinued#1{\textsf{\begingroup\def\tablename{}\def\thetable{}\def\ {}%
  \def\textendash{\unskip}#1\endgroup}}
%% the MathJax macros of _config.yml
"""


def _config_inited(app, config):
    from blockcd import __version__

    date = build_date()
    edition = {"inline": "instructor's copy, with solutions", "none": "student's edition, without solutions"}
    app.tags.add(f"solutions_{solutions()}")
    config.version = __version__
    config.release = f"{__version__} ({date})" + (f", {edition[solutions()]}" if solutions() in edition else "")
    theme = dict(config.html_theme_options or {})
    footer = f"blockcd {__version__}, built {date}"
    if solutions() in edition:
        footer += f" ({edition[solutions()]})"
    theme["extra_footer"] = (theme.get("extra_footer") or "") + f'<p class="blockcd-version">{footer}</p>'
    config.html_theme_options = theme
    elements = config.latex_elements
    elements["preamble"] = elements.get("preamble", "") + PREAMBLE + _macros(config) + "\n" + _back_of_title(config)
    config.latex_domain_indices = ["py-modindex"]


def _back_of_title(config) -> str:
    """The back of the PDF's title page: copyright, the licences and where to report a mistake."""
    from blockcd import __url__

    return (r"\def\sphinxbackoftitlepage{\vspace*{\fill}\begingroup\small\noindent" "\n"
            rf"Copyright \copyright{{}} {config.copyright} {config.author}. The text and figures are"
            r" licensed under Creative Commons Attribution 4.0 (CC BY 4.0), the code under the MIT licence;"
            r" see “Licence and citation” in the introduction.\par\medskip\noindent" "\n"
            rf"Report a mistake at \url{{{__url__}/issues}}, naming the release printed on the title page."
            r"\par\endgroup}" "\n")


#: ``BLOCKCD_EXECUTE``: how the HTML build treats the chapters (myst-nb's execution modes)
EXECUTION_MODES = ("off", "force", "cache", "auto")


def execution_mode() -> str | None:
    """The execution mode asked for by ``BLOCKCD_EXECUTE``, or ``None`` for ``_config.yml``'s."""
    mode = os.environ.get("BLOCKCD_EXECUTE", "").strip()
    if not mode:
        return None
    if mode not in EXECUTION_MODES:
        raise ValueError(f"BLOCKCD_EXECUTE must be one of {', '.join(EXECUTION_MODES)}; got {mode!r}")
    return mode


def _builder_inited(app):
    if app.builder.format != "latex":
        mode = execution_mode()
        if mode is not None:
            app.config.nb_execution_mode = mode
        return
    # the stored outputs, checked by nbval, are typeset; nothing is executed again
    app.config.nb_execution_mode = "off"
    app.config.latex_additional_files = list(app.config.latex_additional_files or []) + [
        str(HERE / "latex" / "bbm.sty")
    ]


def _number_as_html_config(app):
    """Number theorems and exercises by chapter, as the HTML does ("Exercise 1.1", not "1.10.1").

    sphinx-jupyterbook-latex sets ``numfig_secnum_depth`` to 2 for LaTeX.  Sphinx reads it twice:
    when it numbers theorems and exercises (the same numbers as the HTML only at the HTML's depth,
    1), and when it writes the LaTeX, where with chapters under parts 2 is what resets the figure
    counter at each chapter ("Fig. 2.1").  So 1 while reading, and the LaTeX value again before
    writing (:func:`_doctree_resolved`).
    """
    if app.builder.format == "latex":
        app.env.blockcd_latex_numfig_depth = app.config.numfig_secnum_depth
        app.config.numfig_secnum_depth = HTML_NUMFIG_SECNUM_DEPTH


def _is_solution(node) -> bool:
    return type(node).__name__ in ("solution_node", "solution_start_node", "solution_end_node")


def _doctree_resolved(app, doctree, docname):
    if app.builder.format == "latex":
        app.config.numfig_secnum_depth = getattr(app.env, "blockcd_latex_numfig_depth", 2)
        if not instructor():
            _remove_solutions(doctree)
        _title_the_landing_page(app, doctree)
        _unbox_proofs(doctree)
        _number_as_html(app, doctree)
        _split_wide_tables(doctree)
        _fit_long_tables(doctree)
        _name_chapters(app, doctree)
        _exercise_references(app, doctree)
    elif app.builder.format == "html" and instructor():
        for node in doctree.findall(_is_solution):
            node["classes"] = [c for c in node["classes"] if c != "dropdown"]
    elif app.builder.format == "html" and solutions() == "none":
        _remove_solutions(doctree)


def _remove_solutions(doctree):
    for node in list(doctree.findall(_is_solution)):
        node.parent.remove(node)


def _unbox_proofs(doctree):
    """A proof is set as running text ending in a square, as in a printed textbook, not as a box.

    sphinx-proof makes a proof an admonition without a title; Sphinx's LaTeX then opened a box whose
    heading was an empty bar, which could be left alone at a page's foot, and a long proof split
    across pages could run below the last line of the page."""
    for admonition in list(doctree.findall(nodes.admonition)):
        if "proof" in admonition["classes"] and not any(isinstance(c, nodes.title) for c in admonition.children):
            body = nodes.container("", *admonition.children, classes=["blockcd-proof"])
            body += nodes.raw("", "\\par\\nobreak\\hfill\\(\\square\\)\\par\n", format="latex")
            admonition.replace_self(body)


def _title_the_landing_page(app, doctree):
    """The landing page opens the PDF's text as an unnumbered chapter under its own title, in the
    contents and in the running footer (sphinx-jupyterbook-latex sets its text without either, and
    the footer went on naming the contents)."""
    from sphinx.util.texescape import escape

    title = app.env.titles.get(app.config.root_doc)
    if title is None or getattr(doctree, "blockcd_titled", False):
        return
    text = escape(title.astext(), app.config.latex_engine)
    doctree.insert(0, nodes.raw("", rf"\chapter*{{{text}}}\addcontentsline{{toc}}{{chapter}}{{{text}}}"
                                    rf"\markboth{{{text}}}{{{text}}}" + "\n", format="latex"))
    doctree.blockcd_titled = True


#: a table with more columns than this is split, in the PDF, into tables of its first column and at
#: most :data:`PART_COLUMNS` others each (the results page's ten columns: three tables of four)
MAX_COLUMNS = 6
PART_COLUMNS = 3
#: the share of the line width a split table's first column (the method) takes, in per cent
FIRST_COLUMN = 22


def _set_widths(table, widths):
    """Typeset ``table`` with these relative column widths (``\\X`` columns that wrap their text)
    as a ``longtable``, which breaks across pages and repeats its header."""
    tgroup = next(iter(table.findall(nodes.tgroup)))
    for colspec, width in zip(tgroup.findall(nodes.colspec), widths):
        colspec["colwidth"] = max(1, int(round(width)))
    table["classes"] = [c for c in table["classes"] if c != "colwidths-auto"] + ["colwidths-given", "longtable"]


def _rows(tgroup):
    return [row for part in tgroup.children if isinstance(part, (nodes.thead, nodes.tbody))
            for row in part.children]


def _split_wide_tables(doctree):
    """Split a table wider than :data:`MAX_COLUMNS` columns into narrower ones, each repeating the
    first column, so that the PDF prints every row and cell legibly (the HTML scrolls it)."""
    import math

    for table in list(doctree.findall(nodes.table)):
        tgroup = next(iter(table.findall(nodes.tgroup)), None)
        if tgroup is None or tgroup["cols"] <= MAX_COLUMNS:
            continue
        ncols = tgroup["cols"]
        if any(len(row.children) != ncols for row in _rows(tgroup)):
            continue  # merged cells: left as they are
        nparts = math.ceil((ncols - 1) / PART_COLUMNS)
        size = math.ceil((ncols - 1) / nparts)
        groups = [[0] + list(range(1 + k * size, min(ncols, 1 + (k + 1) * size))) for k in range(nparts)]
        header = next(iter(tgroup.findall(nodes.thead)), None)
        names = list(header.children[0].children) if header is not None else []
        parts = []
        for k, keep in enumerate(groups):
            part = table.deepcopy()
            if k:
                part["ids"], part["names"] = [], []
            pgroup = next(iter(part.findall(nodes.tgroup)))
            for i, colspec in enumerate(list(pgroup.findall(nodes.colspec))):
                if i not in keep:
                    pgroup.remove(colspec)
            for row in _rows(pgroup):
                for i, entry in enumerate(list(row.children)):
                    if i not in keep:
                        row.remove(entry)
            pgroup["cols"] = len(keep)
            rest = (100 - FIRST_COLUMN) / (len(keep) - 1)
            _set_widths(part, [FIRST_COLUMN] + [rest] * (len(keep) - 1))
            if k and names:
                # "The table, continued: noise or floor, iteration bound, ...", the headers' own text and maths
                lead = nodes.paragraph("", "The table, continued: ")
                for n, i in enumerate(keep[1:]):
                    lead += nodes.Text(", ") if n else []
                    for para in names[i].findall(nodes.paragraph):
                        lead += [child.deepcopy() for child in para.children]
                lead += nodes.Text(".")
                parts.append(lead)
            parts.append(part)
        table.replace_self(parts)


#: a table of more rows than this may be taller than a page, which only a ``longtable`` can break;
#: and Sphinx's LaTeX sets a table of more than 30 rows as a ``longtable`` whose columns never
#: wrap (``lll``) unless it is given widths
LONG_TABLE_ROWS = 20


#: the notation page's tables (first header "symbol"): one layout for all, the symbol column wide
#: enough for its longest formula
SYMBOL_TABLE = (27, 49, 24)


def _fit_long_tables(doctree):
    """Give a long table without set widths columns that wrap, from its cells' text.

    Each column's share is the square root of its cells' mean length in characters (a column
    of long meanings gets more, but not all, of the line), at least 14%. The notation page's
    tables (a header "symbol") share :data:`SYMBOL_TABLE`'s widths, whatever their length."""
    for table in list(doctree.findall(nodes.table)):
        if "colwidths-given" in table["classes"]:
            continue
        tgroup = next(iter(table.findall(nodes.tgroup)), None)
        if tgroup is None:
            continue
        rows = _rows(tgroup)
        if any(len(row.children) != tgroup["cols"] for row in rows):
            continue
        if tgroup["cols"] == len(SYMBOL_TABLE) and rows and rows[0].children[0].astext().strip() == "symbol":
            _set_widths(table, SYMBOL_TABLE)
            continue
        if len(rows) <= LONG_TABLE_ROWS:
            continue
        means = [sum(len(row.children[i].astext()) for row in rows) / len(rows) for i in range(tgroup["cols"])]
        weights = [max(m, 1.0) ** 0.5 for m in means]
        shares = [100 * w / sum(weights) for w in weights]
        shares = [max(14.0, s) for s in shares]
        _set_widths(table, [100 * s / sum(shares) for s in shares])


def _number_as_html(app, doctree):
    """Number in LaTeX exactly the documents the HTML numbers (``toc_secnumbers``)."""
    from sphinx import addnodes

    secnumbers = app.env.toc_secnumbers
    for start in doctree.findall(addnodes.start_of_file):
        depth = SECNUMDEPTH if secnumbers.get(start["docname"]) else -1
        start.insert(0, nodes.raw("", rf"\setcounter{{secnumdepth}}{{{depth}}}" + "\n", format="latex"))


def _name_chapters(app, doctree):
    """Give each document's top section its title as a name, as sphinx-proof expects.

    sphinx-proof finds a theorem's document by the title among its section's names; a title with
    an apostrophe ("The paper's claims") is typeset with a typographic one and was not found,
    which left that chapter's lemmas unnumbered and their labels undefined.
    """
    from sphinx import addnodes

    for start in doctree.findall(addnodes.start_of_file):
        title = app.env.titles.get(start["docname"])
        section = next(iter(start.findall(nodes.section)), None)
        if title is not None and section is not None and section.get("docname") == start["docname"]:
            name = title.astext().lower()
            if name not in section["names"]:
                section["names"].append(name)


def _exercise_references(app, doctree):
    """References to an exercise of another chapter point at the exercise's LaTeX label.

    sphinx-exercise rewrites references within a chapter only; across chapters the reference names
    a label it never writes, and the PDF printed "Exercise ??".
    """
    from sphinx import addnodes
    from sphinx_exercise.nodes import exercise_latex_number_reference

    registry = getattr(app.env, "sphinx_exercise_registry", {})
    for ref in list(doctree.findall(addnodes.number_reference)):
        if isinstance(ref, exercise_latex_number_reference):
            continue
        label = ref.get("refuri", "").rpartition("#")[2] or ref.get("refid", "")
        if label in registry and registry[label].get("type", "").startswith("exercise"):
            new = exercise_latex_number_reference(refid=label)
            new += nodes.Text(ref.astext())
            ref.replace_self(new)


def setup(app):
    app.connect("config-inited", _config_inited)
    # before myst-nb reads its configuration (priority 500)
    app.connect("builder-inited", _builder_inited, priority=100)
    app.connect("builder-inited", _number_as_html_config, priority=900)
    app.connect("doctree-resolved", _doctree_resolved)
    return {"parallel_read_safe": True, "parallel_write_safe": True}
