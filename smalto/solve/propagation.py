"""Propagation with a trail: the state every search of the solver works on.

Variables joined by plain equalities share one slot (union-find). Each
constraint watches the slots it reads; giving a slot a value re-judges only
those constraints. Every change goes on a trail, so backtracking undoes
exactly what a decision caused instead of copying the system. The searches
(``jax_order``, ``complete``) decide values on top of this state; ``search``
puts them together.
"""

from __future__ import annotations

import sys
from collections.abc import Callable
from typing import cast

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
from smalto.solve.widened import lowered_relayout

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


class Propagation:
    """A system's variables by slot, their values, the constraints' watchers and the trail.

    ``widened``: the state of the widened search (``smalto.solve.widened``):
    the relayouts the lowering performs stand for strict ones, and the
    lowering requirements hold from the start.
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
        self.fuel = fuel
        # Attempts, counted as JAX's pass counts its fuel (in its order, a
        # splat tried for a value that cannot be one is an attempt).
        self.spent = 0
        # The attempts that did work: each but those splats (what the
        # budget of the search in JAX's order bounds).
        self.work = 0
        self.work_limit = sys.maxsize
        # The attempts the search under way may spend (set by each search as it starts).
        self.limit = fuel
        # Whether the search in JAX's order went on past the fuel JAX's pass
        # has (``_past_jaxs_fuel``): its answer, if any, is then not JAX's.
        self.past_jaxs_fuel = False
        self.widened = widened
        self.solved = False  # what ``decide`` found
        # The lowering requirements the answer in JAX's order broke, with the
        # value it gave (what a diagnosis names when no layout lowers); or how to
        # find them, where the search in JAX's order was cut short (``search.decide``).
        self._jax_answer_breaks: list[tuple[Constraint, Const]] = []
        self._breaks_later: Callable[[], list[tuple[Constraint, Const]]] | None = None
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
        # Each by its variables' ids (the type checker knows them as variables).
        not_splat: list[int] = []  # the variable of each NotOfKind(splat)
        var_relayouts: list[tuple[int, int, Relayout]] = []  # (source, target, relayout)
        var_divides: list[tuple[int, tuple[int, ...]]] = []  # (variable, multiple)
        for c in system.constraints:
            # Expressions and constraints are final classes: `type(...) is`
            # tests them in a fraction of isinstance's time.
            if type(c) is Equal:
                lhs, rhs = c.lhs, c.rhs
                if type(lhs) is Var and type(rhs) is Var:
                    a, b = find(lhs.id), find(rhs.id)
                    if a != b:
                        parent[max(a, b)] = min(a, b)
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
        root = self.root = list(map(find, range(n)))
        self._add_not_splat_closure(not_splat, var_relayouts)
        # A strict relayout from a value that cannot be a splat holds only as
        # the identity: its two variables share one slot from the start. JAX's
        # pass makes these equalities before it searches; doing the same keeps
        # both searches in step (no candidate or fuel goes to a forced value).
        # (Not when widened: there the lowering's relayouts are allowed too.)
        joined = False
        for source_id, target_id, c in () if widened else var_relayouts:
            if c.strict and root[source_id] in self.not_splat:
                a, b = find(source_id), find(target_id)
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
        self.trail: list[tuple[bool, int]] = []  # (is_value, slot or constraint index)
        self.candidate_order = relayouts + sources
        # Per constraint, its position in the candidate order (-1: offers no candidates).
        self.position = [-1] * len(self.constraints)
        for p, ci in enumerate(self.candidate_order):
            self.position[ci] = p
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

    @property
    def jax_answer_breaks(self) -> list[tuple[Constraint, Const]]:
        """The lowering requirements the answer in JAX's order broke, with the value it gave
        each one's register variable (empty where it found none, or one that lowers)."""
        later = self._breaks_later
        if later is not None:
            self._breaks_later = None
            self._jax_answer_breaks = later()
        return self._jax_answer_breaks

    @jax_answer_breaks.setter
    def jax_answer_breaks(self, breaks: list[tuple[Constraint, Const]]) -> None:
        self._breaks_later = None
        self._jax_answer_breaks = breaks

    def find_jax_answer_breaks_later(
        self, find: Callable[[], list[tuple[Constraint, Const]]]
    ) -> None:
        """``jax_answer_breaks`` found by ``find`` when first read (the search in JAX's
        order that finds them was cut short; a diagnosis reads them, raising does not)."""
        self._breaks_later = find

    # --- set-up ----------------------------------------------------------------------

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

    def _fits(self, slot: int, value: Const) -> bool:
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

    def _valid_for(self, var: int, value: Const) -> bool:
        """Whether this one variable can take ``value`` (what a candidate is tested on)."""
        v = self.system.variables[var]
        if type(value) is Smem:
            return hl.smem_valid(value, *_smem_type(v))
        if type(value) is Tmem:
            return hl.tmem_fits(value, v.shape, v.bitwidth)
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

    def propagate_root(self) -> bool:
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
