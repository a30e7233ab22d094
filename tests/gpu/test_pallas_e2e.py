"""End to end on a GPU: Pallas kernels compiled with smalto's layouts run and agree
with the same kernels compiled with JAX's pass.

Skipped without an NVIDIA GPU. To run (Hopper, sm_90; the tcgen05 test needs
Blackwell, sm_100), with the CUDA build of the pinned JAX::

    pip install -e '.[test]' 'jax[cuda12]==0.10.2'
    python -m pytest tests/gpu -v

Each test compiles one kernel twice, with JAX's layout inference and inside
``smalto.jax.enabled()``, checks that smalto's pass was the one called the
second time, and compares both outputs with each other (bit for bit: the same
layouts give the same code) and with a plain ``jnp`` reference.
"""

from __future__ import annotations

import importlib.util
from collections.abc import Callable
from pathlib import Path
from types import ModuleType
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import smalto
import smalto.jax


def _gpu_arch() -> tuple[int, int] | None:
    try:
        device = jax.devices("gpu")[0]
    except RuntimeError:
        return None
    capability = getattr(device, "compute_capability", None)
    if not capability:
        return None
    major, minor = capability.split(".")
    return int(major), int(minor)


ARCH = _gpu_arch()
pytestmark = pytest.mark.skipif(ARCH is None, reason="needs an NVIDIA GPU")
hopper = pytest.mark.skipif(ARCH is None or ARCH[0] != 9, reason="needs a Hopper GPU (sm_90)")
blackwell = pytest.mark.skipif(
    ARCH is None or ARCH[0] != 10, reason="needs a Blackwell GPU (sm_100)"
)

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"


def _example(name: str) -> ModuleType:
    spec = importlib.util.spec_from_file_location(f"smalto_example_{name}", EXAMPLES / f"{name}.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _both_ways(
    fn: Callable[..., Any], args: tuple[Any, ...], monkeypatch: pytest.MonkeyPatch
) -> tuple[np.ndarray, np.ndarray]:
    calls = []
    real = smalto.infer_layout

    def counting(module, **kwargs):
        calls.append(kwargs["arch"])
        return real(module, **kwargs)

    monkeypatch.setattr(smalto, "infer_layout", counting)
    jax.clear_caches()
    by_jax = np.asarray(jax.jit(fn)(*args))
    assert calls == []
    with smalto.jax.enabled():
        by_smalto = np.asarray(jax.jit(fn)(*args))
    assert calls == [ARCH]
    return by_jax, by_smalto


def _random(shape: tuple[int, ...], seed: int) -> jax.Array:
    return jax.random.normal(jax.random.key(seed), shape, jnp.float16)


@hopper
def test_matmul_end_to_end(monkeypatch: pytest.MonkeyPatch) -> None:
    example = _example("pallas_matmul")
    a, b = _random((512, 256), 0), _random((256, 384), 1)
    by_jax, by_smalto = _both_ways(example.matmul, (a, b), monkeypatch)
    np.testing.assert_array_equal(by_smalto, by_jax)
    expected = jnp.dot(a, b, preferred_element_type=jnp.float32)
    np.testing.assert_allclose(by_smalto.astype(np.float32), expected, atol=0.25, rtol=1e-2)


@hopper
def test_attention_end_to_end(monkeypatch: pytest.MonkeyPatch) -> None:
    example = _example("pallas_attention")
    q, k, v = _random((2, 128, 64), 0), _random((2, 256, 64), 1), _random((2, 256, 64), 2)
    by_jax, by_smalto = _both_ways(example.attention, (q, k, v), monkeypatch)
    np.testing.assert_array_equal(by_smalto, by_jax)
    expected = example.reference(q, k, v).astype(jnp.float32)
    np.testing.assert_allclose(by_smalto.astype(np.float32), expected, atol=2e-2, rtol=2e-2)


@blackwell
def test_tcgen05_matmul_end_to_end(monkeypatch: pytest.MonkeyPatch) -> None:
    from test_pallas_integration import blackwell_matmul

    a, b = _random((128, 64), 0), _random((64, 128), 1)
    by_jax, by_smalto = _both_ways(blackwell_matmul, (a, b), monkeypatch)
    np.testing.assert_array_equal(by_smalto, by_jax)
    expected = jnp.dot(a, b, preferred_element_type=jnp.float32)
    np.testing.assert_allclose(by_smalto.astype(np.float32), expected, atol=0.25, rtol=1e-2)
