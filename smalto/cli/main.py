"""The ``smalto`` command line, in ``mlir-opt``'s habits.

``smalto infer FILE... [-o OUT] [--arch 9.0|10.0] [--fuel N] [--generic] [--summary]``
reads Mosaic GPU modules, infers their layouts and prints the annotated modules
(or a summary of the layouts); where a module as written has no layouts, the
unit-dim rewrite is tried (``--no-rewrite``: not), with a note on stderr per
changed op. ``smalto explain FILE [%value...]`` says why each
value got its layout; ``smalto check FILE...`` checks annotated modules op by op.
Exit status: 0 on success; 1 when a kernel cannot be inferred (or uses an op
smalto has no rule for), or has violations (``check``), with the reason; 2 on
bad usage or input that cannot be read, parsed or used, with one line on
stderr. With several files, the worst status of them all.

The entry point, at the top of the import graph: it parses the arguments with
``smalto.cli.arguments`` and imports no JAX, so ``smalto --help``, ``--version``
and every argument error answer at once; the command's module (``smalto.cli.infer``,
``explain``, ``check``, ``capture``, ``fix``) is imported only once the command is
known (``_runner``). ``smalto draw`` parses its own arguments (see DELEGATED).
Every command ends through ``smalto.cli.output`` (exit statuses, ``error:`` and
``note:`` lines).

``smalto bench [FILE...] [--repeat N]`` times smalto against JAX's pass and
the IR floor (``bench/run.py``; default: the corpus kernels). The benchmarks
are not part of the installed package: this works from a source checkout
only, and says so (exit status 2) elsewhere.
"""

from __future__ import annotations

import argparse
import importlib
import sys
from collections.abc import Callable, Sequence
from pathlib import Path
from types import ModuleType

from smalto.cli.arguments import (
    CAPTURE_DESCRIPTION,
    CHECK_DESCRIPTION,
    EXPLAIN_DESCRIPTION,
    FIX_DESCRIPTION,
    SMEM_DESCRIPTION,
    CommandParser,
    add_capture_arguments,
    add_check_arguments,
    add_explain_arguments,
    add_fix_arguments,
    add_infer_arguments,
    add_smem_arguments,
    command_label,
    parse_arguments,
    positive_int,
)
from smalto.cli.output import (
    EXIT_INTERRUPTED,
    EXIT_TERMINATED,
    EXIT_USAGE,
    Terminated,
    UsageError,
    fail,
    stdout_closed,
    stdout_unwritable,
    terminating_as_interrupt,
)

Runner = Callable[[argparse.Namespace], int]


def _runner(command: str) -> Runner:
    """The function that runs ``command`` on its parsed arguments. Its module is imported
    only here, once the command is known, so that ``--help`` and argument errors load no
    JAX; the imports are written out so that the entry point sits above every command in
    the import graph."""
    if command == "infer":
        from smalto.cli.infer import run_infer

        return run_infer
    if command == "explain":
        from smalto.cli.explain import run_explain

        return run_explain
    if command == "check":
        from smalto.cli.check import run_check

        return run_check
    if command == "capture":
        from smalto.cli.capture import run_capture_command

        return run_capture_command
    if command == "fix":
        from smalto.cli.fix import run_fix

        return run_fix
    if command == "smem":
        from smalto.cli.smem import run_smem

        return run_smem
    raise ValueError(f"no command {command!r}")


def _draw(argv: list[str]) -> int:
    """``smalto draw``, which parses its own arguments (JAX is loaded only for FILE %N)."""
    from smalto.cli.draw import draw_main

    return draw_main(argv)


# Subcommands that parse their own arguments: name -> what runs on the arguments after it.
DELEGATED: dict[str, Callable[[list[str]], int]] = {"draw": _draw}


def main(argv: Sequence[str] | None = None) -> int:
    """Runs the command line on ``argv`` (default ``sys.argv[1:]``); returns the exit status."""
    argv = list(sys.argv[1:] if argv is None else argv)
    try:
        with terminating_as_interrupt():
            if argv and argv[0] in DELEGATED:
                return DELEGATED[argv[0]](argv[1:])
            args = parse_arguments(build_parser(), argv)
            if isinstance(args, int):
                return args
            return args.run(args)
    except UsageError as error:
        return fail(str(error), EXIT_USAGE)
    except Terminated:
        return EXIT_TERMINATED
    except KeyboardInterrupt:
        return EXIT_INTERRUPTED
    except BrokenPipeError:
        # The reader left early (`smalto infer k.mlir | head`): not an error.
        return stdout_closed()
    except OSError as error:
        status = stdout_unwritable(error)
        if status is None:
            raise
        return status


# --- parsers ---------------------------------------------------------------------------------


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="smalto", description="Layout inference for Mosaic GPU kernels."
    )
    parser.add_argument(
        "--version", action=_Version, help="print smalto's version (and JAX's) and exit"
    )
    commands = parser.add_subparsers(
        dest="command", required=True, metavar="COMMAND", parser_class=CommandParser
    )
    for name, summary, description, add_arguments in (
        (
            "infer",
            "infer layouts and print the annotated module (or a --summary)",
            "Infer register layouts, SMEM transforms and TMEM layouts for Mosaic GPU "
            "modules and print them with in_layouts/out_layouts/in_transforms/out_transforms "
            "(and TMEM layouts) set.",
            add_infer_arguments,
        ),
        (
            "explain",
            "say why each value got its layout",
            EXPLAIN_DESCRIPTION,
            add_explain_arguments,
        ),
        (
            "check",
            "check annotated modules op by op (independently of the solver)",
            CHECK_DESCRIPTION,
            add_check_arguments,
        ),
        (
            "capture",
            "lower a Pallas kernel without a GPU and write its Mosaic GPU modules",
            CAPTURE_DESCRIPTION,
            add_capture_arguments,
        ),
        (
            "fix",
            "make a failing Pallas kernel lower: apply smalto's verified fixes to its source",
            FIX_DESCRIPTION,
            add_fix_arguments,
        ),
        (
            "smem",
            "show a kernel's SMEM: every allocation, the peak, the limit, what to cut",
            SMEM_DESCRIPTION,
            add_smem_arguments,
        ),
    ):
        command = commands.add_parser(
            name, help=summary, description=description, label=command_label(name)
        )
        add_arguments(command)
        _runs(command, name)
    # Listed for --help; its own parser takes over (see DELEGATED).
    commands.add_parser(
        "draw",
        help="draw which thread and register (or SMEM bank, TMEM lane) holds each element of "
        "a layout, or of a kernel's value (smalto draw FILE %%N)",
    )
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
        type=positive_int,
        default=5,
        metavar="N",
        help="runs per figure; each figure is their median (default: 5)",
    )
    bench.set_defaults(run=_run_bench)
    return parser


def _runs(parser: argparse.ArgumentParser, command: str) -> None:
    """Sets what runs the command: its module is imported only then."""

    def run(args: argparse.Namespace) -> int:
        return _runner(command)(args)

    parser.set_defaults(run=run)


class _Version(argparse.Action):
    """``--version``: read from the package metadata only when asked (it costs an import)."""

    def __init__(self, option_strings: list[str], dest: str, help: str | None = None) -> None:
        super().__init__(option_strings, dest, nargs=0, default=argparse.SUPPRESS, help=help)

    def __call__(self, parser: argparse.ArgumentParser, *_: object) -> None:
        from smalto.basics.version import dependency_version, version

        jax = ", ".join(
            f"{name} {found}"
            for name in ("jax", "jaxlib")
            if (found := dependency_version(name)) is not None
        )
        print(f"smalto {version()}" + (f" ({jax})" if jax else ""))
        parser.exit()


# --- bench -----------------------------------------------------------------------------------


def _run_bench(args: argparse.Namespace) -> int:
    from smalto.basics.inputs import read_input
    from smalto.basics.mlir import MlirInputError

    for name in args.files:
        if not Path(name).is_file():
            raise UsageError(f"cannot read '{name}': no such file")
        try:  # what the benchmark would stumble on, said as `smalto infer` says it
            read_input(name)
        except MlirInputError as error:
            raise UsageError(str(error)) from None
    bench_run = _load_bench()
    return bench_run.main([*args.files, "--repeat", str(args.repeat)])


def _load_bench() -> ModuleType:
    """``bench.run`` from the source checkout this package lives in."""
    checkout = Path(__file__).resolve().parents[2]
    if (checkout / "bench" / "run.py").is_file() and str(checkout) not in sys.path:
        sys.path.insert(0, str(checkout))
    try:
        return importlib.import_module("bench.run")
    except ImportError as error:
        raise UsageError(
            f"the benchmarks are not available ({error}); `smalto bench` runs from a smalto "
            "source checkout, which has bench/ and tests/helpers/reference.py"
        ) from None
