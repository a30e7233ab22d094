"""Hopper: row sums cast to a layout constant imported from another module of the
project (``row_layouts.SUMS``, the column layout): the fix retargets the cast here."""

import jax
import jax.numpy as jnp
from jax.experimental.pallas import mosaic_gpu as plgpu
from row_layouts import SUMS, TILE


def row_sums(x):
    def body(x_gmem, out_gmem, x_smem, barrier):
        plgpu.copy_gmem_to_smem(x_gmem, x_smem, barrier)
        plgpu.barrier_wait(barrier)
        x = plgpu.layout_cast(x_smem[...], TILE)
        s = jnp.sum(x, axis=1)
        out_gmem[...] = plgpu.layout_cast(s, SUMS)

    return plgpu.kernel(
        body,
        out_type=jax.ShapeDtypeStruct((x.shape[0],), jnp.float32),
        scratch_types=[plgpu.SMEM(x.shape, x.dtype), plgpu.Barrier()],
        compiler_params=plgpu.CompilerParams(lowering_semantics=plgpu.LoweringSemantics.Warpgroup),
    )(x)
