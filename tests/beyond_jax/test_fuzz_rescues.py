"""The fuzz families that reach the rescues (``fuzz/rescues``), judged by their oracles
(``fuzz/rescue_property``: the checker, JAX's pass and dialect lowering, the reference
evaluator on the module as written against the rescued one).

Each family must reach its rescue: most of its modules have no layouts as written and
are rescued by it (the general fuzzer barely reaches staging). A module costs about a
second (the evaluator's trials, JAX's pass and lowering), so CI runs a small fixed
sample of each family (``SAMPLE``); ``make fuzz`` runs ``python -m fuzz.run_rescues``,
1 000 fresh modules a family.
"""

from __future__ import annotations

import os
from collections import Counter

import pytest
from fuzz.rescue_property import judge
from fuzz.rescues import FAMILIES, RescueModule
from hypothesis import HealthCheck, given, settings

SAMPLE = int(os.environ.get("SMALTO_FUZZ_EXAMPLES", "6"))


@pytest.mark.parametrize("rescue", sorted(FAMILIES))
def test_family_reaches_its_rescue_and_every_rescue_holds(rescue: str) -> None:
    verdicts: Counter[str] = Counter()

    @settings(
        max_examples=SAMPLE,
        deadline=None,
        derandomize=True,
        database=None,
        suppress_health_check=list(HealthCheck),
    )
    @given(FAMILIES[rescue]())
    def judged(case: RescueModule) -> None:
        verdict = judge(case)
        assert not verdict.failed, f"{verdict.kind}: {verdict.detail}"
        verdicts[verdict.kind] += 1

    judged()
    assert sum(verdicts.values()) == SAMPLE
    # Reached: at least half the family's modules are rescued by this very rescue.
    assert verdicts["rescued"] * 2 >= SAMPLE, verdicts
