"""Which thread and register hold each element of an array in a register layout.

The arithmetic is the lowering's own, done for all threads at once with numpy
instead of emitted as MLIR: ``TiledLayout.thread_idxs`` tiles the array's
contiguous strides, splits the warp and lane index over ``warp_dims`` and
``lane_dims``, and walks the register array (``registers_shape``) in order;
each register is a vector of ``vector_length`` elements along ``vector_dim``.
``WGStridedFragLayout`` gives thread ``t`` the vectors at
``t * vec + i * 128 * vec``; a splat gives every thread the one value.

The same numbers say where a TMEM layout puts an element: TMEM lane = the
thread (warp ``w`` reads lanes ``32w..32w+31``), column = the register, and a
vector fills one 32-bit column.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
from jax.experimental.mosaic.gpu import fragmented_array as fa
from jax.experimental.mosaic.gpu import tcgen05

from smalto.hw.strides import row_major

WARP_SIZE = fa.WARP_SIZE
WARPS = fa.WARPS_IN_WARPGROUP
THREADS = fa.WARPGROUP_SIZE


@dataclass(frozen=True)
class Ownership:
    """Where each element of an array of ``shape`` lives, in a register layout.

    ``threads[idx]`` lists (ascending) the ``copies`` threads that hold element
    ``idx``; ``register[idx]`` is its register's index in the thread's register
    array (row-major over the layout's register shape) and ``slot[idx]`` its
    position within that register's vector. Replicas of an element sit in the
    same register and slot of each of their threads.
    """

    shape: tuple[int, ...]
    threads: np.ndarray  # shape + (copies,)
    register: np.ndarray  # shape
    slot: np.ndarray  # shape
    registers_per_thread: int
    vector_length: int

    @property
    def copies(self) -> int:
        return int(self.threads.shape[-1])

    @property
    def warps(self) -> np.ndarray:
        return self.threads // WARP_SIZE

    def owner(self, index: tuple[int, ...]) -> tuple[tuple[int, ...], int, int]:
        """(threads, register, slot) of one element."""
        return (
            tuple(int(t) for t in self.threads[index]),
            int(self.register[index]),
            int(self.slot[index]),
        )


class LayoutShapeError(ValueError):
    """The layout cannot hold an array of this shape."""


def ownership(layout: fa.FragmentedLayout, shape: tuple[int, ...]) -> Ownership:
    """Computes every element's threads, register and vector slot."""
    match layout:
        case fa.TiledLayout():
            return _tiled(layout, shape)
        case fa.WGStridedFragLayout():
            return _strided(layout, shape)
        case fa.WGSplatFragLayout():
            return _splat(layout, shape)
    raise TypeError(f"not a register layout: {layout!r}")


def _delinearized_offsets(
    layout: fa.TiledLayout,
    count: int,
    dims: tuple[int | fa.Replicated | fa.Unreduced, ...],
    strides: tuple[int, ...],
) -> np.ndarray:
    """Offset of index 0..count-1 split over ``dims`` (as ``_delinearize_index`` does)."""
    tiled = layout.tiled_tiling_shape
    sizes = [tiled[d] if isinstance(d, int) else d.times for d in dims]
    index = np.arange(count)
    offset = np.zeros(count, dtype=np.int64)
    for dim, dim_stride in zip(dims, row_major(tuple(sizes)), strict=True):
        if not isinstance(dim, int):
            continue  # replicated (or unreduced): each value of this index holds the same elements
        coordinate = (index // dim_stride) % tiled[dim]
        offset += coordinate * strides[dim]
    return offset


def _tiled(layout: fa.TiledLayout, shape: tuple[int, ...]) -> Ownership:
    try:
        register_shape = layout.registers_shape(shape)
    except ValueError as error:
        raise LayoutShapeError(
            f"the layout's tile {layout.base_tile_shape} does not divide shape {shape}"
        ) from error
    tile_strides = layout.tiling.tile_strides(row_major(shape))
    rank = layout.tiled_tiling_rank
    tail = tile_strides[-rank:]
    warp = _delinearized_offsets(layout, WARPS, layout.warp_dims, tail)
    lane = _delinearized_offsets(layout, WARP_SIZE, layout.lane_dims, tail)
    thread_offset = (warp[:, None] + lane[None, :]).reshape(THREADS)
    registers = math.prod(register_shape)
    coordinates = np.indices(register_shape).reshape(len(register_shape), registers)
    register_offset = np.asarray(tile_strides, dtype=np.int64) @ coordinates
    vector = layout.vector_length
    slot_offset = np.arange(vector) * tile_strides[layout.vector_dim]
    linear = (
        thread_offset[:, None, None] + register_offset[None, :, None] + slot_offset[None, None, :]
    )
    return _scatter(shape, linear, registers, vector)


def _strided(layout: fa.WGStridedFragLayout, shape: tuple[int, ...]) -> Ownership:
    if tuple(shape) != tuple(layout.shape):
        raise LayoutShapeError(f"a strided layout of shape {layout.shape} cannot hold {shape}")
    vec = layout.vec_size
    registers = math.prod(shape) // (THREADS * vec)
    linear = (
        (np.arange(THREADS) * vec)[:, None, None]
        + (np.arange(registers) * THREADS * vec)[None, :, None]
        + np.arange(vec)[None, None, :]
    )
    return _scatter(shape, linear, registers, vec)


def _splat(layout: fa.WGSplatFragLayout, shape: tuple[int, ...]) -> Ownership:
    if tuple(shape) != tuple(layout.shape):
        raise LayoutShapeError(f"a splat of shape {layout.shape} cannot stand for {shape}")
    size = math.prod(shape)
    threads = np.broadcast_to(np.arange(THREADS), (size, THREADS)).reshape(*shape, THREADS)
    zeros = np.zeros(shape, dtype=np.int64)
    return Ownership(tuple(shape), threads, zeros, zeros, 1, 1)


def _scatter(shape: tuple[int, ...], linear: np.ndarray, registers: int, vector: int) -> Ownership:
    """From (thread, register, slot) -> element, the inverse map element -> holders."""
    size = math.prod(shape)
    flat = linear.reshape(-1)
    if flat.size % size or np.any(np.bincount(flat, minlength=size) != flat.size // size):
        raise AssertionError("smalto bug: the layout does not cover every element equally often")
    copies = flat.size // size
    thread_of = np.repeat(np.arange(THREADS), registers * vector)
    register_of = np.tile(np.repeat(np.arange(registers), vector), THREADS)
    slot_of = np.tile(np.arange(vector), THREADS * registers)
    order = np.lexsort((thread_of, flat))  # by element, then thread
    threads = thread_of[order].reshape(size, copies)
    first = order.reshape(size, copies)[:, 0]
    return Ownership(
        tuple(shape),
        threads.reshape(*shape, copies),
        register_of[first].reshape(shape),
        slot_of[first].reshape(shape),
        registers,
        vector,
    )


# --- TMEM ------------------------------------------------------------------------

TMEM_LANES = 128


@dataclass(frozen=True)
class TmemPlacement:
    """Where each element of a TMEM array lives: ``lane`` (row), ``column`` and the
    ``slot`` within the 32-bit column (packed narrow types hold several)."""

    shape: tuple[int, ...]
    lane: np.ndarray  # shape + (copies,)
    column: np.ndarray  # shape
    slot: np.ndarray  # shape
    columns: int
    packing: int


def tmem_placement(layout: tcgen05.TMEMLayout, shape: tuple[int, ...]) -> TmemPlacement:
    """Lane and column of every element of a TMEM ref of ``shape`` in ``layout``."""
    held = _tiled(layout, shape)
    return TmemPlacement(
        tuple(shape),
        held.threads,
        held.register,
        held.slot,
        held.registers_per_thread,
        held.vector_length,
    )
