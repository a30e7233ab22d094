"""Pallas kernels as users write them, whose layouts JAX 0.12.0.1 gets wrong or misses
(issue #17): the ones ``test_lowering_valid.py`` lowers through JAX's own lowering.

1. Answers JAX's lowering rejects: a wgmma accumulator plus a 16-bit residual
   loaded straight from GMEM (JAX loads it in WGMMA: 16 bytes a row, half a
   sector); row sums of a TMEM accumulator stored to GMEM in 16 bits (2 bytes
   a thread: no layout lowers).
2. Layouts JAX's rules do not offer: 2-D operands broadcast into rank-3 values
   (a per-row scale, a gate per batch), a fori_loop over 32-row chunks
   reduced over their rows.
3. The changes smalto's diagnosis suggests where no layout lowers, written out
   (an f32 store, an SMEM staging buffer), which must lower.

All jax 0.12.0.1 API, warpgroup semantics; Hopper (wgmma) and Blackwell
(tcgen05, TMEM) variants.
"""

from __future__ import annotations

from typing import Any

import jax
import jax.numpy as jnp
from jax import lax
from jax.experimental import pallas as pl
from jax.experimental.pallas import mosaic_gpu as plgpu

HOPPER = (9, 0)
BLACKWELL = (10, 0)
WARPGROUP = plgpu.CompilerParams(lowering_semantics=plgpu.LoweringSemantics.Warpgroup)


def sds(shape: tuple[int, ...], dtype: Any) -> jax.ShapeDtypeStruct:
    return jax.ShapeDtypeStruct(shape, dtype)


def mma_transforms(dtype: Any, minor: int) -> tuple[Any, Any]:
    """The tiling and swizzle TMA and the tensor cores want for a block of this minor dim."""
    itemsize = jnp.dtype(dtype).itemsize
    swizzle = plgpu.find_swizzle(minor * itemsize * 8)
    return plgpu.TilingTransform((8, swizzle // itemsize)), plgpu.SwizzleTransform(swizzle)


def warpgroup_kernel(body: Any, out_shape: tuple[int, ...], dtype: Any, scratch: list[Any]) -> Any:
    return plgpu.kernel(
        body,
        out_type=sds(out_shape, dtype),
        scratch_types=scratch,
        compiler_params=WARPGROUP,
    )


def mma_operands(a: jax.Array, b: jax.Array) -> list[Any]:
    (m, k), (_, n) = a.shape, b.shape
    return [
        plgpu.SMEM((m, k), a.dtype, transforms=mma_transforms(a.dtype, k)),
        plgpu.SMEM((k, n), b.dtype, transforms=mma_transforms(b.dtype, n)),
    ]


def wgmma_acc(
    a_gmem: Any, b_gmem: Any, a_smem: Any, b_smem: Any, loaded: Any, m: int, n: int
) -> Any:
    """``a @ b`` into a wgmma accumulator: the (m, n) f32 value."""
    plgpu.copy_gmem_to_smem(a_gmem, a_smem, loaded)
    plgpu.copy_gmem_to_smem(b_gmem, b_smem, loaded)
    plgpu.barrier_wait(loaded)

    def mma(acc_ref: Any) -> Any:
        plgpu.wgmma(acc_ref, a_smem, b_smem)
        return acc_ref[...]

    return pl.run_scoped(mma, plgpu.ACC((m, n), jnp.float32))


def tcgen05_acc(
    a_gmem: Any, b_gmem: Any, a_smem: Any, b_smem: Any, acc_tmem: Any, loaded: Any, done: Any
) -> Any:
    """``a @ b`` into a TMEM accumulator, loaded into registers."""
    plgpu.copy_gmem_to_smem(a_gmem, a_smem, loaded)
    plgpu.copy_gmem_to_smem(b_gmem, b_smem, loaded)
    plgpu.barrier_wait(loaded)
    plgpu.tcgen05_mma(acc_tmem, a_smem, b_smem, done, accumulate=False)
    plgpu.barrier_wait(done)
    return plgpu.async_load_tmem(acc_tmem)


def tcgen05_scratch(a: jax.Array, b: jax.Array) -> list[Any]:
    (m, _), (_, n) = a.shape, b.shape
    return [
        *mma_operands(a, b),
        plgpu.TMEM((m, n), jnp.float32),
        plgpu.Barrier(num_arrivals=2),
        plgpu.Barrier(orders_tensor_core=True),
    ]


# --- 1. answers JAX's lowering rejects ----------------------------------------------------------


def matmul_plus_residual(
    a: jax.Array, b: jax.Array, r: jax.Array, *, out_dtype: Any = jnp.float32
) -> jax.Array:
    """``a @ b + r`` (Hopper, wgmma), the residual loaded straight from GMEM and upcast."""
    (m, _), (_, n) = a.shape, b.shape

    def body(a_gmem, b_gmem, r_gmem, o_gmem, a_smem, b_smem, loaded):
        acc = wgmma_acc(a_gmem, b_gmem, a_smem, b_smem, loaded, m, n)
        o_gmem[...] = (acc + r_gmem[...].astype(jnp.float32)).astype(out_dtype)

    scratch = [*mma_operands(a, b), plgpu.Barrier(num_arrivals=2)]
    return warpgroup_kernel(body, (m, n), out_dtype, scratch)(a, b, r)


def tmem_row_sums(a: jax.Array, b: jax.Array, *, out_dtype: Any) -> jax.Array:
    """The row sums of ``a @ b`` (Blackwell, tcgen05), stored straight to GMEM."""
    m = a.shape[0]

    def body(a_gmem, b_gmem, o_gmem, a_smem, b_smem, acc_tmem, loaded, done):
        acc = tcgen05_acc(a_gmem, b_gmem, a_smem, b_smem, acc_tmem, loaded, done)
        o_gmem[...] = jnp.sum(acc, axis=1).astype(out_dtype)

    return warpgroup_kernel(body, (m,), out_dtype, tcgen05_scratch(a, b))(a, b)


def tmem_row_sums_via_smem(a: jax.Array, b: jax.Array, *, out_dtype: Any) -> jax.Array:
    """``tmem_row_sums`` staged through SMEM, as smalto's diagnosis suggests."""
    m = a.shape[0]

    def body(a_gmem, b_gmem, o_gmem, a_smem, b_smem, acc_tmem, loaded, done, o_smem):
        acc = tcgen05_acc(a_gmem, b_gmem, a_smem, b_smem, acc_tmem, loaded, done)
        o_smem[...] = jnp.sum(acc, axis=1).astype(out_dtype)
        plgpu.commit_smem()
        plgpu.copy_smem_to_gmem(o_smem, o_gmem)
        plgpu.wait_smem_to_gmem(0)

    scratch = [*tcgen05_scratch(a, b), plgpu.SMEM((m,), out_dtype)]
    return warpgroup_kernel(body, (m,), out_dtype, scratch)(a, b)


def tmem_plus_residual(
    a: jax.Array, b: jax.Array, r: jax.Array, *, via_smem: bool = False
) -> jax.Array:
    """``a @ b + r`` (Blackwell), the residual read straight from GMEM, or (``via_smem``,
    as smalto's diagnosis suggests) copied into SMEM first; the result staged
    through SMEM, as Blackwell epilogues are."""
    (m, _), (_, n) = a.shape, b.shape

    def body(a_gmem, b_gmem, r_gmem, o_gmem, a_smem, b_smem, acc_tmem, loaded, done, *rest):
        o_smem = rest[0]
        acc = tcgen05_acc(a_gmem, b_gmem, a_smem, b_smem, acc_tmem, loaded, done)
        if via_smem:
            r_smem, r_loaded = rest[1], rest[2]
            plgpu.copy_gmem_to_smem(r_gmem, r_smem, r_loaded)
            plgpu.barrier_wait(r_loaded)
            residual = r_smem[...]
        else:
            residual = r_gmem[...]
        o_smem[...] = acc + residual.astype(jnp.float32)
        plgpu.commit_smem()
        plgpu.copy_smem_to_gmem(o_smem, o_gmem)
        plgpu.wait_smem_to_gmem(0)

    scratch = [
        *tcgen05_scratch(a, b),
        plgpu.SMEM((m, n), jnp.float32, transforms=mma_transforms(jnp.float32, n)),
    ]
    if via_smem:
        scratch += [
            plgpu.SMEM((m, n), r.dtype, transforms=mma_transforms(r.dtype, n)),
            plgpu.Barrier(),
        ]
    return warpgroup_kernel(body, (m, n), jnp.float32, scratch)(a, b, r)


# --- 2. layouts JAX's rules do not offer ---------------------------------------------------------


def scale_rows_3d(
    x: jax.Array, s: jax.Array, bias: jax.Array, *, via_smem: bool = False
) -> jax.Array:
    """``x * s[:, :, None] + bias`` in ``x``'s type: x (B, M, N) staged in SMEM (no
    transforms), the (B, M, N) bias read from GMEM, the (B, M) scale read from
    GMEM, or (``via_smem``, as smalto's diagnosis suggests for 16-bit scales)
    copied into SMEM first."""

    def body(x_gmem, s_gmem, b_gmem, o_gmem, x_smem, loaded, *rest):
        plgpu.copy_gmem_to_smem(x_gmem, x_smem, loaded)
        if via_smem:
            plgpu.copy_gmem_to_smem(s_gmem, rest[0], loaded)
        plgpu.barrier_wait(loaded)
        scale = rest[0][...] if via_smem else s_gmem[...]
        o_gmem[...] = (x_smem[...] * scale[:, :, None] + b_gmem[...]).astype(x.dtype)

    arrivals = 2 if via_smem else 1
    scratch = [plgpu.SMEM(x.shape, x.dtype), plgpu.Barrier(num_arrivals=arrivals)]
    if via_smem:
        scratch.append(plgpu.SMEM(s.shape, s.dtype))
    return warpgroup_kernel(body, x.shape, x.dtype, scratch)(x, s, bias)


def gated_matmul(a: jax.Array, b: jax.Array, g: jax.Array, *, via_smem: bool = False) -> jax.Array:
    """``(a @ b)[None] * g[:, None, :]`` (Hopper, wgmma): one gate row per batch, read
    from GMEM, or (``via_smem``, as smalto's diagnosis suggests for 16-bit gates)
    copied into SMEM first."""
    (m, _), (_, n) = a.shape, b.shape
    batch = g.shape[0]

    def body(a_gmem, b_gmem, g_gmem, o_gmem, a_smem, b_smem, loaded, *rest):
        if via_smem:
            plgpu.copy_gmem_to_smem(g_gmem, rest[0], loaded)
        acc = wgmma_acc(a_gmem, b_gmem, a_smem, b_smem, loaded, m, n)
        gate = (rest[0] if via_smem else g_gmem)[...].astype(jnp.float32)
        o_gmem[...] = acc[None] * gate[:, None, :]

    arrivals = 3 if via_smem else 2
    scratch = [*mma_operands(a, b), plgpu.Barrier(num_arrivals=arrivals)]
    if via_smem:
        scratch.append(plgpu.SMEM(g.shape, g.dtype))
    return warpgroup_kernel(body, (batch, m, n), jnp.float32, scratch)(a, b, g)


def gated_tcgen05_matmul(a: jax.Array, b: jax.Array, g: jax.Array) -> jax.Array:
    """``gated_matmul`` on Blackwell: the accumulator in TMEM, the rank-3 result staged
    through an SMEM buffer without transforms."""
    (m, _), (_, n) = a.shape, b.shape
    batch = g.shape[0]

    def body(a_gmem, b_gmem, g_gmem, o_gmem, a_smem, b_smem, acc_tmem, loaded, done, o_smem):
        acc = tcgen05_acc(a_gmem, b_gmem, a_smem, b_smem, acc_tmem, loaded, done)
        o_smem[...] = acc[None] * g_gmem[...].astype(jnp.float32)[:, None, :]
        plgpu.commit_smem()
        plgpu.copy_smem_to_gmem(o_smem, o_gmem)
        plgpu.wait_smem_to_gmem(0)

    scratch = [*tcgen05_scratch(a, b), plgpu.SMEM((batch, m, n), jnp.float32)]
    return warpgroup_kernel(body, (batch, m, n), jnp.float32, scratch)(a, b, g)


def column_stats_in_chunks(x: jax.Array, *, chunk: int = 32, stat: str = "count") -> jax.Array:
    """Per column, over ``chunk``-row slices of an SMEM buffer without transforms in a
    ``lax.fori_loop``: the count of positive entries (``stat="count"``) or the
    maximum (``stat="max"``)."""
    rows, cols = x.shape
    out_dtype = jnp.int32 if stat == "count" else jnp.float32

    def body(x_gmem, o_gmem, x_smem, loaded):
        plgpu.copy_gmem_to_smem(x_gmem, x_smem, loaded)
        plgpu.barrier_wait(loaded)

        def step(i, carried):
            xc = x_smem[pl.ds(i * chunk, chunk), :]
            if stat == "count":
                return carried + jnp.sum(jnp.where(xc > 0, 1, 0), axis=0)
            return jnp.maximum(carried, jnp.max(xc.astype(jnp.float32), axis=0))

        init = (
            jnp.zeros((cols,), jnp.int32)
            if stat == "count"
            else jnp.full((cols,), -jnp.inf, jnp.float32)
        )
        o_gmem[...] = lax.fori_loop(0, rows // chunk, step, init)

    scratch = [plgpu.SMEM(x.shape, x.dtype), plgpu.Barrier()]
    return warpgroup_kernel(body, (cols,), out_dtype, scratch)(x)
