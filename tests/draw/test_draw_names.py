"""``smalto draw`` reads every layout name smalto prints and Pallas' spellings: the reader
(``draw.layout_names.read_layout``) is the inverse of the namer (``hw.names.describe_value``
and ``hw.names.pallas_layout``)."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from jax.experimental.mosaic.gpu import fragmented_array as fa
from jax.experimental.mosaic.gpu import tcgen05

from smalto.cli.draw import draw_main
from smalto.draw.layout_names import LayoutNameError, read_layout
from smalto.hw.layouts import keep_dims
from smalto.hw.names import REGISTER_LAYOUTS, describe_value, pallas_layout
from smalto.hw.values import Const, Reg, Smem, Tmem


def _register_values() -> list[tuple[Const, tuple[int, ...]]]:
    """A value of every kind of register name, each with a shape it fits."""
    values: list[tuple[fa.TiledLayout, tuple[int, ...]]] = []
    for layout in REGISTER_LAYOUTS.values():
        values.append((layout, layout.base_tile_shape))
        if len(layout.base_tile_shape) == 2:
            for axis in (0, 1):
                reduced = layout.reduce((axis,))
                values.append((reduced, reduced.base_tile_shape))
                kept = keep_dims(layout, axis)
                values.append((kept, kept.base_tile_shape))
    values.append((tcgen05.fa_m64_collective_layout(128), (64, 128)))
    values.append((tcgen05.tmem_m64_collective_layout(128).as_tiled_layout(), (64, 128)))
    for vector in (2, 4, 8):
        values.append((fa.tmem_native_layout(vector), (128, 8 * vector)))
    values.append((tcgen05.tmem_half_lane_layout(64).as_tiled_layout(), (64, 64)))
    values.append((tcgen05.tmem_half_lane_layout(64, 2).as_tiled_layout(), (64, 64)))
    # Layouts without a name: the compact form, with and without replicated dims.
    wgmma = fa.WGMMA_LAYOUT
    values.append(
        (fa.TiledLayout(wgmma.tiling, wgmma.warp_dims, (-2, -3), wgmma.vector_dim), (64, 8))
    )
    row = fa.WGMMA_ROW_LAYOUT
    values.append((fa.TiledLayout(row.tiling, row.warp_dims, (fa.Replicated(4), -2), -1), (64,)))
    found: list[tuple[Const, tuple[int, ...]]] = [(Reg(lay), shape) for lay, shape in values]
    found.append((Reg(fa.WGSplatFragLayout((64, 64))), (64, 64)))
    for vec in (1, 2, 4, 8):
        found.append((Reg(fa.WGStridedFragLayout((64, 64), vec)), (64, 64)))
    return found


def _smem_values() -> list[tuple[Const, tuple[int, ...]]]:
    shape = (64, 128)
    return [
        (Smem(None, None), shape),
        (Smem(None, 128), shape),
        (Smem((8, 64), None), shape),
        (Smem((8, 64), 128), shape),
        (Smem((8, 32), 64), shape),
        (Smem((64,), None), shape),
    ]


def _tmem_values() -> list[tuple[Const, tuple[int, ...]]]:
    values: list[tuple[tcgen05.TMEMLayout, tuple[int, ...]]] = []
    for packing in (1, 2, 4):
        values.append((tcgen05.tmem_default_layout(packing), (128, 64)))
        values.append((tcgen05.tmem_half_lane_layout(64, packing), (64, 64)))
        values.append((tcgen05.tmem_m64_collective_layout(64, packing), (64, 64)))
    values.append((tcgen05.scales_layout(), (128, 4)))
    values.append((tcgen05.b_scales_m64_collective_layout(), (256, 4)))
    values.append((tcgen05.sparse_meta_layout(), (128, 16)))
    # 16 elements to a column: no builder packs that many, so it has no name but the compact form.
    tiling = fa.Tiling(((128, 16), (32, 16)))
    values.append((tcgen05.TMEMLayout(tiling, (-4,), (-2,), -1), (128, 64)))
    return [(Tmem(layout), shape) for layout, shape in values]


ALL_VALUES = _register_values() + _smem_values() + _tmem_values()


@pytest.mark.parametrize(
    ("value", "shape"), ALL_VALUES, ids=[describe_value(v) for v, _ in ALL_VALUES]
)
def test_every_name_smalto_prints_reads_back_as_its_layout(value: Const, shape: tuple) -> None:
    name = describe_value(value)
    read = read_layout(name, shape, 16)
    assert read == value, f"{name!r} read as {describe_value(read)!r}"
    assert describe_value(read) == name


def test_the_round_trip_covers_every_kind_of_name() -> None:
    """Each form ``describe_value`` can print is among the names read back above."""
    names = [describe_value(v) for v, _ in ALL_VALUES]
    kinds = {
        "named": r"[A-Z0-9_]+",
        "parameter": r"[A-Z0-9_]+\(\d+\)",
        "reduction": r"[A-Z0-9_]+\.reduce\(\d\)",
        "keepdims": r".+ keepdims",
        "TMEM_NATIVE kind": r"TMEM_NATIVE [a-z_]+( \(packing \d\))?",
        "compact": r"tiled \(.*",
        "compact replicated": r"tiled .*×\d.*",
        "splat": r"splat",
        "strided": r"strided ×\d",
        "untiled": r"untiled",
        "untiled swizzled": r"untiled \+ swizzle \d+",
        "tiled unswizzled": r"tiled [\d×]+, no swizzle",
        "tiled swizzled": r"tiled [\d×]+ \+ swizzle \d+",
        "TMEM": r"TMEM [a-z_]+",
        "TMEM packed": r"TMEM [a-z_]+ \(packing \d\)",
        "TMEM compact": r"TMEM tiled .*",
    }
    for kind, pattern in kinds.items():
        assert any(re.fullmatch(pattern, n) for n in names), kind


@pytest.mark.parametrize(
    ("spelling", "shape", "expected"),
    [
        ("plgpu.Layout.WGMMA", (64, 64), Reg(fa.WGMMA_LAYOUT)),
        ("Layout.WGMMA.reduce(1)", (64,), Reg(fa.WGMMA_ROW_LAYOUT)),
        ("WGMMA.reduce(1)", (64,), Reg(fa.WGMMA_ROW_LAYOUT)),
        ("plgpu.Layout.WGMMA.reduce(0)", (8,), Reg(fa.WGMMA_COL_LAYOUT)),
        ("plgpu.Layout.TCGEN05.reduce(1)", (128,), Reg(fa.TCGEN05_ROW_LAYOUT)),
        ("plgpu.Layout.WGMMA_8BIT", (64, 64), Reg(fa.WGMMA_LAYOUT_8BIT)),
        ("plgpu.Layout._WGMMA_ACC_32BIT", (64, 64), Reg(fa.WGMMA_LAYOUT_ACC_32BIT)),
        ("plgpu.Layout.TCGEN05_TMEM_NATIVE", (128, 8), Reg(fa.TMEM_NATIVE_LAYOUT)),
        ("plgpu.Layout.TCGEN05_TMEM_NATIVE(8)", (128, 64), Reg(fa.tmem_native_layout(8))),
        ("plgpu.Layout.TCGEN05_M64_COLLECTIVE(128)", (64, 128),
         Reg(tcgen05.fa_m64_collective_layout(128))),
        ("plgpu.Layout.WG_SPLAT", (64, 64), Reg(fa.WGSplatFragLayout((64, 64)))),
        ("plgpu.Layout.WG_STRIDED((64, 64), vec_size=2)", (64, 64),
         Reg(fa.WGStridedFragLayout((64, 64), 2))),
        ("plgpu.Layout.TMA_INDICES", (16,), Reg(fa.TMA_INDICES_LAYOUT)),
        ("plgpu.TMEMLayout.M64_COLLECTIVE_LAYOUT(128)", (64, 128),
         Tmem(tcgen05.tmem_m64_collective_layout(128))),
        ("jax.experimental.pallas.mosaic_gpu.Layout.WGMMA_TRANSPOSED", (64, 64),
         Reg(fa.WGMMA_TRANSPOSED_LAYOUT)),
    ],
)  # fmt: skip
def test_pallas_spellings(spelling: str, shape: tuple, expected: Const) -> None:
    assert read_layout(spelling, shape, 16) == expected


# The layouts Pallas has a spelling for (keep-dims layouts and unnamed ones have none).
SPELLED = [(v, s, pallas_layout(v)) for v, s in _register_values() if pallas_layout(v) is not None]


@pytest.mark.parametrize(("value", "shape", "spelling"), SPELLED, ids=[s for *_, s in SPELLED])
def test_the_pallas_spelling_smalto_suggests_reads_back(
    value: Reg, shape: tuple, spelling: str
) -> None:
    """What ``pallas_layout`` writes (the suggestions' Pallas code) is read as the layout."""
    assert len(SPELLED) >= 20
    assert read_layout(spelling, shape, 16) == value, spelling


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("WGMMMA", r"did you mean WGMMA\?"),
        ("plgpu.Layout.NOPE", "unknown layout"),
        ("TMEM quarter_lane", "unknown TMEM layout"),
        ("tiled 8×64 + swizzle 96", "Swizzle 96 is not supported"),
        ("plgpu.Layout.WGMMA.reduce(x)", "not a literal"),
        ("__import__('os').system('true')", "unknown layout"),  # read, never run
    ],
)
def test_names_that_name_nothing(text: str, message: str) -> None:
    with pytest.raises(LayoutNameError, match=message):
        read_layout(text, (64, 64), 16)


@pytest.mark.parametrize(
    ("layout", "shape", "title"),
    [
        ("WGMMA_ROW keepdims", "64x1", "WGMMA_ROW keepdims: 64x1 f32"),
        ("plgpu.Layout.WGMMA.reduce(1)", "64", "WGMMA_ROW: 64 f32"),
        ("tiled 8×64 + swizzle 128", "64x128", "SMEM 64x128 bf16, tile 8x64, 128-byte swizzle"),
        ("TMEM half_lane", "64x64", "TMEM half_lane: 64x64 bf16 in TMEM"),
    ],
)
def test_draw_takes_the_names_smalto_prints(
    layout: str, shape: str, title: str, tmp_path: Path
) -> None:
    from smalto.cli.draw import build_parser, panels_to_draw

    dtype = "f32" if "f32" in title else "bf16"
    args = build_parser().parse_args([layout, "--shape", shape, "--dtype", dtype])
    panels, _, _ = panels_to_draw(args)
    titles = [g.title for item in panels for g in (item if isinstance(item, tuple) else (item,))]
    assert any(t.startswith(title) for t in titles), titles
    out = tmp_path / "p.png"
    assert draw_main([layout, "--shape", shape, "--dtype", dtype, "-o", str(out)]) == 0
    assert out.stat().st_size > 0
