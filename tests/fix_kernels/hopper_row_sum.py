"""Hopper: row sums of a WGMMA tile cast to the column layout (``reduce(0)`` where the
sum over axis 1 is ``reduce(1)``)."""

import jax
import jax.numpy as jnp
from jax.experimental.pallas import mosaic_gpu as plgpu


def row_sums(x):
    def body(x_gmem, out_gmem, x_smem, barrier):
        plgpu.copy_gmem_to_smem(x_gmem, x_smem, barrier)
        plgpu.barrier_wait(barrier)
        x = plgpu.layout_cast(x_smem[...], plgpu.Layout.WGMMA)
        s = jnp.sum(x, axis=1)
        out_gmem[...] = plgpu.layout_cast(s, plgpu.Layout.WGMMA.reduce(0))

    return plgpu.kernel(
        body,
        out_type=jax.ShapeDtypeStruct((x.shape[0],), jnp.float32),
        scratch_types=[plgpu.SMEM(x.shape, x.dtype), plgpu.Barrier()],
        compiler_params=plgpu.CompilerParams(lowering_semantics=plgpu.LoweringSemantics.Warpgroup),
    )(x)
