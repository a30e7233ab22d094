"""End to end on a GPU: keepdims kernels compiled through smalto's unit-dim rewrite
run and agree with the same kernels written without keepdims, and with jnp.

Skipped without an NVIDIA GPU (see ``test_pallas_e2e.py`` for how to run).
Each kernel of ``user_kernels_keepdims`` for the GPU's arch runs three ways:

- written with keepdims, compiled inside ``smalto.jax.enabled()``: smalto
  must rewrite it (a ``UnitDimRewriteWarning``; JAX's own pass cannot
  compile it);
- written without keepdims: by JAX's own pass where it compiles it (the
  attention kernels), else by smalto with no rewrite;
- the plain ``jnp`` reference.

The first two compute the same ops on the same values: they agree to the last
bits (a tolerance of a few ulps only in case the two compilations reduce in
different orders); both agree with the reference to the dtype's precision.
"""

from __future__ import annotations

import warnings
from collections.abc import Callable
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from gpu_device import gpu_arch
from user_kernels_keepdims import KERNELS, REFERENCES, Kernel

import smalto
import smalto.jax

ARCH = gpu_arch()
pytestmark = pytest.mark.skipif(ARCH is None, reason="needs an NVIDIA GPU")

# Agreement with jnp (f32 math inside, the output rounded to its dtype).
_TOLERANCE = {"float32": 2e-5, "bfloat16": 3e-2, "float16": 4e-3}
_ATTENTION_TOLERANCE = {"bfloat16": 3e-2, "float16": 1e-2}


def _runnable() -> list[Kernel]:
    """One kernel per variant, dtype and shape, for the GPU's own arch."""
    if ARCH is None:
        return []
    return [k for k in KERNELS if k.arch == ARCH and k.name in REFERENCES]


def _inputs(kernel: Kernel) -> tuple[jax.Array, ...]:
    keys = jax.random.split(jax.random.key(17), len(kernel.args))
    return tuple(
        jax.random.normal(key, arg.shape, jnp.float32).astype(arg.dtype)
        for key, arg in zip(keys, kernel.args, strict=True)
    )


def _compiled_and_run(
    fn: Callable[..., Any], args: tuple[jax.Array, ...]
) -> tuple[np.ndarray, list]:
    jax.clear_caches()
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        out = jax.jit(fn)(*args)
        if isinstance(out, tuple):
            out = out[0]
        out = np.asarray(out)
    rewrites = [w for w in caught if isinstance(w.message, smalto.UnitDimRewriteWarning)]
    return out, rewrites


@pytest.mark.parametrize("kernel", _runnable(), ids=lambda k: k.id)
def test_rewritten_keepdims_kernel_runs_like_the_kernel_without_keepdims(kernel: Kernel) -> None:
    args = _inputs(kernel)
    with smalto.jax.enabled():
        rewritten, rewrites = _compiled_and_run(kernel.written(keepdims=True), args)
    assert len(rewrites) == 1, "smalto compiled the keepdims kernel through the rewrite"
    if kernel.twin_by_jax:
        twin, twin_rewrites = _compiled_and_run(kernel.written(keepdims=False), args)
    else:
        with smalto.jax.enabled():
            twin, twin_rewrites = _compiled_and_run(kernel.written(keepdims=False), args)
    assert twin_rewrites == []
    assert rewritten.shape == twin.shape and rewritten.dtype == twin.dtype
    as_f32 = rewritten.astype(np.float32), twin.astype(np.float32)
    np.testing.assert_allclose(*as_f32, rtol=1e-6, atol=1e-6)
    expected = np.asarray(REFERENCES[kernel.name](*args)).astype(np.float32)
    tolerance = (_ATTENTION_TOLERANCE if kernel.kind == "attention" else _TOLERANCE)[kernel.dtype]
    np.testing.assert_allclose(as_f32[0], expected, rtol=tolerance, atol=tolerance)


@pytest.mark.parametrize(
    "kernel", [k for k in _runnable() if k.name == "layer_norm_stats"], ids=lambda k: k.id
)
def test_stored_statistics_match(kernel: Kernel) -> None:
    """Layer norm's (N, 1) mean and rstd, expanded back right before their stores."""
    args = _inputs(kernel)
    with smalto.jax.enabled(), warnings.catch_warnings():
        warnings.simplefilter("ignore", smalto.UnitDimRewriteWarning)
        jax.clear_caches()
        _, mean, rstd = jax.jit(kernel.written(keepdims=True))(*args)
    xf = args[0].astype(jnp.float32)
    np.testing.assert_allclose(
        np.asarray(mean)[:, 0], np.asarray(jnp.mean(xf, -1)), rtol=1e-5, atol=1e-5
    )
    expected = jax.lax.rsqrt(jnp.var(xf, -1) + 1e-5)
    np.testing.assert_allclose(np.asarray(rstd)[:, 0], np.asarray(expected), rtol=1e-3, atol=1e-3)
