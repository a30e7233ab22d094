"""The values a layout variable can take.

Each wraps one of JAX's layout types, so that equality is JAX's equality and
the lowering receives exactly the objects it knows.
"""

from __future__ import annotations

from jax.experimental.mosaic.gpu import fragmented_array as fa
from jax.experimental.mosaic.gpu import tcgen05

from smalto.records import record


@record
class Reg:
    """A register layout."""

    layout: fa.FragmentedLayout

    @property
    def is_tiled(self) -> bool:
        return isinstance(self.layout, fa.TiledLayout)

    @property
    def is_splat(self) -> bool:
        return isinstance(self.layout, fa.WGSplatFragLayout)

    @property
    def is_strided(self) -> bool:
        return isinstance(self.layout, fa.WGStridedFragLayout)


@record
class Smem:
    """SMEM transforms: a tiling (``None``: untiled); the swizzle follows from it."""

    tiling: tuple[int, ...] | None


@record
class Tmem:
    """A TMEM layout."""

    layout: tcgen05.TMEMLayout


Const = Reg | Smem | Tmem

UNTILED = Smem(None)
