"""The oracles of the rescue families (``fuzz.rescues``): one module, one verdict.

smalto runs once with the family's rescue turned on. Where it answers without a rescue's
warning, the module inferred as written, and the fuzz property of ``fuzz.property``
holds on it (the checker, and JAX's pass: identical attributes where both answer).
Where it rescued the module or refused, the module as written has no layouts (a rescue
acts only there), so JAX's pass must have no answer its lowering takes either (rule 1:
JAX's answer is run through the checker, and through JAX's dialect lowering where the
checker accepts it). Refused: the module is left as it came (its dump name aside, which
JAX's pass sets too). Rescued: the answer passes the checker, the reference evaluator
finds the rescued module leaving every buffer of the module as written the same, bit
for bit, over its trials (``TRIALS`` at least: one plain, one with a few IEEE special
values, one with many; every loop and branch covered), and JAX's dialect lowering (in a
launch context) takes it.

What the verdict does not read is not made: a rescued module's refusal as written is
never put into words (the rescued inference decides it), and JAX's pass runs once.
"""

from __future__ import annotations

import warnings
from dataclasses import dataclass

import reference
from equivalence import assert_equivalent
from staging_kit import assert_staging_exact

import smalto
from fuzz import property as prop
from fuzz.rescues import RescueModule

# The warning each rescue gives per op it changes.
WARNINGS = {
    "stage_through_smem": smalto.StagedThroughSmemWarning,
    "allow_unoptimized": smalto.UnoptimizedTransferWarning,
    "rewrite": smalto.UnitDimRewriteWarning,
}
# The evaluator's trials at least: the inputs cycle through three kinds by trial
# (``evaluator_inputs``: plain, a few special values, many), and results are compared
# bit for bit, so three see every kind once.
TRIALS = 3
FAILURES = frozenset(
    {
        "as-written",  # the fuzz property failed on the module as written
        "smalto-unsat-jax-lowers",
        "rescue-crash",
        "rescue-changed-module",  # refused, but not left as it came
        "rescue-checker-rejects",
        "rescue-changes-results",
        "rescue-not-lowerable",
    }
)


@dataclass(frozen=True)
class RescueVerdict:
    kind: str  # infers-as-written, rescued, rescued-otherwise, not-rescued, or a failure
    detail: str = ""

    @property
    def failed(self) -> bool:
        return self.kind in FAILURES


def _infer(text: str, arch: tuple[int, int], **options: bool) -> tuple[object, str, list[type]]:
    """(module, outcome: ok / unsat / crash detail, the warnings' classes). A refusal's
    message is not read: the verdict needs only that it refused."""
    module = reference.parse(text, reference.shared_context())
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        try:
            smalto.infer_layout(module, arch=arch, fuel=prop.SMALTO_FUEL, **options)
        except (smalto.InferenceError, NotImplementedError):
            return module, "unsat", []
        except Exception as error:  # noqa: BLE001 -- the finding
            return module, f"{type(error).__name__}: {error}", []
    return module, "ok", [type(w.message) for w in caught]


def _lowers(module: object, arch: tuple[int, int], text: str) -> str | None:
    """None if JAX's lowering takes the annotated module (written as ``text``: in its own
    launch, or in one made for it), else why not."""
    if "gpu.launch" in text:
        return prop.try_jax_lowering(module, arch, lower=prop.lower_own_launch)
    return prop.try_jax_lowering(module, arch)


def _jax_lowers_as_written(text: str, arch: tuple[int, int]) -> bool:
    """Whether JAX's pass lays out the module as written with layouts the checker accepts
    and JAX's lowering takes."""
    jax_outcome, _, jax_module = prop.run_jax_module(text, arch)
    if jax_outcome != "ok" or prop.check(jax_module, arch):  # type: ignore[arg-type]
        return False
    return _lowers(jax_module, arch, text) is None


def _left_as_it_came(module: object, text: str) -> bool:
    """Whether a refused module is the module as written (the dump name aside: JAX's pass
    and smalto set it once the rules have run, even where the search then fails)."""
    reference.pop_dump_name(module)
    return str(module) == str(reference.parse(text, reference.shared_context()))


def judge(case: RescueModule, *, with_jax: bool = True) -> RescueVerdict:
    text, arch = case.text, case.arch
    options = {"rewrite": case.rescue == "rewrite", case.rescue: True}
    rescued, outcome, said = _infer(text, arch, **options)
    if outcome not in ("ok", "unsat"):
        return RescueVerdict("rescue-crash", outcome)
    if outcome == "ok" and not any(warning in said for warning in WARNINGS.values()):
        # No rescue acted: the module inferred as written.
        with warnings.catch_warnings():
            # (What smalto says of an answer, e.g. that it is slow, is no finding here.)
            warnings.simplefilter("ignore")
            verdict = prop.judge(text, arch, with_jax=with_jax)
        if verdict.failed and verdict.known_bug is None:
            return RescueVerdict("as-written", f"{verdict.kind}: {verdict.detail}")
        return RescueVerdict("infers-as-written")
    if with_jax and _jax_lowers_as_written(text, arch):
        return RescueVerdict("smalto-unsat-jax-lowers", "JAX's answer passes and lowers")
    if outcome == "unsat":
        if not _left_as_it_came(rescued, text):
            return RescueVerdict("rescue-changed-module")
        return RescueVerdict("not-rescued")
    violations = prop.check(rescued, arch)  # type: ignore[arg-type]
    if violations:
        return RescueVerdict("rescue-checker-rejects", str(violations[0]))
    before = reference.parse(text, reference.shared_context())
    try:
        if case.rescue == "stage_through_smem" and smalto.StagedThroughSmemWarning in said:
            assert_staging_exact(before, rescued, min_trials=TRIALS)  # type: ignore[arg-type]
        else:
            assert_equivalent(before, rescued, min_trials=TRIALS, max_trials=30)  # type: ignore[arg-type]
    except AssertionError as error:
        return RescueVerdict("rescue-changes-results", " ".join(str(error).split())[:300])
    why = _lowers(rescued, arch, text)
    if why is not None:
        return RescueVerdict("rescue-not-lowerable", why)
    return RescueVerdict("rescued" if WARNINGS[case.rescue] in said else "rescued-otherwise")
