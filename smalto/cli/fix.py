"""``smalto fix``: a failing Pallas kernel made to lower, its verified fixes written to its
Python source (as ``ruff check --fix`` writes lint fixes).

    smalto fix SCRIPT.py:FUNCTION --arg DTYPE[SHAPE]... [--arch 9.0|10.0] [--diff]
               [--allow-unoptimized] [--allow-smalto-only]

Lowers FUNCTION with smalto as the pass (no GPU needed), makes the first
verified fix of every problem in the source, lowers again, and repeats until
it lowers or no fix is left (``smalto.jax.fixing``). Prints each change, line
by line, and why (on stderr with ``--diff``); notes on stderr say which fixes
were not made and whether JAX's own pass rejects the kernel. Writes the script
only where the function then lowers, and only if the file did not change
meanwhile; ``--diff`` prints a unified diff and writes nothing. Fixes that
make transfers unoptimized (slower) are made only with ``--allow-unoptimized``;
a fixed kernel that JAX's own pass still rejects (it compiles with smalto
installed) is written only with ``--allow-smalto-only``.

Exit status: 0 when the function lowers (fixed, or already as written) with JAX's
own pass too, or with smalto's only where ``--allow-smalto-only`` says that is
enough; 1 when it still fails (the diagnosis that remains on stderr), compiles
only with smalto, or a fix was not written; 2 on bad usage or a script that
cannot be loaded.
"""

from __future__ import annotations

import argparse
import difflib
import os
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, TextIO

from smalto.basics.archs import parse_arch
from smalto.cli.output import EXIT_FAILED, EXIT_OK, UsageError, fail, note
from smalto.cli.targets import script_target, shape_dtype

if TYPE_CHECKING:
    from smalto.jax.fixing import FixOutcome


@dataclass(frozen=True)
class _Read:
    """The script as read: its text, and what says whether it changed since."""

    text: str
    data: bytes
    mtime_ns: int
    size: int


def run_fix(args: argparse.Namespace) -> int:
    """``smalto fix`` on parsed arguments (see ``smalto.cli.main``, which reports a
    ``UsageError`` with exit status 2); returns the exit status."""
    path, function = script_target(args.target)
    read = _read(path)
    arguments = tuple(shape_dtype(dtype, shape) for dtype, shape in args.args)
    arch = parse_arch(args.arch) if args.arch else None

    from smalto.jax.fixing import fix_script
    from smalto.source.scripts import ScriptError

    try:
        outcome = fix_script(
            path,
            function,
            arguments,
            arch=arch,
            allow_unoptimized=args.allow_unoptimized,
            text=read.text,
        )
    except ScriptError as error:
        raise UsageError(f"{path}: {error}") from None
    report = sys.stderr if args.diff else sys.stdout
    target = f"{path}:{function}"
    if outcome.already:
        if not outcome.needs_smalto:
            print(f"{target} lowers as written: nothing to fix", file=report)
            return EXIT_OK
        print(f"{target} lowers as written with smalto as the pass only", file=report)
        note(
            f"JAX's own pass rejects it ({outcome.jax_says}): without smalto installed "
            "(smalto.jax.install(), or python -m smalto.jax run) it does not compile"
        )
        if args.allow_smalto_only:
            return EXIT_OK
        return fail(
            f"{target} compiles only with smalto; --allow-smalto-only accepts that",
            EXIT_FAILED,
        )
    if not outcome.lowers:
        _held_back(outcome)
        diagnosis = outcome.remaining or "(no diagnosis)"
        return fail(f"{target} still fails; {path} is unchanged:\n{diagnosis}", EXIT_FAILED)
    _changes(outcome, report)
    if outcome.needs_smalto:
        note(
            f"JAX's own pass still rejects the fixed kernel ({outcome.jax_says}); it "
            "compiles with smalto as the pass (smalto.jax.install(), or python -m smalto.jax "
            "run)"
        )
        if not args.allow_smalto_only:
            status = fail(
                "not written: the fix needs smalto installed; --allow-smalto-only writes it",
                EXIT_FAILED,
            )
            if args.diff:
                sys.stdout.write(_diff(path, outcome.original, outcome.text))
            return status
    if args.diff:
        sys.stdout.write(_diff(path, outcome.original, outcome.text))
        return EXIT_OK
    if _changed_since(path, read):
        return fail(
            f"{path} changed since smalto fix read it: not written (run smalto fix again)",
            EXIT_FAILED,
        )
    try:
        path.write_bytes(outcome.text.encode("utf-8"))
    except OSError as error:
        return fail(f"cannot write '{path}': {error.strerror or error}", EXIT_FAILED)
    count = len(outcome.applied)
    print(f"fixed {path}: {count} edit{'s' if count != 1 else ''}; {target} lowers", file=report)
    return EXIT_OK


def _changes(outcome: FixOutcome, report: TextIO) -> None:
    """Each change, line by line, and why."""
    for applied in outcome.applied:
        edit = applied.edit
        first = edit.parts[0].span
        print(f"{first.file}:{first.line}: {applied.why}", file=report)
        for line in applied.before:
            print(f"  - {line.strip()}", file=report)
        for line in applied.after:
            print(f"  + {line.strip()}", file=report)
        print(f"  fix: {edit.text} [{edit.applicability}]", file=report)
    _held_back(outcome)


def _held_back(outcome: FixOutcome) -> None:
    """A note per verified fix not made, and why (each said once)."""
    said: set[str] = set()
    for held in outcome.held_back:
        text = f"not made: {held.edit.text} ({held.reason})"
        if text not in said:
            said.add(text)
            note(text)


def _diff(path: Path, before: str, after: str) -> str:
    return "".join(
        difflib.unified_diff(
            before.splitlines(keepends=True),
            after.splitlines(keepends=True),
            fromfile=str(path) if path.is_absolute() else f"a/{path}",
            tofile=str(path) if path.is_absolute() else f"b/{path}",
        )
    )


def _read(path: Path) -> _Read:
    try:
        data = path.read_bytes()
        status = path.stat()
        return _Read(data.decode("utf-8"), data, status.st_mtime_ns, status.st_size)
    except (OSError, UnicodeDecodeError) as error:
        raise UsageError(f"cannot read '{path}': {error}") from None


def _changed_since(path: Path, read: _Read) -> bool:
    try:
        status = os.stat(path)
        if (status.st_mtime_ns, status.st_size) != (read.mtime_ns, read.size):
            return True
        return path.read_bytes() != read.data
    except OSError:
        return True
