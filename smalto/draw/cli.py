"""``smalto draw``: a picture of a register layout, an SMEM transform or a TMEM layout.

    smalto draw LAYOUT --shape 64x64 [--dtype bf16] [-o out.png|out.svg]
    smalto draw --smem tile=8x64,swizzle=128 --shape 64x128 --dtype bf16 [-o ...]
    smalto draw --tmem [LAYOUT] --shape 128x64 [--dtype f32] [--packing N] [--collective]

Exit status 0 on success, 2 on bad usage (one line on stderr).
"""

from __future__ import annotations

import argparse
import re
import sys
from pathlib import Path

from smalto.draw.ownership import LayoutShapeError, ownership, tmem_placement
from smalto.draw.pictures import register_grid, smem_grid, smem_memory_grid, tmem_grid
from smalto.draw.render import Grid, image_format, save
from smalto.draw.smem import SmemSpecError, implied_swizzle, smem_placement
from smalto.draw.spec import (
    TMEM_LAYOUT_NAMES,
    SpecError,
    layout_name,
    named_register_layouts,
    parse_dtype,
    parse_register_layout,
    parse_shape,
    parse_smem_spec,
    parse_tmem_layout,
    tmem_layout_name,
)

EXIT_OK = 0
EXIT_USAGE = 2


def build_parser(prog: str = "smalto draw") -> argparse.ArgumentParser:
    names = ", ".join(named_register_layouts())
    parser = argparse.ArgumentParser(
        prog=prog,
        description="Draw which thread and register hold each element of an array in a "
        "register layout, where each element of an SMEM ref lands (tiles, swizzled "
        "16-byte chunks, banks), or which TMEM lane and column hold it.",
        epilog=f"Register layout names: {names}, strided[:VEC], splat. TMEM layout names: "
        f"{', '.join(TMEM_LAYOUT_NAMES)} (default: the layout JAX picks for the shape).",
    )
    parser.add_argument(
        "layout",
        nargs="?",
        metavar="LAYOUT",
        help="a layout name or an attribute as it appears in a module, e.g. "
        "'#mosaic_gpu.TiledLayout<...>' (not used with --smem)",
    )
    parser.add_argument("--shape", required=True, help="array shape, e.g. 64x64")
    parser.add_argument(
        "--dtype", default="f32", help="element type: f32 (default), bf16, f16, f8E4M3FN, i8, ..."
    )
    parser.add_argument(
        "-o", dest="output", metavar="OUT", help="picture to write, .png or .svg (default: a "
        "name made from the layout and shape, as PNG)"
    )  # fmt: skip
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
    return parser


def draw_main(argv: list[str]) -> int:
    """Runs ``smalto draw`` on ``argv`` (the arguments after ``draw``); returns the exit code."""
    parser = build_parser()
    try:
        args = parser.parse_args(argv)
    except SystemExit as exit_request:
        code = exit_request.code
        return code if isinstance(code, int) else EXIT_USAGE
    output = args.output or ""
    try:
        grids, default_name = _grids(args)
        output = args.output or default_name
        image_format(output)
        save(grids, output)
    except (SpecError, SmemSpecError, LayoutShapeError, ValueError) as error:
        print(f"smalto draw: error: {error}", file=sys.stderr)
        return EXIT_USAGE
    except OSError as error:
        print(f"smalto draw: error: cannot write '{output}': {error.strerror}", file=sys.stderr)
        return EXIT_USAGE
    print(f"wrote {output}")
    return EXIT_OK


def _grids(args: argparse.Namespace) -> tuple[list[Grid], str]:
    shape = parse_shape(args.shape)
    bitwidth = parse_dtype(args.dtype)
    shape_text = "x".join(map(str, shape))
    if args.smem is not None:
        if args.layout is not None:
            raise SpecError("--smem draws transforms, not a register layout: drop LAYOUT")
        tiling, swizzle = parse_smem_spec(args.smem)
        if swizzle is None:
            swizzle = implied_swizzle(tiling, bitwidth)
        placed = smem_placement(shape, tiling, swizzle, bitwidth)
        tile = "untiled" if tiling is None else "x".join(map(str, tiling))
        name = f"smem_{tile}_sw{swizzle}_{shape_text}.png"
        return [smem_grid(placed, args.dtype), smem_memory_grid(placed, args.dtype)], name
    if args.tmem:
        if args.packing <= 0 or args.packing & (args.packing - 1):
            raise SpecError(f"--packing must be a power of two, got {args.packing}")
        layout = parse_tmem_layout(args.layout, shape, args.packing, args.collective)
        try:
            layout.check_type(shape, bitwidth)
        except ValueError as error:
            raise SpecError(str(error)) from None
        name = tmem_layout_name(layout, shape)
        return [tmem_grid(tmem_placement(layout, shape), name, args.dtype)], _file_name(
            "tmem_" + (args.layout or "inferred"), shape_text
        )
    if args.layout is None:
        raise SpecError("name a LAYOUT to draw (or use --smem / --tmem)")
    register_layout = parse_register_layout(args.layout, shape, bitwidth)
    held = ownership(register_layout, shape)
    name = layout_name(register_layout)
    return [register_grid(held, name, args.dtype)], _file_name(name, shape_text)


def _file_name(name: str, shape_text: str) -> str:
    slug = re.sub(r"[^A-Za-z0-9]+", "_", name).strip("_").lower() or "layout"
    return str(Path(f"{slug}_{shape_text}.png"))
