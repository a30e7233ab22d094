"""End to end on a GPU: kernels staged through SMEM (``stage_through_smem``) compute what the
same kernels with transfers unoptimized compute, and which of the two is faster (issue #42,
section 6).

Skipped without an NVIDIA GPU (see ``test_pallas_e2e.py`` for how to run). Each
kernel of the staging tests' epilogue family for the GPU's arch runs twice, from
the same source: compiled inside ``smalto.jax.enabled(stage_through_smem=True)``
(every transfer optimized, through SMEM) and inside
``smalto.jax.enabled(allow_unoptimized=True)``; both must agree bit for bit (the
same ops on the same values: only the way the values move differs). The
benchmark test prints the median time of each, so that a run on a lent GPU
says which is faster; until it has, staging stays opt-in.
"""

from __future__ import annotations

import statistics
import time
import warnings
from collections.abc import Callable
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from gpu_device import gpu_arch
from staging_kernels import STAGED_KERNELS

import smalto
import smalto.jax

ARCH = gpu_arch()
pytestmark = pytest.mark.skipif(ARCH is None, reason="needs an NVIDIA GPU")
CASES = [k for k in STAGED_KERNELS if k[1] == ARCH]


def _inputs(specs: tuple[Any, ...]) -> tuple[jax.Array, ...]:
    keys = jax.random.split(jax.random.key(42), len(specs))
    return tuple(
        jax.random.normal(key, spec.shape, jnp.float32).astype(spec.dtype)
        for key, spec in zip(keys, specs, strict=True)
    )


def _compiled(fn: Callable[..., Any], args: tuple[Any, ...], **options: Any) -> Any:
    with warnings.catch_warnings(), smalto.jax.enabled(**options):
        warnings.simplefilter("ignore")
        compiled = jax.jit(fn).lower(*args).compile()
    return compiled


def _bits(x: Any) -> list[np.ndarray]:
    return [np.asarray(leaf).view(np.uint8) for leaf in jax.tree.leaves(x)]


@pytest.mark.parametrize("case", CASES, ids=[c[0] for c in CASES])
def test_staged_kernels_compute_what_unoptimized_ones_do(case: Any) -> None:
    _, _, fn, specs, *_ = case
    args = _inputs(specs)
    staged = _compiled(fn, args, stage_through_smem=True)(*args)
    unoptimized = _compiled(fn, args, allow_unoptimized=True)(*args)
    for a, b in zip(_bits(staged), _bits(unoptimized), strict=True):
        np.testing.assert_array_equal(a, b)


def _median_us(run: Callable[[], Any], repeat: int = 50) -> float:
    jax.block_until_ready(run())
    times = []
    for _ in range(repeat):
        start = time.perf_counter()
        jax.block_until_ready(run())
        times.append((time.perf_counter() - start) * 1e6)
    return statistics.median(times)


@pytest.mark.parametrize("case", CASES, ids=[c[0] for c in CASES])
def test_which_is_faster_staged_or_unoptimized(case: Any) -> None:
    name, _, fn, specs, *_ = case
    args = _inputs(specs)
    staged = _compiled(fn, args, stage_through_smem=True)
    unoptimized = _compiled(fn, args, allow_unoptimized=True)
    staged_us = _median_us(lambda: staged(*args))
    unoptimized_us = _median_us(lambda: unoptimized(*args))
    print(f"{name}: staged {staged_us:.1f} us, unoptimized {unoptimized_us:.1f} us")
    assert staged_us > 0 and unoptimized_us > 0
