"""The oracles of the rescue families (``fuzz.rescues``): one module, one verdict.

As written (``rewrite=False``, no rescue): where smalto answers, the fuzz property of
``fuzz.property`` holds (the checker, and JAX's pass: identical attributes where both
answer); where smalto refuses, JAX's pass has no answer its lowering takes (rule 1).
With the family's rescue: smalto refuses and leaves the module as it came, or its
answer passes the checker, the reference evaluator finds the rescued module leaving
every buffer of the module as written the same, bit for bit, over its trials, and
JAX's dialect lowering (in a launch context) takes it.
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
    """(module, outcome: ok / unsat / crash detail, the warnings' classes)."""
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


def _lowers(module: object, arch: tuple[int, int]) -> str | None:
    """None if JAX's lowering takes the annotated module (in its own launch, or in one
    made for it), else why not."""
    if "gpu.launch" in str(module):
        return prop.try_jax_lowering(module, arch, lower=prop.lower_own_launch)
    return prop.try_jax_lowering(module, arch)


def judge(case: RescueModule, *, with_jax: bool = True) -> RescueVerdict:
    text, arch = case.text, case.arch
    written, outcome, _ = _infer(text, arch, rewrite=False)
    if outcome not in ("ok", "unsat"):
        return RescueVerdict("as-written", f"smalto-crash: {outcome}")
    if outcome == "ok":
        verdict = prop.judge(text, arch, with_jax=with_jax)
        if verdict.failed and verdict.known_bug is None:
            return RescueVerdict("as-written", f"{verdict.kind}: {verdict.detail}")
        return RescueVerdict("infers-as-written")
    if with_jax:
        jax_outcome, _, jax_module = prop.run_jax_module(text, arch)
        if jax_outcome == "ok" and not prop.check(jax_module, arch):  # type: ignore[arg-type]
            why = _lowers(jax_module, arch)
            if why is None:
                return RescueVerdict("smalto-unsat-jax-lowers", "JAX's answer passes and lowers")
    options = {"rewrite": case.rescue == "rewrite", case.rescue: True}
    rescued, outcome, said = _infer(text, arch, **options)
    if outcome == "unsat":
        if str(rescued) != str(reference.parse(text, reference.shared_context())):
            return RescueVerdict("rescue-changed-module")
        return RescueVerdict("not-rescued")
    if outcome != "ok":
        return RescueVerdict("rescue-crash", outcome)
    violations = prop.check(rescued, arch)  # type: ignore[arg-type]
    if violations:
        return RescueVerdict("rescue-checker-rejects", str(violations[0]))
    before = reference.parse(text, reference.shared_context())
    try:
        if case.rescue == "stage_through_smem" and smalto.StagedThroughSmemWarning in said:
            assert_staging_exact(before, rescued)  # type: ignore[arg-type]
        else:
            assert_equivalent(before, rescued, max_trials=30)  # type: ignore[arg-type]
    except AssertionError as error:
        return RescueVerdict("rescue-changes-results", " ".join(str(error).split())[:300])
    why = _lowers(rescued, arch)
    if why is not None:
        return RescueVerdict("rescue-not-lowerable", why)
    return RescueVerdict("rescued" if WARNINGS[case.rescue] in said else "rescued-otherwise")
