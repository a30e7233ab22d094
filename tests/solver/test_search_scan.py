"""The search in JAX's order: its incremental scan for candidates, and its budget.

Below a decision, the scan asks only the constraints whose candidates may have
changed (``CandidateScan.offered``). These tests run the search with a check at
every decision: the candidates it offers, in order, must be exactly those of
a full rescan of every open constraint and variable (the order JAX's pass
tries them in), on kernels that decide without backtracking (the scaling
families, corpus kernels) and on kernels that backtrack a thousand times
before the complete search takes over (the fuel-exhausted ones).
"""

from __future__ import annotations

import sys
from collections.abc import Iterator
from pathlib import Path
from typing import cast

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
from smalto.solve import candidate_scan, search
from smalto.solve import candidates as cands
from smalto.solve.decision import Decision, Exhausted, Solved
from smalto.solve.jax_search import JaxOrderSearch
from smalto.solve.options import SolveOptions
from smalto.solve.propagation import Propagation
from smalto.solve.search import Complete, InJaxOrder

HOPPER = (9, 0)
FUEL_EXHAUSTED = sorted((reference.BUNDLED_ROOT / "fuel_exhausted").glob("*.mlir"))


def full_rescan(
    scan: candidate_scan.CandidateScan, first_open: int, first_unset: int
) -> Iterator[tuple[int, Const, int | None]]:
    """The candidates in JAX's order, every open constraint and variable asked afresh."""
    state = scan.state
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
            value = cands.default_value(v, scan.tmem_defaults[v.id])
            if value is not None and (root[v.id], value) not in tried:
                tried.add((root[v.id], value))
                yield v.id, value, None


class CheckedScan(candidate_scan.CandidateScan):
    """A scan that makes each splat it counts as failing at once (``_splat_for_non_splat``,
    ``_offer``) to see it fail; and counts the decisions it is asked about."""

    decisions = 0
    splats_counted = 0

    def _splat_for_non_splat(self, var: int, value: Const) -> bool:
        counted = super()._splat_for_non_splat(var, value)
        if counted:
            self.splats_counted += 1
            assert self._fails_at_once_made(var, value), (var, value)
        return counted

    def _offer(self, ci: int) -> candidate_scan._Offer:
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


class CheckedSearch(JaxOrderSearch):
    """A search in JAX's order that, at each decision, compares its candidates with a full
    rescan (``CheckedScan`` watches the splats it counts)."""

    scan_type = CheckedScan

    def conjure_assignment(
        self, scan: candidate_scan._Scan, first_open: int, first_unset: int
    ) -> Iterator[tuple[int, Const, int | None]]:
        # A copy of the scan, and the fuel put back: listing every candidate
        # must not move the real scan nor spend.
        checked = cast(CheckedScan, self.scan)
        fuel = self.state.fuel
        probe = scan.probe()
        spent, limit, work_limit = fuel.spent, fuel.limit, fuel.work_limit
        fuel.limit = fuel.work_limit = sys.maxsize
        incremental = list(super().conjure_assignment(probe, first_open, first_unset))
        counted = fuel.spent - spent
        fuel.spent, fuel.limit, fuel.work_limit = spent, limit, work_limit
        # The candidates of constraints that offer only doomed ones are counted,
        # not offered: as many as the full rescan offers.
        full = list(full_rescan(checked, first_open, first_unset))
        offered = [c for c in full if c[2] is None or checked._offer(c[2])[2] is None]
        assert incremental == offered
        if not fuel.past_jaxs:  # past it, nothing is counted (``Fuel.past_jaxs_fuel``)
            assert counted == len(full) - len(offered)
        checked.splats_counted += counted
        checked.decisions += 1
        return super().conjure_assignment(scan, first_open, first_unset)


class CheckedInJaxOrder(InJaxOrder):
    search_type = CheckedSearch


class MadeScan(candidate_scan.CandidateScan):
    """A scan that has every candidate made, the splats it would only count included."""

    def _splat_for_non_splat(self, var: int, value: Const) -> bool:
        return False


class MadeSearch(JaxOrderSearch):
    scan_type = MadeScan


class MadeInJaxOrder(InJaxOrder):
    search_type = MadeSearch


def under_jax_rules(
    text: str, arch: tuple[int, int], fuel: int, in_jax_order: type[InJaxOrder] = InJaxOrder
) -> tuple[Decision, Propagation, InJaxOrder]:
    """JAX's order (``in_jax_order``), then the complete search over JAX's rules: what
    they decide, the state, and the strategy in JAX's order."""
    module = reference.parse(text, reference.shared_context())
    with in_context(module):
        program = read_program(module, consumers())
        state = Propagation(derive_system(program, arch), program, arch, fuel)
        strategy = in_jax_order(program)
        decision = strategy.run(state) or Complete().run(state)
    return decision or search.NoLayouts(state, []), state, strategy


def solve_checked(
    text: str, arch: tuple[int, int] | None = None, fuel: int = 100_000
) -> tuple[Propagation, CheckedScan]:
    """The state of a search checked at every decision (``CheckedSearch``), solved."""
    if arch is None:
        module = reference.parse(text, reference.shared_context())
        arch = module_arch(module) or HOPPER
    decision, state, strategy = under_jax_rules(text, arch, fuel, CheckedInJaxOrder)
    assert isinstance(decision, Solved)
    assert strategy.search is not None
    return state, cast(CheckedScan, strategy.search.scan)


@pytest.mark.parametrize("family", sorted(FAMILIES))
def test_the_scan_offers_what_a_full_rescan_offers_in_the_scaling_kernels(family: str) -> None:
    _, checked = solve_checked(FAMILIES[family](6), HOPPER)
    assert checked.decisions > 10
    if family == "loops":
        # The loops not reached yet offer the shared zero splat at each decision.
        assert checked.splats_counted > 50


def test_the_scan_offers_what_a_full_rescan_offers_in_corpus_kernels() -> None:
    entries = [e for e in reference.bundled_entries() if _solved(e)][:80]
    decisions = sum(solve_checked(e.path.read_text(), e.arch)[1].decisions for e in entries)
    assert decisions > 100


@pytest.mark.parametrize("path", FUEL_EXHAUSTED, ids=[p.stem for p in FUEL_EXHAUSTED])
def test_the_scan_offers_what_a_full_rescan_offers_while_backtracking(path: Path) -> None:
    # The search in JAX's order backtracks until its budget is spent; the
    # complete search then decides (its choices are not the scan's).
    state, checked = solve_checked(path.read_text())
    assert state.complete and checked.decisions > 100


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
    state, _ = solve_checked(text, HOPPER)
    assert not state.complete and state.fuel.spent > 10
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
        options = SolveOptions(fuel=5, arch=HOPPER)
        decided = search.under_jax_rules(derive_system(program, HOPPER), program, options)
    assert isinstance(decided, Exhausted) and decided.spent == 5
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
        state = Propagation(system, program, module.arch, 20_000)
        CheckedInJaxOrder(program).run(state) or Complete().run(state)


@pytest.mark.parametrize("family", sorted(FAMILIES))
def test_counted_splats_spend_and_decide_as_made_ones(
    family: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Counting a splat for a value that cannot be one, instead of making it, spends the
    same fuel and finds the same answer (the kernels decide in JAX's order)."""
    monkeypatch.setattr(search, "GUIDED_BUDGET", 100_000)
    text = FAMILIES[family](12)
    solved = []
    for kind in (InJaxOrder, MadeInJaxOrder):
        decision, state, _ = under_jax_rules(text, HOPPER, 100_000, kind)
        assert isinstance(decision, Solved) and decision.in_jax_order
        solved.append((state.fuel.spent, state.solution()))
    assert solved[0] == solved[1]


def test_counted_splats_do_not_spend_the_budget(monkeypatch: pytest.MonkeyPatch) -> None:
    """Loops fed by one shared splat: JAX's pass tries the splat for every loop not
    reached yet at every decision, attempts quadratic in the loops. They cost no
    work: the budget bounds the attempts that do, so the kernel is decided in
    JAX's order (before, it went to the complete search, whose answer is not JAX's)."""
    monkeypatch.setattr(search, "GUIDED_BUDGET", 30)
    monkeypatch.setattr(search, "ATTEMPTS_PER_VARIABLE", 0)
    text = FAMILIES["loops"](8)
    state, _ = solve_checked(text, HOPPER)
    assert not state.complete
    assert state.fuel.work <= 30 < state.fuel.spent
    jax_attributes, _ = reference.jax_attributes(text, HOPPER)
    smalto_attributes, _ = reference.smalto_attributes(text, HOPPER)
    assert reference.diff_attributes(jax_attributes, smalto_attributes) == []


def _outcome(kind: type[InJaxOrder], text: str, fuel: int) -> tuple[str, int]:
    decision, state, _ = under_jax_rules(text, HOPPER, fuel, kind)
    match decision:
        case Exhausted(spent=spent):
            return "out of fuel", spent
        case Solved():
            return "solved", state.fuel.spent
    return "unsat", state.fuel.spent


def test_fuel_running_out_among_counted_splats_runs_out_as_making_them_does(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Splats counted many at once run out of fuel exactly where making them one by
    one would: at each fuel around the attempts the loops kernel needs, the same
    outcome and the same attempts spent."""
    monkeypatch.setattr(search, "GUIDED_BUDGET", 100_000)
    text = FAMILIES["loops"](6)
    needed = _outcome(MadeInJaxOrder, text, 100_000)[1]
    for fuel in range(needed - 40, needed + 3):
        assert _outcome(InJaxOrder, text, fuel) == _outcome(MadeInJaxOrder, text, fuel), fuel


def test_past_jaxs_fuel_spent_on_doomed_splats_the_search_goes_on_in_jaxs_order() -> None:
    """32 loops fed by one splat: JAX's order needs 1 648 attempts, 96 of them work.
    With less fuel than that (but more than the budget), JAX's pass runs out on
    the doomed splats; smalto goes on in JAX's order, counting work only, and
    answers what JAX's order gives with fuel enough (not the complete search's
    answer, which would start over)."""
    text = FAMILIES["loops"](32)
    decided, ample, _ = under_jax_rules(text, HOPPER, 1_000_000)
    assert isinstance(decided, Solved)
    assert not ample.fuel.past_jaxs and not ample.complete
    # (Checked: the scan offers what a full rescan does, past the fuel too.)
    short, _ = solve_checked(text, HOPPER, ample.fuel.spent - 100)
    assert short.fuel.past_jaxs and not short.complete
    assert short.fuel.work == ample.fuel.work and short.solution() == ample.solution()
    module = reference.parse(text, reference.shared_context())
    smalto.infer_layout(module, arch=HOPPER, fuel=ample.fuel.spent - 100)
    # (The scaling family's launch asks for no dynamic SMEM and its 64 slices lie past it:
    # a kernel for the search, not for the GPU. Its layouts are what is checked.)
    layouts = [v for v in check(module, HOPPER) if "dynamic SMEM" not in v.message]
    assert layouts == []
