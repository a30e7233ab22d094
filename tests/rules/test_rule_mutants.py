"""The agreement test catches a rule loosened or tightened without its check.

Each mutant of ``tests/helpers/rule_mutants.py`` changes one rule of
``smalto/rules/`` (in this process, for the test's duration); the agreement
kit (``rule_agreement``), judging the mutant's ops with the generators of
``tests/helpers/rule_kernels_*.py``, must then find a problem, as
``tests/rules/test_rules_agree_with_checks.py`` would.
"""

from __future__ import annotations

import pytest
from rule_agreement import judge_all, problems
from rule_kernels import GENERATORS
from rule_mutants import RULE_MUTANTS, RuleMutant, applied


def _problems(names: tuple[str, ...]) -> list[str]:
    found = []
    for name in names:
        cases = GENERATORS[name](name)
        found += [f"`{name}`: {p}" for p in problems(cases, judge_all(cases))]
    return found


@pytest.mark.parametrize("mutant", RULE_MUTANTS, ids=lambda m: m.name)
def test_the_agreement_test_catches_the_mutant(mutant: RuleMutant) -> None:
    with applied(mutant):
        caught = _problems(mutant.ops)
    assert caught, f"{mutant.name} ({mutant.why}) passes the agreement test of {mutant.ops}"
    # Put back: the real rules pass again.
    assert _problems(mutant.ops) == []


def _mutant(name: str) -> RuleMutant:
    (found,) = [m for m in RULE_MUTANTS if m.name == name]
    return found


def test_the_hint_names_the_rules_when_relayouts_between_ops_are_no_longer_strict() -> None:
    """The solver then avoids a pinned layout by converting between ops, which the checker
    (like the lowering) accepts: the hint says the rules changed, never that one tightened."""
    with applied(_mutant("non_strict_relayouts_between_ops")):
        found = _problems(("mosaic_gpu.layout_cast",))
    assert any("WGMMA->WGMMA_TRANSPOSED: the solver (smalto/rules) changed" in p for p in found)
    assert any('made as WGMMA at loc("p0"), used as WGMMA_TRANSPOSED' in p for p in found)
    assert not [p for p in found if "tightened" in p]


def test_the_hint_names_a_tightened_rule() -> None:
    with applied(_mutant("reduction_refuses_partial_tilings")):
        found = _problems(("vector.multi_reduction",))
    assert any("2x128x64xf32 <add> over [0], WGMMA" in p for p in found), found
    assert all("tightened" in p and "loosened" not in p for p in found), found
