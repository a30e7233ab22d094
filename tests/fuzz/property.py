"""The fuzz property, shared by the test suite (``tests/jax_parity/test_fuzz.py``) and
``make fuzz``.

For a module, smalto either annotates it and the independent checker accepts
the annotation (every answer smalto returns passes the checker, whatever JAX
answers), or raises (``InferenceError``, a ``ValueError``, where no layouts
exist; ``NotImplementedError`` for what it does not support) leaving the
module untouched; anything else is a failure. JAX 0.12.0.1's pass runs on the
same module with a small fuel, and smalto is a drop-in for it:

- JAX succeeds: smalto writes identical attributes, unless JAX's answer breaks
  a lowering requirement the checker states (then smalto answers differently,
  with layouts JAX's lowering takes, or refuses);
- JAX says unsat (a ``ValueError``, from its rules or its search): smalto
  fails too, or its answer passes the checker and JAX's own constraint system
  (``jax_check.check_with_jax``), or, where it goes beyond JAX's rules (a
  relayout between ops that JAX's rules forbid and its lowering performs),
  JAX's lowering takes it: then smalto was merely more complete, which is
  recorded, not failed;
- JAX raises ``NotImplementedError``: so does smalto, and the other way round;
- JAX runs out of fuel (or crashes on its own bug): smalto decides.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import reference

import smalto
from smalto.check import check

REGRESSIONS = Path(__file__).resolve().parent / "regressions"
# JAX's pass gets little fuel so that it cannot search for long; running out
# of it means "unknown", not "unsatisfiable".
JAX_FUEL = 200
# smalto's search may run long where it runs out of fuel; less keeps the fuzz
# run fast, and running out is "unknown" as for JAX.
SMALTO_FUEL = 5_000

# Outcomes that are failures of smalto (or of the checker).
FAILURES = frozenset(
    {
        "smalto-crash",  # an exception other than InferenceError/NotImplementedError
        "checker-rejects",  # smalto's annotation breaks a requirement
        "checker-crash",
        "module-changed",  # smalto failed but left layout attributes behind
        "smalto-unsat-jax-sat",  # JAX found layouts where smalto said none exist
        "smalto-answer-rejected-by-jax",  # JAX said unsat, and rejects smalto's answer
        # JAX's answer breaks a lowering requirement; smalto's differs, passes
        # the checker, and JAX's lowering rejects it all the same.
        "smalto-answer-not-lowerable",
        "attributes-differ",  # both found layouts, not the same ones
        "error-type-differs",  # one raised NotImplementedError, the other did not
        # JAX said unsat; smalto's answer satisfies JAX's constraints and the
        # checker, but JAX's lowering rejects it: a requirement smalto misses.
        "smalto-more-complete-not-lowerable",
    }
)


# Failures already reported, with the reason: the CI fuzz run does not fail
# on them (each has an xfail(strict=True) regression test, which starts
# failing once the bug is fixed: then drop its entry here).
KNOWN_BUGS: dict[str, str] = {}


@dataclass(frozen=True)
class Verdict:
    """What happened on one module: ``kind`` (see FAILURES) and a one-line detail."""

    kind: str
    detail: str = ""
    jax: str = ""  # JAX's outcome: ok, unsat, fuel, unsupported, crash, skipped
    smalto: str = ""  # smalto's outcome: ok, unsat, fuel, unsupported, crash

    @property
    def failed(self) -> bool:
        return self.kind in FAILURES

    @property
    def known_bug(self) -> str | None:
        """The reason, if this failure is a known bug (see KNOWN_BUGS)."""
        if not self.failed:
            return None
        line = f"{self.kind}: {self.detail}"
        return next((why for pattern, why in KNOWN_BUGS.items() if re.search(pattern, line)), None)

    @property
    def signature(self) -> str:
        """A short key that groups failures with the same cause."""
        detail = re.sub(r"%\w+|\d+|loc\([^)]*\)|-:\d+:\d+|<input>:\d+:\d+", "#", self.detail)
        return f"{self.kind}: {detail[:120]}"


def _one_line(text: object) -> str:
    return " ".join(str(text).split())


def run_smalto(
    text: str, arch: tuple[int, int], fuel: int = SMALTO_FUEL
) -> tuple[str, str, object]:
    """(outcome, detail, module): ok, unsat, fuel, unsupported, changed or crash."""
    ctx = reference.shared_context()
    module = reference.parse(text, ctx)
    # Only the layout attributes: like JAX's pass, smalto names the module's
    # dump (``mosaic_gpu.dump_basename``) even when its search fails.
    before = reference.layout_attributes(module)
    try:
        smalto.infer_layout(module, arch=arch, fuel=fuel)
    except (smalto.InferenceError, NotImplementedError) as error:
        if reference.layout_attributes(module) != before:
            return "changed", _one_line(error), module
        if isinstance(error, NotImplementedError):
            return "unsupported", _one_line(error), module
        if "ran out of fuel" in str(error):
            return "fuel", _one_line(error), module
        return "unsat", _one_line(error), module
    except Exception as error:  # noqa: BLE001 -- any other exception is the finding
        return "crash", f"{type(error).__name__}: {_one_line(error)}", module
    return "ok", "", module


def _jax_own_bug(message: str) -> bool:
    """JAX's consistency checks failing: a bug in its pass, not a verdict on the layouts.

    (Its wgmma rule drops operand A's site when A and B are the same ref, and
    then counts one transform too few; still so in jax 0.12.0.1.)
    """
    return "Expected the same number of" in message or "is mapped to both" in message


def run_jax(text: str, arch: tuple[int, int], fuel: int = JAX_FUEL) -> tuple[str, str]:
    """JAX's outcome: ok, unsat (its search or a rule says no), fuel, unsupported or crash."""
    outcome, detail, _ = run_jax_module(text, arch, fuel)
    return outcome, detail


def run_jax_module(
    text: str, arch: tuple[int, int], fuel: int = JAX_FUEL
) -> tuple[str, str, object]:
    """As ``run_jax``, with the module JAX annotated (or tried to)."""

    ctx = reference.shared_context()
    module = reference.parse(text, ctx)
    outcome, detail = _jax_outcome(module, ctx, arch, fuel)
    return outcome, detail, module


def _jax_outcome(module: object, ctx: object, arch: tuple[int, int], fuel: int) -> tuple[str, str]:
    from jax._src.lib.mlir import ir
    from jax.experimental.mosaic.gpu import layout_inference

    try:
        with ctx, ir.Location.unknown():  # type: ignore[attr-defined]
            layout_inference.infer_layout(module, fuel=fuel, arch=arch)
    except NotImplementedError as error:
        return "unsupported", _one_line(error)
    except ValueError as error:
        message = _one_line(error)
        if "failed to find a solution" in message:
            return "fuel", message
        if _jax_own_bug(message):
            return "crash", message
        return "unsat", message
    except Exception as error:  # noqa: BLE001 -- JAX's own crashes are recorded
        return "crash", f"{type(error).__name__}: {_one_line(error)}"
    return "ok", ""


def _checked(module: object, arch: tuple[int, int]) -> tuple[list[object], str | None]:
    """(violations, crash): the checker's verdict on an annotated module."""
    try:
        return list(check(module, arch)), None  # type: ignore[arg-type]
    except Exception as error:  # noqa: BLE001
        return [], f"{type(error).__name__}: {_one_line(error)}"


def judge(
    text: str, arch: tuple[int, int], *, with_jax: bool = True, fuel: int = SMALTO_FUEL
) -> Verdict:
    """The verdict of the fuzz property on one module (``fuel``: smalto's)."""
    outcome, detail, module = run_smalto(text, arch, fuel)
    if outcome == "crash":
        return Verdict("smalto-crash", detail, smalto=outcome)
    if outcome == "changed":
        return Verdict("module-changed", detail, smalto="unsat")
    violations: list[object] = []
    if outcome == "ok":
        violations, crash = _checked(module, arch)
        if crash:
            return Verdict("checker-crash", crash, smalto="ok")
    if not with_jax:
        if violations:
            return Verdict("checker-rejects", str(violations[0]), smalto="ok")
        return Verdict(f"smalto-{outcome}", detail, jax="skipped", smalto=outcome)

    jax_outcome, jax_detail, jax_module = run_jax_module(text, arch)
    jax_violations: list[object] = []
    if jax_outcome == "ok":
        jax_violations, _ = _checked(jax_module, arch)

    def verdict(kind: str, why: str) -> Verdict:
        return Verdict(kind, why, jax=jax_outcome, smalto=outcome)

    if violations:
        # Every answer smalto returns must pass the checker, even where JAX's
        # own answer breaks a requirement too.
        return verdict("checker-rejects", str(violations[0]))
    decided = ("ok", "unsat", "fuel", "unsupported")
    if (jax_outcome == "unsupported") != (outcome == "unsupported") and (
        jax_outcome in decided and outcome in decided
    ):
        # A drop-in raises what JAX raises: NotImplementedError for what is not
        # supported, ValueError (InferenceError) for what has no layouts. (A
        # pass that ran out of fuel had a rule for every op: NotImplementedError
        # comes only from deriving the system.)
        return verdict(
            "error-type-differs", f"JAX: {jax_outcome} ({jax_detail}); smalto: {outcome} ({detail})"
        )
    if outcome == "fuel":
        # Not a failure of the property, but smalto's search is meant to be
        # complete: worth a look when JAX finds an answer.
        return verdict(f"smalto-fuel-jax-{jax_outcome}", detail)
    if jax_outcome == "ok" and outcome == "ok":
        # smalto is a drop-in for JAX's pass: where both answer, the same answer.
        differences = reference.diff_attributes(
            reference.layout_attributes(jax_module), reference.layout_attributes(module)
        )
        if not differences:
            return verdict("agree-sat", "")
        if jax_violations:
            # smalto's answer passed the checker; JAX's breaks a lowering
            # requirement its constraints omit: a different answer is right,
            # if JAX's lowering takes it.
            lowering = try_jax_lowering(module, arch)
            if lowering is not None:
                return verdict("smalto-answer-not-lowerable", lowering)
            return verdict("jax-answer-rejected-by-checker", str(jax_violations[0]))
        return verdict("attributes-differ", differences[0])
    if jax_outcome == "ok" and outcome == "unsat":
        if jax_violations:
            # JAX's answer breaks a lowering requirement its constraints omit
            # and smalto states (reductions and broadcasts fully tiled, whole
            # registers for async stores): refusing it is right.
            return verdict("jax-answer-rejected-by-checker", str(jax_violations[0]))
        return verdict("smalto-unsat-jax-sat", detail)
    if jax_outcome == "unsat" and outcome == "ok":
        return _judge_more_complete(text, arch, module, jax_detail, verdict)
    if jax_outcome == "unsat" and outcome == "unsat":
        return verdict("agree-unsat", "")
    if jax_outcome == "unsupported" and outcome == "unsupported":
        return verdict("agree-unsupported", "")
    # JAX ran out of fuel or crashed: smalto decides.
    return verdict(f"jax-{jax_outcome}", jax_detail)


def _judge_more_complete(
    text: str,
    arch: tuple[int, int],
    module: object,
    jax_detail: str,
    verdict: Callable[[str, str], Verdict],
) -> Verdict:
    """JAX said unsat, smalto answered (and the checker accepted): does JAX accept the answer?"""
    import jax_check

    problems = jax_check.check_with_jax(text, arch)
    if problems and _jax_own_bug(problems[0]):
        return verdict("jax-crash", _one_line(problems[0]))
    lowering = try_jax_lowering(module, arch)
    if problems and lowering is not None:
        return verdict("smalto-answer-rejected-by-jax", _one_line(problems[0]))
    if lowering is not None:
        # JAX's constraints accept smalto's extra answer, but JAX's lowering
        # does not: a requirement neither JAX's rules nor the checker state.
        return verdict("smalto-more-complete-not-lowerable", lowering)
    if problems:
        # Beyond JAX's rules (a relayout between ops they forbid), and JAX's
        # lowering takes it.
        return verdict("smalto-more-complete-beyond-jax-rules", _one_line(problems[0]))
    return verdict("smalto-more-complete", jax_detail)


# A kernel launch to lower fuzz modules in: since jax 0.12 the dialect
# lowering needs one (it reads the dynamic SMEM size and places its thread
# predicates in the launch body). One block of 128 threads, SMEM ample for the
# generator's offsets. The lowering reads the arch from the module.
_LAUNCH = """
module attributes {mosaic_gpu.arch_major = MAJOR : i32, mosaic_gpu.arch_minor = MINOR : i32} {
func.func @launch() {
  %one = "arith.constant"() <{value = 1 : index}> : () -> index
  %threads = "arith.constant"() <{value = 128 : index}> : () -> index
  %smem = "arith.constant"() <{value = 1073741824 : i32}> : () -> i32
  "gpu.launch"(%one, %one, %one, %threads, %one, %one, %smem) <{operandSegmentSizes =
      array<i32: 0, 1, 1, 1, 1, 1, 1, 0, 0, 0, 1, 0>}> ({
  ^bb0(%a0: index, %a1: index, %a2: index, %a3: index, %a4: index, %a5: index,
       %a6: index, %a7: index, %a8: index, %a9: index, %a10: index, %a11: index):
    "gpu.terminator"() : () -> ()
  }) : (index, index, index, index, index, index, i32) -> ()
  "func.return"() : () -> ()
}
}
"""


def in_launch(module: object, arch: tuple[int, int]) -> object:
    """A module whose kernel is ``module``'s function body (annotated ops moved, not copied).

    The launching function takes the same arguments (the GMEM refs of TMA
    copies), and the moved ops use its arguments instead.
    """
    from jax._src.lib.mlir import ir

    kernel = module.body.operations[0]  # type: ignore[attr-defined]
    body = kernel.regions[0].blocks[0]
    params = ", ".join(f"%arg{i}: {arg.type}" for i, arg in enumerate(body.arguments))
    text = _LAUNCH.replace("MAJOR", str(arch[0])).replace("MINOR", str(arch[1]))
    launched = ir.Module.parse(text.replace("@launch()", f"@launch({params})"))
    outer = launched.body.operations[0].regions[0].blocks[0]
    for old, new in zip(body.arguments, outer.arguments, strict=True):
        old.replace_all_uses_with(new)
    launch = next(op for op in outer.operations if op.operation.name == "gpu.launch")
    terminator = list(launch.regions[0].blocks[0].operations)[-1]
    for op in list(body.operations)[:-1]:  # all but func.return
        op.move_before(terminator)
    return launched


def lower_in_launch(module: object, arch: tuple[int, int]) -> None:
    """Runs JAX's dialect lowering on an annotated kernel in a launch context, then
    verifies it (``module`` is consumed: its ops move into a ``gpu.launch``, see
    ``in_launch``); raises what the lowering or the verifier raises. TMA
    descriptors are not built."""
    from jax._src.lib.mlir import ir
    from jax.experimental.mosaic.gpu import dialect_lowering
    from jax.experimental.mosaic.gpu import launch_context as lc

    with module.context, ir.Location.unknown():  # type: ignore[attr-defined]
        launched = in_launch(module, arch)
        outer = launched.body.operations[0].regions[0].blocks[0]  # type: ignore[attr-defined]
        launch = next(op for op in outer.operations if op.operation.name == "gpu.launch")
        context = lc.LaunchContext(
            launched,  # type: ignore[arg-type]
            lc.Scratch(launch),
            (1, 1, 1),
            None,  # type: ignore[arg-type]
        )
        dialect_lowering.lower_mgpu_dialect(launched, context)  # type: ignore[arg-type]
        launched.operation.verify()  # type: ignore[attr-defined]


def lower_own_launch(module: object, arch: tuple[int, int]) -> None:
    """As ``lower_in_launch``, for a module with a ``gpu.launch`` of its own (whose dynamic
    SMEM size the lowering reads, as staging grows it): lowered where it is."""
    from jax._src.lib.mlir import ir
    from jax.experimental.mosaic.gpu import dialect_lowering
    from jax.experimental.mosaic.gpu import launch_context as lc

    with module.context, ir.Location.unknown():  # type: ignore[attr-defined]
        launches: list[object] = []

        def visit(op: object) -> object:
            if op.name == "gpu.launch":  # type: ignore[attr-defined]
                launches.append(op)
            return ir.WalkResult.ADVANCE

        module.operation.walk(visit)  # type: ignore[attr-defined]
        context = lc.LaunchContext(
            module,  # type: ignore[arg-type]
            lc.Scratch(launches[0]),  # type: ignore[arg-type]
            (1, 1, 1),
            None,  # type: ignore[arg-type]
        )
        dialect_lowering.lower_mgpu_dialect(module, context)  # type: ignore[arg-type]
        module.operation.verify()  # type: ignore[attr-defined]


def try_jax_lowering(
    module: object,
    arch: tuple[int, int],
    lower: Callable[[object, tuple[int, int]], None] | None = None,
) -> str | None:
    """Runs JAX's dialect lowering on an annotated module; None if it lowers, else why not.

    The module's ops are moved into a ``gpu.launch`` (so ``module`` is
    consumed), with a launch context as Mosaic GPU builds one (TMA copies
    from its GMEM arguments, asynchronous SMEM stores); TMA descriptors are
    not built. Where the lowering still needs more than that (a TMEM
    allocation's barrier, ...), the module counts as lowered. ``lower``: how to lower
    it instead (``lower_own_launch`` for a module with a launch of its own).
    """
    try:
        (lower or lower_in_launch)(module, arch)
    except AssertionError:
        return None  # a launch context was needed
    except IndexError as error:
        if _raised_in(error, "_find_kernel_argument_for_gmem_ref"):
            return None  # a TMA copy of a GMEM ref that is no kernel argument (no descriptor)
        return f"IndexError: {_one_line(error)}"
    except AttributeError as error:
        if "'NoneType' object" in str(error):
            return None  # the same: a method of the missing launch context (TMA copies)
        return f"AttributeError: {_one_line(error)}"
    except ValueError as error:
        if "contained a None item" in str(error):
            return None  # the same: an operand the missing launch context provides
        return f"ValueError: {_one_line(error)}"
    except NotImplementedError as error:
        if "Unsupported constant op" in str(error):
            return None  # no dense constant lowers, whatever its layout
        if "Pointwise operations on" in str(error) and "-bit types are unsupported" in str(error):
            return None  # sub-byte arithmetic does not lower, whatever its layout
        return f"NotImplementedError: {_one_line(error)}"
    except Exception as error:  # noqa: BLE001 -- the lowering's refusal is the finding
        return f"{type(error).__name__}: {_one_line(error)}"
    return None


def _raised_in(error: BaseException, function: str) -> bool:
    import traceback

    return any(frame.name == function for frame in traceback.extract_tb(error.__traceback__))


def save_regression(text: str, arch: tuple[int, int], verdict: Verdict) -> Path:
    """Writes a failing module under ``regressions/``, named by its content; returns the path."""
    REGRESSIONS.mkdir(parents=True, exist_ok=True)
    digest = hashlib.sha256(text.encode()).hexdigest()[:12]
    path = REGRESSIONS / f"{verdict.kind}-{digest}.mlir"
    header = (
        f"// fuzz regression: {verdict.kind}\n// arch: {arch[0]}.{arch[1]}\n"
        f"// detail: {verdict.detail[:300]}\n"
    )
    path.write_text(header + text)
    return path


def read_regression(path: Path) -> tuple[str, tuple[int, int]]:
    """The module text and arch of a saved regression."""
    text = path.read_text()
    match = re.search(r"^// arch: (\d+)\.(\d+)$", text, re.MULTILINE)
    arch = (int(match[1]), int(match[2])) if match else (9, 0)
    return text, arch
