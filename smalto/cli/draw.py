"""``smalto draw``: a picture of a register layout, an SMEM transform or a TMEM layout,
or the SMEM bank conflicts of storing/loading a register layout to/from a ref.

    smalto draw LAYOUT --shape 64x64 [--dtype bf16] [-o out.png|out.svg] [--thread T|--warp W]
    smalto draw FILE %N [--thread T|--warp W] [-o ...]
    smalto draw --smem tile=8x64,swizzle=128 --shape 64x128 --dtype bf16 [-o ...]
    smalto draw --tmem [LAYOUT] --shape 128x64 [--dtype f32] [--packing N] [--collective]
    smalto draw LAYOUT --smem SPEC --bank-conflicts --shape 64x64 --dtype bf16 [--load]

LAYOUT is any name smalto prints (``WGMMA``, ``WGMMA_ROW keepdims``, ``tiled 8×64 +
swizzle 128``, ``TMEM half_lane``, ...), a Pallas spelling (``plgpu.Layout.WGMMA``,
``WGMMA.reduce(1)``) or an attribute. Exit status 0 on success, 1 where smalto cannot
infer FILE's layouts, 2 on bad usage (one line on stderr). Arguments are read before
JAX is imported, so ``--help`` and usage errors are quick.

``smalto draw FILE %N`` finds the value as ``smalto explain`` does
(``smalto.cli.values.kernel_value``: names and lines of the module ``smalto infer
FILE`` prints, or of FILE itself), after the inference ``smalto infer`` runs (rewrite
included), so that the picture shows the layout ``infer`` writes on that value. JAX
and the pass are imported only when a value is looked up.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any

from smalto.basics.file_names import printable
from smalto.cli.arguments import command_label
from smalto.cli.output import (
    EXIT_FAILED,
    EXIT_OK,
    EXIT_USAGE,
    UsageError,
    fail,
    note,
    stdout_closed,
)
from smalto.draw.help_names import ARCHS, REGISTER_LAYOUT_NAMES, TMEM_LAYOUT_NAMES

if TYPE_CHECKING:
    from smalto.draw.value import Lookup

PROG = command_label("draw")  # how its errors and notes start


def build_parser(prog: str = PROG) -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog=prog,
        description="Draw which thread and register hold each element of an array in a "
        "register layout, where each element of an SMEM ref lands (tiles, swizzled "
        "16-byte chunks, banks), which TMEM lane and column hold it, or the SMEM bank "
        "conflicts of storing (loading) a register layout to (from) a ref. "
        "'smalto draw FILE %N' draws the layout smalto infers for a value of a kernel.",
        epilog=f"Layout names: any smalto prints: {', '.join(REGISTER_LAYOUT_NAMES)}, "
        "X.reduce(AXIS), 'X keepdims', TMEM_NATIVE(N), 'strided ×VEC' (or strided:VEC), "
        "splat, 'tiled 8×64 + swizzle 128', 'tiled 8×64, no swizzle', untiled, "
        f"'TMEM {' | '.join(TMEM_LAYOUT_NAMES)} [(packing N)]'; Pallas spellings: "
        "plgpu.Layout.WGMMA, plgpu.Layout.WGMMA.reduce(1), "
        "plgpu.Layout.TCGEN05_TMEM_NATIVE(8), plgpu.TMEMLayout.M64_COLLECTIVE_LAYOUT(128); "
        "or an attribute as a module writes it.",
    )
    parser.add_argument(
        "layout",
        nargs="?",
        metavar="LAYOUT | FILE",
        help="a layout: a name, a Pallas spelling or an attribute such as "
        "'#mosaic_gpu.TiledLayout<...>' (with --smem: only for --bank-conflicts); or a "
        "kernel's .mlir file, followed by VALUE",
    )
    parser.add_argument(
        "value",
        nargs="?",
        metavar="VALUE",
        help="with FILE: a value as 'smalto infer FILE' prints it (%%12, %%95#0) or @LINE, "
        "drawn at its own shape, element type and inferred layout",
    )
    parser.add_argument("--shape", help="array shape, e.g. 64x64 (with a LAYOUT: required)")
    parser.add_argument("--dtype", help="element type: f32 (default), bf16, f16, f8E4M3FN, i8, ...")
    parser.add_argument(
        "-o", dest="output", metavar="OUT", help="picture to write, .png or .svg (default: a "
        "name made from the layout, shape and element type, as PNG)"
    )  # fmt: skip
    parser.add_argument(
        "--thread", type=int, metavar="T",
        help="highlight what thread T (0-127) holds (TMEM: lane T), and list it",
    )  # fmt: skip
    parser.add_argument(
        "--warp", type=int, metavar="W", help="highlight what warp W (0-3) holds, and list it"
    )
    mode = parser.add_mutually_exclusive_group()
    mode.add_argument(
        "--smem",
        metavar="SPEC",
        help="draw an SMEM ref with these transforms: tile=AxB[,swizzle=16|32|64|128] "
        "(swizzle defaults to the minor tile's width in bytes); 'tile=none' for untiled",
    )
    mode.add_argument("--tmem", action="store_true", help="LAYOUT is a TMEM layout")
    parser.add_argument(
        "--packing", type=int, default=1, help="TMEM: elements per 32-bit column (default 1)"
    )
    parser.add_argument(
        "--collective", action="store_true", help="TMEM: the layout of a collective allocation"
    )
    conflicts = parser.add_argument_group(
        "bank conflicts", "with LAYOUT (or FILE VALUE) and --smem: how JAX 0.12 lowers "
        "vector_store (vector_load) of the array to (from) the ref, how many SMEM wavefronts "
        "each instruction takes, and which tiling and swizzle remove the conflicts; printed, "
        "and drawn"
    )  # fmt: skip
    conflicts.add_argument(
        "--bank-conflicts", action="store_true",
        help="print and draw the bank conflicts of the transfer",
    )  # fmt: skip
    conflicts.add_argument(
        "--load", action="store_true", help="a load from SMEM (default: a store)"
    )
    conflicts.add_argument(
        "--arch", choices=list(ARCHS),
        help="target (default 9.0, Hopper; with FILE: the module's own)",
    )  # fmt: skip
    conflicts.add_argument(
        "--unoptimized", action="store_true",
        help="the transfer of an op with optimized=false (JAX's plain order, conflicts or not)",
    )  # fmt: skip
    conflicts.add_argument(
        "--json", action="store_true", help="print the numbers as JSON instead of text"
    )
    conflicts.add_argument("--no-picture", action="store_true", help="print the numbers only")
    return parser


def draw_main(argv: list[str], lookup: Lookup | None = None) -> int:
    """Runs ``smalto draw`` on ``argv`` (the arguments after ``draw``); returns the exit code.

    ``lookup`` finds a kernel's value for ``smalto draw FILE %N`` (default: by
    inferring FILE, ``kernel_value``; ``smalto explain --draw`` hands over the value
    its inference found).
    """
    parser = build_parser()
    try:
        args = parser.parse_args(argv)
    except SystemExit as exit_request:
        code = exit_request.code
        return code if isinstance(code, int) else EXIT_USAGE
    try:
        _check_arguments(args)
    except UsageError as error:
        return fail(str(error), EXIT_USAGE, PROG)
    if lookup is None:
        from smalto.cli.values import kernel_value as lookup
    return _run(args, lookup)


def _check_arguments(args: argparse.Namespace) -> None:
    """What can be said wrong before JAX is imported."""
    if args.thread is not None and not 0 <= args.thread < 128:
        raise UsageError(f"--thread must be 0-127 (a thread of the warpgroup), got {args.thread}")
    if args.warp is not None and not 0 <= args.warp < 4:
        raise UsageError(f"--warp must be 0-3, got {args.warp}")
    if args.thread is not None and args.warp is not None:
        raise UsageError("--thread and --warp: choose one")
    if args.value is not None:
        if args.shape is not None or args.dtype is not None:
            raise UsageError(
                f"--shape and --dtype come from {args.value} itself: drop them (or draw a "
                "LAYOUT at a shape of your choosing)"
            )
        if args.tmem:
            raise UsageError("FILE VALUE draws the value's own layout: drop --tmem")
        if args.smem is not None and not args.bank_conflicts:
            raise UsageError(
                "FILE VALUE draws the value's own layout: drop --smem (or add --bank-conflicts "
                "for the conflicts of transferring the value to that ref)"
            )
    elif args.layout is not None and _is_kernel_file(args.layout):
        raise UsageError(
            f"name the value of {args.layout} to draw: smalto draw {args.layout} %N (as "
            f"'smalto infer {args.layout}' prints its values)"
        )
    elif args.shape is None:
        raise UsageError("--shape is required (e.g. --shape 64x64), or draw FILE VALUE")
    if args.bank_conflicts:
        if args.smem is None or args.layout is None:
            raise UsageError("--bank-conflicts needs a register LAYOUT and --smem SPEC")
    elif args.load or args.unoptimized or args.json or args.no_picture:
        raise UsageError("--load, --unoptimized, --json and --no-picture go with --bank-conflicts")
    if (
        args.output
        and not args.no_picture
        and Path(args.output).suffix.lower() not in (".png", ".svg")
    ):
        raise UsageError(f"cannot tell the image format of {args.output!r}: use .png or .svg")


def _is_kernel_file(text: str) -> bool:
    return text.endswith((".mlir", ".mlirbc")) or (
        not text.startswith("#") and "/" in text and Path(text).is_file()
    )


def _run(args: argparse.Namespace, lookup: Lookup | None) -> int:
    from smalto.draw.access import AddressModelError
    from smalto.draw.render import save
    from smalto.draw.value import InferenceFailed

    output = args.output or ""
    try:
        panels, default_name, text = panels_to_draw(args, lookup)
        if not args.no_picture:
            output = args.output or default_name
            save(panels, output)
    except InferenceFailed as error:
        return fail(str(error), EXIT_FAILED, PROG)
    except AddressModelError as error:  # smalto's limit, not the user's mistake
        return fail(f"cannot follow JAX's address arithmetic: {error}", EXIT_FAILED, PROG)
    except OSError as error:
        return fail(f"cannot write '{output}': {error.strerror}", EXIT_USAGE, PROG)
    except ValueError as error:  # bad names, shapes, specs; transfers JAX refuses
        return fail(str(error), EXIT_USAGE, PROG)
    try:
        if text:
            print(text)
        if not args.no_picture:
            print(f"wrote {printable(str(output))}")
        sys.stdout.flush()
    except BrokenPipeError:  # the reader stopped early (| head): not an error
        return stdout_closed()
    return EXIT_OK


def panels_to_draw(
    args: argparse.Namespace, lookup: Lookup | None = None
) -> tuple[list[Any], str, str]:
    """The panels to draw for parsed ``smalto draw`` arguments, the default file name, and
    text to print (may be empty): the drawing without the rendering (``bench.draw``
    times it apart)."""
    from smalto.draw.subject import subject_of

    subject = subject_of(args, lookup)
    for text in subject.notes:  # (said before the drawing, which may still fail)
        note(text, PROG)
    if args.bank_conflicts:
        return _bank_conflicts(args, subject)
    if subject.kind == "smem":
        if args.smem is None and (args.thread is not None or args.warp is not None):
            raise ValueError("--thread and --warp highlight register and TMEM pictures only")
        return _smem(subject)
    if subject.kind == "tmem":
        return _tmem(args, subject)
    return _register(args, subject)


def _register(args: argparse.Namespace, subject: Any) -> tuple[list[Any], str, str]:
    from smalto.draw.holdings import thread_holdings, warp_holdings
    from smalto.draw.ownership import ownership
    from smalto.draw.pictures import register_pictures

    layout = subject.layout.layout
    held = ownership(layout, subject.shape)
    panels = register_pictures(
        held, layout, subject.title, subject.dtype, thread=args.thread, warp=args.warp
    )
    text = ""
    if args.thread is not None:
        text = thread_holdings(held, args.thread)
    elif args.warp is not None:
        text = warp_holdings(held, args.warp)
    return panels, subject.file_name(), text


def _smem(subject: Any) -> tuple[list[Any], str, str]:
    from smalto.draw.smem import smem_placement
    from smalto.draw.smem_pictures import smem_pictures

    tiling, swizzle = subject.tiling_and_swizzle()
    placed = smem_placement(subject.shape, tiling, swizzle, subject.bitwidth, subject.dim_order)
    return smem_pictures(placed, subject.dtype), subject.file_name(), ""


def _tmem(args: argparse.Namespace, subject: Any) -> tuple[list[Any], str, str]:
    from smalto.draw.holdings import lane_holdings
    from smalto.draw.ownership import tmem_placement
    from smalto.draw.tmem_pictures import tmem_pictures

    if args.warp is not None:
        raise ValueError("--warp does not apply to TMEM pictures (they outline lane quarters)")
    layout = subject.layout.layout
    try:
        layout.check_type(subject.shape, subject.bitwidth)
    except ValueError as error:
        message = f"{subject.title} cannot hold {subject.dims} {subject.dtype}: {error}"
        raise ValueError(message) from None
    placed = tmem_placement(layout, subject.shape)
    panels = tmem_pictures(placed, subject.title, subject.dtype, thread=args.thread)
    text = lane_holdings(placed, args.thread) if args.thread is not None else ""
    return panels, subject.file_name(), text


def _bank_conflicts(args: argparse.Namespace, subject: Any) -> tuple[list[Any], str, str]:
    from smalto.draw.bank_conflict_pictures import conflict_pictures
    from smalto.draw.ownership import LayoutShapeError, ownership
    from smalto.draw.remedy import remedy
    from smalto.draw.smem import implied_swizzle
    from smalto.draw.spec import parse_smem_spec
    from smalto.draw.transfer_conflicts import bank_conflicts

    if subject.kind != "register":
        raise ValueError(f"--bank-conflicts needs a register layout, not {subject.title}")
    layout = subject.layout.layout
    tiling, swizzle = parse_smem_spec(args.smem)
    if swizzle is None:
        swizzle = implied_swizzle(tiling, subject.bitwidth)
    arch = ARCHS[args.arch] if args.arch else subject.arch or (9, 0)
    result = bank_conflicts(
        layout, subject.shape, subject.element_type, tiling, swizzle, load=args.load,
        optimized=not args.unoptimized, arch=arch, layout_name=subject.layout_label,
    )  # fmt: skip
    fix = None
    if result.wavefronts > result.ideal or result.refused:
        fix = remedy(layout, subject.shape, subject.element_type, load=args.load, arch=arch,
                     layout_name=subject.layout_label)  # fmt: skip
    if args.json:
        document = result.as_dict()
        document["remedy"] = fix.as_dict() if fix is not None else None
        text = json.dumps(document, indent=2)
    else:
        text = result.text() + ("\n" + fix.text() if fix is not None else "")
    try:
        held = ownership(layout, subject.shape)
    except LayoutShapeError:
        held = None
    tile = "untiled" if tiling is None else "x".join(map(str, tiling))
    verb = "load" if args.load else "store"
    default = subject.file_name(f"banks_{verb}_{subject.slug}_{tile}_sw{swizzle}")
    panels = [] if args.no_picture else conflict_pictures(result, held, fix)
    return panels, default, text
