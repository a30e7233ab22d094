"""Propagation with a trail, and a depth-first search over candidate values.

Variables joined by plain equalities share one slot (union-find). Each
constraint watches the slots it reads; giving a slot a value re-judges only
those constraints. Every change goes on a trail, so backtracking undoes
exactly what a decision caused instead of copying the system.
"""

from __future__ import annotations

import sys
from bisect import bisect_left
from collections.abc import Iterable, Iterator
from itertools import chain

from jax._src.lib.mlir import ir

from smalto.constraints import (
    Constraint,
    Divides,
    Equal,
    Fixed,
    GmemTransfer,
    LayoutKind,
    NotOfKind,
    Relayout,
    Role,
    System,
    Var,
    Variable,
    constraint_variables,
)
from smalto.hw import layouts as hl
from smalto.hw.values import Const, Reg, Smem, Tmem
from smalto.program import Kind, Program
from smalto.records import record
from smalto.rules.attributes import strict_cast
from smalto.solve import candidates as cands
from smalto.solve import domains
from smalto.solve.evaluate import FAILS, HOLDS, OPEN, Forces, Lookup, judge, simplify

# Attempts the JAX-ordered search may take before the domain search takes over,
# beyond one per variable left open by the propagation before the first
# decision (see ``Solver.guided_budget``). Every corpus kernel JAX solves needs
# under 100 in all. A splat tried for a value that cannot be one (a doomed
# candidate) does not count against it: it does no work (see ``Solver._search``).
GUIDED_BUDGET = 1_000
# Attempts per open variable: one for its value, one for a candidate that fails.
ATTEMPTS_PER_VARIABLE = 2


# What SMEM validity reads of a ref: shape, strides, element bitwidth.
SmemType = tuple[tuple[int, ...], tuple[int, ...] | None, int | None]
# What TMEM validity reads of a ref: shape, element bitwidth.
TmemType = tuple[tuple[int, ...], int | None]


def _smem_type(v: Variable) -> SmemType:
    return v.shape, v.strides, v.bitwidth


class FuelExhausted(Exception):
    def __init__(self, spent: int, open_variables: list[int]) -> None:
        super().__init__(f"search ran out of fuel after {spent} attempts")
        self.spent = spent
        self.open_variables = open_variables


@record
class Reason:
    """Why a variable has its value: an op fixed it, a constraint forced it, or a choice.

    ``kind`` is "fixed" (``fixed`` set), "forced" (``constraint`` forced it once
    the other variables it reads had their values), "chosen" (the search picked
    it from ``constraint``'s candidates, or, with no constraint, as the default)
    or "domain" (the complete search picked it from the variable's domain).
    """

    kind: str
    constraint: int | None = None
    fixed: Fixed | None = None


@record
class Conflict:
    """Why propagation failed: a constraint that cannot hold, or a value that does not fit."""

    constraint: Constraint | None
    fixed: Fixed | None = None
    variable: int | None = None
    value: Const | None = None


_UNKNOWN = object()  # a default value not made yet


class _Pass:
    """What one decision's scan knows of one pass over the candidate order.

    The scan makes two passes: one for preferred candidates, then one for the
    others (see ``Solver._candidates``). ``pending``: positions before
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
# (``Solver._offer``), a number (``Solver._doomed_key``).
_Key = tuple[int, Const] | int
# A constraint's candidates: (variable, value) pairs, preferred ones, then the
# others; and, where each of the others is doomed, their keys (else None).
_Offer = tuple[list[tuple[int, Const]], list[tuple[int, Const]], "tuple[int, ...] | None"]


class _Scan:
    """One decision's scan for candidates, and what the decisions below it inherit.

    ``preferred`` and ``other``: what each pass knows (``_Pass``).
    ``doomed_at`` and ``doomed_keys``: the positions before the other pass's
    frontier, not asked here, known to offer only doomed candidates
    (``Solver._offer``), in order, and the keys of those (``Solver._doomed_key``);
    the other pass counts them without asking (``Solver._count_doomed``), and
    ``counted`` says how many of them it has. ``found``: the positions of that
    kind the other pass asked here, with their keys.
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


class Solver:
    """Decides one system: JAX's order first, then complete searches.

    ``widened``: a complete search over the layouts the lowering accepts beyond
    JAX's rules (producer-to-consumer relayouts the lowering performs, domains
    closed under the expressions between variables); see ``decide``.
    """

    def __init__(
        self,
        system: System,
        program: Program,
        arch: tuple[int, int],
        fuel: int,
        *,
        widened: bool = False,
    ) -> None:
        self.system = system
        self.arch = arch
        self.fuel = fuel
        # Attempts, counted as JAX's pass counts its fuel (in its order, a
        # splat tried for a value that cannot be one is an attempt).
        self.spent = 0
        # The attempts that did work: each but those splats (what the
        # budget of the search in JAX's order bounds).
        self.work = 0
        self.work_limit = sys.maxsize
        # Whether the search in JAX's order went on past the fuel JAX's pass
        # has (``_past_jaxs_fuel``): its answer, if any, is then not JAX's.
        self.past_jaxs_fuel = False
        self.widened = widened
        self.solved = False  # what ``decide`` found
        # The lowering requirements the answer in JAX's order broke, with the
        # value it gave (what a diagnosis names when no layout lowers).
        self.jax_answer_breaks: list[tuple[Constraint, Const]] = []
        # Widened, the lowering requirements JAX's answers break hold from the start.
        self.complete = widened
        variables = system.variables
        n = len(variables)
        parent = list(range(n))

        def find(v: int) -> int:
            while parent[v] != v:
                parent[v] = parent[parent[v]]
                v = parent[v]
            return v

        self.constraints: list[Constraint] = []
        # Widened: each relayout between a producer and its consumer stands as
        # the relayout the lowering performs there (a non-strict one), keyed
        # to the constraint it replaces (what a diagnosis names).
        self.original: dict[Constraint, Constraint] = {}
        # Sorted out on the way, for the set-up steps below.
        not_splat: list[NotOfKind] = []
        var_relayouts: list[Relayout] = []
        var_divides: list[Divides] = []
        for c in system.constraints:
            # Expressions and constraints are final classes: `type(...) is`
            # tests them in a fraction of isinstance's time.
            kind = type(c)
            if kind is Equal and type(c.lhs) is Var and type(c.rhs) is Var:
                a, b = find(c.lhs.id), find(c.rhs.id)
                if a != b:
                    parent[max(a, b)] = min(a, b)
                continue
            if widened and kind is Relayout and c.strict and not strict_cast(program, c.origin):
                lowered = Relayout(c.source, c.target, c.bitwidth, False, c.origin)
                self.original[lowered] = c
                c = lowered
            self.constraints.append(c)
            if kind is Relayout:
                if type(c.source) is Var and type(c.target) is Var:
                    var_relayouts.append(c)
            elif kind is NotOfKind:
                if c.kind is LayoutKind.SPLAT and type(c.expr) is Var:
                    not_splat.append(c)
            elif kind is Divides and type(c.expr) is Var:
                var_divides.append(c)
        root = self.root = list(map(find, range(n)))
        self._add_not_splat_closure(not_splat, var_relayouts)
        # A strict relayout from a value that cannot be a splat holds only as
        # the identity: its two variables share one slot from the start. JAX's
        # pass makes these equalities before it searches; doing the same keeps
        # both searches in step (no candidate or fuel goes to a forced value).
        # (Not when widened: there the lowering's relayouts are allowed too.)
        joined = False
        for c in () if widened else var_relayouts:
            if c.strict and root[c.source.id] in self.not_splat:  # type: ignore[union-attr]
                a, b = find(c.source.id), find(c.target.id)  # type: ignore[union-attr]
                if a != b:
                    parent[max(a, b)] = min(a, b)
                    joined = True
        if joined:
            root = self.root = list(map(find, range(n)))
            self.not_splat = {root[slot] for slot in self.not_splat}
        shapes: dict[int, set[tuple[int, ...]]] = {}
        # SMEM refs: validity depends on strides and element width too; TMEM
        # refs on the element width.
        smem_types: dict[int, set[SmemType]] = {}
        tmem_types: dict[int, set[TmemType]] = {}
        smem, tmem = Kind.SMEM, Kind.TMEM
        for v in variables:
            slot = root[v.id]
            same = shapes.get(slot)
            if same is None:
                shapes[slot] = {v.shape}
            else:
                same.add(v.shape)
            if v.kind == smem:
                smem_types.setdefault(slot, set()).add(_smem_type(v))
            elif v.kind == tmem:
                tmem_types.setdefault(slot, set()).add((v.shape, v.bitwidth))
        self.shapes = shapes
        self.smem_types = smem_types
        self.tmem_types = tmem_types
        self.divides = self._merged_divides(var_divides)

        self.value: list[Const | None] = [None] * n
        self.unassigned = len(self.shapes)
        self.open = [True] * len(self.constraints)
        self.watchers: list[list[int]] = [[] for _ in range(n)]
        # Per constraint, the slots it reads (each once, in order).
        self.slots_of: list[tuple[int, ...]] = []
        relayouts: list[int] = []
        sources: list[int] = []
        # The lowering requirements only the complete search enforces (they
        # hold in JAX's order); judged again when that search starts.
        self.complete_only: list[int] = []
        for ci, c in enumerate(self.constraints):
            if type(c) is Relayout and type(c.source) is Var and type(c.target) is Var:
                # Most constraints are producer/consumer relayouts between two
                # variables: their slots without the general expression walk.
                a, b = root[c.source.id], root[c.target.id]
                slots = (a,) if a == b else (a, b)
            else:
                slots = tuple(dict.fromkeys(map(root.__getitem__, constraint_variables(c))))
            self.slots_of.append(slots)
            for slot in slots:
                self.watchers[slot].append(ci)
            if type(c) is Relayout:
                relayouts.append(ci)
            elif type(c) is GmemTransfer:
                self.complete_only.append(ci)
            elif cands.is_candidate_source(c):
                sources.append(ci)
        self.trail: list[tuple[bool, int]] = []  # (is_value, slot or constraint index)
        self.candidate_order = relayouts + sources
        # Per constraint, its position in the candidate order (-1: offers no candidates).
        self.position = [-1] * len(self.constraints)
        for p, ci in enumerate(self.candidate_order):
            self.position[ci] = p
        tmem = Kind.TMEM
        self.tmem_defaults = [
            self._tmem_default(v, program) if v.kind == tmem else None for v in variables
        ]
        # Per variable, its default value (``cands.default_value``), made when first asked.
        self.defaults: list[Const | None | object] = [_UNKNOWN] * n
        self.conflict: Conflict | None = None
        # False until propagation at the root succeeded: a conflict found before
        # any decision is explained by the reasons alone.
        self.searching = False
        # A variable no value of its kind can fit, found before searching.
        self.empty_slot: int | None = None
        self.live: dict[int, list[Const]] = {}
        # Per constraint, its candidates last asked for (``_offer_now``), with
        # the values of its variables then.
        self.offers: dict[int, tuple[tuple[Const | None, ...], _Offer]] = {}
        # Numbers for the doomed candidates (``_doomed_key``).
        self.doomed_keys: dict[tuple[int, Const], int] = {}
        # Per slot, why it has its current value (stale once the slot is undone).
        self.reason: dict[int, Reason] = {}
        # ``lookup`` as a closure over the two lists (neither is ever rebound):
        # judging a constraint calls it for every variable it reads.
        value_of, root_of = self.value, self.root

        def lookup(v: int) -> Const | None:
            return value_of[root_of[v]]

        self.lookup = lookup  # type: ignore[method-assign]

    # --- set-up ----------------------------------------------------------------------

    def _add_not_splat_closure(
        self, not_splat_constraints: list[NotOfKind], relayouts: list[Relayout]
    ) -> None:
        """A value that cannot be a splat passes that on to what it relayouts into.

        Only splats may change layout, so the target of a relayout from a
        non-splat equals it. Stating this up front prunes dead branches early.
        ``relayouts`` are those between two variables.
        """
        root = self.root
        not_splat = {root[c.expr.id] for c in not_splat_constraints}  # type: ignore[union-attr]
        edges: dict[int, list[tuple[int, Relayout]]] = {}
        for c in relayouts:
            edges.setdefault(root[c.source.id], []).append((c.target.id, c))  # type: ignore[union-attr]
        stack = list(not_splat)
        while stack:
            for target, c in edges.get(stack.pop(), ()):
                if root[target] not in not_splat:
                    not_splat.add(root[target])
                    stack.append(root[target])
                    self.constraints.append(NotOfKind(Var(target), LayoutKind.SPLAT, c.origin))
        self.not_splat = not_splat

    def _merged_divides(self, divides: list[Divides]) -> dict[int, tuple[int, ...]]:
        """Per slot, the divisibility requirements on it (of variables), merged."""
        merged: dict[int, tuple[int, ...]] = {}
        for c in divides:
            r = self.root[c.expr.id]  # type: ignore[union-attr]
            merged[r] = hl.merge_multiples(merged[r], c.multiple) if r in merged else c.multiple
        return merged

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

    # --- state ---------------------------------------------------------------------

    def divides_of(self, v: int) -> tuple[int, ...] | None:
        """The merged divisibility requirement on a variable's slot (shared by equal refs)."""
        return self.divides.get(self.root[v])

    def lookup(self, v: int) -> Const | None:
        """The value of variable ``v`` (its slot's), or None; replaced per solver by a closure."""
        return self.value[self.root[v]]

    def _fits(self, slot: int, value: Const) -> bool:
        """Whether every variable of the slot can take ``value`` (JAX's valid assignment)."""
        if type(value) is Smem:
            valid = hl.smem_valid
            for shape, strides, bitwidth in self.smem_types.get(slot, ()):
                if not valid(value, shape, strides, bitwidth):  # type: ignore[arg-type]
                    return False
            return True
        if type(value) is Tmem:
            return all(
                hl.tmem_fits(value, shape, bitwidth)  # type: ignore[arg-type]
                for shape, bitwidth in self.tmem_types.get(slot, ())
            )
        fits = hl.fits
        for shape in self.shapes[slot]:
            if not fits(value, shape):
                return False
        return True

    def _valid_for(self, var: int, value: Const) -> bool:
        """Whether this one variable can take ``value`` (what a candidate is tested on)."""
        v = self.system.variables[var]
        if type(value) is Smem:
            return hl.smem_valid(value, *_smem_type(v))  # type: ignore[arg-type]
        if type(value) is Tmem:
            return hl.tmem_fits(value, v.shape, v.bitwidth)  # type: ignore[arg-type]
        return hl.fits(value, v.shape)

    def _assign(self, v: int, value: Const, queue: list[int]) -> bool:
        slot = self.root[v]
        current = self.value[slot]
        if current is not None:
            return current == value
        if not self._fits(slot, value):
            return False
        self.value[slot] = value
        self.unassigned -= 1
        self.trail.append((True, slot))
        queue.extend(self.watchers[slot])
        return True

    def _close(self, ci: int) -> None:
        self.open[ci] = False
        self.trail.append((False, ci))

    def _undo(self, mark: int) -> None:
        trail = self.trail
        while len(trail) > mark:
            is_value, index = trail.pop()
            if is_value:
                self.value[index] = None
                self.unassigned += 1
            else:
                self.open[index] = True

    def _propagate(self, queue: list[int]) -> bool:
        constraints, is_open, lookup = self.constraints, self.open, self.lookup
        complete = self.complete
        while queue:
            ci = queue.pop()
            if not is_open[ci]:
                continue
            c = constraints[ci]
            verdict = judge(c, lookup, complete)
            if verdict is HOLDS:
                self._close(ci)
            elif verdict is FAILS:
                self.conflict = Conflict(c)
                return False
            elif verdict is OPEN:
                if type(c) is Relayout and self._into_splat_from_non_splat(c):
                    self.conflict = Conflict(c)
                    return False
            else:
                assert isinstance(verdict, Forces)
                if not self._assign(verdict.var, verdict.value, queue):
                    self.conflict = Conflict(c, variable=verdict.var, value=verdict.value)
                    return False
                self.reason[self.root[verdict.var]] = Reason("forced", ci)
                self._close(ci)
        return True

    def _into_splat_from_non_splat(self, c: Relayout) -> bool:
        # A splat target can only come from an identical splat.
        target = simplify(c.target, self.lookup)
        return (
            isinstance(target, Reg)
            and target.is_splat
            and isinstance(c.source, Var)
            and self.value[self.root[c.source.id]] is None
            and self.root[c.source.id] in self.not_splat
        )

    # --- solving ---------------------------------------------------------------------

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

    def _broken_requirements(self) -> list[tuple[Constraint, Const]]:
        """The requirements the assignment found in JAX's order breaks, with the
        value it gives each one's register variable (requirements it judged as
        holding, since JAX's own answers break them)."""
        lookup, broken = self.lookup, []
        for ci in self.complete_only:
            c = self.constraints[ci]
            if judge(c, lookup, True) is not HOLDS:
                value = simplify(c.reg, lookup)  # type: ignore[union-attr]
                broken.append((c, value))
        return broken  # type: ignore[return-value]

    def guided_budget(self) -> int:
        """The attempts the search in JAX's order gets: it grows with the kernel.

        A search that never backtracks takes one attempt per variable the
        propagation left open; a fixed budget would make large kernels (an
        unrolled loop of a thousand blocks) fall to the complete search,
        which redoes the work and may pick another answer than JAX's.
        """
        return GUIDED_BUDGET + ATTEMPTS_PER_VARIABLE * self.unassigned

    def _start_complete_phase(self) -> bool:
        """Judges the complete-search-only requirements from now on, at the root.

        They held (and closed) in JAX's order; reopened here without a trail
        entry, since nothing undoes past the root from now on.
        """
        self.complete = True
        for ci in self.complete_only:
            self.open[ci] = True
        return self._propagate(list(self.complete_only))

    def _prepare_domains(self) -> None:
        mentioned = domains.constants_in(self.constraints, self.system.fixed)
        variables = self.system.variables
        extra = domains.wide_layouts(
            self.constraints[ci].bitwidth  # type: ignore[union-attr]
            for ci in self.complete_only
        )
        self.domains = {
            slot: domains.domain(
                variables[slot],
                lambda value, slot=slot: self._fits(slot, value),  # type: ignore[misc]
                mentioned,
                self.divides.get(slot),
                min(map(len, self.shapes[slot])),
                extra,
                self.widened,
            )
            for slot in self.shapes
        }
        if self.widened:
            domains.close(self.domains, self.constraints, self.root, self._fits)

    def _live_values(self, slot: int) -> list[Const]:
        """The slot's domain values that no constraint on it alone rules out (forward checking)."""
        checks = [
            self.constraints[ci]
            for ci in self.watchers[slot]
            if self.open[ci]
            and all(s == slot or self.value[s] is not None for s in self.slots_of[ci])
        ]
        live = []
        root, value_of = self.root, self.value
        for value in self.domains[slot]:
            if value_of[slot] is None and not self._fits(slot, value):
                continue

            def lookup(v: int, value: Const = value) -> Const | None:
                r = root[v]
                return value if r == slot else value_of[r]

            if all(_admits(c, lookup) for c in checks):
                live.append(value)
        return live

    def _complete_search(self) -> bool:
        """Most-constrained variable first, over live domains kept by forward checking.

        Variables that no open constraint links are solved part by part: a
        part without a solution fails the search at once, instead of after
        every combination of the other parts' values has been tried with it.
        """
        self.live = {}
        self.live_trail: list[tuple[int, list[Const]]] = []
        for slot in self.domains:
            if self.value[slot] is None:
                self.live[slot] = self._live_values(slot)
                if not self.live[slot]:
                    return False
        for part in self._independent_parts():
            if not self._complete_step(part):
                return False
        return not any(self.open)

    def _independent_parts(self) -> list[list[int]]:
        """The unassigned variables, grouped by the open constraints that link them.

        The most constrained part (smallest live domain) comes first, so that
        an unsatisfiable one is met before the others are solved.
        """
        parent = {slot: slot for slot in self.live}

        def find(slot: int) -> int:
            while parent[slot] != slot:
                parent[slot] = parent[parent[slot]]
                slot = parent[slot]
            return slot

        for ci, is_open in enumerate(self.open):
            if not is_open:
                continue
            linked = [s for s in self.slots_of[ci] if s in parent]
            for other in linked[1:]:
                parent[find(other)] = find(linked[0])
        parts: dict[int, list[int]] = {}
        for slot in self.live:
            parts.setdefault(find(slot), []).append(slot)
        return sorted(parts.values(), key=lambda part: min(len(self.live[s]) for s in part))

    def _complete_step(self, part: list[int]) -> bool:
        best, best_size = -1, 1 << 30
        for slot in part:
            if self.value[slot] is None and len(self.live[slot]) < best_size:
                best, best_size = slot, len(self.live[slot])
                if best_size <= 1:
                    break
        if best < 0:
            # The part is complete: each of its constraints must have closed.
            return not any(self.open[ci] for slot in part for ci in self.watchers[slot])
        for value in list(self.live[best]):
            if self.spent >= self.limit:
                raise FuelExhausted(self.spent, self.open_variables())
            self.spent += 1
            self.work += 1
            mark, live_mark = len(self.trail), len(self.live_trail)
            queue: list[int] = []
            if self._assign(best, value, queue):
                self.reason[best] = Reason("domain")
                if (
                    self._propagate(queue)
                    and self._forward_check(mark)
                    and self._complete_step(part)
                ):
                    return True
            self._undo(mark)
            while len(self.live_trail) > live_mark:
                slot, values = self.live_trail.pop()
                self.live[slot] = values
        return False

    def _forward_check(self, mark: int) -> bool:
        """Narrows the live values of variables left alone in a constraint by the last step."""
        for is_value, slot in self.trail[mark:]:
            if not is_value:
                continue
            for ci in self.watchers[slot]:
                if not self.open[ci]:
                    continue
                unknown = [x for x in self.slots_of[ci] if self.value[x] is None]
                if len(unknown) != 1:
                    continue
                target = unknown[0]
                before = self.live[target]
                after = self._filter(target, before, self.constraints[ci])
                if len(after) != len(before):
                    self.live_trail.append((target, before))
                    self.live[target] = after
                    if not after:
                        return False
        return True

    def _filter(self, slot: int, values: list[Const], c: Constraint) -> list[Const]:
        root, value_of = self.root, self.value
        kept = []
        for value in values:

            def lookup(v: int, value: Const = value) -> Const | None:
                r = root[v]
                return value if r == slot else value_of[r]

            if _admits(c, lookup):
                kept.append(value)
        return kept

    def _search(self, first_open: int = 0, first_unset: int = 0, scan: _Scan | None = None) -> bool:
        if self.unassigned == 0:
            # Everything has a value; an expression that could not be
            # simplified (an unsupported reshape) still counts as a failure.
            return not any(self.open)
        # Deeper in the search constraints only close and variables only get
        # values (undoing restores them on the way back up): what is closed or
        # set here stays so below, and the scans for candidates start past it,
        # instead of from the start at every decision.
        order, is_open = self.candidate_order, self.open
        while first_open < len(order) and not is_open[order[first_open]]:
            first_open += 1
        root, value_of, n = self.root, self.value, len(self.root)
        while first_unset < n and value_of[root[first_unset]] is not None:
            first_unset += 1
        if scan is None:
            scan = _Scan.first()
        not_splat = self.not_splat
        for var, value, source in self._candidates(first_open, first_unset, scan):
            if self.work >= self.work_limit:
                raise FuelExhausted(self.spent, self.open_variables())
            if self.spent >= self.limit:
                self._past_jaxs_fuel()
            if not self._valid_for(var, value):
                continue
            self.spent += 1
            if root[var] in not_splat and self._splat_for_non_splat(var, value):
                # JAX's pass tries it, and spends fuel on it, at every
                # decision until the variable has a value: in a kernel of
                # many loops fed by one splat, the loops not reached yet
                # offer it at each decision (attempts quadratic in the
                # kernel). Counted, not made, and not held against the
                # budget (most are counted in bulk: ``_candidates``).
                continue
            self.work += 1
            mark = len(self.trail)
            queue: list[int] = []
            if self._assign(var, value, queue):
                self.reason[self.root[var]] = Reason("chosen", source)
                if self._propagate(queue) and self._search(
                    first_open, first_unset, self._child_scan(scan, mark)
                ):
                    return True
            self._undo(mark)
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
        preferred: list[tuple[int, Const]] = []
        other: list[tuple[int, Const]] = []
        for var, value in cands.from_constraint(
            self.constraints[ci], self.lookup, self.system.variables, self.divides_of, self.arch
        ):
            (preferred if cands.is_preferred(value) else other).append((var, value))
        root, doomed = self.root, None
        if other and all(self._is_doomed(var, value) for var, value in other):
            doomed = tuple(self._doomed_key(root[var], value) for var, value in other)
        return preferred, other, doomed

    def _doomed_key(self, slot: int, value: Const) -> int:
        """A number for a doomed candidate, the same for equal ones: counting
        thousands of them per decision hashes numbers, not layouts."""
        return self.doomed_keys.setdefault((slot, value), len(self.doomed_keys))

    def _past_jaxs_fuel(self) -> None:
        """JAX's pass, searching in this order, runs out of fuel here: raises ``FuelExhausted``,
        unless the fuel went on doomed candidates, the work within the budget.

        Then JAX's pass has no answer, and smalto goes on in JAX's order
        (what JAX would answer with more fuel), counting work only: in a kernel
        of a thousand loops fed by one splat, JAX's fuel runs out on doomed
        splats with the search nearly done, and the complete search would
        start over. The user's fuel still bounds the work (``solve``).
        """
        if self.complete or self.fuel <= self.work_limit:
            raise FuelExhausted(self.spent, self.open_variables())
        self.past_jaxs_fuel = True
        self.limit = sys.maxsize

    def _tried_key(self, slot: int, var: int, value: Const) -> _Key:
        """How the scan knows a candidate it tried: a doomed one by its number."""
        if slot in self.not_splat and self._is_doomed(var, value):
            return self._doomed_key(slot, value)
        return (slot, value)

    def _is_doomed(self, var: int, value: Const) -> bool:
        return (
            self.root[var] in self.not_splat
            and self._splat_for_non_splat(var, value)
            and self._valid_for(var, value)
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
        if self.past_jaxs_fuel:
            return  # nothing is counted any more (``_past_jaxs_fuel``)
        new = dict.fromkeys(key for key in keys if key not in tried)
        if not new:
            return
        if self.work >= self.work_limit:
            raise FuelExhausted(self.spent, self.open_variables())
        if self.spent + len(new) > self.limit:
            # Where trying them one by one would have run out.
            self.spent = self.limit
            self._past_jaxs_fuel()
        tried.update(new)
        self.spent += len(new)

    def _count_doomed_before(self, scan: _Scan, position: int, tried: set[_Key]) -> None:
        """Counts the inherited doomed positions before ``position`` not counted yet.

        They are open: a constraint closes only once one of its variables
        got a value, and then it is no longer known as doomed below.
        """
        if self.past_jaxs_fuel:
            return  # nothing is counted any more (``_past_jaxs_fuel``)
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
        preferred, preferred_frontier = scan.preferred.below()
        other, other_frontier = scan.other.below()
        changed: set[int] = set()
        position_of, watchers, trail = self.position, self.watchers, self.trail
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
        tried: set[_Key] = set()
        root = self.root
        order, is_open = self.candidate_order, self.open
        offer_of = self._offer_now
        for kind in (0, 1):
            state = scan.other if kind else scan.preferred
            hits = state.hits
            for p, i in _positions(state, first_open, len(order)):
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
                    state.full_at = p
                else:
                    state.at = i
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
            state.full_at = len(order)
        variables = self.system.variables
        defaults, value_of = self.defaults, self.value
        for k in range(first_unset, len(variables)):
            slot = root[k]
            if value_of[slot] is None:
                value = defaults[k]
                if value is _UNKNOWN:
                    # A variable's default depends on it alone: made once.
                    value = defaults[k] = cands.default_value(variables[k], self.tmem_defaults[k])
                if value is not None:
                    key = self._tried_key(slot, k, value)
                    if key not in tried:
                        tried.add(key)
                        yield k, value, None

    def root_explanation(self) -> list[Constraint | Fixed] | None:
        """The requirements behind a conflict found before any decision, else None.

        The failing requirement, plus, for each value it read, what fixed or
        forced that value, back to the ops that imposed them; and the plain
        equalities and not-splat facts among the values involved.
        """
        conflict = self.conflict
        if conflict is None or self.searching:
            return None
        elements: list[Constraint | Fixed] = []
        slots: set[int] = set()

        def explain(slot: int) -> None:
            if slot in slots:
                return
            slots.add(slot)
            reason = self.reason.get(slot)
            if reason is None or self.value[slot] is None:
                return
            if reason.kind == "fixed" and reason.fixed is not None:
                elements.append(reason.fixed)
            elif reason.kind == "forced" and reason.constraint is not None:
                c = self.constraints[reason.constraint]
                elements.append(c)
                for v in constraint_variables(c):
                    explain(self.root[v])

        if conflict.fixed is not None:
            elements.append(conflict.fixed)
        if conflict.constraint is not None:
            elements.append(conflict.constraint)
            for v in constraint_variables(conflict.constraint):
                explain(self.root[v])
        if conflict.variable is not None:
            explain(self.root[conflict.variable])
        for c in (*self.system.constraints, *self.constraints):
            if isinstance(c, Equal) and isinstance(c.lhs, Var) and isinstance(c.rhs, Var):
                if self.root[c.lhs.id] in slots:
                    elements.append(c)
            elif isinstance(c, NotOfKind) and isinstance(c.expr, Var):
                if self.root[c.expr.id] in slots:
                    elements.append(c)
        original = self.original
        return list(dict.fromkeys(original.get(e, e) for e in elements))  # type: ignore[arg-type]

    def open_variables(self) -> list[int]:
        return [v.id for v in self.system.variables if self.value[self.root[v.id]] is None]

    def solution(self) -> list[Const]:
        """The value of every variable (after a successful ``solve``)."""
        values = []
        for v in range(len(self.system.variables)):
            value = self.value[self.root[v]]
            assert value is not None
            values.append(value)
        return values


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


def _admits(c: Constraint, lookup: Lookup) -> bool:
    """Whether a constraint all of whose variables ``lookup`` assigns may still hold.

    With every variable set, a constraint left open can never close (its
    expression is stuck, e.g. a reshape the layout does not allow): as good
    as failed. Seeing it here, rather than once the whole assignment is made,
    keeps the complete search from enumerating assignments of unrelated
    variables around it.
    """
    verdict = judge(c, lookup, True)
    return verdict is not FAILS and verdict is not OPEN
