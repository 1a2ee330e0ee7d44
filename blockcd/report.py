"""How the book prints a check: one line per comparison, one layout for tables.

Every numerical check in a chapter compares a measured number with a predicted
one and asserts that they agree within a stated tolerance.  The functions here
print that comparison in one layout and return whether it holds, so the
chapter's cell still ends in a visible ``assert``::

    assert report.agree("K(m/n)/K(m)", measured, predicted, rel=0.15)
    assert report.below("E||g||^2 / (2 D)", worst, bound)
    report.table(["tau", "measured", "predicted"], rows)

The tolerances themselves (Monte-Carlo standard errors, the 15% rule for
iteration counts) are chosen in the chapters and explained in the book's
introduction, "How this book checks its claims".  Nothing here computes a
result; it only prints and compares.
"""

from __future__ import annotations

import inspect
import io
import math
import numbers
import textwrap
import tokenize
from collections.abc import Sequence
from typing import Any

import numpy as np

from . import registry, rules
from ._validate import check_float, check_int

__all__ = ["RuleSource", "agree", "below", "fmt", "source", "table"]

#: the widest printed line that fits the book's output column (a 1,400-px window)
WIDTH = 100


def _check_line(label: str, result: str) -> str:
    """``label: result`` on one line if it fits in :data:`WIDTH` characters, else on two.

    The second line holds the whole result (the numbers and the verdict), indented under the
    label, so the verdict is never the part a narrow column cuts off.
    """
    line = f"{label}: {result}"
    if len(line) <= WIDTH:
        return line
    indent = " " * (len(label) - len(label.lstrip(" ")) + 4)
    head = textwrap.fill(label + ":", WIDTH, subsequent_indent=indent, break_on_hyphens=False)
    return head + "\n" + indent + result


def fmt(value: Any, spec: str = ".3g") -> str:
    """Format one cell: numbers with ``spec`` (integers exactly), anything else with ``str``."""
    if isinstance(value, (bool, np.bool_)):
        return "yes" if value else "no"
    if isinstance(value, numbers.Integral):
        return str(int(value))
    if isinstance(value, numbers.Real):
        return format(float(value), spec)
    return str(value)


def _real(name: str, value: Any) -> float:
    if isinstance(value, (bool, np.bool_)) or not isinstance(value, numbers.Real):
        raise TypeError(f"{name} must be a real number, got {type(value).__name__} {value!r}")
    return float(value)


def agree(label: str, measured: float, predicted: float, *, rel: float | None = None,
          tol: float | None = None, se: float | None = None, k: float = 3.0, spec: str = ".3g") -> bool:
    """Print ``label: measured X, predicted Y (...)`` and return whether they agree.

    A line longer than 100 characters is printed on two: the label, then the rest indented.

    Exactly one tolerance is given:

    - ``rel``: ``|X / Y - 1| <= rel`` (iteration counts, ratios);
    - ``tol``: ``|X - Y| <= tol`` (exact identities, to rounding);
    - ``se``: ``|X - Y| <= k se``, a Monte-Carlo estimate with standard error ``se``.

    Parameters
    ----------
    label : str
        What is compared, in the chapter's symbols.
    measured, predicted : float
        The two numbers; ``predicted`` must be nonzero for ``rel``.
    rel, tol, se : float, optional
        The tolerance, exactly one of them, >= 0.
    k : float
        Standard errors allowed with ``se`` (default 3), > 0.
    spec : str
        Format of the numbers (default ``.3g``).

    Returns
    -------
    bool
        Whether the comparison holds; the chapter asserts it.
    """
    if not isinstance(label, str):
        raise TypeError(f"label must be a string, got {type(label).__name__}")
    x, y = _real("measured", measured), _real("predicted", predicted)
    given = [(name, v) for name, v in (("rel", rel), ("tol", tol), ("se", se)) if v is not None]
    if len(given) != 1:
        raise ValueError(f"give exactly one of rel, tol, se; got {[n for n, _ in given] or 'none'}")
    name, value = given[0]
    value = check_float(name, value, nonnegative=True)
    k = check_float("k", k, positive=True)
    if name == "rel":
        if y == 0:
            raise ValueError("predicted must be nonzero for a relative tolerance (rel); use tol")
        dev = x / y - 1
        ok = abs(dev) <= value
        how = f"{dev:+.1%}, within {value:.0%}"
    elif name == "tol":
        dev = abs(x - y)
        ok = dev <= value
        how = f"difference {dev:.1e}, within {value:.0e}"
    else:
        dev = abs(x - y) / value if value > 0 else (0.0 if x == y else math.inf)
        ok = dev <= k
        how = f"{dev:.1f} s.e. of {format(value, '.2g')}, within {format(k, 'g')}"
    ok = bool(ok and math.isfinite(x))
    result = f"measured {format(x, spec)}, predicted {format(y, spec)} ({how}){'' if ok else '  FAILS'}"
    print(_check_line(label, result))
    return ok


def below(label: str, measured: float, bound: float, *, spec: str = ".3g") -> bool:
    """Print ``label: measured X <= bound Y (X/Y of the bound)`` and return whether ``X <= Y``.

    A line longer than 100 characters is printed on two: the label, then the rest indented.
    """
    if not isinstance(label, str):
        raise TypeError(f"label must be a string, got {type(label).__name__}")
    x, y = _real("measured", measured), _real("bound", bound)
    ok = bool(math.isfinite(x) and x <= y)
    share = f"{x / y:.0%} of the bound" if y > 0 and math.isfinite(y) else "bound"
    print(_check_line(label, f"measured {format(x, spec)} <= {format(y, spec)} ({share}){'' if ok else '  FAILS'}"))
    return ok


def table(header: Sequence[str], rows: Sequence[Sequence[Any]], *, spec: str | Sequence[str] = ".3g",
          width: int = 0) -> None:
    """Print ``rows`` under ``header`` in right-aligned columns.

    Parameters
    ----------
    header : sequence of str
        Column names.
    rows : sequence of sequences
        One entry per column in each row; numbers are formatted with ``spec``
        (integers exactly), anything else with ``str``.
    spec : str or sequence of str
        One format for every column, or one per column.
    width : int
        Smallest column width (default: as wide as the widest cell), >= 0.
    """
    header = [str(h) for h in header]
    if not header:
        raise ValueError("header must name at least one column")
    specs = [spec] * len(header) if isinstance(spec, str) else list(spec)
    if len(specs) != len(header):
        raise ValueError(f"spec must be one format or {len(header)} (one per column), got {len(specs)}")
    width = check_int("width", width, lo=0)
    cells = []
    for i, row in enumerate(rows):
        row = list(row)
        if len(row) != len(header):
            raise ValueError(f"rows[{i}] has {len(row)} entries, the header {len(header)}")
        cells.append([fmt(v, s) for v, s in zip(row, specs)])
    widths = [max([width, len(h)] + [len(r[j]) for r in cells]) for j, h in enumerate(header)]
    print("  ".join(h.rjust(w) for h, w in zip(header, widths)))
    for r in cells:
        print("  ".join(c.rjust(w) for c, w in zip(r, widths)))


class RuleSource(str):
    """The source text of a rule, as :func:`source` returns it.

    A ``str`` (it prints as the code itself) that a notebook displays as a fenced Python block of
    Markdown (``text/markdown``); its plain-text form is the code.
    """

    def _repr_markdown_(self) -> str:
        return "```python\n" + str(self) + "\n```"

    def __repr__(self) -> str:
        return str(self)


#: who runs each member of a rule, for the note above it in :func:`source`
_RUNS = {"send": "worker i", "estimate": "worker i", "worker_init": "worker i",
         "point": "the master", "step": "the master", "arrive": "the master", "prox": "the master"}
#: what each argument of a rule's members holds, as :func:`source` says it above the member
_ARGUMENTS = {
    "o": "o is its data (the simulator passes all n workers' at once)",
    "w": "w its own state (None if it keeps none)",
    "x": "x the point the master broadcast",
    "y": "y the point the master broadcast",
    "x0": "x0 the starting point",
    "idx": "idx the rows of its minibatch, drawn by the engine (unused with whole local gradients)",
    "sel": "sel the blocks S_i it sends this round (through sel it computes its gradient on "
           "those blocks only and puts them on the wire)",
    "s": "s is the master's state",
    "total": "total the sum of the messages, sum_i P_{S_i} g_i",
    "scale": "scale = m/(tau n)",
    "step": "step the step size gamma",
    "n": "n the number of workers",
    "i": "i the worker whose message arrived",
    "coords": "coords the coordinates it sent (None: all d)",
    "values": "values the numbers it sent",
}


def _arguments_note(name: str, function, said_before: set, indent: str = "    ") -> list[str]:
    """Comment lines saying who runs ``name`` and what each of its arguments holds.

    An argument already described above (in ``said_before``, which is updated) is not described again.
    """
    args = [a for a in inspect.signature(function).parameters if a != "self"]
    said = {a: _ARGUMENTS.get(a, a) for a in args}
    if name == "arrive" and "scale" in args:
        said["scale"] = "scale = m/tau"
    new = [said[a] for a in args if (a, said[a]) not in said_before]
    said_before.update(said.items())
    runs = _RUNS.get(name)
    text = f"{name}({', '.join(args)})" + (f", run by {runs}" if runs else "")
    if new:
        text += ": " + ", ".join(new) + ("; the others as above." if len(new) < len(args) else ".")
    else:
        text += (", with the arguments above." if args else ".")
    return textwrap.wrap(text, 88, initial_indent=indent + "# ", subsequent_indent=indent + "# ",
                         break_on_hyphens=False, break_long_words=False)


def _fit(line: str) -> list[str]:
    """A source line longer than :data:`WIDTH` with a trailing comment: the comment above it."""
    if len(line) <= WIDTH or "#" not in line:
        return [line]
    try:
        tokens = list(tokenize.generate_tokens(io.StringIO(line.strip() + "\n").readline))
    except (tokenize.TokenError, SyntaxError):
        return [line]
    comments = [t for t in tokens if t.type == tokenize.COMMENT]
    if not comments:
        return [line]
    indent = line[:len(line) - len(line.lstrip())]
    cut = len(indent) + comments[0].start[1]
    return [indent + line[cut:].strip(), line[:cut].rstrip()]


def source(method: str, members=None):
    """The rule of ``method`` as the book shows it: the methods of its class that state the update.

    ``members`` names the methods to show (default: those the class itself
    defines, except the master's initial state and the recorded iterate); docstrings are left out, the
    chapter says in words what each step does.  A comment above each member says who runs it and
    what each of its arguments holds; a line wider than the output column has its trailing comment
    moved above it.  Returns a
    :class:`RuleSource`, shown in a notebook as a Markdown code block: the notebook stores the
    source text itself and the book highlights it when it is built, so a stored output does not
    depend on the installed version of a highlighter.
    """
    cls = type(registry.get(method).rule)
    if members is None:
        members = [k for k, v in vars(cls).items()
                   if inspect.isfunction(v) and k not in ("master_init", "start", "iterate")]
        if "step" not in members and cls.__bases__ == (rules.Rule,):
            members.append("step")  # the default master step it inherits
    bases = ", ".join(b.__name__ for b in cls.__bases__)
    lines = [f"class {cls.__name__}({bases}):"]
    said_before: set = set()
    for j, name in enumerate(members):
        body = textwrap.dedent(inspect.getsource(getattr(cls, name)))
        doc = getattr(cls, name).__doc__
        if doc:  # drop the docstring: the lines from the opening quotes to the closing ones
            out, skipping = [], False
            for line in body.splitlines():
                stripped = line.strip()
                if not skipping and stripped.startswith(('"""', 'r"""')):
                    skipping = not (stripped.endswith('"""') and len(stripped) > 3 + stripped.startswith("r"))
                    continue
                if skipping:
                    skipping = not stripped.endswith('"""')
                    continue
                out.append(line)
            body = "\n".join(out)
        shown = [out for line in body.splitlines() for out in _fit("    " + line if line else "")]
        lines += ([""] if j else []) + _arguments_note(name, getattr(cls, name), said_before) + shown
    return RuleSource("\n".join(lines))
