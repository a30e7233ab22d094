"""Where each element of a tiled, swizzled SMEM ref lands, and in which bank.

A tile transform ``(t0, .., tk)`` turns a ref of shape ``(.., d0, .., dk)`` into
``(.., d0/t0, .., dk/tk, t0, .., tk)``, stored row-major: tiles follow one
another in row-major tile order and each tile is row-major inside. Swizzling
then permutes 16-byte chunks: within every run of ``swizzle`` bytes, chunk ``c``
of the ``r``-th 128-byte line is stored at chunk ``c XOR (r mod swizzle/16)``
(Mosaic GPU's transfers compute ``offset ^ ((offset / 128) % (swizzle / 16)) * 16``
in bytes, as TMA does). Shared memory has 32 banks of 4 bytes.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

SWIZZLES = (16, 32, 64, 128)  # bytes; 16 means no swizzle
CHUNK_BYTES = 16
LINE_BYTES = 128
BANKS = 32
BANK_BYTES = 4


class SmemSpecError(ValueError):
    """A tiling or swizzle that does not apply to the shape or element type."""


@dataclass(frozen=True)
class SmemPlacement:
    """Per element (arrays of the ref's shape): its tile, byte offset after swizzling,
    16-byte chunk and bank."""

    shape: tuple[int, ...]
    tiling: tuple[int, ...] | None
    swizzle: int
    bitwidth: int
    tile: np.ndarray  # tile number in storage order
    byte: np.ndarray  # byte offset of the element's first byte, after swizzling
    unswizzled_byte: np.ndarray
    # A view of a ref with its dims permuted (``memref.transpose``): the ref's dims, as
    # dims of the view, major first; ``None`` for a row-major ref. ``shape`` and
    # ``tiling`` are the view's, as smalto prints its transforms.
    dim_order: tuple[int, ...] | None = None

    @property
    def ref_tiling(self) -> tuple[int, ...] | None:
        """The tiling of the ref the view is of (the view's own tiling for a plain ref)."""
        if self.tiling is None or self.dim_order is None:
            return self.tiling
        return _ref_tiling(self.tiling, self.dim_order)

    @property
    def chunk(self) -> np.ndarray:
        """The 16-byte chunk holding the element (offset // 16)."""
        return self.byte // CHUNK_BYTES

    @property
    def bank(self) -> np.ndarray:
        return (self.byte // BANK_BYTES) % BANKS

    @property
    def total_bytes(self) -> int:
        return math.prod(self.shape) * self.bitwidth // 8


def swizzled(offset: np.ndarray, swizzle: int) -> np.ndarray:
    """Byte offsets after the ``swizzle``-byte 16-byte-chunk XOR swizzle."""
    if swizzle not in SWIZZLES:
        raise SmemSpecError(f"swizzle must be one of {', '.join(map(str, SWIZZLES))} bytes")
    groups = swizzle // CHUNK_BYTES
    return offset ^ (((offset // LINE_BYTES) % groups) * CHUNK_BYTES)


def dim_order(strides: tuple[int, ...] | None) -> tuple[int, ...] | None:
    """The dims of a strided view, major first (``(1, 0)`` for a transposed 2-D view);
    ``None`` where they are already in order (a row-major ref)."""
    if strides is None:
        return None
    order = tuple(sorted(range(len(strides)), key=lambda d: -strides[d]))
    return None if order == tuple(range(len(strides))) else order


def _ref_tiling(tiling: tuple[int, ...], order: tuple[int, ...]) -> tuple[int, ...]:
    # A tile dim of size 1 changes no offset: pad the tiling to the rank, permute, trim.
    padded = (1,) * (len(order) - len(tiling)) + tuple(tiling)
    permuted = tuple(padded[d] for d in order)
    return (
        permuted[len(order) - len(tiling) :]
        if all(t == 1 for t in permuted[: len(order) - len(tiling)])
        else permuted
    )


def smem_placement(
    shape: tuple[int, ...],
    tiling: tuple[int, ...] | None,
    swizzle: int,
    bitwidth: int,
    order: tuple[int, ...] | None = None,
) -> SmemPlacement:
    """Computes tile, swizzled byte offset (hence chunk and bank) of every element.

    ``order``: for a view with permuted dims (``dim_order``), the ref's dims as dims
    of the view; ``shape`` and ``tiling`` are then the view's (as smalto prints the
    transforms of a ``memref.transpose``): the ref, tiled in its own order, is placed,
    and each element is shown where the view sees it.
    """
    if order is not None:
        ref_shape = tuple(shape[d] for d in order)
        ref_tiling = None if tiling is None else _ref_tiling(tiling, order)
        ref = smem_placement(ref_shape, ref_tiling, swizzle, bitwidth)
        axes = tuple(int(a) for a in np.argsort(order))
        return SmemPlacement(
            tuple(shape),
            tiling,
            swizzle,
            bitwidth,
            ref.tile.transpose(axes),
            ref.byte.transpose(axes),
            ref.unswizzled_byte.transpose(axes),
            tuple(order),
        )
    _check(shape, tiling, swizzle, bitwidth)
    index = np.indices(shape).reshape(len(shape), -1)
    if tiling is None:
        tiled_shape = tuple(shape)
        tiled_index = index
        tiles = np.zeros(index.shape[1], dtype=np.int64)
    else:
        lead = len(shape) - len(tiling)
        tile_dims = [s // t for s, t in zip(shape[lead:], tiling, strict=True)]
        tiled_shape = (*shape[:lead], *tile_dims, *tiling)
        outer = [index[lead + i] // t for i, t in enumerate(tiling)]
        inner = [index[lead + i] % t for i, t in enumerate(tiling)]
        tiled_index = np.stack([*index[:lead], *outer, *inner])
        # Tile number in storage order: leading dims and tile indices, row-major.
        tiles = np.ravel_multi_index(np.stack([*index[:lead], *outer]), (*shape[:lead], *tile_dims))
    # asarray: numpy's stubs read an array of indices as one index, a scalar.
    linear = np.asarray(np.ravel_multi_index(tiled_index, tiled_shape))
    unswizzled = linear * bitwidth // 8
    return SmemPlacement(
        tuple(shape),
        tiling,
        swizzle,
        bitwidth,
        tiles.reshape(shape),
        swizzled(unswizzled, swizzle).reshape(shape),
        unswizzled.reshape(shape),
    )


def _check(
    shape: tuple[int, ...], tiling: tuple[int, ...] | None, swizzle: int, bitwidth: int
) -> None:
    if swizzle not in SWIZZLES:
        raise SmemSpecError(f"swizzle must be one of {', '.join(map(str, SWIZZLES))} bytes")
    if not shape:
        # A scalar ref (a barrier's, a TMEM address's): one element, no tile, no rows.
        raise SmemSpecError(
            "a 0-dimensional ref holds one element at its byte 0: there is no placement to draw"
        )
    if tiling is None:
        # A swizzle alone (jax 0.12): the whole ref is one tile, swizzled.
        row_bytes = shape[-1] * bitwidth / 8
        if swizzle != 16 and row_bytes % swizzle:
            raise SmemSpecError(
                f"swizzle={swizzle} swizzles rows of {swizzle} bytes, so an untiled ref's minor "
                f"dimension must be a multiple of {swizzle * 8 // bitwidth} elements of "
                f"{bitwidth} bits; shape {_dims(shape)} has {row_bytes:g} bytes per row"
            )
        return
    if len(tiling) > len(shape):
        raise SmemSpecError(f"tile {_dims(tiling)} has more dimensions than shape {_dims(shape)}")
    if any(s % t for s, t in zip(shape[len(shape) - len(tiling) :], tiling, strict=True)):
        raise SmemSpecError(f"tile {_dims(tiling)} does not divide shape {_dims(shape)}")
    minor_bytes = tiling[-1] * bitwidth / 8
    if swizzle != 16 and minor_bytes % swizzle:
        elements = swizzle * 8 // bitwidth
        raise SmemSpecError(
            f"swizzle={swizzle} swizzles rows of {swizzle} bytes, so the minor tile dimension "
            f"must hold a multiple of {elements} elements of {bitwidth} bits; tile "
            f"{_dims(tiling)} has {minor_bytes:g} bytes per row (use swizzle=16 for none)"
            + _transposed_hint(tiling, swizzle, bitwidth)
        )


def check_typed_transforms(
    shape: tuple[int, ...], tiling: tuple[int, ...] | None, swizzle: int, bitwidth: int
) -> None:
    """Transforms a person typed (``smalto draw --smem``): a swizzled tile's rows must be
    exactly the swizzle's width, as the TMA copies that fill a swizzled ref require
    (``copy_gmem_to_smem``: "the last dimension of the slice to be exactly {swizzle}
    bytes"). A kernel's own refs are drawn as they are (``smem_placement`` takes any
    multiple, as JAX's register transfers do)."""
    _check(shape, tiling, swizzle, bitwidth)
    if tiling is None or swizzle == 16:
        return
    minor_bytes = tiling[-1] * bitwidth // 8
    if minor_bytes != swizzle:
        elements = swizzle * 8 // bitwidth
        fits = implied_swizzle(tiling, bitwidth)
        instead = f"swizzle={fits}" if fits != 16 else "swizzle=16 for none"
        raise SmemSpecError(
            f"swizzle={swizzle} swizzles rows of {swizzle} bytes, and a swizzled tile's rows "
            f"must be exactly that wide (as TMA copies need): {elements} elements of "
            f"{bitwidth} bits; tile {_dims(tiling)} has {minor_bytes} bytes per row (use "
            f"{instead}, or tile {_dims((*tiling[:-1], elements))} for swizzle={swizzle})"
        )


def _transposed_hint(tiling: tuple[int, ...], swizzle: int, bitwidth: int) -> str:
    """Where the tile fits the swizzle once its last two dims are swapped: transforms
    printed for a transposed view (``memref.transpose``), whose tiles are the ref's seen
    the other way round."""
    if len(tiling) < 2 or tiling[-2] * bitwidth // 8 != swizzle:
        return ""
    swapped = _dims((*tiling[:-2], tiling[-1], tiling[-2]))
    return (
        f"; tile {_dims(tiling)} reads like the transforms of a transposed view, whose ref "
        f"is tiled {swapped}: draw the kernel's value (smalto draw FILE %VALUE), or tile="
        f"{swapped} at the ref's own shape"
    )


def implied_swizzle(tiling: tuple[int, ...] | None, bitwidth: int) -> int:
    """The swizzle Mosaic GPU pairs with a row-major tiling: the minor tile's width."""
    if tiling is None:
        return 16
    minor_bytes = tiling[-1] * bitwidth // 8
    return minor_bytes if minor_bytes in SWIZZLES[1:] else 16


def _dims(dims: tuple[int, ...]) -> str:
    return "x".join(map(str, dims))
