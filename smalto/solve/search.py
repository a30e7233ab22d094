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

``Solver`` is one system's propagation state with both searches composed over
it (each given the state, none inheriting it); ``FuelExhausted`` is raised
when the fuel runs out before the system is decided.
"""

from __future__ import annotations

from collections.abc import Callable
from functools import partial

from smalto.constraints.language import Constraint, System
from smalto.hw.values import Const
from smalto.program.view import Program
from smalto.solve.complete import CompleteSearch
from smalto.solve.jax_order import (
    ATTEMPTS_PER_VARIABLE,
    GUIDED_BUDGET,
    Checkpoint,
    JaxOrderSearch,
)
from smalto.solve.propagation import Conflict, FuelExhausted, Propagation, Reason

# Attempts of work past one per open variable after which the search in JAX's order,
# backtracking, is stopped where the widened search proves no layout lowers
# (``_EarlyWidened``). No corpus kernel that infers backtracks at all.
CHECKPOINT_SLACK = 16

__all__ = [
    "ATTEMPTS_PER_VARIABLE",
    "GUIDED_BUDGET",
    "Conflict",
    "FuelExhausted",
    "Reason",
    "Solver",
    "decide",
]


class Solver(Propagation):
    """Decides one system: the propagation state, with the two searches composed over it.

    The solver is the state (``Propagation``: slots, values, watchers, the
    trail; what a diagnosis reads of a decided system); ``in_jax_order`` (the
    search in JAX's order) and ``over_domains`` (the complete search) are each
    given that one state, and make and undo their decisions on it.

    ``widened``: a complete search over the layouts the lowering accepts beyond
    JAX's rules (producer-to-consumer relayouts the lowering performs, domains
    closed under the expressions between variables); see ``decide`` and
    ``smalto.solve.widened``.
    """

    # The search in JAX's order a solver makes (a test may watch it by a subclass).
    jax_order_search: type[JaxOrderSearch] = JaxOrderSearch

    def __init__(
        self,
        system: System,
        program: Program,
        arch: tuple[int, int],
        fuel: int,
        *,
        widened: bool = False,
    ) -> None:
        super().__init__(system, program, arch, fuel, widened=widened)
        self._program = program
        self._in_jax_order: JaxOrderSearch | None = None
        self.over_domains = CompleteSearch(self)

    @property
    def in_jax_order(self) -> JaxOrderSearch:
        """The search in JAX's order, made when first asked for (a widened solver, and the
        small ones a diagnosis makes, never search in JAX's order)."""
        search = self._in_jax_order
        if search is None:
            search = self._in_jax_order = self.jax_order_search(self, self._program)
        return search

    def solve(self, *, guided: bool = True) -> bool:
        """Finds an assignment; False if none exists (``self.conflict`` says why, at the root).

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
        elif not self.propagate_root():
            return False
        return self.solve_completely()

    def solve_in_jax_order(
        self, checkpoint: Callable[[int, int], Checkpoint | None] | None = None
    ) -> bool | None:
        """Propagation, then the search in JAX's order: True where it finds an answer that
        lowers, False where the propagation alone proves there is none, None where the
        complete search must decide (``solve_completely``).

        ``checkpoint``: given the search's budget and the variables open at the root,
        where it may be stopped, if anywhere (``jax_order.Checkpoint``; None is
        returned then too).
        """
        if not self.propagate_root():
            return False
        budget = self.guided_budget()
        at = checkpoint(budget, self.unassigned) if checkpoint is not None else None
        return self.in_jax_order.run(budget, at)

    def guided_budget(self) -> int:
        """The attempts of work the search in JAX's order gets (``JaxOrderSearch``'s)."""
        return self.in_jax_order.guided_budget()

    def solve_completely(self, fuel: int | None = None) -> bool:
        """The complete search from the propagated root: an assignment, or the proof there is
        none (``fuel``: what is left of it, if not all)."""
        return self.over_domains.run(self.fuel if fuel is None else fuel)


def decide(system: System, program: Program, arch: tuple[int, int], fuel: int) -> Solver:
    """The solver that decided ``system``: solved, or the widest that proved it unsatisfiable.

    First JAX's order (so smalto answers as JAX does wherever JAX's answer
    lowers). Where that finds no assignment that lowers, the widened complete
    search (``Solver(widened=True)``) over everything the lowering accepts:
    relayouts between producer and consumer, layouts no rule of JAX's offers.
    Where even that finds none, no layout lowers: decided, without the
    complete search over JAX's rules (whose assignments the widened search
    covers). Where it finds one, the complete search over JAX's rules still
    goes first, and its answer is taken if it has one: layouts JAX's rules
    allow, with no relayout they forbid. Raises ``FuelExhausted`` when
    ``fuel`` runs out first.

    Where the search in JAX's order backtracks far (``CHECKPOINT_SLACK``), the
    widened search is made then (``_EarlyWidened``): where no layout lowers,
    the search in JAX's order is stopped, which could find none either (a
    kernel with no layouts is refused sooner than JAX's pass refuses it).
    """
    solver = Solver(system, program, arch, fuel)
    early = _EarlyWidened(system, program, arch, fuel)
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
        if solver.complete_only:
            proof.find_jax_answer_breaks_later(
                partial(_jax_answer_breaks, system, program, arch, fuel)
            )
        return proof
    # (False: JAX's rules fail at the root, which the widened search may still satisfy.)
    wider = early.solver
    if wider is None:
        wider = Solver(system, program, arch, max(fuel - solver.work, 1), widened=True)
        wider.solved = wider.solve(guided=False)
    wider.jax_answer_breaks = solver.jax_answer_breaks
    if not wider.solved or decided is False:
        return wider
    solver.solved = solver.solve_completely()
    return solver if solver.solved else wider


class _EarlyWidened:
    """The widened search made before the search in JAX's order gives up, where that one
    backtracks far (``jax_order.Checkpoint``): where no layout lowers at all, the search
    in JAX's order cannot find one either, and is stopped.

    Nothing changes where it finds one: the search in JAX's order goes on, and
    this widened search stands for the one ``decide`` would make next. Made
    only where the fuel outlasts the search in JAX's order, which then cannot
    run out of it, with the least fuel ``decide`` would give it then (the fuel
    less that search's budget): where that runs out, it is as if never made.
    """

    def __init__(self, system: System, program: Program, arch: tuple[int, int], fuel: int) -> None:
        self.system, self.program, self.arch, self.fuel = system, program, arch, fuel
        self.budget = 0
        self.solver: Solver | None = None

    def checkpoint(self, budget: int, open_variables: int) -> Checkpoint | None:
        """For a search in JAX's order with this ``budget`` from a root with this many
        ``open_variables``: where to make it, if anywhere."""
        if self.fuel <= budget:
            return None
        self.budget = budget
        return Checkpoint(open_variables + CHECKPOINT_SLACK, self._stop)

    def _stop(self) -> bool:
        wider = Solver(self.system, self.program, self.arch, self.fuel - self.budget, widened=True)
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
    system: System, program: Program, arch: tuple[int, int], fuel: int
) -> list[tuple[Constraint, Const]]:
    """The lowering requirements the answer in JAX's order breaks (``decide``'s first
    search, made to the end)."""
    solver = Solver(system, program, arch, fuel)
    solver.solve_in_jax_order()
    return solver.jax_answer_breaks
