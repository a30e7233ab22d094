"""Command lines for using smalto with JAX programs.

``capture_main``: ``smalto capture SCRIPT.py:FUNCTION [--arg DTYPE[SHAPE]]...``
lowers FUNCTION for the GPU (no GPU needed) and writes the Mosaic GPU modules
JAX hands to layout inference as ``.mlir`` files, ready for ``smalto infer``:
``DIR/FUNCTION.mlir``, or ``DIR/FUNCTION-1.mlir``, ``-2``... where FUNCTION
builds several kernels. smalto's pass runs while lowering (the module is the
same whichever pass follows, and smalto's is fast); ``--jax`` runs JAX's own.
A note on stderr says, for each module, what the pass and JAX's lowering did
with it, and what to run next where it does not compile.

``run_main``: ``python -m smalto.jax run [--dump DIR] SCRIPT.py [ARGS...]``
(or ``-m MODULE``) runs a program you cannot edit with smalto as JAX's
layout-inference pass.

Exit status of ``capture``: 0 when it captured the modules, also where the
pass or JAX's lowering then rejected one (the module is written as it reached
the pass, which is what ``smalto infer`` reads); 1 when the lowering failed
before any module was captured, or, with ``--smalto``, where smalto's
inference found no layouts or JAX's lowering rejected them (the reason on
stderr; the modules captured are still written); 2 on bad usage or a script
that cannot be loaded, with one line on stderr.
"""

from __future__ import annotations

import argparse
import re
import runpy
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from smalto.basics.archs import parse_arch
from smalto.basics.file_names import printable
from smalto.basics.writing import write_file
from smalto.cli.arguments import add_option_flags
from smalto.cli.output import (
    EXIT_FAILED,
    EXIT_INTERRUPTED,
    EXIT_OK,
    EXIT_USAGE,
    UsageError,
    fail,
    note,
    stdout_unwritable,
)
from smalto.cli.targets import load_function, shape_dtype
from smalto.solve.options import switches
from smalto.source.scripts import folder_on_path, one_line

if TYPE_CHECKING:
    from smalto.jax.hooks import Pass


def capture_main(argv: Sequence[str] | None = None) -> int:
    """``smalto capture``: runs on ``argv`` (default ``sys.argv[1:]``); returns the exit status."""
    from smalto.cli.arguments import command_parser, parse_arguments

    args = parse_arguments(command_parser("capture"), sys.argv[1:] if argv is None else argv)
    if isinstance(args, int):
        return args
    try:
        return run_capture_command(args)
    except UsageError as error:
        return fail(str(error), EXIT_USAGE)
    except KeyboardInterrupt:
        return EXIT_INTERRUPTED
    except OSError as error:
        status = stdout_unwritable(error)
        if status is None:
            raise
        return status


def run_capture_command(args: argparse.Namespace) -> int:
    """``smalto capture`` on parsed arguments (see ``smalto.cli.main``, which reports a
    ``UsageError`` with exit status 2); returns the exit status."""
    import smalto.jax

    if args.smalto and args.jax:
        raise UsageError("--smalto and --jax: choose one pass")
    arguments = [shape_dtype(dtype, shape) for dtype, shape in args.args]
    function = load_function(args.target, len(arguments))
    arch = parse_arch(args.arch) if args.arch else None
    # The module is the same whichever pass follows; smalto's answers in a fraction of a
    # second where JAX's may spend tens running out of fuel. JAX's runs only when asked.
    by: Pass = "jax" if args.jax else "smalto"
    try:
        captured = smalto.jax.capture(function, *arguments, arch=arch, by=by)
    except Exception as error:  # the user's kernel failed to lower: their error, ours to report
        from smalto.jax.smem_room import overrun_explained

        # Over the SMEM limit, JAX says only by how much: what uses it, and what to cut.
        explained = overrun_explained(function, tuple(arguments), arch, error)
        return fail(
            f"lowering {args.target} failed before layout inference: {one_line(error)}"
            + (f"\n{explained}" if explained else ""),
            EXIT_FAILED,
        )
    if not captured:
        return fail(
            f"{args.target} built no Mosaic GPU kernel in warpgroup semantics "
            "(lowering_semantics=plgpu.LoweringSemantics.Warpgroup)",
            EXIT_FAILED,
        )
    stems = kernel_stems(args.target.rpartition(":")[2], len(captured))
    written = _write(captured, stems, args.output, inferred=args.inferred)
    status = EXIT_OK
    for kernel, stem, path in zip(captured, stems, written, strict=True):
        if args.smalto and not kernel.compiles:
            # Lowering with smalto's pass was asked for, and it failed: smalto's diagnosis,
            # whole (or JAX's lowering's rejection), and exit status 1.
            status = fail(f"{path or stem}: {_failure(kernel)}", EXIT_FAILED)
            continue
        for outcome in _outcome(kernel, path or stem, path, args):
            note(outcome)
    return status


def kernel_stems(function: str, count: int) -> list[str]:
    """File stems of a function's kernels: the function's name, numbered where it built
    several (``gemm-1``, ``gemm-2``): the Pallas body is often just ``kernel``, and two
    functions captured into one folder must not overwrite each other's files."""
    base = re.sub(r"[^A-Za-z0-9_.-]", "_", function) or "kernel"
    return [base] if count == 1 else [f"{base}-{n}" for n in range(1, count + 1)]


def _failure(kernel: Any) -> str:
    if kernel.error is not None:
        return str(kernel.error)
    return f"JAX's Mosaic GPU lowering rejected smalto's layouts: {one_line(kernel.lowering_error)}"


def _outcome(kernel: Any, name: str, path: str | None, args: argparse.Namespace) -> list[str]:
    """What happened to a captured module after the pass, and what to run next."""
    by = "JAX's" if kernel.inferred_by == "jax" else "smalto's"
    stopped = " (the lowering stops at it: kernels built after it are not captured)"
    if kernel.compiles:
        unrun = (
            "" if kernel.inferred_by == "jax" else "; JAX's own pass was not run (--jax runs it)"
        )
        return [f"{name}: {by} layout inference found layouts and JAX's lowering took them{unrun}"]
    if kernel.error is not None:
        what = f"{by} layout inference found no layouts: {one_line(kernel.error, typed=False)}"
    else:
        what = (
            f"{by} layout inference answered, and JAX's Mosaic GPU lowering rejected its "
            f"layouts: {one_line(kernel.lowering_error)}"
        )
    infer = f"`smalto infer {path}`" if path else "`smalto infer` on it (or capture with -o DIR)"
    fix = f"`{_fix_command(args)}` applies the verified fix to the script"
    if kernel.inferred_by == "jax":
        refusal = _smalto_refusal(kernel)
        if refusal is None:
            return [
                f"{name}: {what}{stopped}",
                f"smalto's pass finds layouts for it: {infer} prints them; the kernel lowers "
                "inside `with smalto.jax.enabled():`",
            ]
        what += f"; smalto's finds none either: {refusal}"
    code = _outright_code(kernel.error)
    if code is not None:
        # A refusal no layout edit answers (a gather's row width, collective and 1-CTA ops
        # mixed): no fix to promise.
        return [
            f"{name}: {what}{stopped}",
            f"{infer} says why, as `smalto explain {code}` does: no edit of the kernel's "
            "layouts makes it lower",
        ]
    return [f"{name}: {what}{stopped}", f"{infer} says why and which edits make it lower; {fix}"]


def _outright_code(error: BaseException | None) -> str | None:
    """The code of a refusal a rule makes outright, with no conflict whose layouts an
    edit could change; None for any other error."""
    code = getattr(error, "code", None)
    if isinstance(code, str) and getattr(error, "conflict", None) is None:
        return code
    return None


def _smalto_refusal(kernel: Any) -> str | None:
    """smalto's pass on a module JAX's could not compile (fast): ``None`` where it finds
    layouts, else the first line of why not."""
    import smalto

    try:
        smalto.infer_layout(kernel.module(), arch=kernel.arch)
    except (smalto.InferenceError, NotImplementedError) as error:
        return one_line(error, typed=False).removeprefix(smalto.FAILURE_PREFIX).lstrip(": ")
    return None


def _fix_command(args: argparse.Namespace) -> str:
    """``smalto fix`` with the arguments this capture was given."""
    words = ["smalto fix", args.target]
    words += [f"--arg {dtype}[{','.join(map(str, shape))}]" for dtype, shape in args.args]
    if args.arch:
        words.append(f"--arch {args.arch}")
    return " ".join(words)


def _write(
    captured: Sequence[Any], stems: Sequence[str], output: str | None, *, inferred: bool
) -> list[str | None]:
    """Writes the modules; returns where each kernel's module went (None: stdout)."""
    if output is None:
        texts = []
        for kernel in captured:
            texts.append(kernel.text)
            if inferred and kernel.inferred_text is not None:
                texts.append(kernel.inferred_text)
        sys.stdout.write("// -----\n".join(texts))
        return [None] * len(captured)
    directory = Path(output)
    written: list[str | None] = []
    if directory.exists() and not directory.is_dir():
        raise UsageError(f"cannot write to '{output}': it is a file, and -o names a folder")
    try:
        directory.mkdir(parents=True, exist_ok=True)
    except OSError as error:
        raise UsageError(f"cannot write to '{output}': {error.strerror or error}") from None
    for stem, kernel in zip(stems, captured, strict=True):
        files = [(directory / f"{stem}.mlir", kernel.text)]
        written.append(str(files[0][0]))
        if inferred and kernel.inferred_text is not None:
            files.append((directory / f"{stem}.inferred.mlir", kernel.inferred_text))
        for path, text in files:
            try:
                write_file(path, text)
            except OSError as error:  # (a full disk's names no file: this one)
                raise UsageError(f"cannot write to '{path}': {error.strerror or error}") from None
            print(printable(str(path)))
    return written


def run_main(argv: Sequence[str] | None = None) -> int:
    """``python -m smalto.jax run``: runs a program with smalto as JAX's layout inference.

    ``argv``: ``[--dump DIR] [--no-rewrite] [--allow-unoptimized] [--stage-through-smem]
    SCRIPT.py [ARGS...]`` (a flag per setting of ``SolveOptions``: ``add_option_flags``) or the same
    with ``-m MODULE [ARGS...]``. The program sees ``sys.argv`` as ``python`` would give it. An
    exception from the program propagates, traceback and all, as with ``python``.
    """
    parser = argparse.ArgumentParser(
        prog="python -m smalto.jax run",
        description="Run a Python program with smalto as JAX's Mosaic GPU layout inference.",
    )
    parser.add_argument("--dump", metavar="DIR", help="write every module to DIR, as .mlir")
    add_option_flags(parser, "compiles the rewritten kernel and warns for each changed op")
    parser.add_argument("-m", dest="module", metavar="MODULE", help="run a module, as python -m")
    parser.add_argument("program", nargs=argparse.REMAINDER, help="SCRIPT.py [ARGS...]")
    try:
        args = parser.parse_args(argv)
    except SystemExit as exit_request:
        code = exit_request.code
        return code if isinstance(code, int) else EXIT_USAGE
    if args.module is None and not args.program:
        return fail("nothing to run: give SCRIPT.py or -m MODULE", EXIT_USAGE)
    if args.module is None and not Path(args.program[0]).is_file():
        program = Path(args.program[0])
        what = "it is a folder" if program.is_dir() else "no such file"
        if program.exists() and not program.is_dir():
            what = "not a file"
        return fail(f"cannot read '{program}': {what} (expected SCRIPT.py)", EXIT_USAGE)

    import smalto.jax

    # The settings the flags turned from their defaults, for every call.
    options = {
        field.name: getattr(args, field.name)
        for field, _ in switches()
        if getattr(args, field.name) != field.default
    }
    smalto.jax.install(dump_to=args.dump, **options)
    saved_argv = sys.argv
    try:
        if args.module is not None:
            sys.argv = [args.module, *args.program]
            runpy.run_module(args.module, run_name="__main__", alter_sys=True)
        else:
            sys.argv = list(args.program)
            with folder_on_path(Path(args.program[0]).resolve().parent):
                runpy.run_path(args.program[0], run_name="__main__")
    except SystemExit as exit_request:
        code = exit_request.code
        if code is None or isinstance(code, int):
            return code or EXIT_OK
        print(code, file=sys.stderr)  # the program's own message, as python prints it
        return EXIT_FAILED
    finally:
        sys.argv = saved_argv
    return EXIT_OK


def main(argv: Sequence[str] | None = None) -> int:
    """``python -m smalto.jax {run,capture} ...``."""
    argv = list(sys.argv[1:] if argv is None else argv)
    commands = {"run": run_main, "capture": capture_main}
    if not argv or argv[0] not in commands:
        usage = "usage: python -m smalto.jax {run,capture} ... (see python -m smalto.jax run -h)"
        if argv and argv[0] in ("-h", "--help"):
            print(usage)
            return EXIT_OK
        return fail(usage, EXIT_USAGE)
    return commands[argv[0]](argv[1:])
