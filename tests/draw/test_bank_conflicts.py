"""SMEM bank conflicts of register <-> SMEM transfers (``smalto draw --bank-conflicts``).

Three layers, each checked on its own: the banking model on addresses worked out
by hand; the addresses, which are JAX's own emitted arithmetic, against the
placement of elements in SMEM (``smem_placement``, checked against the swizzle's
bit formula in test_draw) and their ownership (checked against JAX's
``thread_idxs``); and whole transfers against wavefront counts worked out by hand
and against JAX's planner, which refuses exactly the transfers with conflicts.
"""

from __future__ import annotations

import json
import math
from pathlib import Path

import numpy as np
import pytest
from jax.experimental.mosaic.gpu import fragmented_array as fa

from smalto.cli.draw import draw_main
from smalto.draw import bank_conflicts
from smalto.draw.access import TransferError, transfer_instructions
from smalto.draw.bank_conflict_pictures import bank_grid, conflict_pictures, worst_instruction
from smalto.draw.banks import lanes_per_phase, warp_request
from smalto.draw.ownership import ownership
from smalto.draw.smem import smem_placement

LANES = np.arange(32)

# --- the banking model, on hand-made addresses ------------------------------------------------


def test_phases_by_access_width() -> None:
    assert [lanes_per_phase(b) for b in (1, 2, 4, 8, 16)] == [32, 32, 32, 16, 8]


@pytest.mark.parametrize(
    ("address", "lane_bytes", "wavefronts", "conflict"),
    [
        (LANES * 4, 4, 1, 1),  # 32 consecutive words: every bank once
        (LANES * 128, 4, 32, 32),  # a column of a 32-word-wide array: all in bank 0
        (np.zeros(32, dtype=int), 4, 1, 1),  # one word for everyone: a broadcast
        (LANES * 8, 4, 2, 2),  # stride 2 words: banks 0, 2, .., 30 twice each
        (LANES * 2, 2, 1, 1),  # 2-byte elements: lanes pair up on 16 words
        (LANES * 8, 8, 2, 1),  # 8 bytes each: 2 half-warp phases of 128 bytes
        (LANES * 256, 8, 32, 16),  # 16 lanes of a phase on banks 0-1: 16 words each
        (LANES * 16, 16, 4, 1),  # 16 bytes each: 4 quarter-warp phases of 128 bytes
        (LANES * 128, 16, 32, 8),  # rows of an unswizzled 64-wide bf16 tile: banks 0-3
        ((LANES % 8) * 16, 16, 4, 1),  # 8 distinct rows, repeated by each phase
    ],
)
def test_wavefronts_by_hand(
    address: np.ndarray, lane_bytes: int, wavefronts: int, conflict: int
) -> None:
    request = warp_request(address, lane_bytes)
    assert request.wavefronts == wavefronts
    assert request.conflict == conflict
    assert request.ideal == len(request.phases)


def test_which_lanes_collide() -> None:
    request = warp_request(LANES * 128, 16)  # lane l: row l of an unswizzled tile
    phase = request.phases[1]
    assert phase.lanes == tuple(range(8, 16)) and phase.wavefronts == 8
    bank, words = phase.worst_bank()
    assert bank == 0 and sorted(lane for w in words for lane in w.lanes) == list(range(8, 16))
    # Each wavefront serves one word per bank; lane 8's 16 bytes are banks 0-3 of wavefront 0.
    first = [w for w in phase.words if w.wavefront == 0]
    assert [w.bank for w in first] == [0, 1, 2, 3] and all(w.lanes == (8,) for w in first)


def test_inactive_lanes_are_not_served() -> None:
    active = LANES < 8  # ldmatrix.x1: only lanes 0-7 give addresses
    request = warp_request(LANES * 16, 16, active)
    assert len(request.phases) == 1 and request.wavefronts == 1


def test_misaligned_access_is_an_error() -> None:
    with pytest.raises(ValueError, match="aligned"):
        warp_request(LANES * 16 + 4, 16)


# --- the addresses: JAX's emitted arithmetic, against placement and ownership -----------------


def _element_at(placed, byte: int) -> tuple[int, ...]:  # noqa: ANN001
    flat = int(np.flatnonzero(placed.byte.reshape(-1) == byte)[0])
    return tuple(int(i) for i in np.unravel_index(flat, placed.shape))


@pytest.mark.parametrize(
    ("layout", "shape", "dtype", "bits", "tiling", "swizzle", "optimized"),
    [
        (fa.WGMMA_LAYOUT, (64, 32), "f32", 32, (8, 32), 128, True),  # a staggered plan
        (fa.WGMMA_LAYOUT, (64, 32), "f32", 32, None, 16, False),
        (fa.WGStridedFragLayout((64, 64), 8), (64, 64), "bf16", 16, None, 16, True),
        (fa.WGMMA_LAYOUT, (64, 128), "i8", 8, (8, 128), 128, True),
    ],
)
def test_each_thread_stores_its_own_elements_where_smem_placement_puts_them(
    layout: fa.FragmentedLayout,
    shape: tuple,
    dtype: str,
    bits: int,
    tiling: tuple | None,
    swizzle: int,
    optimized: bool,
) -> None:
    transfer = transfer_instructions(layout, shape, dtype, tiling, swizzle, optimized=optimized)
    held = ownership(layout, shape)
    placed = smem_placement(shape, tiling, swizzle, bits)
    written = []
    for instruction in transfer.instructions:
        assert instruction.name.startswith("st.shared")
        for thread in range(128):
            start = int(instruction.address[thread])
            for byte in range(start, start + instruction.lane_bytes, max(bits // 8, 1)):
                index = _element_at(placed, byte)
                assert thread in held.owner(index)[0]
                written.append(byte)
    # Every element is written exactly once.
    assert sorted(written) == sorted(placed.byte.reshape(-1).tolist())


def test_stmatrix_rows_cover_the_tile_once() -> None:
    """stmatrix: each active lane gives the address of one 16-byte row of an 8x8 matrix."""
    transfer = transfer_instructions(fa.WGMMA_LAYOUT, (64, 64), "bf16", (8, 64), 128)
    assert transfer.method == "store_tiled" and transfer.plan == "trivial"
    assert [i.name for i in transfer.instructions] == ["stmatrix.x4"] * 4
    rows = sorted(int(a) for i in transfer.instructions for a in i.address)
    assert rows == list(range(0, 64 * 64 * 2, 16))  # 128 threads x 4 = every 16-byte row
    placed = smem_placement((64, 64), (8, 64), 128, 16)
    # Lane l of warp 0's first stmatrix gives row l % 8 of matrix l // 8; JAX groups the
    # 8-column tiles by four, so the matrices are rows 0-7 of columns 0-7, 8-15, 16-23, 24-31.
    first = transfer.instructions[0].address
    for lane in range(32):
        assert _element_at(placed, int(first[lane])) == (lane % 8, 8 * (lane // 8))


# --- whole transfers, by hand and against JAX's planner ----------------------------------------


def test_wgmma_bf16_tile_with_128_byte_swizzle_has_no_conflicts() -> None:
    result = bank_conflicts(fa.WGMMA_LAYOUT, (64, 64), "bf16", (8, 64), 128)
    assert result.instruction_summary() == "4 x stmatrix.x4"
    # Each stmatrix.x4 writes 4 matrices of 8 rows x 16 bytes: 4 phases of 128 bytes;
    # the swizzle puts the 8 rows of a matrix in 8 different groups of 4 banks.
    assert [w.wavefronts for i in result.instructions for w in i.warps] == [4] * 16
    assert result.wavefronts == result.ideal == 64 and result.conflict == 1
    assert not result.refused and np.all(result.element_conflicts() == 1)
    assert "no bank conflicts" in result.text()


@pytest.mark.parametrize("load", [False, True])
def test_the_same_tile_unswizzled_has_8_way_conflicts(load: bool) -> None:
    result = bank_conflicts(fa.WGMMA_LAYOUT, (64, 64), "bf16", (8, 64), 16, load=load)
    # JAX finds no conflict-free plan and refuses the (default) optimized transfer.
    assert "Failed to synthesize a transfer pattern" in result.refused and not result.optimized
    # Unswizzled, the 8 rows of a matrix are 128 bytes apart: all in the same 4 banks, so
    # each phase takes 8 wavefronts, each stmatrix/ldmatrix.x4 4 x 8 = 32 instead of 4.
    name = "ldmatrix.x4" if load else "stmatrix.x4"
    assert result.instruction_summary() == f"4 x {name}"
    assert [w.wavefronts for i in result.instructions for w in i.warps] == [32] * 16
    assert result.conflict == 8 and result.wavefronts == 8 * result.ideal == 8 * 64
    assert np.all(result.element_conflicts() == 8)
    phase = result.instructions[0].warps[0].phases[0]
    bank, words = phase.worst_bank()
    assert bank == 0 and sorted(lane for w in words for lane in w.lanes) == list(range(8))
    assert "8-way bank conflicts, 8.0x the ideal" in result.text()


def test_32_bit_wgmma_tile_staggered_by_jax_and_conflicting_without() -> None:
    # f32 WGMMA: each lane holds pairs (8 bytes), no stmatrix: st.shared.v2, 2 phases of 16
    # lanes = rows 0-3 (4 lanes a row). With a 128-byte swizzle and lanes writing the same
    # tile, rows 0 and 1 collide: lane 0 writes bytes 0-7 (banks 0-1); lane 6 (row 1,
    # columns 4-5) bytes 128 + 16 = 144, chunk 1 of line 1, swizzled to chunk 1 ^ 1 = 0:
    # byte 128, banks 0-1 again. JAX avoids that by staggering lane groups over tiles.
    optimized = bank_conflicts(fa.WGMMA_LAYOUT, (64, 32), "f32", (8, 32), 128)
    assert optimized.plan == "staggered" and optimized.conflict == 1
    assert optimized.instruction_summary() == "8 x st.shared 8 B"
    assert optimized.wavefronts == optimized.ideal == 4 * 8 * 2
    trivial = bank_conflicts(fa.WGMMA_LAYOUT, (64, 32), "f32", (8, 32), 128, optimized=False)
    assert trivial.plan == "trivial" and trivial.conflict == 2
    assert trivial.wavefronts == 2 * trivial.ideal
    bank, words = trivial.instructions[0].warps[0].phases[0].worst_bank()
    assert bank == 0 and sorted(w.lanes[0] for w in words) == [0, 6]


def test_32_bit_untiled_unswizzled_rows_of_128_bytes_conflict_4_ways() -> None:
    # Row r of a 64x32 f32 ref starts at byte 128 r: a half-warp (rows 0-3) hits the same
    # 8 banks 4 times.
    result = bank_conflicts(fa.WGMMA_LAYOUT, (64, 32), "f32", None, 16, optimized=False)
    assert result.conflict == 4 and result.wavefronts == 4 * result.ideal
    request = result.instructions[0].warps[0]
    assert [p.wavefronts for p in request.phases] == [4, 4]
    bank, words = request.phases[0].worst_bank()
    assert sorted(w.lanes[0] for w in words) == [0, 4, 8, 12]


@pytest.mark.parametrize(("vec", "dtype", "name", "count"), [
    (8, "bf16", "st.shared 16 B", 4), (1, "bf16", "st.shared 2 B", 32),
    (2, "f32", "st.shared 8 B", 16),
])  # fmt: skip
def test_strided_layouts_store_contiguously_without_conflicts(
    vec: int, dtype: str, name: str, count: int
) -> None:
    # Thread t stores vec elements at t * vec: a phase covers consecutive bytes.
    layout = fa.WGStridedFragLayout((64, 64), vec)
    result = bank_conflicts(layout, (64, 64), dtype, None, 16)
    assert result.instruction_summary() == f"{count} x {name}"
    assert result.method == "store_untiled" and result.conflict == 1
    bytes_per_lane = vec * (2 if dtype == "bf16" else 4)
    phases = max(1, bytes_per_lane // 4)
    assert result.wavefronts == result.ideal == 4 * count * phases


LAYOUTS = {
    "WGMMA": fa.WGMMA_LAYOUT, "WGMMA_8BIT": fa.WGMMA_LAYOUT_8BIT, "TCGEN05": fa.TCGEN05_LAYOUT,
    "TMEM_NATIVE": fa.TMEM_NATIVE_LAYOUT,
}  # fmt: skip


@pytest.mark.parametrize("name", LAYOUTS)
@pytest.mark.parametrize(("dtype", "bits"), [("bf16", 16), ("f32", 32), ("i8", 8)])
@pytest.mark.parametrize("swizzle", [16, 32, 64, 128])
def test_conflicts_exactly_where_jax_finds_no_plan(
    name: str, dtype: str, bits: int, swizzle: int
) -> None:
    """JAX's planner refuses a transfer iff no plan it knows is conflict-free; the model
    here, on JAX's own addresses, finds conflicts exactly in the transfers it refuses."""
    width = 128 * 16 // bits if bits < 32 else 64
    tile = (8, swizzle * 8 // bits) if swizzle != 16 else (8, 64 * 16 // bits)
    try:
        result = bank_conflicts(LAYOUTS[name], (128, width), dtype, tile, swizzle)
    except TransferError as error:  # not a matter of banks: the layout does not fit the tile
        assert not error.no_plan
        pytest.skip(str(error))
    assert (result.conflict > 1) == bool(result.refused)
    assert (result.wavefronts > result.ideal) == bool(result.refused)


def test_load_of_a_layout_jax_cannot_transfer() -> None:
    with pytest.raises(TransferError, match="UnsupportedTransferError") as error:
        bank_conflicts(fa.WGMMA_TRANSPOSED_LAYOUT, (64, 64), "bf16", (8, 64), 128)
    assert not error.value.no_plan
    with pytest.raises(TransferError, match="untiled, unswizzled"):
        bank_conflicts(fa.WGStridedFragLayout((64, 64), 8), (64, 64), "bf16", (8, 64), 128)


# --- pictures and the command line --------------------------------------------------------------


def test_bank_picture_rows_are_wavefronts() -> None:
    result = bank_conflicts(fa.WGMMA_LAYOUT, (64, 64), "bf16", (8, 64), 16)
    item = worst_instruction(result)
    grid = bank_grid(item)
    assert grid.shape == (32, 32)  # 4 phases x 8 wavefronts, 32 banks
    assert grid.row_lines == [8, 16, 24]
    # Phase 0: lane k's row fills banks 0-3 of wavefront k, the other 28 banks idle.
    assert [(r, a, b, t) for r, a, b, t in grid.spans if r < 8] == [
        (k, 0, 4, str(k)) for k in range(8)
    ]
    assert np.all(grid.colors[:8, 4:] == 1.0)
    clean = bank_grid(worst_instruction(bank_conflicts(fa.WGMMA_LAYOUT, (64, 64), "bf16",
                                                        (8, 64), 128)))  # fmt: skip
    assert clean.shape == (4, 32) and all(b - a == 4 for _, a, b, _ in clean.spans)
    panels = conflict_pictures(result, ownership(fa.WGMMA_LAYOUT, (64, 64)))
    assert len(panels) == 2 and len(panels[1]) == 2  # lane key; the array beside the banks


def test_cli_prints_the_numbers(tmp_path: Path, capsys: pytest.CaptureFixture) -> None:
    out = tmp_path / "banks.png"
    args = ["WGMMA", "--smem", "tile=8x64,swizzle=16", "--bank-conflicts", "--shape", "64x64",
            "--dtype", "bf16", "-o", str(out)]  # fmt: skip
    assert draw_main(args) == 0
    text = capsys.readouterr().out
    assert "store of 64x64 bf16 in WGMMA to SMEM tiled 8x64, no swizzle" in text
    assert "wavefronts per warp: 128 (ideal 16): 8-way bank conflicts" in text
    assert (
        "phase 0 (lanes 0-7): 8 wavefronts; banks 0-3 each serve 8 words (bank 0: lanes 0-7)"
        in text
    )
    assert out.read_bytes().startswith(b"\x89PNG")
    json_args = ["WGMMA", "--smem", "tile=8x64", "--bank-conflicts", "--shape", "64x64",
                 "--dtype", "BF16", "--load", "--json", "--no-picture"]  # fmt: skip
    assert draw_main(json_args) == 0
    numbers = json.loads(capsys.readouterr().out)
    assert numbers["access"] == "load" and numbers["swizzle"] == 128
    assert numbers["wavefronts"] == numbers["ideal_wavefronts"] == 64
    assert numbers["instructions"][0]["name"] == "ldmatrix.x4"
    assert math.prod(numbers["shape"]) == 64 * 64


# --- the transforms that remove the conflicts -----------------------------------------------------


@pytest.mark.parametrize(
    ("layout", "shape", "dtype", "load", "best"),
    [
        (fa.WGMMA_LAYOUT, (64, 64), "bf16", False, ((8, 64), 128)),
        (fa.WGMMA_LAYOUT, (64, 64), "f32", True, ((8, 32), 128)),
        (fa.WGMMA_LAYOUT_8BIT, (128, 128), "i8", False, ((8, 128), 128)),
    ],
)
def test_the_remedy_is_computed_not_guessed(
    layout: fa.TiledLayout, shape: tuple, dtype: str, load: bool, best: tuple
) -> None:
    """Every transform the remedy calls conflict-free is, by the same counter; every other
    candidate conflicts, or JAX refuses or cannot do it; the widest swizzle comes first."""
    from smalto.draw.remedy import candidate_transforms, remedy

    found = remedy(layout, shape, dtype, load=load, arch=(9, 0))
    assert found.best is not None and (found.best.tiling, found.best.swizzle) == best
    free = {(r.tiling, r.swizzle) for r in found.conflict_free}
    bits = {"bf16": 16, "f32": 32, "i8": 8}[dtype]
    for tiling, swizzle in candidate_transforms(shape, bits):
        try:
            result = bank_conflicts(layout, shape, dtype, tiling, swizzle, load=load)
        except TransferError:
            assert (tiling, swizzle) not in free
            continue
        clean = result.wavefronts == result.ideal and not result.refused
        assert clean == ((tiling, swizzle) in free), (tiling, swizzle)
    swizzles = [r.swizzle for r in found.conflict_free]
    assert swizzles == sorted(swizzles, reverse=True)


def test_the_cli_names_the_remedy(capsys: pytest.CaptureFixture) -> None:
    args = ["WGMMA", "--smem", "tile=8x64,swizzle=16", "--bank-conflicts", "--shape", "64x64",
            "--dtype", "bf16", "--no-picture"]  # fmt: skip
    assert draw_main(args) == 0
    text = capsys.readouterr().out
    assert "to remove them: --smem tile=8x64,swizzle=128 (no bank conflicts: 16 wavefronts" in text
    assert draw_main([*args, "--json"]) == 0
    numbers = json.loads(capsys.readouterr().out)
    assert numbers["remedy"]["smem"] == "tile=8x64,swizzle=128"
    assert numbers["remedy"]["conflict_free"] is True
    # Conflict-free already: nothing to remedy.
    clean = ["WGMMA", "--smem", "tile=8x64,swizzle=128", "--bank-conflicts", "--shape", "64x64",
             "--dtype", "bf16", "--no-picture", "--json"]  # fmt: skip
    assert draw_main(clean) == 0
    assert json.loads(capsys.readouterr().out)["remedy"] is None
