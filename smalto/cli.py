"""The ``smalto`` command line, in ``mlir-opt``'s habits.

``smalto infer FILE|- [-o OUT] [--arch 9.0|10.0] [--fuel N] [--generic] [--dump-system]
[--no-rewrite]`` reads a Mosaic GPU module, infers its layouts and prints the annotated
module (rewritten by the unit-dim rewrite where the module as written has no layouts, a
note per changed op on stderr).
Exit status: 0 on success; 1 when the kernel cannot be inferred (or uses an op
smalto has no rule for), with the reason on stderr; 2 on bad usage or input
that cannot be read or parsed, with one line on stderr.

``smalto explain FILE [%value...|--all]``, ``smalto draw LAYOUT --shape RxC`` and
``smalto capture SCRIPT.py:FUNCTION`` parse their own arguments (see DELEGATED).
``smalto infer --report page.html`` also writes an HTML report.

``smalto bench [FILE...] [--repeat N]`` times smalto against JAX's pass and
the IR floor (``bench/run.py``; default: the corpus kernels). The benchmarks
are not part of the installed package: this works from a source checkout
only, and says so (exit status 2) elsewhere.
"""

from __future__ import annotations

import argparse
import contextlib
import importlib
import os
import re
import sys
import warnings
from collections.abc import Iterator, Sequence
from pathlib import Path
from types import ModuleType
from typing import TextIO

from jax._src.lib.mlir import ir

from smalto.mlir import MlirInputError, module_arch, parse_module, print_module
from smalto.validate import SUPPORTED_ARCHS, parse_arch

DEFAULT_ARCH = (9, 0)

EXIT_OK = 0
EXIT_INFERENCE_FAILED = 1
EXIT_USAGE = 2


class UsageError(Exception):
    """Bad arguments or unusable input: reported on one line, exit status 2."""


# Subcommands that parse their own arguments: name -> (module, function).
DELEGATED = {
    "capture": ("smalto.jax.cli", "capture_main"),
    "draw": ("smalto.draw", "draw_main"),
    "explain": ("smalto.explain", "explain_main"),
    "check": ("smalto.check", "check_main"),
}


def main(argv: Sequence[str] | None = None) -> int:
    """Runs the command line on ``argv`` (default ``sys.argv[1:]``); returns the exit status."""
    argv = list(sys.argv[1:] if argv is None else argv)
    if argv and argv[0] in DELEGATED:
        module, function = DELEGATED[argv[0]]
        try:
            return getattr(importlib.import_module(module), function)(argv[1:])
        except KeyboardInterrupt:
            return 130
    parser = _build_parser()
    try:
        args = parser.parse_args(argv)
    except SystemExit as exit_request:  # argparse: --help (0) or bad usage (2)
        code = exit_request.code
        return code if isinstance(code, int) else EXIT_USAGE
    try:
        return args.run(args)
    except (UsageError, MlirInputError) as error:
        return _fail(str(error), EXIT_USAGE)
    except KeyboardInterrupt:
        return 130


def _build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="smalto", description="Layout inference for Mosaic GPU kernels."
    )
    commands = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    # Listed for --help; their own parsers take over (see DELEGATED).
    commands.add_parser(
        "capture", help="lower a Pallas kernel without a GPU and write its Mosaic GPU modules"
    )
    commands.add_parser(
        "draw", help="draw which thread and register (or SMEM bank, TMEM lane) holds each element"
    )
    commands.add_parser("explain", help="say why each value got its layout")
    commands.add_parser(
        "check", help="check an annotated module op by op (independently of the solver)"
    )
    infer = commands.add_parser(
        "infer",
        help="infer layouts and print the annotated module",
        description="Infer register layouts and SMEM transforms for a Mosaic GPU module "
        "and print it with in_layouts/out_layouts/in_transforms/out_transforms set.",
    )
    infer.add_argument("input", metavar="FILE", help="MLIR module to read ('-' for stdin)")
    infer.add_argument(
        "-o", dest="output", metavar="OUT", help="write the module here (default: stdout)"
    )
    infer.add_argument(
        "--arch",
        type=_parse_arch,
        metavar="MAJOR.MINOR",
        help="target architecture, 9.0 (Hopper) or 10.0 (Blackwell); default: the "
        "module's mosaic_gpu.arch_major/arch_minor attributes, else 9.0",
    )
    infer.add_argument(
        "--fuel",
        type=_parse_fuel,
        metavar="N",
        help="bound on the solver's search steps (default: smalto.DEFAULT_FUEL)",
    )
    infer.add_argument(
        "--generic", action="store_true", help="print the generic op form instead of pretty"
    )
    infer.add_argument("--debug-info", action="store_true", help="print each op's loc(...) as well")
    infer.add_argument(
        "--report",
        metavar="HTML",
        help="also write a page with each op's layouts, relayouts and pictures of the layouts",
    )
    infer.add_argument(
        "--dump-system",
        action="store_true",
        help="write the constraint system to stderr once derived, one requirement a line "
        "with its op and source position (MOSAIC_GPU_DUMP_CONSTRAINT_SYSTEM=1 writes it "
        "to stdout, as JAX's pass does)",
    )
    infer.add_argument(
        "--no-rewrite",
        action="store_true",
        help="where the module as written has no layouts, do not try the unit-dim rewrite "
        "(computing keepdims values without their unit dims); by default smalto tries it, "
        "prints the rewritten module and a note per changed op on stderr",
    )
    infer.set_defaults(run=_run_infer)
    bench = commands.add_parser(
        "bench",
        help="time smalto against JAX's pass and the IR floor (source checkout only)",
        description="Time JAX's layout inference, smalto's and the IR floor (a walk that "
        "only reads types and sets the attributes) on each module, and print a table with "
        "the ratios. Runs bench/run.py from the smalto source checkout.",
    )
    bench.add_argument(
        "files",
        nargs="*",
        metavar="FILE",
        help="MLIR modules to time (default: the corpus kernels)",
    )
    bench.add_argument(
        "--repeat",
        type=_parse_repeat,
        default=5,
        metavar="N",
        help="runs per figure; each figure is their median (default: 5)",
    )
    bench.set_defaults(run=_run_bench)
    return parser


def _run_infer(args: argparse.Namespace) -> int:
    from smalto import DEFAULT_FUEL, InferenceError, infer_layout

    text, source_name = _read_input(args.input)
    module = parse_module(text, source_name=source_name)
    arch = args.arch or _arch_of(module)
    fuel = DEFAULT_FUEL if args.fuel is None else args.fuel
    rewrite = not args.no_rewrite
    try:
        # JAX's pass builds attributes from the ambient context; so may ours.
        with module.context, ir.Location.unknown(), _rewrite_notes():
            if args.report or args.dump_system:
                dump_to = sys.stderr if args.dump_system else None
                inference = _infer_for_report(module, fuel, arch, dump_to, rewrite)
            else:
                infer_layout(module, fuel=fuel, arch=arch, rewrite=rewrite)
    except InferenceError as error:
        notes = "".join(f"\n{note}" for note in getattr(error, "__notes__", ()))
        return _fail(str(error) + notes + _source_excerpts(error), EXIT_INFERENCE_FAILED)
    except NotImplementedError as error:
        return _fail(str(error) or "unsupported operation", EXIT_INFERENCE_FAILED)
    if args.report:
        from smalto.report import write_report

        write_report(module, inference, args.report, source_name=source_name)
    _write_output(
        args.output, print_module(module, generic=args.generic, debug_info=args.debug_info)
    )
    return EXIT_OK


@contextlib.contextmanager
def _rewrite_notes() -> Iterator[None]:
    """The unit-dim rewrite's warning as notes on stderr, one per changed op."""
    from smalto import UnitDimRewriteWarning

    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always", UnitDimRewriteWarning)
        try:
            yield
        finally:
            for warning in caught:
                if isinstance(warning.message, UnitDimRewriteWarning):
                    for record in warning.message.rewritten:
                        print(f"smalto: note: {record}", file=sys.stderr)
                else:
                    warnings.showwarning(
                        warning.message,
                        warning.category,
                        warning.filename,
                        warning.lineno,
                    )


def _infer_for_report(
    module: ir.Module,
    fuel: int,
    arch: tuple[int, int],
    dump_to: TextIO | None = None,
    rewrite: bool = True,
) -> object:
    """``infer_layout``, keeping what the report shows (the solved system); the system is
    also written to ``dump_to`` once derived, when given."""
    from smalto import annotate
    from smalto.infer import solve_module

    inference = solve_module(module, fuel=fuel, arch=arch, dump_to=dump_to, rewrite=rewrite)
    plan = annotate.plan_attributes(
        inference.program, inference.system, inference.solver.solution()
    )
    annotate.write_attributes(inference.program, plan)
    return inference


def _run_bench(args: argparse.Namespace) -> int:
    for name in args.files:
        if not Path(name).is_file():
            raise UsageError(f"cannot read '{name}': no such file")
    bench_run = _load_bench()
    return bench_run.main([*args.files, "--repeat", str(args.repeat)])


def _load_bench() -> ModuleType:
    """``bench.run`` from the source checkout this package lives in."""
    checkout = Path(__file__).resolve().parents[1]
    if (checkout / "bench" / "run.py").is_file() and str(checkout) not in sys.path:
        sys.path.insert(0, str(checkout))
    try:
        return importlib.import_module("bench.run")
    except ImportError as error:
        raise UsageError(
            f"the benchmarks are not available ({error}); `smalto bench` runs from a smalto "
            "source checkout, which has bench/ and tests/reference.py"
        ) from None


def _parse_repeat(text: str) -> int:
    try:
        repeat = int(text)
    except ValueError:
        repeat = 0
    if repeat <= 0:
        raise argparse.ArgumentTypeError(f"expected a positive integer, got {text!r}")
    return repeat


def _parse_arch(text: str) -> tuple[int, int]:
    try:
        return parse_arch(text)
    except ValueError as error:
        raise argparse.ArgumentTypeError(str(error)) from None


def _parse_fuel(text: str) -> int:
    try:
        fuel = int(text)
    except ValueError:
        fuel = 0
    if fuel <= 0:
        raise argparse.ArgumentTypeError(f"expected a positive integer, got {text!r}")
    return fuel


def _arch_of(module: ir.Module) -> tuple[int, int]:
    arch = module_arch(module)
    if arch is None:
        return DEFAULT_ARCH
    if arch not in SUPPORTED_ARCHS:
        raise UsageError(
            f"the module targets architecture {arch[0]}.{arch[1]}, which smalto does not "
            f"support ({_supported_archs()}); pass --arch to override"
        )
    return arch


def _supported_archs() -> str:
    return " or ".join(f"{major}.{minor}" for major, minor in SUPPORTED_ARCHS)


def _read_input(name: str) -> tuple[str, str]:
    """The text to parse and the name to call it in messages."""
    if name == "-":
        return sys.stdin.read(), "<stdin>"
    try:
        return Path(name).read_text(encoding="utf-8"), name
    except OSError as error:
        raise UsageError(f"cannot read '{name}': {error.strerror or error}") from None
    except UnicodeDecodeError:
        raise UsageError(f"cannot read '{name}': not UTF-8 text") from None


def _write_output(name: str | None, text: str) -> None:
    if name is not None and name != "-":
        try:
            Path(name).write_text(text, encoding="utf-8")
        except OSError as error:
            raise UsageError(f"cannot write '{name}': {error.strerror or error}") from None
        return
    try:
        sys.stdout.write(text)
        sys.stdout.flush()
    except BrokenPipeError:
        # The reader left early (`smalto infer k.mlir | head`); that is not an
        # error. Point stdout at /dev/null so the interpreter's final flush
        # does not fail again.
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())


_LOCATION = re.compile(r"^(.+):(\d+):(\d+)$")


def _source_excerpts(error: Exception) -> str:
    """The source lines an error names, under each location, as compilers show them."""
    report = getattr(error, "conflict", None)
    lines: list[str] = []
    for location in getattr(report, "locations", [])[:8]:
        match = _LOCATION.match(location)
        if match is None:
            continue
        path, line, column = match[1], int(match[2]), int(match[3])
        try:
            source = Path(path).read_text(encoding="utf-8").splitlines()[line - 1]
        except (OSError, UnicodeDecodeError, IndexError):
            continue  # not a readable file (e.g. "-" for stdin): nothing to show
        lines += [f"{location}:", f"  {source}", "  " + " " * max(column - 1, 0) + "^"]
    return "\n" + "\n".join(lines) if lines else ""


def _fail(message: str, status: int) -> int:
    print(f"smalto: error: {message}", file=sys.stderr)
    return status
