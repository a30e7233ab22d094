"""A Hopper matmul whose pipeline is one stage too deep for SMEM: four stages of two
128x128 f16 blocks (256 KiB) and its epilogue's 32 KiB, over the 227 KiB a block may
have. JAX 0.12.0.1 says only ``Mosaic GPU kernel exceeds available shared memory:
smem_bytes=... > max_smem_bytes=232448``; ``smalto smem`` says what to cut."""

from __future__ import annotations

import jax
import jax.numpy as jnp
from jax.experimental import pallas as pl
from jax.experimental.pallas import mosaic_gpu as plgpu

TILE = 128
STAGES = 4


def _transforms(dtype: jnp.dtype) -> tuple[plgpu.TilingTransform, plgpu.SwizzleTransform]:
    swizzle = plgpu.find_swizzle(TILE * jnp.dtype(dtype).itemsize * 8)
    return plgpu.TilingTransform((8, swizzle // jnp.dtype(dtype).itemsize)), plgpu.SwizzleTransform(
        swizzle
    )


def matmul(a: jax.Array, b: jax.Array, max_concurrent_steps: int = STAGES) -> jax.Array:
    m, k = a.shape
    _, n = b.shape
    dtype = a.dtype

    def kernel(a_gmem, b_gmem, out_gmem, acc_ref, out_smem):
        m_slice = pl.ds(jax.lax.axis_index("m") * TILE, TILE)
        n_slice = pl.ds(jax.lax.axis_index("n") * TILE, TILE)

        def step(_, a_smem, b_smem):
            plgpu.wgmma(acc_ref, a_smem, b_smem)
            plgpu.wgmma_wait(1)

        plgpu.emit_pipeline(
            step,
            grid=(k // TILE,),
            in_specs=[
                plgpu.BlockSpec(
                    (TILE, TILE), lambda ki: (0, ki), transforms=_transforms(dtype), delay_release=1
                ),
                plgpu.BlockSpec(
                    (TILE, TILE), lambda ki: (ki, 0), transforms=_transforms(dtype), delay_release=1
                ),
            ],
            max_concurrent_steps=max_concurrent_steps,
        )(a_gmem.at[m_slice, :], b_gmem.at[:, n_slice])
        plgpu.wgmma_wait(0)
        out_smem[...] = acc_ref[...].astype(dtype)
        plgpu.commit_smem()
        plgpu.copy_smem_to_gmem(out_smem, out_gmem.at[m_slice, n_slice])
        plgpu.wait_smem_to_gmem(0)

    return plgpu.kernel(
        kernel,
        out_type=jax.ShapeDtypeStruct((m, n), dtype),
        grid=(m // TILE, n // TILE),
        grid_names=("m", "n"),
        scratch_types=[
            plgpu.ACC((TILE, TILE), jnp.float32),
            plgpu.SMEM((TILE, TILE), dtype, transforms=_transforms(dtype)),
        ],
    )(a, b)


def shallow(a: jax.Array, b: jax.Array) -> jax.Array:
    """The same with three stages: within the limit."""
    return matmul(a, b, max_concurrent_steps=3)
