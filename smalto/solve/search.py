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

``Solver`` is one system's state with both searches; ``FuelExhausted`` is
raised when the fuel runs out before the system is decided.
"""

from __future__ import annotations

import contextlib
import sys
from collections.abc import Iterator

from smalto.constraints import System
from smalto.program import Program
from smalto.solve.complete import CompleteSearch
from smalto.solve.jax_order import ATTEMPTS_PER_VARIABLE, GUIDED_BUDGET, JaxOrderSearch
from smalto.solve.propagation import Conflict, FuelExhausted, Reason

__all__ = [
    "ATTEMPTS_PER_VARIABLE",
    "GUIDED_BUDGET",
    "Conflict",
    "FuelExhausted",
    "Reason",
    "Solver",
    "decide",
]


class Solver(JaxOrderSearch, CompleteSearch):
    """Decides one system: JAX's order first, then complete searches.

    ``widened``: a complete search over the layouts the lowering accepts beyond
    JAX's rules (producer-to-consumer relayouts the lowering performs, domains
    closed under the expressions between variables); see ``decide`` and
    ``smalto.solve.widened``.
    """

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
        elif not self._propagate_root():
            return False
        return self.solve_completely()

    def solve_in_jax_order(self) -> bool | None:
        """Propagation, then the search in JAX's order: True where it finds an answer that
        lowers, False where the propagation alone proves there is none, None where the
        complete search must decide (``solve_completely``)."""
        if not self._propagate_root():
            return False
        budget = self.guided_budget()
        self.limit = self.fuel
        self.work_limit = budget
        with self._deep_recursion():
            try:
                if self._search():
                    self.jax_answer_breaks = self._broken_requirements()
                    if not self.jax_answer_breaks:
                        return True
            except FuelExhausted:
                if self.fuel <= budget:
                    raise
        self._undo(self.root_mark)
        return None

    def solve_completely(self, fuel: int | None = None) -> bool:
        """The complete search from the propagated root: an assignment, or the proof there is
        none (``fuel``: what is left of it, if not all)."""
        # The complete search is smalto's own: its fuel goes on work
        # (the splats JAX's order spent fuel on did none).
        self.spent = self.work
        self.limit = self.fuel if fuel is None else fuel
        self.work_limit = sys.maxsize
        self.conflict = None
        with self._deep_recursion():
            if not self._start_complete_phase():
                return False
            self._prepare_domains()
            for slot, values in self.domains.items():
                if not values and self.value[slot] is None:
                    # No value of its kind fits its shape at all (e.g. TMEM rows).
                    self.conflict = Conflict(None, variable=slot)
                    self.empty_slot = slot
                    return False
            return self._complete_search()

    def _propagate_root(self) -> bool:
        """The fixed values, then everything they force: the root every search starts from."""
        queue: list[int] = []
        for fixed in self.system.fixed:
            if not self._assign(fixed.var, fixed.value, queue):
                self.conflict = Conflict(None, fixed=fixed, variable=fixed.var, value=fixed.value)
                return False
            self.reason[self.root[fixed.var]] = Reason("fixed", fixed=fixed)
        queue.extend(range(len(self.constraints)))
        if not self._propagate(queue):
            return False
        self.root_mark = len(self.trail)
        self.searching = True
        return True

    @contextlib.contextmanager
    def _deep_recursion(self) -> Iterator[None]:
        """The searches recurse once per decision: room for one per variable."""
        limit = sys.getrecursionlimit()
        sys.setrecursionlimit(max(limit, 10 * len(self.shapes) + 1000))
        try:
            yield
        finally:
            sys.setrecursionlimit(limit)


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
    """
    solver = Solver(system, program, arch, fuel)
    decided = solver.solve_in_jax_order()
    if decided:
        solver.solved = True
        return solver
    # (False: JAX's rules fail at the root, which the widened search may still satisfy.)
    wider = Solver(system, program, arch, max(fuel - solver.work, 1), widened=True)
    wider.solved = wider.solve(guided=False)
    wider.jax_answer_breaks = solver.jax_answer_breaks
    if not wider.solved or decided is False:
        return wider
    solver.solved = solver.solve_completely()
    return solver if solver.solved else wider
