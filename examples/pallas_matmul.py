"""A Hopper matmul in Pallas (Mosaic GPU), compiled with smalto.

Each CTA computes one (tile_m, tile_n) tile of ``a @ b``: a pipeline streams
(tile_m, tile_k) and (tile_k, tile_n) blocks of the inputs into swizzled SMEM
with TMA, ``plgpu.wgmma`` accumulates into registers, and the epilogue goes
registers -> SMEM -> GMEM. No layout is written down anywhere: layout inference
chooses the WGMMA register layout, the SMEM tilings and swizzles. (``plgpu.kernel``
lowers in warpgroup semantics by default, the mode that runs layout inference.)

    python examples/pallas_matmul.py              # on a Hopper GPU: run, check
    python examples/pallas_matmul.py --capture    # anywhere: print the module
                                                  # smalto infers layouts for
    smalto capture examples/pallas_matmul.py:matmul \\
        --arg f16[256,256] --arg f16[256,256] -o kernels/
"""

from __future__ import annotations

import argparse

import jax
import jax.numpy as jnp
from jax.experimental import pallas as pl
from jax.experimental.pallas import mosaic_gpu as plgpu


def _smem_transforms(
    minor_dim: int, dtype: jnp.dtype
) -> tuple[plgpu.TilingTransform, plgpu.SwizzleTransform]:
    """The tiling and swizzle TMA and WGMMA want for a block with this minor dimension."""
    itemsize = jnp.dtype(dtype).itemsize
    swizzle = plgpu.find_swizzle(minor_dim * itemsize * 8)
    return (
        plgpu.TilingTransform((8, swizzle // itemsize)),
        plgpu.SwizzleTransform(swizzle),
    )


def matmul(
    a: jax.Array,
    b: jax.Array,
    *,
    tile_m: int = 128,
    tile_n: int = 128,
    tile_k: int = 64,
    max_concurrent_steps: int = 2,
) -> jax.Array:
    """``a @ b`` for f16/bf16 ``a: (m, k)``, ``b: (k, n)``; f32 accumulation."""
    m, k = a.shape
    k2, n = b.shape
    if k != k2 or a.dtype != b.dtype:
        raise ValueError(f"cannot multiply {a.shape} {a.dtype} by {b.shape} {b.dtype}")
    if m % tile_m or n % tile_n or k % tile_k:
        raise ValueError(f"({m}, {n}, {k}) must be multiples of ({tile_m}, {tile_n}, {tile_k})")
    dtype = a.dtype
    in_transforms = _smem_transforms(tile_k, dtype)

    def kernel(a_gmem, b_gmem, out_gmem, acc_ref, out_smem):
        m_slice = pl.ds(jax.lax.axis_index("m") * tile_m, tile_m)
        n_slice = pl.ds(jax.lax.axis_index("n") * tile_n, tile_n)

        def step(_, a_smem, b_smem):
            plgpu.wgmma(acc_ref, a_smem, b_smem)
            plgpu.wgmma_wait(1)  # keep one wgmma in flight while the next block lands

        plgpu.emit_pipeline(
            step,
            grid=(k // tile_k,),
            # wgmma_wait(1) leaves the last step's wgmma reading its blocks: the
            # pipeline must not refill them until the step after (delay_release=1),
            # or the next TMA overwrites them under the running wgmma (a race: wrong
            # tiles, differently on every run).
            in_specs=[
                plgpu.BlockSpec(
                    (tile_m, tile_k), lambda ki: (0, ki), transforms=in_transforms, delay_release=1
                ),
                plgpu.BlockSpec(
                    (tile_k, tile_n), lambda ki: (ki, 0), transforms=in_transforms, delay_release=1
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
        grid=(m // tile_m, n // tile_n),
        grid_names=("m", "n"),
        scratch_types=[
            plgpu.ACC((tile_m, tile_n), jnp.float32),
            plgpu.SMEM((tile_m, tile_n), dtype, transforms=_smem_transforms(tile_n, dtype)),
        ],
    )(a, b)


def example_args(m: int = 256, n: int = 256, k: int = 256) -> tuple[jax.ShapeDtypeStruct, ...]:
    """Shapes to lower ``matmul`` with when no data is at hand."""
    return (
        jax.ShapeDtypeStruct((m, k), jnp.float16),
        jax.ShapeDtypeStruct((k, n), jnp.float16),
    )


def main() -> None:
    import smalto.jax

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--capture", action="store_true", help="print the module, run nothing")
    args = parser.parse_args()
    if args.capture or jax.devices()[0].platform != "gpu":
        with smalto.jax.enabled():
            (kernel,) = smalto.jax.capture(matmul, *example_args())
        print(kernel.inferred_text if kernel.ok else kernel.text)
        return
    ka, kb = jax.random.split(jax.random.key(0))
    a = jax.random.normal(ka, (1024, 512), jnp.float16)
    b = jax.random.normal(kb, (512, 768), jnp.float16)
    with smalto.jax.enabled():
        out = jax.jit(matmul)(a, b)
    expected = jnp.dot(a, b, preferred_element_type=jnp.float32).astype(jnp.float16)
    error = float(jnp.max(jnp.abs(out.astype(jnp.float32) - expected.astype(jnp.float32))))
    print(f"max |smalto-compiled matmul - jnp.dot| = {error:.3g}")


if __name__ == "__main__":
    main()
