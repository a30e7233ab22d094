"""When switching passes clears JAX's caches: entering ``smalto.jax.enabled()`` always;
leaving it (or changing its options) only where smalto's pass answered inside it.

JAX caches what a lowering returns, never an error: a block whose kernels smalto
refused left nothing of smalto's in JAX's caches, and the refusal's caller does not
wait on the whole cache being thrown away as the error leaves the block (issue #33:
no refusal raises later than JAX's own route).
"""

from __future__ import annotations

from pathlib import Path

import jax
import pytest
import reference

import smalto
import smalto.jax
from smalto.jax import hooks

UNSAT = Path(__file__).resolve().parents[1] / "unsat"

# A module smalto's pass answers (a vector constant, laid out as a splat).
_INFERS = """
module {
  func.func @kernel() {
    %c = "arith.constant"() <{value = dense<1.0> : vector<128xf32>}> : () -> vector<128xf32>
    return
  }
}
"""


@pytest.fixture
def clearings(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """Each call of ``jax.clear_caches`` (not run: nothing here lowers through JAX)."""
    calls: list[int] = []
    monkeypatch.setattr(jax, "clear_caches", lambda: calls.append(1))
    return calls


def _refused() -> None:
    module = reference.parse(UNSAT / "cast_does_not_fit.mlir", reference.make_context())
    with pytest.raises(smalto.InferenceError):
        hooks.dispatch(module, arch=(9, 0))


def _answered() -> None:
    module = reference.parse(_INFERS, reference.make_context())
    hooks.dispatch(module, arch=(9, 0))
    assert "out_layouts" in str(module)


def test_leaving_after_refusals_only_keeps_the_caches(clearings: list[int]) -> None:
    with smalto.jax.enabled():
        assert len(clearings) == 1  # entering: whatever JAX's pass lowered goes
        _refused()
        _refused()
    assert len(clearings) == 1
    assert not smalto.jax.is_installed()


def test_leaving_after_an_answer_clears_the_caches(clearings: list[int]) -> None:
    with smalto.jax.enabled():
        _refused()
        _answered()
    assert len(clearings) == 2
    # Cleared then: the next block that only refuses leaves them again.
    with smalto.jax.enabled():
        _refused()
    assert len(clearings) == 3


def test_changing_options_clears_only_after_an_answer(clearings: list[int]) -> None:
    with smalto.jax.enabled():
        with smalto.jax.enabled(rewrite=False):  # nothing of smalto's cached yet
            _answered()
        # Leaving the inner block puts the options back: its answer is cleared away.
        assert len(clearings) == 2
        with smalto.jax.enabled(rewrite=False):
            _refused()
        assert len(clearings) == 2
    assert len(clearings) == 2
