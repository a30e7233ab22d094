"""Command lines for using smalto with JAX programs.

``capture_main``: ``smalto capture SCRIPT.py:FUNCTION [--arg DTYPE[SHAPE]]...``
lowers FUNCTION for the GPU (no GPU needed) and writes the Mosaic GPU modules
JAX hands to layout inference as ``.mlir`` files, ready for ``smalto infer``.

``run_main``: ``python -m smalto.jax run [--dump DIR] SCRIPT.py [ARGS...]``
(or ``-m MODULE``) runs a program you cannot edit with smalto as JAX's
layout-inference pass.

Exit status of ``capture``: 0 when it captured the modules, also where JAX's
layout inference then rejected one (the module is written as it reached the
pass, which is what ``smalto infer`` reads; a note on stderr says so); 1 when
the lowering failed before any module was captured, or, with ``--smalto``,
where smalto's inference found no layouts (the reason on stderr; the modules
captured are still written); 2 on bad usage or a script that cannot be loaded,
with one line on stderr.
"""

from __future__ import annotations

import argparse
import re
import runpy
import sys
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any

EXIT_OK = 0
EXIT_FAILED = 1
EXIT_USAGE = 2

_SHORT_DTYPES = {
    "pred": "bool",
    "i1": "bool",
    "bf16": "bfloat16",
    "f16": "float16",
    "f32": "float32",
    "f64": "float64",
    **{f"i{n}": f"int{n}" for n in (8, 16, 32, 64)},
    **{f"u{n}": f"uint{n}" for n in (8, 16, 32, 64)},
}
_ARCHS = {"9.0": (9, 0), "10.0": (10, 0)}


class _Usage(Exception):
    """Bad arguments or a script that cannot be used: one line, exit status 2."""


def capture_main(argv: Sequence[str] | None = None) -> int:
    """``smalto capture``: runs on ``argv`` (default ``sys.argv[1:]``); returns the exit status."""
    from smalto.cli import command_parser, parse_arguments

    args = parse_arguments(command_parser("capture"), sys.argv[1:] if argv is None else argv)
    if isinstance(args, int):
        return args
    return run_capture_command(args)


def run_capture_command(args: argparse.Namespace) -> int:
    """``smalto capture`` on parsed arguments (see ``smalto.cli``); returns the exit status."""
    try:
        return _run_capture(args)
    except _Usage as error:
        return _fail(str(error), EXIT_USAGE)
    except KeyboardInterrupt:
        return 130


def _shape_dtype(dtype: str, shape: tuple[int, ...]) -> Any:
    """``jax.ShapeDtypeStruct`` of a ``--arg`` (``f16``, ``bfloat16``...)."""
    import jax
    import jax.numpy as jnp

    try:
        return jax.ShapeDtypeStruct(shape, jnp.dtype(_SHORT_DTYPES.get(dtype, dtype)))
    except TypeError:
        raise _Usage(f"argument --arg: unknown dtype {dtype!r}") from None


def _run_capture(args: argparse.Namespace) -> int:
    import smalto.jax

    arguments = [_shape_dtype(dtype, shape) for dtype, shape in args.args]
    function = _load_function(args.target)
    arch = _ARCHS[args.arch] if args.arch else None
    try:
        if args.smalto:
            with smalto.jax.enabled():
                captured = smalto.jax.capture(function, *arguments, arch=arch)
        else:
            captured = smalto.jax.capture(function, *arguments, arch=arch)
    except Exception as error:  # the user's kernel failed to lower: their error, ours to report
        return _fail(f"lowering {args.target} failed: {_one_line(error)}", EXIT_FAILED)
    if not captured:
        return _fail(
            f"{args.target} built no Mosaic GPU kernel in warpgroup semantics "
            "(lowering_semantics=plgpu.LoweringSemantics.Warpgroup)",
            EXIT_FAILED,
        )
    written = _write(captured, args.output, inferred=args.inferred)
    status = EXIT_OK
    for kernel, path in zip(captured, written, strict=True):
        if kernel.ok:
            continue
        if args.smalto:
            # Lowering with smalto's pass was asked for, and smalto found no layouts: its
            # diagnosis, whole.
            print(f"smalto: error: kernel {kernel.name}: {kernel.error}", file=sys.stderr)
            status = EXIT_FAILED
            continue
        reason = _one_line(kernel.error, typed=False) if kernel.error else "no reason given"
        # The capture worked: the module is written as it reached the pass, before JAX's
        # pass rejected it (docs/beyond_jax.md: often where smalto's finds layouts).
        print(
            f"smalto: note: captured kernel {kernel.name}{f' ({path})' if path else ''}; "
            f"JAX's layout inference then rejected it: {reason}",
            file=sys.stderr,
        )
        infer = f"`smalto infer {path}`" if path else "`smalto infer` on it (or -o DIR)"
        print(
            f"smalto: note: {infer} finds layouts where JAX's pass gives up, or says why "
            "there are none; with --smalto, `smalto capture` lowers with smalto's pass, and "
            "the lowering goes on to any kernel after this one",
            file=sys.stderr,
        )
    return status


def _load_function(target: str) -> Callable[..., Any]:
    script, sep, name = target.rpartition(":")
    if not sep or not script or not name.isidentifier():
        raise _Usage(f"expected SCRIPT.py:FUNCTION, got {target!r}")
    path = Path(script)
    if not path.is_file():
        raise _Usage(f"cannot read '{script}': no such file")
    try:
        with _script_directory_on_path(path):
            namespace = runpy.run_path(str(path), run_name="__smalto_capture__")
    except SystemExit:
        raise _Usage(f"'{script}' exited while being loaded") from None
    except Exception as error:
        raise _Usage(f"loading '{script}' failed: {_one_line(error)}") from None
    function = namespace.get(name)
    if not callable(function):
        raise _Usage(f"'{script}' defines no function {name!r}")
    return function


@contextmanager
def _script_directory_on_path(script: Path) -> Iterator[None]:
    # As `python SCRIPT.py` would: the script's own imports find its neighbours.
    directory = str(script.resolve().parent)
    sys.path.insert(0, directory)
    try:
        yield
    finally:
        if directory in sys.path:
            sys.path.remove(directory)


def _write(captured: Sequence[Any], output: str | None, *, inferred: bool) -> list[str | None]:
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
    try:
        directory.mkdir(parents=True, exist_ok=True)
        for stem, kernel in zip(_unique_stems(captured), captured, strict=True):
            files = [(directory / f"{stem}.mlir", kernel.text)]
            written.append(str(files[0][0]))
            if inferred and kernel.inferred_text is not None:
                files.append((directory / f"{stem}.inferred.mlir", kernel.inferred_text))
            for path, text in files:
                path.write_text(text, encoding="utf-8")
                print(path)
    except OSError as error:
        raise _Usage(f"cannot write to '{output}': {error.strerror or error}") from None
    return written


def _unique_stems(captured: Sequence[Any]) -> list[str]:
    seen: dict[str, int] = {}
    stems = []
    for kernel in captured:
        base = re.sub(r"[^A-Za-z0-9_.-]", "_", kernel.name) or "kernel"
        seen[base] = seen.get(base, 0) + 1
        stems.append(base if seen[base] == 1 else f"{base}-{seen[base]}")
    return stems


def run_main(argv: Sequence[str] | None = None) -> int:
    """``python -m smalto.jax run``: runs a program with smalto as JAX's layout inference.

    ``argv``: ``[--dump DIR] [--allow-unoptimized] SCRIPT.py [ARGS...]`` or the same
    with ``-m MODULE [ARGS...]``. The program sees ``sys.argv`` as ``python`` would give it. An
    exception from the program propagates, traceback and all, as with ``python``.
    """
    parser = argparse.ArgumentParser(
        prog="python -m smalto.jax run",
        description="Run a Python program with smalto as JAX's Mosaic GPU layout inference.",
    )
    parser.add_argument("--dump", metavar="DIR", help="write every module to DIR, as .mlir")
    parser.add_argument(
        "--allow-unoptimized",
        action="store_true",
        help="where a kernel's optimized transfers have no plan in any layout, make the fewest "
        "of them unoptimized (slower; a warning each) instead of failing",
    )
    parser.add_argument("-m", dest="module", metavar="MODULE", help="run a module, as python -m")
    parser.add_argument("program", nargs=argparse.REMAINDER, help="SCRIPT.py [ARGS...]")
    try:
        args = parser.parse_args(argv)
    except SystemExit as exit_request:
        code = exit_request.code
        return code if isinstance(code, int) else EXIT_USAGE
    if args.module is None and not args.program:
        return _fail("nothing to run: give SCRIPT.py or -m MODULE", EXIT_USAGE)
    if args.module is None and not Path(args.program[0]).is_file():
        return _fail(f"cannot read '{args.program[0]}': no such file", EXIT_USAGE)

    import smalto.jax

    options = {"allow_unoptimized": True} if args.allow_unoptimized else {}
    smalto.jax.install(dump_to=args.dump, **options)
    saved_argv = sys.argv
    try:
        if args.module is not None:
            sys.argv = [args.module, *args.program]
            runpy.run_module(args.module, run_name="__main__", alter_sys=True)
        else:
            sys.argv = list(args.program)
            with _script_directory_on_path(Path(args.program[0])):
                runpy.run_path(args.program[0], run_name="__main__")
    except SystemExit as exit_request:
        code = exit_request.code
        if code is None or isinstance(code, int):
            return code or EXIT_OK
        print(code, file=sys.stderr)
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
        return _fail(usage, EXIT_USAGE)
    return commands[argv[0]](argv[1:])


def _one_line(error: BaseException, *, typed: bool = True) -> str:
    """The first line of ``error``'s message (after its type's name, with ``typed``)."""
    text = str(error).strip().splitlines()
    if not text:
        return type(error).__name__
    return f"{type(error).__name__}: {text[0]}" if typed else text[0]


def _fail(message: str, status: int) -> int:
    print(f"smalto: error: {message}", file=sys.stderr)
    return status
