"""The search in JAX's order: the candidates JAX's pass tries, in the order it tries them.

Depth first over the candidates the open constraints offer (``candidates``):
first the preferred ones of every constraint in the candidate order, then the
others, then each open variable's default, as JAX's pass does, so that both
find the same answer; counting fuel as JAX's pass counts it (a splat tried
for a value that cannot be one is an attempt, though it does no work), and
within a budget that grows with the kernel (``guided_budget``). Below a
decision only the constraints whose variables just changed are asked again
(``_Scan``): each decision costs the same in a kernel of ten blocks or a
thousand.
"""

from __future__ import annotations

import enum
from bisect import bisect_left
from collections.abc import Iterable, Iterator
from itertools import chain
from typing import Final, Literal, cast

from jax._src.lib.mlir import ir

from smalto.constraints.language import Constraint, GmemTransfer, Role, Variable
from smalto.hw import layouts as hl
from smalto.hw.values import Const, Reg, Tmem
from smalto.program.view import Kind, Program
from smalto.solve import candidates as cands
from smalto.solve.evaluate import HOLDS, judge, simplify
from smalto.solve.fuel import Checkpoint, FuelExhausted, Stopped
from smalto.solve.propagation import DeepRecursion, Propagation, Reason

# Attempts the JAX-ordered search may take before the domain search takes over,
# beyond one per variable left open by the propagation before the first
# decision (see ``Solver.guided_budget``). Every corpus kernel JAX solves needs
# under 100 in all. A splat tried for a value that cannot be one (a doomed
# candidate) does not count against it: it does no work (``JaxOrderSearch._search``).
GUIDED_BUDGET = 1_000
# Attempts per open variable: one for its value, one for a candidate that fails.
ATTEMPTS_PER_VARIABLE = 2


class _Unknown(enum.Enum):
    """A default value not made yet (an enum member, so that ``is`` narrows its type)."""

    UNKNOWN = 0


_UNKNOWN: Final = _Unknown.UNKNOWN


class _Pass:
    """What one decision's scan knows of one pass over the candidate order.

    The scan makes two passes: one for preferred candidates, then one for the
    others (see ``JaxOrderSearch._candidates``). ``pending``: positions before
    ``frontier`` to ask; every other position before ``frontier`` is known to
    offer none of the pass's kind. ``hits``: the positions asked here that
    offered some, in order. ``at``: how far into ``pending`` the pass is (-1
    before); ``full_at``: the position it is at past the frontier (-1 before).
    """

    __slots__ = ("pending", "frontier", "hits", "at", "full_at")

    def __init__(self, pending: list[int], frontier: int) -> None:
        self.pending = pending
        self.frontier = frontier
        self.hits: list[int] = []
        self.at = -1
        self.full_at = -1

    def below(self) -> tuple[list[int], int]:
        """For a decision on the candidate just offered: positions to ask, and its frontier.

        The positions that offered candidates here (the one just offered
        included) and those still pending: the decision below asks them
        again. Past the pass's position, nothing is known yet (a pass not
        started yet hands down what it knew).
        """
        if self.full_at < 0:
            return self.hits + self.pending[self.at + 1 :], self.frontier
        return self.hits, self.full_at + 1


# A candidate as the scan dedups it: (slot, value), or, for a doomed one
# (``JaxOrderSearch._offer``), a number (``JaxOrderSearch._doomed_key``).
_Key = tuple[int, Const] | int
# A constraint's candidates: (variable, value) pairs, preferred ones, then the
# others; and, where each of the others is doomed, their keys (else None).
_Offer = tuple[list[tuple[int, Const]], list[tuple[int, Const]], "tuple[int, ...] | None"]


class _Scan:
    """One decision's scan for candidates, and what the decisions below it inherit.

    ``preferred`` and ``other``: what each pass knows (``_Pass``).
    ``doomed_at`` and ``doomed_keys``: the positions before the other pass's
    frontier, not asked here, known to offer only doomed candidates
    (``JaxOrderSearch._offer``), in order, and the keys of those
    (``JaxOrderSearch._doomed_key``); the other pass counts them without asking
    (``JaxOrderSearch._count_doomed``), and ``counted`` says how many of them it has.
    ``found``: the positions of that kind the other pass asked here, with their keys.
    """

    __slots__ = ("preferred", "other", "doomed_at", "doomed_keys", "counted", "found")

    def __init__(
        self,
        preferred: _Pass,
        other: _Pass,
        doomed_at: list[int],
        doomed_keys: list[tuple[int, ...]],
    ) -> None:
        self.preferred = preferred
        self.other = other
        self.doomed_at = doomed_at
        self.doomed_keys = doomed_keys
        self.counted = 0
        self.found: list[tuple[int, tuple[int, ...]]] = []

    @staticmethod
    def first() -> _Scan:
        return _Scan(_Pass([], 0), _Pass([], 0), [], [])

    def probe(self) -> _Scan:
        """A copy of what the scan knows, to scan again without moving this one."""
        return _Scan(
            _Pass(list(self.preferred.pending), self.preferred.frontier),
            _Pass(list(self.other.pending), self.other.frontier),
            self.doomed_at,
            self.doomed_keys,
        )


class JaxOrderSearch:
    """The search in JAX's order over a propagated state (see the module's doc).

    ``state``: the one propagation state of the system (``Propagation``), which
    this search and the complete search share: each decision is made on it, and
    undone on it.
    """

    def __init__(self, state: Propagation, program: Program) -> None:
        self.state = state
        # The state's tables this search reads at every candidate, at hand (each is
        # made once, with the state, and changed in place, never replaced).
        self.value, self.slots_of = state.value, state.slots_of
        self.root, self.not_splat = state.root, state.not_splat
        self.fuel = state.fuel
        system = state.system
        variables = system.variables
        tmem = Kind.TMEM
        self.tmem_defaults = [
            self._tmem_default(v, program) if v.kind == tmem else None for v in variables
        ]
        # Per variable, its default value (``cands.default_value``), made when first asked.
        self.defaults: list[Const | _Unknown | None] = [_UNKNOWN] * len(variables)
        # Per constraint, its candidates last asked for (``_offer_now``), with
        # the values of its variables then.
        self.offers: dict[int, tuple[tuple[Const | None, ...], _Offer]] = {}
        # Numbers for the doomed candidates (``_doomed_key``).
        self.doomed_keys: dict[tuple[int, Const], int] = {}
        # The lowering requirements the answer it found broke, with the value it gave
        # each one's register variable (``_broken_requirements``; empty where it found
        # none, or one that lowers).
        self.answer_breaks: list[tuple[Constraint, Const]] = []

    def run(self, budget: int, checkpoint: Checkpoint | None = None) -> bool | None:
        """The search from the propagated root, within ``budget`` attempts of work: True
        where it finds an answer that lowers, None where the complete search must decide
        (the state is then back at the root), or where ``checkpoint`` stopped it."""
        state, fuel = self.state, self.fuel
        fuel.start_in_jax_order(budget, checkpoint)
        with DeepRecursion(state):
            try:
                if self._search():
                    self.answer_breaks = self._broken_requirements()
                    if not self.answer_breaks:
                        return True
            except FuelExhausted:
                if fuel.total <= budget:
                    raise
            except Stopped:
                pass
        state.undo(state.root_mark)
        return None

    @staticmethod
    def _tmem_default(v: Variable, program: Program) -> Tmem | None:
        """An allocation's own TMEM layout, the default for its result."""
        if v.kind != Kind.TMEM or v.key.role != Role.RESULT:
            return None
        op = program.ops[v.key.op]
        if op.name != "mosaic_gpu.tmem_alloc":
            return None
        attrs = op.operation.attributes
        collective = "collective" in attrs and bool(ir.BoolAttr(attrs["collective"]).value)
        try:
            return hl.tmem_for_shape(v.shape, collective, 1)
        except ValueError:
            return None

    def guided_budget(self) -> int:
        """The attempts the search in JAX's order gets: it grows with the kernel.

        A search that never backtracks takes one attempt per variable the
        propagation left open; a fixed budget would make large kernels (an
        unrolled loop of a thousand blocks) fall to the complete search,
        which redoes the work and may pick another answer than JAX's.
        """
        return GUIDED_BUDGET + ATTEMPTS_PER_VARIABLE * self.state.unassigned

    def _broken_requirements(self) -> list[tuple[Constraint, Const]]:
        """The requirements the assignment found in JAX's order breaks, with the
        value it gives each one's register variable (requirements it judged as
        holding, since JAX's own answers break them)."""
        state = self.state
        lookup = state.lookup
        broken: list[tuple[Constraint, Const]] = []
        for ci in state.complete_only:
            c = cast(GmemTransfer, state.constraints[ci])  # what ``complete_only`` holds
            if judge(c, lookup, True) is not HOLDS:
                # Every variable has its value here: the register side is one.
                broken.append((c, cast(Const, simplify(c.reg, lookup))))
        return broken

    def _search(self, first_open: int = 0, first_unset: int = 0, scan: _Scan | None = None) -> bool:
        state = self.state
        if state.unassigned == 0:
            # Everything has a value; an expression that could not be
            # simplified (an unsupported reshape) still counts as a failure.
            return not any(state.open)
        # Deeper in the search constraints only close and variables only get
        # values (undoing restores them on the way back up): what is closed or
        # set here stays so below, and the scans for candidates start past it,
        # instead of from the start at every decision.
        order, is_open = state.candidate_order, state.open
        while first_open < len(order) and not is_open[order[first_open]]:
            first_open += 1
        root, value_of, n = state.root, state.value, len(state.root)
        while first_unset < n and value_of[root[first_unset]] is not None:
            first_unset += 1
        if scan is None:
            scan = _Scan.first()
        not_splat, fuel = state.not_splat, self.fuel
        for var, value, source in self._candidates(first_open, first_unset, scan):
            if fuel.work >= fuel.work_limit:
                fuel.out_of_work(state.open_variables)
            if fuel.spent >= fuel.limit:
                fuel.past_jaxs_fuel(state.complete, state.open_variables)
            if not state.valid_for(var, value):
                continue
            fuel.spent += 1
            if root[var] in not_splat and self._splat_for_non_splat(var, value):
                # JAX's pass tries it, and spends fuel on it, at every
                # decision until the variable has a value: in a kernel of
                # many loops fed by one splat, the loops not reached yet
                # offer it at each decision (attempts quadratic in the
                # kernel). Counted, not made, and not held against the
                # budget (most are counted in bulk: ``_candidates``).
                continue
            fuel.work += 1
            mark = len(state.trail)
            queue: list[int] = []
            if state.assign(var, value, queue):
                state.reason[state.root[var]] = Reason("chosen", source)
                if state.propagate(queue):
                    if state.unassigned == 0:
                        # The decision below would find every variable set, and answer
                        # at once: answered here, without the scan it would inherit.
                        if not any(state.open):
                            return True
                    elif self._search(first_open, first_unset, self._child_scan(scan, mark)):
                        return True
            state.undo(mark)
        return False

    def _splat_for_non_splat(self, var: int, value: Const) -> bool:
        """Whether a candidate for a variable that cannot be a splat is a splat.

        Such a candidate fails at once, whatever else has a value: the
        variable's not-splat requirement fails on it (it is open while the
        variable has no value; once it has one, the candidate contradicts
        it). ``var``'s slot is in ``not_splat``.
        """
        return type(value) is Reg and value.is_splat

    def _offer(self, ci: int) -> _Offer:
        """Constraint ``ci``'s candidates now, preferred ones apart, and whether all the
        others are doomed: splats for values that cannot be one, each valid for
        its variable (so JAX's pass tries each, and spends fuel on it)."""
        state = self.state
        preferred: list[tuple[int, Const]] = []
        other: list[tuple[int, Const]] = []
        for var, value in cands.from_constraint(
            state.constraints[ci],
            state.lookup,
            state.system.variables,
            state.divides_of,
            state.arch,
        ):
            (preferred if cands.is_preferred(value) else other).append((var, value))
        root, doomed = state.root, None
        if other and all(self._is_doomed(var, value) for var, value in other):
            doomed = tuple(self._doomed_key(root[var], value) for var, value in other)
        return preferred, other, doomed

    def _doomed_key(self, slot: int, value: Const) -> int:
        """A number for a doomed candidate, the same for equal ones: counting
        thousands of them per decision hashes numbers, not layouts."""
        return self.doomed_keys.setdefault((slot, value), len(self.doomed_keys))

    def _tried_key(self, slot: int, var: int, value: Const) -> _Key:
        """How the scan knows a candidate it tried: a doomed one by its number."""
        if slot in self.not_splat and self._is_doomed(var, value):
            return self._doomed_key(slot, value)
        return (slot, value)

    def _is_doomed(self, var: int, value: Const) -> bool:
        return (
            self.root[var] in self.not_splat
            and self._splat_for_non_splat(var, value)
            and self.state.valid_for(var, value)
        )

    def _offer_now(self, ci: int) -> _Offer:
        """``_offer(ci)``, made again only when one of the constraint's variables changed.

        A constraint's candidates depend on its variables' values alone: an
        offer is kept with those values, and holds while they are the same.
        """
        value_of = self.value
        now = tuple(map(value_of.__getitem__, self.slots_of[ci]))
        kept = self.offers.get(ci)
        if kept is not None and kept[0] == now:
            return kept[1]
        offer = self._offer(ci)
        self.offers[ci] = (now, offer)
        return offer

    def _count_doomed(self, keys: Iterable[int], tried: set[_Key]) -> None:
        """Spends fuel on doomed candidates (``_offer``) as trying each would, without trying.

        Trying them one by one would check the fuel before each, raising at
        the first one met with none left: the same as raising here when they
        need more than is left. Those already tried at this decision are not
        tried again.
        """
        if self.fuel.past_jaxs:
            return  # nothing is counted any more (``Fuel.past_jaxs_fuel``)
        new = dict.fromkeys(key for key in keys if key not in tried)
        if not new:
            return
        state = self.state
        self.fuel.spend_on_doomed(len(new), state.complete, state.open_variables)
        tried.update(new)

    def _count_doomed_before(self, scan: _Scan, position: int, tried: set[_Key]) -> None:
        """Counts the inherited doomed positions before ``position`` not counted yet.

        They are open: a constraint closes only once one of its variables
        got a value, and then it is no longer known as doomed below.
        """
        if self.fuel.past_jaxs:
            return  # nothing is counted any more (``Fuel.past_jaxs_fuel``)
        at = scan.counted
        end = bisect_left(scan.doomed_at, position, at)
        if end > at:
            scan.counted = end
            self._count_doomed(chain.from_iterable(scan.doomed_keys[at:end]), tried)

    def _child_scan(self, scan: _Scan, mark: int) -> _Scan:
        """Where the scan for candidates below the current decision has to look.

        Below the decision, the constraints before each pass's frontier offer
        what they offered here, except those whose variables got values since
        ``mark`` (the decision and what it forced): each pass's ``pending``
        lists those and the ones that offered candidates of its kind here;
        the rest are passed over without being asked. The doomed positions
        known here stay known below (those before the other pass's frontier
        there).
        """
        state = self.state
        preferred, preferred_frontier = scan.preferred.below()
        other, other_frontier = scan.other.below()
        changed: set[int] = set()
        position_of, watchers, trail = state.position, state.watchers, state.trail
        for k in range(mark, len(trail)):
            is_value, slot = trail[k]
            if is_value:
                for ci in watchers[slot]:
                    p = position_of[ci]
                    if p >= 0:
                        changed.add(p)
        # What is known doomed here, below the other pass's frontier there,
        # but the changed positions (asked again there).
        cut = bisect_left(scan.doomed_at, other_frontier)
        doomed_at, doomed_keys = scan.doomed_at[:cut], scan.doomed_keys[:cut]
        for p, keys in scan.found:
            if p < other_frontier:
                i = bisect_left(doomed_at, p)
                doomed_at.insert(i, p)
                doomed_keys.insert(i, keys)
        for p in changed:
            i = bisect_left(doomed_at, p)
            if i < len(doomed_at) and doomed_at[i] == p:
                del doomed_at[i], doomed_keys[i]
        return _Scan(
            _Pass(_merged(preferred, changed, preferred_frontier), preferred_frontier),
            _Pass(_merged(other, changed, other_frontier), other_frontier),
            doomed_at,
            doomed_keys,
        )

    def _candidates(
        self, first_open: int, first_unset: int, scan: _Scan
    ) -> Iterator[tuple[int, Const, int | None]]:
        """(variable, value, the constraint it came from or None for a default), in order.

        The order is JAX's: the preferred candidates (see ``cands.is_preferred``)
        of the open constraints, in the candidate order; then their other
        candidates, in the same order; then each open variable's default.
        Constraints before ``first_open`` in the candidate order are closed and
        variables before ``first_unset`` have values: neither offers anything.

        A constraint's candidates depend only on the values of its own
        variables. So each of the two passes over the constraints asks, of
        those before its frontier, only the ones its ``pending`` lists (the
        others offer no candidate of its kind, as known from the decisions
        above); from the frontier on, each open one. ``scan`` records, as the
        scan goes, what the decision below each candidate needs to know
        (``_child_scan``). Without this, every decision would walk past every
        open constraint that offers only a splat, one per block not yet
        reached in an unrolled kernel: a cost quadratic in the kernel's size.

        The other pass does not yield doomed candidates (``_offer``): it
        spends their fuel where they come (``_count_doomed``). JAX's pass
        tries them at every decision until their variables have values: in a
        kernel of many loops fed by one splat, each loop not reached yet
        offers one, attempts quadratic in the kernel. Positions known to
        offer only such are not even asked (``scan.doomed_at``).
        """
        state = self.state
        tried: set[_Key] = set()
        root = state.root
        order, is_open = state.candidate_order, state.open
        offer_of = self._offer_now
        # Literal kinds, so that ``offer[kind]`` types as the list of candidates.
        kinds: tuple[Literal[0], Literal[1]] = (0, 1)
        for kind in kinds:
            this_pass = scan.other if kind else scan.preferred
            hits = this_pass.hits
            for p, i in _positions(this_pass, first_open, len(order)):
                ci = order[p]
                if not is_open[ci]:
                    continue
                offer = offer_of(ci)
                kept = offer[kind]
                if not kept:
                    continue
                if kind:
                    self._count_doomed_before(scan, p, tried)
                if i < 0:
                    this_pass.full_at = p
                else:
                    this_pass.at = i
                if kind and offer[2] is not None:
                    scan.found.append((p, offer[2]))
                    self._count_doomed(offer[2], tried)
                    continue
                hits.append(p)
                for var, value in kept:
                    key = self._tried_key(root[var], var, value) if kind else (root[var], value)
                    if key not in tried:
                        tried.add(key)
                        yield var, value, ci
            if kind:
                self._count_doomed_before(scan, len(order), tried)
            # Every constraint has been asked or is known to offer no candidate
            # of the pass's kind: ``hits`` is complete.
            this_pass.full_at = len(order)
        variables = state.system.variables
        defaults, value_of = self.defaults, state.value
        for k in range(first_unset, len(variables)):
            slot = root[k]
            if value_of[slot] is None:
                default = defaults[k]
                if default is _UNKNOWN:
                    # A variable's default depends on it alone: made once.
                    default = defaults[k] = cands.default_value(variables[k], self.tmem_defaults[k])
                if default is not None:
                    key = self._tried_key(slot, k, default)
                    if key not in tried:
                        tried.add(key)
                        yield k, default, None


def _positions(state: _Pass, first_open: int, end: int) -> Iterator[tuple[int, int]]:
    """The positions a pass asks, in order, each with its index in ``pending`` (-1
    past the frontier); ``state.at`` is set past ``pending`` once those are done."""
    yield from zip(state.pending, range(len(state.pending)), strict=True)
    state.at = len(state.pending)
    for p in range(max(state.frontier, first_open), end):
        yield p, -1


def _merged(offered: list[int], changed: set[int], frontier: int) -> list[int]:
    """The positions a pass below a decision asks: those that offered, and the changed ones
    before its frontier (the others it asks anyway), in order."""
    positions = set(offered)
    positions.update(p for p in changed if p < frontier)
    return sorted(positions)
