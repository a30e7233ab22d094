"""The search in JAX's order: what tracks JAX 0.12.0.1's search, function for function.

JAX's pass searches in ``find_assignments_for`` and ``conjure_assignment``
(``jax/experimental/mosaic/gpu/layout_inference.py``): reduce the system,
then, depth first, try each conjured assignment in turn, spending one fuel
per valid one, until every unknown has a value. Each function below is headed
with the JAX function it ports, and reads as it does, so that a change to
JAX's search is ported here (and, where what a constraint offers changes, into
``candidates``; where which candidates fail at once changes, into the scan's
``doomed``): ``docs/porting_jax.md``.

Where smalto differs, it is for speed, with the same candidates, the same
order and the same fuel: the reduction is the propagation (``Propagation``:
incremental, on a trail, undone on backtracking); the candidates come from
an incremental scan (``candidate_scan.CandidateScan``: its small interface is
all this module sees of it); a splat tried for a value that cannot be one
is counted, not made. The budget and the checkpoint (``Fuel``) are smalto's:
where they stop the search is decided by the searches that call this one
(``search``).
"""

from __future__ import annotations

from collections.abc import Iterator

from smalto.program.view import Program
from smalto.solve.candidate_scan import Candidate, CandidateScan, Scan, Tried
from smalto.solve.fuel import AtCheckpoint, FuelExhausted
from smalto.solve.propagation import DeepRecursion, Propagation, Reason


class JaxOrderSearch:
    """The search in JAX's order over a propagated state (see the module's doc).

    ``state``: the propagation state of the system (``Propagation``), which
    this search and the complete search share: each decision is made on it,
    and undone on it. ``scan``: where the candidates come from.
    """

    # The candidate scan a search makes (a test may watch it by a subclass).
    scan_type: type[CandidateScan] = CandidateScan

    def __init__(self, state: Propagation, program: Program) -> None:
        self.state = state
        self.fuel = state.fuel
        self.scan = self.scan_type(state, program)

    def run(self, budget: int, checkpoint: int | None = None) -> bool:
        """``find_assignments_for`` from the propagated root, within ``budget`` attempts of
        work: True where it finds an assignment (the state holds it); False, back at the
        root, where it finds none or spends the budget. Raises ``AtCheckpoint`` where the
        work reaches ``checkpoint`` (back at the root), ``FuelExhausted`` where JAX's
        fuel runs out first (``Fuel.past_jaxs_fuel``)."""
        state, fuel = self.state, self.fuel
        fuel.start_in_jax_order(budget, checkpoint)
        with DeepRecursion(state):
            try:
                if self.find_assignments_for():
                    return True
            except FuelExhausted:
                if fuel.total <= budget:
                    raise
            except AtCheckpoint:
                state.undo(state.root_mark)
                raise
        state.undo(state.root_mark)
        return False

    # Ports ``find_assignments_for``.
    def find_assignments_for(
        self, first_open: int = 0, first_unset: int = 0, scan: Scan | None = None
    ) -> bool:
        """Whether an assignment of every open variable, made in JAX's order, satisfies the
        system (the state then holds it; otherwise as it came).

        JAX's reduction of the system is the propagation, already made where
        this is called (at the root, and after each assignment below).
        ``first_open``, ``first_unset`` and ``scan``: what the decisions above
        know closed, set and offered (``conjure_assignment``).
        """
        state = self.state
        if state.unassigned == 0:
            # Every unknown has its value: satisfied, unless an expression could not
            # be reduced (an unsupported reshape), which still counts as a failure.
            return not any(state.open)
        # Deeper in the search constraints only close and variables only get values
        # (undone on the way back up): the scans for candidates start past what is
        # closed or set here, instead of from the start at every decision.
        order, is_open = state.candidate_order, state.open
        while first_open < len(order) and not is_open[order[first_open]]:
            first_open += 1
        root, value_of, n = state.root, state.value, len(state.root)
        while first_unset < n and value_of[root[first_unset]] is not None:
            first_unset += 1
        if scan is None:
            scan = self.scan.first()
        fuel = self.fuel
        for var, value, source in self.conjure_assignment(scan, first_open, first_unset):
            # Out of fuel: JAX's pass raises here (smalto's budget is met here too).
            if fuel.work >= fuel.work_limit:
                fuel.out_of_work(state.open_variables)
            if fuel.spent >= fuel.limit:
                fuel.past_jaxs_fuel(state.complete, state.open_variables)
            if not state.valid_for(var, value):
                continue
            # Trying a valid assignment spends fuel.
            fuel.spent += 1
            if self.scan.doomed(var, value):
                continue  # it fails at once: counted, not made (``CandidateScan.doomed``)
            fuel.work += 1
            mark = len(state.trail)
            queue: list[int] = []
            # The assignment joined to the system, reduced; then the search below it.
            if state.assign(var, value, queue):
                state.reason[root[var]] = Reason("chosen", source)
                if state.propagate(queue):
                    if state.unassigned == 0:
                        # The decision below would find every variable set, and answer
                        # at once: answered here, without the scan it would inherit.
                        if not any(state.open):
                            return True
                    elif self.find_assignments_for(
                        first_open, first_unset, self.scan.below(scan, mark)
                    ):
                        return True
            state.undo(mark)
        return False

    # Ports ``conjure_assignment``.
    def conjure_assignment(
        self, scan: Scan, first_open: int, first_unset: int
    ) -> Iterator[Candidate]:
        """The assignments to try at one decision, in JAX's order: (variable, value, the
        constraint it came from, or None for a default).

        First what the constraints offer (``_extract_variable_assignments_from_constraints``,
        here ``candidates.from_constraint`` over the candidate order), the
        preferred ones at once and the low-priority ones (splat and strided
        register layouts) after all of them; then a default for each unknown
        variable. An assignment offered twice at one decision is tried once.
        """
        tried: Tried = set()
        yield from self.scan.offered(scan, first_open, tried, low_priority=False)
        yield from self.scan.offered(scan, first_open, tried, low_priority=True)
        yield from self.scan.defaults(first_unset, tried)
