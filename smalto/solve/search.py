"""Deciding a system: a declared sequence of strategies with one typed outcome.

``decide`` runs, on the system's propagation state under JAX's rules, the
strategies in turn until one decides (``Decision``: ``Solved``,
``NoLayouts`` or ``Exhausted``):

1. ``InJaxOrder``: propagation, then the search in JAX's order
   (``jax_search``), within a budget, so that smalto answers as JAX does
   wherever JAX's answer lowers. At its checkpoint it consults
   ``EarlyWidening``: where the search backtracks far, the widened search is
   made then, and where no layout lowers at all, the search in JAX's order
   is not gone on with (a kernel with no layouts is refused sooner than
   JAX's pass refuses it).
2. ``Complete``: the complete search over finite domains (``complete``), where
   JAX's order finds nothing that lowers: its answer is taken if it has one
   (layouts JAX's rules allow, with no relayout they forbid).
3. ``Widened``: the widened complete search (``widened``), over everything
   the lowering accepts; where even that finds none, no layout lowers.

Each strategy has one method, ``run(state) -> Decision | None`` (None: not
decided, the next one goes on); what a later strategy reads of an earlier
one it reads of the state, or of the strategy it was given when the
sequence was declared. The widened search is made at most once
(``EarlyWidening`` keeps what it found for ``Widened``).

Smalto's own searches are here and in ``complete``; what tracks JAX's search
is ``jax_search`` alone.
"""

from __future__ import annotations

from dataclasses import replace
from functools import partial
from typing import TYPE_CHECKING, Protocol, cast

from smalto.constraints.language import GmemTransfer, System
from smalto.hw.values import Const
from smalto.program.view import Program
from smalto.solve.decision import Breaks, Decision, Exhausted, NoLayouts, Solved
from smalto.solve.evaluate import HOLDS, judge, simplify
from smalto.solve.fuel import AtCheckpoint, FuelExhausted
from smalto.solve.jax_search import JaxOrderSearch
from smalto.solve.options import SolveOptions
from smalto.solve.propagation import Propagation

if TYPE_CHECKING:
    from smalto.solve.complete import DomainsMade

# Attempts the search in JAX's order may take before the complete search takes over,
# beyond one per variable left open by the propagation before the first decision
# (``guided_budget``). Every corpus kernel JAX solves needs under 100 in all. A splat
# tried for a value that cannot be one (a doomed candidate) does not count against
# it: it does no work (``CandidateScan.doomed``).
GUIDED_BUDGET = 1_000
# Attempts per open variable: one for its value, one for a candidate that fails.
ATTEMPTS_PER_VARIABLE = 2
# Attempts of work past one per open variable after which the search in JAX's order,
# backtracking, consults the early widening (``EarlyWidening``). No corpus kernel
# that infers backtracks at all.
CHECKPOINT_SLACK = 16

__all__ = [
    "ATTEMPTS_PER_VARIABLE",
    "CHECKPOINT_SLACK",
    "GUIDED_BUDGET",
    "Complete",
    "Decision",
    "EarlyWidening",
    "Exhausted",
    "InJaxOrder",
    "NoLayouts",
    "Solved",
    "Strategy",
    "Widened",
    "decide",
    "guided_budget",
    "under_jax_rules",
    "widest",
]


class Strategy(Protocol):
    """One step of deciding a system: a decision, or None where the next step goes on."""

    def run(self, state: Propagation) -> Decision | None: ...


def decide(system: System, program: Program, options: SolveOptions) -> Decision:
    """What deciding ``system`` finds: JAX's order, then the complete search over JAX's
    rules, then the widened search (the module's doc).

    The widened search covers the complete search's assignments, so the answer is
    the one running the widened search first would give; going last, it runs less
    often, and its wider domains ask the lowering's transfer schedule about more
    layouts. Where the fuel runs out in the complete search over JAX's rules, the
    answer is ``Exhausted`` only where the widened search finds layouts.
    """
    state = Propagation(system, program, options.arch, options.fuel)
    early = EarlyWidening(system, program, options)
    in_jax_order = InJaxOrder(program, early)
    widened = Widened(early, in_jax_order)
    strategies: tuple[Strategy, ...] = (in_jax_order, Complete(widened), widened)
    for strategy in strategies:
        decision = strategy.run(state)
        if decision is not None:
            return decision
    raise AssertionError("smalto bug: the widened search decides every system")


def under_jax_rules(system: System, program: Program, options: SolveOptions) -> Decision:
    """JAX's order, then the complete search over JAX's rules alone (no widened search):
    whether JAX's rules have an answer that lowers (a diagnosis's question)."""
    state = Propagation(system, program, options.arch, options.fuel)
    in_jax_order = InJaxOrder(program)
    for strategy in (in_jax_order, Complete()):
        decision = strategy.run(state)
        if decision is not None:
            return decision
    return NoLayouts(state, in_jax_order.answer_breaks)


def widest(
    system: System, program: Program, options: SolveOptions, made: DomainsMade | None = None
) -> Decision:
    """The widened complete search alone: whether any layout the lowering accepts satisfies
    ``system`` (``made``: domains of earlier searches to share, ``DomainsMade``)."""
    state = Propagation(system, program, options.arch, options.fuel, widened=True)
    if not state.propagate_root():
        return NoLayouts(state, [])
    return Complete(made=made).run(state) or NoLayouts(state, [])


def guided_budget(state: Propagation) -> int:
    """The attempts of work the search in JAX's order gets: it grows with the kernel.

    A search that never backtracks takes one attempt per variable the
    propagation left open; a fixed budget would make large kernels (an
    unrolled loop of a thousand blocks) fall to the complete search, which
    redoes the work and may pick another answer than JAX's.
    """
    return GUIDED_BUDGET + ATTEMPTS_PER_VARIABLE * state.unassigned


class InJaxOrder:
    """Propagation, then the search in JAX's order (``JaxOrderSearch``) within its budget.

    ``Solved`` where it finds an answer that lowers; ``NoLayouts`` where the
    early widening, consulted at the checkpoint, proves there is none;
    ``Exhausted`` where the user's fuel, below the budget, runs out; None
    otherwise (JAX's rules fail at the root, the budget is spent, or the
    answer breaks a lowering requirement JAX's rules leave out, such as
    ``GmemTransfer``: ``answer_breaks`` then names them).
    """

    # The search in JAX's order it makes (a test may watch it by a subclass).
    search_type: type[JaxOrderSearch] = JaxOrderSearch

    def __init__(self, program: Program, early: EarlyWidening | None = None) -> None:
        self.program = program
        self.early = early
        # The lowering requirements the answer in JAX's order broke, with the value it
        # gave each one's register variable (empty where it found none, or one that
        # lowers).
        self.answer_breaks: Breaks = []
        self.search: JaxOrderSearch | None = None

    def run(self, state: Propagation) -> Decision | None:
        if not state.propagate_root():
            return None  # JAX's rules fail at the root: the widened search may not
        search = self.search = self.search_type(state, self.program)
        budget = guided_budget(state)
        early = self.early
        checkpoint = early.checkpoint(budget, state.unassigned) if early is not None else None
        try:
            try:
                found = search.run(budget, checkpoint)
            except AtCheckpoint:
                assert early is not None  # (no checkpoint without it)
                proof = early.run(state)
                if proof is not None:
                    return NoLayouts(proof.proof, self._breaks_found_later(state, early))
                # Layouts exist (or the widened search ran out of fuel: as if never made):
                # the search goes on as if never stopped, run again from the root without
                # the checkpoint (it is deterministic: step for step the same).
                found = search.run(budget)
        except FuelExhausted as exhausted:
            return Exhausted.of(exhausted)
        if found:
            self.answer_breaks = broken_requirements(state)
            if not self.answer_breaks:
                return Solved(state, in_jax_order=True)
            state.undo(state.root_mark)
        return None

    def _breaks_found_later(
        self, state: Propagation, early: EarlyWidening
    ) -> Breaks | partial[Breaks]:
        """What the search in JAX's order, stopped at its checkpoint, would have found broken:
        nothing where there is no such requirement to break; else found when first
        read, by that search made to the end."""
        if not state.complete_only:
            return []
        return partial(_jax_answer_breaks, state.system, self.program, early.options)


def _jax_answer_breaks(system: System, program: Program, options: SolveOptions) -> Breaks:
    """The lowering requirements the answer in JAX's order breaks (``InJaxOrder`` made to
    the end, without a checkpoint)."""
    in_jax_order = InJaxOrder(program)
    in_jax_order.run(Propagation(system, program, options.arch, options.fuel))
    return in_jax_order.answer_breaks


def broken_requirements(state: Propagation) -> Breaks:
    """The requirements the assignment found in JAX's order breaks, with the value it gives
    each one's register variable (requirements it judged as holding, since JAX's own
    answers break them)."""
    lookup = state.lookup
    broken: Breaks = []
    for ci in state.complete_only:
        c = cast(GmemTransfer, state.constraints[ci])  # what ``complete_only`` holds
        if judge(c, lookup, True) is not HOLDS:
            # Every variable has its value here: the register side is one.
            broken.append((c, cast(Const, simplify(c.reg, lookup))))
    return broken


class EarlyWidening:
    """The widened search made at the checkpoint of the search in JAX's order, where that
    one backtracks far: where no layout lowers at all, the search in JAX's order
    cannot find one either, and is not gone on with.

    ``run`` gives that proof (``NoLayouts``), else None: the search in JAX's
    order goes on, and what this widened search found stands for the one
    ``Widened`` would make (``found``). Made only where the fuel outlasts the
    search in JAX's order, which then cannot run out of it, with the least fuel
    ``Widened`` would give it (the fuel less that search's budget): where that
    runs out, it is as if never made.
    """

    def __init__(self, system: System, program: Program, options: SolveOptions) -> None:
        self.system, self.program, self.options = system, program, options
        # What the widened search decided, where it was made and did not run out.
        self.found: Solved | NoLayouts | None = None

    def checkpoint(self, budget: int, open_variables: int) -> int | None:
        """For a search in JAX's order with this ``budget`` from a root with this many
        ``open_variables``: the attempts of work after which to consult this widening,
        if any."""
        if self.options.fuel <= budget:
            return None
        return open_variables + CHECKPOINT_SLACK

    def run(self, state: Propagation) -> NoLayouts | None:
        left = replace(self.options, fuel=self.options.fuel - state.fuel.budget)
        decision = widest(self.system, self.program, left)
        if isinstance(decision, Exhausted):
            return None
        self.found = decision
        return decision if isinstance(decision, NoLayouts) else None


class Complete:
    """The complete search over the state's domains, from its propagated root: ``Solved``,
    or None where it proves there is none (or the root failed before it).

    ``widened``: consulted where the fuel runs out (the widened search decides
    then whether any layout lowers: ``NoLayouts`` where none does, else
    ``Exhausted``); without it, ``Exhausted``. ``made``: domains of earlier
    searches to share (``DomainsMade``).
    """

    def __init__(self, widened: Widened | None = None, made: DomainsMade | None = None) -> None:
        self.widened = widened
        self.made = made

    def run(self, state: Propagation) -> Decision | None:
        if not state.searching:
            return None  # the root failed: nothing to search from
        # (Imported where JAX's order found nothing that lowers: a first call that infers as
        # JAX does never loads the complete search.)
        from smalto.solve.complete import CompleteSearch

        search = CompleteSearch(state)
        search.made_before = self.made
        try:
            if search.run(state.fuel.total):
                return Solved(state, in_jax_order=False)
        except FuelExhausted as exhausted:
            wider = self.widened.run(state) if self.widened is not None else None
            return wider if isinstance(wider, (NoLayouts, Exhausted)) else Exhausted.of(exhausted)
        return None


class Widened:
    """The widened complete search over everything the lowering accepts (``widened``):
    ``Solved``, or ``NoLayouts`` with what the answer in JAX's order broke
    (``in_jax_order``'s). Made once: what ``early`` found, where it was made,
    stands for it. Its fuel: the user's, less the work of the search in JAX's order
    (``Fuel.work``), at least one."""

    def __init__(self, early: EarlyWidening, in_jax_order: InJaxOrder) -> None:
        self.early = early
        self.in_jax_order = in_jax_order

    def run(self, state: Propagation) -> Decision:
        found: Decision | None = self.early.found
        if found is None:
            options = self.early.options
            left = replace(options, fuel=max(options.fuel - state.fuel.work, 1))
            found = widest(self.early.system, self.early.program, left)
        if isinstance(found, NoLayouts):
            return NoLayouts(found.proof, self.in_jax_order.answer_breaks)
        return found
