"""The solver: propagation, then the search in JAX's order, then complete searches.

``decide`` runs them in turn on a derived system:

1. propagation with a trail (``propagation``): fixed values, then every
   value a constraint forces;
2. the search in JAX's order (``jax_order``), within a budget, so that smalto
   answers as JAX does wherever JAX's answer lowers;
3. the complete search over finite domains (``complete``), where that finds
   nothing that lowers: an assignment, or the proof there is none under
   JAX's rules;
4. the widened complete search (``widened``), over everything the lowering
   accepts, where JAX's rules leave no layouts that lower.

``Solver`` holds one system's propagation state (``Solver.state``) and both
searches, each given that state; ``FuelExhausted`` is raised when the fuel
runs out before the system is decided.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace
from functools import partial

from smalto.constraints.language import Constraint, System
from smalto.hw.values import Const
from smalto.program.view import Program
from smalto.solve.complete import CompleteSearch
from smalto.solve.fuel import Checkpoint, FuelExhausted
from smalto.solve.jax_order import ATTEMPTS_PER_VARIABLE, GUIDED_BUDGET, JaxOrderSearch
from smalto.solve.options import SolveOptions
from smalto.solve.propagation import Conflict, Propagation, Reason

# Attempts of work past one per open variable after which the search in JAX's order,
# backtracking, is stopped where the widened search proves no layout lowers
# (``_EarlyWidened``). No corpus kernel that infers backtracks at all.
CHECKPOINT_SLACK = 16

__all__ = [
    "ATTEMPTS_PER_VARIABLE",
    "GUIDED_BUDGET",
    "Conflict",
    "FuelExhausted",
    "Propagation",
    "Reason",
    "SolveOptions",
    "Solver",
    "decide",
]


class Solver:
    """Decides one system: the propagation state, with the two searches composed over it.

    ``state`` (``Propagation``: slots, values, watchers, the trail, the fuel)
    is what a diagnosis or a report reads of a decided system; ``in_jax_order``
    (the search in JAX's order) and ``over_domains`` (the complete search) are
    each given that one state, and make and undo their decisions on it.
    ``solved``: what ``decide`` found.

    ``widened``: a complete search over the layouts the lowering accepts beyond
    JAX's rules (producer-to-consumer relayouts the lowering performs, domains
    closed under the expressions between variables); see ``decide`` and
    ``smalto.solve.widened``.
    """

    # The search in JAX's order a solver makes (a test may watch it by a subclass).
    jax_order_search: type[JaxOrderSearch] = JaxOrderSearch

    def __init__(
        self, system: System, program: Program, options: SolveOptions, *, widened: bool = False
    ) -> None:
        self.options = options
        self.state = Propagation(system, program, options.arch, options.fuel, widened=widened)
        self.widened = widened
        self.solved = False
        self._program = program
        self._in_jax_order: JaxOrderSearch | None = None
        self.over_domains = CompleteSearch(self.state)
        # The lowering requirements the answer in JAX's order broke, with the value it
        # gave (what a diagnosis names when no layout lowers); or how to find them,
        # where the search in JAX's order was cut short (``decide``).
        self._jax_answer_breaks: list[tuple[Constraint, Const]] = []
        self._breaks_later: Callable[[], list[tuple[Constraint, Const]]] | None = None

    @property
    def jax_answer_breaks(self) -> list[tuple[Constraint, Const]]:
        """The lowering requirements the answer in JAX's order broke, with the value it gave
        each one's register variable (empty where it found none, or one that lowers)."""
        later = self._breaks_later
        if later is not None:
            self._breaks_later = None
            self._jax_answer_breaks = later()
        return self._jax_answer_breaks

    @jax_answer_breaks.setter
    def jax_answer_breaks(self, breaks: list[tuple[Constraint, Const]]) -> None:
        self._breaks_later = None
        self._jax_answer_breaks = breaks

    def find_jax_answer_breaks_later(
        self, find: Callable[[], list[tuple[Constraint, Const]]]
    ) -> None:
        """``jax_answer_breaks`` found by ``find`` when first read (the search in JAX's
        order that finds them was cut short; a diagnosis reads them, raising does not)."""
        self._breaks_later = find

    @property
    def in_jax_order(self) -> JaxOrderSearch:
        """The search in JAX's order, made when first asked for (a widened solver, and the
        small ones a diagnosis makes, never search in JAX's order)."""
        search = self._in_jax_order
        if search is None:
            search = self._in_jax_order = self.jax_order_search(self.state, self._program)
        return search

    def solve(self, *, guided: bool = True) -> bool:
        """Finds an assignment; False if none exists (``state.conflict`` says why, at the root).

        First in the order JAX's pass searches (so both give the same answer),
        within a small budget; if that finds nothing that lowers (an answer
        that breaks a lowering requirement JAX's rules leave out, such as
        ``GmemTransfer``, is no answer), by the complete search over finite
        domains, which finds an assignment or proves there is none.
        ``guided=False`` skips the first: for deciding satisfiability only.
        """
        if guided and not self.widened:
            decided = self.solve_in_jax_order()
            if decided is not None:
                return decided
        elif not self.state.propagate_root():
            return False
        return self.solve_completely()

    def solve_in_jax_order(
        self, checkpoint: Callable[[int, int], Checkpoint | None] | None = None
    ) -> bool | None:
        """Propagation, then the search in JAX's order: True where it finds an answer that
        lowers, False where the propagation alone proves there is none, None where the
        complete search must decide (``solve_completely``).

        ``checkpoint``: given the search's budget and the variables open at the root,
        where it may be stopped, if anywhere (``fuel.Checkpoint``; None is
        returned then too).
        """
        if not self.state.propagate_root():
            return False
        budget = self.guided_budget()
        at = checkpoint(budget, self.state.unassigned) if checkpoint is not None else None
        search = self.in_jax_order
        decided = search.run(budget, at)
        if search.answer_breaks:
            self.jax_answer_breaks = search.answer_breaks
        return decided

    def guided_budget(self) -> int:
        """The attempts of work the search in JAX's order gets (``JaxOrderSearch``'s)."""
        return self.in_jax_order.guided_budget()

    def solve_completely(self, fuel: int | None = None) -> bool:
        """The complete search from the propagated root: an assignment, or the proof there is
        none (``fuel``: what is left of it, if not all)."""
        return self.over_domains.run(self.state.fuel.total if fuel is None else fuel)


def decide(system: System, program: Program, options: SolveOptions) -> Solver:
    """The solver that decided ``system``: solved, or the widest that proved it unsatisfiable.

    First JAX's order (so smalto answers as JAX does wherever JAX's answer
    lowers). Where that finds no assignment that lowers, the complete search
    over JAX's rules: its answer is taken if it has one (layouts JAX's rules
    allow, with no relayout they forbid). Where it has none, the widened
    complete search (``Solver(widened=True)``) over everything the lowering
    accepts: relayouts between producer and consumer, layouts no rule of
    JAX's offers; where even that finds none, no layout lowers. The widened
    search covers the other's assignments, so the answer is the one running
    the widened search first would give; going second, it runs less often,
    and its wider domains ask the lowering's transfer schedule about more
    layouts. Raises ``FuelExhausted`` when ``options.fuel`` runs out first
    (in the complete search over JAX's rules: only where the widened search
    finds an answer).

    Where the search in JAX's order backtracks far (``CHECKPOINT_SLACK``), the
    widened search is made then (``_EarlyWidened``): where no layout lowers,
    the search in JAX's order is stopped, which could find none either (a
    kernel with no layouts is refused sooner than JAX's pass refuses it).
    """
    solver = Solver(system, program, options)
    early = _EarlyWidened(system, program, options)
    decided = solver.solve_in_jax_order(early.checkpoint)
    if decided:
        solver.solved = True
        return solver
    proof = early.proof()
    if proof is not None:
        # The search in JAX's order was stopped. What it would have found: no broken
        # lowering requirement where there is none to break; else found again when
        # first read (a diagnosis reads them; raising only where the proof names
        # no requirement that failed).
        if solver.state.complete_only:
            proof.find_jax_answer_breaks_later(
                partial(_jax_answer_breaks, system, program, options)
            )
        return proof
    # (False: JAX's rules fail at the root, which the widened search may still satisfy.)
    wider = early.solver
    # The complete search over JAX's rules, where it ran before the widened one: False
    # where it found nothing, or how its fuel ran out.
    narrow: FuelExhausted | bool | None = None
    if wider is None:
        left = max(options.fuel - solver.state.fuel.work, 1)
        if decided is None:
            # Its answer is the answer wherever it has one, and the widened search, which
            # covers its assignments, finds one there too: so it goes first, and the
            # widened search, whose wider domains ask the lowering's transfer schedule
            # about more layouts (0.5 to 50 ms each, the first time), runs only where it
            # finds none.
            try:
                if solver.solve_completely():
                    solver.solved = True
                    return solver
                narrow = False
            except FuelExhausted as exhausted:
                narrow = exhausted
        wider = Solver(system, program, replace(options, fuel=left), widened=True)
        wider.solved = wider.solve(guided=False)
    wider.jax_answer_breaks = solver.jax_answer_breaks
    if not wider.solved or decided is False:
        return wider
    if isinstance(narrow, FuelExhausted):
        raise narrow  # as it would have, run after the widened search
    if narrow is None:
        solver.solved = solver.solve_completely()
    return solver if solver.solved else wider


class _EarlyWidened:
    """The widened search made before the search in JAX's order gives up, where that one
    backtracks far (``fuel.Checkpoint``): where no layout lowers at all, the search
    in JAX's order cannot find one either, and is stopped.

    Nothing changes where it finds one: the search in JAX's order goes on, and
    this widened search stands for the one ``decide`` would make next. Made
    only where the fuel outlasts the search in JAX's order, which then cannot
    run out of it, with the least fuel ``decide`` would give it then (the fuel
    less that search's budget): where that runs out, it is as if never made.
    """

    def __init__(self, system: System, program: Program, options: SolveOptions) -> None:
        self.system, self.program, self.options = system, program, options
        self.budget = 0
        self.solver: Solver | None = None

    def checkpoint(self, budget: int, open_variables: int) -> Checkpoint | None:
        """For a search in JAX's order with this ``budget`` from a root with this many
        ``open_variables``: where to make it, if anywhere."""
        if self.options.fuel <= budget:
            return None
        self.budget = budget
        return Checkpoint(open_variables + CHECKPOINT_SLACK, self._stop)

    def _stop(self) -> bool:
        left = replace(self.options, fuel=self.options.fuel - self.budget)
        wider = Solver(self.system, self.program, left, widened=True)
        try:
            wider.solved = wider.solve(guided=False)
        except FuelExhausted:
            return False
        self.solver = wider
        return not wider.solved

    def proof(self) -> Solver | None:
        """The widened search, where it proved that no layout lowers."""
        return self.solver if self.solver is not None and not self.solver.solved else None


def _jax_answer_breaks(
    system: System, program: Program, options: SolveOptions
) -> list[tuple[Constraint, Const]]:
    """The lowering requirements the answer in JAX's order breaks (``decide``'s first
    search, made to the end)."""
    solver = Solver(system, program, options)
    solver.solve_in_jax_order()
    return solver.jax_answer_breaks
