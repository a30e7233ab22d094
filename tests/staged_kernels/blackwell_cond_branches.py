"""Blackwell: the accumulator stored in bf16 straight to GMEM in both branches of a
``lax.cond`` on the block's index, and under a ``pl.when``."""

import jax
import jax.numpy as jnp
from jax.experimental import pallas as pl
from jax.experimental.pallas import mosaic_gpu as plgpu

SWIZZLED = (plgpu.TilingTransform((8, 64)), plgpu.SwizzleTransform(128))


def matmul_relu_or_not(a, b):
    m, n = a.shape[0], b.shape[1]

    def body(a_gmem, b_gmem, o_gmem, p_gmem, a_smem, b_smem, acc_tmem, loaded, done):
        plgpu.copy_gmem_to_smem(a_gmem, a_smem, loaded)
        plgpu.copy_gmem_to_smem(b_gmem, b_smem, loaded)
        plgpu.barrier_wait(loaded)
        plgpu.tcgen05_mma(acc_tmem, a_smem, b_smem, done, accumulate=False)
        plgpu.barrier_wait(done)
        acc = plgpu.async_load_tmem(acc_tmem)
        first = jax.lax.axis_index("x") == 0

        def relu():
            o_gmem[...] = jnp.maximum(acc, 0.0).astype(jnp.bfloat16)

        def plain():
            o_gmem[...] = acc.astype(jnp.bfloat16)

        jax.lax.cond(first, relu, plain)

        @pl.when(first)
        def _():
            p_gmem[...] = (acc * 0.5).astype(jnp.bfloat16)

    return plgpu.kernel(
        body,
        out_type=(
            jax.ShapeDtypeStruct((m, n), jnp.bfloat16),
            jax.ShapeDtypeStruct((m, n), jnp.bfloat16),
        ),
        grid=(1,),
        grid_names=("x",),
        scratch_types=[
            plgpu.SMEM(a.shape, a.dtype, transforms=SWIZZLED),
            plgpu.SMEM(b.shape, b.dtype, transforms=SWIZZLED),
            plgpu.TMEM((m, n), jnp.float32),
            plgpu.Barrier(num_arrivals=2),
            plgpu.Barrier(orders_tensor_core=True),
        ],
        compiler_params=plgpu.CompilerParams(lowering_semantics=plgpu.LoweringSemantics.Warpgroup),
    )(a, b)
