"""Pallas kernels (jax 0.12.0.1) whose fixes the diagnosis once withheld or misplaced
(issue #33), written as users write them.

- A wrong ``layout_cast`` in a kernel with a second, unrelated output: with an f32
  output JAX's pass lays the rest out; with a bf16 output only smalto's widened
  search does (a relayout before the store). The edit of the cast is the fix in
  both, and in the bf16 one it needs smalto installed.
- Transfers with no optimized plan, SMEM and GMEM, loads and stores, Hopper and
  Blackwell: an sm100 epilogue storing its TMEM accumulator, cast to
  ``TCGEN05_TRANSPOSED``, into the transposed view of a (1, 32)-tiled, 128-byte
  swizzled f32 SMEM ref (as a production ragged dot does); narrow MMA results and
  table columns moved straight to or from GMEM.

The modules JAX hands to layout inference for them are in ``fixes_*.mlir`` next to
this file, their locations pointing at the lines below
(``kernels_fixes.py:LINE:COLUMN``). Rewrite them after changing a kernel with::

    .venv/bin/python tests/unsat/kernels_fixes.py
"""

from __future__ import annotations

import re
import sys
from collections.abc import Callable
from functools import partial
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
SWIZZLED_F16 = (plgpu.TilingTransform((8, 64)), plgpu.SwizzleTransform(128))
# An f32 ref read and written 32 elements (128 bytes) a row: a production epilogue's.
ROWS_OF_32_F32 = (plgpu.TilingTransform((1, 32)), plgpu.SwizzleTransform(128))


def _sds(*shape: int, dtype: Any = jnp.float32) -> jax.ShapeDtypeStruct:
    return jax.ShapeDtypeStruct(shape, dtype)


def _kernel(body: Callable[..., None], out: Any, **kwargs: Any) -> Callable:
    return plgpu.kernel(body, out_type=out, compiler_params=WARPGROUP, **kwargs)


def _wgmma(a_gmem, b_gmem, a_smem, b_smem, loaded, m: int, n: int) -> jax.Array:
    """``a @ b`` into a wgmma accumulator (Hopper)."""
    plgpu.copy_gmem_to_smem(a_gmem, a_smem, loaded)
    plgpu.copy_gmem_to_smem(b_gmem, b_smem, loaded)
    plgpu.barrier_wait(loaded)

    def mma(acc_ref):
        plgpu.wgmma(acc_ref, a_smem, b_smem)
        plgpu.wgmma_wait(0)
        return acc_ref[...]

    return pl.run_scoped(mma, plgpu.ACC((m, n), jnp.float32))


def _tcgen05(a_gmem, b_gmem, a_smem, b_smem, acc_tmem, loaded, done) -> jax.Array:
    """``a @ b`` into a TMEM accumulator (Blackwell), loaded into registers."""
    plgpu.copy_gmem_to_smem(a_gmem, a_smem, loaded)
    plgpu.copy_gmem_to_smem(b_gmem, b_smem, loaded)
    plgpu.barrier_wait(loaded)
    plgpu.tcgen05_mma(acc_tmem, a_smem, b_smem, done, accumulate=False)
    plgpu.barrier_wait(done)
    return plgpu.async_load_tmem(acc_tmem)


def _operands(a: jax.Array, b: jax.Array) -> list[Any]:
    return [
        plgpu.SMEM(a.shape, a.dtype, transforms=SWIZZLED_F16),
        plgpu.SMEM(b.shape, b.dtype, transforms=SWIZZLED_F16),
    ]


def _tcgen05_scratch(a: jax.Array, b: jax.Array) -> list[Any]:
    m, n = a.shape[0], b.shape[1]
    return [
        *_operands(a, b),
        plgpu.TMEM((m, n), jnp.float32),
        plgpu.Barrier(num_arrivals=2),
        plgpu.Barrier(orders_tensor_core=True),
    ]


# --- 1. a wrong cast beside an unrelated output --------------------------------------------


def row_sums_and_scaled(x: jax.Array, *, out_dtype: Any) -> Any:
    """Row sums of a WGMMA tile cast to the *column* layout (``reduce(0)`` where
    ``reduce(1)`` is meant), and the tile doubled into a second output of ``out_dtype``."""

    def body(x_gmem, sums_gmem, y_gmem, x_smem, barrier):
        plgpu.copy_gmem_to_smem(x_gmem, x_smem, barrier)
        plgpu.barrier_wait(barrier)
        x = plgpu.layout_cast(x_smem[...], plgpu.Layout.WGMMA)
        s = jnp.sum(x, axis=1)
        sums_gmem[...] = plgpu.layout_cast(s, plgpu.Layout.WGMMA.reduce(0))
        y_gmem[...] = (x * 2).astype(y_gmem.dtype)

    return _kernel(
        body,
        (_sds(x.shape[0]), _sds(*x.shape, dtype=out_dtype)),
        scratch_types=[plgpu.SMEM(x.shape, x.dtype), plgpu.Barrier()],
    )(x)


def tcgen05_row_max_and_scaled(a: jax.Array, b: jax.Array, *, out_dtype: Any) -> Any:
    """Blackwell: row maxima of a TMEM accumulator cast to the column layout, and the
    accumulator halved into a second output of ``out_dtype`` (staged through SMEM)."""
    m, n = a.shape[0], b.shape[1]

    def body(a_gmem, b_gmem, max_gmem, y_gmem, a_smem, b_smem, acc_tmem, loaded, done, y_smem):
        acc = _tcgen05(a_gmem, b_gmem, a_smem, b_smem, acc_tmem, loaded, done)
        row_max = jnp.max(acc, axis=1)
        max_gmem[...] = plgpu.layout_cast(row_max, plgpu.Layout.TCGEN05.reduce(0))
        y_smem[...] = (acc * 0.5).astype(y_smem.dtype)
        plgpu.commit_smem()
        plgpu.copy_smem_to_gmem(y_smem, y_gmem)
        plgpu.wait_smem_to_gmem(0)

    y_transforms = (plgpu.TilingTransform((8, 128 // jnp.dtype(out_dtype).itemsize)),)
    return _kernel(
        body,
        (_sds(m), _sds(m, n, dtype=out_dtype)),
        scratch_types=[
            *_tcgen05_scratch(a, b),
            plgpu.SMEM((m, n), out_dtype, transforms=(*y_transforms, plgpu.SwizzleTransform(128))),
        ],
    )(a, b)


# --- 2. transfers with no optimized plan -----------------------------------------------------


def tcgen05_transposed_epilogue(a: jax.Array, b: jax.Array) -> Any:
    """sm100 epilogue (as a ragged dot's): the f32 accumulator cast to TCGEN05_TRANSPOSED
    and stored into the transposed view of a (1, 32)-tiled, swizzled SMEM scratch ref,
    then copied out with a TMA copy."""
    m, n = a.shape[0], b.shape[1]

    def body(a_gmem, b_gmem, out_gmem, a_smem, b_smem, acc_tmem, loaded, done, acc_smem):
        acc = _tcgen05(a_gmem, b_gmem, a_smem, b_smem, acc_tmem, loaded, done)
        acc_smem.T[...] = plgpu.layout_cast(acc, plgpu.Layout.TCGEN05_TRANSPOSED)
        plgpu.commit_smem()
        plgpu.copy_smem_to_gmem(acc_smem, out_gmem)
        plgpu.wait_smem_to_gmem(0)

    return _kernel(
        body,
        _sds(n, m),
        scratch_types=[
            *_tcgen05_scratch(a, b),
            plgpu.SMEM((n, m), jnp.float32, transforms=ROWS_OF_32_F32),
        ],
    )(a, b)


def wgmma_transposed_epilogue(a: jax.Array, b: jax.Array) -> Any:
    """Hopper: the f32 wgmma accumulator stored into the transposed view of an SMEM ref
    tiled (1, 32) for row-major TMA copies, then copied out."""
    m, n = a.shape[0], b.shape[1]

    def body(a_gmem, b_gmem, out_gmem, a_smem, b_smem, loaded, out_smem):
        acc = _wgmma(a_gmem, b_gmem, a_smem, b_smem, loaded, m, n)
        out_smem.T[...] = acc
        plgpu.commit_smem()
        plgpu.copy_smem_to_gmem(out_smem, out_gmem)
        plgpu.wait_smem_to_gmem(0)

    return _kernel(
        body,
        _sds(n, m),
        scratch_types=[
            *_operands(a, b),
            plgpu.Barrier(num_arrivals=2),
            plgpu.SMEM((n, m), jnp.float32, transforms=ROWS_OF_32_F32),
        ],
    )(a, b)


def transposed_tile_load(x: jax.Array) -> Any:
    """Hopper: an f32 tile copied into a (1, 32)-tiled SMEM ref, read back through its
    transposed view in the WGMMA layout."""

    def body(x_gmem, o_gmem, x_smem, barrier):
        plgpu.copy_gmem_to_smem(x_gmem, x_smem, barrier)
        plgpu.barrier_wait(barrier)
        x = plgpu.layout_cast(x_smem.T[...], plgpu.Layout.WGMMA)
        o_gmem[...] = x * 2

    return _kernel(
        body,
        _sds(*x.shape),
        scratch_types=[plgpu.SMEM(x.shape, x.dtype, transforms=ROWS_OF_32_F32), plgpu.Barrier()],
    )(x)


def tcgen05_fp8_out(a: jax.Array, b: jax.Array) -> Any:
    """Blackwell: the accumulator narrowed to fp8 and stored straight to GMEM."""
    m, n = a.shape[0], b.shape[1]

    def body(a_gmem, b_gmem, o_gmem, a_smem, b_smem, acc_tmem, loaded, done):
        acc = _tcgen05(a_gmem, b_gmem, a_smem, b_smem, acc_tmem, loaded, done)
        o_gmem[...] = acc.astype(o_gmem.dtype)

    return _kernel(body, _sds(m, n, dtype=jnp.float8_e4m3fn), scratch_types=_tcgen05_scratch(a, b))(
        a, b
    )


def bias_column_plus_wgmma(a: jax.Array, b: jax.Array, bias: jax.Array) -> Any:
    """Hopper: a per-row bias read from column 0 of a bf16 (m, 8) GMEM table, added to
    the wgmma accumulator."""
    m, n = a.shape[0], b.shape[1]

    def body(a_gmem, b_gmem, bias_gmem, o_gmem, a_smem, b_smem, loaded):
        acc = _wgmma(a_gmem, b_gmem, a_smem, b_smem, loaded, m, n)
        row_bias = bias_gmem[:, 0].astype(jnp.float32)
        o_gmem[...] = acc + row_bias[:, None]

    scratch = [*_operands(a, b), plgpu.Barrier(num_arrivals=2)]
    return _kernel(body, _sds(m, n), scratch_types=scratch)(a, b, bias)


# name -> (kernel, arguments, arch)
KERNELS: dict[str, tuple[Callable[..., Any], tuple[Any, ...], tuple[int, int]]] = {
    "row_sums_and_scaled_f32": (
        partial(row_sums_and_scaled, out_dtype=jnp.float32),
        (_sds(128, 128),),
        HOPPER,
    ),
    "row_sums_and_scaled_bf16": (
        partial(row_sums_and_scaled, out_dtype=jnp.bfloat16),
        (_sds(128, 128),),
        HOPPER,
    ),
    "tcgen05_row_max_and_scaled_f32": (
        partial(tcgen05_row_max_and_scaled, out_dtype=jnp.float32),
        (_sds(128, 64, dtype=jnp.float16), _sds(64, 128, dtype=jnp.float16)),
        BLACKWELL,
    ),
    "tcgen05_transposed_epilogue": (
        tcgen05_transposed_epilogue,
        (_sds(128, 64, dtype=jnp.float16), _sds(64, 128, dtype=jnp.float16)),
        BLACKWELL,
    ),
    "wgmma_transposed_epilogue": (
        wgmma_transposed_epilogue,
        (_sds(64, 64, dtype=jnp.bfloat16), _sds(64, 128, dtype=jnp.bfloat16)),
        HOPPER,
    ),
    "transposed_tile_load": (transposed_tile_load, (_sds(128, 128),), HOPPER),
    "tcgen05_fp8_out": (
        tcgen05_fp8_out,
        (_sds(128, 64, dtype=jnp.float16), _sds(64, 128, dtype=jnp.float16)),
        BLACKWELL,
    ),
    "bias_column_plus_wgmma": (
        bias_column_plus_wgmma,
        (
            _sds(64, 64, dtype=jnp.bfloat16),
            _sds(64, 128, dtype=jnp.bfloat16),
            _sds(64, 8, dtype=jnp.bfloat16),
        ),
        HOPPER,
    ),
}


def fixture_text(name: str) -> str:
    """The module JAX hands to layout inference for kernel ``name``, located in this file."""
    sys.path.insert(0, str(HERE.parents[1]))
    import smalto.jax

    fn, args, arch = KERNELS[name]
    captured = smalto.jax.capture(fn, *args, arch=arch)
    text = captured[-1].text
    text = text.replace(f'"{Path(__file__).resolve()}"', '"kernels_fixes.py"')
    # The dump name counts lowerings in this process: a fixed one keeps the file stable.
    return re.sub(r'mosaic_gpu\.dump_basename = "[^"]*"', 'mosaic_gpu.dump_basename = "k"', text)


if __name__ == "__main__":
    for kernel_name in sys.argv[1:] or KERNELS:
        (HERE / f"fixes_{kernel_name}.mlir").write_text(fixture_text(kernel_name))
        print(f"wrote fixes_{kernel_name}.mlir")
