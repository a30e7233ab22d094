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

import sys

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
        queue: list[int] = []
        for fixed in self.system.fixed:
            if not self._assign(fixed.var, fixed.value, queue):
                self.conflict = Conflict(None, fixed=fixed, variable=fixed.var, value=fixed.value)
                return False
            self.reason[self.root[fixed.var]] = Reason("fixed", fixed=fixed)
        queue.extend(range(len(self.constraints)))
        if not self._propagate(queue):
            return False
        limit = sys.getrecursionlimit()
        sys.setrecursionlimit(max(limit, 10 * len(self.shapes) + 1000))
        root_mark = len(self.trail)
        self.searching = True
        try:
            budget = self.guided_budget()
            self.limit = self.fuel
            self.work_limit = budget
            try:
                if guided and not self.widened and self._search():
                    self.jax_answer_breaks = self._broken_requirements()
                    if not self.jax_answer_breaks:
                        return True
            except FuelExhausted:
                if self.fuel <= budget:
                    raise
            self._undo(root_mark)
            # The complete search is smalto's own: its fuel goes on work
            # (the splats JAX's order spent fuel on did none).
            self.spent = self.work
            self.limit = self.fuel
            self.work_limit = sys.maxsize
            self.conflict = None
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
        finally:
            sys.setrecursionlimit(limit)


def decide(system: System, program: Program, arch: tuple[int, int], fuel: int) -> Solver:
    """The solver that decided ``system``: solved, or the widest that proved it unsatisfiable.

    First JAX's order and the complete search over JAX's rules (so smalto
    answers as JAX does wherever JAX's answer lowers); where they find no
    assignment that lowers, a widened complete search (``Solver(widened=True)``)
    over everything the lowering accepts: relayouts between producer and
    consumer, layouts no rule of JAX's offers. Raises ``FuelExhausted`` when
    ``fuel`` runs out first.
    """
    solver = Solver(system, program, arch, fuel)
    solver.solved = solver.solve()
    if solver.solved:
        return solver
    wider = Solver(system, program, arch, max(fuel - solver.spent, 1), widened=True)
    wider.solved = wider.solve(guided=False)
    wider.jax_answer_breaks = solver.jax_answer_breaks
    return wider
