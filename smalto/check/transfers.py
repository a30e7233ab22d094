"""Whether the lowering can move registers to or from an SMEM ref with given transforms.

The lowering of ``vector_load``/``vector_store`` (jax 0.12.0.1) builds its
schedule with ``FragmentedArray.transfer_tiled``: first through the
``ldmatrix``/``stmatrix`` path, and only if that path declares itself
ineligible (``TxMatrixIneligible``), through plain loads and stores. Any other
failure is a failure of the lowering: unlike JAX's inference, which tries the
plain path after any "no plan" error, the lowering does not fall back then.
``async_store_smem`` uses the plain path only. An untiled ref is one tile
spanning the whole shape; no swizzle is the 16-byte (identity) swizzle.

Rather than restate that schedule, the checker runs its first step on a
throw-away ref of the tiled type, inside a throw-away module that names the
target architecture (the transposed 8-bit ``ldmatrix`` path reads it).
"""

from __future__ import annotations

import functools
import math

from jax._src.lib.mlir import ir
from jax._src.lib.mlir.dialects import builtin, func
from jax.experimental.mosaic.gpu import fragmented_array as fa
from jax.experimental.mosaic.gpu import utils as mgpu_utils

from smalto.check.smem import Transforms, tiled_strides
from smalto.hw.strides import row_major

_NO_PLAN = (fa.TransferPlanDerivationError, fa.UnsupportedTransferError)


def smem_transfer_problem(
    transforms: Transforms,
    layout: fa.FragmentedLayout,
    shape: tuple[int, ...],
    strides: tuple[int, ...],
    bitwidth: int,
    *,
    optimized: bool,
    txmatrix: bool,
    arch: tuple[int, int],
    store: bool,
) -> str | None:
    """Why the lowering cannot transfer ``layout`` through this ref; None when it can.

    ``txmatrix``: the lowering tries ``ldmatrix``/``stmatrix`` first (vector
    loads and stores; not ``async_store_smem``). ``store``: splat values are
    stored whatever the swizzle (every element is the same), never loaded.
    """
    if isinstance(layout, fa.WGSplatFragLayout):
        if not store:
            return "a splat is never loaded from SMEM"
        if transforms.tiling is not None:
            return "a splat is only stored untiled"
        return splat_store_problem(shape, bitwidth) or _splat_strides_problem(
            shape, strides, bitwidth
        )
    if isinstance(layout, fa.WGStridedFragLayout):
        if transforms.tiling is not None or transforms.swizzle is not None:
            return "a strided layout moves only to and from refs with no tiling and no swizzle"
        return _strided_bytes_problem(layout, bitwidth) or strided_vectors_problem(
            layout.vec_size, shape, strides
        )
    assert isinstance(layout, fa.TiledLayout)
    return _tiled_problem(
        transforms, layout, shape, strides, bitwidth, optimized, txmatrix, tuple(arch)
    )


def gmem_transfer_problem(
    layout: fa.FragmentedLayout,
    shape: tuple[int, ...],
    strides: tuple[int, ...],
    bitwidth: int,
    *,
    optimized: bool,
    arch: tuple[int, int],
    store: bool = True,
) -> str | None:
    """Why the lowering cannot move ``layout`` to or from a GMEM ref; None when it can.

    Splat values always move, strided ones in vectors of whole bytes. A tiled
    layout needs the lowering's schedule (``transfer_tiled``, the ref
    untiled): vectors along a dim of stride 1. Optimized, the transfer must
    also coalesce (the lowering plans it with ``plan_gmem_transfer``: at least
    4 bytes a thread, whole 32-byte sectors a warp, whole 128-byte lines a
    warpgroup).
    """
    if isinstance(layout, fa.WGStridedFragLayout):
        return _strided_bytes_problem(layout, bitwidth) or strided_vectors_problem(
            layout.vec_size, shape, strides
        )
    if not isinstance(layout, fa.TiledLayout):
        if not store:
            return None
        return splat_store_problem(shape, bitwidth) or _splat_strides_problem(
            shape, strides, bitwidth
        )
    return _tiled_problem(
        Transforms(None, None),
        layout,
        shape,
        strides,
        bitwidth,
        optimized,
        False,
        tuple(arch),
        gmem=True,
    )


def splat_store_problem(shape: tuple[int, ...], bitwidth: int) -> str | None:
    """Why the lowering cannot store a splat of this shape; None when it can.

    ``FragmentedArray._store_untiled_splat``: one element by a scalar store;
    more as a strided value of gcd(64 / bitwidth, elements / 128) elements a
    thread, which must cover the 128 threads evenly in vectors of whole bytes.
    """
    elements = math.prod(shape)
    if elements == 1:
        return None
    if bitwidth > 64:
        return f"a splat of {bitwidth}-bit elements is never stored"
    vector = math.gcd(64 // bitwidth, elements // fa.WARPGROUP_SIZE)
    if elements % (fa.WARPGROUP_SIZE * vector):
        return (
            f"a splat of {elements} elements is stored by 128 threads, {vector} element(s) "
            "each: it must have a multiple of that many"
        )
    if vector * bitwidth % 8:
        return (
            f"a splat of {elements} {bitwidth}-bit elements is stored {vector} element(s) "
            f"({vector * bitwidth} bits) a thread, not whole bytes"
        )
    return None


def _splat_strides_problem(
    shape: tuple[int, ...], strides: tuple[int, ...], bitwidth: int
) -> str | None:
    """A splat of more than one element is stored as a strided value (see above)."""
    elements = math.prod(shape)
    if elements == 1:
        return None
    vector = math.gcd(64 // bitwidth, elements // fa.WARPGROUP_SIZE)
    problem = strided_vectors_problem(vector, shape, strides)
    return f"a splat is stored as a strided value, and {problem}" if problem else None


def strided_vectors_problem(
    vec_size: int, shape: tuple[int, ...], strides: tuple[int, ...]
) -> str | None:
    """Why ``transfer_strided`` cannot move vectors of ``vec_size`` through a ref of these
    strides; None when it can.

    A thread's vector is one ``vector.load``/``vector.store`` along the minor
    dim (one element goes anywhere). Runs of contiguous dims are folded
    together first; the unit-stride run must hold whole vectors, the other
    dims step by whole vectors.
    """
    if vec_size == 1 or not strides:
        return None
    if strides[-1] != 1:
        return (
            f"a strided value moves {vec_size} elements a vector along the minor dim, "
            f"which has stride {strides[-1]} (a column or transposed view): only 1 element "
            "a vector moves through it"
        )
    folded: list[list[int]] = []  # [size, stride] of each run of contiguous dims
    for size, stride in zip(reversed(shape), reversed(strides), strict=True):
        if folded and stride == folded[-1][0] * folded[-1][1]:
            folded[-1][0] *= size
        else:
            folded.append([size, stride])
    if len(folded) == 1:
        return None
    for size, stride in folded:
        if stride == 1 and size % vec_size:
            return f"a contiguous run of {size} elements holds no whole vectors of {vec_size}"
        if stride != 1 and size > 1 and stride % vec_size:
            return f"a dim of stride {stride} does not step by whole vectors of {vec_size}"
    return None


def _strided_bytes_problem(layout: fa.WGStridedFragLayout, bitwidth: int) -> str | None:
    """Strided loads and stores move vectors of whole bytes (``load_strided``)."""
    if layout.vec_size * bitwidth % 8:
        return (
            f"a strided transfer of {bitwidth}-bit elements moves vectors of whole bytes, not "
            f"{layout.vec_size} element(s) ({layout.vec_size * bitwidth} bits)"
        )
    return None


@functools.lru_cache(maxsize=4096)
def _tiled_problem(
    transforms: Transforms,
    layout: fa.TiledLayout,
    shape: tuple[int, ...],
    strides: tuple[int, ...],
    bitwidth: int,
    optimized: bool,
    txmatrix: bool,
    arch: tuple[int, int],
    *,
    gmem: bool = False,
) -> str | None:
    tiling = transforms.tiling or shape
    memory_space = None if gmem else mgpu_utils.smem()
    element = ir.IntegerType.get_signless(bitwidth)
    # Untiled, the lowering keeps the ref's own strides and prepends unit dims
    # (``load_untiled``); tiled, it compacts the strides within a tile.
    own_strides = transforms.tiling is None and strides != row_major(shape)
    if own_strides:
        dynamic = ir.ShapedType.get_dynamic_stride_or_offset()
        ref_type = ir.MemRefType.get(
            shape, element, ir.StridedLayoutAttr.get(dynamic, list(strides)), memory_space
        )
    else:
        ref_strides = tiled_strides(strides, tiling)
        if ref_strides is None or any(
            s % t for s, t in zip(shape[-len(tiling) :], tiling, strict=True)
        ):
            return f"tiling {tiling} does not apply to the ref"
        ref_type = ir.MemRefType.get(
            mgpu_utils.tile_shape(shape, tiling),
            element,
            ir.StridedLayoutAttr.get(0, list(ref_strides)),
            memory_space,
        )
    i32 = ir.IntegerType.get_signless(32)
    module = ir.Module.create()
    module.operation.attributes["mosaic_gpu.arch_major"] = ir.IntegerAttr.get(i32, arch[0])
    module.operation.attributes["mosaic_gpu.arch_minor"] = ir.IntegerAttr.get(i32, arch[1])
    with ir.InsertionPoint(module.body):
        probe = func.FuncOp("smalto_check_transfer", ir.FunctionType.get([], []))
    with ir.InsertionPoint(probe.add_entry_block()):
        ref = builtin.UnrealizedConversionCastOp([ref_type], []).results[0]
        if own_strides:
            ref = mgpu_utils.memref_reshape(ref, (*(1 for _ in shape), *shape))

        def first_step(use_txmatrix: bool) -> None:
            steps = fa.FragmentedArray.transfer_tiled(
                ref,
                transforms.swizzle or 16,
                layout,
                shape,
                optimized=optimized,
                ref_tiling_rank=len(tiling),
                use_txmatrix=use_txmatrix,
            )
            next(steps)

        try:
            if txmatrix:
                try:
                    first_step(True)
                    return None
                except fa.TxMatrixIneligible:
                    pass  # the lowering falls back to plain loads and stores
            first_step(False)
        except (*_NO_PLAN, ValueError, NotImplementedError) as error:
            return f"{type(error).__name__}: {error}"
    return None
