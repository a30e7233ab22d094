"""Whether the lowering's transfer schedule starts, decided on plain tuples.

The lowering moves a tiled register value to or from a ref with
``FragmentedArray.transfer_tiled`` (jax 0.12.0.1). Before its first step that
generator decides, from the ref's shape and strides alone, whether the transfer
can be scheduled at all: whether the ``ldmatrix``/``stmatrix`` path applies,
whether the vectors' strides fit, and whether a plan exists (JAX's own
``plan_tiled_transfer`` for SMEM; for GMEM, ``plan_gmem_transfer``'s
coalescing, which ``hw.coalescing`` judges without numpy; JAX's SMEM bank plan,
which ``hw.bank_plan`` finds as JAX's planner does, faster). Only then
does it build IR: a few hundred ops, which cost 0.5-4 ms the first time a
process asks, while the decisions cost a fraction of that.

So this module makes those decisions itself, in the generator's order, and
calls JAX's planners (and its ``Tiling`` arithmetic) for the parts that carry
the hardware knowledge. It answers what running the generator's first step on
a throw-away ref inside a detached function answers, question for question:
``tests/solver/test_schedule_model.py`` holds it to that probe on every question
the corpus asks and on a grid of generated ones. Where the probe meets an
exception other than "no plan" (the lowering would crash), the answer is no.
"""

from __future__ import annotations

import functools
import math
from collections.abc import Sequence
from typing import NamedTuple

from jax._src.lib.mlir import ir
from jax.experimental.mosaic.gpu import dialect_lowering, utils
from jax.experimental.mosaic.gpu import fragmented_array as fa
from jax.experimental.mosaic.gpu.mma import MMALayouts

from smalto.hw import bank_plan, building, coalescing
from smalto.hw.mma_operand_table import OPERANDS
from smalto.hw.strides import row_major

# What the generator raises for "this layout cannot move this way": the caller then
# tries the next path (``ldmatrix`` first, then plain vectors) or answers no.
NO_PLAN = (fa.TxMatrixIneligible, fa.TransferPlanDerivationError, fa.UnsupportedTransferError)

Nested = tuple[tuple[int, ...], ...]


class _Crash(Exception):
    """Where the probe's generator raises something other than "no plan"."""


def schedule_starts(
    tiling: tuple[int, ...],
    swizzle: int,
    reg: fa.TiledLayout,
    shape: tuple[int, ...],
    strides: tuple[int, ...],
    bitwidth: int,
    optimized: bool,
    txmatrix: bool = True,
    *,
    gmem: bool = False,
    untiled: bool = False,
) -> bool:
    """Whether ``transfer_tiled`` yields a first step for this transfer.

    The ref is the one the lowering hands the schedule: tiled by ``tiling``
    with dense tiles, or (``untiled``, as GMEM and untiled SMEM are) with its
    own strides behind as many leading unit dims as it has dims. ``txmatrix``:
    try the ``ldmatrix``/``stmatrix`` path first, as vector loads and stores do.
    """
    try:
        ref = _scheduled_ref(tiling, reg, shape, strides, untiled)
    except Exception:  # noqa: BLE001 -- the lowering would fail on this ref whichever path
        return False
    for use_txmatrix in (True, False) if txmatrix else (False,):
        try:
            return _first_step(ref, swizzle, reg, bitwidth, optimized, use_txmatrix, gmem)
        except NO_PLAN:
            continue
        except Exception:  # noqa: BLE001 -- the lowering would crash here: no plan it can use
            return False
    return False


class _Ref(NamedTuple):
    """The ref as the schedule sees it, the same on either path.

    ``nested``: each logical dim as (tiles, within a tile), what the planners
    take; ``tiled``: that, tiled further by the register layout's tiling.
    """

    nested_shape: Nested
    nested_strides: Nested
    tiled_shape: Nested
    tiled_strides: Nested


def _scheduled_ref(
    tiling: tuple[int, ...],
    layout: fa.TiledLayout,
    shape: tuple[int, ...],
    strides: tuple[int, ...],
    untiled: bool,
) -> _Ref:
    """What the schedule checks and derives of its ref before either path."""
    nested_shape, nested_strides = _nested_ref(tiling, shape, strides, untiled)
    tiled_shape, tiled_strides = _tiled_by(layout.tiling, nested_shape, nested_strides)
    return _Ref(nested_shape, nested_strides, tiled_shape, tiled_strides)


# The loads and stores of one value, its element types, and every layout the search
# asks about share a ref: made once.
@functools.lru_cache(maxsize=2048)
def _nested_ref(
    tiling: tuple[int, ...], shape: tuple[int, ...], strides: tuple[int, ...], untiled: bool
) -> tuple[Nested, Nested]:
    """The ref the lowering hands the schedule, each logical dim as its (tiles, within a
    tile) pair, as the planners take it.

    Untiled (as GMEM and untiled SMEM are), the ref is one tile of its own
    shape. Dense and row-major, its tile dims get the whole ref's size as
    stride (what ``tile_strides`` gives them); with strides of its own (a
    column, a window, a transposed ref), the lowering keeps them and prepends
    unit dims (``memref_reshape``), whose strides decide nothing, as every
    check skips dims of size one. Otherwise the ref is tiled, each tile dense
    (``tile_strides``).
    """
    tiling_rank = len(tiling)
    if not tiling_rank:
        raise _Crash("no tiling of this ref")
    if untiled:
        dense = tuple(strides) == row_major(shape)
        if dense and not all(shape):
            raise _Crash("a tile of size zero")  # ``tile_shape`` divides by it
        outer = math.prod(shape) if dense else max(shape[0] * strides[0], 1)
        return _split_tiles((1,) * len(shape) + shape, (outer,) * len(shape) + strides, len(shape))
    ref_shape = tuple(utils.tile_shape(shape, tiling))
    ref_strides = tuple(dialect_lowering.tile_strides(strides, tiling))
    if tiling_rank > len(ref_shape) // 2:
        raise _Crash("the tiling rank does not fit the ref")
    logical_rank = len(ref_shape) - tiling_rank
    if fa.Tiling((ref_shape[logical_rank:],)).untile_shape(ref_shape) != shape:
        raise _Crash("the ref does not hold the value's shape")
    return _split_tiles(ref_shape, ref_strides, tiling_rank)


@functools.lru_cache(maxsize=2048)
def _tiled_by(tiling: fa.Tiling, shape: Nested, strides: Nested) -> tuple[Nested, Nested]:
    """The nested ref tiled further by a register layout's tiling (layouts that share a
    tiling share this)."""
    return tiling.tile_nested_shape_strides(shape, strides)


def _first_step(
    ref: _Ref,
    swizzle: int,
    layout: fa.TiledLayout,
    bitwidth: int,
    optimized: bool,
    use_txmatrix: bool,
    gmem: bool,
) -> bool:
    """One path of the generator up to its first step: raises what it raises, else
    whether it yields."""
    nested_shape, nested_strides, tiled_shape, tiled_strides = ref
    txmatrix: str | None = None  # "row" or "col": the ldmatrix path and its direction
    vector_dim = layout.vector_dim
    if use_txmatrix:
        txmatrix = _txmatrix_direction(layout, tiled_shape, tiled_strides, bitwidth, gmem)
        if txmatrix == "col":  # the vectors run down the major lane dim
            major_lane = layout.lane_dims[0]
            assert isinstance(major_lane, int)
            vector_dim = major_lane

    vector_length = layout.vector_length
    # Every part of every dim but the vectors' moves by whole vectors (or is one long).
    vector_index = vector_dim + len(tiled_shape)  # dims counted from the end, as JAX's
    for index, (dim_strides, dim_shape) in enumerate(zip(tiled_strides, tiled_shape, strict=True)):
        if index != vector_index:
            for s, d in zip(dim_strides, dim_shape, strict=True):
                if s % vector_length and d != 1:
                    raise fa.UnsupportedTransferError("strides not a multiple of the vector length")
    if tiled_strides[vector_dim] != (1,):
        raise fa.UnsupportedTransferError("the vectors' dim is not contiguous")
    tiles_shape, _ = coalescing.per_thread_tiles(layout, tiled_shape, tiled_strides)
    if vector_length * bitwidth % 8:
        raise _Crash("vectors of a fraction of a byte")
    if swizzle not in (16, 32, 64, 128):
        raise _Crash("not a swizzle")

    plan: object = fa.TrivialTransferPlan()
    if optimized and gmem:
        coalescing.check_coalesced(layout, tiled_shape, tiled_strides, bitwidth)
    elif optimized:
        banked = _col_txmatrix_layout(layout, bitwidth) if txmatrix == "col" else layout
        # (JAX's planner's answer, found without trying every stagger on every tile.)
        plan = bank_plan.plan_tiled_transfer(
            nested_shape, nested_strides, banked, bitwidth, swizzle
        )
        if txmatrix is not None and not isinstance(plan, fa.TrivialTransferPlan):
            raise fa.TxMatrixIneligible("ldmatrix needs a trivial plan")

    if txmatrix is None:
        return all(tiles_shape)  # the first of the tiles, one step each
    return _txmatrix_steps_exist(layout, tiles_shape, tiled_shape, bitwidth)


def _split_tiles(
    ref_shape: tuple[int, ...], ref_strides: tuple[int, ...], tiling_rank: int
) -> tuple[Nested, Nested]:
    """Each logical dim of the ref as its (tiles, within a tile) pair; unit tile dims dropped."""
    logical_rank = len(ref_shape) - tiling_rank
    first_tiled = logical_rank - tiling_rank
    shapes: list[tuple[int, ...]] = []
    strides: list[tuple[int, ...]] = []
    for dim in range(logical_rank):
        inner = dim + tiling_rank
        if dim >= first_tiled and ref_shape[inner] != 1:
            shapes.append((ref_shape[dim], ref_shape[inner]))
            strides.append((ref_strides[dim], ref_strides[inner]))
        else:
            shapes.append((ref_shape[dim],))
            strides.append((ref_strides[dim],))
    return tuple(shapes), tuple(strides)


def _txmatrix_direction(
    layout: fa.TiledLayout,
    tiled_shape: Nested,
    tiled_strides: Nested,
    bitwidth: int,
    gmem: bool,
) -> str:
    """Which ``ldmatrix`` path applies: "row", "col"; raises ``TxMatrixIneligible`` if none."""
    minor_lane = layout.lane_dims[-1]
    major_lane = layout.lane_dims[0]
    eligible = (
        bitwidth * layout.vector_length == 32
        and isinstance(minor_lane, int)
        and math.prod(tiled_shape[minor_lane]) % 4 == 0
    )
    row = (
        eligible
        and isinstance(minor_lane, int)
        and tiled_shape[minor_lane][-1] % 4 == 0
        and tiled_strides[minor_lane][-1] == layout.vector_length
    )
    col = (
        eligible
        and bitwidth in (8, 16)
        and isinstance(major_lane, int)
        and len(layout.lane_dims) == 2
        and tiled_shape[major_lane] == (8,)
        and tiled_strides[major_lane] == (1,)
    )
    if col and bitwidth == 8:
        # The 8-bit transposed path asks the enclosing module for the architecture,
        # which the probe's detached function does not have: it raises.
        raise _Crash("the 8-bit transposed path needs the architecture")
    if not (row or col) or gmem:
        raise fa.TxMatrixIneligible("no ldmatrix path for this layout")
    return "row" if row else "col"


def _col_txmatrix_layout(layout: fa.TiledLayout, bitwidth: int) -> fa.TiledLayout:
    """The layout whose bank accesses a 16-bit transposed ``ldmatrix`` makes.

    The 8-row major lane dim splits into 4 x 2: the 2 become the vector, and the
    lanes run over the minor lane dim and the old vector.
    """
    if bitwidth != 16:
        raise _Crash("transposed ldmatrix of this width")
    major_lane = layout.lane_dims[0]
    assert isinstance(major_lane, int)
    tile_index, within = layout.find_dim_in_tiling(major_lane)
    new_tile = list(layout.tiling.tiles[tile_index])
    new_tile[within] = layout.vector_length
    split = layout.subdivide_tile(tile_index, tuple(new_tile))
    row_major_lane, row_minor_lane, col_major_lane = split.lane_dims
    assert isinstance(row_minor_lane, int)
    return fa.TiledLayout(
        split.tiling,
        split.warp_dims,
        (col_major_lane, split.vector_dim, row_major_lane),
        row_minor_lane,
    )


def _mma_operand(layout: fa.TiledLayout, bitwidth: int) -> str | None:
    """Whether ``layout`` is an MMA operand layout whose ``ldmatrix`` order the schedule
    keeps: "lhs", "rhs", or None. Read from the table made from JAX's ``MMALayouts``
    (``hw.mma_operand_table``), else from JAX's layouts themselves."""
    table = OPERANDS.get(bitwidth)
    # (JAX's equality also asks for the same class; a partial reduction has no plain form.)
    if table is None or type(layout) is not fa.TiledLayout or layout.unreduced_operation:
        lhs, rhs = _mma_operands(bitwidth)
        return "lhs" if layout in lhs else "rhs" if layout in rhs else None
    plain = building.fields(layout)
    return "lhs" if plain in table[0] else "rhs" if plain in table[1] else None


@functools.cache
def _mma_operands(bitwidth: int) -> tuple[tuple[fa.TiledLayout, ...], tuple[fa.TiledLayout, ...]]:
    """The MMA operand layouts (lhs, rhs) whose ``ldmatrix`` order the schedule keeps."""
    with ir.Context():
        element = ir.IntegerType.get_signless(bitwidth)
        operands = [MMALayouts(element, m_warps=warps) for warps in (1, 2, 4)]
    return tuple(o.lhs for o in operands), tuple(o.rhs for o in operands)


def _txmatrix_steps_exist(
    layout: fa.TiledLayout, tiles_shape: list[int], tiled_shape: Nested, bitwidth: int
) -> bool:
    """Whether the ``ldmatrix`` partition of the tiles has a first group of transfers.

    The tiles are grouped by fours (or twos) along dims that divide so; an MMA
    operand's groups follow the order the MMA reads its registers in.
    """
    operand = _mma_operand(layout, bitwidth)
    factored: list[tuple[int, int]]
    if operand == "lhs":
        assert tiled_shape[-6] == (2,) and tiled_shape[-5] == (2,)
        major = len(tiles_shape) - sum(len(s) for s in tiled_shape[-6:])
        factored = [(major, 2), (major + 1, 2)]
    elif operand == "rhs":
        assert tiled_shape[-6] == (2,)
        factored = [(len(tiles_shape) - sum(len(s) for s in tiled_shape[-6:]), 2)]
    else:
        by_four = next((dim for dim, size in enumerate(tiles_shape) if size % 4 == 0), None)
        if by_four is not None:
            factored = [(by_four, 4)]
        else:
            factored = [(dim, 2) for dim, size in enumerate(tiles_shape) if size % 2 == 0][:2]
    groups = list(tiles_shape)
    for dim, size in factored:
        assert groups[dim] % size == 0
        groups[dim] //= size
    return any(all(shape) for shape in _group_shapes(groups, factored))


def _group_shapes(groups: list[int], factored: Sequence[tuple[int, int]]) -> list[list[int]]:
    """The shapes of the transfer groups, in the order the schedule runs them."""
    factored_num = math.prod(size for _, size in factored)
    if factored_num == 4:
        return [list(groups)]
    shapes: list[list[int]] = []
    for factor in (2,) if factored_num == 2 else (4, 2):
        for dim, size in enumerate(groups):
            if size > factor:
                if any(d == dim for d, _ in factored):
                    assert list(factored) == [(dim, 2)]
                shapes.append([*groups[:dim], size // factor, *groups[dim + 1 :]])
                groups[dim] %= factor
    shapes.append(list(groups))
    return shapes
