"""The values a layout variable can take.

Each wraps one of JAX's layout types, so that equality is JAX's equality and
the lowering receives exactly the objects it knows.
"""

from __future__ import annotations

from dataclasses import field

from jax.experimental.mosaic.gpu import fragmented_array as fa
from jax.experimental.mosaic.gpu import tcgen05

from smalto.basics.records import record, value_class


@value_class(slots=True, eq=False)
class Reg:
    """A register layout.

    Hashed and compared as its layout, whose hash is computed once: the
    search hashes layout values all the time (sets of tried candidates,
    caches), and hashing one of JAX's layouts walks its tiling.
    """

    layout: fa.FragmentedLayout
    _hash: int = field(init=False, repr=False)

    def __post_init__(self) -> None:
        self._hash = hash(self.layout)

    def __hash__(self) -> int:
        return self._hash

    def __eq__(self, other: object) -> bool:
        # JAX's layouts compare field by field, even with themselves: identity first
        # (layouts are shared where smalto's cached functions made them).
        return self is other or (
            type(other) is Reg
            and self._hash == other._hash
            and (self.layout is other.layout or self.layout == other.layout)
        )

    @property
    def is_tiled(self) -> bool:
        return isinstance(self.layout, fa.TiledLayout)

    @property
    def is_splat(self) -> bool:
        return isinstance(self.layout, fa.WGSplatFragLayout)

    @property
    def is_strided(self) -> bool:
        return isinstance(self.layout, fa.WGStridedFragLayout)


SWIZZLE_WIDTHS = frozenset({32, 64, 128})


@record
class Smem:
    """SMEM transforms: a tiling (``None``: untiled) and a swizzle in bytes (``None``: none).

    The swizzle is part of the value, not implied by the tiling: a tile-only
    ref is unswizzled, and a ref may be swizzled without being tiled. The
    swizzle is physical, so it does not move when a view permutes the tiling.
    """

    tiling: tuple[int, ...] | None
    swizzle: int | None

    def __post_init__(self) -> None:
        # JAX's own wording: user code and tests match on it.
        if self.swizzle and self.swizzle not in SWIZZLE_WIDTHS:
            raise ValueError(
                f"Swizzle {self.swizzle} is not supported. Only 32, 64 and 128 are accepted."
            )


@value_class(slots=True, eq=False)
class Tmem:
    """A TMEM layout (its hash computed once, as ``Reg``'s)."""

    layout: tcgen05.TMEMLayout
    _hash: int = field(init=False, repr=False)

    def __post_init__(self) -> None:
        self._hash = hash(self.layout)

    def __hash__(self) -> int:
        return self._hash

    def __eq__(self, other: object) -> bool:
        # JAX's layouts compare field by field, even with themselves: identity first
        # (layouts are shared where smalto's cached functions made them).
        return self is other or (
            type(other) is Tmem
            and self._hash == other._hash
            and (self.layout is other.layout or self.layout == other.layout)
        )


Const = Reg | Smem | Tmem

UNTILED = Smem(None, None)
