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


def smem_placement(
    shape: tuple[int, ...], tiling: tuple[int, ...] | None, swizzle: int, bitwidth: int
) -> SmemPlacement:
    """Computes tile, swizzled byte offset (hence chunk and bank) of every element."""
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
    linear = np.ravel_multi_index(tiled_index, tiled_shape)
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
        )


def implied_swizzle(tiling: tuple[int, ...] | None, bitwidth: int) -> int:
    """The swizzle Mosaic GPU pairs with a row-major tiling: the minor tile's width."""
    if tiling is None:
        return 16
    minor_bytes = tiling[-1] * bitwidth // 8
    return minor_bytes if minor_bytes in SWIZZLES[1:] else 16


def _dims(dims: tuple[int, ...]) -> str:
    return "x".join(map(str, dims))
