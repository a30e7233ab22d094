"""Which SMEM <-> register and TMEM <-> register transfers the lowering supports.

A tiled transfer is feasible exactly when the lowering's own schedule,
``FragmentedArray.transfer_tiled``, can start for it: first through the
(transposed) ``ldmatrix/stmatrix`` path, then the plain one. ``hw.schedule``
decides that as the schedule does before it builds any IR, with JAX's own
planners; the answers are cached: kernels ask about a handful of (layout,
tiling, shape) triples.
"""

from __future__ import annotations

import enum
import math
from functools import lru_cache

from jax.experimental.mosaic.gpu import fragmented_array as fa
from jax.experimental.mosaic.gpu import tcgen05

from smalto.hw import layouts as hl
from smalto.hw import schedule


class Transfer(enum.Enum):
    """How a vector_load/vector_store between SMEM and registers must perform.

    An op that does not say asks for an optimized transfer.
    """

    OPTIMIZED = "optimized"  # bank-conflict free, or rejected
    UNOPTIMIZED = "unoptimized"  # any schedule will do


@lru_cache(maxsize=8192)
def smem_transfer_supported(
    tiling: tuple[int, ...] | None,
    swizzle: int | None,
    reg: fa.FragmentedLayout,
    shape: tuple[int, ...],
    strides: tuple[int, ...],
    bitwidth: int,
    mode: Transfer,
    txmatrix: bool = True,
    store: bool = True,
) -> bool:
    """Whether registers in ``reg`` can move to/from an SMEM ref with these transforms.

    Splat and strided values move only through refs with neither tiling nor
    swizzle, with a unit minor stride (a splat of more than one element is
    stored as a strided value), strided ones in vectors of whole bytes
    (``load_strided`` and strided stores refuse 4-bit elements one at a
    time). A tiled layout needs
    the lowering's schedule to exist: an untiled ref counts as one tile
    spanning the whole shape, and no swizzle is the 16-byte (identity)
    swizzle. Without ``txmatrix`` (``async_store_smem``) only the plain path
    is tried, and only into a tiled, swizzled ref: that op's lowering takes
    one tile transform and gives its schedule no swizzle otherwise ("Only
    swizzled transfers supported").
    """
    if not isinstance(reg, fa.TiledLayout):
        # Moved untransformed, by vectors along the minor dim (see _strided_fits).
        return (
            tiling is None
            and swizzle is None
            and _strided_fits(reg, shape, strides, bitwidth)
            and _whole_bytes(reg, bitwidth)
            and (not store or _splat_stores(reg, shape, bitwidth))
        )
    if not txmatrix and (tiling is None or swizzle is None):
        return False
    return _schedule_starts(
        tiling or shape,
        swizzle or 16,
        reg,
        shape,
        strides,
        bitwidth,
        mode is Transfer.OPTIMIZED,
        txmatrix,
        untiled=tiling is None,
    )


@lru_cache(maxsize=4096)
def gmem_transfer_supported(
    reg: fa.FragmentedLayout,
    shape: tuple[int, ...],
    strides: tuple[int, ...],
    bitwidth: int,
    mode: Transfer,
    store: bool = True,
) -> bool:
    """Whether registers in ``reg`` can move to/from a GMEM ref by ``vector_load/store``.

    A tiled layout needs the lowering's schedule (``transfer_tiled``): its
    vectors run along a dim of stride 1 (WGMMA_TRANSPOSED does not fit a
    row-major ref), whether optimized or not. An optimized transfer must also
    coalesce: at least 4 bytes per thread, whole 32-byte sectors per warp,
    whole 128-byte lines per warpgroup. WGMMA gives a 16-bit row 4 lanes x 4
    bytes and fails it. JAX's constraints leave this out; its lowering
    raises. Splat and strided values move as ``_strided_fits`` says, in
    vectors of whole bytes. The ref's own strides count: a column of a
    table (``w_ref[:, j]``) puts a lane's neighbours 8-16 bytes apart.
    """
    if not isinstance(reg, fa.TiledLayout):
        return (
            _strided_fits(reg, shape, strides, bitwidth)
            and _whole_bytes(reg, bitwidth)
            and (not store or _splat_stores(reg, shape, bitwidth))
        )
    optimized = mode is Transfer.OPTIMIZED
    return _schedule_starts(
        shape, 16, reg, shape, strides, bitwidth, optimized, gmem=True, untiled=True
    )


def _strided_fits(
    reg: fa.FragmentedLayout, shape: tuple[int, ...], strides: tuple[int, ...], bitwidth: int
) -> bool:
    """Whether a splat or strided value moves through a ref of these strides.

    A strided value moves by vectors of its ``vec_size``; a splat of more than
    one element is stored as a strided value (``_splat_vector``); a
    one-element splat is one scalar store.
    """
    if isinstance(reg, fa.WGSplatFragLayout):
        elements = math.prod(shape)
        if elements == 1 or bitwidth > 64:
            return True  # a scalar store; or never stored (``_splat_stores`` says why)
        return strided_vectors_fit(_splat_vector(elements, bitwidth), shape, strides)
    assert isinstance(reg, fa.WGStridedFragLayout)
    return strided_vectors_fit(reg.vec_size, shape, strides)


def strided_vectors_fit(vec_size: int, shape: tuple[int, ...], strides: tuple[int, ...]) -> bool:
    """Whether ``FragmentedArray.transfer_strided`` moves vectors of ``vec_size`` through a
    ref of this shape and these strides (loads and stores alike).

    One element a vector goes anywhere (a column or a transposed ref too).
    Longer vectors are ``vector.load``/``vector.store`` along the minor dim,
    which MLIR verifies to have unit stride. Where the ref is not contiguous
    as a whole, its runs of contiguous dims are folded; then the unit-stride
    run must hold whole vectors and every other dim must step by them.
    """
    if vec_size == 1 or not strides:
        return True
    if strides[-1] != 1:
        return False
    runs: list[tuple[int, int]] = []  # (size, stride) of each run of contiguous dims
    for size, stride in zip(reversed(shape), reversed(strides), strict=True):
        if runs and stride == runs[-1][0] * runs[-1][1]:
            runs[-1] = (runs[-1][0] * size, runs[-1][1])
        else:
            runs.append((size, stride))
    if len(runs) == 1:
        return True  # contiguous: moved as one flat run of vectors
    return all(
        size % vec_size == 0 if stride == 1 else size == 1 or stride % vec_size == 0
        for size, stride in runs
    )


def _whole_bytes(reg: fa.FragmentedLayout, bitwidth: int) -> bool:
    """A strided transfer moves vectors of whole bytes (sub-byte elements in groups)."""
    return not isinstance(reg, fa.WGStridedFragLayout) or reg.vec_size * bitwidth % 8 == 0


def _splat_stores(reg: fa.FragmentedLayout, shape: tuple[int, ...], bitwidth: int) -> bool:
    """Whether the lowering can store a splat of this shape (a non-splat: True).

    One element goes by a scalar store. More go as a strided value of
    gcd(64 / bitwidth, elements / 128) elements a thread
    (``FragmentedArray._store_untiled_splat``): the elements must fill all
    128 threads' vectors, and each vector whole bytes. So a splat of 128
    4-bit elements (4 bits a thread), or of 64 of any width, is never stored.
    """
    if not isinstance(reg, fa.WGSplatFragLayout):
        return True
    elements = math.prod(shape)
    if elements == 1:
        return True
    if bitwidth > 64:
        return False
    vector = _splat_vector(elements, bitwidth)
    return elements % (fa.WARPGROUP_SIZE * vector) == 0 and vector * bitwidth % 8 == 0


def _splat_vector(elements: int, bitwidth: int) -> int:
    """The elements a thread stores of a splat (``FragmentedArray._store_untiled_splat``)."""
    return math.gcd(64 // bitwidth, elements // fa.WARPGROUP_SIZE)


# A load and a store of one value ask the schedule the same question: one answer each.
_schedule_starts = lru_cache(maxsize=8192)(schedule.schedule_starts)


@lru_cache(maxsize=4096)
def tmem_transfer_supported(
    tmem: tcgen05.TMEMLayout,
    reg: fa.FragmentedLayout,
    shape: tuple[int, ...],
    bitwidth: int,
    load: bool = False,
) -> bool:
    """Whether registers in ``reg`` can move to/from TMEM laid out as ``tmem``.

    A load (``load``) reads one tile of rows: the lowering (``TMEMRef.load``)
    raises "Loading multiple row tiles" for a layout whose registers span
    several, e.g. WGMMA's 64-row tile on a 128-row ref, which stores accept.
    """
    if not isinstance(reg, fa.TiledLayout):
        return False
    if load and reg.registers_shape(shape)[0] != 1:
        return False
    packing = tmem.vector_length
    columns = shape[1]
    default = hl.tmem_default(packing).layout
    if reg == fa.TCGEN05_LAYOUT and tmem == default:
        return True
    if reg == hl.tmem_as_tiled(tmem) and packing * bitwidth == 32:
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
        if tmem == hl.tmem_half_lane(columns, packing):
            return True
    if packing <= 8 and reg == hl.m64_collective(columns):
        return tmem == hl.tmem_m64_collective(columns, packing)
    return False
