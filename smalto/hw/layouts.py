"""Hardware facts about register, SMEM and TMEM layouts.

This is the one place (with ``transfers`` and ``encode``) that speaks JAX's
layout types. Everything here is a pure function of hashable arguments, so the
expensive ones are cached: kernels reuse a handful of layouts and shapes.

One idea in some 600 lines: what JAX 0.12.0.1's layouts allow, asked by the
rules, the solver and the diagnosis alike (validity for a shape, relayouts,
layouts through reductions, reshapes, transposes and collapses, SMEM and
TMEM facts), each a small function over JAX's own types.
"""

from __future__ import annotations

import math
from functools import cache
from typing import TYPE_CHECKING

from jax._src.lib.mlir import ir
from jax.experimental.mosaic.gpu import dialect_lowering, tcgen05
from jax.experimental.mosaic.gpu import fragmented_array as fa
from jax.experimental.mosaic.gpu import launch_context as lc
from jax.experimental.mosaic.gpu import layouts as layouts_lib

from smalto.basics.elementwise import CONVERSIONS
from smalto.hw import building
from smalto.hw.values import UNTILED, Const, Reg, Smem, Tmem

if TYPE_CHECKING:
    from jax.experimental.mosaic.gpu.mma import MMALayouts

# A warp or lane dim of a tiled layout: a dim of its tiled shape, or replicated/unreduced.
type _Dim = int | fa.Replicated | fa.Unreduced

WGMMA = fa.WGMMA_LAYOUT
WGMMA_8BIT = fa.WGMMA_LAYOUT_8BIT
WGMMA_TRANSPOSED = fa.WGMMA_TRANSPOSED_LAYOUT
WGMMA_ROW = fa.WGMMA_ROW_LAYOUT
WGMMA_COL = fa.WGMMA_COL_LAYOUT
TCGEN05 = fa.TCGEN05_LAYOUT
TCGEN05_TRANSPOSED = fa.TCGEN05_TRANSPOSED_LAYOUT
TCGEN05_ROW = fa.TCGEN05_ROW_LAYOUT
TCGEN05_COL = fa.TCGEN05_COL_LAYOUT
TMEM_NATIVE = fa.TMEM_NATIVE_LAYOUT
TMA_INDICES = fa.TMA_INDICES_LAYOUT
TMA_INDICES_4 = fa.TMA_INDICES_4_LAYOUT

WARPGROUP_SIZE = fa.WARPGROUP_SIZE
TMEM_ROWS = tcgen05.TMEM_ROWS  # lanes of tensor memory: one a thread of a warpgroup
SWIZZLES = (128, 64, 32)  # widest first: wider swizzles avoid more bank conflicts


@cache
def splat(shape: tuple[int, ...]) -> Reg:
    return Reg(fa.WGSplatFragLayout(shape=shape))


@cache
def strided(shape: tuple[int, ...], vec_size: int) -> Reg:
    return Reg(building.strided(shape, vec_size))


@cache
def default_strided(shape: tuple[int, ...], bitwidth: int | None) -> Reg | None:
    """The widest strided layout for a vector, or None where none exists.

    Each thread of the warpgroup holds vectors of at most 64 bits, and the
    element count must split evenly over the 128 threads; a vector of
    sub-byte elements must still fill whole bytes.
    """
    if bitwidth is None:
        return None
    size = math.prod(shape)
    if size % WARPGROUP_SIZE:
        return None
    vec_size = min(64 // bitwidth, size // WARPGROUP_SIZE)
    while vec_size and size % (vec_size * WARPGROUP_SIZE):
        vec_size //= 2
    if not vec_size or (vec_size * bitwidth) % 8:
        return None
    return strided(shape, vec_size)


# --- validity of a value for a shape ---------------------------------------


@cache
def _tiling_applies(tiling: fa.Tiling, shape: tuple[int, ...]) -> bool:
    """Whether ``tiling.tile_shape(shape)`` succeeds: each tile, in turn, divides the
    trailing dims of what the tiles before it left. On integers: JAX's method
    formats an error message for every shape it does not apply to."""
    dims = list(shape)
    for tile in tiling.tiles:
        rank = len(tile)
        if rank > len(dims):
            return False
        first = len(dims) - rank
        for i, t in enumerate(tile):
            if dims[first + i] % t:
                return False
            dims[first + i] //= t
        dims += tile
    return True


@cache
def _smem_tiling_applies(tiling: tuple[int, ...], shape: tuple[int, ...]) -> bool:
    """Whether ``TileTransform(tiling).transform_shape(shape)`` succeeds: the tile divides
    the trailing dims, one for one. On integers: JAX's method formats an error message
    for every shape it refuses."""
    tail = shape[-len(tiling) :] if tiling else shape
    if len(tail) != len(tiling):
        return False
    for size, tile in zip(tail, tiling, strict=True):
        if size % tile:
            return False
    return True


def fits(value: Const, shape: tuple[int, ...]) -> bool:
    """Whether ``value`` can be the layout of a value of this shape.

    For SMEM this is only the shape's part (the tiling tiles it); the full
    test, with the ref's strides and element width, is ``smem_valid``.
    """
    # Dispatch on the exact class (values are final classes): the solver asks
    # this at every assignment.
    if type(value) is Reg:
        layout = value.layout
        if isinstance(layout, fa.TiledLayout):
            return _tiling_applies(layout.tiling, shape)
        return layout.shape == shape
    if type(value) is Smem:
        tiling = value.tiling
        # A tiling of higher rank than the ref has no lowering.
        return tiling is None or (len(tiling) <= len(shape) and _smem_tiling_applies(tiling, shape))
    if type(value) is Tmem:
        return _tiling_applies(value.layout.tiling, shape)
    raise TypeError(value)


def tmem_fits(value: Tmem, shape: tuple[int, ...], bitwidth: int | None) -> bool:
    """Whether a TMEM ref of this shape and element width can be laid out as ``value``.

    Beyond the tiling, the lowering (``TMEMLayout.check_type``, run whenever a
    TMEM ref is built) takes a vector length of 1 or of a whole 32-bit column
    of the element type, nothing between.
    """
    if not fits(value, shape):
        return False
    return bitwidth is None or value.layout.vector_length in (1, max(1, 32 // bitwidth))


@cache
def smem_valid(
    value: Smem, shape: tuple[int, ...], strides: tuple[int, ...] | None, bitwidth: int | None
) -> bool:
    """Whether an SMEM ref of this type can take these transforms.

    The tiling must tile the shape; a swizzle must fit in the minor dimension
    (of the tile, when tiled); refs with two unit-stride dims take no swizzle.
    Raises NotImplementedError (as JAX's pass does) for an empty tiling and for
    a ref whose smallest stride is not 1.
    """
    tiling, swizzle = value.tiling, value.swizzle
    if tiling is not None and not tiling:
        raise NotImplementedError("Empty tiling unsupported")
    if not shape:
        return tiling is None and swizzle is None
    if strides is None or bitwidth is None:
        return swizzle is None and fits(value, shape)  # a type we cannot read: be strict
    if min(strides) != 1:
        raise NotImplementedError("We cannot apply swizzle to non-contiguous refs")
    swizzle_elems = 8 * swizzle // bitwidth if swizzle is not None else None
    # A unit dim next to the minor one: the swizzle's direction is ambiguous.
    repeated_unit_stride = strides.count(1) > 1
    if tiling is None:
        if swizzle_elems is None:
            return True
        if repeated_unit_stride:
            return False
        return shape[_argmin(strides)] % swizzle_elems == 0
    if not _smem_tiling_applies(tiling, shape):
        return False
    if repeated_unit_stride:
        return swizzle_elems is None
    minor = physical_minor(tiling, shape, strides)
    if minor is None:
        return False
    return not swizzle_elems or minor % swizzle_elems == 0


@cache
def physical_minor(
    tiling: tuple[int, ...] | None, shape: tuple[int, ...], strides: tuple[int, ...]
) -> int | None:
    """Elements along the dim that is minor in memory: of the tile when tiled.

    For a transposed ref this is not the last logical dim; the lowering undoes
    the transpose first. None when the lowering cannot tile the strides.
    """
    if tiling is None:
        return shape[_argmin(strides)] if shape else None
    try:
        tiled_strides = dialect_lowering.tile_strides(strides, tiling)
    except ValueError:
        return None
    return tiling[_argmin(tuple(tiled_strides[-len(tiling) :]))]


def tile_transform_text(tiling: tuple[int, ...]) -> str:
    """A tiling as JAX prints it in messages: ``TileTransform(tiling=(8, 64), rounding=None)``."""
    return str(lc.TileTransform(tiling))


def _argmin(values: tuple[int, ...]) -> int:
    """The first index of the smallest value."""
    return min(range(len(values)), key=values.__getitem__)


# --- relayouts ----------------------------------------------------------------


@cache
def _tmem_native(layout: fa.TiledLayout) -> bool:
    # One TMEM row a thread: a tile of any other height is not, and needs no layout built.
    if layout.tiling.tiles[0][0] != TMEM_ROWS:
        return False
    return layout == tmem_native(layout.vector_length)


# Element bitwidths whose (WGMMA|TCGEN05) <-> transposed relayout the lowering implements.
_TRANSPOSE_BITWIDTHS = (16, 32)

_TRANSPOSES = (
    (WGMMA, WGMMA_TRANSPOSED),
    (WGMMA_TRANSPOSED, WGMMA),
    (TCGEN05, TCGEN05_TRANSPOSED),
    (TCGEN05_TRANSPOSED, TCGEN05),
)


_UPCASTS = (
    (fa.WGMMA_LAYOUT_UPCAST_2X, WGMMA),
    (WGMMA, fa.WGMMA_LAYOUT_UPCAST_2X),
    (fa.WGMMA_LAYOUT_UPCAST_4X, fa.WGMMA_LAYOUT_UPCAST_2X),
    (fa.WGMMA_LAYOUT_UPCAST_4X, WGMMA),
)
# The tilings of the pairs above: a pair of layouts tiled otherwise is none of them,
# told by comparing two tuples of ints rather than a dozen layouts field by field.
_NAMED_RELAYOUT_TILINGS = frozenset(
    (a.tiling.tiles, b.tiling.tiles) for a, b in (*_TRANSPOSES, *_UPCASTS)
)


def _tiled_relayout_supported(src: fa.TiledLayout, dst: fa.TiledLayout, bitwidth: int) -> bool:
    """Tiled-to-tiled relayouts the lowering implements (for explicit layout casts)."""
    if (src.tiling.tiles, dst.tiling.tiles) not in _NAMED_RELAYOUT_TILINGS:
        return _tmem_native(src) and _tmem_native(dst)
    # Compared, not hashed: hashing a layout walks all its fields in Python.
    for a, b in _TRANSPOSES:
        if src == a and dst == b:
            # JAX's constraints allow the transpose at any bitwidth, but its
            # lowering implements the shuffle for 16- and 32-bit values only.
            return bitwidth in _TRANSPOSE_BITWIDTHS
    upcast_2x, upcast_4x = fa.WGMMA_LAYOUT_UPCAST_2X, fa.WGMMA_LAYOUT_UPCAST_4X
    # The 2x <-> 1x conversion is one shuffle, implemented both ways for the
    # same bitwidths.
    two_to_one = fa.can_relayout_wgmma_2x_to_wgmma(bitwidth)
    four_to_two = fa.can_relayout_wgmma_4x_to_wgmma_2x(bitwidth)
    if (src == upcast_2x and dst == WGMMA) or (src == WGMMA and dst == upcast_2x):
        return two_to_one
    if src == upcast_4x and dst == upcast_2x:
        return four_to_two
    if src == upcast_4x and dst == WGMMA:
        return four_to_two and two_to_one
    return _tmem_native(src) and _tmem_native(dst)


def splat_fits_tiled(shape: tuple[int, ...], tiled: fa.TiledLayout) -> bool:
    """A splat broadcasts into a tiled layout when the tile divides its trailing dims.

    The tile covers the minor dims of the value, so the splat needs at least
    as many dims as the tile, and each of the trailing ones a multiple of it.
    """
    return layouts_lib.splat_is_compatible_with_tiled(fa.WGSplatFragLayout(shape), tiled)


@cache
def relayout_allowed(src: Reg, dst: Reg, bitwidth: int, strict: bool) -> bool:
    """Whether a value in ``src`` may be converted to ``dst``.

    Between a producer and its consumer (``strict``), only splats may change
    layout; an explicit layout cast also allows the tiled relayouts above.
    """
    if src == dst:
        return True
    s, d = src.layout, dst.layout
    if isinstance(s, fa.WGSplatFragLayout):
        if isinstance(d, fa.WGStridedFragLayout):
            return s.shape == d.shape
        if isinstance(d, fa.TiledLayout):
            return splat_fits_tiled(s.shape, d)
        return False
    if isinstance(s, fa.TiledLayout) and isinstance(d, fa.TiledLayout) and not strict:
        return _tiled_relayout_supported(s, d, bitwidth)
    return False


# --- layouts through shape-changing operations ---------------------------------


class Stuck:
    """An expression that cannot be simplified further (not a contradiction)."""


STUCK = Stuck()


def reduce_shape(shape: tuple[int, ...], axes: tuple[int, ...], keep_dims: bool) -> tuple[int, ...]:
    if keep_dims:
        return tuple(1 if i in axes else d for i, d in enumerate(shape))
    return tuple(d for i, d in enumerate(shape) if i not in axes)


@cache
def reduced_layout(value: Reg, axes: tuple[int, ...], rank: int, keep_dims: bool) -> Reg | Stuck:
    """The layout of ``reduce(x, axes)`` for ``x`` in ``value`` (cached: JAX's reduce is slow)."""
    layout = value.layout
    if isinstance(layout, fa.TiledLayout):
        if keep_dims:
            return STUCK  # the lowering does not reduce tiled layouts keeping dims
        untiled = rank - len(layout.base_tile_shape)
        tiled_axes = [a - untiled for a in axes if a >= untiled]
        return Reg(reduce_tiled(layout, tuple(tiled_axes))) if tiled_axes else value
    if isinstance(layout, fa.WGStridedFragLayout):
        # Only reductions that keep each thread's vectors whole, within a thread.
        trailing = math.prod(layout.shape[axes[-1] + 1 :])
        if trailing % (layout.vec_size * WARPGROUP_SIZE):
            return STUCK
        return strided(reduce_shape(layout.shape, axes, keep_dims), layout.vec_size)
    return splat(reduce_shape(layout.shape, axes, keep_dims))


@cache
def reduce_tiled(layout: fa.TiledLayout, axes: tuple[int, ...]) -> fa.TiledLayout:
    """JAX's ``TiledLayout.reduce`` over tiled ``axes``: from the table where it has it,
    else from JAX; cached (JAX's is slow)."""
    return building.reduced(layout, tuple(sorted(axes))) or layout.reduce(list(axes))


@cache
def tmem_native(vector_length: int) -> fa.TiledLayout:
    """``fa.tmem_native_layout`` (cached: JAX builds it anew)."""
    return fa.tmem_native_layout(vector_length)


@cache
def tmem_as_tiled(tmem: tcgen05.TMEMLayout) -> fa.TiledLayout:
    """The register layout that mirrors a TMEM layout (cached: JAX builds it anew, and
    checks it, each time it is asked)."""
    return tmem.as_tiled_layout()


@cache
def m64_collective(columns: int) -> fa.TiledLayout:
    """The register layout of a collective M=64 TMEM load (``fa_m64_collective_layout``):
    half the TMEM rows a warp pair, each warp's 32 rows split over 8 lanes x 8 columns,
    pairs of columns a vector. Built here, canonical as it is, rather than by JAX anew."""
    if columns % 16:
        raise ValueError(f"Columns must be a multiple of 16, got: {columns}")
    return building.canonical_tiled(
        ((TMEM_ROWS // 2, columns), (fa.WARP_SIZE, columns // 2), (8, 8), (2,)),
        warp_dims=(-6, -7),
        lane_dims=(-3, -2),
        vector_dim=-1,
    )


def reshaped_layout(
    value: Reg, source_shape: tuple[int, ...], target_shape: tuple[int, ...]
) -> Reg | Stuck:
    """The layout of ``reshape(x)`` for ``x`` in ``value``, where it is free."""
    layout = value.layout
    if isinstance(layout, fa.WGSplatFragLayout):
        return splat(target_shape)
    if isinstance(layout, fa.WGStridedFragLayout):
        return strided(target_shape, layout.vec_size)
    tile = layout.base_tile_shape
    if len(target_shape) < len(tile):
        return STUCK
    if any(s % t for s, t in zip(source_shape[-len(tile) :], tile, strict=True)):
        return STUCK
    # A reshape is free only when the minor tiled dimensions are untouched and
    # the major tiled one stays a multiple of its tile: then every element keeps
    # its thread and register.
    minor = len(tile) - 1
    if source_shape[-minor:] != target_shape[-minor:]:
        return STUCK
    if target_shape[-len(tile)] % tile[0]:
        return STUCK
    return value


def transposed_tiling(
    tiling: tuple[int, ...], permutation: tuple[int, ...]
) -> tuple[int, ...] | None:
    """The tiling of a transposed SMEM ref; None where tiled and untiled dims swap."""
    offset = len(permutation) - len(tiling)
    kept = permutation[-len(tiling) :]
    if any(dim < offset for dim in kept):
        return None
    return tuple(tiling[dim - offset] for dim in kept)


def collapsed_tiling(
    tiling: tuple[int, ...], source_shape: tuple[int, ...], reassociation: tuple[int, ...]
) -> tuple[int, ...] | None:
    """The tiling of a collapsed SMEM ref; None where the collapse breaks the tiles.

    Each collapsed group must look like (1*, partial?, full*): leading unit
    tiles, at most one partial tile, then tiles spanning their whole dimension.
    """
    rev_tiling = list(tiling)[::-1]
    rev_shape = list(source_shape[-len(tiling) :])[::-1]
    if any(s % t for s, t in zip(rev_shape, rev_tiling, strict=False)):
        return None
    new_rev: list[int] = []
    for group in reassociation[::-1]:
        if len(rev_tiling) < group:
            return None  # a tiled dim would merge with an untiled one
        tiles, dims = rev_tiling[:group], rev_shape[:group]
        full = 0
        for t, s in zip(tiles, dims, strict=False):
            if t != s:
                break
            full += 1
        rest = tiles[full:]
        if rest and any(t != 1 for t in rest[1:]):
            return None
        new_rev.append(math.prod(tiles))
        rev_tiling, rev_shape = rev_tiling[group:], rev_shape[group:]
        if not rev_tiling:
            break
    return tuple(new_rev[::-1])


# --- SMEM ------------------------------------------------------------------------


@cache
def mma_smem_options(
    shape: tuple[int, ...], bitwidth: int, transposed: bool, allow_unswizzled: bool
) -> tuple[tuple[Smem, ...], tuple[int, int]]:
    """The SMEM transforms an MMA operand may have, widest swizzle first.

    Each swizzle s pairs with the tile (8, 8·s/bitwidth) (transposed refs: the
    tile transposed); ``allow_unswizzled`` adds the 16-byte tile without
    swizzle last. Only tiles that divide the 2-D ``shape`` are kept. Also
    returns the last tile tried, which the error names when none is kept.
    Cached: every MMA asks, and kernels repeat a few operand types.
    """
    options: list[Smem] = []
    tiling = (8, 8)
    for swizzle in (*SWIZZLES, None) if allow_unswizzled else SWIZZLES:
        elems = (swizzle or 16) * 8 // bitwidth
        tiling = (elems, 8) if transposed else (8, elems)
        if all(s % t == 0 for s, t in zip(shape, tiling, strict=False)):
            options.append(Smem(tiling, swizzle))
    return tuple(options), tiling


def is_transposed(strides: tuple[int, ...]) -> bool:
    return any(b > a for a, b in zip(strides, strides[1:], strict=False))


def merge_multiples(a: tuple[int, ...], b: tuple[int, ...]) -> tuple[int, ...]:
    """Both divisibility requirements at once (suffix-aligned gcd)."""
    n = min(len(a), len(b))
    if n == 0:
        return ()
    return tuple(math.gcd(x, y) for x, y in zip(a[-n:], b[-n:], strict=True))


def tiling_divides(tile: tuple[int, ...], multiple: tuple[int, ...]) -> bool:
    if len(tile) > len(multiple):
        return False
    return all(m % t == 0 for t, m in zip(reversed(tile), reversed(multiple), strict=False))


# --- TMEM ----------------------------------------------------------------------


# JAX builds (and canonicalizes) a TMEM layout anew on every call, a quarter of a
# millisecond each the first time: the layouts below are built here from the same
# formulas (``tcgen05``'s, jax 0.12.0.1), canonical as they are, raising where JAX's
# raise; ``tests/jax_parity/test_layout_facts.py`` holds each to JAX's over its range.
@cache
def tmem_for_shape(shape: tuple[int, ...], collective: bool, packing: int) -> Tmem:
    """The TMEM layout an MMA operand or allocation of this shape uses
    (``tcgen05._infer_tmem_layout``): by its rows, all of TMEM's or half."""
    if len(shape) != 2:
        raise ValueError(f"TMEM can only represent 2D shapes, got {shape}")
    if packing > 8 or packing.bit_count() != 1:
        raise ValueError(f"Packing must be <= 8 and a power of 2, got: {packing}")
    if shape[1] % packing:
        raise ValueError(f"Minor dimension of shape must be divisible by packing, got: {shape}")
    if shape[0] == TMEM_ROWS:
        return tmem_default(packing)
    if shape[0] == TMEM_ROWS // 2:
        half = tmem_m64_collective if collective else tmem_half_lane
        return Tmem(half(shape[1], packing))
    raise ValueError(
        f"Unsupported shape: {shape}. TMEM references must have either"
        f" {TMEM_ROWS} or {TMEM_ROWS // 2} rows, but got {shape[0]}."
    )


@cache
def tmem_default(packing: int) -> Tmem:
    """``tcgen05.tmem_default_layout``: a TMEM row a thread, ``packing`` elements a column."""
    if packing.bit_count() != 1:
        raise ValueError(f"Packing must be a power of 2, got: {packing}")
    return Tmem(
        building.canonical_tiled(
            ((TMEM_ROWS, packing), (fa.WARP_SIZE, packing)),
            warp_dims=(-4,),
            lane_dims=(-2,),
            vector_dim=-1,
            kind=tcgen05.TMEMLayout,
        )
    )


@cache
def tmem_half_lane(columns: int, packing: int) -> tcgen05.TMEMLayout:
    """``tcgen05.tmem_half_lane_layout``: 64 rows, each warp's 16 rows in half its lanes."""
    if packing > (columns // 2) or packing.bit_count() != 1:
        raise ValueError(f"Packing must be <= 8 and a power of 2, got: {packing}")
    if columns % 16:
        raise ValueError(f"Columns must be a multiple of 16, got: {columns}")
    _refuse_redundant_packing(columns, packing)
    return building.canonical_tiled(
        ((TMEM_ROWS // 2, columns), (fa.WARP_SIZE // 2, columns // 2), (packing,)),
        warp_dims=(-5,),
        lane_dims=(-4, -3),
        vector_dim=-1,
        kind=tcgen05.TMEMLayout,
    )


@cache
def tmem_m64_collective(columns: int, packing: int) -> tcgen05.TMEMLayout:
    """``tcgen05.tmem_m64_collective_layout``: 64 rows, a warp pair's halves of the columns."""
    if packing > 8 or packing.bit_count() != 1:
        raise ValueError(f"Packing must be <= 8 and a power of 2, got: {packing}")
    if columns % 16:
        raise ValueError(f"Columns must be a multiple of 16, got: {columns}")
    _refuse_redundant_packing(columns, packing)
    return building.canonical_tiled(
        ((TMEM_ROWS // 2, columns), (fa.WARP_SIZE, columns // 2), (packing,)),
        warp_dims=(-4, -5),
        lane_dims=(-3,),
        vector_dim=-1,
        kind=tcgen05.TMEMLayout,
    )


def _refuse_redundant_packing(columns: int, packing: int) -> None:
    """Where JAX's constructor refuses the half-row TMEM layouts' last tile: it must
    divide the half of the columns it splits, and a tile as wide as them tiles nothing
    (the layout would not be canonical)."""
    half = columns // 2
    if half % packing:
        raise ValueError(f"a packing of {packing} does not divide {half} columns")
    if packing == half:
        raise ValueError(f"a packing of {packing} over {columns} columns is not canonical")


def mma_layouts(element_type: ir.Type, m: int, n: int) -> MMALayouts:
    """The accumulator/A/B register layouts of a warp-level MMA (``.acc``, ``.lhs``, ``.rhs``).

    ``(m, n)`` is the accumulator's shape: it decides how the four warps split
    between M and N (as many along M as its tile divides). Raises ValueError
    (JAX's) where no split fits.
    """
    from jax.experimental.mosaic.gpu.mma import MMALayouts

    return MMALayouts.for_shape(element_type, m, n)


__all__ = ["CONVERSIONS", "UNTILED"]


def packs_sub_byte_registers(op_name: str, source: object, result: object) -> bool:
    """Whether the lowering converts this pair of element types by packing registers.

    ``FragmentedArray.astype`` converts 4-bit integers to i8 (signed) and to
    f8E4M3FN by concatenating vector registers into 32-bit words, which a
    splat, whose registers are scalars, does not have ("Cannot concatenate
    non-vector values"). ``source`` and ``result`` are the MLIR element types.
    """
    if not (isinstance(source, ir.IntegerType) and source.width == 4):
        return False
    if op_name == "arith.extsi":
        return isinstance(result, ir.IntegerType) and result.width == 8
    if op_name in ("arith.sitofp", "arith.uitofp"):
        return isinstance(result, ir.Float8E4M3FNType)
    return False


@cache
def registers_hold_bits(value: Reg, bitwidth: int, multiple: int) -> bool:
    """Whether each register of ``value`` holds a multiple of ``multiple`` bits.

    An optimization barrier needs whole 32-bit words, a conversion into a
    sub-byte type whole bytes. Elements that wide are fine one per register;
    narrower ones only packed into vector registers long enough (a splat
    holds one scalar register).
    """
    if bitwidth % multiple == 0:
        return True
    layout = value.layout
    if isinstance(layout, fa.TiledLayout):
        return layout.vector_length * bitwidth % multiple == 0
    if isinstance(layout, fa.WGStridedFragLayout):
        return layout.vec_size * bitwidth % multiple == 0
    return False


@cache
def stores_whole_registers(value: Reg, bitwidth: int) -> bool:
    """Whether each register of a tiled layout is one 32- or 64-bit store of distinct elements."""
    layout = value.layout
    if not isinstance(layout, fa.TiledLayout):
        return True
    if any(isinstance(d, fa.Replicated) for d in (*layout.warp_dims, *layout.lane_dims)):
        return False
    return layout.vector_length * bitwidth in (32, 64)


@cache
def wide_rows(bitwidth: int) -> fa.TiledLayout:
    """WGMMA's rows (16 a warp, 64 a warpgroup) with each row's 32 bytes in 2 lanes.

    16 bytes a thread: a row is one whole 32-byte sector, so an optimized GMEM
    transfer of it coalesces, where WGMMA's 4 lanes of 4 bytes (16-bit
    elements) do not and the lowering rejects the transfer.
    """
    vec = 128 // bitwidth
    return building.canonical_tiled(
        ((64, 2 * vec), (16, 2 * vec), (vec,)), warp_dims=(-5,), lane_dims=(-3, -2), vector_dim=-1
    )


@cache
def minor_only(rank: int, vec: int) -> fa.TiledLayout:
    """A layout tiling only the minor dim: ``vec`` elements a thread, 32 lanes, 4 warps.

    Each thread holds whole columns, so reducing over any leading dim stays
    within the thread (the tile has size 1 there); its reduction over the
    leading dims is the rank-1 ``(128 * vec,)`` tiling of the minor dim. A
    chunk of fewer rows than WGMMA's 64 (a ``(32, 128)`` slice reduced over its
    rows) has no other tiled layout.
    """
    width = 128 * vec
    return building.canonical_tiled(
        ((1,) * (rank - 1) + (width,), (32 * vec,), (vec,)),
        warp_dims=(-3,),
        lane_dims=(-2,),
        vector_dim=-1,
    )


@cache
def keep_dims(layout: fa.TiledLayout, axis: int) -> fa.TiledLayout:
    """The layout a reduction over ``axis`` of ``layout`` has when it keeps the dim.

    Every tile keeps its rank with size 1 along ``axis``; the warps and lanes
    that split ``axis`` hold copies instead. Reducing it over ``axis`` gives
    ``layout.reduce([axis])``, which is what a ``broadcast_in_dim`` of the
    reduced vector to the keep-dims shape needs (JAX's lowering broadcasts
    only between layouts tiled at the rank of their own value).
    """
    rank = len(layout.base_tile_shape)
    tiles = tuple(
        tuple(1 if i == axis - (rank - len(tile)) else d for i, d in enumerate(tile))
        for tile in layout.tiling.tiles
    )
    along_axis = layout.tiling.tile_dimension(axis)
    sizes = layout.tiled_tiling_shape

    def replicate(d: _Dim) -> _Dim:
        return fa.Replicated(sizes[d]) if isinstance(d, int) and along_axis[d] else d

    return fa.TiledLayout(
        fa.Tiling(tiles),
        tuple(replicate(d) for d in layout.warp_dims),
        tuple(replicate(d) for d in layout.lane_dims),
        layout.vector_dim,
        _check_canonical=False,
    ).canonicalize()


@cache
def lifted(layout: fa.TiledLayout, rank: int) -> fa.TiledLayout | None:
    """``layout`` tiling ``rank`` dims: size-1 leading tile dims added to its full-rank tiles.

    A layout tiled below the rank of its value cannot be the result of a
    broadcast (or the source of a reduction); lifted, it can, and reducing it
    over the added leading dims gives ``layout`` back. None where the full-rank
    tiles do not all come first (then the added dims have no fixed place).
    """
    base = len(layout.base_tile_shape)
    extra = rank - base
    if extra <= 0:
        return layout if extra == 0 else None
    tiles = layout.tiling.tiles
    full = 0
    while full < len(tiles) and len(tiles[full]) == base:
        full += 1
    if any(len(t) >= base for t in tiles[full:]):
        return None
    # Follow both tilings dim by dim: original dims are numbered, added ones
    # are None, so each original dim index finds its place in the lifted shape.
    ours: list[int] = list(range(base))
    theirs: list[int | None] = [None] * extra + list(ours)
    fresh = base
    for tile in tiles[1:]:
        k = len(tile)
        outer, inner = list(range(fresh, fresh + k)), list(range(fresh + k, fresh + 2 * k))
        fresh += 2 * k
        ours[-k:] = outer + inner
        if k == base:
            added = [None] * extra
            theirs[-(k + extra) :] = [*added, *outer, *added, *inner]
        else:
            theirs[-k:] = outer + inner
    position = {d: i - len(theirs) for i, d in enumerate(theirs) if d is not None}

    def move(d: _Dim) -> _Dim:
        return position[ours[d]] if isinstance(d, int) else d

    new_tiles = tuple((1,) * extra + t if len(t) == base else t for t in tiles)
    return fa.TiledLayout(
        fa.Tiling(new_tiles),
        tuple(move(d) for d in layout.warp_dims),
        tuple(move(d) for d in layout.lane_dims),
        position[ours[layout.vector_dim]],
        _check_canonical=False,
    ).canonicalize()
