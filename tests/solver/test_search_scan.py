"""The search in JAX's order: its incremental scan for candidates, and its budget.

Below a decision, the scan asks only the constraints whose candidates may have
changed (``Solver._candidates``). These tests run the search with a check at
every decision: the candidates it offers, in order, must be exactly those of
a full rescan of every open constraint and variable (the order JAX's pass
tries them in), on kernels that decide without backtracking (the scaling
families, corpus kernels) and on kernels that backtrack a thousand times
before the complete search takes over (the fuel-exhausted ones).
"""

from __future__ import annotations

import contextlib
import sys
from collections.abc import Iterator
from pathlib import Path

import corpus_lowering
import pytest
import reference
from fuzz.strategies import FuzzModule, modules
from hypothesis import HealthCheck, given, settings
from jax._src.lib.mlir import ir
from scaling_kernels import FAMILIES

import smalto
from smalto.basics.mlir import module_arch
from smalto.check import check
from smalto.hw.values import Const
from smalto.infer import in_context
from smalto.program.reader import read_program
from smalto.rules import consumers, derive_system
from smalto.solve import candidates as cands
from smalto.solve import jax_order as search  # the search in JAX's order: _Offer, _Scan
from smalto.solve.options import SolveOptions
from smalto.solve.search import Solver

HOPPER = (9, 0)
FUEL_EXHAUSTED = sorted((reference.BUNDLED_ROOT / "fuel_exhausted").glob("*.mlir"))


def full_rescan(
    in_order: search.JaxOrderSearch, first_open: int, first_unset: int
) -> Iterator[tuple[int, Const, int | None]]:
    """The candidates in JAX's order, every open constraint and variable asked afresh."""
    state = in_order.state
    tried: set[tuple[int, Const]] = set()
    deferred: list[tuple[int, Const, int]] = []
    root, variables = state.root, state.system.variables
    for ci in state.candidate_order[first_open:]:
        if not state.open[ci]:
            continue
        for var, value in cands.from_constraint(
            state.constraints[ci], state.lookup, variables, state.divides_of, state.arch
        ):
            if not cands.is_preferred(value):
                deferred.append((var, value, ci))
            elif (root[var], value) not in tried:
                tried.add((root[var], value))
                yield var, value, ci
    for var, value, ci in deferred:
        if (root[var], value) not in tried:
            tried.add((root[var], value))
            yield var, value, ci
    for v in variables[first_unset:]:
        if state.value[root[v.id]] is None:
            value = cands.default_value(v, in_order.tmem_defaults[v.id])
            if value is not None and (root[v.id], value) not in tried:
                tried.add((root[v.id], value))
                yield v.id, value, None


class CheckedSearch(search.JaxOrderSearch):
    """A search in JAX's order that, at each decision, compares its candidates with a full rescan,
    and makes each splat it counts as failing at once (``_splat_for_non_splat``,
    ``_offer``) to see it fail."""

    decisions = 0
    splats_counted = 0

    def _splat_for_non_splat(self, var: int, value: Const) -> bool:
        counted = super()._splat_for_non_splat(var, value)
        if counted:
            self.splats_counted += 1
            assert self._fails_at_once_made(var, value), (var, value)
        return counted

    def _offer(self, ci: int) -> search._Offer:
        offer = super()._offer(ci)
        if offer[2] is not None:
            # Doomed: counted at each decision, never made.
            for var, value in offer[1]:
                assert self._fails_at_once_made(var, value), (var, value)
        return offer

    def _fails_at_once_made(self, var: int, value: Const) -> bool:
        """Makes the assignment and propagates it, then undoes all of it: whether it failed."""
        state = self.state
        mark, conflict, reason = len(state.trail), state.conflict, dict(state.reason)
        queue: list[int] = []
        made = state.assign(var, value, queue) and state.propagate(queue)
        state.undo(mark)
        state.conflict, state.reason = conflict, reason
        return not made

    def _candidates(
        self, first_open: int, first_unset: int, scan: search._Scan
    ) -> Iterator[tuple[int, Const, int | None]]:
        # A copy of the scan, and the fuel put back: listing every candidate
        # must not move the real scan nor spend.
        fuel = self.state.fuel
        probe = scan.probe()
        spent, limit, work_limit = fuel.spent, fuel.limit, fuel.work_limit
        fuel.limit = fuel.work_limit = sys.maxsize
        incremental = list(super()._candidates(first_open, first_unset, probe))
        counted = fuel.spent - spent
        fuel.spent, fuel.limit, fuel.work_limit = spent, limit, work_limit
        # The candidates of constraints that offer only doomed ones are counted,
        # not offered: as many as the full rescan offers.
        full = list(full_rescan(self, first_open, first_unset))
        offered = [c for c in full if c[2] is None or self._offer(c[2])[2] is None]
        assert incremental == offered
        if not fuel.past_jaxs:  # past it, nothing is counted (``Fuel.past_jaxs_fuel``)
            assert counted == len(full) - len(offered)
        self.splats_counted += counted
        self.decisions += 1
        return super()._candidates(first_open, first_unset, scan)


class CheckedSolver(Solver):
    """A solver whose search in JAX's order is checked (``CheckedSearch``)."""

    jax_order_search = CheckedSearch

    @property
    def checked(self) -> CheckedSearch:
        return self.in_jax_order  # type: ignore[return-value]


def solve_checked(text: str, arch: tuple[int, int] | None = None) -> CheckedSolver:
    ctx = reference.shared_context()
    module = reference.parse(text, ctx)
    with in_context(module):
        arch = arch or module_arch(module) or HOPPER
        program = read_program(module, consumers())
        solver = CheckedSolver(
            derive_system(program, arch), program, SolveOptions(fuel=100_000, arch=arch)
        )
        assert solver.solve()
    return solver


@pytest.mark.parametrize("family", sorted(FAMILIES))
def test_the_scan_offers_what_a_full_rescan_offers_in_the_scaling_kernels(family: str) -> None:
    solver = solve_checked(FAMILIES[family](6), HOPPER)
    assert solver.checked.decisions > 10
    if family == "loops":
        # The loops not reached yet offer the shared zero splat at each decision.
        assert solver.checked.splats_counted > 50


def test_the_scan_offers_what_a_full_rescan_offers_in_corpus_kernels() -> None:
    entries = [e for e in reference.bundled_entries() if _solved(e)][:80]
    decisions = sum(solve_checked(e.path.read_text(), e.arch).checked.decisions for e in entries)
    assert decisions > 100


@pytest.mark.parametrize("path", FUEL_EXHAUSTED, ids=[p.stem for p in FUEL_EXHAUSTED])
def test_the_scan_offers_what_a_full_rescan_offers_while_backtracking(path: Path) -> None:
    # The search in JAX's order backtracks until its budget is spent; the
    # complete search then decides (its choices are not the scan's).
    solver = solve_checked(path.read_text())
    assert solver.state.complete and solver.checked.decisions > 100


def _solved(entry: reference.CorpusEntry) -> bool:
    """Whether JAX's pass infers the entry with layouts its lowering accepts (the
    check needs a search over JAX's rules that succeeds)."""
    return (
        "fuel_exhausted" not in entry.key
        and reference.jax_outcome(entry.path, entry.arch).error is None
        and corpus_lowering.jax_answer_rejected(entry) is None
    )


def test_the_budget_grows_with_the_variables_left_open(monkeypatch: pytest.MonkeyPatch) -> None:
    """A kernel needing more decisions than the fixed budget is still decided in JAX's order.

    Each unrolled attention step takes 8 decisions; with a fixed budget of 10
    the search would give up on four of them and leave the kernel to the
    complete search. The budget grows by two per open variable: JAX's answer.
    """
    monkeypatch.setattr(search, "GUIDED_BUDGET", 10)
    text = FAMILIES["unrolled_attention"](4)
    solver = solve_checked(text, HOPPER)
    assert not solver.state.complete and solver.state.fuel.spent > 10
    jax_attributes, _ = reference.jax_attributes(text, HOPPER)
    smalto_attributes, _ = reference.smalto_attributes(text, HOPPER)
    assert reference.diff_attributes(jax_attributes, smalto_attributes) == []


def test_a_small_fuel_still_runs_out_in_jaxs_order(monkeypatch: pytest.MonkeyPatch) -> None:
    """Below the budget, the user's fuel bounds the search in JAX's order, as JAX's pass's does."""
    text = FAMILIES["unrolled_attention"](4)
    ctx = reference.shared_context()
    module = reference.parse(text, ctx)
    with in_context(module):
        program = read_program(module, consumers())
        solver = Solver(derive_system(program, HOPPER), program, SolveOptions(fuel=5, arch=HOPPER))
        with pytest.raises(search.FuelExhausted):
            solver.solve()
    assert isinstance(module, ir.Module)


@settings(max_examples=150, deadline=None, database=None, suppress_health_check=list(HealthCheck))
@given(modules())
def test_the_scan_offers_what_a_full_rescan_offers_on_random_modules(module: FuzzModule) -> None:
    """Random modules backtrack in every way: a constraint that offered a candidate
    that failed must offer it again below the next decision, and so on."""
    ctx = reference.shared_context()
    parsed = reference.parse(module.text, ctx)
    with in_context(parsed):
        program = read_program(parsed, consumers())
        try:
            system = derive_system(program, module.arch)
        except (smalto.InferenceError, NotImplementedError):
            return  # refused before any search
        solver = CheckedSolver(system, program, SolveOptions(fuel=20_000, arch=module.arch))
        with contextlib.suppress(search.FuelExhausted):
            solver.solve()


class MadeSearch(search.JaxOrderSearch):
    """A search that makes every candidate, the splats it would only count included."""

    def _splat_for_non_splat(self, var: int, value: Const) -> bool:
        return False


class MadeSolver(Solver):
    jax_order_search = MadeSearch


@pytest.mark.parametrize("family", sorted(FAMILIES))
def test_counted_splats_spend_and_decide_as_made_ones(family: str) -> None:
    """Counting a splat for a value that cannot be one, instead of making it, spends the
    same fuel and finds the same answer (the kernels decide in JAX's order)."""
    text = FAMILIES[family](12)
    solved = []
    for kind in (Solver, MadeSolver):
        module = reference.parse(text, reference.shared_context())
        with in_context(module):
            program = read_program(module, consumers())
            solver = kind(
                derive_system(program, HOPPER), program, SolveOptions(fuel=100_000, arch=HOPPER)
            )
            solver.guided_budget = lambda: 100_000  # type: ignore[method-assign]
            assert solver.solve() and not solver.state.complete
            solved.append((solver.state.fuel.spent, solver.state.solution()))
    assert solved[0] == solved[1]


def test_counted_splats_do_not_spend_the_budget(monkeypatch: pytest.MonkeyPatch) -> None:
    """Loops fed by one shared splat: JAX's pass tries the splat for every loop not
    reached yet at every decision, attempts quadratic in the loops. They cost no
    work: the budget bounds the attempts that do, so the kernel is decided in
    JAX's order (before, it went to the complete search, whose answer is not JAX's)."""
    monkeypatch.setattr(search, "GUIDED_BUDGET", 30)
    monkeypatch.setattr(search, "ATTEMPTS_PER_VARIABLE", 0)
    text = FAMILIES["loops"](8)
    solver = solve_checked(text, HOPPER)
    assert not solver.state.complete
    assert solver.state.fuel.work <= 30 < solver.state.fuel.spent
    jax_attributes, _ = reference.jax_attributes(text, HOPPER)
    smalto_attributes, _ = reference.smalto_attributes(text, HOPPER)
    assert reference.diff_attributes(jax_attributes, smalto_attributes) == []


def _outcome(kind: type[Solver], text: str, fuel: int) -> tuple[str, int]:
    module = reference.parse(text, reference.shared_context())
    with in_context(module):
        program = read_program(module, consumers())
        solver = kind(derive_system(program, HOPPER), program, SolveOptions(fuel=fuel, arch=HOPPER))
        solver.guided_budget = lambda: 100_000  # type: ignore[method-assign]
        try:
            return ("solved" if solver.solve() else "unsat"), solver.state.fuel.spent
        except search.FuelExhausted as e:
            return "out of fuel", e.spent


def test_fuel_running_out_among_counted_splats_runs_out_as_making_them_does() -> None:
    """Splats counted many at once run out of fuel exactly where making them one by
    one would: at each fuel around the attempts the loops kernel needs, the same
    outcome and the same attempts spent."""
    text = FAMILIES["loops"](6)
    needed = _outcome(MadeSolver, text, 100_000)[1]
    for fuel in range(needed - 40, needed + 3):
        assert _outcome(Solver, text, fuel) == _outcome(MadeSolver, text, fuel), fuel


def _solved_loops(text: str, fuel: int, kind: type[Solver] = Solver) -> Solver:
    module = reference.parse(text, reference.shared_context())
    with in_context(module):
        program = read_program(module, consumers())
        solver = kind(derive_system(program, HOPPER), program, SolveOptions(fuel=fuel, arch=HOPPER))
        assert solver.solve()
    return solver


def test_past_jaxs_fuel_spent_on_doomed_splats_the_search_goes_on_in_jaxs_order() -> None:
    """32 loops fed by one splat: JAX's order needs 1 648 attempts, 96 of them work.
    With less fuel than that (but more than the budget), JAX's pass runs out on
    the doomed splats; smalto goes on in JAX's order, counting work only, and
    answers what JAX's order gives with fuel enough (not the complete search's
    answer, which would start over)."""
    text = FAMILIES["loops"](32)
    ample = _solved_loops(text, 1_000_000)
    assert not ample.state.fuel.past_jaxs and not ample.state.complete
    # (Checked: the scan offers what a full rescan does, past the fuel too.)
    short = _solved_loops(text, ample.state.fuel.spent - 100, CheckedSolver)
    assert short.state.fuel.past_jaxs and not short.state.complete
    assert (
        short.state.fuel.work == ample.state.fuel.work
        and short.state.solution() == ample.state.solution()
    )
    module = reference.parse(text, reference.shared_context())
    smalto.infer_layout(module, arch=HOPPER, fuel=ample.state.fuel.spent - 100)
    # (The scaling family's launch asks for no dynamic SMEM and its 64 slices lie past it:
    # a kernel for the search, not for the GPU. Its layouts are what is checked.)
    layouts = [v for v in check(module, HOPPER) if "dynamic SMEM" not in v.message]
    assert layouts == []
