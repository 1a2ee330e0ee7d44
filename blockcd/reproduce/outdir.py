"""Where ``reproduce`` writes: the output directory checked before any computation, files written whole,
and a record of the run that keeps two runs from mixing in one directory.

:func:`prepare` runs before the first experiment: ``--out`` must be a directory this process can write
(created if missing), and if it holds the files of another run (another seed, size, kind or version,
as its record ``reproduce-run.json`` says, or files without such a record) it is refused unless
``replace=True`` (``--replace``), which first removes the files that record lists.  :func:`finish`
marks the record complete.  :func:`write_atomic` writes every file to a temporary name in the same
directory and renames it, so that an interrupted run leaves no cut file under a final name.
"""

from __future__ import annotations

import contextlib
import json
import os
import sys
from pathlib import Path

from .. import __version__

#: the record of the run whose files a directory holds (plain JSON)
RECORD = "reproduce-run.json"
#: what must agree for two runs to share a directory
SAME = ("run", "size", "seed", "version")


class OutError(ValueError):
    """An output place that cannot take the run's files (named, with the reason)."""


def stamp(run: str, size: str, seed: int, command: str | None = None) -> dict:
    """What every CSV and the record say of the run: its kind (``'suite'`` or ``'paper'``), size
    (``'quick'``, ``'full'`` or a custom config's name), seed, the library's version and the command
    (``python -m blockcd reproduce ...`` without ``--out DIR``: the same run gives the same bytes in any
    directory)."""
    if command is None:
        command = one_command(run, size, seed)
    return {"run": run, "size": size, "seed": int(seed), "version": __version__, "command": command}


def one_command(run: str, size: str, seed: int, *select: str) -> str:
    """The command line that writes one file of a run again, e.g. ``python -m blockcd reproduce --quick
    --seed 0 --only ninety_nine``: each experiment's (or figure's) CSV records its own, so that the same
    seed gives the same bytes whichever selection wrote it."""
    parts = ["python -m blockcd reproduce", *(["--paper"] if run == "paper" else []),
             *(["--quick"] if size == "quick" else []), f"--seed {int(seed)}", *select]
    return " ".join(parts)


def for_file(info: dict, *select: str) -> dict:
    """``info`` with the command that writes one experiment's or figure's files (:func:`one_command`)."""
    return dict(info, command=one_command(info["run"], info["size"], info["seed"], *select))


def command_line(argv) -> str:
    """``python -m blockcd`` and ``argv`` without the ``--out`` option and its value."""
    kept, skip = [], False
    for a in argv:
        if skip:
            skip = False
            continue
        if a == "--out":
            skip = True
            continue
        if a.startswith("--out="):
            continue
        kept.append(a)
    return " ".join(["python -m blockcd", *kept])


def prepare(out, info: dict, names, *, replace: bool = False) -> Path:
    """Check ``out`` before computing and take it for the run ``info`` (:func:`stamp`); ``names`` are the
    files the run will write there.  Raises :class:`OutError` naming the place and what is wrong."""
    out = Path(out)
    if out.exists() and not out.is_dir():
        raise OutError(f"--out {str(out)!r} is a file, not a directory")
    try:
        out.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise OutError(f"--out {str(out)!r} cannot be created ({exc.strerror or exc})") from None
    probe = out / f".{RECORD}.{os.getpid()}.probe"
    try:
        probe.write_bytes(b"")
        probe.unlink()
    except OSError as exc:
        raise OutError(f"--out {str(out)!r} is not writable ({exc.strerror or exc})") from None
    record = out / RECORD
    old = None
    if record.exists():
        try:
            old = json.loads(record.read_text(encoding="utf-8"))
        except (OSError, ValueError, RecursionError):
            old = {}
        if not isinstance(old, dict):
            old = {}
    theirs = [n for n in names if (out / n).exists()]
    if old is not None and any(old.get(k) != info[k] for k in SAME) or old is None and theirs:
        if not replace:
            what = ("files of a run without a record (" + ", ".join(theirs[:3]) + ("..." if len(theirs) > 3 else "")
                    + ")") if old is None else "the files of another run (" + ", ".join(
                        f"{k} {old.get(k)!r}" for k in SAME if old.get(k) != info[k]) + ")"
            raise OutError(f"--out {str(out)!r} holds {what}; this run is {info['run']}, {info['size']}, seed "
                           f"{info['seed']}, version {info['version']}: choose another --out, or pass --replace to "
                           "remove them first")
        for n in set((old or {}).get("files", [])) | set(theirs):
            if isinstance(n, str) and "/" not in n and "\\" not in n:
                with contextlib.suppress(OSError):
                    (out / n).unlink()
    write_atomic(record, json.dumps(dict(info, complete=False, files=[]), indent=1) + "\n")
    return out


def finish(out, info: dict, files) -> None:
    """Mark the record of ``out`` complete, listing the files the run wrote."""
    names = sorted({Path(f).name for f in files})
    write_atomic(Path(out) / RECORD, json.dumps(dict(info, complete=True, files=names), indent=1) + "\n")


def write_atomic(path, content=None, *, draw=None) -> Path:
    """Write ``path`` whole: ``content`` (str or bytes), or ``draw(tmp)`` writing the file ``tmp``, into a
    temporary name in the same directory, then renamed over ``path`` (a rename within a directory is
    atomic); an interruption leaves the old file or none, never a cut one."""
    path = Path(path)
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    try:
        if draw is not None:
            draw(tmp)
        elif isinstance(content, bytes):
            tmp.write_bytes(content)
        else:
            with open(tmp, "w", newline="", encoding="utf-8") as fh:
                fh.write(content)
        os.replace(tmp, path)
    finally:
        if tmp.exists():
            with contextlib.suppress(OSError):
                tmp.unlink()
    return path


def interrupted() -> int:
    """Say that the run was interrupted (the files written so far are whole) and give the exit status 130."""
    print("reproduce: interrupted; the files written so far are complete, the run's record says it is not",
          file=sys.stderr)
    return 130
