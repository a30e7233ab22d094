"""The evaluator-based check catches every deliberately wrong rewrite
(``tests/helpers/mutants.py``) and passes the real one on the same module."""

from __future__ import annotations

import pytest
from equivalence import assert_equivalent
from mlir_snippets import parse
from mutants import MUTANTS, Mutant, rewritten


@pytest.mark.parametrize("mutant", MUTANTS, ids=lambda m: m.name)
def test_the_real_rewrite_passes(mutant: Mutant) -> None:
    before = parse(mutant.text)
    after = rewritten(parse(mutant.text, before.context))
    assert after.operation.verify()
    assert_equivalent(before, after)


@pytest.mark.parametrize("mutant", MUTANTS, ids=lambda m: m.name)
def test_the_mutant_is_caught(mutant: Mutant) -> None:
    before = parse(mutant.text)
    right = rewritten(parse(mutant.text, before.context))
    wrong = mutant.rewrite_wrongly(parse(mutant.text, before.context))
    assert wrong.operation.verify()
    assert str(wrong) != str(right)  # the mutant really changed the rewrite
    with pytest.raises(AssertionError, match="differs"):
        assert_equivalent(before, wrong)
