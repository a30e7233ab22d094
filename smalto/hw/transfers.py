"""Which SMEM <-> register and TMEM <-> register transfers the lowering supports."""

from __future__ import annotations

import enum
from functools import lru_cache

from jax.experimental.mosaic.gpu import dialect_lowering, tcgen05
from jax.experimental.mosaic.gpu import fragmented_array as fa

from smalto.hw import layouts as hl


class Transfer(enum.Enum):
    """How a vector_load/vector_store between SMEM and registers must perform."""

    OPTIMIZED = "optimized"  # bank-conflict free, or rejected
    UNOPTIMIZED = "unoptimized"  # any plan will do
    # Pallas stores without an explicit request: optimized when the ref is
    # tiled, but an untiled ref may fall back to a plain store.
    DOWNGRADABLE = "downgradable"


_TRANSPOSED_REGS = frozenset({fa.TCGEN05_TRANSPOSED_LAYOUT, fa.WGMMA_TRANSPOSED_LAYOUT})


@lru_cache(maxsize=4096)
def smem_transfer_supported(
    tiling: tuple[int, ...] | None,
    reg: fa.FragmentedLayout,
    shape: tuple[int, ...],
    strides: tuple[int, ...],
    bitwidth: int,
    mode: Transfer,
) -> bool:
    """Whether registers in ``reg`` can move to/from an SMEM ref tiled by ``tiling``."""
    if not isinstance(reg, fa.TiledLayout):
        return tiling is None  # splat and strided values only move untiled
    smem_transposed = len(strides) >= 2 and strides[-1] > strides[-2]
    tile = tiling or ()
    if smem_transposed:
        return len(tile) == 2 and reg in _TRANSPOSED_REGS
    if mode is Transfer.UNOPTIMIZED:
        return True
    if not tile:
        if mode is Transfer.DOWNGRADABLE:
            return True
        # An untiled ref is treated as one tile covering the whole shape,
        # without swizzle (as the untiled load/store lowering does).
        tile = shape
        tiled_strides = dialect_lowering.tile_strides(strides, tile)
        swizzle = hl.NO_SWIZZLE
    else:
        tiled_strides = dialect_lowering.tile_strides(strides, tile)
        swizzle = hl.swizzle_for(tile, tiled_strides[-len(tile) :], bitwidth)
    first_tiled = len(shape) - len(tile)
    nested_shape: list[tuple[int, ...]] = []
    nested_strides: list[tuple[int, ...]] = []
    for i, size in enumerate(shape):
        t = tile[i - first_tiled] if i >= first_tiled else 1
        if i >= first_tiled and t != 1:
            nested_shape.append((size // t, t))
            nested_strides.append((tiled_strides[i], tiled_strides[i + len(tile)]))
        else:
            nested_shape.append((size,))
            nested_strides.append((tiled_strides[i],))
    try:
        fa.plan_tiled_transfer(tuple(nested_shape), tuple(nested_strides), reg, bitwidth, swizzle)
    except fa.TransferPlanDerivationError:
        return False
    return True


@lru_cache(maxsize=4096)
def tmem_transfer_supported(
    tmem: tcgen05.TMEMLayout, reg: fa.FragmentedLayout, shape: tuple[int, ...], bitwidth: int
) -> bool:
    """Whether registers in ``reg`` can move to/from TMEM laid out as ``tmem``."""
    if not isinstance(reg, fa.TiledLayout):
        return False
    packing = tmem.vector_length
    columns = shape[1]
    default = tcgen05.tmem_default_layout(packing)
    if reg == fa.TCGEN05_LAYOUT and tmem == default:
        return True
    if reg == tmem.as_tiled_layout() and packing * bitwidth == 32:
        return True
    if (
        reg == fa.TMEM_NATIVE_LAYOUT
        and tmem == default
        and ((bitwidth == 16 and packing == 1) or bitwidth == 32)
    ):
        return True
    if columns % 16:
        return False
    if packing <= columns // 2 and reg == fa.WGMMA_LAYOUT:
        if tmem == tcgen05.tmem_half_lane_layout(columns, packing):
            return True
    if packing <= 8 and reg == hl.m64_collective(columns):
        return tmem == tcgen05.tmem_m64_collective_layout(columns, packing)
    return False
