"""Hopper: an attention tail, ``p @ v`` on the wgmma with ``p`` in registers (JAX's
interpreter cannot run a wgmma whose left operand is a register value), and the row sums
of ``p`` cast to the column layout (``reduce(0)`` where the sum over axis 1 is
``reduce(1)``): the cast's fix is proven by JAX's trace alone."""

import jax
import jax.numpy as jnp
from jax.experimental import pallas as pl
from jax.experimental.pallas import mosaic_gpu as plgpu

SWIZZLED = (plgpu.TilingTransform((8, 64)), plgpu.SwizzleTransform(128))
SWIZZLED_F32 = (plgpu.TilingTransform((8, 32)), plgpu.SwizzleTransform(128))


def attention_tail(p, v):
    m, n = p.shape[0], v.shape[1]

    def body(p_gmem, v_gmem, o_gmem, l_gmem, p_smem, v_smem, o_smem, loaded):
        plgpu.copy_gmem_to_smem(p_gmem, p_smem, loaded)
        plgpu.copy_gmem_to_smem(v_gmem, v_smem, loaded)
        plgpu.barrier_wait(loaded)
        p_regs = plgpu.layout_cast(p_smem[...], plgpu.Layout.WGMMA)

        def mma(acc_ref):
            plgpu.wgmma(acc_ref, p_regs, v_smem)
            return acc_ref[...]

        acc = pl.run_scoped(mma, plgpu.ACC((m, n), jnp.float32))
        o_smem[...] = acc
        plgpu.commit_smem()
        plgpu.copy_smem_to_gmem(o_smem, o_gmem)
        plgpu.wait_smem_to_gmem(0)
        row_sums = jnp.sum(p_regs.astype(jnp.float32), axis=1)
        l_gmem[...] = plgpu.layout_cast(row_sums, plgpu.Layout.WGMMA.reduce(0))

    return plgpu.kernel(
        body,
        out_type=(
            jax.ShapeDtypeStruct((m, n), jnp.float32),
            jax.ShapeDtypeStruct((m,), jnp.float32),
        ),
        scratch_types=[
            plgpu.SMEM(p.shape, p.dtype, transforms=SWIZZLED),
            plgpu.SMEM(v.shape, v.dtype, transforms=SWIZZLED),
            plgpu.SMEM((m, n), jnp.float32, transforms=SWIZZLED_F32),
            plgpu.Barrier(num_arrivals=2),
        ],
        compiler_params=plgpu.CompilerParams(lowering_semantics=plgpu.LoweringSemantics.Warpgroup),
    )(p, v)
