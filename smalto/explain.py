"""``smalto explain``: why a value got its layout.

    smalto explain FILE.mlir [%VALUE|@LINE ...] [--all] [--arch 9.0|10.0] [--json]

Infers FILE as ``smalto infer`` does (the unit-dim rewrite included) and prints,
for each value asked for (or all of them), its layout and the chain of ops
that forced it (``smalto.explainer``). Values and lines are those of the module
``smalto infer FILE`` prints (see ``smalto.printed``); names of FILE itself are
accepted too.
"""

from __future__ import annotations

import argparse
import json
import sys
from typing import TYPE_CHECKING

from smalto.explainer import Explainer
from smalto.infer import DEFAULT_FUEL, infer_keeping_the_solution
from smalto.mlir import in_context
from smalto.printed import printed_module
from smalto.sources import searching_beside
from smalto.validate import SUPPORTED_ARCHS

if TYPE_CHECKING:
    from smalto.inputs import Input

EXIT_OK = 0
EXIT_INFERENCE_FAILED = 1
EXIT_USAGE = 2


def explain_main(argv: list[str]) -> int:
    """Runs ``smalto explain`` on ``argv`` (the arguments after ``explain``); returns its status."""
    from smalto.cli import command_parser, parse_arguments

    args = parse_arguments(command_parser("explain"), argv)
    if isinstance(args, int):
        return args
    return run_explain(args)


def run_explain(args: argparse.Namespace) -> int:
    """Runs ``smalto explain`` on parsed arguments (see ``smalto.cli``); returns its status."""
    from smalto.inputs import read_input
    from smalto.mlir import MlirInputError, module_arch

    try:
        source = read_input(args.input)
        arch = args.arch or module_arch(source.module) or (9, 0)
        if arch not in SUPPORTED_ARCHS:
            raise ValueError(
                f"the module targets architecture {arch[0]}.{arch[1]}, which smalto does not "
                "support (9.0 or 10.0); pass --arch to override"
            )
    except (MlirInputError, ValueError) as error:
        return _fail(str(error), EXIT_USAGE)
    fuel = DEFAULT_FUEL if args.fuel is None else args.fuel
    with searching_beside(args.input) as sources:
        status = _explain(args, source, arch, fuel)
    note = sources.missing_note()
    if note is not None:
        print(f"smalto explain: note: {note}", file=sys.stderr)
    return status


def _explain(args: argparse.Namespace, source: Input, arch: tuple[int, int], fuel: int) -> int:
    from smalto.errors import InferenceError
    from smalto.infer_command import rescue_notes, rescue_options
    from smalto.mlir import MlirInputError

    try:
        # As `smalto infer` does: a module with no layouts as written is rewritten
        # (a note per changed op), and the rewritten module's values explained.
        with in_context(source.module), rescue_notes("smalto explain"):
            # Written as `smalto infer` writes them, so that the printed module is its output.
            inference = infer_keeping_the_solution(
                source.module, fuel, arch, **rescue_options(args)
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
    except LookupError as error:
        return _fail(f"{error.args[0]} (in {source.name})", EXIT_USAGE)
    except MlirInputError as error:  # values smalto cannot lay out at all (validate.py)
        return _fail(str(error), EXIT_USAGE)
    except (InferenceError, NotImplementedError) as error:
        return _fail(str(error), EXIT_INFERENCE_FAILED)
    for note in explainer.notes:
        print(f"smalto explain: note: {note}", file=sys.stderr)
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
    return EXIT_OK


def _fail(message: str, status: int) -> int:
    print(f"smalto explain: error: {message}", file=sys.stderr)
    return status
