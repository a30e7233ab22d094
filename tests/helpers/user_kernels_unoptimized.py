"""Pallas kernels whose optimized transfers have no plan in any layout, written as users
write them (issue #24): the last fifth of real kernels.

Pallas emits ``optimized = true`` for ``o_ref[...] = x`` and ``x = x_ref[...]``.
The lowering then needs a coalesced GMEM plan (at least 4 bytes a thread,
whole 32-byte sectors a warp); these kernels have none:

1. 16-bit or 8-bit results of a wgmma or a TMEM load stored straight to GMEM
   (``o_ref[...] = acc.astype(jnp.bfloat16)``);
2. strided GMEM views: a column of a table read (``w_ref[:, j]``) or written
   (``st_ref[:, 0] = ...``), whose elements sit 8-16 bytes apart.

JAX's pass answers with layouts its lowering rejects, or none; smalto refuses
as written, and compiles them with ``allow_unoptimized`` (the fewest
transfers made unoptimized). ``*_fixed`` variants are the one-word change a
user makes instead (``plgpu.store(..., optimized=False)``,
``plgpu.load(ref.at[...], optimized=False)``). Other strided views lower as
written: a column of 128 f32 elements (one element a thread), a window.

jax 0.12.0.1 API, warpgroup semantics; Hopper (wgmma) and Blackwell (tcgen05).
"""

from __future__ import annotations

from typing import Any

import jax
import jax.numpy as jnp
from jax.experimental.pallas import mosaic_gpu as plgpu
from user_kernels_lowering import (
    mma_operands,
    sds,
    tcgen05_acc,
    tcgen05_scratch,
    warpgroup_kernel,
    wgmma_acc,
)

HOPPER = (9, 0)
BLACKWELL = (10, 0)
F8 = jnp.float8_e4m3fn


# --- 1. narrow results of an MMA stored straight to GMEM -----------------------------------------


def matmul_narrow_out(a: jax.Array, b: jax.Array, *, out_dtype: Any, fixed: bool = False) -> Any:
    """``(a @ b).astype(out_dtype)`` (Hopper, wgmma) stored straight to the GMEM output."""
    (m, _), (_, n) = a.shape, b.shape

    def body(a_gmem, b_gmem, o_gmem, a_smem, b_smem, loaded):
        acc = wgmma_acc(a_gmem, b_gmem, a_smem, b_smem, loaded, m, n)
        if fixed:
            plgpu.store(o_gmem, acc.astype(out_dtype), optimized=False)
        else:
            o_gmem[...] = acc.astype(out_dtype)

    scratch = [*mma_operands(a, b), plgpu.Barrier(num_arrivals=2)]
    return warpgroup_kernel(body, (m, n), out_dtype, scratch)(a, b)


def tcgen05_narrow_out(a: jax.Array, b: jax.Array, *, out_dtype: Any, fixed: bool = False) -> Any:
    """``(a @ b).astype(out_dtype)`` (Blackwell, TMEM accumulator) stored straight to GMEM."""
    (m, _), (_, n) = a.shape, b.shape

    def body(a_gmem, b_gmem, o_gmem, a_smem, b_smem, acc_tmem, loaded, done):
        acc = tcgen05_acc(a_gmem, b_gmem, a_smem, b_smem, acc_tmem, loaded, done)
        if fixed:
            plgpu.store(o_gmem, acc.astype(out_dtype), optimized=False)
        else:
            o_gmem[...] = acc.astype(out_dtype)

    return warpgroup_kernel(body, (m, n), out_dtype, tcgen05_scratch(a, b))(a, b)


def tcgen05_row_max_and_out(a: jax.Array, b: jax.Array, *, out_dtype: Any) -> Any:
    """Two transfers without a plan in one kernel (Blackwell): the product and its row
    maxima, both narrowed and stored straight to GMEM."""
    (m, _), (_, n) = a.shape, b.shape

    def body(a_gmem, b_gmem, o_gmem, m_gmem, a_smem, b_smem, acc_tmem, loaded, done):
        acc = tcgen05_acc(a_gmem, b_gmem, a_smem, b_smem, acc_tmem, loaded, done)
        o_gmem[...] = acc.astype(out_dtype)
        m_gmem[...] = jnp.max(acc, axis=1).astype(out_dtype)

    return plgpu.kernel(
        body,
        out_type=(sds((m, n), out_dtype), sds((m,), out_dtype)),
        scratch_types=tcgen05_scratch(a, b),
        compiler_params=plgpu.CompilerParams(lowering_semantics=plgpu.LoweringSemantics.Warpgroup),
    )(a, b)


# --- 2. strided GMEM views ---------------------------------------------------------------------


def scale_rows_by_table_column(
    a: jax.Array, b: jax.Array, table: jax.Array, *, column: int = 1, fixed: bool = False
) -> Any:
    """``(a @ b) * table[:, column][:, None]`` (Hopper): a per-row scale read from a column
    of a (m, k) table in GMEM."""
    (m, _), (_, n) = a.shape, b.shape

    def body(a_gmem, b_gmem, w_ref, o_gmem, a_smem, b_smem, loaded):
        acc = wgmma_acc(a_gmem, b_gmem, a_smem, b_smem, loaded, m, n)
        if fixed:
            scale = plgpu.load(w_ref.at[:, column], optimized=False)
        else:
            scale = w_ref[:, column]
        o_gmem[...] = acc * scale[:, None]

    scratch = [*mma_operands(a, b), plgpu.Barrier(num_arrivals=2)]
    return warpgroup_kernel(body, (m, n), jnp.float32, scratch)(a, b, table)


def tcgen05_shift_by_table_column(
    a: jax.Array, b: jax.Array, table: jax.Array, *, fixed: bool = False
) -> Any:
    """``(a @ b) + tab[:, 0][:, None]`` (Blackwell), the product staged through SMEM."""
    (m, _), (_, n) = a.shape, b.shape

    def body(a_gmem, b_gmem, tab_ref, o_gmem, a_smem, b_smem, acc_tmem, loaded, done, o_smem):
        acc = tcgen05_acc(a_gmem, b_gmem, a_smem, b_smem, acc_tmem, loaded, done)
        if fixed:
            shift = plgpu.load(tab_ref.at[:, 0], optimized=False)
        else:
            shift = tab_ref[:, 0]
        o_smem[...] = acc + shift[:, None]
        plgpu.commit_smem()
        plgpu.copy_smem_to_gmem(o_smem, o_gmem)
        plgpu.wait_smem_to_gmem(0)

    scratch = [*tcgen05_scratch(a, b), plgpu.SMEM((m, n), jnp.float32)]
    return warpgroup_kernel(body, (m, n), jnp.float32, scratch)(a, b, table)


def row_max_into_table_column(a: jax.Array, b: jax.Array, *, fixed: bool = False) -> Any:
    """The row maxima of ``a @ b`` (Hopper) written into column 0 of a (m, 2) output, the
    row minima into column 1: ``st_ref[:, 0] = ...``."""
    (m, _), (_, n) = a.shape, b.shape

    def body(a_gmem, b_gmem, st_ref, a_smem, b_smem, loaded):
        acc = wgmma_acc(a_gmem, b_gmem, a_smem, b_smem, loaded, m, n)
        if fixed:
            plgpu.store(st_ref.at[:, 0], jnp.max(acc, axis=1), optimized=False)
            plgpu.store(st_ref.at[:, 1], jnp.min(acc, axis=1), optimized=False)
        else:
            st_ref[:, 0] = jnp.max(acc, axis=1)
            st_ref[:, 1] = jnp.min(acc, axis=1)

    scratch = [*mma_operands(a, b), plgpu.Barrier(num_arrivals=2)]
    return warpgroup_kernel(body, (m, 2), jnp.float32, scratch)(a, b)


def sum_of_table_columns(table: jax.Array) -> Any:
    """``tab[:, 0] + tab[:, 1]`` of a (128, 2) f32 table: 128 elements, one a thread.
    Lowers as written (a strided layout moves through any strides one element at a time)."""

    def body(tab_ref, o_ref):
        o_ref[...] = tab_ref[:, 0] + tab_ref[:, 1]

    return warpgroup_kernel(body, (table.shape[0],), table.dtype, [])(table)


def scale_window(x: jax.Array) -> Any:
    """``2 * x[:, 64:]`` of a (64, 128) input read as a window ``x_ref.at[:, 64:]``: rows of
    the window are contiguous, so it lowers as written."""

    def body(x_ref, o_ref):
        o_ref[...] = x_ref.at[:, 64:][...] * 2

    return warpgroup_kernel(body, (x.shape[0], 64), x.dtype, [])(x)
