"""``smalto draw``: a picture of a register layout, an SMEM transform or a TMEM layout,
or the SMEM bank conflicts of storing/loading a register layout to/from a ref.

    smalto draw LAYOUT --shape 64x64 [--dtype bf16] [-o out.png|out.svg] [--thread T|--warp W]
    smalto draw --smem tile=8x64,swizzle=128 --shape 64x128 --dtype bf16 [-o ...]
    smalto draw --tmem [LAYOUT] --shape 128x64 [--dtype f32] [--packing N] [--collective]
    smalto draw LAYOUT --smem SPEC --bank-conflicts --shape 64x64 --dtype bf16 [--load]

Exit status 0 on success, 2 on bad usage (one line on stderr). Arguments are read
before JAX is imported, so ``--help`` and usage errors are quick.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import sys
from pathlib import Path
from typing import Any

from smalto.draw.names import REGISTER_LAYOUT_NAMES, TMEM_LAYOUT_NAMES

EXIT_OK = 0
EXIT_USAGE = 2

ARCHS = {"9.0": (9, 0), "10.0": (10, 0)}


class _UsageError(ValueError):
    pass


def build_parser(prog: str = "smalto draw") -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog=prog,
        description="Draw which thread and register hold each element of an array in a "
        "register layout, where each element of an SMEM ref lands (tiles, swizzled "
        "16-byte chunks, banks), which TMEM lane and column hold it, or the SMEM bank "
        "conflicts of storing (loading) a register layout to (from) a ref.",
        epilog=f"Register layout names: {', '.join(REGISTER_LAYOUT_NAMES)}, strided[:VEC], "
        f"splat. TMEM layout names: {', '.join(TMEM_LAYOUT_NAMES)} (default: the layout JAX "
        "picks for the shape).",
    )
    parser.add_argument(
        "layout",
        nargs="?",
        metavar="LAYOUT",
        help="a layout name or an attribute as it appears in a module, e.g. "
        "'#mosaic_gpu.TiledLayout<...>' (with --smem: only for --bank-conflicts)",
    )
    parser.add_argument("--shape", required=True, help="array shape, e.g. 64x64")
    parser.add_argument(
        "--dtype", default="f32", help="element type: f32 (default), bf16, f16, f8E4M3FN, i8, ..."
    )
    parser.add_argument(
        "-o", dest="output", metavar="OUT", help="picture to write, .png or .svg (default: a "
        "name made from the layout and shape, as PNG)"
    )  # fmt: skip
    parser.add_argument(
        "--thread", type=int, metavar="T",
        help="highlight what thread T (0-127) holds (TMEM: lane T), and list it",
    )  # fmt: skip
    parser.add_argument("--warp", type=int, metavar="W", help="highlight what warp W (0-3) holds")
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
        "bank conflicts", "with LAYOUT and --smem: how JAX 0.12 lowers vector_store "
        "(vector_load) of the array to (from) the ref, and how many SMEM wavefronts each "
        "instruction takes; printed, and drawn"
    )  # fmt: skip
    conflicts.add_argument(
        "--bank-conflicts", action="store_true",
        help="print and draw the bank conflicts of the transfer",
    )  # fmt: skip
    conflicts.add_argument(
        "--load", action="store_true", help="a load from SMEM (default: a store)"
    )
    conflicts.add_argument(
        "--arch", default="9.0", choices=list(ARCHS), help="target (default 9.0, Hopper)"
    )
    conflicts.add_argument(
        "--unoptimized", action="store_true",
        help="the transfer of an op with optimized=false (JAX's plain order, conflicts or not)",
    )  # fmt: skip
    conflicts.add_argument(
        "--json", action="store_true", help="print the numbers as JSON instead of text"
    )
    conflicts.add_argument("--no-picture", action="store_true", help="print the numbers only")
    return parser


def draw_main(argv: list[str]) -> int:
    """Runs ``smalto draw`` on ``argv`` (the arguments after ``draw``); returns the exit code."""
    parser = build_parser()
    try:
        args = parser.parse_args(argv)
    except SystemExit as exit_request:
        code = exit_request.code
        return code if isinstance(code, int) else EXIT_USAGE
    try:
        _check_arguments(args)
    except _UsageError as error:
        return _usage(str(error))
    return _run(args)


def _usage(message: str) -> int:
    print(f"smalto draw: error: {message}", file=sys.stderr)
    return EXIT_USAGE


def _check_arguments(args: argparse.Namespace) -> None:
    """What can be said wrong before JAX is imported."""
    if args.thread is not None and not 0 <= args.thread < 128:
        raise _UsageError(f"--thread must be 0-127 (a thread of the warpgroup), got {args.thread}")
    if args.warp is not None and not 0 <= args.warp < 4:
        raise _UsageError(f"--warp must be 0-3, got {args.warp}")
    if args.thread is not None and args.warp is not None:
        raise _UsageError("--thread and --warp: choose one")
    if args.bank_conflicts:
        if args.smem is None or args.layout is None:
            raise _UsageError("--bank-conflicts needs a register LAYOUT and --smem SPEC")
    elif args.load or args.unoptimized or args.json or args.no_picture:
        raise _UsageError("--load, --unoptimized, --json and --no-picture go with --bank-conflicts")
    if (
        args.output
        and not args.no_picture
        and Path(args.output).suffix.lower() not in (".png", ".svg")
    ):
        raise _UsageError(f"cannot tell the image format of {args.output!r}: use .png or .svg")


def _run(args: argparse.Namespace) -> int:
    from smalto.draw.access import AddressModelError, TransferError
    from smalto.draw.ownership import LayoutShapeError
    from smalto.draw.render import save
    from smalto.draw.smem import SmemSpecError
    from smalto.draw.spec import SpecError

    output = args.output or ""
    try:
        panels, default_name, text = _pictures(args)
        if not args.no_picture:
            output = args.output or default_name
            save(panels, output)
    except (SpecError, SmemSpecError, LayoutShapeError, TransferError, ValueError) as error:
        return _usage(str(error))
    except OSError as error:
        return _usage(f"cannot write '{output}': {error.strerror}")
    except AddressModelError as error:  # smalto's limit, not the user's mistake
        print(f"smalto draw: error: cannot follow JAX's address arithmetic: {error}",
              file=sys.stderr)  # fmt: skip
        return 1
    try:
        if text:
            print(text)
        if not args.no_picture:
            print(f"wrote {output}")
        sys.stdout.flush()
    except BrokenPipeError:  # the reader stopped early (| head): not an error
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
    return EXIT_OK


def _pictures(args: argparse.Namespace) -> tuple[list[Any], str, str]:
    """The panels to draw, the default file name, and text to print (may be empty)."""
    from smalto.draw.spec import SpecError, parse_dtype, parse_shape

    shape = parse_shape(args.shape)
    bitwidth = parse_dtype(args.dtype)
    shape_text = "x".join(map(str, shape))
    if args.bank_conflicts:
        return _bank_conflicts(args, shape, shape_text)
    if args.smem is not None:
        if args.layout is not None:
            raise SpecError(
                "--smem draws transforms, not a register layout: drop LAYOUT (or add "
                "--bank-conflicts for the conflicts of transferring LAYOUT)"
            )
        return _smem(args, shape, bitwidth, shape_text)
    if args.tmem:
        return _tmem(args, shape, bitwidth, shape_text)
    if args.layout is None:
        raise SpecError("name a LAYOUT to draw (or use --smem / --tmem)")
    from smalto.draw.ownership import ownership
    from smalto.draw.pictures import register_pictures
    from smalto.draw.spec import layout_name, parse_register_layout

    register_layout = parse_register_layout(args.layout, shape, bitwidth)
    held = ownership(register_layout, shape)
    name = layout_name(register_layout)
    panels = register_pictures(
        held, register_layout, name, args.dtype, thread=args.thread, warp=args.warp
    )
    text = thread_holdings(held, args.thread) if args.thread is not None else ""
    return panels, _file_name(name, shape_text), text


def _smem(
    args: argparse.Namespace, shape: tuple[int, ...], bitwidth: int, shape_text: str
) -> tuple[list[Any], str, str]:
    from smalto.draw.smem import implied_swizzle, smem_placement
    from smalto.draw.smem_pictures import smem_pictures
    from smalto.draw.spec import parse_smem_spec

    tiling, swizzle = parse_smem_spec(args.smem)
    if swizzle is None:
        swizzle = implied_swizzle(tiling, bitwidth)
    placed = smem_placement(shape, tiling, swizzle, bitwidth)
    tile = "untiled" if tiling is None else "x".join(map(str, tiling))
    return smem_pictures(placed, args.dtype), f"smem_{tile}_sw{swizzle}_{shape_text}.png", ""


def _tmem(
    args: argparse.Namespace, shape: tuple[int, ...], bitwidth: int, shape_text: str
) -> tuple[list[Any], str, str]:
    from smalto.draw.ownership import tmem_placement
    from smalto.draw.spec import SpecError, parse_tmem_layout, tmem_layout_name
    from smalto.draw.tmem_pictures import tmem_pictures

    if args.packing <= 0 or args.packing & (args.packing - 1):
        raise SpecError(f"--packing must be a power of two, got {args.packing}")
    if args.warp is not None:
        raise SpecError("--warp does not apply to TMEM pictures (they outline lane quarters)")
    layout = parse_tmem_layout(args.layout, shape, args.packing, args.collective)
    try:
        layout.check_type(shape, bitwidth)
    except ValueError as error:
        raise SpecError(str(error)) from None
    name = tmem_layout_name(layout, shape)
    panels = tmem_pictures(tmem_placement(layout, shape), name, args.dtype, thread=args.thread)
    return panels, _file_name("tmem_" + (args.layout or "inferred"), shape_text), ""


def _bank_conflicts(
    args: argparse.Namespace, shape: tuple[int, ...], shape_text: str
) -> tuple[list[Any], str, str]:
    from smalto.draw.conflict_pictures import conflict_pictures
    from smalto.draw.conflicts import bank_conflicts
    from smalto.draw.ownership import LayoutShapeError, ownership
    from smalto.draw.smem import implied_swizzle
    from smalto.draw.spec import (
        layout_name,
        mlir_element_type,
        parse_dtype,
        parse_register_layout,
        parse_smem_spec,
    )

    bitwidth = parse_dtype(args.dtype)
    element_type = mlir_element_type(args.dtype)
    register_layout = parse_register_layout(args.layout, shape, bitwidth)
    tiling, swizzle = parse_smem_spec(args.smem)
    if swizzle is None:
        swizzle = implied_swizzle(tiling, bitwidth)
    result = bank_conflicts(
        register_layout, shape, element_type, tiling, swizzle, load=args.load,
        optimized=not args.unoptimized, arch=ARCHS[args.arch],
    )  # fmt: skip
    text = json.dumps(result.as_dict(), indent=2) if args.json else result.text()
    try:
        held = ownership(register_layout, shape)
    except LayoutShapeError:
        held = None
    name = layout_name(register_layout)
    tile = "untiled" if tiling is None else "x".join(map(str, tiling))
    verb = "load" if args.load else "store"
    default = _file_name(f"banks_{verb}_{name}_{tile}_sw{swizzle}", shape_text)
    panels = [] if args.no_picture else conflict_pictures(result, held)
    return panels, default, text


def thread_holdings(held: Any, thread: int) -> str:
    """What ``thread`` holds, register by register: ``R3: (8, 0), (8, 1)``."""
    import numpy as np

    mine = np.any(held.threads == thread, axis=-1)
    lines = [f"thread {thread} (warp {thread // 32}, lane {thread % 32}) holds:"]
    by_register: dict[int, list[tuple[int, tuple[int, ...]]]] = {}
    for index in zip(*np.nonzero(mine), strict=True):
        key = tuple(int(i) for i in index)
        by_register.setdefault(int(held.register[key]), []).append((int(held.slot[key]), key))
    for register in sorted(by_register):
        elements = ", ".join(
            "(" + ", ".join(map(str, key)) + ")" for _, key in sorted(by_register[register])
        )
        lines.append(f"  R{register}: {elements}")
    if len(lines) == 1:
        lines.append("  nothing")
    return "\n".join(lines)


def _file_name(name: str, shape_text: str) -> str:
    slug = re.sub(r"[^A-Za-z0-9]+", "_", name).strip("_").lower() or "layout"
    return str(Path(f"{slug}_{shape_text}.png"))
