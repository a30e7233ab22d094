"""Blackwell: a collective MMA over a 2-CTA cluster (64 accumulator rows a CTA), its
accumulator loaded with ``layout=`` TCGEN05, the 128-row habit."""

import jax
import jax.numpy as jnp
from jax import lax
from jax.experimental import pallas as pl
from jax.experimental.pallas import mosaic_gpu as plgpu

SWIZZLED = (plgpu.TilingTransform((8, 64)), plgpu.SwizzleTransform(128))


def matmul(a, b):
    (m, k), (_, n) = a.shape, b.shape
    block_m, block_n = m // 2, n // 2

    def body(a_gmem, b_gmem, o_gmem, a_smem, b_smem, acc_tmem, o_smem, loaded, done, both):
        cta = lax.axis_index("x")
        my_rows = pl.ds(cta * block_m, block_m)
        plgpu.copy_gmem_to_smem(a_gmem.at[my_rows, :], a_smem, loaded)
        plgpu.barrier_wait(loaded)
        plgpu.copy_gmem_to_smem(b_gmem.at[:, pl.ds(cta * block_n, block_n)], b_smem, loaded)
        plgpu.barrier_wait(loaded)
        plgpu.barrier_arrive(both)
        plgpu.barrier_wait(both)
        plgpu.tcgen05_mma(acc_tmem, a_smem, b_smem, done, accumulate=False, collective_axis="x")
        plgpu.barrier_wait(done)
        acc = plgpu.async_load_tmem(acc_tmem, layout=plgpu.Layout.TCGEN05)
        o_smem[...] = acc.astype(o_smem.dtype)
        plgpu.commit_smem()
        plgpu.copy_smem_to_gmem(o_smem, o_gmem.at[my_rows, :])
        plgpu.wait_smem_to_gmem(0)

    return plgpu.kernel(
        body,
        out_type=jax.ShapeDtypeStruct((m, n), a.dtype),
        scratch_types=[
            plgpu.SMEM((block_m, k), a.dtype, transforms=SWIZZLED),
            plgpu.SMEM((k, block_n), b.dtype, transforms=SWIZZLED),
            plgpu.TMEM((block_m, n), jnp.float32, collective=True),
            plgpu.SMEM((block_m, n), a.dtype, transforms=SWIZZLED),
            plgpu.Barrier(),
            plgpu.Barrier(orders_tensor_core=True),
            plgpu.ClusterBarrier(collective_axes=("x",)),
        ],
        cluster=(2,),
        cluster_names=("x",),
        compiler_params=plgpu.CompilerParams(lowering_semantics=plgpu.LoweringSemantics.Warpgroup),
    )(a, b)
