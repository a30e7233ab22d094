"""``smalto fix``: a failing Pallas kernel made to lower, its verified fixes written to its
Python source (as ``ruff check --fix`` writes lint fixes).

    smalto fix SCRIPT.py:FUNCTION --arg DTYPE[SHAPE]... [--arch 9.0|10.0] [--diff | --json]
               [--allow-unoptimized] [--allow-smalto-only]

Lowers FUNCTION with smalto as the pass (no GPU needed), makes the first
verified fix of every problem in the source, lowers again, and repeats until
it lowers or no fix is left (``smalto.jax.fixing``), then runs the kernel as written
and as fixed in JAX's Mosaic GPU interpreter (``smalto.jax.interpreted``): outputs that
differ, or a race, and nothing is written. Prints each change, line
by line, and why (on stderr with ``--diff``); notes on stderr say which fixes
were not made and whether JAX's own pass rejects the kernel, and each time the
script runs (in its own place, as ``python SCRIPT.py`` runs it). Writes the
script only where the function then lowers: whole or not at all, never over a
save made since it was read, never a read-only one (``smalto.basics.writing``);
``--diff`` prints a unified diff and writes nothing (what the script prints
goes to stderr). Fixes that make transfers unoptimized (slower) are made only
with ``--allow-unoptimized``; a fixed kernel that JAX's own pass still rejects
(it compiles with smalto installed) is written only with ``--allow-smalto-only``.

Exit status: 0 when the function lowers (fixed, or already as written) with JAX's
own pass too, or with smalto's only where ``--allow-smalto-only`` says that is
enough; 1 when it still fails (the diagnosis that remains on stderr), compiles
only with smalto, or a fix was not written (the file changed, was saved
meanwhile, is read-only or could not be written); 2 on bad usage or a script
that cannot be loaded.
"""

from __future__ import annotations

import argparse
import contextlib
import difflib
import io
import os
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING, TextIO

from smalto.basics.archs import parse_arch
from smalto.basics.writing import (
    ChangedSinceRead,
    ReadOnly,
    SavedWhileWriting,
    Snapshot,
    snapshot,
    write_file,
)
from smalto.cli.fix_proofs import refuted_words, said_not_staged, said_run
from smalto.cli.output import EXIT_FAILED, EXIT_OK, UsageError, fail, note
from smalto.cli.targets import script_target, shape_dtype
from smalto.source.lines import python_lines

if TYPE_CHECKING:
    from smalto.jax.fixing import FixOutcome


def run_fix(args: argparse.Namespace) -> int:
    """``smalto fix`` on parsed arguments (see ``smalto.cli.main``, which reports a
    ``UsageError`` with exit status 2); returns the exit status. With ``--json``, the
    words go to stderr and stdout has one JSON object (``smalto.cli.fix_proofs``)."""
    if not getattr(args, "json", False):
        return _run_fix(args, {})
    if args.diff:
        raise UsageError("--json and --diff both print on stdout: give one of them")
    done: dict[str, object] = {}
    with contextlib.redirect_stdout(sys.stderr):
        status = _run_fix(args, done)
    from smalto.cli.fix_proofs import as_json

    outcome = done.get("outcome")
    print(as_json(outcome, args.target, status, bool(done.get("written"))))  # type: ignore[arg-type]
    return status


def _run_fix(args: argparse.Namespace, done: dict[str, object]) -> int:
    path, function = script_target(args.target)
    read = _read(path)
    text = _text(path, read)
    arguments = tuple(shape_dtype(dtype, shape) for dtype, shape in args.args)
    arch = parse_arch(args.arch) if args.arch else None

    from smalto.jax.fixing import fix_script
    from smalto.source.scripts import ScriptError

    try:
        # Under --diff, stdout is the diff alone: what the script prints goes to stderr.
        with _script_output_to_stderr() if args.diff else contextlib.nullcontext():
            outcome = fix_script(
                path,
                function,
                arguments,
                arch=arch,
                allow_unoptimized=args.allow_unoptimized,
                text=text,
                announce=note,
            )
    except ScriptError as error:
        raise UsageError(f"{path}: {error}") from None
    done["outcome"] = outcome
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
        _why_smalto_only(outcome)
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
    said_run(outcome, report)
    if outcome.refuted:
        return fail(refuted_words(outcome), EXIT_FAILED)
    if outcome.needs_smalto:
        note(
            f"JAX's own pass still rejects the fixed kernel ({outcome.jax_says}); it "
            "compiles with smalto as the pass (smalto.jax.install(), or python -m smalto.jax "
            "run)"
        )
        _why_smalto_only(outcome)
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
    try:
        write_file(path, outcome.text, since=read)
    except ReadOnly:
        return fail(f"{path} is read-only: not written (--diff prints the fix)", EXIT_FAILED)
    except ChangedSinceRead:
        return fail(
            f"{path} changed since smalto fix read it: not written (run smalto fix again)",
            EXIT_FAILED,
        )
    except SavedWhileWriting:
        return fail(
            f"{path} was saved while smalto fix was writing it: the save is kept, the fix "
            "is not written (run smalto fix again)",
            EXIT_FAILED,
        )
    except OSError as error:
        return fail(
            f"cannot write '{path}': {error.strerror or error}; {path} is unchanged", EXIT_FAILED
        )
    done["written"] = True
    count = len(outcome.applied)
    print(f"fixed {path}: {count} edit{'s' if count != 1 else ''}; {target} lowers", file=report)
    return EXIT_OK


def _changes(outcome: FixOutcome, report: TextIO) -> None:
    """Each change, line by line, and why."""
    for applied in outcome.applied:
        edit = applied.edit
        first = edit.parts[0].span
        print(f"{first.file}:{first.line}: {applied.why}", file=report)
        # (Indented as one block: a nested line keeps its place under the line above.)
        margin = _margin([*applied.before, *applied.after])
        for sign, lines in (("-", applied.before), ("+", applied.after)):
            for line in lines:
                print(f"  {sign} {line[margin:].rstrip()}".rstrip(), file=report)
        print(f"  fix: {edit.text} [{edit.applicability}]", file=report)
        print(f"  proven by: {applied.proven_by}", file=report)
    _held_back(outcome)


def _why_smalto_only(outcome: FixOutcome) -> None:
    """What makes the kernel need smalto, where it is known: the reductions kept with a
    unit dim (which JAX's lowering cannot compute on), and why an edit JAX's pass took
    was not proven by running."""
    if outcome.keepdims:
        note(
            "the unit dims of "
            + "; ".join(outcome.keepdims)
            + " are what JAX's own pass cannot lay out (smalto's unit-dim rewrite computes "
            "these statistics without them): computed as (N,) values and broadcast where "
            "they meet the tile (`mu[..., None]`), the kernel may compile without smalto"
        )
    if outcome.keepdims_not_followed:
        note(
            "smalto fix did not write them so: it does not follow a statistic at "
            f"{outcome.keepdims_not_followed}"
        )
    for why in dict.fromkeys(outcome.unproven):
        note(f"an edit JAX's own pass lowers was not made: {why}")


def _margin(lines: list[str]) -> int:
    """The indentation every line that is not blank shares."""
    indents = [len(line) - len(line.lstrip()) for line in lines if line.strip()]
    return min(indents, default=0)


def _held_back(outcome: FixOutcome) -> None:
    """A note per verified fix not made, and why (each said once)."""
    said_not_staged(outcome)
    said: set[str] = set()
    for held in outcome.held_back:
        text = f"not made: {held.edit.text} ({held.reason})"
        if text not in said:
            said.add(text)
            note(text)


def _diff(path: Path, before: str, after: str) -> str:
    return "".join(
        difflib.unified_diff(
            python_lines(before, keepends=True),
            python_lines(after, keepends=True),
            fromfile=str(path) if path.is_absolute() else f"a/{path}",
            tofile=str(path) if path.is_absolute() else f"b/{path}",
        )
    )


def _read(path: Path) -> Snapshot:
    try:
        return snapshot(path)
    except OSError as error:
        raise UsageError(f"cannot read '{path}': {error.strerror or error}") from None


def _text(path: Path, read: Snapshot) -> str:
    try:
        return read.data.decode("utf-8")
    except UnicodeDecodeError as error:
        raise UsageError(f"cannot read '{path}': {error}") from None


@contextlib.contextmanager
def _script_output_to_stderr() -> Iterator[None]:
    """What the script prints (Python's ``print``, and a child process's or C code's
    writes to file descriptor 1) goes to stderr while the block runs."""
    sys.stdout.flush()
    saved = None
    try:
        if sys.stdout.fileno() == 1 and sys.stderr.fileno() == 2:
            saved = os.dup(1)
            os.dup2(2, 1)
    except (OSError, ValueError, io.UnsupportedOperation):
        saved = None  # a stdout with no file descriptor (tests): Python's prints alone
    try:
        with contextlib.redirect_stdout(sys.stderr):
            yield
    finally:
        sys.stderr.flush()
        if saved is not None:
            os.dup2(saved, 1)
            os.close(saved)
