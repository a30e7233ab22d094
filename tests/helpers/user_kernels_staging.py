"""Pallas kernels that compile with every transfer optimized only when staged through SMEM
(issue #42), written as users write them: the epilogue family of
``user_kernels_unoptimized`` in the forms it was missing.

- several warpgroups, each storing its 8-bit half of a product straight to GMEM;
- a row vector loaded straight from GMEM in 16 bits and broadcast over a TMEM
  accumulator's rows;
- the column sums of a product (a cross-warp reduction, with Pallas' reduction
  scratch) stored straight to GMEM in 16 bits;
- a 16-bit epilogue whose kernel already holds so much SMEM that a staging buffer
  does not fit in what a block may have.

jax 0.12.0.1 API, warpgroup semantics; Hopper (wgmma) and Blackwell (tcgen05).
"""

from __future__ import annotations

from typing import Any

import jax
import jax.numpy as jnp
from jax import lax
from jax.experimental import pallas as pl
from jax.experimental.pallas import mosaic_gpu as plgpu
from user_kernels_lowering import (
    WARPGROUP,
    mma_operands,
    mma_transforms,
    sds,
    tcgen05_acc,
    tcgen05_scratch,
    warpgroup_kernel,
    wgmma_acc,
)


def two_warpgroups_narrow_out(a: jax.Array, b: jax.Array, *, out_dtype: Any) -> Any:
    """``(a @ b).astype(out_dtype)`` (Hopper), each of two warpgroups computing and storing
    its half of the rows straight to GMEM."""
    (m, k), (_, n) = a.shape, b.shape
    half = m // 2

    def body(a_gmem, b_gmem, o_gmem, a_smem, b_smem, loaded):
        wg = lax.axis_index("wg")
        rows = pl.ds(wg * half, half)
        plgpu.copy_gmem_to_smem(a_gmem.at[rows], a_smem.at[wg], loaded.at[wg])
        plgpu.copy_gmem_to_smem(b_gmem, b_smem.at[wg], loaded.at[wg])
        plgpu.barrier_wait(loaded.at[wg])

        def mma(acc_ref):
            plgpu.wgmma(acc_ref, a_smem.at[wg], b_smem.at[wg])
            return acc_ref[...]

        acc = pl.run_scoped(mma, plgpu.ACC((half, n), jnp.float32))
        o_gmem[rows] = acc.astype(out_dtype)

    scratch = [
        plgpu.SMEM((2, half, k), a.dtype, transforms=mma_transforms(a.dtype, k)),
        plgpu.SMEM((2, k, n), b.dtype, transforms=mma_transforms(b.dtype, n)),
        plgpu.Barrier(num_arrivals=2, num_barriers=2),
    ]
    return plgpu.kernel(
        body,
        out_type=sds((m, n), out_dtype),
        scratch_types=scratch,
        compiler_params=WARPGROUP,
        num_threads=2,
        thread_name="wg",
    )(a, b)


def tcgen05_plus_bias_row(a: jax.Array, b: jax.Array, bias: jax.Array) -> Any:
    """``a @ b + bias[None, :]`` (Blackwell), the bf16 bias row loaded straight from GMEM,
    the f32 result stored through SMEM with a TMA copy."""
    (m, _), (_, n) = a.shape, b.shape

    def body(a_gmem, b_gmem, bias_gmem, o_gmem, a_smem, b_smem, acc_tmem, loaded, done, o_smem):
        acc = tcgen05_acc(a_gmem, b_gmem, a_smem, b_smem, acc_tmem, loaded, done)
        o_smem[...] = acc + bias_gmem[...].astype(jnp.float32)[None, :]
        plgpu.commit_smem()
        plgpu.copy_smem_to_gmem(o_smem, o_gmem)
        plgpu.wait_smem_to_gmem(0)

    scratch = [*tcgen05_scratch(a, b), plgpu.SMEM((m, n), jnp.float32)]
    return warpgroup_kernel(body, (m, n), jnp.float32, scratch)(a, b, bias)


def tcgen05_narrow_out_beside_a_big_table(
    a: jax.Array, b: jax.Array, table: jax.Array, *, out_dtype: Any
) -> Any:
    """``(a @ b).astype(out_dtype)`` (Blackwell) stored straight to GMEM, in a kernel that
    also copies a large bf16 table into SMEM (for the rest of a fused kernel: its first row
    is written out beside the product): a staging buffer needs room beside it."""
    (m, _), (_, n) = a.shape, b.shape

    def body(
        a_gmem,
        b_gmem,
        t_gmem,
        o_gmem,
        r_gmem,
        a_smem,
        b_smem,
        acc_tmem,
        loaded,
        done,
        t_smem,
        t_loaded,
    ):
        plgpu.copy_gmem_to_smem(t_gmem, t_smem, t_loaded)
        acc = tcgen05_acc(a_gmem, b_gmem, a_smem, b_smem, acc_tmem, loaded, done)
        o_gmem[...] = acc.astype(out_dtype)
        plgpu.barrier_wait(t_loaded)
        plgpu.copy_smem_to_gmem(t_smem.at[0, pl.ds(0, 1)], r_gmem)
        plgpu.wait_smem_to_gmem(0)

    scratch = [
        *tcgen05_scratch(a, b),
        plgpu.SMEM(table.shape, table.dtype),
        plgpu.Barrier(),
    ]
    return plgpu.kernel(
        body,
        out_type=(sds((m, n), out_dtype), sds((1, table.shape[-1]), table.dtype)),
        scratch_types=scratch,
        compiler_params=WARPGROUP,
    )(a, b, table)


def collective_narrow_out(a: jax.Array, b: jax.Array, *, out_dtype: Any) -> Any:
    """``(a @ b).astype(out_dtype)`` (Blackwell) by a collective MMA over a 2-CTA cluster:
    each CTA holds half of the rows of ``a`` and half of the columns of ``b``, and stores
    its half of the rows straight to GMEM."""
    (m, k), (_, n) = a.shape, b.shape
    rows, columns = m // 2, n // 2

    def body(a_gmem, b_gmem, o_gmem, a_smem, b_smem, acc_tmem, loaded, done, both):
        cta = lax.axis_index("x")
        my_rows = pl.ds(cta * rows, rows)
        plgpu.copy_gmem_to_smem(a_gmem.at[my_rows, :], a_smem, loaded)
        plgpu.barrier_wait(loaded)
        plgpu.copy_gmem_to_smem(b_gmem.at[:, pl.ds(cta * columns, columns)], b_smem, loaded)
        plgpu.barrier_wait(loaded)
        plgpu.barrier_arrive(both)
        plgpu.barrier_wait(both)
        plgpu.tcgen05_mma(acc_tmem, a_smem, b_smem, done, accumulate=False, collective_axis="x")
        plgpu.barrier_wait(done)
        o_gmem[my_rows, :] = plgpu.async_load_tmem(acc_tmem).astype(out_dtype)

    scratch = [
        plgpu.SMEM((rows, k), a.dtype, transforms=mma_transforms(a.dtype, k)),
        plgpu.SMEM((k, columns), b.dtype, transforms=mma_transforms(b.dtype, columns)),
        plgpu.TMEM((rows, n), jnp.float32, collective=True),
        plgpu.Barrier(),
        plgpu.Barrier(orders_tensor_core=True),
        plgpu.ClusterBarrier(collective_axes=("x",)),
    ]
    return plgpu.kernel(
        body,
        out_type=sds((m, n), out_dtype),
        scratch_types=scratch,
        compiler_params=WARPGROUP,
        cluster=(2,),
        cluster_names=("x",),
    )(a, b)


def column_sums_narrow_out(a: jax.Array, b: jax.Array, *, out_dtype: Any) -> Any:
    """``(a @ b).sum(axis=0).astype(out_dtype)`` (Hopper): a sum over the rows of a wgmma
    accumulator (across warps: Pallas reserves SMEM scratch for it), stored straight to
    GMEM."""
    (m, _), (_, n) = a.shape, b.shape

    def body(a_gmem, b_gmem, o_gmem, a_smem, b_smem, loaded):
        acc = wgmma_acc(a_gmem, b_gmem, a_smem, b_smem, loaded, m, n)
        o_gmem[...] = jnp.sum(acc, axis=0).astype(out_dtype)

    scratch = [*mma_operands(a, b), plgpu.Barrier(num_arrivals=2)]
    return warpgroup_kernel(body, (n,), out_dtype, scratch)(a, b)


def tcgen05_three_epilogues(a: jax.Array, b: jax.Array, *, f32_first: bool = False) -> Any:
    """Three epilogues of one product (Blackwell): ``acc`` in bf16 and ``2 * acc`` in bf16
    stored straight to GMEM (each staged through SMEM), and ``acc`` in f32 through an SMEM
    scratch and a TMA copy. The two staging buffers are never live at once, and the f32
    scratch holds nothing until its store: both buffers may take its bytes. With
    ``f32_first``, the scratch is written first and copied out last: it holds ``acc``
    while the bf16 epilogues run, and no buffer may take its bytes."""
    (m, _), (_, n) = a.shape, b.shape

    def body(
        a_gmem, b_gmem, o_gmem, o2_gmem, o3_gmem, a_smem, b_smem, acc_tmem, loaded, done, o3_smem
    ):
        acc = tcgen05_acc(a_gmem, b_gmem, a_smem, b_smem, acc_tmem, loaded, done)
        if f32_first:
            o3_smem[...] = acc
            plgpu.commit_smem()
        o_gmem[...] = acc.astype(jnp.bfloat16)
        o2_gmem[...] = (acc * 2).astype(jnp.bfloat16)
        if not f32_first:
            o3_smem[...] = acc
            plgpu.commit_smem()
        plgpu.copy_smem_to_gmem(o3_smem, o3_gmem)
        plgpu.wait_smem_to_gmem(0)

    out = (sds((m, n), jnp.bfloat16), sds((m, n), jnp.bfloat16), sds((m, n), jnp.float32))
    scratch = [*tcgen05_scratch(a, b), plgpu.SMEM((m, n), jnp.float32)]
    return plgpu.kernel(body, out_type=out, scratch_types=scratch, compiler_params=WARPGROUP)(a, b)


def tcgen05_three_epilogues_staged_in_place(
    a: jax.Array, b: jax.Array, *, f32_first: bool = False
) -> Any:
    """``tcgen05_three_epilogues`` as staging through SMEM makes it, written in Pallas: the
    two bf16 values go through a buffer over the bytes of the f32 scratch (a
    ``plgpu.RefUnion``: both refs start at the same byte), each stored, reloaded and
    stored to GMEM before the f32 scratch is written. With ``f32_first``, the same
    buffer while the scratch holds ``acc`` for its TMA copy: a wrong reuse."""
    (m, _), (_, n) = a.shape, b.shape

    def body(a_gmem, b_gmem, o_gmem, o2_gmem, o3_gmem, a_smem, b_smem, acc_tmem, loaded, done):
        acc = tcgen05_acc(a_gmem, b_gmem, a_smem, b_smem, acc_tmem, loaded, done)

        def epilogues(o3_smem: Any, staging: Any) -> None:
            if f32_first:
                o3_smem[...] = acc
                plgpu.commit_smem()
            staging[...] = acc.astype(jnp.bfloat16)
            o_gmem[...] = staging[...]
            staging[...] = (acc * 2).astype(jnp.bfloat16)
            o2_gmem[...] = staging[...]
            if not f32_first:
                o3_smem[...] = acc
                plgpu.commit_smem()
            plgpu.copy_smem_to_gmem(o3_smem, o3_gmem)
            plgpu.wait_smem_to_gmem(0)

        pl.run_scoped(
            lambda union: epilogues(*union),
            plgpu.RefUnion(plgpu.SMEM((m, n), jnp.float32), plgpu.SMEM((m, n), jnp.bfloat16)),
        )

    out = (sds((m, n), jnp.bfloat16), sds((m, n), jnp.bfloat16), sds((m, n), jnp.float32))
    scratch = tcgen05_scratch(a, b)
    return plgpu.kernel(body, out_type=out, scratch_types=scratch, compiler_params=WARPGROUP)(a, b)
