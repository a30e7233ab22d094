"""JAX layout objects built from fields smalto knows valid, without JAX's re-checks.

A first kernel in a process builds a few dozen register layouts, and JAX's
constructors check each one as if a user had written it: a
``WGStridedFragLayout`` runs ``numpy.prod`` (numpy's first call in a process
costs 0.1 ms), a ``TiledLayout`` canonicalizes itself again (``numpy.cumsum``
among it: 40-60 us each), and ``TiledLayout.reduce`` builds and canonicalizes
a layout for each reduced axis. The layouts smalto makes itself come from a
few formulas whose results are canonical by construction, and the reductions
of the layouts it offers are known in advance (``hw.reduction_table``, made
from JAX's own ``reduce``).

``tests/jax_parity/test_layout_facts.py`` holds every formula over its whole
range, and every row of the table, to what JAX's checked constructors and
``reduce`` give.
"""

from __future__ import annotations

import math

from jax.experimental.mosaic.gpu import fragmented_array as fa

from smalto.hw.reduction_table import LAYOUTS, REDUCED, Dim, Fields

_WARPGROUP_SIZE = fa.WARPGROUP_SIZE
_PLACES = {plain: place for place, plain in enumerate(LAYOUTS)}


def strided(shape: tuple[int, ...], vec_size: int) -> fa.WGStridedFragLayout:
    """``WGStridedFragLayout(shape, vec_size)``, raising where JAX's would (the warpgroup's
    vectors must split the elements evenly), judged on integers."""
    if math.prod(shape) % (vec_size * _WARPGROUP_SIZE):
        raise ValueError(f"{shape} does not split into vectors of {vec_size} over a warpgroup")
    # A frozen dataclass: its own __init__ sets its fields this way.
    layout = object.__new__(fa.WGStridedFragLayout)
    object.__setattr__(layout, "shape", shape)
    object.__setattr__(layout, "vec_size", vec_size)
    return layout


def canonical_tiled[L: fa.TiledLayout](
    tiles: tuple[tuple[int, ...], ...],
    warp_dims: tuple[int | fa.Replicated | fa.Unreduced, ...],
    lane_dims: tuple[int | fa.Replicated | fa.Unreduced, ...],
    vector_dim: int,
    kind: type[L] = fa.TiledLayout,  # type: ignore[assignment]  # the default is an L
) -> L:
    """A tiled layout (or a TMEM layout: ``kind``) from fields known valid and canonical
    (the callers' formulas and the table are tested to be): built as JAX's own
    constructor sets its fields, without its checks, which tile the first tile and
    canonicalize the layout again."""
    tiling = object.__new__(fa.Tiling)
    object.__setattr__(tiling, "tiles", tiles)
    layout = object.__new__(kind)
    object.__setattr__(layout, "tiling", tiling)
    object.__setattr__(layout, "warp_dims", warp_dims)
    object.__setattr__(layout, "lane_dims", lane_dims)
    object.__setattr__(layout, "vector_dim", vector_dim)
    object.__setattr__(layout, "unreduced_operation", None)
    return layout


def fields(layout: fa.TiledLayout) -> Fields:
    """A layout's fields as plain data: a replicated dim as the 1-tuple of its copies."""
    return (
        layout.tiling.tiles,
        tuple(_plain(d) for d in layout.warp_dims),
        tuple(_plain(d) for d in layout.lane_dims),
        layout.vector_dim,
    )


def from_fields(plain: Fields) -> fa.TiledLayout:
    tiles, warp_dims, lane_dims, vector_dim = plain
    return canonical_tiled(
        tiles,
        tuple(_dim(d) for d in warp_dims),
        tuple(_dim(d) for d in lane_dims),
        vector_dim,
    )


def reduced(layout: fa.TiledLayout, axes: tuple[int, ...]) -> fa.TiledLayout | None:
    """``layout.reduce(axes)`` where the table has it (sorted ``axes``), else None."""
    if layout.unreduced_operation is not None:
        return None
    place = _PLACES.get(fields(layout))
    known = None if place is None else REDUCED.get((place, axes))
    return None if known is None else from_fields(LAYOUTS[known])


def _plain(d: int | fa.Replicated | fa.Unreduced) -> Dim:
    if isinstance(d, int):
        return d
    if isinstance(d, fa.Replicated):
        return (d.times,)
    raise ValueError(f"no plain form for {d}")


def _dim(d: Dim) -> int | fa.Replicated:
    return d if isinstance(d, int) else fa.Replicated(d[0])
