"""The oracles of the Pallas-form fuzz families (``fuzz.pallas_families``).

``judge(case, folder)`` writes the case's script into ``folder``, runs ``smalto fix`` on
it as a user does (the command line, in this process) and holds what it did to:

(a) its answer: exit 0 with the fix written or "lowers as written", or exit 1 with the
    script left byte for byte as it was and ``smalto: error:`` saying why; never exit 2
    (the script is good input), never a traceback;
(b) the fixed script: a plain Pallas script (no smalto in it) that JAX's trace and JAX's
    own layout pass and dialect lowering compile alone;
(c) running, independently of ``smalto fix``'s own proof (other inputs, this module's
    own run): the kernel as written, run in JAX's Mosaic GPU interpreter (race detector
    on), equals the script's ``jax.numpy`` reference (within the output dtype's
    rounding), and the fixed kernel gives the very bytes the original gives;
(d) the route: the kernel as written, lowered with smalto as the pass and the family's
    rescue (``stage_through_smem``, ``allow_unoptimized``, the unit-dim rewrite), either
    lowers all the way through JAX's dialect lowering or is refused by inference (a
    refusal is counted, not a failure); smalto's answer never breaks JAX's lowering.

It returns a ``Verdict``: what happened, and every oracle that failed, in words.
"""

from __future__ import annotations

import contextlib
import io
import json
import runpy
import time
import traceback
import warnings
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from fuzz.pallas_families import PallasCase

# Within how much the interpreter's output must equal the jax.numpy reference, relative
# (the output dtype's rounding: one step of its mantissa, as a value that differs by an
# ulp of f32 before narrowing may round to the neighbouring narrow value), and absolute
# (near zero, where a difference of f32 rounding in a cancellation is all there is).
_TOLERANCE = {
    "float32": (1e-5, 1e-5),
    "float16": (1e-3, 1e-3),
    "bfloat16": (8e-3, 8e-3),
    "float8_e4m3fn": (0.07, 0.02),
    "float8_e5m2": (0.13, 0.02),
}


@dataclass
class Verdict:
    """What ``smalto fix`` did with a case, and the oracles that failed."""

    case: PallasCase
    status: int | None = None
    outcome: str = ""  # "fixed", "as written", "refused", or "crashed"
    edits: list[str] = field(default_factory=list)  # the kinds of the edits made
    rescued: bool | None = None  # the route with the family's rescue lowered it
    ran: bool = False  # the interpreter ran the kernel as written
    run_said: str = ""  # where it did not: why
    seconds: float = 0.0
    failures: list[str] = field(default_factory=list)

    def failed(self, oracle: str, why: str) -> None:
        self.failures.append(f"({oracle}) {why}")


def judge(case: PallasCase, folder: Path) -> Verdict:
    """The verdict of every oracle on ``case`` (its scripts written under ``folder``)."""
    from cli_run import run

    start = time.perf_counter()
    verdict = Verdict(case)
    folder.mkdir(parents=True, exist_ok=True)
    stem = f"{case.family}_{case.seed}"
    script = folder / f"{stem}.py"
    original = folder / f"{stem}_as_written.py"
    script.write_text(case.text)
    original.write_text(case.text)
    try:
        ran = run("fix", f"{script}:{case.function}", *case.arg_flags(), *case.fix_flags, "--json")
    except BaseException:  # what escapes the command is the first failure of all
        verdict.outcome = "crashed"
        verdict.failed("a", "smalto fix raised:\n" + traceback.format_exc())
        verdict.seconds = time.perf_counter() - start
        return verdict
    verdict.status = ran.status
    written = _answer(verdict, ran.status, ran.out, ran.err, script, case)
    kernel = _load(original, "kernel", verdict)
    if kernel is not None:
        _route(verdict, kernel, case)
    fixed = None
    if written:
        fixed = _fixed(verdict, script, case)
    if kernel is not None:
        _run(verdict, kernel, fixed, original, case)
    verdict.seconds = time.perf_counter() - start
    return verdict


def _answer(
    verdict: Verdict, status: int, out: str, err: str, script: Path, case: PallasCase
) -> bool:
    """Oracle (a); whether the fix was written."""
    if "Traceback (most recent call last)" in err or "Traceback (most recent call last)" in out:
        verdict.failed("a", f"a traceback on stderr:\n{err[-3000:]}")
    if status not in (0, 1):
        verdict.failed("a", f"exit {status} on a good script:\n{err[-3000:]}")
        verdict.outcome = "crashed"
        return False
    try:
        made = json.loads(out)
    except json.JSONDecodeError:
        verdict.failed("a", f"--json printed no JSON object: {out[:500]!r}")
        return False
    verdict.edits = [e["kind"] for e in made.get("edits", [])]
    now = script.read_text()
    if status == 1:
        verdict.outcome = "refused"
        if now != case.text:
            verdict.failed("a", "exit 1, yet the script changed")
        if not any(line.startswith("smalto: error: ") for line in err.splitlines()):
            verdict.failed("a", f"exit 1 without a `smalto: error:` line:\n{err[-2000:]}")
        if made.get("written"):
            verdict.failed("a", "exit 1, yet --json says written")
        return False
    if made.get("written"):
        verdict.outcome = "fixed"
        if now == case.text:
            verdict.failed("a", "--json says written, yet the script is as it was")
        if not made.get("run") or made.get("refuted"):
            verdict.failed("a", f"written without a run that proves it: {made.get('run')}")
        return True
    verdict.outcome = "as written"
    if now != case.text or made.get("edits"):
        verdict.failed("a", "exit 0 with nothing written, yet edits or a changed script")
    if "lowers as written" not in out + err:
        verdict.failed("a", f"exit 0, nothing written, and not 'lowers as written':\n{err[-2000:]}")
    return False


def _load(path: Path, name: str, verdict: Verdict) -> Any:
    try:
        with contextlib.redirect_stdout(io.StringIO()):
            return runpy.run_path(str(path))[name]
    except Exception as error:  # a generated script that does not load: the generator's
        verdict.failed("generator", f"{path.name} does not load: {type(error).__name__}: {error}")
        return None


def shapes(case: PallasCase) -> tuple[Any, ...]:
    import jax
    import jax.numpy as jnp

    names = {"f32": jnp.float32, "bf16": jnp.bfloat16, "f16": jnp.float16}
    return tuple(jax.ShapeDtypeStruct(shape, names[dtype]) for dtype, shape in case.args)


def _route(verdict: Verdict, kernel: Any, case: PallasCase) -> None:
    """Oracle (d): the original through the route with the family's rescue."""
    import smalto.jax

    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            smalto.jax.lower(kernel, *shapes(case), arch=case.arch, by="smalto", **case.rescue)
    except smalto.jax.KernelLoweringError as error:
        verdict.rescued = False
        if error.stage != "inference":
            verdict.failed(
                "d", f"with {case.rescue}, the route fails {error.stage}: {_first(error)}"
            )
        return
    verdict.rescued = True


def _fixed(verdict: Verdict, script: Path, case: PallasCase) -> Any:
    """Oracle (b): the fixed script, a plain Pallas kernel JAX compiles alone."""
    import smalto.jax

    text = script.read_text()
    if "smalto" in text.replace("tests/fuzz/pallas_families.py", ""):
        verdict.failed("b", "the fixed script names smalto")
    fixed = _load(script, "kernel", verdict)
    if fixed is None:
        verdict.failed("b", "the fixed script does not load")
        return None
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            smalto.jax.lower(fixed, *shapes(case), arch=case.arch, by="jax")
    except smalto.jax.KernelLoweringError as error:
        verdict.failed("b", f"JAX's own pass and lowering reject the fixed kernel: {_first(error)}")
    return fixed


def _first(error: BaseException) -> str:
    return str(error).split("\n", 1)[0][:600]


def inputs(case: PallasCase) -> tuple[Any, ...]:
    """Random inputs for the case: small multiples of 1/4 (exact in 16-bit matmuls), from
    a generator of the case's own (not ``smalto fix``'s inputs)."""
    import jax.numpy as jnp

    generator = np.random.default_rng([case.seed, len(case.family), 7])
    made = []
    for shape in shapes(case):
        values = generator.integers(-8, 8, size=shape.shape).astype(np.float32) / 4
        made.append(jnp.asarray(values, dtype=shape.dtype))
    return tuple(made)


class CannotRun(Exception):
    """JAX's interpreter does not run the kernel (its NotImplementedError and kin)."""


def interpreted(fn: Any, args: tuple[Any, ...]) -> list[np.ndarray]:
    """``fn(*args)`` run in JAX's Mosaic GPU interpreter, race detector on: its outputs."""
    import jax
    from jax._src.pallas.mosaic_gpu.interpret.interpret_pallas_call import (
        reset_gpu_interpret_mode_state,
    )
    from jax.experimental.pallas import mosaic_gpu as plgpu

    try:
        with plgpu.force_gpu_interpret_mode(plgpu.InterpretGPUParams(detect_races=True)):
            out = jax.block_until_ready(jax.jit(fn)(*args))
    except NotImplementedError as error:
        reset_gpu_interpret_mode_state()
        raise CannotRun(f"NotImplementedError: {error}") from None
    except Exception:
        reset_gpu_interpret_mode_state()
        raise
    return [np.asarray(leaf) for leaf in jax.tree.leaves(out)]


def _run(verdict: Verdict, kernel: Any, fixed: Any, original: Path, case: PallasCase) -> None:
    """Oracle (c): the original against the reference, the fixed against the original."""
    import jax

    args = inputs(case)
    try:
        got = interpreted(kernel, args)
    except CannotRun as cannot:
        verdict.run_said = str(cannot).split("\n", 1)[0]
        return
    except Exception as error:
        verdict.failed("c", f"the kernel as written fails in the interpreter: {_first(error)}")
        return
    verdict.ran = True
    reference = _load(original, "reference", verdict)
    if reference is not None:
        wanted = [np.asarray(leaf) for leaf in jax.tree.leaves(reference(*args))]
        _near(verdict, got, wanted, case)
    if fixed is None:
        return
    try:
        again = interpreted(fixed, args)
    except Exception as error:
        verdict.failed("c", f"the fixed kernel fails in the interpreter: {_first(error)}")
        return
    for number, (a, b) in enumerate(zip(got, again, strict=True)):
        if a.dtype != b.dtype or a.shape != b.shape or a.tobytes() != b.tobytes():
            differing = int(np.sum(a.astype(np.float64) != b.astype(np.float64)))
            verdict.failed(
                "c",
                f"output {number} of the fixed kernel differs from the original's "
                f"({differing} of {a.size} elements)",
            )


def _near(
    verdict: Verdict, got: list[np.ndarray], wanted: list[np.ndarray], case: PallasCase
) -> None:
    if len(got) != len(wanted):
        verdict.failed("c", f"{len(got)} outputs, the reference {len(wanted)}")
        return
    for number, (out, ref) in enumerate(zip(got, wanted, strict=True)):
        if number == 1 and case.written_column is not None:
            out = out[:, case.written_column]
        if out.shape != ref.shape:
            verdict.failed("c", f"output {number}: shape {out.shape}, reference {ref.shape}")
            continue
        rtol, atol = _TOLERANCE.get(str(out.dtype), (1e-5, 1e-5))
        a, b = out.astype(np.float64), np.asarray(ref).astype(np.float64)
        close = np.isclose(a, b, rtol=rtol, atol=atol, equal_nan=True)
        if not close.all():
            where = tuple(int(i) for i in np.argwhere(~close)[0])
            verdict.failed(
                "c",
                f"output {number} ({out.dtype}) differs from the jax.numpy reference at "
                f"{int((~close).sum())} of {out.size} elements, e.g. {where}: {a[where]} "
                f"against {b[where]}",
            )


__all__ = ["CannotRun", "Verdict", "inputs", "interpreted", "judge", "shapes"]
