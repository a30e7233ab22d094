"""Kernels JAX's pass gives up on (its search runs out of fuel after 9 s to 5 min).

smalto decides each quickly: where an assignment exists it finds one, JAX's
own constraint system accepts it, and so do smalto's checker and JAX's own
dialect lowering; where none exists it says so. (How quickly: `make bench`,
`bench/RESULTS.md`.)
"""

from __future__ import annotations

import pytest
import reference
from corpus_lowering import lower_with_jax
from jax_check import check_with_jax

import smalto
from smalto.check import check

ROOT = reference.corpus_root() or reference.BUNDLED_ROOT
SATISFIABLE = [
    "custom_layernorm_rows_nohint",
    "custom_reductions_rowcol_nohint",
    "custom_softmax_rows_nohint",
]
# jax 0.10.2 also ran out of fuel on custom_causal_mask_iota_keepdims_hint; in the
# jax 0.12.0.1 corpus it is an ordinary kernel (kernels/), which JAX infers.


def _text(name: str) -> str:
    return (ROOT / "fuel_exhausted" / f"{name}.mlir").read_text()


@pytest.mark.parametrize("name", SATISFIABLE)
def test_solution_is_accepted_by_jax_constraints(name: str) -> None:
    assert check_with_jax(_text(name), (9, 0)) == []


@pytest.mark.parametrize("name", SATISFIABLE)
def test_solution_passes_the_checker_and_jax_lowering(name: str) -> None:
    module = reference.parse(_text(name), reference.make_context())
    smalto.infer_layout(module, arch=(9, 0))
    assert check(module, (9, 0)) == []
    lower_with_jax(module)  # raises if JAX's lowering rejects a layout


def test_check_catches_a_wrong_answer(monkeypatch: pytest.MonkeyPatch) -> None:
    """The check is not vacuous: an answer with a broken transform is rejected."""
    from smalto.solve import propagation

    original = propagation.Propagation.solution

    def corrupt(self: propagation.Propagation) -> list:
        from smalto.hw.values import Smem

        values = original(self)
        return [Smem((8, 8), None) if isinstance(v, Smem) and v.tiling else v for v in values]

    monkeypatch.setattr(propagation.Propagation, "solution", corrupt)
    name = "hopper_matmul_t64x64x64_s2_wgM_noepi"
    text = (ROOT / "kernels" / f"{name}.mlir").read_text()
    assert check_with_jax(text, (9, 0)) != []
