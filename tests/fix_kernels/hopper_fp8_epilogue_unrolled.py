"""Hopper: an fp8 result stored to two outputs by one line in a Python loop: unrolled, two
stores that cannot be coalesced, one problem in the source (one line, one fix)."""

import jax
import jax.numpy as jnp
from jax.experimental import pallas as pl
from jax.experimental.pallas import mosaic_gpu as plgpu

SWIZZLED = (plgpu.TilingTransform((8, 64)), plgpu.SwizzleTransform(128))


def matmul_fp8(a, b):
    m, n = a.shape[0], b.shape[1]

    def body(a_gmem, b_gmem, o_gmem, o2_gmem, a_smem, b_smem, loaded):
        plgpu.copy_gmem_to_smem(a_gmem, a_smem, loaded)
        plgpu.copy_gmem_to_smem(b_gmem, b_smem, loaded)
        plgpu.barrier_wait(loaded)

        def mma(acc_ref):
            plgpu.wgmma(acc_ref, a_smem, b_smem)
            return acc_ref[...]

        acc = pl.run_scoped(mma, plgpu.ACC((m, n), jnp.float32))
        for out in (o_gmem, o2_gmem):
            out[...] = acc.astype(jnp.float8_e4m3fn)

    return plgpu.kernel(
        body,
        out_type=(jax.ShapeDtypeStruct((m, n), jnp.float8_e4m3fn),) * 2,
        scratch_types=[
            plgpu.SMEM(a.shape, a.dtype, transforms=SWIZZLED),
            plgpu.SMEM(b.shape, b.dtype, transforms=SWIZZLED),
            plgpu.Barrier(num_arrivals=2),
        ],
        compiler_params=plgpu.CompilerParams(lowering_semantics=plgpu.LoweringSemantics.Warpgroup),
    )(a, b)
