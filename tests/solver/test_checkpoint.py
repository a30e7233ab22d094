"""The checkpoint of the search in JAX's order (issue #33, the speed of a refusal).

Where the search in JAX's order backtracks far past one attempt per open
variable, ``search.decide`` consults the early widening then: where no layout
lowers at all, the search in JAX's order is not gone on with, and the widened
search is the answer, as it would have been once that search gave up; where
layouts exist, the search in JAX's order is run again without the checkpoint.
Nothing a caller reads may differ from deciding without the checkpoint: the
decision, its state's conflict and explanation, the lowering requirements
JAX's answer breaks, the solution.
"""

from __future__ import annotations

from pathlib import Path

import pytest
import reference

from smalto.basics.mlir import in_context
from smalto.constraints.language import System
from smalto.program.reader import read_program
from smalto.program.view import Program
from smalto.rules import consumers, derive_system
from smalto.solve import jax_search, search
from smalto.solve.decision import Decision, NoLayouts, Solved
from smalto.solve.options import SolveOptions
from smalto.solve.propagation import Propagation
from smalto.solve.search import InJaxOrder, decide

UNSAT = Path(__file__).resolve().parents[1] / "unsat"
# The kernels whose search in JAX's order backtracks far before it gives up (hundreds
# of attempts of work from a handful of open variables).
BACKTRACKING = (
    "words_iota_mask_in_row_layout",
    "words_tcgen05_bias_loaded_as_rows",
    "words_tcgen05_softmax_max_over_columns",
    "fixes_tcgen05_row_max_and_scaled_f32",
)


def _kernels() -> list[str]:
    return sorted(p.stem for p in UNSAT.glob("*.mlir") if "tcgen05_keepdims" not in p.stem)


def _derived(name: str) -> tuple[object, Program, System, tuple[int, int]] | None:
    text = (UNSAT / f"{name}.mlir").read_text()
    arch = reference.text_arch(text)
    module = reference.parse(text, reference.shared_context())
    with in_context(module):
        program = read_program(module, consumers())
        try:
            system = derive_system(program, arch)
        except Exception:  # noqa: BLE001 -- a rule refusing it: nothing for the search
            return None
    return module, program, system, arch


def _seen(decision: Decision) -> tuple[object, ...]:
    """What a caller reads of a decision."""
    if isinstance(decision, Solved):
        state = decision.state
        return (Solved, decision.in_jax_order, state.widened, state.solution())
    assert isinstance(decision, NoLayouts)
    proof = decision.proof
    return (
        NoLayouts,
        proof.widened,
        proof.conflict,
        proof.empty_slot,
        proof.root_explanation(),
        decision.jax_answer_breaks,
    )


@pytest.mark.parametrize("name", _kernels())
def test_the_checkpoint_decides_as_the_search_without_it(
    name: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Each unsatisfiable kernel of ``tests/unsat``: the same solver seen, with the
    checkpoint at its default, at once past the first attempts, and never."""
    derived = _derived(name)
    if derived is None:
        pytest.skip("a rule refuses it")
    module, program, system, arch = derived
    seen = []
    with in_context(module):  # type: ignore[arg-type]
        for slack in (search.CHECKPOINT_SLACK, 0, 10**9):
            monkeypatch.setattr(search, "CHECKPOINT_SLACK", slack)
            seen.append(_seen(decide(system, program, SolveOptions(fuel=100_000, arch=arch))))
    assert seen[0] == seen[2] and seen[1] == seen[2]


@pytest.mark.parametrize("name", BACKTRACKING)
def test_a_kernel_with_no_layout_stops_the_search_in_jax_order_early(
    name: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The search in JAX's order is stopped at its checkpoint (far sooner than it gives up
    by itself), and what it would have found is found when read."""
    derived = _derived(name)
    assert derived is not None
    module, program, system, arch = derived
    work: list[int] = []
    real = jax_search.JaxOrderSearch.run

    def run(self: jax_search.JaxOrderSearch, budget: int, *args: object) -> bool:
        try:
            return real(self, budget, *args)  # type: ignore[arg-type]
        finally:
            work.append(self.state.fuel.work)

    monkeypatch.setattr(jax_search.JaxOrderSearch, "run", run)
    slack = search.CHECKPOINT_SLACK
    with in_context(module):  # type: ignore[arg-type]
        decided = decide(system, program, SolveOptions(fuel=100_000, arch=arch))
        stopped = list(work)
        whole = InJaxOrder(program)  # no early widening: no checkpoint
        state = Propagation(system, program, arch, 100_000)
        assert whole.run(state) is None
    assert isinstance(decided, NoLayouts) and decided.proof.widened
    # Stopped once, at the checkpoint, and not run again.
    assert stopped == [state.unassigned + slack] and stopped[0] < state.fuel.work
    assert decided.jax_answer_breaks == whole.answer_breaks


def test_a_kernel_with_layouts_goes_on_in_jax_order_past_the_checkpoint(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A kernel JAX's pass runs out of fuel on backtracks past the checkpoint, and has
    layouts: the search in JAX's order is run again without the checkpoint, and the
    decision is the one made without any checkpoint, fuel and all."""
    path = reference.BUNDLED_ROOT / "fuel_exhausted"
    text = sorted(path.glob("*.mlir"))[0].read_text()
    module = reference.parse(text, reference.shared_context())
    runs: list[int | None] = []
    real = jax_search.JaxOrderSearch.run

    def run(self: jax_search.JaxOrderSearch, budget: int, checkpoint: int | None = None) -> bool:
        runs.append(checkpoint)
        return real(self, budget, checkpoint)

    monkeypatch.setattr(jax_search.JaxOrderSearch, "run", run)
    seen = []
    with in_context(module):
        program = read_program(module, consumers())
        system = derive_system(program, (9, 0))
        for slack in (search.CHECKPOINT_SLACK, 10**9):
            monkeypatch.setattr(search, "CHECKPOINT_SLACK", slack)
            decided = decide(system, program, SolveOptions(fuel=100_000, arch=(9, 0)))
            assert isinstance(decided, Solved)
            seen.append((_seen(decided), decided.state.fuel.work))
    # With the checkpoint: stopped there, then run again without it; never at all after.
    assert runs[0] is not None and runs[1] is None
    assert seen[0] == seen[1]


def test_no_checkpoint_where_the_fuel_could_run_out_first() -> None:
    """With no more fuel than the search in JAX's order's budget, that search may run out
    of it (an error of its own): it is never stopped early then."""
    derived = _derived("words_iota_mask_in_row_layout")
    assert derived is not None
    _, program, system, arch = derived
    early = search.EarlyWidening(system, program, SolveOptions(fuel=500, arch=arch))
    assert early.checkpoint(1_000, 6) is None
    assert early.checkpoint(400, 6) is not None


def test_breaks_found_later_are_found_once() -> None:
    """``jax_answer_breaks`` given as the function that finds them: found on the first
    read only."""
    derived = _derived("words_iota_mask_in_row_layout")
    assert derived is not None
    module, program, system, arch = derived
    calls: list[int] = []
    with in_context(module):  # type: ignore[arg-type]
        state = Propagation(system, program, arch, 100)

    def find() -> list[object]:
        calls.append(1)
        return []

    decided = NoLayouts(state, find)  # type: ignore[arg-type]
    assert calls == []
    assert decided.jax_answer_breaks == [] and decided.jax_answer_breaks == []
    assert calls == [1]
