"""Hopper: two kernels share the helper that casts their sums to a reduced layout. Column
sums (over axis 0) want ``reduce(0)``, and have it; row sums (over axis 1) want
``reduce(1)``: fixing the helper for row sums would break column sums."""

import jax
import jax.numpy as jnp
from jax.experimental.pallas import mosaic_gpu as plgpu

PARAMS = plgpu.CompilerParams(lowering_semantics=plgpu.LoweringSemantics.Warpgroup)


def _as_sums(s):
    return plgpu.layout_cast(s, plgpu.Layout.WGMMA.reduce(0))


def _sums(x, axis):
    def body(x_gmem, out_gmem, x_smem, barrier):
        plgpu.copy_gmem_to_smem(x_gmem, x_smem, barrier)
        plgpu.barrier_wait(barrier)
        tile = plgpu.layout_cast(x_smem[...], plgpu.Layout.WGMMA)
        out_gmem[...] = _as_sums(jnp.sum(tile, axis=axis))

    return plgpu.kernel(
        body,
        out_type=jax.ShapeDtypeStruct((x.shape[1 - axis],), jnp.float32),
        scratch_types=[plgpu.SMEM(x.shape, x.dtype), plgpu.Barrier()],
        compiler_params=PARAMS,
    )(x)


def row_sums(x):
    return _sums(x, axis=1)


def col_sums(x):
    return _sums(x, axis=0)
