"""Finding a small set of requirements that cannot hold together: an unsatisfiable core.

A core is minimal when dropping any one of its requirements makes the rest
satisfiable; it is shrunk from the propagation's explanation of the conflict
when there is one, else from the requirements connected to the values
involved, by dropping chunks and then single requirements while the rest
stays unsatisfiable (the widest search decides: a core is what no layout the
lowering accepts satisfies). Shrinking stops where its fuel runs out (``CORE_WORK``:
the questions asked and the search attempts they made, counted, never a clock, so
that the core is the same on a busy machine as on an idle one); the core is then
small but not known minimal.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

from smalto.basics.records import value_class
from smalto.constraints.language import Element, System, element_variables, fixed_layout
from smalto.diagnose.subsystem import subsystem
from smalto.program.view import Program
from smalto.solve.complete import DomainsMade
from smalto.solve.decision import Decision, Exhausted, Solved
from smalto.solve.for_diagnosis import for_diagnosis
from smalto.solve.options import SolveOptions

# The work a core's shrinking may do: each question counts one, and each attempt its
# search made one more (a question's own search is bounded apart, ``CORE_FUEL``). Past
# it the core is smaller but not known minimal. Every core of the corpus's refusals and
# of ``tests/unsat`` takes under 2 000 (the most: 35 questions, 1 803 attempts, 0.26 s);
# this bound, ten times that, stops a search at that pace after about 3 seconds, where
# the wall-clock deadline it replaces stopped one on an idle machine.
CORE_WORK = 20_000


@value_class()
class CoreFuel:
    """The work a core's shrinking did (``spent``) and may do (``limit``)."""

    limit: int
    spent: int = 0

    @property
    def out(self) -> bool:
        return self.spent >= self.limit


def _satisfiable(
    system: System,
    elements: Sequence[Element],
    program: Program,
    options: SolveOptions,
    made: DomainsMade | None = None,
    fuel: CoreFuel | None = None,
) -> bool | None:
    """Whether ``elements`` hold together (None where the search ran out of fuel);
    ``made``: the domains of the searches before, shared (``DomainsMade``); ``fuel``:
    where the question and its search's attempts are counted."""
    # The widest search: a core is what no layout the lowering accepts satisfies.
    decision = for_diagnosis(options).widest(subsystem(system, elements), program, made)
    if fuel is not None:
        fuel.spent += 1 + _attempts(decision)
    if isinstance(decision, Exhausted):
        return None
    return isinstance(decision, Solved)


def _attempts(decision: Decision) -> int:
    """The attempts the search that made ``decision`` spent."""
    if isinstance(decision, Exhausted):
        return decision.spent
    state = decision.state if isinstance(decision, Solved) else decision.proof
    return state.fuel.spent


def core_satisfiable(
    system: System, elements: Sequence[Element], program: Program, options: SolveOptions
) -> bool:
    """Whether these requirements alone hold together (under the widest search)."""
    return _satisfiable(system, elements, program, options) is True


def minimal_core(
    elements: list[Element],
    is_unsat: Callable[[list[Element]], bool],
    fuel: CoreFuel,
) -> tuple[list[Element], bool]:
    """Drops chunks, then single elements, while the rest stays unsatisfiable
    (``is_unsat`` spends ``fuel``).

    Returns the core and whether it is minimal (every single element was tried).
    """
    core = list(elements)
    chunk = max(1, len(core) // 2)
    while True:
        i = 0
        while i < len(core):
            if fuel.out:
                return core, False
            trial = core[:i] + core[i + chunk :]
            if trial and is_unsat(trial):
                core = trial
            else:
                i += chunk
        if chunk == 1:
            return core, True
        chunk = max(1, chunk // 2)


def _relevant(system: System, elements: list[Element], seeds: set[int]) -> list[Element]:
    """The elements connected to ``seeds`` through shared variables."""
    touching: dict[int, list[int]] = {}
    element_vars = []
    for i, e in enumerate(elements):
        vs = element_variables(e)
        element_vars.append(vs)
        for v in vs:
            touching.setdefault(v, []).append(i)
    # Equalities join variables; everything connected may matter.
    seen_vars, stack, picked = set(seeds), list(seeds), set()
    while stack:
        for i in touching.get(stack.pop(), ()):
            if i not in picked:
                picked.add(i)
                for v in element_vars[i]:
                    if v not in seen_vars:
                        seen_vars.add(v)
                        stack.append(v)
    return [e for i, e in enumerate(elements) if i in picked]


def _in_order(system: System) -> list[Element]:
    """The system's requirements in the order the search for a core drops them: the
    layouts ops impose outright first (fixed, or the one option allowed: where solving
    starts), in the order of the ops that impose them, then the constraints.

    Which minimal core the search finds depends on this order, so that a rule may state
    a layout either way and get the same core."""
    imposed = [c for c in system.constraints if fixed_layout(c) is not None]
    if not imposed:
        return [*system.fixed, *system.constraints]  # (as the rules state them: ``one_of``)
    # A stable sort: the fixed layouts are in the order of their ops already.
    first = sorted([*system.fixed, *imposed], key=lambda e: e.origin)
    return [*first, *(c for c in system.constraints if fixed_layout(c) is None)]


def find_core(
    program: Program,
    system: System,
    options: SolveOptions,
    seeds: set[int],
    explanation: list[Element] | None = None,
) -> tuple[list[Element], bool]:
    """A minimal core, starting from the propagation's explanation when there is one."""
    elements = _in_order(system)
    # Each question is about a few of the same requirements: their values' domains are
    # made once for all of them.
    made: DomainsMade = {}
    fuel = CoreFuel(CORE_WORK)
    # The cuts found to hold together, by their requirements (each one object): a cut of
    # one of them holds too (fewer requirements), and is not asked again.
    held: list[frozenset[int]] = []

    def unsat(subset: list[Element]) -> bool:
        cut = frozenset(map(id, subset))
        if any(cut <= before for before in held):
            return False
        answer = _satisfiable(system, subset, program, options, made, fuel)
        if answer is True:
            held.append(cut)
        return answer is False

    if explanation and unsat(explanation):
        return minimal_core(explanation, unsat, fuel)
    if seeds:
        relevant = _relevant(system, elements, seeds)
        if relevant and unsat(relevant):
            elements = relevant
    return minimal_core(elements, unsat, fuel)
