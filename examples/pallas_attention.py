"""A flash-attention-like forward kernel in Pallas (Mosaic GPU).

One CTA owns ``block_q`` query rows of one head and walks the keys and values
``block_kv`` rows at a time with an online softmax: ``s = q @ k.T`` on the
tensor cores (``plgpu.wgmma``), a running row maximum and row sum (reductions),
``exp(s - max[:, None])`` and a rescaled accumulator (broadcasts), then
``acc += p @ v`` with ``p`` straight from registers. Layout inference has to
agree on the WGMMA layout of ``s`` and ``acc``, the row layout of the
reductions, and the SMEM transforms of q, k, v and the output.

    python examples/pallas_attention.py              # on a Hopper GPU: run, check
    python examples/pallas_attention.py --capture    # anywhere: print the module
"""

from __future__ import annotations

import argparse
import math

import jax
import jax.numpy as jnp
from jax import lax
from jax.experimental import pallas as pl
from jax.experimental.pallas import mosaic_gpu as plgpu

# 128-byte swizzle over 64 f16 columns: what TMA and WGMMA both like for head_dim 64.
_TRANSFORMS = (plgpu.TilingTransform((8, 64)), plgpu.SwizzleTransform(128))


def attention(
    q: jax.Array, k: jax.Array, v: jax.Array, *, block_q: int = 64, block_kv: int = 64
) -> jax.Array:
    """``softmax(q @ k.T / sqrt(d)) @ v`` per head; ``q, k, v: (heads, seq, 64)`` f16."""
    heads, seq_q, head_dim = q.shape
    _, seq_kv, _ = k.shape
    if head_dim != 64 or q.dtype != jnp.float16:
        raise ValueError("this example wants f16 inputs with head_dim 64")
    if seq_q % block_q or seq_kv % block_kv:
        raise ValueError(f"sequence lengths must be multiples of ({block_q}, {block_kv})")
    scale = 1.0 / math.sqrt(head_dim)

    def kernel(q_gmem, k_gmem, v_gmem, out_gmem, q_smem, k_smem, v_smem, barriers):
        head = lax.axis_index("heads")
        q_rows = pl.ds(lax.axis_index("q") * block_q, block_q)
        q_barrier, k_barrier, v_barrier = barriers.at[0], barriers.at[1], barriers.at[2]
        plgpu.copy_gmem_to_smem(q_gmem.at[head, q_rows], q_smem, q_barrier)
        plgpu.barrier_wait(q_barrier)

        def kv_step(step, carry):
            acc, row_max, row_sum = carry
            kv_rows = pl.ds(step * block_kv, block_kv)
            plgpu.copy_gmem_to_smem(k_gmem.at[head, kv_rows], k_smem, k_barrier)
            plgpu.copy_gmem_to_smem(v_gmem.at[head, kv_rows], v_smem, v_barrier)
            plgpu.barrier_wait(k_barrier)

            def scores(acc_ref):
                plgpu.wgmma(acc_ref, q_smem, k_smem.T)
                return acc_ref[...]

            s = pl.run_scoped(scores, plgpu.ACC((block_q, block_kv), jnp.float32)) * scale
            new_max = jnp.maximum(row_max, s.max(axis=1))
            correction = jnp.exp(row_max - new_max)
            p = jnp.exp(s - lax.broadcast_in_dim(new_max, s.shape, [0]))
            row_sum = row_sum * correction + p.sum(axis=1)
            acc = acc * lax.broadcast_in_dim(correction, acc.shape, [0])
            plgpu.barrier_wait(v_barrier)

            def accumulate(acc_ref):
                plgpu.wgmma(acc_ref, p.astype(jnp.float16), v_smem)

            acc = pl.run_state(accumulate)(plgpu.ACC.init(acc))
            return acc, new_max, row_sum

        init = (
            jnp.zeros((block_q, head_dim), jnp.float32),
            jnp.full((block_q,), -jnp.inf, jnp.float32),
            jnp.zeros((block_q,), jnp.float32),
        )
        acc, _, row_sum = lax.fori_loop(0, seq_kv // block_kv, kv_step, init)
        q_smem[...] = (acc / lax.broadcast_in_dim(row_sum, acc.shape, [0])).astype(jnp.float16)
        plgpu.commit_smem()
        plgpu.copy_smem_to_gmem(q_smem, out_gmem.at[head, q_rows])
        plgpu.wait_smem_to_gmem(0)

    return plgpu.kernel(
        kernel,
        out_type=jax.ShapeDtypeStruct(q.shape, q.dtype),
        grid=(heads, seq_q // block_q),
        grid_names=("heads", "q"),
        scratch_types=[
            plgpu.SMEM((block_q, head_dim), jnp.float16, transforms=_TRANSFORMS),
            plgpu.SMEM((block_kv, head_dim), jnp.float16, transforms=_TRANSFORMS),
            plgpu.SMEM((block_kv, head_dim), jnp.float16, transforms=_TRANSFORMS),
            plgpu.Barrier(num_barriers=3),
        ],
    )(q, k, v)


def reference(q: jax.Array, k: jax.Array, v: jax.Array) -> jax.Array:
    s = jnp.einsum("hqd,hkd->hqk", q.astype(jnp.float32), k.astype(jnp.float32))
    p = jax.nn.softmax(s / math.sqrt(q.shape[-1]), axis=-1)
    return jnp.einsum("hqk,hkd->hqd", p, v.astype(jnp.float32)).astype(q.dtype)


def example_args(
    heads: int = 2, seq_q: int = 128, seq_kv: int = 256
) -> tuple[jax.ShapeDtypeStruct, ...]:
    """Shapes to lower ``attention`` with when no data is at hand."""
    return (
        jax.ShapeDtypeStruct((heads, seq_q, 64), jnp.float16),
        jax.ShapeDtypeStruct((heads, seq_kv, 64), jnp.float16),
        jax.ShapeDtypeStruct((heads, seq_kv, 64), jnp.float16),
    )


def main() -> None:
    import smalto.jax

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--capture", action="store_true", help="print the module, run nothing")
    args = parser.parse_args()
    if args.capture or jax.devices()[0].platform != "gpu":
        with smalto.jax.enabled():
            (kernel,) = smalto.jax.capture(attention, *example_args())
        print(kernel.inferred_text if kernel.ok else kernel.text)
        return
    kq, kk, kv = jax.random.split(jax.random.key(0), 3)
    q = jax.random.normal(kq, (4, 512, 64), jnp.float16)
    k = jax.random.normal(kk, (4, 1024, 64), jnp.float16)
    v = jax.random.normal(kv, (4, 1024, 64), jnp.float16)
    with smalto.jax.enabled():
        out = jax.jit(attention)(q, k, v)
    error = float(jnp.max(jnp.abs(out.astype(jnp.float32) - reference(q, k, v))))
    print(f"max |smalto-compiled attention - reference| = {error:.3g}")


if __name__ == "__main__":
    main()
