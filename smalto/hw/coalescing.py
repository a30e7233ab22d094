"""Whether an optimized GMEM transfer coalesces, as the lowering judges it.

An optimized ``vector_load``/``vector_store`` of a tiled value from or to
GMEM lowers only where JAX's ``plan_gmem_transfer`` (jax 0.12.0.1) finds the
accesses coalesced: at least 4 bytes a thread (after the vectors LLVM can merge
along the fastest tile dim), each warp's accesses whole 32-byte sectors, each
tile and warp step aligned to a sector, and the warpgroup's accesses whole
128-byte lines. This is that judgement on plain integers: JAX's own takes
0.2-0.4 ms a question in a fresh process (numpy on arrays of a few dozen
elements), and the complete search asks it about every layout a stored or
loaded value could take. ``tests/solver/test_schedule_model.py`` holds it,
through ``hw.schedule``, to the lowering's own schedule.
"""

from __future__ import annotations

import itertools
from collections.abc import Iterable

from jax.experimental.mosaic.gpu import fragmented_array as fa

Nested = tuple[tuple[int, ...], ...]

_SECTOR_BYTES = 32
_SECTORS_PER_LINE = 128 // _SECTOR_BYTES
_WIDEST_BYTES = 16  # wider vectors are split by the hardware, so never coalesced


def check_coalesced(
    layout: fa.TiledLayout, tiled_shape: Nested, tiled_strides: Nested, bitwidth: int
) -> None:
    """Raises ``TransferPlanDerivationError`` where the transfer does not coalesce.

    ``tiled_shape``/``tiled_strides``: the ref's nested dims tiled by the
    layout's tiling, as the schedule has them.
    """
    tiles_shape, tiles_strides = per_thread_tiles(layout, tiled_shape, tiled_strides)
    warp_shape, warp_strides = _spread(layout.warp_dims, tiled_shape, tiled_strides)
    lane_shape, lane_strides = _spread(layout.lane_dims, tiled_shape, tiled_strides)
    vector_length = layout.vector_length
    transfer_bytes = vector_length * bitwidth // 8
    if transfer_bytes > _WIDEST_BYTES or transfer_bytes.bit_count() != 1:
        raise fa.TransferPlanDerivationError("GMEM vectors of this width do not coalesce")
    lane_bytes = [offset * bitwidth // 8 for offset in _offsets(lane_shape, lane_strides)]
    # Consecutive vectors along the fastest tile dim are merged where every lane's
    # address stays aligned to the merged width (LLVM vectorizes them).
    moving = [
        d
        for d, (size, stride) in enumerate(zip(tiles_shape, tiles_strides, strict=True))
        if size > 1 and stride > 0
    ]
    if moving:
        fastest = min(moving, key=lambda d: (tiles_strides[d], -d))
        if tiles_strides[fastest] == vector_length:
            size = tiles_shape[fastest]
            factor = min(max(1, _WIDEST_BYTES // transfer_bytes), size & -size)
            while factor > 1:
                if all(offset % (transfer_bytes * factor) == 0 for offset in lane_bytes):
                    tiles_shape[fastest] //= factor
                    tiles_strides[fastest] *= factor
                    transfer_bytes *= factor
                    break
                factor //= 2
    if transfer_bytes < 4:
        raise fa.TransferPlanDerivationError("GMEM vectors narrower than 4 bytes")
    slots_per_sector = _SECTOR_BYTES // transfer_bytes
    slots = {offset // transfer_bytes for offset in lane_bytes}
    sectors = {slot // slots_per_sector for slot in slots}
    if len(slots) != len(sectors) * slots_per_sector:
        raise fa.TransferPlanDerivationError("a warp touches part of a 32-byte sector")
    steps_out = [
        (size, stride)
        for size, stride in zip(
            (*tiles_shape, *warp_shape), (*tiles_strides, *warp_strides), strict=True
        )
        if size > 1 and stride != 0
    ]
    if any(stride * bitwidth // 8 % _SECTOR_BYTES for _, stride in steps_out):
        raise fa.TransferPlanDerivationError("a step not aligned to a 32-byte sector")
    # The warpgroup's sectors: the warp's, repeated at each tile and warp step. Kept as
    # runs of consecutive sectors, a handful where there would be a thousand sectors.
    # The union does not depend on the order of the steps; the shortest first merge the
    # runs soonest, and a run at least one step long covers its repeats in one span.
    runs = _runs((sector, sector + 1) for sector in sectors)
    for size, stride in sorted(steps_out, key=lambda step: abs(step[1])):
        assert stride * bitwidth % (8 * _SECTOR_BYTES) == 0
        step = stride * bitwidth // (8 * _SECTOR_BYTES)
        runs = _runs(_repeated(runs, size, step))
    # Whole lines exactly where every maximal run starts and ends on a line boundary.
    if any(start % _SECTORS_PER_LINE or end % _SECTORS_PER_LINE for start, end in runs):
        raise fa.TransferPlanDerivationError("a warpgroup touches part of a 128-byte line")


def _repeated(runs: list[tuple[int, int]], size: int, step: int) -> Iterable[tuple[int, int]]:
    """The spans ``runs`` cover repeated ``size`` times, ``step`` sectors apart."""
    for start, end in runs:
        if end - start >= abs(step):  # the repeats touch: one span
            low, high = sorted((start, start + (size - 1) * step))
            yield low, high + end - start
        else:
            for i in range(size):
                yield start + i * step, end + i * step


def _offsets(shape: list[int], strides: list[int]) -> list[int]:
    """The offsets of every index of ``shape`` (row-major order), ``strides`` apart."""
    offsets = [0]
    for size, stride in zip(shape, strides, strict=True):
        offsets = [offset + i * stride for offset in offsets for i in range(size)]
    return offsets


def _runs(spans: Iterable[tuple[int, int]]) -> list[tuple[int, int]]:
    """The maximal runs ``[start, end)`` that these spans of sectors cover together."""
    merged: list[tuple[int, int]] = []
    for start, end in sorted(spans):
        if merged and start <= merged[-1][1]:
            if end > merged[-1][1]:
                merged[-1] = (merged[-1][0], end)
        else:
            merged.append((start, end))
    return merged


def per_thread_tiles(
    layout: fa.TiledLayout, tiled_shape: Nested, tiled_strides: Nested
) -> tuple[list[int], list[int]]:
    """The tiles one thread steps over, flattened: every dim that warps, lanes or the
    vector split is one tile long (stride 0)."""
    shape, strides = list(tiled_shape), list(tiled_strides)
    for dim in (*layout.partitioned_warp_dims, *layout.partitioned_lane_dims, layout.vector_dim):
        shape[dim] = (1,) * len(shape[dim])
        strides[dim] = (0,) * len(strides[dim])
    return list(itertools.chain.from_iterable(shape)), list(itertools.chain.from_iterable(strides))


def _spread(
    dims: tuple[int | fa.Replicated | fa.Unreduced, ...], tiled_shape: Nested, tiled_strides: Nested
) -> tuple[list[int], list[int]]:
    """The sizes and strides that warps (or lanes) are spread over; a replicated dim
    is that many copies of one place."""
    shape: list[int] = []
    strides: list[int] = []
    for dim in dims:
        if isinstance(dim, int):
            shape.extend(tiled_shape[dim])
            strides.extend(tiled_strides[dim])
        else:
            shape.append(dim.times)
            strides.append(0)
    return shape, strides
