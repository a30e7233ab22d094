"""Proof by running: two versions of a kernel's function run in JAX's Mosaic GPU
interpreter on the same inputs, their outputs compared bit for bit.

An edit that JAX's trace cannot judge (it changes the ops, not only layouts: a
statistic computed without its unit dim) is proven by running: the original and
the edited function are called under ``plgpu.force_gpu_interpret_mode`` (JAX
0.12.0.1's interpreter simulates GMEM, SMEM, barriers, TMA and the tensor cores
on the CPU), with its race detector on, on the same random inputs: small
multiples of 1/4, on which f32 and bf16 arithmetic is exact enough that bit
equality means something. Equal outputs, bit for bit, and no race: proven.
Where the interpreter cannot run a kernel, the answer says why (and nothing is
proven).
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import jax
import numpy as np
from jax._src.pallas.mosaic_gpu.interpret.interpret_pallas_call import (
    get_races,
    reset_gpu_interpret_mode_state,
)
from jax.experimental.pallas import mosaic_gpu as plgpu

_SEEDS = (0, 1)


@dataclass(frozen=True)
class RunBoth:
    """Whether both versions computed the same, and where not (or not run), why."""

    equal: bool
    why: str = ""


def run_both(
    original: Callable[..., Any], edited: Callable[..., Any], args: tuple[Any, ...]
) -> RunBoth:
    """``original(*inputs)`` and ``edited(*inputs)`` in JAX's interpreter, on the same random
    inputs shaped as ``args`` (``jax.ShapeDtypeStruct``s), twice; equal where every output
    is bit for bit the same and no race was found."""
    for seed in _SEEDS:
        inputs = _inputs(args, seed)
        outputs = []
        for fn in (original, edited):
            ran = _interpreted(fn, inputs)
            if isinstance(ran, RunBoth):
                return ran
            outputs.append(ran)
        if not _same(*outputs):
            return RunBoth(False, "its outputs differ from the original's in JAX's interpreter")
    return RunBoth(True)


def _inputs(args: tuple[Any, ...], seed: int) -> list[Any]:
    generator = np.random.default_rng(seed)
    made = []
    for arg in args:
        shape, dtype = tuple(arg.shape), np.dtype(arg.dtype)
        if np.issubdtype(dtype, np.floating) or dtype.name in ("bfloat16", "float8_e4m3fn"):
            values = generator.integers(-8, 8, shape) / 4
        elif np.issubdtype(dtype, np.bool_):
            values = generator.integers(0, 2, shape)
        else:
            values = generator.integers(-8, 8, shape)
        made.append(jax.numpy.asarray(values, dtype=arg.dtype))
    return made


def _interpreted(fn: Callable[..., Any], inputs: list[Any]) -> list[np.ndarray] | RunBoth:
    reset_gpu_interpret_mode_state()
    try:
        with plgpu.force_gpu_interpret_mode(plgpu.InterpretGPUParams(detect_races=True)):
            result = jax.block_until_ready(fn(*inputs))
        races = getattr(get_races(), "races_found", False)
    except (NotImplementedError, ValueError, TypeError) as error:
        first = str(error).strip().splitlines()[0] if str(error).strip() else ""
        return RunBoth(False, f"JAX's interpreter cannot run it ({type(error).__name__}: {first})")
    finally:
        with contextlib.suppress(Exception):
            reset_gpu_interpret_mode_state()
    if races:
        return RunBoth(False, "JAX's interpreter found a race in it")
    return [np.asarray(leaf) for leaf in jax.tree.leaves(result)]


def _same(first: list[np.ndarray], second: list[np.ndarray]) -> bool:
    return len(first) == len(second) and all(
        a.shape == b.shape and a.dtype == b.dtype and a.tobytes() == b.tobytes()
        for a, b in zip(first, second, strict=True)
    )


__all__ = ["RunBoth", "run_both"]
