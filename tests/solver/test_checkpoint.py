"""The checkpoint of the search in JAX's order (issue #33, the speed of a refusal).

Where the search in JAX's order backtracks far past one attempt per open
variable, ``search.decide`` runs the widened search then: where no layout
lowers at all, the search in JAX's order is stopped, and the widened search
is the answer, as it would have been once that search gave up. Nothing a
caller reads may differ from deciding without the checkpoint: whether the
system is solved, the solver's conflict and explanation, the lowering
requirements JAX's answer breaks.
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
from smalto.solve import jax_order, search
from smalto.solve.options import SolveOptions
from smalto.solve.search import Solver, decide

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


def _seen(solver: Solver) -> tuple[object, ...]:
    """What a caller reads of a decided solver."""
    return (
        solver.solved,
        solver.widened,
        solver.state.conflict,
        solver.state.empty_slot,
        solver.state.root_explanation(),
        solver.jax_answer_breaks,
        solver.state.solution() if solver.solved else None,
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
    real = jax_order.JaxOrderSearch.run

    def run(self: jax_order.JaxOrderSearch, budget: int, *args: object) -> bool | None:
        try:
            return real(self, budget, *args)  # type: ignore[arg-type]
        finally:
            work.append(self.state.fuel.work)

    monkeypatch.setattr(jax_order.JaxOrderSearch, "run", run)
    slack = search.CHECKPOINT_SLACK
    with in_context(module):  # type: ignore[arg-type]
        decided = decide(system, program, SolveOptions(fuel=100_000, arch=arch))
        stopped = work[0]
        monkeypatch.setattr(search, "CHECKPOINT_SLACK", 10**9)
        whole = Solver(system, program, SolveOptions(fuel=100_000, arch=arch))
        whole.solve_in_jax_order()
    assert not decided.solved and decided.widened
    assert stopped == whole.state.unassigned + slack < whole.state.fuel.work
    assert decided.jax_answer_breaks == whole.jax_answer_breaks


def test_no_checkpoint_where_the_fuel_could_run_out_first() -> None:
    """With no more fuel than the search in JAX's order's budget, that search may run out
    of it (an error of its own): it is never stopped early then."""
    derived = _derived("words_iota_mask_in_row_layout")
    assert derived is not None
    _, program, system, arch = derived
    early = search._EarlyWidened(system, program, SolveOptions(fuel=500, arch=arch))
    assert early.checkpoint(1_000, 6) is None
    assert early.checkpoint(400, 6) is not None


def test_breaks_found_later_are_found_once() -> None:
    """``jax_answer_breaks`` set to be found when read: found on the first read only, and
    a value set afterwards replaces it."""
    derived = _derived("words_iota_mask_in_row_layout")
    assert derived is not None
    module, program, system, arch = derived
    calls: list[int] = []
    with in_context(module):  # type: ignore[arg-type]
        solver = Solver(system, program, SolveOptions(fuel=100, arch=arch))

    def find() -> list[object]:
        calls.append(1)
        return []

    solver.find_jax_answer_breaks_later(find)  # type: ignore[arg-type]
    assert solver.jax_answer_breaks == [] and solver.jax_answer_breaks == []
    assert calls == [1]
    solver.find_jax_answer_breaks_later(find)  # type: ignore[arg-type]
    solver.jax_answer_breaks = []
    assert solver.jax_answer_breaks == [] and calls == [1]
