"""The agreement test catches a rule loosened or tightened without its check, and a check
loosened without its rule.

Each mutant of ``tests/helpers/rule_mutants.py`` changes one rule of
``smalto/rules/`` or one check of ``smalto/check/`` (in this process, for the test's
duration); the agreement
kit (``rule_agreement``), judging the mutant's ops with the generators of
``tests/helpers/rule_kernels_*.py``, must then find a problem, as
``tests/rules/test_rules_agree_with_checks.py`` would.
"""

from __future__ import annotations

import pytest
from rule_agreement import judge_all, problems
from rule_kernels import GENERATORS
from rule_mutants import CHECK_MUTANTS, RULE_MUTANTS, RuleMutant, applied


def _problems(names: tuple[str, ...]) -> list[str]:
    found = []
    for name in names:
        cases = GENERATORS[name](name)
        found += [f"`{name}`: {p}" for p in problems(cases, judge_all(cases))]
    return found


@pytest.mark.parametrize("mutant", [*RULE_MUTANTS, *CHECK_MUTANTS], ids=lambda m: m.name)
def test_the_agreement_test_catches_the_mutant(mutant: RuleMutant) -> None:
    with applied(mutant):
        caught = _problems(mutant.ops)
    assert caught, f"{mutant.name} ({mutant.why}) passes the agreement test of {mutant.ops}"
    # Put back: the real rules pass again.
    assert _problems(mutant.ops) == []


def _mutant(name: str) -> RuleMutant:
    (found,) = [m for m in [*RULE_MUTANTS, *CHECK_MUTANTS] if m.name == name]
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


def test_check_mutants_change_checks_only() -> None:
    assert all(m.path.startswith("smalto/check/") for m in CHECK_MUTANTS)
    assert all(m.path.startswith("smalto/rules/") for m in RULE_MUTANTS)


def test_a_check_loosened_at_the_op_is_caught_only_by_the_case_asked_there() -> None:
    """A splat source of a reduction: its producer converts it for free, so only the
    candidate that asks the splat of the op itself (``Candidate.at_op``) meets the
    loosened check."""
    with applied(_mutant("check_reduction_takes_a_splat_source")):
        found = _problems(("vector.multi_reduction",))
    assert found and all("splat (at the op)" in p for p in found), found
    assert all("the checker (smalto/check) accepts it at the op" in p for p in found), found
