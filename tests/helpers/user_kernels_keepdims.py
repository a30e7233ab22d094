"""Pallas kernels written with ``keepdims=True``, as users write them (issue #17, part 3).

RMS norm, layer norm with (N, 1) statistics carried through ``lax.fori_loop``,
log-softmax, a masked row normalization, online-softmax flash attention on
Hopper (wgmma) and Blackwell (tcgen05, TMEM): each computes on (N, 1) row
statistics and broadcasts them against (N, M) tiles later. JAX 0.12.0.1's
lowering cannot broadcast a computed (N, 1) value in a tiled layout, so no
layout lowers the module as written; smalto's unit-dim rewrite computes the
statistics as (N,) values and broadcasts them once.

Every kernel takes ``keepdims``: with ``keepdims=False`` it is the same kernel
written the other way, the statistics as (N,) values broadcast with
``[:, None]`` at each use, which JAX's own pass compiles. The GPU tests
compare the two.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass
from functools import partial
from typing import Any

import jax
import jax.numpy as jnp
from jax import lax
from jax.experimental import pallas as pl
from jax.experimental.pallas import mosaic_gpu as plgpu

HOPPER = (9, 0)
BLACKWELL = (10, 0)
WARPGROUP = plgpu.CompilerParams(lowering_semantics=plgpu.LoweringSemantics.Warpgroup)
_SWIZZLED = (plgpu.TilingTransform((8, 64)), plgpu.SwizzleTransform(128))


def _sds(shape: tuple[int, ...], dtype: Any) -> jax.ShapeDtypeStruct:
    return jax.ShapeDtypeStruct(shape, dtype)


def _against(stat: jax.Array, axis: int, keepdims: bool) -> jax.Array:
    """``stat`` ready to combine with the full tile: as is when kept, else expanded."""
    return stat if keepdims else jnp.expand_dims(stat, axis)


# --- RMS norm -----------------------------------------------------------------


def rms_norm(
    x: jax.Array, w: jax.Array, *, eps: float = 1e-6, keepdims: bool = True, mean: str = "mean"
) -> jax.Array:
    """``x * rsqrt(mean(x * x, axis=-1, keepdims=True) + eps) * w``, computed in f32.

    ``mean="scale"`` writes the mean as ``sum * (1 / N)`` (a splat constant).
    """
    n = x.shape[-1]

    def body(x_gmem, w_gmem, o_gmem):
        xf = x_gmem[...].astype(jnp.float32)
        if mean == "mean":
            ms = jnp.mean(xf * xf, axis=-1, keepdims=keepdims)
        else:
            ms = jnp.sum(xf * xf, axis=-1, keepdims=keepdims) * (1.0 / n)
        inv = _against(lax.rsqrt(ms + eps), -1, keepdims)
        o_gmem[...] = (xf * inv * w_gmem[...].astype(jnp.float32)).astype(o_gmem.dtype)

    return plgpu.kernel(body, out_type=_sds(x.shape, x.dtype), compiler_params=WARPGROUP)(x, w)


def rms_norm_columns(x: jax.Array, *, eps: float = 1e-6, keepdims: bool = True) -> jax.Array:
    """RMS norm over the leading axis: (1, N) statistics (``axis=0, keepdims=True``)."""

    def body(x_gmem, o_gmem):
        xf = x_gmem[...].astype(jnp.float32)
        ms = jnp.mean(xf * xf, axis=0, keepdims=keepdims)
        inv = _against(lax.rsqrt(ms + eps), 0, keepdims)
        o_gmem[...] = (xf * inv).astype(o_gmem.dtype)

    return plgpu.kernel(body, out_type=_sds(x.shape, x.dtype), compiler_params=WARPGROUP)(x)


def rms_norm_batched(x: jax.Array, *, eps: float = 1e-6, keepdims: bool = True) -> jax.Array:
    """RMS norm of a (B, N, M) block: (B, N, 1) statistics."""

    def body(x_gmem, o_gmem):
        xf = x_gmem[...].astype(jnp.float32)
        ms = jnp.mean(xf * xf, axis=-1, keepdims=keepdims)
        inv = _against(lax.rsqrt(ms + eps), -1, keepdims)
        o_gmem[...] = (xf * inv).astype(o_gmem.dtype)

    return plgpu.kernel(body, out_type=_sds(x.shape, x.dtype), compiler_params=WARPGROUP)(x)


# --- Layer norm, statistics carried through fori_loop --------------------------


def layer_norm(
    x: jax.Array, *, eps: float = 1e-5, chunk: int = 64, keepdims: bool = True, stats: bool = False
) -> jax.Array | tuple[jax.Array, ...]:
    """Layer norm over the last axis; the row sums accumulate over ``chunk``-wide
    column blocks in a ``lax.fori_loop`` carrying (N, 1) values.

    ``stats=True`` also returns the mean and the reciprocal standard deviation,
    stored as (N, 1) f32 arrays (with ``keepdims=False`` as (N,)).
    """
    rows, cols = x.shape

    def body(x_gmem, o_gmem, *stat_gmem):
        def accumulate(i, carry):
            total, squares = carry
            xc = x_gmem[:, pl.ds(i * chunk, chunk)].astype(jnp.float32)
            return (
                total + jnp.sum(xc, axis=1, keepdims=keepdims),
                squares + jnp.sum(xc * xc, axis=1, keepdims=keepdims),
            )

        zero = jnp.zeros((rows, 1) if keepdims else (rows,), jnp.float32)
        total, squares = lax.fori_loop(0, cols // chunk, accumulate, (zero, zero))
        mu = total / cols
        rstd = lax.rsqrt(squares / cols - mu * mu + eps)
        xf = x_gmem[...].astype(jnp.float32)
        y = (xf - _against(mu, 1, keepdims)) * _against(rstd, 1, keepdims)
        o_gmem[...] = y.astype(o_gmem.dtype)
        if stat_gmem:
            mean_gmem, rstd_gmem = stat_gmem
            mean_gmem[...] = mu
            rstd_gmem[...] = rstd

    out_type: Any = _sds(x.shape, x.dtype)
    if stats:
        stat_shape = (rows, 1) if keepdims else (rows,)
        out_type = (out_type, _sds(stat_shape, jnp.float32), _sds(stat_shape, jnp.float32))
    return plgpu.kernel(body, out_type=out_type, compiler_params=WARPGROUP)(x)


# --- Softmax family -------------------------------------------------------------


def log_softmax(x: jax.Array, *, keepdims: bool = True) -> jax.Array:
    """``x - (m + log(sum(exp(x - m))))`` with ``m = max(x, -1, keepdims=True)``."""

    def body(x_gmem, o_gmem):
        xf = x_gmem[...].astype(jnp.float32)
        m = jnp.max(xf, axis=-1, keepdims=keepdims)
        e = jnp.exp(xf - _against(m, -1, keepdims))
        lse = m + jnp.log(jnp.sum(e, axis=-1, keepdims=keepdims))
        o_gmem[...] = (xf - _against(lse, -1, keepdims)).astype(o_gmem.dtype)

    return plgpu.kernel(body, out_type=_sds(x.shape, x.dtype), compiler_params=WARPGROUP)(x)


def masked_normalize(x: jax.Array, *, keepdims: bool = True) -> jax.Array:
    """Rows scaled to unit maximum, rows without a positive entry zeroed: an (N, 1)
    mask from a comparison, ``jnp.where`` on (N, 1) values, a min/max clamp."""

    def body(x_gmem, o_gmem):
        xf = x_gmem[...].astype(jnp.float32)
        top = jnp.max(xf, axis=-1, keepdims=keepdims)
        low = jnp.min(xf, axis=-1, keepdims=keepdims)
        alive = top > 0
        scale = jnp.where(alive, 1.0 / jnp.maximum(top, 1e-3), 0.0)
        shift = jnp.minimum(low, 0.0)
        y = (xf - _against(shift, -1, keepdims)) * _against(scale, -1, keepdims)
        o_gmem[...] = y.astype(o_gmem.dtype)

    return plgpu.kernel(body, out_type=_sds(x.shape, x.dtype), compiler_params=WARPGROUP)(x)


def shifted_exp_reshaped(x: jax.Array, *, keepdims: bool = True) -> jax.Array:
    """``exp(x - max(x, 1).reshape(N, 1) / 2)``: the (N, 1) value from a reshape."""
    rows = x.shape[0]

    def body(x_gmem, o_gmem):
        xf = x_gmem[...].astype(jnp.float32)
        m = jnp.max(xf, axis=1)
        if keepdims:
            m = m.reshape(rows, 1)
        o_gmem[...] = jnp.exp(xf - _against(m * 0.5, -1, keepdims)).astype(o_gmem.dtype)

    return plgpu.kernel(body, out_type=_sds(x.shape, x.dtype), compiler_params=WARPGROUP)(x)


def centered_with_row_max(x: jax.Array, *, keepdims: bool = True) -> tuple[jax.Array, jax.Array]:
    """``x - 2 max(x, 1, keepdims=True)``, and that (N, 1) maximum stored as ``m[:, 0]``."""

    def body(x_gmem, o_gmem, m_gmem):
        xf = x_gmem[...].astype(jnp.float32)
        m = jnp.max(xf, axis=1, keepdims=keepdims) * 2.0
        o_gmem[...] = (xf - _against(m, -1, keepdims)).astype(o_gmem.dtype)
        m_gmem[...] = m[:, 0] if keepdims else m

    out_type = (_sds(x.shape, x.dtype), _sds((x.shape[0],), jnp.float32))
    return plgpu.kernel(body, out_type=out_type, compiler_params=WARPGROUP)(x)


def row_max_cast(x: jax.Array, *, keepdims: bool = True) -> jax.Array:
    """``x - max(x, -1, keepdims=True).astype(f32) / 2``: the statistic reduced in the
    input's dtype (bf16, f16) and cast as an (N, 1) value."""

    def body(x_gmem, o_gmem):
        x = x_gmem[...]
        shift = jnp.max(x, axis=-1, keepdims=keepdims).astype(jnp.float32) * 0.5
        o_gmem[...] = (x.astype(jnp.float32) - _against(shift, -1, keepdims)).astype(o_gmem.dtype)

    return plgpu.kernel(body, out_type=_sds(x.shape, x.dtype), compiler_params=WARPGROUP)(x)


def column_mean_smem(x: jax.Array, *, keepdims: bool = True) -> tuple[jax.Array, jax.Array]:
    """Columns centered by their (1, N) mean, which also goes to GMEM through SMEM
    (a TMA copy), doubled."""
    cols = x.shape[1]

    def body(x_gmem, o_gmem, mean_gmem, mean_smem):
        xf = x_gmem[...].astype(jnp.float32)
        mu = jnp.mean(xf, axis=0, keepdims=keepdims)
        o_gmem[...] = (xf - _against(mu, 0, keepdims)).astype(o_gmem.dtype)
        mean_smem[...] = _against(mu * 2.0, 0, keepdims)
        plgpu.commit_smem()
        plgpu.copy_smem_to_gmem(mean_smem, mean_gmem)
        plgpu.wait_smem_to_gmem(0)

    return plgpu.kernel(
        body,
        out_type=(_sds(x.shape, x.dtype), _sds((1, cols), jnp.float32)),
        scratch_types=[plgpu.SMEM((1, cols), jnp.float32)],
        compiler_params=WARPGROUP,
    )(x)


def row_softmax_lse(x: jax.Array, *, keepdims: bool = True) -> tuple[jax.Array, jax.Array]:
    """Softmax over rows, and the row log-sum-exp stored as an (N, 1) f32 array."""
    rows = x.shape[0]

    def body(x_gmem, o_gmem, lse_gmem):
        xf = x_gmem[...].astype(jnp.float32)
        m = jnp.max(xf, axis=-1, keepdims=keepdims)
        e = jnp.exp(xf - _against(m, -1, keepdims))
        s = jnp.sum(e, axis=-1, keepdims=keepdims)
        o_gmem[...] = (e / _against(s, -1, keepdims)).astype(o_gmem.dtype)
        lse_gmem[...] = m + jnp.log(s)

    stat_shape = (rows, 1) if keepdims else (rows,)
    out_type = (_sds(x.shape, x.dtype), _sds(stat_shape, jnp.float32))
    return plgpu.kernel(body, out_type=out_type, compiler_params=WARPGROUP)(x)


# --- Flash attention (online softmax) --------------------------------------------


def attention_hopper(
    q: jax.Array,
    k: jax.Array,
    v: jax.Array,
    *,
    block_q: int = 64,
    block_kv: int = 64,
    keepdims: bool = True,
    barrier: bool = False,
) -> jax.Array:
    """Flash attention forward on Hopper: ``s = q @ k.T`` by wgmma, the running
    row maximum and sum carried as (block_q, 1) values; ``barrier`` passes the
    carries through ``lax.optimization_barrier`` (as JAX's own attention kernel
    does)."""
    seq_q, head_dim = q.shape
    seq_kv = k.shape[0]
    scale = 1.0 / math.sqrt(head_dim)
    dtype = q.dtype
    transforms = (plgpu.TilingTransform((8, 64)), plgpu.SwizzleTransform(128))

    def kernel(q_gmem, k_gmem, v_gmem, out_gmem, q_smem, k_smem, v_smem, barriers):
        q_rows = pl.ds(lax.axis_index("q") * block_q, block_q)
        plgpu.copy_gmem_to_smem(q_gmem.at[q_rows], q_smem, barriers.at[0])
        plgpu.barrier_wait(barriers.at[0])

        def step(i, carry):
            acc, m, row_sum = carry
            kv_rows = pl.ds(i * block_kv, block_kv)
            plgpu.copy_gmem_to_smem(k_gmem.at[kv_rows], k_smem, barriers.at[1])
            plgpu.copy_gmem_to_smem(v_gmem.at[kv_rows], v_smem, barriers.at[2])
            plgpu.barrier_wait(barriers.at[1])

            def scores(acc_ref):
                plgpu.wgmma(acc_ref, q_smem, k_smem.T)
                return acc_ref[...]

            s = pl.run_scoped(scores, plgpu.ACC((block_q, block_kv), jnp.float32)) * scale
            m_new = jnp.maximum(m, jnp.max(s, axis=-1, keepdims=keepdims))
            alpha = jnp.exp(m - m_new)
            p = jnp.exp(s - _against(m_new, -1, keepdims))
            row_sum = row_sum * alpha + jnp.sum(p, axis=-1, keepdims=keepdims)
            acc = acc * _against(alpha, -1, keepdims)
            plgpu.barrier_wait(barriers.at[2])

            def accumulate(acc_ref):
                plgpu.wgmma(acc_ref, p.astype(dtype), v_smem)

            acc = pl.run_state(accumulate)(plgpu.ACC.init(acc))
            if barrier:
                acc, m_new, row_sum = lax.optimization_barrier((acc, m_new, row_sum))
            return acc, m_new, row_sum

        stat_shape = (block_q, 1) if keepdims else (block_q,)
        init = (
            jnp.zeros((block_q, head_dim), jnp.float32),
            jnp.full(stat_shape, -jnp.inf, jnp.float32),
            jnp.zeros(stat_shape, jnp.float32),
        )
        acc, _, row_sum = lax.fori_loop(0, seq_kv // block_kv, step, init)
        q_smem[...] = (acc / _against(row_sum, -1, keepdims)).astype(dtype)
        plgpu.commit_smem()
        plgpu.copy_smem_to_gmem(q_smem, out_gmem.at[q_rows])
        plgpu.wait_smem_to_gmem(0)

    return plgpu.kernel(
        kernel,
        out_type=_sds(q.shape, dtype),
        grid=(seq_q // block_q,),
        grid_names=("q",),
        scratch_types=[
            plgpu.SMEM((block_q, head_dim), dtype, transforms=transforms),
            plgpu.SMEM((block_kv, head_dim), dtype, transforms=transforms),
            plgpu.SMEM((block_kv, head_dim), dtype, transforms=transforms),
            plgpu.Barrier(num_barriers=3),
        ],
        compiler_params=WARPGROUP,
    )(q, k, v)


def attention_blackwell(
    q: jax.Array,
    k: jax.Array,
    v: jax.Array,
    *,
    block_kv: int = 128,
    keepdims: bool = True,
) -> jax.Array:
    """Flash attention forward on Blackwell: ``s = q @ k.T`` and ``p @ v`` by
    tcgen05 into TMEM, the running row maximum and sum carried as (128, 1) values."""
    block_q = 128
    seq_q, head_dim = q.shape
    seq_kv = k.shape[0]
    scale = 1.0 / math.sqrt(head_dim)
    dtype = q.dtype
    transforms = (plgpu.TilingTransform((8, 64)), plgpu.SwizzleTransform(128))

    def kernel(
        q_gmem,
        k_gmem,
        v_gmem,
        out_gmem,
        q_smem,
        k_smem,
        v_smem,
        p_smem,
        s_tmem,
        o_tmem,
        loaded,
        mma_done,
    ):
        q_rows = pl.ds(lax.axis_index("q") * block_q, block_q)
        plgpu.copy_gmem_to_smem(q_gmem.at[q_rows], q_smem, loaded.at[0])
        plgpu.barrier_wait(loaded.at[0])

        def step(i, carry):
            acc, m, row_sum = carry
            kv_rows = pl.ds(i * block_kv, block_kv)
            plgpu.copy_gmem_to_smem(k_gmem.at[kv_rows], k_smem, loaded.at[1])
            plgpu.copy_gmem_to_smem(v_gmem.at[kv_rows], v_smem, loaded.at[2])
            plgpu.barrier_wait(loaded.at[1])
            plgpu.tcgen05_mma(s_tmem, q_smem, k_smem.T, mma_done, accumulate=False)
            plgpu.barrier_wait(mma_done)
            s = plgpu.async_load_tmem(s_tmem) * scale
            m_new = jnp.maximum(m, jnp.max(s, axis=-1, keepdims=keepdims))
            alpha = jnp.exp(m - m_new)
            p = jnp.exp(s - _against(m_new, -1, keepdims))
            row_sum = row_sum * alpha + jnp.sum(p, axis=-1, keepdims=keepdims)
            p_smem[...] = p.astype(dtype)
            plgpu.commit_smem()
            plgpu.barrier_wait(loaded.at[2])
            plgpu.tcgen05_mma(o_tmem, p_smem, v_smem, mma_done, accumulate=False)
            plgpu.barrier_wait(mma_done)
            acc = acc * _against(alpha, -1, keepdims) + plgpu.async_load_tmem(o_tmem)
            plgpu.wait_load_tmem()
            return acc, m_new, row_sum

        stat_shape = (block_q, 1) if keepdims else (block_q,)
        init = (
            jnp.zeros((block_q, head_dim), jnp.float32),
            jnp.full(stat_shape, -jnp.inf, jnp.float32),
            jnp.zeros(stat_shape, jnp.float32),
        )
        acc, _, row_sum = lax.fori_loop(0, seq_kv // block_kv, step, init)
        q_smem[...] = (acc / _against(row_sum, -1, keepdims)).astype(dtype)
        plgpu.commit_smem()
        plgpu.copy_smem_to_gmem(q_smem, out_gmem.at[q_rows])
        plgpu.wait_smem_to_gmem(0)

    return plgpu.kernel(
        kernel,
        out_type=_sds(q.shape, dtype),
        grid=(seq_q // block_q,),
        grid_names=("q",),
        scratch_types=[
            plgpu.SMEM((block_q, head_dim), dtype, transforms=transforms),
            plgpu.SMEM((block_kv, head_dim), dtype, transforms=transforms),
            plgpu.SMEM((block_kv, head_dim), dtype, transforms=transforms),
            plgpu.SMEM((block_q, block_kv), dtype, transforms=transforms),
            plgpu.TMEM((block_q, block_kv), jnp.float32),
            plgpu.TMEM((block_q, head_dim), jnp.float32),
            plgpu.Barrier(num_barriers=3),
            plgpu.Barrier(orders_tensor_core=True),
        ],
        compiler_params=WARPGROUP,
    )(q, k, v)


# --- References in plain jnp (f32 math, the kernels' output dtype) -------------------


def _f32(x: jax.Array) -> jax.Array:
    return x.astype(jnp.float32)


def rms_norm_reference(x: jax.Array, w: jax.Array, *, eps: float = 1e-6, **_: Any) -> jax.Array:
    xf = _f32(x)
    return (xf * lax.rsqrt(jnp.mean(xf * xf, -1, keepdims=True) + eps) * _f32(w)).astype(x.dtype)


def rms_norm_columns_reference(x: jax.Array, *, eps: float = 1e-6) -> jax.Array:
    xf = _f32(x)
    return (xf * lax.rsqrt(jnp.mean(xf * xf, 0, keepdims=True) + eps)).astype(x.dtype)


def layer_norm_reference(x: jax.Array, *, eps: float = 1e-5, **_: Any) -> jax.Array:
    xf = _f32(x)
    mu = jnp.mean(xf, -1, keepdims=True)
    return ((xf - mu) * lax.rsqrt(jnp.var(xf, -1, keepdims=True) + eps)).astype(x.dtype)


def log_softmax_reference(x: jax.Array) -> jax.Array:
    return jax.nn.log_softmax(_f32(x), axis=-1).astype(x.dtype)


def masked_normalize_reference(x: jax.Array) -> jax.Array:
    xf = _f32(x)
    top, low = jnp.max(xf, -1, keepdims=True), jnp.min(xf, -1, keepdims=True)
    scale = jnp.where(top > 0, 1.0 / jnp.maximum(top, 1e-3), 0.0)
    return ((xf - jnp.minimum(low, 0.0)) * scale).astype(x.dtype)


def attention_reference(q: jax.Array, k: jax.Array, v: jax.Array) -> jax.Array:
    s = (q.astype(jnp.float32) @ k.astype(jnp.float32).T) / math.sqrt(q.shape[-1])
    return (jax.nn.softmax(s, axis=-1) @ v.astype(jnp.float32)).astype(q.dtype)


def shifted_exp_reshaped_reference(x: jax.Array) -> jax.Array:
    xf = _f32(x)
    return jnp.exp(xf - jnp.max(xf, 1, keepdims=True) * 0.5).astype(x.dtype)


def centered_with_row_max_reference(x: jax.Array) -> jax.Array:
    xf = _f32(x)
    return (xf - jnp.max(xf, 1, keepdims=True) * 2.0).astype(x.dtype)


def row_max_cast_reference(x: jax.Array) -> jax.Array:
    shift = jnp.max(x, -1, keepdims=True).astype(jnp.float32) * 0.5
    return (_f32(x) - shift).astype(x.dtype)


def column_mean_smem_reference(x: jax.Array) -> jax.Array:
    xf = _f32(x)
    return (xf - jnp.mean(xf, 0, keepdims=True)).astype(x.dtype)


REFERENCES: dict[str, Callable[..., jax.Array]] = {
    "rms_norm": rms_norm_reference,
    "rms_norm_scale": rms_norm_reference,
    "rms_norm_columns": rms_norm_columns_reference,
    "layer_norm": layer_norm_reference,
    "layer_norm_stats": layer_norm_reference,  # its first output
    "log_softmax": log_softmax_reference,
    "masked_normalize": masked_normalize_reference,
    "shifted_exp_reshaped": shifted_exp_reshaped_reference,
    "centered_with_row_max": centered_with_row_max_reference,  # its first output
    "row_max_cast": row_max_cast_reference,
    "column_mean_smem": column_mean_smem_reference,  # its first output
    "attention_hopper": attention_reference,
    "attention_blackwell": attention_reference,
    "attention_hopper_barrier": attention_reference,
}


# --- The cases ------------------------------------------------------------------


@dataclass(frozen=True)
class Kernel:
    """One keepdims kernel with its arguments and target."""

    kind: str  # "rms_norm", "layer_norm", "softmax", "attention"
    name: str
    fn: Callable[..., Any]  # takes keepdims=...
    args: tuple[jax.ShapeDtypeStruct, ...]
    arch: tuple[int, int]
    # Whether JAX's own pass compiles the kernel written without keepdims (measured:
    # where it does not, it runs out of fuel after 15-30 s of CPU; smalto's complete
    # search compiles those).
    twin_by_jax: bool = False

    @property
    def dtype(self) -> str:
        return jnp.dtype(self.args[0].dtype).name

    @property
    def id(self) -> str:
        shape = "x".join(map(str, self.args[0].shape))
        return f"{self.name}-{shape}-{self.dtype}-sm{self.arch[0]}{self.arch[1]}"

    def written(self, keepdims: bool = True) -> Callable[..., Any]:
        return partial(self.fn, keepdims=keepdims)


F32, BF16, F16 = jnp.float32, jnp.bfloat16, jnp.float16


def _kernels() -> list[Kernel]:
    cases: list[Kernel] = []
    for arch in (HOPPER, BLACKWELL):
        for dtype in (F32, BF16, F16):
            for rows, cols in ((128, 256), (64, 128)):
                x, w = _sds((rows, cols), dtype), _sds((cols,), dtype)
                cases.append(Kernel("rms_norm", "rms_norm", rms_norm, (x, w), arch))
                cases.append(Kernel("layer_norm", "layer_norm", layer_norm, (x,), arch))
            x = _sds((128, 256), dtype)
            cases += [
                Kernel(
                    "rms_norm",
                    "rms_norm_scale",
                    partial(rms_norm, mean="scale"),
                    (x, _sds((256,), dtype)),
                    arch,
                ),
                Kernel("rms_norm", "rms_norm_columns", rms_norm_columns, (x,), arch),
                Kernel(
                    "layer_norm", "layer_norm_stats", partial(layer_norm, stats=True), (x,), arch
                ),
                Kernel("softmax", "log_softmax", log_softmax, (x,), arch),
                Kernel("softmax", "masked_normalize", masked_normalize, (x,), arch),
                Kernel("softmax", "shifted_exp_reshaped", shifted_exp_reshaped, (x,), arch),
                Kernel("softmax", "centered_with_row_max", centered_with_row_max, (x,), arch),
                Kernel("softmax", "row_max_cast", row_max_cast, (x,), arch),
                Kernel("layer_norm", "column_mean_smem", column_mean_smem, (x,), arch),
                Kernel(
                    "rms_norm",
                    "rms_norm_batched",
                    rms_norm_batched,
                    (_sds((2, 64, 128), dtype),),
                    arch,
                ),
            ]
    for dtype in (F16, BF16):
        for head_dim in (64, 128):
            q, kv = _sds((128, head_dim), dtype), _sds((256, head_dim), dtype)
            for name, fn, arch in (
                ("attention_hopper", attention_hopper, HOPPER),
                ("attention_blackwell", attention_blackwell, BLACKWELL),
            ):
                cases.append(Kernel("attention", name, fn, (q, kv, kv), arch, twin_by_jax=True))
        q, kv = _sds((128, 64), dtype), _sds((256, 64), dtype)
        barrier = partial(attention_hopper, barrier=True)
        cases.append(
            Kernel(
                "attention",
                "attention_hopper_barrier",
                barrier,
                (q, kv, kv),
                HOPPER,
                twin_by_jax=True,
            )
        )
    return cases


KERNELS = _kernels()
