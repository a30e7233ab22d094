"""Proof by running: a kernel as written and as edited, both run in JAX's Mosaic GPU
interpreter on the same random inputs, their outputs compared bit for bit, with the
interpreter's race detector on.

JAX 0.12.0.1 ships an interpreter for Pallas Mosaic GPU kernels
(``plgpu.force_gpu_interpret_mode``): it simulates GMEM, SMEM, TMEM, threads,
barriers, TMA copies, ``wgmma`` and ``tcgen05`` on the CPU, with a happens-before
race detector (``detect_races=True``; a race raises). It needs no GPU, so an edit
``smalto fix`` makes is proven by running wherever the interpreter runs the
kernel: the original and the edited function are run on the same inputs and
must give the same bytes. Inputs are small multiples of 1/4 (integers from -8
to 7, divided by 4): every product and sum of a bf16 or f16 matmul of them is
exact in f32, so two kernels that compute the same value give the same bits,
whatever order their sums take.

The interpreter does not run every kernel (a ``wgmma`` whose left operand is in
registers, dynamic grids, scalar prefetch...: its ``NotImplementedError``s).
Where it cannot run the original, nothing is proven by running, and
``RunProof.why_not`` says why in one line; the caller then writes only what
JAX's trace, or the construction of the edit, proves. A run that does not end
within the time limit is abandoned (its thread is a daemon) and said so.
"""

from __future__ import annotations

import contextlib
import logging
import re
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any

import numpy as np

from smalto.source.scripts import one_line

# A run of one kernel in the interpreter takes 0.3-1.2 s on a busy CPU; one that takes
# longer than this is abandoned rather than waited for.
TIME_LIMIT_S = 120.0
SEED = 0x5A17


@dataclass(frozen=True)
class RunProof:
    """What running the original and the edited kernel in JAX's interpreter showed."""

    ran: bool  # both ran to the end
    equal: bool = False  # their outputs are the same bytes (and no race was found)
    why_not: str = ""  # where they did not both run, or differ: why, in one line
    seconds: float = 0.0  # the two runs' wall time

    @property
    def proven(self) -> bool:
        return self.ran and self.equal

    @property
    def refutes(self) -> bool:
        """The run shows the edit changes what the kernel computes (or makes it race)."""
        return self.ran and not self.equal

    def said(self) -> str:
        """In words, as ``smalto fix`` prints it."""
        if self.proven:
            return (
                "both kernels run in JAX's Mosaic GPU interpreter on the same random inputs: "
                f"bit-equal outputs, no race ({self.seconds:.1f} s)"
            )
        if self.ran:
            return f"run in JAX's Mosaic GPU interpreter: {self.why_not}"
        return f"not run in JAX's Mosaic GPU interpreter: {self.why_not}"

    def as_json(self) -> dict[str, object]:
        return {
            "ran": self.ran,
            "bit_equal": self.equal if self.ran else None,
            "why_not": self.why_not or None,
            "seconds": round(self.seconds, 3),
        }


class _CannotRun(Exception):
    """The interpreter cannot run the kernel (not a fault of the kernel)."""


def random_inputs(args: tuple[Any, ...], seed: int = SEED) -> tuple[Any, ...]:
    """Arrays of ``args``' shapes and dtypes (``jax.ShapeDtypeStruct``s), small multiples
    of 1/4 for floating types (exact under 16-bit matmuls), small integers, or booleans."""
    import jax.numpy as jnp

    generator = np.random.default_rng(seed)
    made = []
    for arg in args:
        shape, dtype = tuple(arg.shape), jnp.dtype(arg.dtype)
        if jnp.issubdtype(dtype, jnp.floating):
            values = generator.integers(-8, 8, size=shape).astype(np.float32) / 4
        elif jnp.issubdtype(dtype, jnp.integer):
            values = generator.integers(0, 8, size=shape)
        elif dtype == jnp.bool_:
            values = generator.integers(0, 2, size=shape).astype(bool)
        else:
            raise _CannotRun(f"no random inputs of dtype {dtype}")
        made.append(jnp.asarray(values, dtype=dtype))
    return tuple(made)


def run_both(
    original: Callable[..., Any],
    edited: Callable[..., Any],
    args: tuple[Any, ...],
    *,
    time_limit_s: float = TIME_LIMIT_S,
) -> RunProof:
    """``original`` and ``edited`` run in JAX's Mosaic GPU interpreter on the same random
    inputs of ``args``' shapes: whether both ran, and gave the same bytes with no race."""
    start = time.perf_counter()
    try:
        inputs = random_inputs(args)
    except _CannotRun as cannot:
        return RunProof(False, why_not=str(cannot))
    try:
        wanted = _interpreted(original, inputs, time_limit_s)
    except _CannotRun as cannot:
        return RunProof(False, why_not=f"{cannot} (the kernel as written)")
    except _Failed as error:  # the kernel as written fails in the interpreter
        return RunProof(False, why_not=f"the kernel as written fails there: {error}")
    try:
        got = _interpreted(edited, inputs, time_limit_s)
    except _CannotRun as cannot:
        return RunProof(False, why_not=f"{cannot} (the kernel as edited)")
    except _Failed as error:  # the edit made it fail: a race, an out-of-bounds read...
        seconds = time.perf_counter() - start
        return RunProof(True, False, f"the edited kernel fails: {error}", seconds)
    seconds = time.perf_counter() - start
    difference = _difference(wanted, got)
    if difference:
        return RunProof(True, False, difference, seconds)
    return RunProof(True, True, seconds=seconds)


def _interpreted(fn: Callable[..., Any], inputs: tuple[Any, ...], time_limit_s: float) -> Any:
    """``fn(*inputs)`` run in the interpreter (race detector on), its outputs as numpy
    arrays; raises ``_CannotRun`` where the interpreter has no support for the kernel or
    the run did not end in time, else what the run raised."""
    result: dict[str, Any] = {}

    def work() -> None:
        try:
            result["value"] = _run(fn, inputs)
        except BaseException as error:  # handed to the caller's thread
            result["error"] = error

    # (A thread, so that a run that never ends is abandoned, not waited for.)
    worker = threading.Thread(target=work, name="smalto-interpreter", daemon=True)
    worker.start()
    worker.join(time_limit_s)
    if worker.is_alive():
        raise _CannotRun(f"the run did not end within {time_limit_s:.0f} s")
    if "error" in result:
        error = result["error"]
        kind, said = _raised(error)
        if kind == "NotImplementedError" or _unsupported(kind, said):
            raise _CannotRun(f"the interpreter cannot run it: {kind}: {said}")
        raise _Failed(f"{kind}: {said}")
    return result["value"]


class _Failed(Exception):
    """A run that raised: its exception's type and first line, in one line."""


# The last line of a Python traceback an interpreter callback's error carries.
_RAISED = re.compile(r"^(\w+(?:Error|Exception|Warning)): (.*)$", re.MULTILINE)


def _raised(error: BaseException) -> tuple[str, str]:
    """The exception a run raised, as its type's name and first line. The interpreter's
    callbacks run on the host: what they raise reaches the caller wrapped in a runtime
    error that carries its traceback; the error at that traceback's end is the one."""
    said = str(error)
    if "CpuCallback error" in said:
        found = _RAISED.findall(said)
        if found:
            kind, line = found[-1]
            return kind, line.strip()
    return type(error).__name__, one_line(error).removeprefix(f"{type(error).__name__}: ")


# What JAX 0.12.0.1's interpreter raises, other than NotImplementedError, for what it does
# not support (INTERPRETER.md): its own words.
_UNSUPPORTED = (
    "only support grids and clusters with a single device",
    "Expected shape",
    "not supported in GPU interpret mode",
    "not (yet) supported",
    "inline_mgpu",
)


def _unsupported(kind: str, said: str) -> bool:
    return kind in ("ValueError", "TypeError") and any(w in said for w in _UNSUPPORTED)


_LOCK = threading.Lock()  # the interpreter's state is global: one run at a time


def _run(fn: Callable[..., Any], inputs: tuple[Any, ...]) -> Any:
    import jax
    from jax._src.pallas.mosaic_gpu.interpret.interpret_pallas_call import (
        reset_gpu_interpret_mode_state,
    )
    from jax.experimental.pallas import mosaic_gpu as plgpu

    # (The interpreter's failures are told to the caller, not logged with their traceback.)
    quiet = logging.getLogger("jax._src.callback")
    with _LOCK, _quieter(quiet):
        try:
            params = plgpu.InterpretGPUParams(detect_races=True)
            with plgpu.force_gpu_interpret_mode(params):
                # (Traced anew, never taken from a cache of the compiled kernel.)
                out = jax.jit(fn)(*inputs)
                return jax.tree.map(np.asarray, jax.block_until_ready(out))
        except BaseException:
            reset_gpu_interpret_mode_state()  # its docstring asks for it after a failure
            raise


@contextlib.contextmanager
def _quieter(logger: logging.Logger) -> Iterator[None]:
    saved = logger.level
    logger.setLevel(logging.CRITICAL)
    try:
        yield
    finally:
        logger.setLevel(saved)


def _difference(wanted: Any, got: Any) -> str:
    """Where two runs' outputs differ, in words; empty where they are the same bytes."""
    import jax

    wanted_leaves, wanted_tree = jax.tree.flatten(wanted)
    got_leaves, got_tree = jax.tree.flatten(got)
    if str(wanted_tree) != str(got_tree):
        return f"the outputs differ in structure ({wanted_tree} against {got_tree})"
    for number, (a, b) in enumerate(zip(wanted_leaves, got_leaves, strict=True)):
        a, b = np.asarray(a), np.asarray(b)
        if a.shape != b.shape or a.dtype != b.dtype:
            ours, theirs = f"{a.dtype}{list(a.shape)}", f"{b.dtype}{list(b.shape)}"
            return f"output {number} differs: {ours} against {theirs}"
        if a.tobytes() != b.tobytes():
            flat_a = a.reshape(-1).view(np.uint8).reshape(a.size, -1)
            flat_b = b.reshape(-1).view(np.uint8).reshape(b.size, -1)
            differing = int(np.any(flat_a != flat_b, axis=1).sum()) if a.size else 0
            return f"output {number} differs in {differing} of {a.size} elements"
    return ""


__all__ = ["RunProof", "random_inputs", "run_both"]
