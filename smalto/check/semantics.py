"""What layouts mean for the ops that reshape values: tiles, reductions, views.

Pure functions of layouts and shapes, shared by the per-dialect rules.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Literal

from jax.experimental.mosaic.gpu import fragmented_array as fa

from smalto.check.smem import Transforms
from smalto.hw import layouts as hl
from smalto.hw.values import Reg, Tmem
from smalto.program.view import Value

Layout = Reg | Tmem | Transforms


def tile_of(layout: Layout | None) -> tuple[int, ...] | None:
    """The tile a tiling constraint sees; None where any slicing is fine."""
    match layout:
        case Reg(layout=fa.TiledLayout() as tiled):
            return tuple(tiled.base_tile_shape)
        case Transforms(tiling=tiling):
            return tiling
        case Tmem(layout=tmem):
            return tuple(tmem.base_tile_shape)
    return None


def swap(tiling: tuple[int, ...] | None) -> tuple[int, ...] | None:
    """A 2D tiling read through a transposed view; None (untiled) stays None."""
    if tiling is None:
        return None
    if len(tiling) != 2:
        return (-1,)  # never a valid MMA tiling: tiled and untiled dims would swap
    return (tiling[1], tiling[0])


def transposed(value: Value) -> bool:
    strides = value.strides or ()
    return any(later > earlier for earlier, later in zip(strides, strides[1:], strict=False))


def reduced_shape(shape: tuple[int, ...], axes: Sequence[int], keep: bool) -> tuple[int, ...]:
    if keep:
        return tuple(1 if i in axes else d for i, d in enumerate(shape))
    return tuple(d for i, d in enumerate(shape) if i not in axes)


def reduce_layout(layout: Reg, axes: Sequence[int], rank: int, keep: bool) -> Reg | None:
    """The layout of a reduction over ``axes``; None where the lowering has no such reduction."""
    axes = sorted(axes)
    inner = layout.layout
    if isinstance(inner, fa.WGSplatFragLayout):
        return hl.splat(reduced_shape(inner.shape, axes, keep))
    if isinstance(inner, fa.WGStridedFragLayout):
        # Each thread keeps whole vectors only when the reduced axes are major
        # to at least one full warpgroup's worth of vectors.
        minor = math.prod(inner.shape[axes[-1] + 1 :])
        if minor % (inner.vec_size * hl.WARPGROUP_SIZE):
            return None
        return hl.strided(reduced_shape(inner.shape, axes, keep), inner.vec_size)
    if keep:
        return None
    tile_rank = len(inner.base_tile_shape)
    first_tiled = rank - tile_rank
    in_tile = [a - first_tiled for a in axes if a >= first_tiled]
    return Reg(inner.reduce(in_tile)) if in_tile else layout


def reshape_layout(layout: Reg, source: tuple[int, ...], target: tuple[int, ...]) -> Reg | None:
    """The layout of a reshape that moves no element between threads; None otherwise."""
    inner = layout.layout
    if isinstance(inner, fa.WGSplatFragLayout):
        return hl.splat(target)
    if isinstance(inner, fa.WGStridedFragLayout):
        return hl.strided(target, inner.vec_size)
    tile = tuple(inner.base_tile_shape)
    n = len(tile)
    if len(target) < n or len(source) < n:
        return None
    if any(s % t for s, t in zip(source[-n:], tile, strict=True)):
        return None
    # Only the untiled dims and the major tiled dim may change, and the latter
    # must still hold whole tiles.
    if source[len(source) - n + 1 :] != target[len(target) - n + 1 :]:
        return None
    if target[-n] % tile[0]:
        return None
    return layout


def transpose_tiling(
    tiling: tuple[int, ...] | None, permutation: Sequence[int]
) -> tuple[int, ...] | None | Literal[False]:
    """The tiling of a permuted ref; False where tiled and untiled dims would mix."""
    if tiling is None:
        return None
    first_tiled = len(permutation) - len(tiling)
    minor = permutation[first_tiled:]
    if any(dim < first_tiled for dim in minor):
        return False
    return tuple(tiling[dim - first_tiled] for dim in minor)


def collapse_tiling(
    tiling: tuple[int, ...] | None, shape: tuple[int, ...], groups: Sequence[int]
) -> tuple[int, ...] | None | Literal[False]:
    """The tiling after merging groups of dims; False where the tiles do not survive."""
    if tiling is None:
        return None
    n = len(tiling)
    tiled_shape = shape[len(shape) - n :]
    if any(s % t for s, t in zip(tiled_shape, tiling, strict=False)):
        return False
    new: list[int] = []
    # Walk the groups from the minor end; each consumes the tiled dims it merges.
    remaining_tiles, remaining_dims = list(tiling), list(tiled_shape)
    for size in reversed(groups):
        if not remaining_tiles:
            break
        if size > len(remaining_tiles):
            return False  # would merge tiled with untiled dims
        tiles, dims = remaining_tiles[-size:], remaining_dims[-size:]
        del remaining_tiles[-size:], remaining_dims[-size:]
        # Within a group, read major to minor: unit tiles, at most one partial
        # tile, then tiles spanning their whole dim.
        k = len(tiles)
        while k and tiles[k - 1] == dims[k - 1]:
            k -= 1
        if any(t != 1 for t in tiles[: max(k - 1, 0)]):
            return False
        new.append(math.prod(tiles))
    return tuple(reversed(new))
