"""``smalto draw``: ownership computed from the layout, checked against JAX's own index
functions; SMEM placement against the swizzle's bit formula; pictures produced."""

from __future__ import annotations

import math
from collections.abc import Callable
from pathlib import Path

import numpy as np
import pytest
from jax._src.lib.mlir import ir
from jax._src.lib.mlir.dialects import func
from jax.experimental.mosaic.gpu import fragmented_array as fa
from jax.experimental.mosaic.gpu import tcgen05

from smalto.basics.mlir import make_context
from smalto.cli.draw import draw_main
from smalto.draw import smem_placement, tmem_placement
from smalto.draw.help_names import REGISTER_LAYOUT_NAMES
from smalto.draw.ownership import ownership
from smalto.draw.pictures import atom_extent, register_pictures
from smalto.draw.render import MAX_SIDE, MIN_LABEL_PX, Grid, scene, text_width
from smalto.draw.spec import SpecError, parse_register_layout, parse_smem_spec
from smalto.draw.tmem_pictures import tmem_pictures

THREADS = 128

# --- the oracle: JAX's index functions, emitted as MLIR and evaluated -----------------

_BINARY: dict[str, Callable[[np.ndarray, np.ndarray], np.ndarray]] = {
    "arith.addi": np.add,
    "arith.subi": np.subtract,
    "arith.muli": np.multiply,
    "arith.divui": np.floor_divide,
    "arith.remui": np.remainder,
    "arith.shrui": np.right_shift,
    "arith.andi": np.bitwise_and,
}


def _evaluate(block: ir.Block) -> dict[ir.Value, np.ndarray]:
    """Every result in ``block``, for all 128 threads of a warpgroup at once."""
    thread = np.arange(THREADS, dtype=np.int64)
    values: dict[ir.Value, np.ndarray] = {}
    for op in block.operations:
        name = op.operation.name
        args = [values[v] for v in op.operation.operands]
        if name == "arith.constant":
            result = np.full(THREADS, ir.IntegerAttr(op.attributes["value"]).value)
        elif name in ("gpu.thread_id", "gpu.block_dim"):
            is_x = str(op.attributes["dimension"]) == "#gpu.dim<x>"
            if name == "gpu.thread_id":
                result = thread if is_x else np.zeros(THREADS, dtype=np.int64)
            else:
                result = np.full(THREADS, THREADS if is_x else 1)
        elif name in ("arith.index_cast", "arith.index_castui"):
            result = args[0]
        else:
            result = _BINARY[name](args[0], args[1])
        values[op.operation.results[0]] = result
    return values


def _emitted(emit: Callable[[], list[tuple[ir.Value, ...]]]) -> np.ndarray:
    """Runs ``emit`` in a fresh function; (yielded index, thread, coordinate) values."""
    with make_context(), ir.Location.unknown():
        module = ir.Module.create()
        with ir.InsertionPoint(module.body):
            function = func.FuncOp("oracle", ir.FunctionType.get([], []))
        block = function.add_entry_block()
        with ir.InsertionPoint(block):
            emitted = emit()
        values = _evaluate(block)
        return np.stack([np.stack([values[v] for v in index], axis=-1) for index in emitted])


def jax_tiled_starts(layout: fa.TiledLayout, shape: tuple[int, ...]) -> np.ndarray:
    """(register, thread, dim): the first element of each register (``thread_idxs``)."""
    return _emitted(lambda: list(layout.thread_idxs(shape)))


def jax_strided_starts(layout: fa.WGStridedFragLayout) -> np.ndarray:
    """(register, thread): linear index of each register's first element."""
    return _emitted(lambda: [(v,) for v in layout.linear_thread_idxs()])[..., 0]


# --- register layouts -------------------------------------------------------------

TILED_CASES = [
    (fa.WGMMA_LAYOUT, (64, 64)),
    (fa.WGMMA_LAYOUT, (128, 32)),
    (fa.WGMMA_TRANSPOSED_LAYOUT, (64, 64)),
    (fa.WGMMA_LAYOUT_8BIT, (64, 64)),
    (fa.WGMMA_ROW_LAYOUT, (128,)),
    (fa.WGMMA_COL_LAYOUT, (64,)),
    (fa.TCGEN05_LAYOUT, (128, 32)),
    (fa.TCGEN05_ROW_LAYOUT, (128,)),
    (fa.TMEM_NATIVE_LAYOUT, (128, 16)),
    (fa.TMA_INDICES_LAYOUT, (32,)),
    (fa.WGMMA_LAYOUT, (2, 64, 16)),
]


@pytest.mark.parametrize(("layout", "shape"), TILED_CASES, ids=lambda x: str(x)[:40])
def test_tiled_ownership_matches_thread_idxs(layout: fa.TiledLayout, shape: tuple) -> None:
    held = ownership(layout, shape)
    # Every element is held by as many threads as the layout replicates it.
    assert held.copies == layout.replication_factor
    assert held.threads.shape == (*shape, layout.replication_factor)
    assert held.registers_per_thread == math.prod(layout.registers_shape(shape))
    # The first element of each register of each thread is where JAX's lowering
    # addresses it; the other elements of the vector follow along vector_dim.
    starts = jax_tiled_starts(layout, shape)
    for register in range(starts.shape[0]):
        for thread in range(0, THREADS, 7):
            index = tuple(int(i) for i in starts[register, thread])
            threads, reg, slot = held.owner(index)
            assert thread in threads
            assert (reg, slot) == (register, 0)


@pytest.mark.parametrize(("shape", "vec"), [((64, 64), 8), ((128, 4), 2), ((256,), 1)])
def test_strided_ownership_matches_linear_thread_idxs(shape: tuple, vec: int) -> None:
    layout = fa.WGStridedFragLayout(shape, vec)
    held = ownership(layout, shape)
    assert held.copies == 1
    starts = jax_strided_starts(layout)
    for register in range(starts.shape[0]):
        for thread in range(THREADS):
            for k in range(vec):
                index = np.unravel_index(int(starts[register, thread]) + k, shape)
                assert held.owner(tuple(int(i) for i in index)) == ((thread,), register, k)


def test_wgmma_matches_the_ptx_fragment_picture() -> None:
    # PTX's wgmma 64xN D fragment: row r of warp w's 16 rows, pairs of columns per lane.
    held = ownership(fa.WGMMA_LAYOUT, (64, 16))
    assert held.owner((0, 0)) == ((0,), 0, 0)
    assert held.owner((0, 1)) == ((0,), 0, 1)
    assert held.owner((1, 2)) == ((5,), 0, 0)
    assert held.owner((8, 0)) == ((0,), 1, 0)
    assert held.owner((0, 8)) == ((0,), 2, 0)
    assert held.owner((16, 0)) == ((32,), 0, 0)
    assert held.owner((63, 15)) == ((127,), 3, 1)


def test_replicated_dims_show_every_holder() -> None:
    row = ownership(fa.WGMMA_ROW_LAYOUT, (64,))
    assert row.owner((0,))[0] == (0, 1, 2, 3)  # four lanes share a row
    assert row.owner((8,)) == ((0, 1, 2, 3), 1, 0)
    col = ownership(fa.WGMMA_COL_LAYOUT, (16,))
    assert col.copies == 32 and len({int(t) // 32 for t in col.threads[0]}) == 4
    splat = ownership(fa.WGSplatFragLayout((4, 8)), (4, 8))
    assert splat.copies == 128 and splat.owner((3, 7)) == (tuple(range(128)), 0, 0)


def test_tmem_placement() -> None:
    default = tmem_placement(tcgen05.tmem_default_layout(1), (128, 64))
    assert default.columns == 64 == tcgen05.tmem_default_layout(1).cols_in_shape((128, 64), 32)
    assert int(default.lane[5, 9, 0]) == 5 and int(default.column[5, 9]) == 9
    packed = tmem_placement(tcgen05.tmem_default_layout(2), (128, 64))
    assert packed.columns == 32 and packed.packing == 2
    assert (int(packed.column[3, 7]), int(packed.slot[3, 7])) == (3, 1)
    half = tmem_placement(tcgen05.tmem_half_lane_layout(64), (64, 64))
    assert half.columns == 32
    # Rows 0..15 use lanes 0..15 for the left half of the columns and lanes 16..31
    # for the right half; rows 16..31 go to the next sub-partition.
    assert (int(half.lane[3, 5, 0]), int(half.column[3, 5])) == (3, 5)
    assert (int(half.lane[3, 40, 0]), int(half.column[3, 40])) == (19, 8)
    assert int(half.lane[20, 0, 0]) == 36


# --- SMEM ---------------------------------------------------------------------------


def _swizzle_bits(byte: np.ndarray, swizzle: int) -> np.ndarray:
    """The TMA swizzle as bit surgery: bits [4, 4+k) ^= bits [7, 7+k), k = log2(swizzle/16)."""
    bits = int(math.log2(swizzle // 16))
    mask = (1 << bits) - 1
    return byte ^ (((byte >> 7) & mask) << 4)


@pytest.mark.parametrize("swizzle", [32, 64, 128])
def test_smem_swizzle_matches_bit_formula_and_is_bank_conflict_free(swizzle: int) -> None:
    columns = swizzle // 2  # bf16
    placed = smem_placement((64, 2 * columns), (8, columns), swizzle, 16)
    assert np.array_equal(placed.byte, _swizzle_bits(placed.unswizzled_byte, swizzle))
    # A tile is 8 rows of `swizzle` bytes, stored contiguously, tiles in row-major order.
    assert int(placed.tile[8, columns]) == 3
    assert int(placed.unswizzled_byte[8, columns]) == 3 * 8 * swizzle
    # The point of swizzling: the same 16-byte column of 8 consecutive rows lands in
    # 8 different groups of 4 banks, so reading it (as ldmatrix does) has no conflicts.
    assert len({int(placed.bank[r, 0]) // 4 for r in range(8)}) == 8
    # Every byte of the buffer is used exactly once.
    assert len(np.unique(placed.byte)) == placed.byte.size


def test_smem_128b_swizzle_chunk_xor_row() -> None:
    placed = smem_placement((8, 64), (8, 64), 128, 16)
    for row in range(8):
        for chunk in range(8):
            assert int(placed.chunk[row, 8 * chunk]) % 8 == chunk ^ row
    unswizzled = smem_placement((8, 64), (8, 64), 16, 16)
    assert len({int(unswizzled.bank[r, 0]) for r in range(8)}) == 1  # an 8-way conflict


def test_smem_untiled_is_row_major() -> None:
    placed = smem_placement((4, 32), None, 16, 32)
    assert int(placed.byte[2, 3]) == (2 * 32 + 3) * 4
    assert int(placed.bank[0, 31]) == 31 and int(placed.bank[1, 0]) == 0


@pytest.mark.parametrize(
    ("spec", "message"),
    [("tile=8x32,swizzle=128", "minor tile"), ("swizzle=128", "untiled ref's minor dimension")],
)
def test_smem_bad_specs(spec: str, message: str) -> None:
    tiling, swizzle = parse_smem_spec(spec)
    with pytest.raises(ValueError, match=message):
        smem_placement((64, 32), tiling, swizzle or 16, 16)


def test_smem_swizzle_alone_swizzles_the_whole_ref_as_one_tile() -> None:
    """jax 0.12 accepts ``[swizzle<S>]`` alone: the ref is one tile, swizzled."""
    alone = smem_placement((8, 64), None, 128, 16)
    one_tile = smem_placement((8, 64), (8, 64), 128, 16)
    assert np.array_equal(alone.byte, one_tile.byte)
    assert len({int(alone.bank[r, 0]) for r in range(8)}) == 8  # no bank conflict down a column


def test_smem_tile_wider_than_the_swizzle() -> None:
    """A minor tile that is a multiple of the swizzle width is valid in jax 0.12."""
    placed = smem_placement((8, 128), (8, 128), 128, 16)  # 256-byte rows, 128-byte swizzle
    assert sorted(int(b) for b in placed.byte.ravel()[::1]) == list(range(0, 8 * 256, 2))


# --- names and attributes ------------------------------------------------------------


def test_layout_names_and_attributes_parse() -> None:
    assert parse_register_layout("WGMMA", (64, 64), 16) == fa.WGMMA_LAYOUT
    assert parse_register_layout("wgmma_row_layout", (64,), 32) == fa.WGMMA_ROW_LAYOUT
    assert parse_register_layout("TCGEN05", (128, 8), 32) == fa.TCGEN05_LAYOUT
    assert parse_register_layout("strided:8", (64, 64), 16) == fa.WGStridedFragLayout((64, 64), 8)
    assert parse_register_layout("strided", (64, 64), 16) == fa.WGStridedFragLayout((64, 64), 4)
    assert parse_register_layout("splat", (64,), 32) == fa.WGSplatFragLayout((64,))
    attribute = (
        "#mosaic_gpu.TiledLayout<[[64, 8], [16, 8], [8, 8], [2]], warp_dims = [-7], "
        "lane_dims = [-3, -2], vector_dim = -1>"
    )
    assert parse_register_layout(attribute, (64, 64), 16) == fa.WGMMA_LAYOUT
    with pytest.raises(ValueError, match="unknown layout 'WGMMMA' \\(did you mean WGMMA\\?\\)"):
        parse_register_layout("WGMMMA", (64, 64), 16)
    with pytest.raises(SpecError, match="cannot parse"):
        parse_register_layout("#mosaic_gpu.TiledLayout<[[64", (64, 64), 16)


# --- pictures ---------------------------------------------------------------------------


@pytest.mark.parametrize(
    "args",
    [
        ["WGMMA", "--shape", "64x16", "--dtype", "bf16", "-o", "{dir}/wgmma.png"],
        ["WGMMA_ROW", "--shape", "64", "-o", "{dir}/row.svg"],
        ["strided:4", "--shape", "16x64", "-o", "{dir}/strided.png"],
        ["--smem", "tile=8x64,swizzle=128", "--shape", "16x128", "--dtype", "bf16",
         "-o", "{dir}/smem.svg"],
        ["--tmem", "--shape", "64x16", "-o", "{dir}/tmem.png"],
    ],
    ids=["wgmma-png", "row-svg", "strided-png", "smem-svg", "tmem-png"],
)  # fmt: skip
def test_pictures_are_written(args: list[str], tmp_path: Path) -> None:
    args = [a.format(dir=tmp_path) for a in args]
    assert draw_main(args) == 0
    out = Path(args[-1])
    data = out.read_bytes()
    if out.suffix == ".png":
        assert data.startswith(b"\x89PNG\r\n\x1a\n")
    else:
        assert b"<svg" in data[:2000]


def test_large_shapes_draw_a_window(tmp_path: Path, capsys: pytest.CaptureFixture) -> None:
    out = tmp_path / "big.svg"
    assert draw_main(["WGMMA", "--shape", "128x256", "-o", str(out)]) == 0
    # The title says which part is shown (SVG text is stamped as glyph outlines,
    # so read the title from the picture's own metadata instead).
    from smalto.draw.pictures import register_grid

    grid = register_grid(ownership(fa.WGMMA_LAYOUT, (128, 256)), "WGMMA", "f32")
    assert grid.shape == (64, 64)
    assert "rows 0..63 of 128, columns 0..63 of 256" in grid.title


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["WGMMA", "--shape", "60x64", "-o", "x.png"], "does not divide"),
        (["NOPE", "--shape", "64x64", "-o", "x.png"], "unknown layout"),
        (["WGMMA", "--shape", "64x64", "-o", "x.gif"], ".png or .svg"),
        (["--smem", "tile=8x32,swizzle=128", "--shape", "64x64", "--dtype", "bf16"], "minor"),
        (["WGMMA", "--shape", "64xq"], "bad shape"),
    ],
)
def test_usage_errors(args: list[str], message: str, capsys: pytest.CaptureFixture) -> None:
    assert draw_main(args) == 2
    assert message in capsys.readouterr().err


# --- pictures read at a glance (issue 19) ----------------------------------------------------


def _png_size(data: bytes) -> tuple[int, int]:
    assert data.startswith(b"\x89PNG\r\n\x1a\n")
    return int.from_bytes(data[16:20], "big"), int.from_bytes(data[20:24], "big")


def _panels(items: list) -> list[Grid]:
    return [g for item in items for g in (item if isinstance(item, tuple) else (item,))]


PICTURE_ARGS = [
    # The examples (6192x3733, 3120x10848, 3216x7189 before) and large arrays.
    ["WGMMA", "--shape", "64x64", "--dtype", "bf16"],
    ["--smem", "tile=8x64,swizzle=128", "--shape", "64x128", "--dtype", "bf16"],
    ["--tmem", "--shape", "128x64"],
    ["WGMMA", "--shape", "1024x1024", "--dtype", "bf16"],
    ["strided:1", "--shape", "128x128"],
    ["TCGEN05", "--shape", "256x128", "--dtype", "bf16", "--thread", "5"],
    ["WGMMA_ROW", "--shape", "1024"],
    ["WGMMA", "--shape", "4x64x64"],
    ["--smem", "tile=8x64,swizzle=128", "--shape", "512x512", "--dtype", "bf16"],
    ["--tmem", "--shape", "128x512"],
    ["WGMMA", "--smem", "tile=8x64,swizzle=16", "--bank-conflicts", "--shape", "256x256",
     "--dtype", "bf16"],
]  # fmt: skip


@pytest.mark.parametrize("args", PICTURE_ARGS, ids=lambda a: "_".join(a)[:40])
def test_pictures_fit_in_2400_pixels(args: list[str], tmp_path: Path) -> None:
    out = tmp_path / "picture.png"
    assert draw_main([*args, "-o", str(out)]) == 0
    width, height = _png_size(out.read_bytes())
    assert max(width, height) <= MAX_SIDE == 2400
    assert min(width, height) >= 300  # a picture, not a thumbnail


def test_svg_is_small(tmp_path: Path) -> None:
    out = tmp_path / "wgmma.svg"
    assert draw_main(["WGMMA", "--shape", "64x64", "--dtype", "bf16", "-o", str(out)]) == 0
    assert out.stat().st_size < 700_000  # 4.8 MB before: the array is one image, labels few


def _text_px(items: list) -> list[float]:
    """The em size, in pixels, of every text of the picture (titles, ticks, labels)."""
    return [text.px for text in scene(items).texts]


@pytest.mark.parametrize(
    ("layout", "shape", "dtype"),
    [(fa.WGMMA_LAYOUT, (64, 64), "bf16"), (fa.WGStridedFragLayout((64, 64), 8), (64, 64), "bf16"),
     (fa.WGMMA_TRANSPOSED_LAYOUT, (64, 64), "bf16"), (fa.WGMMA_ROW_LAYOUT, (128,), "f32"),
     (fa.WGMMA_LAYOUT, (256, 256), "f32")],
)  # fmt: skip
def test_text_is_at_least_10_pixels_and_labels_fit_their_cells(
    layout: object, shape: tuple, dtype: str
) -> None:
    items = register_pictures(ownership(layout, shape), layout, "L", dtype)
    assert min(_text_px(items)) >= 10
    labelled = [g for g in _panels(items) if g.spans]
    assert labelled, "some panel carries the thread/register labels"
    for grid in labelled:
        assert grid.label_px >= MIN_LABEL_PX >= 10
        for _, start, stop, text in grid.spans:
            assert text_width(text, grid.label_px) <= (stop - start) * grid.cell_px[0]


def test_large_arrays_are_a_colour_map_beside_a_labelled_atom() -> None:
    held = ownership(fa.WGMMA_LAYOUT, (64, 64))
    key, (overview, atom) = register_pictures(held, fa.WGMMA_LAYOUT, "WGMMA", "bf16")
    assert key.shape == (1, 32)
    assert overview.shape == (64, 64)  # the whole array
    assert all(text in ("w0", "w1", "w2", "w3") for *_, text in overview.spans)
    # The atom is WGMMA's first tile, (64, 8): every thread, both registers of a tile.
    assert atom_extent(fa.WGMMA_LAYOUT, (64, 64))[:2] == (64, 8) == atom.shape
    labels = {text for *_, text in atom.spans}
    assert {"T0:R0", "T0:R1", "T127:R1"} <= labels
    assert len(labels) == 128 * 2  # one label per register vector (a pair of elements)
    # A small array is drawn once, labelled.
    small = register_pictures(ownership(fa.WGMMA_LAYOUT, (64, 8)), fa.WGMMA_LAYOUT, "W", "f32")
    assert len(small) == 2 and small[1].shape == (64, 8) and len(small[1].spans) == 256


def _colour(grid: Grid, cell: tuple[int, int]) -> tuple[float, ...]:
    return tuple(np.round(grid.colors[cell], 6))


def test_cells_are_coloured_by_lane_and_outlined_by_warp() -> None:
    held = ownership(fa.WGMMA_LAYOUT, (64, 64))
    _, (overview, _) = register_pictures(held, fa.WGMMA_LAYOUT, "WGMMA", "bf16")
    # Element (0, 0) is lane 0 of warp 0, (16, 0) lane 0 of warp 1: the same colour.
    assert held.owner((0, 0))[0] == (0,) and held.owner((16, 0))[0] == (32,)
    assert _colour(overview, (0, 0)) == _colour(overview, (16, 0))
    # The 32 lanes of warp 0 (rows 0-7 x pairs of columns 0-7) have 32 different colours.
    lanes = {
        int(held.threads[r, c, 0]): _colour(overview, (r, c)) for r in range(8) for c in range(8)
    }
    assert sorted(lanes) == list(range(32)) and len(set(lanes.values())) == 32
    # Heavy outlines follow the warps.
    assert np.array_equal(overview.regions, held.threads[..., 0] // 32)
    # Strided layouts look different: lane l holds 8 consecutive elements of a row.
    strided = ownership(fa.WGStridedFragLayout((64, 64), 8), (64, 64))
    s_items = register_pictures(strided, fa.WGStridedFragLayout((64, 64), 8), "s", "bf16")
    assert not np.array_equal(_panels(s_items)[1].colors, overview.colors)


def test_thread_highlight(tmp_path: Path, capsys: pytest.CaptureFixture) -> None:
    held = ownership(fa.WGMMA_LAYOUT, (64, 64))
    items = register_pictures(held, fa.WGMMA_LAYOUT, "WGMMA", "bf16", thread=37)
    overview, atom = _panels(items)[1:]
    mine = np.any(held.threads == 37, axis=-1)
    assert mine.sum() == 32  # 16 registers of 2
    assert np.array_equal(overview.marks, mine)
    assert np.array_equal(atom.marks, mine[:64, :8])
    # The others fade towards white; thread 37's keep their lane colour.
    plain = _panels(register_pictures(held, fa.WGMMA_LAYOUT, "WGMMA", "bf16"))[1]
    assert np.allclose(overview.colors[mine], plain.colors[mine])
    assert np.all(overview.colors[~mine].mean(axis=-1) > plain.colors[~mine].mean(axis=-1))
    # The command line lists what the thread holds, register by register.
    out = tmp_path / "t.png"
    args = ["WGMMA", "--shape", "64x64", "--dtype", "bf16", "--thread", "37", "-o", str(out)]
    assert draw_main(args) == 0
    text = capsys.readouterr().out
    assert "thread 37 (warp 1, lane 5) holds:" in text
    assert "  R0: (17, 2), (17, 3)" in text  # row 16 + 5 // 4, columns 2 * (5 % 4) + 0..1
    warp = register_pictures(held, fa.WGMMA_LAYOUT, "WGMMA", "bf16", warp=2)
    assert np.array_equal(_panels(warp)[1].marks, held.threads[..., 0] // 32 == 2)


def test_tmem_layouts_that_differ_look_different() -> None:
    def colors(layout: tcgen05.TMEMLayout, shape: tuple) -> list[np.ndarray]:
        items = tmem_pictures(tmem_placement(layout, shape), "t", "f32")
        return [g.colors for g in _panels(items)[1:]]

    half = colors(tcgen05.tmem_half_lane_layout(64), (64, 64))
    m64 = colors(tcgen05.tmem_m64_collective_layout(64), (64, 64))
    assert all(a.shape == b.shape for a, b in zip(half, m64, strict=True))
    assert all(not np.array_equal(a, b) for a, b in zip(half, m64, strict=True))
    # default puts row r in lane r; half_lane puts rows 0-15 in lanes 0-15 and 16-31.
    default = colors(tcgen05.tmem_default_layout(1), (128, 32))
    wide = colors(tcgen05.tmem_half_lane_layout(64), (64, 64))
    assert not np.array_equal(default[1], wide[1])  # TMEM itself, 128 lanes x 32 columns
    tmem = wide[1]
    assert np.allclose(tmem[0, 0], tmem[16, 0])  # lanes 0 and 16 both hold row 0
    assert not np.allclose(default[1][0, 0], default[1][16, 0])
    # The array panel outlines lane quarters: half_lane's are 16 rows high.
    items = tmem_pictures(tmem_placement(tcgen05.tmem_half_lane_layout(64), (64, 64)), "t", "f32")
    array = _panels(items)[1]
    assert np.array_equal(array.regions[:, 0], np.arange(64) // 16)


def test_register_layout_names_are_smaltos_names_of_every_jax_layout() -> None:
    """``--help`` lists the names smalto's messages use (``hw.names``), and every named
    tiled layout of JAX's ``fragmented_array`` has one of them."""
    from smalto.hw.names import REGISTER_LAYOUTS

    assert REGISTER_LAYOUT_NAMES == tuple(REGISTER_LAYOUTS)
    for attribute in dir(fa):
        value = getattr(fa, attribute)
        if "_LAYOUT" in attribute and isinstance(value, fa.TiledLayout):
            assert value in REGISTER_LAYOUTS.values(), attribute


def test_draw_parses_arguments_without_jax() -> None:
    """``smalto.cli.draw`` reads its arguments and prints --help before importing JAX (the
    package's own ``smalto/__init__`` is bypassed: it loads the inference engine)."""
    import subprocess
    import sys

    import smalto

    code = (
        "import sys, types\n"
        f"package = types.ModuleType('smalto'); package.__path__ = [{smalto.__path__[0]!r}]\n"
        "sys.modules['smalto'] = package\n"
        "from smalto.cli.draw import draw_main\n"
        "assert draw_main(['--help']) == 0\n"
        "assert draw_main(['WGMMA', '--shape', '64x64', '--thread', '300']) == 2\n"
        "assert not [m for m in sys.modules if m == 'jax' or m.startswith('jax.')]\n"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    assert "--bank-conflicts" in done.stdout and "WGMMA_TRANSPOSED" in done.stdout
    assert "--thread must be 0-127" in done.stderr


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["WGMMA", "--shape", "64x64", "--thread", "128"], "--thread must be 0-127"),
        (["WGMMA", "--shape", "64x64", "--thread", "1", "--warp", "1"], "choose one"),
        (["WGMMA", "--shape", "64x64", "--bank-conflicts"], "needs a register LAYOUT and --smem"),
        (["WGMMA", "--shape", "64x64", "--load"], "go with --bank-conflicts"),
        (["WGMMA", "--smem", "tile=8x64", "--shape", "64x64"], "add --bank-conflicts"),
        (["WGMMA_TRANSPOSED", "--smem", "tile=8x64", "--bank-conflicts", "--shape", "64x64",
          "--dtype", "bf16"], "UnsupportedTransferError"),
    ],
)  # fmt: skip
def test_new_usage_errors(args: list[str], message: str, capsys: pytest.CaptureFixture) -> None:
    assert draw_main(args) == 2
    err = capsys.readouterr().err
    assert message in err and "Traceback" not in err


def test_tmem_thread_highlights_its_lane() -> None:
    placed = tmem_placement(tcgen05.tmem_half_lane_layout(64), (64, 64))
    items = tmem_pictures(placed, "t", "f32", thread=20)
    array, tmem, labelled = _panels(items)[1:]
    # Thread 20 is lane 20 of quarter 0: half_lane puts row 4's right half there.
    rows, cols = np.nonzero(array.marks)
    assert set(rows.tolist()) == {4} and set(cols.tolist()) == set(range(32, 64))
    assert np.array_equal(np.nonzero(tmem.marks)[0], np.full(tmem.marks.sum(), 20))
    assert labelled.marks[20].all() and labelled.marks.sum() == labelled.marks.shape[1]


def test_smem_picture_shows_the_swizzle_as_colours() -> None:
    from smalto.draw.smem_pictures import smem_pictures

    swizzled = _panels(smem_pictures(smem_placement((64, 128), (8, 64), 128, 16), "bf16"))
    plain = _panels(smem_pictures(smem_placement((64, 128), (8, 64), 16, 16), "bf16"))
    # Down the first column of a tile, 8 rows land in 8 different bank groups (colours)...
    assert len({_colour(swizzled[0], (r, 0)) for r in range(8)}) == 8
    # ... and without the swizzle all in the same one.
    assert len({_colour(plain[0], (r, 0)) for r in range(8)}) == 1
    assert np.array_equal(swizzled[0].regions, smem_placement((64, 128), (8, 64), 128, 16).tile)
