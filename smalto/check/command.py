"""``smalto check``: the command line of the checker."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from pathlib import Path

from smalto.check.walk import check
from smalto.validate import SUPPORTED_ARCHS, parse_arch

EXIT_OK, EXIT_VIOLATIONS, EXIT_BAD_INPUT = 0, 1, 2


def check_main(argv: Sequence[str]) -> int:
    """``smalto check FILE|- [--arch 9.0|10.0]``; ``argv`` is what follows ``check``.

    Prints one line per violation, ``LOCATION: op: message``, on stdout and
    returns 1; returns 0 when there is none; on unreadable or unparsable input
    or bad usage prints one line on stderr and returns 2.
    """
    from smalto.mlir import MlirInputError, module_arch, parse_module

    parser = argparse.ArgumentParser(
        prog="smalto check",
        description="Check the layout annotations of a Mosaic GPU module, op by op.",
    )
    parser.add_argument("input", metavar="FILE", help="annotated MLIR module ('-' for stdin)")
    parser.add_argument(
        "--arch",
        metavar="MAJOR.MINOR",
        help="9.0 (Hopper) or 10.0 (Blackwell); default: the "
        "module's mosaic_gpu.arch_major/arch_minor, else 9.0",
    )
    try:
        args = parser.parse_args(list(argv))
    except SystemExit as exit_request:
        code = exit_request.code
        return code if isinstance(code, int) else EXIT_BAD_INPUT
    try:
        arch = parse_arch(args.arch) if args.arch is not None else None
        if args.input == "-":
            text, name = sys.stdin.read(), "<stdin>"
        else:
            try:
                text, name = Path(args.input).read_text(encoding="utf-8"), args.input
            except OSError as error:
                raise ValueError(f"cannot read '{args.input}': {error.strerror or error}") from None
            except UnicodeDecodeError:
                raise ValueError(f"cannot read '{args.input}': not UTF-8 text") from None
        module = parse_module(text, source_name=name)
        if arch is None:
            arch = module_arch(module) or (9, 0)
            if arch not in SUPPORTED_ARCHS:
                raise ValueError(
                    f"the module targets architecture {arch[0]}.{arch[1]}, which smalto does "
                    "not support (9.0 or 10.0); pass --arch to override"
                )
        violations = check(module, arch, source_name=name)
    except (MlirInputError, ValueError) as error:
        print(f"smalto: error: {_one_line(str(error))}", file=sys.stderr)
        return EXIT_BAD_INPUT
    for violation in violations:
        print(_one_line(str(violation)))
    return EXIT_VIOLATIONS if violations else EXIT_OK


def _one_line(text: str) -> str:
    return " ".join(text.split())
