"""``smalto explain``: why a value got its layout.

    smalto explain FILE.mlir [%VALUE|@LINE ...] [--all] [--arch 9.0|10.0] [--json]
    smalto explain FILE.mlir %VALUE --draw [-o OUT.png|OUT.svg]
    smalto explain CODE          (a failure's code, e.g. SM004: its catalogue entry)

Infers FILE as ``smalto infer`` does (the unit-dim rewrite included) and prints,
for each value asked for (or all of them), its layout and the chain of ops
that forced it (``smalto.report.reasons``). Values and lines are those of the module
``smalto infer FILE`` prints (see ``smalto.report.printed``); names of FILE itself are
accepted too. With ``--draw``, each value asked for is also drawn as ``smalto
draw FILE %VALUE`` draws it (at its own shape, element type and layout), from the
same inference.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import TYPE_CHECKING

from smalto.basics.codes import CODES, entry_text, is_code
from smalto.basics.mlir import in_context, module_arch
from smalto.cli.arguments import command_label
from smalto.cli.output import EXIT_INFERENCE_FAILED, EXIT_OK, EXIT_USAGE, fail, note
from smalto.cli.values import value_to_draw
from smalto.draw.value import KernelValue, ValueLookupError
from smalto.infer import DEFAULT_FUEL, infer_keeping_the_solution
from smalto.pipeline.validate import SUPPORTED_ARCHS
from smalto.report.printed import printed_module
from smalto.report.reasons import Explainer
from smalto.source.files import searching_beside

if TYPE_CHECKING:
    from smalto.basics.inputs import Input

PROG = command_label("explain")  # how its errors and notes start


def explain_main(argv: list[str]) -> int:
    """Runs ``smalto explain`` on ``argv`` (the arguments after ``explain``); returns its status."""
    from smalto.cli.arguments import command_parser, parse_arguments

    args = parse_arguments(command_parser("explain"), argv)
    if isinstance(args, int):
        return args
    return run_explain(args)


def run_explain(args: argparse.Namespace) -> int:
    """Runs ``smalto explain`` on parsed arguments (see ``smalto.cli.main``); returns its status."""
    from smalto.basics.inputs import read_input
    from smalto.basics.mlir import MlirInputError

    if is_code(args.input) and not Path(args.input).exists():
        return _explain_code(args.input)
    try:
        source = read_input(args.input)
        arch = args.arch or module_arch(source.module) or (9, 0)
        if arch not in SUPPORTED_ARCHS:
            raise ValueError(
                f"the module targets architecture {arch[0]}.{arch[1]}, which smalto does not "
                "support (9.0 or 10.0); pass --arch to override"
            )
    except (MlirInputError, ValueError) as error:
        return fail(str(error), EXIT_USAGE, PROG)
    problem = _drawing_problem(args)
    if problem is not None:
        return fail(problem, EXIT_USAGE, PROG)
    fuel = DEFAULT_FUEL if args.fuel is None else args.fuel
    with searching_beside(args.input) as sources:
        status = _explain(args, source, arch, fuel)
    missing = sources.missing_note()
    if missing is not None:
        note(missing, PROG)
    return status


def _explain_code(code: str) -> int:
    """``smalto explain SM004``: the code's entry in the catalogue (``smalto.basics.codes``)."""
    if code.upper() not in CODES:
        known = ", ".join(CODES)
        return fail(f"no failure code {code!r}; the codes are {known}", EXIT_USAGE, PROG)
    sys.stdout.write(entry_text(code))
    return EXIT_OK


def _explain(args: argparse.Namespace, source: Input, arch: tuple[int, int], fuel: int) -> int:
    from smalto.basics.mlir import MlirInputError
    from smalto.cli.arguments import solve_options
    from smalto.cli.infer import rescue_notes
    from smalto.errors import InferenceError

    try:
        # As `smalto infer` does: a module with no layouts as written is rewritten
        # (a note per changed op), and the rewritten module's values explained.
        with in_context(source.module), rescue_notes(PROG):
            # Written as `smalto infer` writes them, so that the printed module is its output.
            inference = infer_keeping_the_solution(
                source.module, solve_options(args, fuel=fuel, arch=arch)
            )
            printed = printed_module(
                source.module,
                inference.program,
                generic=args.generic,
                input_text=source.text,
                input_files=source.files,
            )
            explainer = Explainer(inference, source.name, printed)
            detailed = bool(args.values) and not args.all
            if detailed:
                wanted: list[int] = []
                for name in args.values:
                    wanted.extend(v for v in explainer.find(name) if v not in wanted)
            else:
                wanted = explainer.values()
            explanations = [explainer.explain_value(v) for v in wanted]
            drawn = [value_to_draw(explainer, v, arch) for v in wanted] if args.draw else []
    except ValueLookupError as error:  # (a LookupError: before the next clause)
        return fail(str(error), EXIT_USAGE, PROG)
    except LookupError as error:
        return fail(f"{error.args[0]} (in {source.name})", EXIT_USAGE, PROG)
    except MlirInputError as error:  # values smalto cannot lay out (pipeline.validate)
        return fail(str(error), EXIT_USAGE, PROG)
    except (InferenceError, NotImplementedError) as error:
        return fail(str(error), EXIT_INFERENCE_FAILED, PROG)
    for text in explainer.notes:
        note(text, PROG)
    if args.json:
        document = {
            "file": source.name,
            "arch": f"{arch[0]}.{arch[1]}",
            "values": [e.as_json() for e in explanations],
        }
        print(json.dumps(document, indent=1))
    elif detailed:
        print("\n\n".join(e.text() for e in explanations))
    else:
        print("\n".join(e.text(detailed=False) for e in explanations))
    status = EXIT_OK
    for value in drawn:
        sys.stdout.flush()
        status = max(status, _draw(args.input, value, args.output))
    return status


def _drawing_problem(args: argparse.Namespace) -> str | None:
    """What is wrong with ``--draw``/``-o`` as given, if anything."""
    if args.output is not None and not args.draw:
        return "-o names the picture of --draw: add --draw"
    if not args.draw:
        return None
    if not args.values or args.all:
        return "--draw draws the values named: give %VALUE (or @LINE), not --all"
    if args.json:
        return "--draw writes pictures and --json prints JSON: choose one"
    if args.output is not None and len(args.values) > 1:
        return "-o names one picture: draw one value at a time (or leave -o out)"
    return None


def _draw(path: str, value: KernelValue, output: str | None) -> int:
    """Draws ``value`` as ``smalto draw FILE %N`` does, from the inference already made."""
    from smalto.cli.draw import draw_main

    def lookup(_file: str, _name: str, _arch: tuple[int, int] | None) -> KernelValue:
        return value

    argv = [path, value.name, *(["-o", output] if output is not None else [])]
    return draw_main(argv, lookup=lookup)
