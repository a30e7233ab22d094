"""End to end on a GPU: kernels compiled with ``allow_unoptimized`` run and compute what the
kernel says (issue #24, section 1).

Skipped without an NVIDIA GPU (see ``test_pallas_e2e.py`` for how to run). Each
kernel of ``user_kernels_unoptimized`` for the GPU's arch that smalto refuses
as written runs twice:

- as written, compiled inside ``smalto.jax.enabled(allow_unoptimized=True)``:
  smalto makes the fewest transfers unoptimized (one warning each);
- with the edit a user makes instead (``plgpu.store(..., optimized=False)``,
  ``plgpu.load(ref.at[...], optimized=False)``), compiled by JAX's own pass,
  whose answer lowers there;

and both must agree bit for bit (the same ops on the same values, the same
transfers unoptimized) and with a plain ``jnp`` reference. The strided views
that lower as written run once, against the reference.
"""

from __future__ import annotations

import functools
import warnings
from collections.abc import Callable
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from gpu_device import gpu_arch
from user_kernels_unoptimized import (
    BLACKWELL,
    F8,
    HOPPER,
    matmul_narrow_out,
    row_max_into_table_column,
    scale_rows_by_table_column,
    scale_window,
    sum_of_table_columns,
    tcgen05_narrow_out,
    tcgen05_shift_by_table_column,
)

import smalto
import smalto.jax

ARCH = gpu_arch()
pytestmark = pytest.mark.skipif(ARCH is None, reason="needs an NVIDIA GPU")
BF16, F32 = jnp.bfloat16, jnp.float32


def _inputs(*specs: tuple[tuple[int, ...], Any]) -> tuple[jax.Array, ...]:
    keys = jax.random.split(jax.random.key(24), len(specs))
    return tuple(
        jax.random.normal(key, shape, F32).astype(dtype)
        for key, (shape, dtype) in zip(keys, specs, strict=True)
    )


def _f32(x: jax.Array) -> np.ndarray:
    return np.asarray(jnp.asarray(x, F32))


def _matmul(a: jax.Array, b: jax.Array) -> jax.Array:
    return jnp.dot(a.astype(F32), b.astype(F32))


# (arch, as written, as the user edits it, inputs, the jnp reference, tolerance)
CASES = [
    (
        HOPPER,
        functools.partial(matmul_narrow_out, out_dtype=F8),
        functools.partial(matmul_narrow_out, out_dtype=F8, fixed=True),
        (((128, 64), BF16), ((64, 128), BF16)),
        lambda a, b: _matmul(a, b).astype(F8),
        0.13,
    ),
    (
        HOPPER,
        scale_rows_by_table_column,
        functools.partial(scale_rows_by_table_column, fixed=True),
        (((64, 64), BF16), ((64, 64), BF16), ((64, 2), F32)),
        lambda a, b, w: _matmul(a, b) * w[:, 1][:, None],
        2e-2,
    ),
    (
        HOPPER,
        row_max_into_table_column,
        functools.partial(row_max_into_table_column, fixed=True),
        (((64, 64), BF16), ((64, 64), BF16)),
        lambda a, b: jnp.stack([_matmul(a, b).max(axis=1), _matmul(a, b).min(axis=1)], axis=1),
        2e-2,
    ),
    (
        BLACKWELL,
        functools.partial(tcgen05_narrow_out, out_dtype=BF16),
        functools.partial(tcgen05_narrow_out, out_dtype=BF16, fixed=True),
        (((128, 64), BF16), ((64, 128), BF16)),
        lambda a, b: _matmul(a, b).astype(BF16),
        3e-2,
    ),
    (
        BLACKWELL,
        tcgen05_shift_by_table_column,
        functools.partial(tcgen05_shift_by_table_column, fixed=True),
        (((128, 64), BF16), ((64, 128), BF16), ((128, 2), F32)),
        lambda a, b, t: _matmul(a, b) + t[:, 0][:, None],
        2e-2,
    ),
]


def _run_with_the_option(fn: Callable[..., Any], args: tuple[jax.Array, ...]) -> Any:
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        with smalto.jax.enabled(allow_unoptimized=True):
            out = jax.block_until_ready(jax.jit(fn)(*args))
    made = [w for w in caught if issubclass(w.category, smalto.UnoptimizedTransferWarning)]
    assert made, "smalto made no transfer unoptimized: the kernel did not need the option"
    return out


@pytest.mark.parametrize(
    ("arch", "written", "edited", "specs", "reference", "tolerance"),
    [c for c in CASES if ARCH is not None and c[0] == ARCH],
)
def test_the_option_computes_what_the_edited_kernel_computes(
    arch: tuple[int, int],
    written: Callable[..., Any],
    edited: Callable[..., Any],
    specs: tuple[tuple[tuple[int, ...], Any], ...],
    reference: Callable[..., Any],
    tolerance: float,
) -> None:
    args = _inputs(*specs)
    jax.clear_caches()
    ours = _run_with_the_option(written, args)
    jax.clear_caches()
    theirs = jax.block_until_ready(jax.jit(edited)(*args))  # JAX's own pass
    np.testing.assert_array_equal(_f32(ours), _f32(theirs))
    np.testing.assert_allclose(_f32(ours), _f32(reference(*args)), atol=tolerance, rtol=tolerance)


@pytest.mark.skipif(ARCH is None or ARCH[0] != 9, reason="Hopper kernels")
def test_strided_views_that_lower_as_written_compute_the_reference() -> None:
    (table,) = _inputs(((128, 2), F32))
    (x,) = _inputs(((64, 128), F32))
    with smalto.jax.enabled():
        sums = jax.block_until_ready(jax.jit(sum_of_table_columns)(table))
        window = jax.block_until_ready(jax.jit(scale_window)(x))
    np.testing.assert_allclose(_f32(sums), _f32(table[:, 0] + table[:, 1]), rtol=1e-6)
    np.testing.assert_allclose(_f32(window), _f32(x[:, 64:] * 2), rtol=1e-6)
