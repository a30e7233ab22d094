"""The transfer schedule's first step, run for real: the reference ``hw.schedule`` is held to.

``probe_schedule`` takes the arguments of ``smalto.hw.schedule.schedule_starts``
and runs JAX's ``FragmentedArray.transfer_tiled`` up to its first step on a
throw-away ref of the same type, in a detached function of a context of its
own, building the IR the lowering builds. This is how smalto answered the
question before ``hw.schedule`` (0.5-4 ms a question the first time); the
tests compare the two on every question the corpus asks and on generated ones.
"""

from __future__ import annotations

import functools

from jax._src.interpreters import mlir as jax_mlir
from jax._src.lib.mlir import ir
from jax._src.lib.mlir.dialects import builtin, func
from jax.experimental.mosaic.gpu import dialect_lowering, utils
from jax.experimental.mosaic.gpu import fragmented_array as fa

from smalto.hw.schedule import NO_PLAN
from smalto.hw.strides import row_major


@functools.cache
def _scratch_context() -> ir.Context:
    """A context of our own for the throw-away ops, independent of the caller's."""
    return jax_mlir.make_ir_context()


def probe_schedule(
    tiling: tuple[int, ...],
    swizzle: int,
    reg: fa.TiledLayout,
    shape: tuple[int, ...],
    strides: tuple[int, ...],
    bitwidth: int,
    optimized: bool,
    txmatrix: bool = True,
    *,
    gmem: bool = False,
    untiled: bool = False,
) -> bool:
    """Runs the first step of ``transfer_tiled`` on a ref of the tiled type.

    A tiled SMEM ref's tiles are dense: the lowering compacts the strides
    within a tile (``tile_strides``). An ``untiled`` ref (GMEM, or SMEM with
    no tiling) keeps its own strides: the lowering only prepends unit dims
    (``load_untiled``/``store_untiled``), so the probe does the same where
    those strides are not row-major (a column, a window, a transposed ref).

    Where JAX's pass would crash instead of answering (an exception other than
    the three "no plan" ones: e.g. a 4-bit layout whose vectors are not whole
    bytes, or the 8-bit transposed ``ldmatrix`` path, which looks for the
    target architecture on an enclosing module that the throw-away function
    does not have), we answer "no": the lowering could not use such a plan
    either way.
    """
    ctx = _scratch_context()
    own_strides = untiled and tuple(strides) != row_major(shape)
    with ctx, ir.Location.unknown(ctx):
        memory_space = None if gmem else utils.smem()
        element = ir.IntegerType.get_signless(bitwidth)
        if own_strides:
            dynamic = ir.ShapedType.get_dynamic_stride_or_offset()
            ref_type = ir.MemRefType.get(
                shape, element, ir.StridedLayoutAttr.get(dynamic, list(strides)), memory_space
            )
        else:
            try:
                ref_type = ir.MemRefType.get(
                    utils.tile_shape(shape, tiling),
                    element,
                    ir.StridedLayoutAttr.get(0, dialect_lowering.tile_strides(strides, tiling)),
                    memory_space,
                )
            except ValueError:
                return False  # the tiling does not apply: validity rules it out first
        # Detached, as in JAX's pass (no enclosing module): see above.
        scratch = func.FuncOp("smalto_transfer_probe", ir.FunctionType.get([], []))
        try:
            with ir.InsertionPoint(scratch.add_entry_block()):
                ref = builtin.UnrealizedConversionCastOp([ref_type], []).results[0]
                if own_strides:
                    ref = utils.memref_reshape(ref, (*(1 for _ in shape), *shape))
                for use_txmatrix in (True, False) if txmatrix else (False,):
                    steps = fa.FragmentedArray.transfer_tiled(
                        ref,
                        swizzle,
                        reg,
                        shape,
                        optimized=optimized,
                        ref_tiling_rank=len(tiling),
                        use_txmatrix=use_txmatrix,
                    )
                    try:
                        next(steps)
                    except NO_PLAN:
                        continue
                    except Exception:  # noqa: BLE001 -- JAX's pass would crash here
                        return False
                    return True
                return False
        finally:
            scratch.erase()
