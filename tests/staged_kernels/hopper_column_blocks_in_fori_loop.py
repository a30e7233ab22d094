"""Hopper: a wgmma accumulator, shifted by each step of a ``lax.fori_loop`` and stored
narrowed to fp8 straight to the step's column block of a wider output
(``o_gmem.at[:, pl.ds(i * n, n)][...] = ...``)."""

import jax
import jax.numpy as jnp
from jax.experimental import pallas as pl
from jax.experimental.pallas import mosaic_gpu as plgpu

SWIZZLED = (plgpu.TilingTransform((8, 64)), plgpu.SwizzleTransform(128))
STEPS = 2


def shifted_matmuls(a, b):
    m, n = a.shape[0], b.shape[1]

    def body(a_gmem, b_gmem, o_gmem, a_smem, b_smem, loaded):
        plgpu.copy_gmem_to_smem(a_gmem, a_smem, loaded)
        plgpu.copy_gmem_to_smem(b_gmem, b_smem, loaded)
        plgpu.barrier_wait(loaded)

        def mma(acc_ref):
            plgpu.wgmma(acc_ref, a_smem, b_smem)
            return acc_ref[...]

        acc = pl.run_scoped(mma, plgpu.ACC((m, n), jnp.float32))

        @pl.loop(0, STEPS)
        def _(i):
            shifted = acc - i.astype(jnp.float32)
            o_gmem.at[:, pl.ds(i * n, n)][...] = shifted.astype(jnp.float8_e4m3fn)

    return plgpu.kernel(
        body,
        out_type=jax.ShapeDtypeStruct((m, STEPS * n), jnp.float8_e4m3fn),
        scratch_types=[
            plgpu.SMEM(a.shape, a.dtype, transforms=SWIZZLED),
            plgpu.SMEM(b.shape, b.dtype, transforms=SWIZZLED),
            plgpu.Barrier(num_arrivals=2),
        ],
        compiler_params=plgpu.CompilerParams(lowering_semantics=plgpu.LoweringSemantics.Warpgroup),
    )(a, b)
