"""The complete search: over finite domains, it finds an assignment or proves there is none.

Where the search in JAX's order finds nothing that lowers (within its budget,
or an answer that breaks a lowering requirement JAX's rules leave out), each
variable gets a finite domain (``domains``), and the search goes most
constrained variable first, over live values kept by forward checking (a
value that leaves a constraint failed, or open with all its variables set,
is dropped before it is tried), and part by part: variables no open
constraint links are solved apart, so a part without a solution fails the
search at once. A value's transfer checks at the root (each may ask the
lowering's transfer schedule) are judged only as far as the order of parts and
the next variable need, and for the rest when a value is tried: the same
search, with fewer questions.
"""

from __future__ import annotations

from collections.abc import Callable
from functools import partial
from typing import Any, cast

from smalto.constraints.language import (
    Constraint,
    GmemTransfer,
    SmemTransfer,
    TmemTransfer,
)
from smalto.hw.values import Const
from smalto.solve import domains
from smalto.solve.evaluate import FAILS, OPEN, Lookup, Verdict, judge_of
from smalto.solve.propagation import Conflict, DeepRecursion, Propagation, Reason

Judge = Callable[[Any, Lookup], Verdict]

# Domains shared by the searches of many small systems cut from one kernel (a
# diagnosis's minimal-core search): by the values a system mentions, the layouts offered
# beyond the named ones and whether the search is widened, then by a slot's type (what
# ``_prepare_domains`` calls ``alike``). A domain is a function of these alone.
DomainsMade = dict[tuple[object, ...], dict[tuple[object, ...], tuple[Const, ...]]]


class CompleteSearch:
    """The complete search over a propagated state (see the module's doc).

    ``state``: the one propagation state of the system (``Propagation``), shared
    with the search in JAX's order, from whose root this search starts.
    """

    def __init__(self, state: Propagation) -> None:
        self.state = state
        # Per slot, its finite domain (``_prepare_domains``).
        self.domains: dict[int, list[Const]] = {}
        # Per open slot, the values of its domain still possible (``_live_values``), save
        # for the transfer checks it had at the root, which are judged as needed
        # (``_transfers_at_root``): a value that fails them counts as not there.
        self.live: dict[int, list[Const]] = {}
        self._transfers_at_root: dict[int, list[tuple[Judge, Constraint]]] = {}
        # Per slot, those checks' verdict on each value judged so far (by identity: each
        # value is one object in the domains, ``_prepare_domains``).
        self._verdicts: dict[int, dict[int, bool]] = {}
        # Domains made by earlier searches, where the caller shares them (``DomainsMade``).
        self.made_before: DomainsMade | None = None

    def run(self, fuel: int) -> bool:
        """The complete search from the propagated root: an assignment, or the proof there is
        none (``state.conflict`` says why), within ``fuel`` attempts."""
        state = self.state
        state.fuel.start_complete(fuel)
        state.conflict = None
        with DeepRecursion(state):
            if not self._start_complete_phase():
                return False
            self._prepare_domains()
            for slot, values in self.domains.items():
                if not values and state.value[slot] is None:
                    # No value of its kind fits its shape at all (e.g. TMEM rows).
                    state.conflict = Conflict(None, variable=slot)
                    state.empty_slot = slot
                    return False
            return self._complete_search()

    def _start_complete_phase(self) -> bool:
        """Judges the complete-search-only requirements from now on, at the root.

        They held (and closed) in JAX's order; reopened here without a trail
        entry, since nothing undoes past the root from now on.
        """
        state = self.state
        state.complete = True
        for ci in state.complete_only:
            state.open[ci] = True
        return state.propagate(list(state.complete_only))

    def _prepare_domains(self) -> None:
        state = self.state
        mentioned = domains.constants_in(state.constraints, state.system.fixed)
        variables = state.system.variables
        extra = domains.wide_layouts(
            cast(GmemTransfer, state.constraints[ci]).bitwidth  # what ``complete_only`` holds
            for ci in state.complete_only
        )
        # Slots alike (kind, shape, element width, divisibility, the types whose
        # validity decides) have one domain: most values of a kernel share a few
        # types, so each domain is made once and copied (``close`` extends them apart).
        made: dict[tuple[object, ...], list[Const]] = {}
        # The domains earlier searches made for systems that mention the same values.
        before: dict[tuple[object, ...], tuple[Const, ...]] | None = None
        if self.made_before is not None:
            before = self.made_before.setdefault((tuple(mentioned), extra, state.widened), {})
        # One object per value, the root's included: the search compares values all the
        # time, and equal values that are one object compare without comparing layouts.
        canonical: dict[Const, Const] = {v: v for v in state.value if v is not None}
        self.domains = {}
        for slot, shapes in state.shapes.items():
            variable = variables[slot]
            multiple = state.divides.get(slot)
            alike = (
                variable.kind,
                variable.shape,
                variable.bitwidth,
                multiple,
                frozenset(shapes),
                frozenset(state.smem_types.get(slot, ())),
                frozenset(state.tmem_types.get(slot, ())),
            )
            values = made.get(alike)
            if values is None:
                made_now = before.get(alike) if before is not None else None
                if made_now is None:
                    made_now = tuple(
                        domains.domain(
                            variable,
                            partial(state.fits, slot),
                            mentioned,
                            multiple,
                            min(map(len, shapes)),
                            extra,
                            state.widened,
                        )
                    )
                    if before is not None:
                        before[alike] = made_now
                values = made[alike] = [canonical.setdefault(v, v) for v in made_now]
            self.domains[slot] = list(values)
        if state.widened:
            domains.close(
                self.domains, state.constraints, state.root, state.fits, canonical.setdefault
            )

    def _live_values(self, slot: int) -> list[Const]:
        """The slot's domain values that no constraint on it alone rules out (forward
        checking), but for its transfer checks: those are kept for ``_survives``.

        A transfer check may run the lowering's schedule for each value; the
        search needs a slot's exact count of live values only to order parts and
        pick the next variable, often where a few survivors settle it, so the
        rest are asked only when tried. The root's variables never change, so
        such a check's verdict on a value is the same whenever it is judged.
        """
        state = self.state
        checks = [
            state.constraints[ci]
            for ci in state.watchers[slot]
            if state.open[ci]
            and all(s == slot or state.value[s] is not None for s in state.slots_of[ci])
        ]
        transfers = [c for c in checks if _asks_the_lowering(c)]
        if transfers:
            self._transfers_at_root[slot] = [(judge_of(c, True), c) for c in transfers]
            self._verdicts[slot] = {}
            checks = [c for c in checks if not _asks_the_lowering(c)]
        # Every value of a domain fits its slot (``domain`` and ``close`` keep only those).
        if not checks:
            return list(self.domains[slot])
        return self._admitted(slot, self.domains[slot], checks)

    def _survives(self, slot: int, value: Const) -> bool:
        """Whether ``value`` passes the transfer checks ``slot`` had at the root."""
        judged = self._transfers_at_root.get(slot)
        if judged is None:
            return True
        verdicts = self._verdicts[slot]
        verdict = verdicts.get(id(value))
        if verdict is None:
            verdict = verdicts[id(value)] = self._passes(slot, value, judged)
        return verdict

    def _live_count(self, slot: int, enough: int) -> int:
        """How many live values ``slot`` has, counted up to ``enough`` (then ``enough``):
        the transfer checks are judged only as far as the count needs."""
        values = self.live[slot]
        if slot not in self._transfers_at_root:
            return min(len(values), enough)
        count = 0
        for value in values:
            if count >= enough:
                break
            if self._survives(slot, value):
                count += 1
        return count

    def _complete_search(self) -> bool:
        """Most-constrained variable first, over live domains kept by forward checking.

        Variables that no open constraint links are solved part by part: a
        part without a solution fails the search at once, instead of after
        every combination of the other parts' values has been tried with it.
        """
        state = self.state
        self.live = {}
        self.live_trail: list[tuple[int, list[Const]]] = []
        self._transfers_at_root = {}
        self._verdicts = {}
        for slot in self.domains:
            if state.value[slot] is None:
                self.live[slot] = self._live_values(slot)
                if not self._live_count(slot, 1):
                    return False
        for part in self._independent_parts():
            if not self._complete_step(part):
                return False
        return not any(state.open)

    def _independent_parts(self) -> list[list[int]]:
        """The unassigned variables, grouped by the open constraints that link them.

        The most constrained part (smallest live domain) comes first, so that
        an unsatisfiable one is met before the others are solved.
        """
        state = self.state
        parent = {slot: slot for slot in self.live}

        def find(slot: int) -> int:
            while parent[slot] != slot:
                parent[slot] = parent[parent[slot]]
                slot = parent[slot]
            return slot

        for ci, is_open in enumerate(state.open):
            if not is_open:
                continue
            linked = [s for s in state.slots_of[ci] if s in parent]
            for other in linked[1:]:
                parent[find(other)] = find(linked[0])
        parts: dict[int, list[int]] = {}
        for slot in self.live:
            parts.setdefault(find(slot), []).append(slot)
        return sorted(parts.values(), key=self._fewest_live)

    def _fewest_live(self, part: list[int]) -> int:
        """The smallest count of live values among the part's variables."""
        fewest = 1 << 30
        # Slots without deferred checks first: their counts bound what the others need.
        for slot in sorted(part, key=lambda s: s in self._transfers_at_root):
            fewest = min(fewest, self._live_count(slot, fewest))
        return fewest

    def _complete_step(self, part: list[int]) -> bool:
        state = self.state
        best = self._next_variable([slot for slot in part if state.value[slot] is None])
        if best < 0:
            # The part is complete: each of its constraints must have closed.
            return not any(state.open[ci] for slot in part for ci in state.watchers[slot])
        fuel = state.fuel
        for value in list(self.live[best]):
            if not self._survives(best, value):
                continue  # as if its transfers had ruled it out at the root
            if fuel.spent >= fuel.limit:
                raise fuel.exhausted(state.open_variables)
            fuel.spent += 1
            mark, live_mark = len(state.trail), len(self.live_trail)
            queue: list[int] = []
            if state.assign(best, value, queue):
                state.reason[best] = Reason("domain")
                if (
                    state.propagate(queue)
                    and self._forward_check(mark)
                    and self._complete_step(part)
                ):
                    return True
            state.undo(mark)
            while len(self.live_trail) > live_mark:
                slot, values = self.live_trail.pop()
                self.live[slot] = values
        return False

    def _next_variable(self, open_slots: list[int]) -> int:
        """The variable to try next (-1 if none is open): the first with at most one live
        value, else the first of those with the fewest.

        Counted only as far as that choice needs: a slot whose transfers are still
        to judge is counted up to the fewest found so far (one more where it comes
        before the slot that has them, which it would displace on a tie).
        """
        if not open_slots:
            return -1
        for slot in open_slots:
            if self._live_count(slot, 2) <= 1:
                return slot
        # Every slot has two live values or more: the first with the fewest.
        deferred = self._transfers_at_root
        best, fewest = -1, 1 << 30
        for index, slot in enumerate(open_slots):
            if slot not in deferred and len(self.live[slot]) < fewest:
                best, fewest = index, len(self.live[slot])
        for index, slot in enumerate(open_slots):
            if slot in deferred:
                enough = fewest + 1 if index < best else fewest
                count = self._live_count(slot, enough)
                if count < enough:  # counted in full: it has the fewest so far
                    best, fewest = index, count
        return open_slots[best]

    def _forward_check(self, mark: int) -> bool:
        """Narrows the live values of variables left alone in a constraint by the last step."""
        state = self.state
        for is_value, slot in state.trail[mark:]:
            if not is_value:
                continue
            for ci in state.watchers[slot]:
                if not state.open[ci]:
                    continue
                unknown = [x for x in state.slots_of[ci] if state.value[x] is None]
                if len(unknown) != 1:
                    continue
                target = unknown[0]
                before = self.live[target]
                c = state.constraints[ci]
                if target in self._transfers_at_root:
                    # Not the values its root transfer checks already ruled out (all of
                    # them first where this check asks the lowering too).
                    if _asks_the_lowering(c):
                        self._live_count(target, len(before))
                    verdicts = self._verdicts[target]
                    candidates = [v for v in before if verdicts.get(id(v), True)]
                else:
                    candidates = before
                after = self._admitted(target, candidates, [c])
                if len(after) != len(before):
                    self.live_trail.append((target, before))
                    self.live[target] = after
                    if not self._live_count(target, 1):
                        return False
        return True

    def _passes(self, slot: int, candidate: Const, judged: list[tuple[Judge, Constraint]]) -> bool:
        """Whether ``slot`` holding ``candidate`` leaves every judged check held or closed."""
        state = self.state
        root, value_of = state.root, state.value

        def lookup(v: int) -> Const | None:
            r = root[v]
            return candidate if r == slot else value_of[r]

        for judge_kind, c in judged:
            verdict = judge_kind(c, lookup)
            if verdict is FAILS or verdict is OPEN:
                return False
        return True

    def _admitted(self, slot: int, values: list[Const], checks: list[Constraint]) -> list[Const]:
        """The ``values`` of ``slot`` that every one of ``checks`` (constraints all of whose
        other variables are set) may still hold with.

        With every variable set, a constraint left open can never close (its
        expression is stuck, e.g. a reshape the layout does not allow): as good
        as failed. Seeing it here, rather than once the whole assignment is made,
        keeps the complete search from enumerating assignments of unrelated
        variables around it.
        """
        # A value is kept where every check holds, whatever their order: the transfers,
        # which may run the lowering's schedule (0.5 to 50 ms the first time it is asked
        # about a layout), are judged last, only for values the others kept.
        if len(checks) > 1:
            checks = sorted(checks, key=_asks_the_lowering)
        judged = [(judge_of(c, True), c) for c in checks]
        return [value for value in values if self._passes(slot, value, judged)]


_TRANSFERS = (SmemTransfer, GmemTransfer, TmemTransfer)


def _asks_the_lowering(c: Constraint) -> bool:
    """Whether judging ``c`` may run the lowering's transfer schedule (``hw.transfers``)."""
    return isinstance(c, _TRANSFERS)
