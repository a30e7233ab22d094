"""Pallas kernels (jax 0.12.0.1) whose failure messages must speak the kernel's own words.

Each is a small kernel as Pallas users write it, with one mistake that is not a
``plgpu.layout_cast``: a ``plgpu.load``/``plgpu.broadcasted_iota``/
``plgpu.async_load_tmem`` given the wrong ``layout=``, or a reduction over the
wrong axis (``s.max(axis=0)`` where a softmax wants one value per row). The
modules JAX hands to layout inference for them are in ``words_*.mlir`` next to
this file, their locations pointing at the lines below
(``kernels_words.py:LINE:COLUMN``). Rewrite them after changing a kernel with::

    .venv/bin/python tests/unsat/kernels_words.py
"""

from __future__ import annotations

import re
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import jax
import jax.numpy as jnp
from jax.experimental import pallas as pl
from jax.experimental.pallas import mosaic_gpu as plgpu

HOPPER = (9, 0)
BLACKWELL = (10, 0)
WARPGROUP = plgpu.CompilerParams(lowering_semantics=plgpu.LoweringSemantics.Warpgroup)
HERE = Path(__file__).resolve().parent
SWIZZLED = (plgpu.TilingTransform((8, 64)), plgpu.SwizzleTransform(128))


def _sds(*shape: int, dtype: Any = jnp.float32) -> jax.ShapeDtypeStruct:
    return jax.ShapeDtypeStruct(shape, dtype)


def _kernel(body: Callable[..., None], out: jax.ShapeDtypeStruct, **kwargs: Any) -> Callable:
    return plgpu.kernel(body, out_type=out, compiler_params=WARPGROUP, **kwargs)


def _hopper_matmul(
    epilogue: Callable[..., Any], a: jax.Array, b: jax.Array, *extra: jax.Array
) -> jax.Array:
    """``acc = a @ b`` by wgmma (bf16 in, f32 accumulator), then
    ``out = epilogue(acc, *extra_gmem_refs)`` stored through SMEM with a TMA copy."""
    m, n = a.shape[0], b.shape[1]

    def body(a_gmem, b_gmem, *refs):
        *extra_gmem, out_gmem, a_smem, b_smem, out_smem, barrier = refs
        plgpu.copy_gmem_to_smem(a_gmem, a_smem, barrier)
        plgpu.copy_gmem_to_smem(b_gmem, b_smem, barrier)
        plgpu.barrier_wait(barrier)

        def matmul(acc_ref):
            plgpu.wgmma(acc_ref, a_smem, b_smem)
            plgpu.wgmma_wait(0)
            return acc_ref[...]

        acc = pl.run_scoped(matmul, plgpu.ACC((m, n), jnp.float32))
        out_smem[...] = epilogue(acc, *extra_gmem).astype(out_smem.dtype)
        plgpu.commit_smem()
        plgpu.copy_smem_to_gmem(out_smem, out_gmem)
        plgpu.wait_smem_to_gmem(0)

    return _kernel(
        body,
        _sds(m, n, dtype=a.dtype),
        scratch_types=[
            plgpu.SMEM(a.shape, a.dtype, transforms=SWIZZLED),
            plgpu.SMEM(b.shape, b.dtype, transforms=SWIZZLED),
            plgpu.SMEM((m, n), a.dtype, transforms=SWIZZLED),
            plgpu.Barrier(num_arrivals=2),
        ],
    )(a, b, *extra)


def _blackwell_matmul(
    epilogue: Callable[..., Any], a: jax.Array, b: jax.Array, *extra: jax.Array
) -> jax.Array:
    """``acc = a @ b`` by tcgen05 into TMEM, then ``out = epilogue(acc_tmem, *extra)``."""
    m, n = a.shape[0], b.shape[1]

    def body(a_gmem, b_gmem, *refs):
        *extra_gmem, out_gmem, a_smem, b_smem, acc_tmem, out_smem, loaded, mma_done = refs
        plgpu.copy_gmem_to_smem(a_gmem, a_smem, loaded)
        plgpu.copy_gmem_to_smem(b_gmem, b_smem, loaded)
        plgpu.barrier_wait(loaded)
        plgpu.tcgen05_mma(acc_tmem, a_smem, b_smem, mma_done, accumulate=False)
        plgpu.barrier_wait(mma_done)
        out_smem[...] = epilogue(acc_tmem, *extra_gmem).astype(out_smem.dtype)
        plgpu.commit_smem()
        plgpu.copy_smem_to_gmem(out_smem, out_gmem)
        plgpu.wait_smem_to_gmem(0)

    return _kernel(
        body,
        _sds(m, n, dtype=a.dtype),
        scratch_types=[
            plgpu.SMEM(a.shape, a.dtype, transforms=SWIZZLED),
            plgpu.SMEM(b.shape, b.dtype, transforms=SWIZZLED),
            plgpu.TMEM((m, n), jnp.float32),
            plgpu.SMEM((m, n), a.dtype, transforms=SWIZZLED),
            plgpu.Barrier(num_arrivals=2),
            plgpu.Barrier(orders_tensor_core=True),
        ],
    )(a, b, *extra)


# --- a layout= in the wrong place ----------------------------------------------------------


def bias_loaded_as_rows(a: jax.Array, b: jax.Array, bias: jax.Array) -> jax.Array:
    """A per-column bias loaded in the per-row layout (``reduce(1)`` where ``reduce(0)``)."""

    def epilogue(acc, bias_ref):
        bias = plgpu.load(bias_ref, layout=plgpu.Layout.WGMMA.reduce(1))
        return acc + bias[None, :]

    return _hopper_matmul(epilogue, a, b, bias)


def iota_in_row_layout(a: jax.Array, b: jax.Array) -> jax.Array:
    """Column indices made in the per-row layout, added to each row."""

    def epilogue(acc):
        cols = plgpu.broadcasted_iota(
            jnp.int32, (acc.shape[1],), 0, layout=plgpu.Layout.WGMMA.reduce(1)
        )
        return acc + cols.astype(jnp.float32)[None, :]

    return _hopper_matmul(epilogue, a, b)


def iota_mask_in_row_layout(a: jax.Array, b: jax.Array) -> jax.Array:
    """Column indices in the per-row layout, compared and broadcast by ``jnp.where`` (JAX
    makes that broadcast with no line of its own)."""

    def epilogue(acc):
        cols = plgpu.broadcasted_iota(jnp.int32, (64,), 0, layout=plgpu.Layout.WGMMA.reduce(1))
        return jnp.where(cols[None, :] < 100, acc, 0.0)

    return _hopper_matmul(epilogue, a, b)


def tcgen05_bias_loaded_as_rows(a: jax.Array, b: jax.Array, bias: jax.Array) -> jax.Array:
    """Blackwell: a per-column bias loaded in the per-row TCGEN05 layout."""

    def epilogue(acc_tmem, bias_ref):
        acc = plgpu.async_load_tmem(acc_tmem)
        bias = plgpu.load(bias_ref, layout=plgpu.Layout.TCGEN05.reduce(1))
        return acc + bias[None, :]

    return _blackwell_matmul(epilogue, a, b, bias)


# --- a reduction over the wrong axis -------------------------------------------------------


def softmax_max_over_columns(a: jax.Array, b: jax.Array) -> jax.Array:
    """Softmax numerators with the max taken over axis 0 (one per column), then broadcast
    along rows as if it were one per row."""

    def epilogue(s):
        m = s.max(axis=0)
        return jnp.exp(s - m[:, None])

    return _hopper_matmul(epilogue, a, b)


def row_sum_broadcast_along_columns(a: jax.Array, b: jax.Array) -> jax.Array:
    """Row sums (one per row) broadcast along columns, as if one per column."""

    def epilogue(s):
        total = jnp.sum(s, axis=1)
        return s / total[None, :]

    return _hopper_matmul(epilogue, a, b)


def keepdims_min_over_columns(a: jax.Array, b: jax.Array) -> jax.Array:
    """``keepdims=True`` on the wrong axis (a 1×N row of column minima), reshaped to
    the N×1 column a per-row minimum would be."""

    def epilogue(s):
        low = jnp.min(s, axis=0, keepdims=True)
        return s - low.reshape(-1, 1)

    return _hopper_matmul(epilogue, a, b)


def bf16_min_over_columns(a: jax.Array, b: jax.Array) -> jax.Array:
    """A bf16 tile's column minima (``min(axis=0)``), subtracted from each row's values."""

    def epilogue(acc):
        s = acc.astype(jnp.bfloat16)
        lo = s.min(axis=0)
        return s - lo[:, None]

    return _hopper_matmul(epilogue, a, b)


def tcgen05_softmax_max_over_columns(a: jax.Array, b: jax.Array) -> jax.Array:
    """Blackwell: the max of a TCGEN05 accumulator over axis 0, broadcast along rows."""

    def epilogue(acc_tmem):
        s = plgpu.async_load_tmem(acc_tmem)
        m = jnp.max(s, axis=0)
        return jnp.exp(s - m[:, None])

    return _blackwell_matmul(epilogue, a, b)


def tcgen05_row_sum_broadcast_along_columns(a: jax.Array, b: jax.Array) -> jax.Array:
    """Blackwell: row sums of a TCGEN05 accumulator broadcast along columns."""

    def epilogue(acc_tmem):
        s = plgpu.async_load_tmem(acc_tmem)
        total = s.sum(axis=1)
        return s / total[None, :]

    return _blackwell_matmul(epilogue, a, b)


def tcgen05_keepdims_max_over_rows(a: jax.Array, b: jax.Array) -> jax.Array:
    """Blackwell: ``keepdims=True`` on axis 1 (an N×1 column of row maxima), reshaped to the
    1×N row a per-column maximum would be."""

    def epilogue(acc_tmem):
        s = plgpu.async_load_tmem(acc_tmem)
        m = jnp.max(s, axis=1, keepdims=True)
        return s - m.reshape(1, -1)

    return _blackwell_matmul(epilogue, a, b)


# --- a TMEM load against a layout stated elsewhere ---------------------------------------


def tcgen05_scale_loaded_as_wgmma_rows(a: jax.Array, b: jax.Array, scale: jax.Array) -> jax.Array:
    """Blackwell, a Hopper habit: a per-row scale loaded in WGMMA's per-row layout, for a
    TMEM accumulator (whose rows are TCGEN05_ROW's). The TMEM ref is fine."""

    def epilogue(acc_tmem, scale_ref):
        acc = plgpu.async_load_tmem(acc_tmem)
        scale = plgpu.load(scale_ref, layout=plgpu.Layout.WGMMA.reduce(1))
        return acc * scale[:, None]

    return _blackwell_matmul(epilogue, a, b, scale)


def tcgen05_loop_carry_cast_to_wgmma(a: jax.Array, b: jax.Array) -> jax.Array:
    """Blackwell: a loop carry started from a TMEM load (TCGEN05) and cast to WGMMA in the
    loop body. The TMEM ref is fine."""

    def epilogue(acc_tmem):
        acc = plgpu.async_load_tmem(acc_tmem)

        def step(i, carry):
            carry = plgpu.layout_cast(carry * 0.5, plgpu.Layout.WGMMA)
            return carry

        return jax.lax.fori_loop(0, 4, step, acc)

    return _blackwell_matmul(epilogue, a, b)


_AB_HOPPER = (_sds(64, 64, dtype=jnp.bfloat16), _sds(64, 64, dtype=jnp.bfloat16))
_AB_BLACKWELL = (_sds(128, 64, dtype=jnp.bfloat16), _sds(64, 128, dtype=jnp.bfloat16))

# name -> (kernel, arguments, arch)
KERNELS: dict[str, tuple[Callable[..., jax.Array], tuple[Any, ...], tuple[int, int]]] = {
    "bias_loaded_as_rows": (bias_loaded_as_rows, (*_AB_HOPPER, _sds(64)), HOPPER),
    "iota_in_row_layout": (iota_in_row_layout, _AB_HOPPER, HOPPER),
    "iota_mask_in_row_layout": (iota_mask_in_row_layout, _AB_HOPPER, HOPPER),
    "tcgen05_bias_loaded_as_rows": (
        tcgen05_bias_loaded_as_rows,
        (*_AB_BLACKWELL, _sds(128)),
        BLACKWELL,
    ),
    "tcgen05_scale_loaded_as_wgmma_rows": (
        tcgen05_scale_loaded_as_wgmma_rows,
        (*_AB_BLACKWELL, _sds(128)),
        BLACKWELL,
    ),
    "tcgen05_loop_carry_cast_to_wgmma": (
        tcgen05_loop_carry_cast_to_wgmma,
        _AB_BLACKWELL,
        BLACKWELL,
    ),
    "softmax_max_over_columns": (softmax_max_over_columns, _AB_HOPPER, HOPPER),
    "row_sum_broadcast_along_columns": (row_sum_broadcast_along_columns, _AB_HOPPER, HOPPER),
    "keepdims_min_over_columns": (keepdims_min_over_columns, _AB_HOPPER, HOPPER),
    "bf16_min_over_columns": (bf16_min_over_columns, _AB_HOPPER, HOPPER),
    "tcgen05_softmax_max_over_columns": (
        tcgen05_softmax_max_over_columns,
        _AB_BLACKWELL,
        BLACKWELL,
    ),
    "tcgen05_row_sum_broadcast_along_columns": (
        tcgen05_row_sum_broadcast_along_columns,
        _AB_BLACKWELL,
        BLACKWELL,
    ),
    "tcgen05_keepdims_max_over_rows": (tcgen05_keepdims_max_over_rows, _AB_BLACKWELL, BLACKWELL),
}


def fixture_text(name: str) -> str:
    """The module JAX hands to layout inference for kernel ``name``, located in this file."""
    sys.path.insert(0, str(HERE.parents[1]))
    import smalto.jax

    fn, args, arch = KERNELS[name]
    captured = smalto.jax.capture(fn, *args, arch=arch)
    text = captured[-1].text
    text = text.replace(f'"{Path(__file__).resolve()}"', '"kernels_words.py"')
    # The dump name counts lowerings in this process: a fixed one keeps the file stable.
    return re.sub(r'mosaic_gpu\.dump_basename = "[^"]*"', 'mosaic_gpu.dump_basename = "k"', text)


if __name__ == "__main__":
    for kernel_name in sys.argv[1:] or KERNELS:
        (HERE / f"words_{kernel_name}.mlir").write_text(fixture_text(kernel_name))
        print(f"wrote words_{kernel_name}.mlir")
