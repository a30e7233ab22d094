"""The SMEM bank plan of a tiled transfer, found as JAX's ``plan_tiled_transfer`` finds it,
without its cost where there is none.

JAX 0.12.0.1's ``fragmented_array.plan_tiled_transfer`` first asks whether every
lane moving the same tile at a time is free of bank conflicts; if not, it
tries, in a fixed order, to stagger two groups of lanes along one dim of the
tiles (every dim whose stride is not a multiple of the banks' width, every
group stride 1, 2, 4, 8 and 16 lanes, every stagger along that dim), and takes
the first that is free of conflicts; none, and it raises. Each try computes the
banks of every lane over every tile: on a value with many small tiles (vectors
of one element, a transposed ref) that is thousands of tries over hundreds of
tiles, 0.1-0.4 s for one question, most of a first call's time where the
answer is that no plan exists (issue #52: the first call on an FP8
cast-transpose took 1.25 s).

The answer here is the same plan, tried in the same order, by the same
arithmetic (the lanes' addresses, the swizzle, the banks of each wavefront);
only the work differs:

- a transform conflicts where any tile does, so each is first judged on the
  first tile, and on all of them only where that one is free of conflicts;
- every stagger along one dim for one group stride is judged at once.

``tests/solver/test_bank_plan.py`` holds it to JAX's planner, plan for plan
(or the same exception type), on every layout smalto offers through a grid of
refs, tilings, swizzles and element types.
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Sequence

import numpy as np
from jax.experimental.mosaic.gpu import fragmented_array as fa

# The tiles each transform is judged on first: a conflict is almost always in the first
# (on the questions an FP8 cast-transpose and the production sm_100 refusal ask, judging
# every stagger on 1 tile first took 14 ms in all, on 8 tiles 30 ms).
_FIRST_TILES = 1
_GROUP_STRIDES = (1, 2, 4, 8, 16)


def plan_tiled_transfer(
    nested_ref_shape: Sequence[Sequence[int]],
    nested_ref_strides: Sequence[Sequence[int]],
    layout: fa.TiledLayout,
    element_bits: int,
    swizzle: int,
) -> fa.TransferPlan:
    """JAX's ``plan_tiled_transfer(nested_ref_shape, nested_ref_strides, layout,
    element_bits, swizzle)``: the same plan, or the same exception."""
    tiled_shape, tiled_strides = layout.tiling.tile_nested_shape_strides(
        tuple(tuple(x) for x in nested_ref_shape), tuple(tuple(x) for x in nested_ref_strides)
    )
    # The tiles a warp steps over: every dim but those its warps, lanes and vectors span.
    per_dim_shape, per_dim_strides = list(tiled_shape), list(tiled_strides)
    for d in (*layout.partitioned_warp_dims, *layout.partitioned_lane_dims, layout.vector_dim):
        per_dim_shape[d] = (1,) * len(per_dim_shape[d])
        per_dim_strides[d] = (0,) * len(per_dim_strides[d])
    tiles_shape = [s for dim in per_dim_shape for s in dim]
    tiles_strides = [s for dim in per_dim_strides for s in dim]
    warp_shape, warp_strides = _spanned(layout.warp_dims, tiled_shape, tiled_strides)
    lane_shape, lane_strides = _spanned(layout.lane_dims, tiled_shape, tiled_strides)

    vector_length = layout.vector_length
    tile_elems = 128 // element_bits  # one 16-byte swizzle tile
    group_elems = 1024 // element_bits  # one 128-byte swizzle row
    assert vector_length * element_bits % 8 == 0, "checked by the caller, as JAX's"
    transfer_bytes = vector_length * element_bits // 8
    alignment = math.gcd(
        *(
            s
            for s, d in zip(
                itertools.chain(tiles_strides, warp_strides, lane_strides),
                itertools.chain(tiles_shape, warp_shape, lane_shape),
                strict=True,
            )
            if d > 1
        )
    )
    if tile_elems % alignment and vector_length <= alignment:
        raise fa.TransferPlanDerivationError(
            "vectors may cross a swizzle tile's boundary (the planner cannot prove otherwise)"
        )
    if transfer_bytes > fa.SMEM_BANK_BYTES * 4:
        raise fa.TransferPlanDerivationError(f"{transfer_bytes=}: wider than the planner plans")
    if element_bits > fa.SMEM_BANK_BYTES * 8:
        raise fa.TransferPlanDerivationError(f"{element_bits=}: wider than the planner plans")
    bank_bytes = min(fa.SMEM_BANK_BYTES, transfer_bytes)
    banks = _Banks(
        tiles_shape=tiles_shape,
        tiles_strides=tiles_strides,
        lane_shape=lane_shape,
        lane_strides=lane_strides,
        swizzle=swizzle,
        tile_elems=tile_elems,
        group_elems=group_elems,
        elems_per_bank=bank_bytes * 8 // element_bits,
        num_banks=fa.SMEM_BANKS * (fa.SMEM_BANK_BYTES // bank_bytes),
        wavefronts=max(transfer_bytes // bank_bytes, 1),
    )
    if not banks.conflicts(None, 0, 0):
        return fa.TrivialTransferPlan()
    period = fa.SMEM_BANKS * banks.elems_per_bank
    for dim, (stride, size) in enumerate(zip(tiles_strides, tiles_shape, strict=True)):
        if size <= 1 or not stride % period:
            continue  # staggering along it moves no lane to another bank
        for group_stride in _GROUP_STRIDES:
            stagger = banks.first_free_stagger(dim, group_stride)
            if stagger is not None:
                return fa.StaggeredTransferPlan(stagger, dim, size, group_stride)
    raise fa.TransferPlanDerivationError(
        "no staggering of the lanes avoids bank conflicts for this transfer"
    )


def _spanned(
    dims: Sequence[int | fa.Replicated | fa.Unreduced],
    tiled_shape: tuple[tuple[int, ...], ...],
    tiled_strides: tuple[tuple[int, ...], ...],
) -> tuple[list[int], list[int]]:
    """The shape and strides the warps (or the lanes) span: a replicated (or unreduced) dim
    is its count with stride 0."""
    shape: list[int] = []
    strides: list[int] = []
    for d in dims:
        if isinstance(d, int):
            shape.extend(tiled_shape[d])
            strides.extend(tiled_strides[d])
        else:
            shape.append(d.times)
            strides.append(0)
    return shape, strides


class _Banks:
    """The banks the lanes of a warp hit, tile by tile, under a stagger of two lane groups."""

    def __init__(
        self,
        *,
        tiles_shape: list[int],
        tiles_strides: list[int],
        lane_shape: list[int],
        lane_strides: list[int],
        swizzle: int,
        tile_elems: int,
        group_elems: int,
        elems_per_bank: int,
        num_banks: int,
        wavefronts: int,
    ) -> None:
        self.tiles_shape = tiles_shape
        self.swizzle_rows = swizzle // 16
        self.tile_elems, self.group_elems = tile_elems, group_elems
        self.elems_per_bank, self.num_banks = elems_per_bank, num_banks
        self.wavefronts = wavefronts
        self.wavefront_lanes = fa.WARP_SIZE // wavefronts
        # Lanes that a replicated lane dim makes copies of another lane's address move
        # nothing of their own: only the first of each set of copies is counted.
        lane_mask = np.full(lane_shape, False)
        lane_mask[tuple(slice(0, 1) if s == 0 else slice(None) for s in lane_strides)] = True
        self.masks = lane_mask.reshape(wavefronts, self.wavefront_lanes)
        self.lane_offsets = np.dot(list(np.ndindex(*lane_shape)), lane_strides)
        assert self.lane_offsets.shape == (fa.WARP_SIZE,)
        count = math.prod(tiles_shape)
        self.tile_index = np.stack(np.unravel_index(np.arange(count), tiles_shape), 1)
        self.tile_offsets = np.dot(self.tile_index, tiles_strides).astype(np.int64)
        self.strides = np.asarray(tiles_strides, np.int64)

    def _offsets(
        self, tiles: slice, dim: int | None, group_stride: int, staggers: np.ndarray
    ) -> np.ndarray:
        """Each lane's element offset, per stagger, tile and lane: [staggers, tiles, lanes].
        ``dim`` None: every lane on the same tile."""
        base = self.tile_offsets[tiles]
        if dim is None:
            return (base[:, None] + self.lane_offsets[None, :])[None]
        size = self.tiles_shape[dim]
        group = (np.arange(fa.WARP_SIZE) // group_stride) % 2  # the lanes' group, 0 or 1
        at = self.tile_index[tiles, dim]  # [tiles]
        moved = (at[None, :, None] + staggers[:, None, None] * group[None, None, :]) % size
        shift = (moved - at[None, :, None]) * self.strides[dim]
        return base[None, :, None] + shift + self.lane_offsets[None, None, :]

    def _conflicted(self, offsets: np.ndarray) -> np.ndarray:
        """Per stagger (the first axis): whether some wavefront of some tile hits a bank
        twice."""
        rows = (offsets // self.group_elems) % self.swizzle_rows
        banks = ((offsets ^ (rows * self.tile_elems)) // self.elems_per_bank) % self.num_banks
        shape = banks.shape
        banks = banks.reshape(shape[0], shape[1], self.wavefronts, self.wavefront_lanes)
        found = np.zeros(shape[0], bool)
        for wavefront, mask in enumerate(self.masks):
            hit = np.sort(banks[:, :, wavefront, mask], axis=-1)
            found |= np.any(hit[..., 1:] == hit[..., :-1], axis=(1, 2))
        return found

    def conflicts(self, dim: int | None, group_stride: int, stagger: int) -> bool:
        """Whether the lanes hit a bank twice in some tile (``dim`` None: no stagger)."""
        staggers = np.asarray([stagger], np.int64)
        first = slice(0, _FIRST_TILES)
        if self._conflicted(self._offsets(first, dim, group_stride, staggers))[0]:
            return True
        return self._conflicted_beyond_the_first(dim, group_stride, stagger)

    def _conflicted_beyond_the_first(
        self, dim: int | None, group_stride: int, stagger: int
    ) -> bool:
        """Whether the lanes hit a bank twice in a tile past the first few."""
        if len(self.tile_offsets) <= _FIRST_TILES:
            return False
        staggers = np.asarray([stagger], np.int64)
        rest = slice(_FIRST_TILES, None)
        return bool(self._conflicted(self._offsets(rest, dim, group_stride, staggers))[0])

    def first_free_stagger(self, dim: int, group_stride: int) -> int | None:
        """The least stagger along ``dim`` (1 to its size less one) with no conflict."""
        staggers = np.arange(1, self.tiles_shape[dim], dtype=np.int64)
        first = slice(0, _FIRST_TILES)
        free = ~self._conflicted(self._offsets(first, dim, group_stride, staggers))
        for stagger in staggers[free]:
            if not self._conflicted_beyond_the_first(dim, group_stride, int(stagger)):
                return int(stagger)
        return None
