"""End to end on a GPU: Pallas kernels compiled with smalto's layouts run and agree
with the same kernels compiled with JAX's pass.

Skipped without an NVIDIA GPU. To run (Hopper, sm_90; the tcgen05 test needs
Blackwell, sm_100), with the CUDA build of the pinned JAX::

    pip install -e '.[test]' 'jax[cuda13]==0.12.0.1'    # or jax[cuda12]
    python -m pytest tests/gpu -v

Each test compiles one kernel twice, with JAX's layout inference and inside
``smalto.jax.enabled()``, checks that smalto's pass was the one called the
second time, and compares both outputs with each other (bit for bit: the same
layouts give the same code) and with a plain ``jnp`` reference. A kernel JAX's
pass cannot infer runs once, with smalto, against the reference alone.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from gpu_device import gpu_arch
from pallas_kernels import add_one, blackwell_matmul, row_softmax
from pallas_kernels import example as example_module

import smalto
import smalto.jax

ARCH = gpu_arch()
pytestmark = pytest.mark.skipif(ARCH is None, reason="needs an NVIDIA GPU")
hopper = pytest.mark.skipif(ARCH is None or ARCH[0] != 9, reason="needs a Hopper GPU (sm_90)")
blackwell = pytest.mark.skipif(
    ARCH is None or ARCH[0] != 10, reason="needs a Blackwell GPU (sm_100)"
)


@pytest.fixture
def smalto_calls(monkeypatch: pytest.MonkeyPatch) -> list[tuple[int, int]]:
    """The arch of every ``smalto.infer_layout`` call (the hook looks it up at call time)."""
    calls: list[tuple[int, int]] = []
    real = smalto.infer_layout

    def counting(module, **kwargs):
        calls.append(kwargs["arch"])
        return real(module, **kwargs)

    monkeypatch.setattr(smalto, "infer_layout", counting)
    return calls


def _by_smalto(fn: Callable[..., Any], args: tuple[Any, ...], calls: list) -> np.ndarray:
    jax.clear_caches()
    with smalto.jax.enabled():
        out = np.asarray(jax.jit(fn)(*args))
    assert calls == [ARCH]
    return out


def _both_ways(
    fn: Callable[..., Any], args: tuple[Any, ...], calls: list
) -> tuple[np.ndarray, np.ndarray]:
    jax.clear_caches()
    by_jax = np.asarray(jax.jit(fn)(*args))
    assert calls == []
    return by_jax, _by_smalto(fn, args, calls)


def _random(shape: tuple[int, ...], seed: int, dtype: Any = jnp.float16) -> jax.Array:
    return jax.random.normal(jax.random.key(seed), shape, dtype)


@hopper
def test_matmul_end_to_end(smalto_calls: list) -> None:
    example = example_module("pallas_matmul")
    a, b = _random((512, 256), 0), _random((256, 384), 1)
    by_jax, by_smalto = _both_ways(example.matmul, (a, b), smalto_calls)
    np.testing.assert_array_equal(by_smalto, by_jax)
    expected = jnp.dot(a, b, preferred_element_type=jnp.float32)
    np.testing.assert_allclose(by_smalto.astype(np.float32), expected, atol=0.25, rtol=1e-2)


@hopper
def test_attention_end_to_end(smalto_calls: list) -> None:
    example = example_module("pallas_attention")
    q, k, v = _random((2, 128, 64), 0), _random((2, 256, 64), 1), _random((2, 256, 64), 2)
    by_jax, by_smalto = _both_ways(example.attention, (q, k, v), smalto_calls)
    np.testing.assert_array_equal(by_smalto, by_jax)
    expected = example.reference(q, k, v).astype(jnp.float32)
    np.testing.assert_allclose(by_smalto.astype(np.float32), expected, atol=2e-2, rtol=2e-2)


@blackwell
def test_tcgen05_matmul_end_to_end(smalto_calls: list) -> None:
    a, b = _random((128, 64), 0), _random((64, 128), 1)
    by_jax, by_smalto = _both_ways(blackwell_matmul, (a, b), smalto_calls)
    np.testing.assert_array_equal(by_smalto, by_jax)
    expected = jnp.dot(a, b, preferred_element_type=jnp.float32)
    np.testing.assert_allclose(by_smalto.astype(np.float32), expected, atol=0.25, rtol=1e-2)


@pytest.mark.skipif(ARCH is None or ARCH < (9, 0), reason="needs sm_90 or later")
def test_elementwise_end_to_end(smalto_calls: list) -> None:
    x = _random((128, 128), 0, jnp.float32)
    by_jax, by_smalto = _both_ways(add_one, (x,), smalto_calls)
    np.testing.assert_array_equal(by_smalto, by_jax)
    np.testing.assert_array_equal(by_smalto, np.asarray(x) + 1.0)


@pytest.mark.skipif(ARCH is None or ARCH < (9, 0), reason="needs sm_90 or later")
def test_kernel_jax_cannot_infer_runs_with_smalto(smalto_calls: list) -> None:
    x = _random((128, 128), 0, jnp.float32)
    out = _by_smalto(row_softmax, (x,), smalto_calls)
    np.testing.assert_allclose(out, jax.nn.softmax(x, axis=1), atol=1e-5, rtol=1e-5)
