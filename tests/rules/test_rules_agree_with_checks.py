"""Every op's rule (``smalto/rules``) and its check (``smalto/check``) take the same layouts.

The two state each op's requirements independently, on purpose. For every op
name with a rule, ``rule_kernels`` derives minimal kernels pinning the op to
each layout the rule may take (and a few it may not); ``rule_agreement``
asks the solver and the checker about each. A rule loosened without its check
(the solver takes a layout the checker flags in smalto's own answer), or
tightened without it (the solver refuses a layout the checker accepts at the
op), fails here, as does a new rule without a generator.
"""

from __future__ import annotations

import pytest
from rule_agreement import Cases, Judged, judge_all, problems
from rule_kernels import GENERATORS

from smalto.rules import RULES

# Ops that share one rule function share one run of their candidates per test,
# but each op name is its own test (a new name shows up as its own failure).
RULE_OPS = sorted(RULES)


def test_every_op_with_a_rule_has_a_generator() -> None:
    missing = sorted(set(RULES) - set(GENERATORS))
    assert not missing, (
        f"ops with a rule and no kernels in tests/helpers/rule_kernels_*.py: {missing}"
    )


def test_no_generator_is_left_without_its_rule() -> None:
    assert sorted(set(GENERATORS) - set(RULES)) == []


def _judged(name: str) -> tuple[Cases, list[Judged]]:
    generate = GENERATORS.get(name)
    if generate is None:
        pytest.fail(f"`{name}` has a rule and no kernels in tests/helpers/rule_kernels_*.py")
    cases = generate(name)
    assert cases.op == name
    return cases, judge_all(cases)


@pytest.mark.parametrize("name", RULE_OPS)
def test_the_rule_and_the_check_take_the_same_layouts(name: str) -> None:
    cases, judged = _judged(name)
    found = problems(cases, judged)
    assert not found, f"`{name}`:\n" + "\n".join(found)
