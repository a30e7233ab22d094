"""Hopper: each element of ``a @ b`` divided by its row's sum, the sums broadcast as
``total[None, :]`` (one per column) where one per row, ``total[:, None]``, was likely
meant. The reduction and the broadcast disagree: which one is wrong is the author's to
say, and each change alters what the kernel computes."""

import jax
import jax.numpy as jnp
from jax.experimental import pallas as pl
from jax.experimental.pallas import mosaic_gpu as plgpu

SWIZZLED = (plgpu.TilingTransform((8, 64)), plgpu.SwizzleTransform(128))


def normalized(a, b):
    m, n = a.shape[0], b.shape[1]

    def body(a_gmem, b_gmem, o_gmem, a_smem, b_smem, o_smem, loaded):
        plgpu.copy_gmem_to_smem(a_gmem, a_smem, loaded)
        plgpu.copy_gmem_to_smem(b_gmem, b_smem, loaded)
        plgpu.barrier_wait(loaded)

        def mma(acc_ref):
            plgpu.wgmma(acc_ref, a_smem, b_smem)
            return acc_ref[...]

        acc = pl.run_scoped(mma, plgpu.ACC((m, n), jnp.float32))
        total = jnp.sum(acc, axis=1)
        o_smem[...] = (acc / total[None, :]).astype(o_smem.dtype)
        plgpu.commit_smem()
        plgpu.copy_smem_to_gmem(o_smem, o_gmem)
        plgpu.wait_smem_to_gmem(0)

    return plgpu.kernel(
        body,
        out_type=jax.ShapeDtypeStruct((m, n), a.dtype),
        scratch_types=[
            plgpu.SMEM(a.shape, a.dtype, transforms=SWIZZLED),
            plgpu.SMEM(b.shape, b.dtype, transforms=SWIZZLED),
            plgpu.SMEM((m, n), a.dtype, transforms=SWIZZLED),
            plgpu.Barrier(num_arrivals=2),
        ],
        compiler_params=plgpu.CompilerParams(lowering_semantics=plgpu.LoweringSemantics.Warpgroup),
    )(a, b)
