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
        if strides and strides[-1] != 1 and math.prod(shape) > 1:
            # It is stored as a strided value: vector stores along the minor dim.
            return "a splat is stored only into refs whose minor dim is contiguous"
        return splat_store_problem(shape, bitwidth)
    if isinstance(layout, fa.WGStridedFragLayout):
        if transforms.tiling is not None or transforms.swizzle is not None:
            return "a strided layout moves only to and from refs with no tiling and no swizzle"
        if strides and strides[-1] != 1:
            # Its vector loads and stores run along the minor dim.
            return "a strided layout moves only to and from refs whose minor dim is contiguous"
        return _strided_bytes_problem(layout, bitwidth)
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
    if not isinstance(layout, fa.TiledLayout) and strides and strides[-1] != 1:
        if math.prod(shape) > 1:
            return "a splat or strided value moves only along a contiguous minor dim"
    if isinstance(layout, fa.WGStridedFragLayout):
        return _strided_bytes_problem(layout, bitwidth)
    if not isinstance(layout, fa.TiledLayout):
        return splat_store_problem(shape, bitwidth) if store else None
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
    ref_strides = tiled_strides(strides, tiling)
    if ref_strides is None or any(
        s % t for s, t in zip(shape[-len(tiling) :], tiling, strict=True)
    ):
        return f"tiling {tiling} does not apply to the ref"
    ref_type = ir.MemRefType.get(
        mgpu_utils.tile_shape(shape, tiling),
        ir.IntegerType.get_signless(bitwidth),
        ir.StridedLayoutAttr.get(0, list(ref_strides)),
        None if gmem else mgpu_utils.smem(),
    )
    i32 = ir.IntegerType.get_signless(32)
    module = ir.Module.create()
    module.operation.attributes["mosaic_gpu.arch_major"] = ir.IntegerAttr.get(i32, arch[0])
    module.operation.attributes["mosaic_gpu.arch_minor"] = ir.IntegerAttr.get(i32, arch[1])
    with ir.InsertionPoint(module.body):
        probe = func.FuncOp("smalto_check_transfer", ir.FunctionType.get([], []))
    with ir.InsertionPoint(probe.add_entry_block()):
        ref = builtin.UnrealizedConversionCastOp([ref_type], []).results[0]

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
