"""Hopper: ``a @ b`` stored transposed through ``o_smem.T``, in f32. JAX's own pass finds
no layouts (the store wants the transposed WGMMA layout, which its order never tries);
smalto's search finds them, with one relayout at the store. Cast there
(``plgpu.layout_cast(acc, plgpu.Layout.WGMMA_TRANSPOSED)``), JAX's pass lays it out."""

import jax
import jax.numpy as jnp
from jax.experimental import pallas as pl
from jax.experimental.pallas import mosaic_gpu as plgpu

SWIZZLED = (plgpu.TilingTransform((8, 64)), plgpu.SwizzleTransform(128))


def matmul_transposed(a, b):
    m, n = a.shape[0], b.shape[1]

    def body(a_gmem, b_gmem, o_gmem, a_smem, b_smem, o_smem, loaded):
        plgpu.copy_gmem_to_smem(a_gmem, a_smem, loaded)
        plgpu.copy_gmem_to_smem(b_gmem, b_smem, loaded)
        plgpu.barrier_wait(loaded)

        def mma(acc_ref):
            plgpu.wgmma(acc_ref, a_smem, b_smem)
            return acc_ref[...]

        acc = pl.run_scoped(mma, plgpu.ACC((m, n), jnp.float32))
        o_smem.T[...] = acc
        plgpu.commit_smem()
        plgpu.copy_smem_to_gmem(o_smem, o_gmem)
        plgpu.wait_smem_to_gmem(0)

    return plgpu.kernel(
        body,
        out_type=jax.ShapeDtypeStruct((n, m), jnp.float32),
        scratch_types=[
            plgpu.SMEM(a.shape, a.dtype, transforms=SWIZZLED),
            plgpu.SMEM(b.shape, b.dtype, transforms=SWIZZLED),
            plgpu.SMEM((n, m), jnp.float32),
            plgpu.Barrier(num_arrivals=2),
        ],
        compiler_params=plgpu.CompilerParams(lowering_semantics=plgpu.LoweringSemantics.Warpgroup),
    )(a, b)
