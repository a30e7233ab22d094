"""Blackwell: the stored expression binds a name with a walrus (``s``) that the kernel
uses after the store: staging the store must keep ``s`` the kernel's own."""

import jax
import jax.numpy as jnp
from jax.experimental.pallas import mosaic_gpu as plgpu

SWIZZLED = (plgpu.TilingTransform((8, 64)), plgpu.SwizzleTransform(128))
SWIZZLED_F32 = (plgpu.TilingTransform((8, 32)), plgpu.SwizzleTransform(128))


def shifted_matmul(a, b):
    m, n = a.shape[0], b.shape[1]

    def body(a_gmem, b_gmem, o_gmem, s_gmem, a_smem, b_smem, acc_tmem, s_smem, loaded, done):
        plgpu.copy_gmem_to_smem(a_gmem, a_smem, loaded)
        plgpu.copy_gmem_to_smem(b_gmem, b_smem, loaded)
        plgpu.barrier_wait(loaded)
        plgpu.tcgen05_mma(acc_tmem, a_smem, b_smem, done, accumulate=False)
        plgpu.barrier_wait(done)
        acc = plgpu.async_load_tmem(acc_tmem)
        s = acc
        o_gmem[...] = (s := acc + 1.0).astype(jnp.bfloat16)
        s_smem[...] = s * 2.0
        plgpu.commit_smem()
        plgpu.copy_smem_to_gmem(s_smem, s_gmem)
        plgpu.wait_smem_to_gmem(0)

    return plgpu.kernel(
        body,
        out_type=(
            jax.ShapeDtypeStruct((m, n), jnp.bfloat16),
            jax.ShapeDtypeStruct((m, n), jnp.float32),
        ),
        scratch_types=[
            plgpu.SMEM(a.shape, a.dtype, transforms=SWIZZLED),
            plgpu.SMEM(b.shape, b.dtype, transforms=SWIZZLED),
            plgpu.TMEM((m, n), jnp.float32),
            plgpu.SMEM((m, n), jnp.float32, transforms=SWIZZLED_F32),
            plgpu.Barrier(num_arrivals=2),
            plgpu.Barrier(orders_tensor_core=True),
        ],
        compiler_params=plgpu.CompilerParams(lowering_semantics=plgpu.LoweringSemantics.Warpgroup),
    )(a, b)
