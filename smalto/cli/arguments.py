"""The arguments of each command: one parser per command, shared by ``smalto COMMAND``
and each command's own ``*_main``.

Light on purpose (no JAX): ``smalto --help`` and every argument error answer at
once; a command loads what it needs once its arguments are known.
"""

from __future__ import annotations

import argparse
import re
import sys
from collections.abc import Sequence
from typing import Any, NoReturn

from smalto.basics.archs import parse_arch
from smalto.basics.dtypes import AmbiguousDtype, dtype_name
from smalto.cli.output import EXIT_USAGE
from smalto.solve.options import SolveOptions, settings, switches

# Each setting's declaration (``SolveOptions``' fields), by name.
_SETTING = {field.name: setting for field, setting in settings()}
# The commands whose lines on stderr start with their own name (docs/cli.md).
_SELF_NAMED = frozenset({"explain", "draw"})


def command_label(command: str) -> str:
    """How a command's lines on stderr start (docs/cli.md): ``smalto``, but for the
    commands that name themselves (``smalto explain``, ``smalto draw``)."""
    return f"smalto {command}" if command in _SELF_NAMED else "smalto"


class CommandParser(argparse.ArgumentParser):
    """A command's parser whose usage errors start as the command's other lines do
    (``command_label``): argparse would start them with the usage's name
    (``smalto infer: error:``) where the command's own errors say ``smalto: error:``."""

    def __init__(self, *args: Any, label: str = "smalto", **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.label = label

    def error(self, message: str) -> NoReturn:
        self.print_usage(sys.stderr)
        self.exit(EXIT_USAGE, f"{self.label}: error: {message}\n")


def parse_arguments(
    parser: argparse.ArgumentParser, argv: Sequence[str]
) -> argparse.Namespace | int:
    """The parsed arguments, or the exit status argparse asked for (0 after --help, 2 on
    bad usage, its message printed)."""
    try:
        args, extras = parser.parse_known_args(list(argv))
        # `explain FILE --json %12`: argparse gives the positionals after an option to
        # nothing; they are values to explain.
        if extras and hasattr(args, "values") and not any(e.startswith("-") for e in extras):
            args.values = [*args.values, *extras]
        elif extras:
            parser.error(f"unrecognized arguments: {' '.join(extras)}")
        return args
    except SystemExit as exit_request:
        code = exit_request.code
        return code if isinstance(code, int) else EXIT_USAGE


def add_infer_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "inputs",
        nargs="+",
        metavar="FILE",
        help="MLIR modules to read ('-' for stdin); with several, -o and --report name directories",
    )
    parser.add_argument(
        "-o",
        dest="output",
        metavar="OUT",
        help="write the module here (default: stdout); with several FILEs, a directory that "
        "gets one FILE-named .mlir each",
    )
    _add_arch(parser)
    parser.add_argument(
        _SETTING["fuel"].flag, type=positive_int, metavar="N", help=_SETTING["fuel"].help
    )
    parser.add_argument(
        "--generic", action="store_true", help="print the generic op form instead of pretty"
    )
    parser.add_argument(
        "--debug-info", action="store_true", help="print each op's loc(...) as well"
    )
    parser.add_argument(
        "--summary",
        action="store_true",
        help="print, instead of the module, each value's layout by name, its type and the "
        "line that defines it, and the relayouts that cost something (the module still "
        "goes to -o)",
    )
    parser.add_argument(
        "--json", action="store_true", help="print the summary as JSON (implies --summary)"
    )
    parser.add_argument(
        "--report",
        metavar="HTML",
        help="also write a page with each op's layouts, relayouts and pictures of the "
        "layouts; on failure, the diagnosis and the module",
    )
    parser.add_argument(
        "--dump-system",
        action="store_true",
        help="write the constraint system to stderr once derived, one requirement a line "
        "with its op and source position (MOSAIC_GPU_DUMP_CONSTRAINT_SYSTEM=1 writes it "
        "to stdout, as JAX's pass does)",
    )
    add_option_flags(parser, "prints the rewritten module and a note per changed op on stderr")
    parser.add_argument(
        "--verbose",
        action="store_true",
        help="where inference fails, also say what each value of the conflict was forced to "
        "and where each is defined (the message leads with the fix and the requirements)",
    )
    parser.add_argument(
        "--lower-fixes",
        action="store_true",
        help="where inference fails, also run JAX's Mosaic GPU dialect lowering on the first "
        "fix the message gives (where the module has its gpu.launch); without it, a fix is "
        "verified by smalto's inference and checker, which state the lowering's requirements",
    )


EXPLAIN_DESCRIPTION = (
    "Infer layouts for a module and say why a value has its layout: the chain of ops and "
    "requirements that forced it, or that nothing did. Values and lines are those of the "
    "module `smalto infer FILE` prints."
)


def add_explain_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "input",
        metavar="FILE",
        help="MLIR module to read ('-' for stdin); or a failure code (SM004) to print its "
        "entry in the catalogue of codes",
    )
    parser.add_argument(
        "values",
        nargs="*",
        metavar="%VALUE",
        help="values to explain: an SSA name as `smalto infer FILE` prints the module "
        "(%%12, %%95#0, or %%95 for all results of an op; %%arg3), or as FILE itself names "
        "it; or @LINE for the values defined at that line of the printed module",
    )
    parser.add_argument(
        "--all", action="store_true", help="explain every value that has a layout (the default)"
    )
    _add_arch(parser)
    parser.add_argument(
        "--generic",
        action="store_true",
        help="name values and lines as `smalto infer --generic` prints the module",
    )
    parser.add_argument(
        "--json",
        action="store_true",
        help="print a JSON object: each value's name, line, location, type, layout, summary "
        "and steps",
    )
    parser.add_argument(
        "--draw",
        action="store_true",
        help="also draw each value named, as `smalto draw FILE %%N` does: which thread and "
        "register (SMEM: bank; TMEM: lane) holds each element, at the value's own shape, "
        "element type and layout",
    )
    parser.add_argument(
        "-o",
        dest="output",
        metavar="OUT",
        help="with --draw and one value: the picture to write, .png or .svg (default: a "
        "name made from the value, its layout, shape and element type)",
    )
    add_option_flags(
        parser,
        "explains the values of the rewritten module (as `smalto infer` prints it) and prints "
        "a note per changed op on stderr",
    )
    parser.add_argument(
        _SETTING["fuel"].flag, type=positive_int, default=None, help=argparse.SUPPRESS
    )


CHECK_DESCRIPTION = (
    "Check the layout annotations of Mosaic GPU modules, op by op, against the "
    "requirements of JAX's lowering: one line per violation, then what was checked."
)


def add_check_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "inputs", nargs="+", metavar="FILE", help="annotated MLIR modules ('-' for stdin)"
    )
    _add_arch(parser)
    parser.add_argument(
        "--json",
        action="store_true",
        help="print one JSON object per FILE (JSON Lines): what was checked and each violation",
    )


CAPTURE_DESCRIPTION = (
    "Lower a JAX function for the GPU (no GPU needed) and write the Mosaic GPU modules JAX "
    "hands to layout inference, before inference, as .mlir files."
)
_ARG = re.compile(r"\s*([A-Za-z0-9_]+)\[([0-9,\s]*)\]\s*")


def _add_function_arguments(
    parser: argparse.ArgumentParser, *, target_help: str, arg_help: str
) -> None:
    """``SCRIPT.py:FUNCTION``, its ``--arg``s and ``--arch``: what ``capture`` and ``fix``
    lower."""
    parser.add_argument("target", metavar="SCRIPT.py:FUNCTION", help=target_help)
    parser.add_argument(
        "--arg",
        dest="args",
        action="append",
        default=[],
        type=_dtype_and_shape,
        metavar="DTYPE[SHAPE]",
        help=arg_help,
    )
    parser.add_argument(
        "--arch",
        choices=["10.0", "9.0"],
        help="target architecture (default: the GPU's, or 9.0 without one)",
    )


def add_capture_arguments(parser: argparse.ArgumentParser) -> None:
    _add_function_arguments(
        parser,
        target_help="the function to lower, in a Python file",
        arg_help="one argument of FUNCTION, e.g. f16[256,128] (repeat, in order; none: "
        "FUNCTION takes no arguments)",
    )
    parser.add_argument(
        "--smalto",
        action="store_true",
        help="fail (exit 1, smalto's diagnosis on stderr) where smalto's pass finds no layouts "
        "or JAX's lowering rejects them (default: a note, exit 0)",
    )
    parser.add_argument(
        "--jax",
        action="store_true",
        help="run JAX's own inference pass while lowering, to see what it does with each "
        "module (slower: JAX's pass may take seconds to run out of fuel; default: smalto's)",
    )
    parser.add_argument(
        "--inferred",
        action="store_true",
        help="also write each module after inference, as NAME.inferred.mlir",
    )
    parser.add_argument(
        "-o",
        dest="output",
        metavar="DIR",
        help="write FUNCTION.mlir here (FUNCTION-1.mlir, -2, ... for several kernels) and "
        "list the files on stdout (default: print the modules to stdout, separated by "
        "'// -----')",
    )


SMEM_DESCRIPTION = (
    "Show every SMEM allocation of a Mosaic GPU kernel (a module, or SCRIPT.py:FUNCTION "
    "lowered without a GPU): its bytes with alignment padding, its source line, the ops it "
    "is taken from and to; the peak, where it is, and the limit a block may have. The "
    "offsets and sizes are those JAX's lowering allocates. Where the kernel is over the "
    "limit: what uses the SMEM at the peak, and the changes that bring it under (fewer "
    "pipeline stages, a scratch scoped tighter, a buffer reused), each verified. Exit "
    "status: 0 within the limit, 1 over it, 2 on bad usage or input."
)


def add_smem_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "target",
        metavar="KERNEL",
        help="an MLIR module ('-' for stdin), or SCRIPT.py:FUNCTION to lower",
    )
    parser.add_argument(
        "--arg",
        dest="args",
        action="append",
        default=[],
        type=_dtype_and_shape,
        metavar="DTYPE[SHAPE]",
        help="one argument of FUNCTION, e.g. f16[256,128] (repeat, in order)",
    )
    _add_arch(parser)
    parser.add_argument(
        "--json", action="store_true", help="print the map (and the changes) as one JSON object"
    )
    parser.add_argument(
        "--picture",
        metavar="FILE",
        help="draw the allocations over time to FILE (.png or .svg)",
    )
    parser.add_argument(
        "--report", metavar="FILE", help="write an HTML page with the map and its picture"
    )


FIX_DESCRIPTION = (
    "Lower a Pallas function with smalto as the layout-inference pass (no GPU needed); "
    "where its kernel has no layouts, apply the first verified fix of every problem to the "
    "Python source, lower again, and repeat until it lowers or no verified fix is left. "
    "Writes the script only if the function then lowers (and the file did not change "
    "meanwhile), and prints each change and why. Exit status: 0 when it lowers (fixed or "
    "as written), 1 when it still fails (the diagnosis on stderr), 2 on bad usage."
)


def add_fix_arguments(parser: argparse.ArgumentParser) -> None:
    _add_function_arguments(
        parser,
        target_help="the function to fix, in a Python file",
        arg_help="one argument of FUNCTION, e.g. bf16[256,128] (repeat, in order)",
    )
    parser.add_argument(
        "--diff",
        action="store_true",
        help="print the changes as a unified diff on stdout and write nothing",
    )
    parser.add_argument(
        "--allow-unoptimized",
        action="store_true",
        help="also make fixes that turn transfers unoptimized (plgpu.store(..., "
        "optimized=False): correct, slower), where a problem has no faster verified fix",
    )
    parser.add_argument(
        "--allow-smalto-only",
        action="store_true",
        help="write fixes even where JAX's own pass still rejects the fixed kernel (it then "
        "compiles with smalto as the pass only)",
    )
    parser.add_argument(
        "--json",
        action="store_true",
        help="print one JSON object on stdout (the edits made, each with its fix and the "
        "proofs made of it, and the run in JAX's interpreter); the words go to stderr",
    )


def _dtype_and_shape(text: str) -> tuple[str, tuple[int, ...]]:
    """``f16[128,64]`` as ``("f16", (128, 64))``; the dtype is looked up when the command
    runs (that needs JAX)."""
    match = _ARG.fullmatch(text)
    if match is None:
        raise argparse.ArgumentTypeError(f"expected DTYPE[SHAPE] such as f16[128,64], got {text!r}")
    try:
        dtype_name(match[1])
    except AmbiguousDtype as error:
        raise argparse.ArgumentTypeError(str(error)) from None
    return match[1], tuple(int(d) for d in match[2].replace(" ", "").split(",") if d)


def add_option_flags(parser: argparse.ArgumentParser, then: str) -> None:
    """A flag for each setting of ``SolveOptions`` that is not per call, as its ``Setting``
    declares it (``--no-rewrite``, ``--allow-unoptimized``, ``--stage-through-smem``): a
    switch's flag turns it from its default, into the attribute named as the setting
    (``solve_options`` reads them back). ``then``: what the command does with a changed
    module."""
    for field, setting in switches():
        parser.add_argument(
            setting.flag,
            dest=field.name,
            action="store_false" if field.default else "store_true",
            help=setting.help.format(then=then),
        )


def solve_options(
    args: argparse.Namespace, *, fuel: int | None, arch: tuple[int, int]
) -> SolveOptions:
    """The options a command's parsed arguments set (``add_option_flags``), with the
    command's ``fuel`` (None: the default) and ``arch``."""
    keywords = {field.name: getattr(args, field.name) for field, _ in switches()}
    if fuel is not None:
        keywords["fuel"] = fuel
    return SolveOptions(arch=arch, **keywords)


def _add_arch(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--arch",
        type=_arch,
        metavar="MAJOR.MINOR",
        help=f"{_SETTING['arch'].help}; default: the module's "
        "mosaic_gpu.arch_major/arch_minor attributes, else 9.0",
    )


def command_parser(command: str) -> argparse.ArgumentParser:
    """The parser of one command on its own (``smalto explain``), for its ``*_main``."""
    adders = {
        "infer": add_infer_arguments,
        "explain": add_explain_arguments,
        "check": add_check_arguments,
        "capture": add_capture_arguments,
        "fix": add_fix_arguments,
        "smem": add_smem_arguments,
    }
    descriptions = {
        "explain": EXPLAIN_DESCRIPTION,
        "check": CHECK_DESCRIPTION,
        "capture": CAPTURE_DESCRIPTION,
        "fix": FIX_DESCRIPTION,
        "smem": SMEM_DESCRIPTION,
    }
    parser = CommandParser(
        prog=f"smalto {command}",
        description=descriptions.get(command),
        label=command_label(command),
    )
    adders[command](parser)
    return parser


def _arch(text: str) -> tuple[int, int]:
    try:
        return parse_arch(text)
    except ValueError as error:
        raise argparse.ArgumentTypeError(str(error)) from None


def positive_int(text: str) -> int:
    try:
        number = int(text)
    except ValueError:
        number = 0
    if number <= 0:
        raise argparse.ArgumentTypeError(f"expected a positive integer, got {text!r}")
    return number
