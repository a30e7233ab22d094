"""``smalto infer FILE...``: infer each module's layouts, print it (or its summary), report.

One file: the module goes to stdout or ``-o OUT``, the report to ``--report
PAGE``. Several: each module to ``-o DIR/<name>.mlir`` (or to stdout, separated
by ``// -----`` as ``mlir-opt --split-input-file`` reads them), each report to
``--report DIR/<name>.html``; every file is tried, and the exit status is the
worst of them. Paths that cannot be written are found before any inference.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import re
import sys
import warnings
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

import smalto
from smalto.basics.inputs import STDIN, Input, read_input
from smalto.basics.mlir import MlirInputError, in_context, module_arch, print_module
from smalto.basics.writing import write_file
from smalto.cli.arguments import solve_options
from smalto.cli.output import (
    EXIT_INFERENCE_FAILED,
    EXIT_OK,
    EXIT_USAGE,
    UsageError,
    fail,
    note,
    warning,
)
from smalto.diagnose.verify import lowering_fixes
from smalto.errors import InferenceError
from smalto.infer import Inference, infer_keeping_the_solution
from smalto.pipeline.validate import SUPPORTED_ARCHS
from smalto.report.printed import PrintedModule
from smalto.source.files import Sources, searching_beside

if TYPE_CHECKING:
    from jax._src.lib.mlir import ir

    from smalto.report.summary import Summary

DEFAULT_ARCH = (9, 0)
SPLIT_MARKER = "// -----\n"  # between modules on stdout, as mlir-opt --split-input-file reads


@dataclass(frozen=True)
class Destinations:
    """Where each input's module and report go."""

    output: str | None  # -o as given
    report: str | None  # --report as given
    many: bool  # several inputs: -o and --report are directories

    def module_path(self, name: str) -> str | None:
        if self.output is None or self.output == "-":
            return None
        return str(Path(self.output) / f"{_stem(name)}.mlir") if self.many else self.output

    def report_path(self, name: str) -> str | None:
        if self.report is None:
            return None
        return str(Path(self.report) / f"{_stem(name)}.html") if self.many else self.report


def run_infer(args: argparse.Namespace) -> int:
    """Runs ``smalto infer`` on parsed arguments (see ``smalto.cli.main``); returns the status."""
    if args.json:
        args.summary = True
    inputs: list[str] = args.inputs
    destinations = Destinations(args.output, args.report, len(inputs) > 1)
    _check_destinations(inputs, destinations)
    status = EXIT_OK
    stdout = _Stdout()
    for name in inputs:
        status = max(status, _infer_one(name, args, destinations, stdout))
    return status


@dataclass
class _Stdout:
    """Whether a module or summary was printed yet: the next one is set apart from it."""

    used: bool = False

    def print(self, text: str, separator: str) -> None:
        _print(separator + text if self.used else text)
        self.used = True


def _infer_one(name: str, args: argparse.Namespace, to: Destinations, stdout: _Stdout) -> int:
    # The user's Python files behind the module's locations are looked for beside the
    # module file too (a captured module names them relative to where it was captured).
    with searching_beside(name) as sources, lowering_fixes(args.lower_fixes):
        status = _infer_in(name, args, to, stdout, sources)
    missing = sources.missing_note()
    if missing is not None:
        note(missing)
    return status


def _infer_in(
    name: str, args: argparse.Namespace, to: Destinations, stdout: _Stdout, sources: Sources
) -> int:
    try:
        source = read_input(name)
        arch = args.arch or _arch_of(source)
    except (MlirInputError, UsageError) as error:
        return fail(str(error), EXIT_USAGE)
    options = solve_options(args, fuel=args.fuel, arch=arch)
    module = source.module
    report = to.report_path(name)
    inference: Inference | None = None
    try:
        # JAX's pass builds attributes from the ambient context; so may ours.
        with in_context(module), rescue_notes() as changes:
            if report or args.dump_system or args.summary:
                dump_to = sys.stderr if args.dump_system else None
                inference = infer_keeping_the_solution(module, options, dump_to)
            else:
                smalto.infer_layout(module, **options.keywords())
    except MlirInputError as error:  # values smalto cannot lay out (pipeline.validate)
        return fail(str(error), EXIT_USAGE)
    except (InferenceError, NotImplementedError) as error:
        return _failed(error, source, arch, args, to, stdout, sources, report)
    over = _over_smem_limit(module, arch)
    if over is not None:
        warning(f"{source.name}: {over}")
    writing: str | None = None  # the file being written (None: stdout), for its error
    try:
        printed = None
        if inference is not None and (report is not None or args.summary):
            printed = _printed(source, inference, generic=args.generic)
        if report is not None:
            from smalto.report.layouts_page import write_report

            assert inference is not None
            writing = report
            write_report(
                module,
                inference,
                report,
                source_name=source.name,
                printed=printed,
                rewritten=changes.rewritten,
                unoptimized=changes.unoptimized,
                staged=changes.staged,
            )
        text = print_module(module, generic=args.generic, debug_info=args.debug_info)
        module_path = to.module_path(name)
        if module_path is not None:
            writing = module_path
            _write_file(module_path, text)
        writing = None
        if args.summary:
            assert inference is not None and printed is not None
            summary = _summary(source, inference, printed, arch)
            if args.json:
                stdout.print(json.dumps({"ok": True, **summary.as_json()}) + "\n", "")
            else:
                stdout.print(summary.text(), "\n")
        elif module_path is None:
            stdout.print(text, SPLIT_MARKER)
    except BrokenPipeError:
        raise  # stdout's reader left: the command line ends quietly
    except OSError as error:  # a file checked writable at the start, yet not written
        return fail(_cannot_write(writing, error), EXIT_USAGE)
    return EXIT_OK


def _over_smem_limit(module: ir.Module, arch: tuple[int, int]) -> str | None:
    """Where the kernel asks for more SMEM than a block may have (JAX refuses it before its
    pass runs): what uses it at the peak, at the kernel's lines, and the verified changes
    that bring it under. None within the limit (told by the launch's size alone)."""
    from smalto.basics.launch import dynamic_smem
    from smalto.hw.memory import smem_limit
    from smalto.smem.program_order import first_launch

    launch = first_launch(module)
    size = dynamic_smem(launch) if launch is not None else None
    if size is None or size <= smem_limit(arch):
        return None
    from smalto.report.smem_map import lowered_cuts, over_limit_text
    from smalto.smem.allocations import read_smem_map
    from smalto.smem.cuts import smem_cuts

    with in_context(module):
        smem = read_smem_map(module, arch)
        cuts = smem_cuts(smem, module, arch)
        return over_limit_text(smem, cuts, lowered_cuts(cuts, arch))


@dataclass
class RescueChanges:
    """What the rescues changed in a module, as they announced it: a line per op the
    unit-dim rewrite changed, one per transfer made unoptimized or staged through SMEM (for
    the report)."""

    rewritten: list[str] = field(default_factory=list)
    unoptimized: list[str] = field(default_factory=list)
    staged: list[str] = field(default_factory=list)


@contextlib.contextmanager
def rescue_notes(prog: str = "smalto") -> Iterator[RescueChanges]:
    """What the rescues changed, on stderr after ``prog`` (how the command's other
    messages start): a note per op the unit-dim rewrite changed, a warning per transfer
    made unoptimized (it costs speed) or staged through SMEM (it costs SMEM). Yields the
    same lines, filled in on the way out."""
    from smalto.errors import (
        SlowLayoutsWarning,
        StagedThroughSmemWarning,
        UnitDimRewriteWarning,
        UnoptimizedTransferWarning,
    )

    changes = RescueChanges()
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always", UnitDimRewriteWarning)
        warnings.simplefilter("always", UnoptimizedTransferWarning)
        warnings.simplefilter("always", StagedThroughSmemWarning)
        warnings.simplefilter("always", SlowLayoutsWarning)
        try:
            yield changes
        finally:
            for shown in caught:
                message = shown.message
                if isinstance(message, UnitDimRewriteWarning):
                    for record in message.rewritten:
                        changes.rewritten.append(str(record))
                        note(str(record), prog)
                elif isinstance(message, UnoptimizedTransferWarning):
                    changes.unoptimized.append(str(message.transfer))
                    warning(str(message.transfer), prog)
                elif isinstance(message, StagedThroughSmemWarning):
                    changes.staged.append(str(message.staged))
                    warning(str(message.staged), prog)
                elif isinstance(message, SlowLayoutsWarning):
                    note(str(message), prog)
                else:
                    warnings.showwarning(message, shown.category, shown.filename, shown.lineno)


def _failed(
    error: InferenceError | NotImplementedError,
    source: Input,
    arch: tuple[int, int],
    args: argparse.Namespace,
    to: Destinations,
    stdout: _Stdout,
    sources: Sources,
    report: str | None,
) -> int:
    """What ``smalto infer`` says of a module with no layouts: its page, its message (or
    its JSON), its exit status."""
    if report is not None:
        from smalto.report.failure_page import write_failure_report

        try:
            write_failure_report(source, error, report, arch=arch, sources=sources)
        except OSError as write_error:
            return fail(_cannot_write(report, write_error), EXIT_USAGE)
    message = str(error) or "unsupported operation"
    conflict = getattr(error, "conflict", None)
    phrase = getattr(error, "phrase", None)
    if args.verbose and conflict is not None and phrase:
        # Also what each value was forced to, and where each is defined; then what the
        # message says beyond the diagnosis (a rescue tried in vain).
        message = f"{phrase}\n{conflict.message(verbose=True)}"
        message += "".join(f"\n{added}" for added in getattr(error, "notes", ()))
    if to.many:
        message = f"{source.name}: {message}"
    if args.json:
        from smalto.report.failure_json import failure_json

        document = with_source_edits(
            failure_json(source.name, arch, error, sources), error, sources
        )
        stdout.print(json.dumps(document) + "\n", "")
        # The diagnosis is on stdout; stderr says what failed, in one line.
        return fail(message.splitlines()[0], EXIT_INFERENCE_FAILED)
    return fail(message + source_excerpts(error, sources), EXIT_INFERENCE_FAILED)


def _printed(source: Input, inference: Inference, *, generic: bool) -> PrintedModule:
    """The module as printed, with the input's names, for the summary and the report."""
    from smalto.report.printed import printed_module

    with in_context(source.module):
        return printed_module(
            source.module,
            inference.program,
            generic=generic,
            input_text=source.text,
            input_files=source.files,
        )


def _summary(
    source: Input, inference: Inference, printed: PrintedModule, arch: tuple[int, int]
) -> Summary:
    from smalto.report.summary import summarize

    with in_context(source.module):
        return summarize(inference, printed, source.name, arch)


def _arch_of(source: Input) -> tuple[int, int]:
    arch = module_arch(source.module)
    if arch is None:
        return DEFAULT_ARCH
    if arch not in SUPPORTED_ARCHS:
        supported = " or ".join(f"{major}.{minor}" for major, minor in SUPPORTED_ARCHS)
        raise UsageError(
            f"{source.name}: the module targets architecture {arch[0]}.{arch[1]}, which smalto "
            f"does not support ({supported}); pass --arch to override"
        )
    return arch


# --- where things go ---------------------------------------------------------------------


def _check_destinations(inputs: list[str], to: Destinations) -> None:
    """Refuses, before any work, destinations that cannot be written (exit status 2)."""
    if to.many:
        if STDIN in inputs:
            raise UsageError("'-' (stdin) can only be read alone")
        for option, directory in (("-o", to.output), ("--report", to.report)):
            if directory is None or (option == "-o" and directory == "-"):
                continue
            _make_directory(option, directory)
        stems: dict[str, str] = {}
        for name in inputs:
            other = stems.setdefault(_stem(name), name)
            if other != name and (to.module_path(name) or to.report_path(name)):
                raise UsageError(
                    f"'{other}' and '{name}' would both be written as {_stem(name)}.*: "
                    "rename one, or run them apart"
                )
    for name in inputs:
        for option, path in (("-o", to.module_path(name)), ("--report", to.report_path(name))):
            if path is None:
                continue
            if Path(path).is_dir():
                raise UsageError(f"cannot write {option} '{path}': it is a directory")
            if not Path(path).parent.is_dir():
                raise UsageError(
                    f"cannot write {option} '{path}': no directory '{Path(path).parent}'"
                )
            if name != STDIN and Path(path).exists() and Path(path).samefile(name):
                raise UsageError(f"cannot write {option} '{path}': it is the input '{name}'")


def _make_directory(option: str, directory: str) -> None:
    try:
        Path(directory).mkdir(parents=True, exist_ok=True)
    except OSError as error:
        raise UsageError(
            f"cannot write {option} '{directory}' (a directory, for several files): "
            f"{error.strerror or error}"
        ) from None


def _stem(name: str) -> str:
    return re.sub(r"[^A-Za-z0-9_.+-]", "_", Path(name).stem) or "module"


def _write_file(path: str, text: str) -> None:
    write_file(path, text)  # whole or not at all: a file there before is never half written


def _cannot_write(path: str | None, error: OSError) -> str:
    """What to say of a file (``None``: stdout) that could not be written. (A full disk's
    error comes as the file is closed, and names no file: the caller knows which.)"""
    where = "to stdout" if path is None else f"'{path}'"
    return f"cannot write {where}: {error.strerror or error}"


def _print(text: str) -> None:
    sys.stdout.write(text)
    sys.stdout.flush()


# --- messages ----------------------------------------------------------------------------

_LOCATION = re.compile(r"^(.+):(\d+):(\d+)$")
_EXCERPT_WIDTH = 120  # an MLIR line may run to a thousand characters: show this much of it


def source_excerpts(error: Exception, sources: Sources | None = None) -> str:
    """The source lines an error names, under each location, as compilers show them; the
    files are looked up by ``sources`` (default: the search the command set up, else the
    current directory), which remembers those it did not find."""
    sources = sources if sources is not None else Sources()
    report = getattr(error, "conflict", None)
    lines: list[str] = []
    for location in getattr(report, "locations", [])[:8]:
        match = _LOCATION.match(location)
        if match is None:
            continue
        path, line, column = match[1], int(match[2]), int(match[3])
        source = sources.line(path, line)
        if source is None:
            continue  # not a readable file (e.g. "-" for stdin): the note says which
        source, column = _window(source, column)
        lines += [f"{location}:", f"  {source}", "  " + " " * max(column - 1, 0) + "^"]
    return "\n" + "\n".join(lines) if lines else ""


def _window(source: str, column: int) -> tuple[str, int]:
    """At most ``_EXCERPT_WIDTH`` characters of a line around ``column`` (1-based)."""
    if len(source) <= _EXCERPT_WIDTH:
        return source, column
    start = max(0, min(column - 1 - _EXCERPT_WIDTH // 4, len(source) - _EXCERPT_WIDTH))
    window = source[start : start + _EXCERPT_WIDTH]
    prefix = "..." if start else ""
    suffix = "..." if start + _EXCERPT_WIDTH < len(source) else ""
    return prefix + window + suffix, column - start + len(prefix)


def _fast_fix(report: Any, read: Callable[[str], str | None], number: int) -> dict[str, Any]:
    """The fast fix, offered first (a transfer staged through SMEM with a TMA copy): its
    words, and its edit of the Python source where one can be built (``MaybeIncorrect``:
    from the module alone it is not lowered with JAX's pass; ``smalto fix`` verifies it
    and proves it by running), else why not."""
    from smalto.jax.staged_epilogue import offered_staging

    edit, why = offered_staging(report, read)
    return {
        "text": report.faster,
        "kind": "stage",
        "fix": replace(edit, problem=number).as_json() if edit is not None else None,
        "why_not": why,
    }


def with_source_edits(
    document: dict[str, Any], error: BaseException, sources: Sources
) -> dict[str, Any]:
    """``document`` (``failure_json``'s) with each problem's failure code, and each verified
    edit's place in the Python source as an editor applies it: ``fix`` holds its span
    (file, line, first and end column), the replacement, every part, and rustc's
    applicability (``smalto.source.fix_edits``)."""
    from smalto.constraints.conflict_report import problems_of
    from smalto.source.fix_edits import DiagnosedEdit, source_edit

    problems = problems_of(error)
    documents = document.get("problems") or []

    def read(file: str) -> str | None:
        found = sources.find(file)
        try:
            return found.read_text(encoding="utf-8") if found is not None else None
        except (OSError, UnicodeDecodeError):
            return None

    for number, (report, entry) in enumerate(zip(problems, documents, strict=False)):
        code = report.code
        entry["code"] = code
        edits: list[DiagnosedEdit] = list(report.edits)
        for edit, edit_entry in zip(edits, entry.get("edits") or [], strict=False):
            edit_entry["fix"] = source_edit(edit, read, code=code, problem=number).as_json()
        if getattr(report, "faster", None):
            entry["fast_fix"] = _fast_fix(report, read, number)
    # (A refusal a rule makes outright has no problem of its own, its code on the error.)
    document["code"] = documents[0].get("code") if documents else getattr(error, "code", None)
    if documents:
        document["edits"] = documents[0].get("edits", document.get("edits"))
    return document
