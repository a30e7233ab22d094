"""Blackwell: two TMEM scratch refs, the accumulator declared with the M=64 collective
layout by ``layout=`` on 128 rows (the MMA writes the default layout), and a second one
that holds the doubled accumulator: which ``plgpu.TMEM(...)`` to change is the one of the
ref the MMA uses."""

import jax
import jax.numpy as jnp
from jax.experimental.pallas import mosaic_gpu as plgpu

SWIZZLED = (plgpu.TilingTransform((8, 64)), plgpu.SwizzleTransform(128))


def matmul(a, b):
    m, n = a.shape[0], b.shape[1]

    def body(a_gmem, b_gmem, o_gmem, a_smem, b_smem, acc_tmem, twice_tmem, o_smem, loaded, done):
        plgpu.copy_gmem_to_smem(a_gmem, a_smem, loaded)
        plgpu.copy_gmem_to_smem(b_gmem, b_smem, loaded)
        plgpu.barrier_wait(loaded)
        plgpu.tcgen05_mma(acc_tmem, a_smem, b_smem, done, accumulate=False)
        plgpu.barrier_wait(done)
        plgpu.async_store_tmem(twice_tmem, plgpu.async_load_tmem(acc_tmem) * 2)
        plgpu.commit_tmem()
        o_smem[...] = plgpu.async_load_tmem(twice_tmem).astype(o_smem.dtype)
        plgpu.commit_smem()
        plgpu.copy_smem_to_gmem(o_smem, o_gmem)
        plgpu.wait_smem_to_gmem(0)

    return plgpu.kernel(
        body,
        out_type=jax.ShapeDtypeStruct((m, n), a.dtype),
        scratch_types=[
            plgpu.SMEM(a.shape, a.dtype, transforms=SWIZZLED),
            plgpu.SMEM(b.shape, b.dtype, transforms=SWIZZLED),
            plgpu.TMEM((m, n), jnp.float32, layout=plgpu.TMEMLayout.M64_COLLECTIVE_LAYOUT(n)),
            plgpu.TMEM((m, n), jnp.float32),
            plgpu.SMEM((m, n), a.dtype, transforms=SWIZZLED),
            plgpu.Barrier(num_arrivals=2),
            plgpu.Barrier(orders_tensor_core=True),
        ],
        compiler_params=plgpu.CompilerParams(lowering_semantics=plgpu.LoweringSemantics.Warpgroup),
    )(a, b)
