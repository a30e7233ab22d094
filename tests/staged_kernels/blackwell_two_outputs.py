"""Blackwell: two results of one TMEM accumulator, each stored in f16 straight to its own
GMEM output: two stores to stage in one kernel."""

import jax
import jax.numpy as jnp
from jax.experimental.pallas import mosaic_gpu as plgpu

SWIZZLED = (plgpu.TilingTransform((8, 64)), plgpu.SwizzleTransform(128))


def matmul_and_square(a, b):
    m, n = a.shape[0], b.shape[1]

    def body(a_gmem, b_gmem, o_gmem, sq_gmem, a_smem, b_smem, acc_tmem, loaded, done):
        plgpu.copy_gmem_to_smem(a_gmem, a_smem, loaded)
        plgpu.copy_gmem_to_smem(b_gmem, b_smem, loaded)
        plgpu.barrier_wait(loaded)
        plgpu.tcgen05_mma(acc_tmem, a_smem, b_smem, done, accumulate=False)
        plgpu.barrier_wait(done)
        acc = plgpu.async_load_tmem(acc_tmem)
        o_gmem[...] = acc.astype(jnp.float16)
        sq_gmem[...] = (acc * acc).astype(jnp.float16)

    out = jax.ShapeDtypeStruct((m, n), jnp.float16)
    return plgpu.kernel(
        body,
        out_type=(out, out),
        scratch_types=[
            plgpu.SMEM(a.shape, a.dtype, transforms=SWIZZLED),
            plgpu.SMEM(b.shape, b.dtype, transforms=SWIZZLED),
            plgpu.TMEM((m, n), jnp.float32),
            plgpu.Barrier(num_arrivals=2),
            plgpu.Barrier(orders_tensor_core=True),
        ],
        compiler_params=plgpu.CompilerParams(lowering_semantics=plgpu.LoweringSemantics.Warpgroup),
    )(a, b)
