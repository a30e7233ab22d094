"""``smalto smem KERNEL``: a kernel's SMEM, allocation by allocation.

``KERNEL`` is an MLIR module (as ``smalto capture`` writes it, or ``-`` for stdin) or
``SCRIPT.py:FUNCTION`` with its ``--arg``s, lowered here without a GPU (past JAX's
SMEM limit check, so that a kernel over the limit can be read: ``smalto.jax.smem_room``).
Prints the headline (the launch's size, the limit, the peak and where it is), a
table of the allocations, and, over the limit, what uses the SMEM at the peak and
the verified changes that bring it under; ``--json`` prints one JSON object (one per
kernel, as JSON Lines, where FUNCTION builds several); ``--picture FILE`` draws the
allocations over time; ``--report FILE`` writes an HTML page of it all.

Exit status: 0 when every kernel fits, 1 when one is over the limit, 2 on bad
usage or input.
"""

from __future__ import annotations

import argparse
import json
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING

from smalto.basics.archs import SUPPORTED_ARCHS
from smalto.cli.output import EXIT_FAILED, EXIT_OK, UsageError, fail, note

if TYPE_CHECKING:
    from jax._src.lib.mlir import ir

    from smalto.report.smem_map import Verdict
    from smalto.smem.cuts import Cut


def run_smem(args: argparse.Namespace) -> int:
    """Runs ``smalto smem`` on parsed arguments (see ``smalto.cli.main``); returns the status."""
    from smalto.source.files import searching_beside

    kernels, relower = _kernels(args)
    many = len(kernels) > 1
    status = EXIT_OK
    for n, (name, module, arch) in enumerate(kernels):
        near = [args.target] if not _is_script(args.target) else [args.target.rpartition(":")[0]]
        with searching_beside(*near):
            status = max(status, _show(name, module, arch, args, n if many else None, relower))
    return status


# Where the kernel is a function: its cuts' verdicts, with those it can make itself (fewer
# stages, where it takes them as a keyword) lowered again.
Relower = Callable[[list["Cut"], list["Verdict"]], list["Verdict"]]


def _is_script(target: str) -> bool:
    script, sep, name = target.rpartition(":")
    return bool(sep) and script.endswith(".py") and name.isidentifier()


def _kernels(
    args: argparse.Namespace,
) -> tuple[list[tuple[str, ir.Module, tuple[int, int]]], Relower | None]:
    """Each kernel to map (its name, its module, its arch), and how to lower its function
    again with a change (None for a module)."""
    from smalto.basics.mlir import MlirInputError, module_arch

    if _is_script(args.target):
        return _captured(args)
    if args.args:
        raise UsageError("--arg is for SCRIPT.py:FUNCTION, not a module")
    from smalto.basics.inputs import read_input

    try:
        source = read_input(args.target)
    except (MlirInputError, ValueError) as error:
        raise UsageError(" ".join(str(error).split())) from None
    arch = args.arch or module_arch(source.module) or (9, 0)
    if arch not in SUPPORTED_ARCHS:
        raise UsageError(
            f"{source.name}: the module targets architecture {arch[0]}.{arch[1]}, which smalto "
            "does not support (9.0 or 10.0); pass --arch to override"
        )
    return [(source.name, source.module, arch)], None


def _captured(
    args: argparse.Namespace,
) -> tuple[list[tuple[str, ir.Module, tuple[int, int]]], Relower]:
    """The kernels ``SCRIPT.py:FUNCTION`` builds, lowered past JAX's SMEM limit check."""
    from smalto.cli.targets import load_function, shape_dtype
    from smalto.jax.capture import capture
    from smalto.jax.smem_room import room_for_any_smem
    from smalto.source.scripts import one_line

    arguments = [shape_dtype(dtype, shape) for dtype, shape in args.args]
    function = load_function(args.target, len(arguments))
    try:
        with room_for_any_smem():
            captured = capture(function, *arguments, arch=args.arch, by="smalto")
    except Exception as error:  # the user's kernel failed to lower: theirs, ours to report
        raise UsageError(
            f"lowering {args.target} failed before layout inference: {one_line(error)}"
        ) from None
    if not captured:
        raise UsageError(
            f"{args.target} built no Mosaic GPU kernel in warpgroup semantics "
            "(lowering_semantics=plgpu.LoweringSemantics.Warpgroup)"
        )
    from smalto.jax.smem_room import relowered

    def relower(cuts: list[Cut], verdicts: list[Verdict]) -> list[Verdict]:
        return relowered(function, tuple(arguments), args.arch, cuts, verdicts)

    return [(kernel.name, kernel.module(), kernel.arch) for kernel in captured], relower


def _show(
    name: str,
    module: ir.Module,
    arch: tuple[int, int],
    args: argparse.Namespace,
    n: int | None,
    relower: Relower | None,
) -> int:
    from smalto.basics.mlir import in_context
    from smalto.report.smem_map import html_page, lowered_cuts, smem_json, text_report
    from smalto.smem.allocations import read_smem_map
    from smalto.smem.cuts import smem_cuts

    with in_context(module):
        smem = read_smem_map(module, arch)
        cuts = smem_cuts(smem, module, arch) if smem.over else []
        verdicts = lowered_cuts(cuts, arch)
    if relower is not None and cuts:
        verdicts = relower(cuts, verdicts)
    if args.json:
        print(json.dumps({"file": name, **smem_json(smem, arch, cuts, verdicts)}))
    else:
        print(text_report(smem, arch, cuts, verdicts))
    if args.picture:
        from smalto.draw.smem_map import save_smem_map

        path = _numbered(args.picture, n)
        try:
            save_smem_map(smem, path)
        except ValueError as error:
            raise UsageError(str(error)) from None
        except OSError as error:
            raise UsageError(f"cannot write '{path}': {error.strerror or error}") from None
        note(f"wrote {path}")
    if args.report:
        from smalto.basics.writing import write_file

        path = _numbered(args.report, n)
        try:
            write_file(path, html_page(smem, arch, cuts, verdicts))
        except OSError as error:
            raise UsageError(f"cannot write '{path}': {error.strerror or error}") from None
        note(f"wrote {path}")
    if smem.over:
        return fail(
            f"{name}: {smem.kernel} asks for {smem.total} bytes of SMEM, {smem.over} over "
            f"the {smem.limit} a block may have",
            EXIT_FAILED,
        )
    return EXIT_OK


def _numbered(path: str, n: int | None) -> str:
    """``map.svg`` for one kernel; ``map-1.svg``, ``map-2.svg``... for several."""
    if n is None:
        return path
    file = Path(path)
    return str(file.with_name(f"{file.stem}-{n + 1}{file.suffix}"))
