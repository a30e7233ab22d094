"""Propagation with a trail: the state every search of the solver works on.

Variables joined by plain equalities share one slot (union-find). Each
constraint watches the slots it reads; giving a slot a value re-judges only
those constraints. Every change goes on a trail, so backtracking undoes
exactly what a decision caused instead of copying the system. The searches
(``jax_search``, ``complete``) decide values on top of this state; ``search``
puts them together.
"""

from __future__ import annotations

import sys
from collections.abc import Callable
from typing import NamedTuple, cast

from smalto.basics.records import record
from smalto.constraints.language import (
    Constraint,
    Divides,
    Equal,
    Fixed,
    GmemTransfer,
    LayoutKind,
    NotOfKind,
    Relayout,
    System,
    Var,
    Variable,
    constraint_variables,
)
from smalto.hw import layouts as hl
from smalto.hw.values import Const, Reg, Smem, Tmem
from smalto.program.view import Kind, Program
from smalto.solve import candidates as cands
from smalto.solve.evaluate import FAILS, HOLDS, OPEN, Forces, judge, simplify
from smalto.solve.fuel import Fuel
from smalto.solve.widened import lowered_relayout

# What SMEM validity reads of a ref: shape, strides, element bitwidth.
SmemType = tuple[tuple[int, ...], tuple[int, ...] | None, int | None]
# What TMEM validity reads of a ref: shape, element bitwidth.
TmemType = tuple[tuple[int, ...], int | None]


def _smem_type(v: Variable) -> SmemType:
    return v.shape, v.strides, v.bitwidth


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


class _Slots:
    """Union-find over a system's variables: those that must be equal share a slot (the
    least variable id of them names it)."""

    __slots__ = ("parent",)

    def __init__(self, n: int) -> None:
        self.parent = list(range(n))

    def find(self, v: int) -> int:
        parent = self.parent
        while parent[v] != v:
            parent[v] = parent[parent[v]]
            v = parent[v]
        return v

    def join(self, a: int, b: int) -> bool:
        """Puts ``a`` and ``b`` in one slot; whether they were apart."""
        a, b = self.find(a), self.find(b)
        if a == b:
            return False
        self.parent[max(a, b)] = min(a, b)
        return True

    def roots(self) -> list[int]:
        return list(map(self.find, range(len(self.parent))))


class _SortedOut(NamedTuple):
    """What the set-up sorts out of a system's constraints on its way, by variable id."""

    not_splat: list[int]  # the variable of each NotOfKind(splat)
    relayouts: list[tuple[int, int, Relayout]]  # (source, target, relayout) between variables
    divides: list[tuple[int, tuple[int, ...]]]  # (variable, multiple)


class Propagation:
    """A system's variables by slot, their values, the constraints' watchers and the trail.

    ``widened``: the state of the widened search (``smalto.solve.widened``):
    the relayouts the lowering performs stand for strict ones, and the
    lowering requirements hold from the start. ``fuel``: the attempts the
    searches on this state may make, and those they made (``Fuel``).
    """

    # The slots whose value cannot be a splat (``_add_not_splat_closure``).
    not_splat: set[int]
    # The value of variable ``v`` (its slot's), or None: a closure over the state's
    # lists, made in ``__init__`` (judging a constraint calls it for every variable).
    lookup: Callable[[int], Const | None]

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
        self.fuel = Fuel(fuel)
        self.widened = widened
        # Widened, the lowering requirements JAX's answers break hold from the start.
        self.complete = widened
        slots = _Slots(len(system.variables))
        sorted_out = self._sort_constraints(program, slots)
        self.root = slots.roots()
        self._add_not_splat_closure(sorted_out.not_splat, sorted_out.relayouts)
        if not widened:
            self._join_identity_relayouts(slots, sorted_out.relayouts)
        self._gather_types()
        self.divides = self._merged_divides(sorted_out.divides)
        self._watch_constraints()
        self._start_at_the_root()

    # --- set-up ----------------------------------------------------------------------

    def _sort_constraints(self, program: Program, slots: _Slots) -> _SortedOut:
        """The state's constraints (``constraints``): the system's, but plain equalities
        between variables, which join their slots instead; widened, each relayout
        between a producer and its consumer as the one the lowering performs there
        (``original``: the constraint each replaces, what a diagnosis names)."""
        self.constraints: list[Constraint] = []
        self.original: dict[Constraint, Constraint] = {}
        widened = self.widened
        sorted_out = _SortedOut([], [], [])
        not_splat, var_relayouts, var_divides = (
            sorted_out.not_splat,
            sorted_out.relayouts,
            sorted_out.divides,
        )
        join = slots.join
        for c in self.system.constraints:
            # Expressions and constraints are final classes: `type(...) is`
            # tests them in a fraction of isinstance's time.
            if type(c) is Equal:
                lhs, rhs = c.lhs, c.rhs
                if type(lhs) is Var and type(rhs) is Var:
                    join(lhs.id, rhs.id)
                    continue
            elif type(c) is Relayout:
                if widened:
                    lowered = lowered_relayout(c, program)
                    if lowered is not None:
                        self.original[lowered] = c
                        c = lowered
                source, target = c.source, c.target
                if type(source) is Var and type(target) is Var:
                    var_relayouts.append((source.id, target.id, c))
            elif type(c) is NotOfKind:
                expr = c.expr
                if c.kind is LayoutKind.SPLAT and type(expr) is Var:
                    not_splat.append(expr.id)
            elif type(c) is Divides:
                expr = c.expr
                if type(expr) is Var:
                    var_divides.append((expr.id, c.multiple))
            self.constraints.append(c)
        return sorted_out

    def _join_identity_relayouts(
        self, slots: _Slots, relayouts: list[tuple[int, int, Relayout]]
    ) -> None:
        """A strict relayout from a value that cannot be a splat holds only as the identity:
        its two variables share one slot from the start.

        JAX's pass makes these equalities before it searches; doing the same keeps
        both searches in step (no candidate or fuel goes to a forced value). (Not
        when widened: there the lowering's relayouts are allowed too.)
        """
        root, not_splat = self.root, self.not_splat
        joined = False
        for source_id, target_id, c in relayouts:
            if c.strict and root[source_id] in not_splat:
                joined = slots.join(source_id, target_id) or joined
        if joined:
            root = self.root = slots.roots()
            self.not_splat = {root[slot] for slot in not_splat}

    def _gather_types(self) -> None:
        """Per slot, the shapes of its variables (``shapes``, one entry per slot); SMEM
        refs' validity depends on strides and element width too (``smem_types``), TMEM
        refs' on the element width (``tmem_types``)."""
        root = self.root
        shapes: dict[int, set[tuple[int, ...]]] = {}
        smem_types: dict[int, set[SmemType]] = {}
        tmem_types: dict[int, set[TmemType]] = {}
        smem, tmem = Kind.SMEM, Kind.TMEM
        for v in self.system.variables:
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

    def _watch_constraints(self) -> None:
        """Per constraint, the slots it reads (``slots_of``) and, per slot, the constraints
        that read it (``watchers``); the constraints that offer candidates, in the
        order the search in JAX's order asks them (``candidate_order``, ``position``),
        and those only the complete search enforces (``complete_only``)."""
        n = len(self.system.variables)
        root = self.root
        self.watchers: list[list[int]] = [[] for _ in range(n)]
        self.slots_of: list[tuple[int, ...]] = []
        relayouts: list[int] = []
        sources: list[int] = []
        # The lowering requirements only the complete search enforces (they
        # hold in JAX's order); judged again when that search starts.
        self.complete_only: list[int] = []
        for ci, c in enumerate(self.constraints):
            slots: tuple[int, ...]
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
        self.candidate_order = relayouts + sources
        # Per constraint, its position in the candidate order (-1: offers no candidates).
        self.position = [-1] * len(self.constraints)
        for p, ci in enumerate(self.candidate_order):
            self.position[ci] = p

    def _start_at_the_root(self) -> None:
        """No value yet, every constraint open, an empty trail."""
        n = len(self.system.variables)
        self.value: list[Const | None] = [None] * n
        self.unassigned = len(self.shapes)
        self.open = [True] * len(self.constraints)
        self.trail: list[tuple[bool, int]] = []  # (is_value, slot or constraint index)
        self.conflict: Conflict | None = None
        # False until propagation at the root succeeded: a conflict found before
        # any decision is explained by the reasons alone.
        self.searching = False
        # The trail's length at the root (``propagate_root``): what a search undoes to.
        self.root_mark = 0
        # A variable no value of its kind can fit, found before searching.
        self.empty_slot: int | None = None
        # Per slot, why it has its current value (stale once the slot is undone).
        self.reason: dict[int, Reason] = {}
        # ``lookup`` as a closure over the two lists (neither is ever rebound):
        # judging a constraint calls it for every variable it reads.
        value_of, root_of = self.value, self.root

        def lookup(v: int) -> Const | None:
            return value_of[root_of[v]]

        self.lookup = lookup

    def _add_not_splat_closure(
        self, not_splat_vars: list[int], relayouts: list[tuple[int, int, Relayout]]
    ) -> None:
        """A value that cannot be a splat passes that on to what it relayouts into.

        Only splats may change layout, so the target of a relayout from a
        non-splat equals it. Stating this up front prunes dead branches early.
        ``relayouts`` are those between two variables (source, target, relayout).
        """
        root = self.root
        not_splat = {root[v] for v in not_splat_vars}
        edges: dict[int, list[tuple[int, Relayout]]] = {}
        for source, target, c in relayouts:
            edges.setdefault(root[source], []).append((target, c))
        stack = list(not_splat)
        while stack:
            for target, c in edges.get(stack.pop(), ()):
                if root[target] not in not_splat:
                    not_splat.add(root[target])
                    stack.append(root[target])
                    self.constraints.append(NotOfKind(Var(target), LayoutKind.SPLAT, c.origin))
        self.not_splat = not_splat

    def _merged_divides(
        self, divides: list[tuple[int, tuple[int, ...]]]
    ) -> dict[int, tuple[int, ...]]:
        """Per slot, the divisibility requirements on it (variable, multiple), merged."""
        merged: dict[int, tuple[int, ...]] = {}
        for var, multiple in divides:
            r = self.root[var]
            merged[r] = hl.merge_multiples(merged[r], multiple) if r in merged else multiple
        return merged

    # --- state ---------------------------------------------------------------------

    def divides_of(self, v: int) -> tuple[int, ...] | None:
        """The merged divisibility requirement on a variable's slot (shared by equal refs)."""
        return self.divides.get(self.root[v])

    def fits(self, slot: int, value: Const) -> bool:
        """Whether every variable of the slot can take ``value`` (JAX's valid assignment)."""
        if type(value) is Smem:
            valid = hl.smem_valid
            for shape, strides, bitwidth in self.smem_types.get(slot, ()):
                if not valid(value, shape, strides, bitwidth):
                    return False
            return True
        if type(value) is Tmem:
            return all(
                hl.tmem_fits(value, shape, bitwidth)
                for shape, bitwidth in self.tmem_types.get(slot, ())
            )
        fits = hl.fits
        for shape in self.shapes[slot]:
            if not fits(value, shape):
                return False
        return True

    def valid_for(self, var: int, value: Const) -> bool:
        """Whether this one variable can take ``value`` (what a candidate is tested on)."""
        v = self.system.variables[var]
        if type(value) is Smem:
            return hl.smem_valid(value, *_smem_type(v))
        if type(value) is Tmem:
            return hl.tmem_fits(value, v.shape, v.bitwidth)
        return hl.fits(value, v.shape)

    def assign(self, v: int, value: Const, queue: list[int]) -> bool:
        """Gives variable ``v``'s slot ``value`` (on the trail), queueing the constraints that
        watch it; False where the slot has another value or ``value`` does not fit it."""
        slot = self.root[v]
        current = self.value[slot]
        if current is not None:
            return current == value
        if not self.fits(slot, value):
            return False
        self.value[slot] = value
        self.unassigned -= 1
        self.trail.append((True, slot))
        queue.extend(self.watchers[slot])
        return True

    def close(self, ci: int) -> None:
        """Constraint ``ci`` holds whatever comes (on the trail): it is judged no more."""
        self.open[ci] = False
        self.trail.append((False, ci))

    def undo(self, mark: int) -> None:
        """Undoes every value given and constraint closed since the trail was ``mark`` long."""
        trail = self.trail
        while len(trail) > mark:
            is_value, index = trail.pop()
            if is_value:
                self.value[index] = None
                self.unassigned += 1
            else:
                self.open[index] = True

    def propagate(self, queue: list[int]) -> bool:
        """Judges the ``queue``'s constraints, and those of every value they force, until none
        is left; False at a conflict (``conflict`` says which)."""
        constraints, is_open, lookup = self.constraints, self.open, self.lookup
        complete = self.complete
        while queue:
            ci = queue.pop()
            if not is_open[ci]:
                continue
            c = constraints[ci]
            verdict = judge(c, lookup, complete)
            if verdict is HOLDS:
                self.close(ci)
            elif verdict is FAILS:
                self.conflict = Conflict(c)
                return False
            elif verdict is OPEN:
                if type(c) is Relayout and self._into_splat_from_non_splat(c):
                    self.conflict = Conflict(c)
                    return False
            else:
                assert isinstance(verdict, Forces)
                if not self.assign(verdict.var, verdict.value, queue):
                    self.conflict = Conflict(c, variable=verdict.var, value=verdict.value)
                    return False
                self.reason[self.root[verdict.var]] = Reason("forced", ci)
                self.close(ci)
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

    def propagate_root(self) -> bool:
        """The fixed values, then everything they force: the root every search starts from."""
        queue: list[int] = []
        for fixed in self.system.fixed:
            if not self.assign(fixed.var, fixed.value, queue):
                self.conflict = Conflict(None, fixed=fixed, variable=fixed.var, value=fixed.value)
                return False
            self.reason[self.root[fixed.var]] = Reason("fixed", fixed=fixed)
        queue.extend(range(len(self.constraints)))
        if not self.propagate(queue):
            return False
        self.root_mark = len(self.trail)
        self.searching = True
        return True

    # --- after a search --------------------------------------------------------------

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
        # No Fixed is a key: each stands for itself.
        original = cast("dict[Constraint | Fixed, Constraint]", self.original)
        return list(dict.fromkeys(original.get(e, e) for e in elements))

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


class DeepRecursion:
    """The searches recurse once per decision: room for one per variable, while in it.

    (A class, not a generator's context manager: every search enters one, and on a
    small kernel the generator's set-up is a tenth of the search.)
    """

    __slots__ = ("_needed", "_limit")

    def __init__(self, state: Propagation) -> None:
        self._needed = 10 * len(state.shapes) + 1000

    def __enter__(self) -> None:
        self._limit = sys.getrecursionlimit()
        sys.setrecursionlimit(max(self._limit, self._needed))

    def __exit__(self, *_: object) -> None:
        sys.setrecursionlimit(self._limit)
