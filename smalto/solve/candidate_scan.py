"""The speed of the search in JAX's order: its candidates found without rescanning.

JAX's pass asks every open constraint for candidates at every decision
(``conjure_assignment``); ``jax_search`` does the same in the same order, but
through this module's small interface (``CandidateScan``): a decision's scan
(``first``, ``below``), the candidates the open constraints offer, preferred or
low-priority (``offered``), and the open variables' defaults (``defaults``).
Below a decision only the constraints whose variables just changed are asked
again (``_Scan``): each decision costs the same in a kernel of ten blocks or a
thousand. A splat offered for a value that cannot be one (a doomed candidate)
is counted, as JAX's pass spends fuel on it, without being made
(``doomed``, ``_count_doomed``). Nothing here decides which candidate comes
when: that is ``jax_search``'s, as JAX's.
"""

from __future__ import annotations

import enum
from bisect import bisect_left
from collections.abc import Iterable, Iterator
from itertools import chain
from typing import Final, Literal

from jax._src.lib.mlir import ir

from smalto.constraints.language import Role, Variable
from smalto.hw import layouts as hl
from smalto.hw.values import Const, Reg, Tmem
from smalto.program.view import Kind, Program
from smalto.solve import candidates as cands
from smalto.solve.propagation import Propagation


class _Unknown(enum.Enum):
    """A default value not made yet (an enum member, so that ``is`` narrows its type)."""

    UNKNOWN = 0


_UNKNOWN: Final = _Unknown.UNKNOWN


class _Pass:
    """What one decision's scan knows of one pass over the candidate order.

    The scan makes two passes: one for preferred candidates, then one for the
    others (see ``CandidateScan.offered``). ``pending``: positions before
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
# (``CandidateScan._offer``), a number (``CandidateScan._doomed_key``).
_Key = tuple[int, Const] | int
# A constraint's candidates: (variable, value) pairs, preferred ones, then the
# others; and, where each of the others is doomed, their keys (else None).
_Offer = tuple[list[tuple[int, Const]], list[tuple[int, Const]], "tuple[int, ...] | None"]


class _Scan:
    """One decision's scan for candidates, and what the decisions below it inherit.

    ``preferred`` and ``other``: what each pass knows (``_Pass``).
    ``doomed_at`` and ``doomed_keys``: the positions before the other pass's
    frontier, not asked here, known to offer only doomed candidates
    (``CandidateScan._offer``), in order, and the keys of those
    (``CandidateScan._doomed_key``); the other pass counts them without asking
    (``CandidateScan._count_doomed``), and ``counted`` says how many of them it has.
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


# What one decision's scan knows, handed from a decision to the ones below it.
Scan = _Scan
# A candidate as JAX's order yields it: (variable, value, the constraint it came from,
# or None for a variable's default).
Candidate = tuple[int, Const, int | None]
# The candidates one decision has tried (``CandidateScan.offered``, ``defaults``).
Tried = set[_Key]


class CandidateScan:
    """The candidates of the decisions of one search in JAX's order, found incrementally.

    ``state``: the propagation state the search decides on. The interface:
    ``first()`` and ``below(scan, mark)`` make a decision's scan;
    ``offered(scan, first_open, tried, low_priority)`` yields the candidates the
    open constraints offer (preferred ones, or the low-priority rest, each
    pass in the candidate order); ``defaults(first_unset, tried)`` yields each
    open variable's default; ``doomed(var, value)`` says whether a candidate is
    counted without being made. ``tried``: what the decision has yielded, by
    key: an assignment offered twice at one decision is yielded once.
    """

    def __init__(self, state: Propagation, program: Program) -> None:
        self.state = state
        # The state's tables read at every candidate, at hand (each is made once,
        # with the state, and changed in place, never replaced).
        self.value, self.slots_of = state.value, state.slots_of
        self.root, self.not_splat = state.root, state.not_splat
        self.fuel = state.fuel
        variables = state.system.variables
        tmem = Kind.TMEM
        self.tmem_defaults = [
            self._tmem_default(v, program) if v.kind == tmem else None for v in variables
        ]
        # Per variable, its default value (``cands.default_value``), made when first asked.
        self.defaults_made: list[Const | _Unknown | None] = [_UNKNOWN] * len(variables)
        # Per constraint, its candidates last asked for (``_offer_now``), with
        # the values of its variables then.
        self.offers: dict[int, tuple[tuple[Const | None, ...], _Offer]] = {}
        # Numbers for the doomed candidates (``_doomed_key``).
        self.doomed_keys: dict[tuple[int, Const], int] = {}

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

    # --- the interface ---------------------------------------------------------------

    @staticmethod
    def first() -> _Scan:
        """The scan of the first decision: nothing known yet."""
        return _Scan.first()

    def doomed(self, var: int, value: Const) -> bool:
        """Whether a valid candidate fails at once without being made: a splat for a value
        that cannot be one (its not-splat requirement fails on it, whatever else
        has a value). JAX's pass makes it and spends fuel on it; the search counts
        it (it does no work)."""
        return self.root[var] in self.not_splat and self._splat_for_non_splat(var, value)

    def below(self, scan: _Scan, mark: int) -> _Scan:
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

    def offered(
        self, scan: _Scan, first_open: int, tried: Tried, low_priority: bool
    ) -> Iterator[Candidate]:
        """The candidates of the open constraints of one kind (the preferred ones, see
        ``cands.is_preferred``; or the low-priority rest), in the candidate order.
        Constraints before ``first_open`` in the candidate order are closed.

        A constraint's candidates depend only on the values of its own
        variables. So each of the two passes over the constraints asks, of
        those before its frontier, only the ones its ``pending`` lists (the
        others offer no candidate of its kind, as known from the decisions
        above); from the frontier on, each open one. ``scan`` records, as the
        scan goes, what the decision below each candidate needs to know
        (``below``). Without this, every decision would walk past every
        open constraint that offers only a splat, one per block not yet
        reached in an unrolled kernel: a cost quadratic in the kernel's size.

        The low-priority pass does not yield doomed candidates (``_offer``): it
        spends their fuel where they come (``_count_doomed``). JAX's pass
        tries them at every decision until their variables have values: in a
        kernel of many loops fed by one splat, each loop not reached yet
        offers one, attempts quadratic in the kernel. Positions known to
        offer only such are not even asked (``scan.doomed_at``).
        """
        state = self.state
        root = self.root
        order, is_open = state.candidate_order, state.open
        offer_of = self._offer_now
        # A literal kind, so that ``offer[kind]`` types as the list of candidates.
        kind: Literal[0, 1] = 1 if low_priority else 0
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

    def defaults(self, first_unset: int, tried: Tried) -> Iterator[Candidate]:
        """Each open variable's default (``cands.default_value``), in the variables' order;
        variables before ``first_unset`` have values."""
        state = self.state
        variables = state.system.variables
        root, value_of, defaults = self.root, self.value, self.defaults_made
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

    # --- what the interface keeps -----------------------------------------------------

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

    def _count_doomed(self, keys: Iterable[int], tried: Tried) -> None:
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

    def _count_doomed_before(self, scan: _Scan, position: int, tried: Tried) -> None:
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
