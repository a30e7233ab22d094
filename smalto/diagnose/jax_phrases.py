"""JAX 0.12.0.1's words for a failed inference, chosen as its pass chooses them.

Code and tests written against JAX's pass match on its messages, so smalto's
errors start with the sentence JAX raises for the same kernel, and only then
say more. JAX picks the sentence this way (the rules below restate it):

1. it propagates the system without searching, in rounds over the
   constraints in derivation order; if a round meets a contradiction, it
   looks, under the values known when that round began, for the first
   constraint that is false and is a transfer, a relayout or an equality of
   register layouts, and names it;
2. else, for a ref whose divisibility requirement no possible tiling meets,
   it names the TMA index not known to be a multiple of the tile;
3. else it says the layout casts are unsatisfiable.

smalto's system is not JAX's constraint for constraint (smalto merges plain
equalities, states a few more facts), so on unusual kernels the sentence may
differ; on the usual ones (a cast that cannot relayout, a ref whose
transforms fit no transfer, an unaligned TMA index) it is JAX's.
"""

from __future__ import annotations

from typing import cast

from jax._src.lib.mlir import ir

from smalto.basics.records import value_class
from smalto.constraints.language import (
    Constraint,
    Divides,
    Equal,
    LayoutKind,
    NotOfKind,
    Relayout,
    SmemTransfer,
    System,
    Var,
    allowed_layouts,
)
from smalto.errors import FAILURE_PREFIX
from smalto.hw import layouts as hl
from smalto.hw.jax_text import layout_text, ref_text
from smalto.hw.values import Const, Reg, Smem
from smalto.program.view import Op, Program
from smalto.solve.evaluate import FAILS, HOLDS, OPEN, Forces, Lookup, judge, simplify

UNSATISFIABLE = (
    f"{FAILURE_PREFIX}. This should only happen if user-provided layout casts are "
    "unsatisfiable. To dump the constraint system for debugging, use "
    "`MOSAIC_GPU_DUMP_CONSTRAINT_SYSTEM=1`."
)
OUT_OF_FUEL = (
    "Layout inference failed to find a solution. Consider adding layout annotations to "
    "your program to guide the search."
)
# JAX's propagation is quadratic at worst; past this many rounds (a chain of
# forced values this long) smalto stops imitating it and says the generic sentence.
_MAX_ROUNDS = 200


@value_class(frozen=True)
class Phrase:
    """JAX's message for a failure, and the op it blames (``None``: it blames none)."""

    text: str
    op: int | None = None
    # Where the propagation met the contradiction, where JAX's words blame no op: the
    # line a traceback ends at (the kernel's own line, not the pass's).
    culprit: int | None = None


def unsatisfiable(program: Program, system: System) -> Phrase:
    """JAX's message for a kernel with no layout assignment."""
    known, culprit = _values_at_contradiction(system)
    if known is not None:
        found = _first_specific(system, known)
        if found is not None:
            return found
    found = _unprovable_index(program, system)
    if found is not None:
        return found
    return Phrase(UNSATISFIABLE, culprit=culprit)


# --- 1. propagation without search ---------------------------------------------------------


def _not_splat(system: System) -> set[int]:
    """Variables that cannot be splat, closed over relayouts (a relayout keeps non-splats)."""
    found = {
        c.expr.id
        for c in system.constraints
        if isinstance(c, NotOfKind) and c.kind is LayoutKind.SPLAT and isinstance(c.expr, Var)
    }
    relayouts = [
        (c.source.id, c.target.id)
        for c in system.constraints
        if isinstance(c, Relayout) and isinstance(c.source, Var) and isinstance(c.target, Var)
    ]
    grew = True
    while grew:
        grew = False
        for source, target in relayouts:
            if source in found and target not in found:
                found.add(target)
                grew = True
    return found


def _values_at_contradiction(system: System) -> tuple[dict[int, Const] | None, int | None]:
    """The values known when a round of propagation met a contradiction, else None; and
    the op of the requirement it met it at (or of a fixed value that contradicts another).

    Conflicting fixed values are no such contradiction: JAX meets them while
    gathering the rules and says the generic sentence.
    """
    shapes = {v.id: v.shape for v in system.variables}
    known: dict[int, Const] = {}
    # Here, and only here, a fixed layout is not one option among others: JAX states
    # what an op fixes as an assignment, known before the first round (two that disagree
    # fail before any), and an op's options as a ``OneOf`` constraint (one option is an
    # equality, settled during the first round; several settle nothing). The values a
    # round begins with, and so the sentence, follow how JAX's rule states it.
    for fixed in system.fixed:
        if known.setdefault(fixed.var, fixed.value) != fixed.value:
            return None, fixed.origin
    not_splat = _not_splat(system)
    # A strict relayout from a value that cannot be splat holds only as equality.
    pending = [
        Equal(c.source, c.target, c.origin)
        if isinstance(c, Relayout) and c.strict and isinstance(c.source, Var)
        and c.source.id in not_splat
        else c
        for c in system.constraints
    ]  # fmt: skip
    for _ in range(_MAX_ROUNDS):
        at_start = dict(known)
        lookup = known.get
        remaining = []
        changed = False
        for c in pending:
            verdict = judge(c, lookup)
            if verdict is HOLDS:
                changed = True
            elif verdict is FAILS:
                return at_start, c.origin
            elif verdict is OPEN:
                if _into_splat(c, lookup, not_splat):
                    return at_start, c.origin
                remaining.append(c)
            else:
                assert isinstance(verdict, Forces)
                var, value = verdict.var, verdict.value
                if known.get(var, value) != value or not hl.fits(value, shapes[var]):
                    return at_start, c.origin
                known[var] = value
                changed = True
        if not changed:
            return None, None
        pending = remaining
    return None, None


def _into_splat(c: Constraint, lookup: Lookup, not_splat: set[int]) -> bool:
    """A relayout of a value that cannot be splat into a splat: never holds."""
    if not (isinstance(c, Relayout) and isinstance(c.source, Var) and c.source.id in not_splat):
        return False
    target = simplify(c.target, lookup)
    return isinstance(target, Reg) and target.is_splat


def _first_specific(system: System, known: dict[int, Const]) -> Phrase | None:
    """The first constraint, in derivation order, false under ``known`` and one JAX names."""
    lookup = known.get
    for c in system.constraints:
        match c:
            case SmemTransfer():
                smem, reg = simplify(c.smem, lookup), simplify(c.reg, lookup)
                if isinstance(smem, Smem) and isinstance(reg, Reg) and judge(c, lookup) is FAILS:
                    optimized = "" if c.mode.value == "unoptimized" else "optimized "
                    return Phrase(
                        f"{FAILURE_PREFIX}: no {optimized}SMEM <-> registers transfer plan "
                        f"could be synthesized for register layout {layout_text(reg)} and "
                        f"{ref_text(smem)}",
                        c.origin,
                    )
            case Relayout():
                source, target = simplify(c.source, lookup), simplify(c.target, lookup)
                if not (isinstance(source, Reg) and isinstance(target, Reg)) or source == target:
                    continue
                if c.strict and not source.is_splat:
                    # JAX reads a strict relayout from a tiled or strided layout as equality.
                    return _not_equal(source, target, c.origin)
                if not hl.relayout_allowed(source, target, c.bitwidth, c.strict):
                    return Phrase(
                        f"{FAILURE_PREFIX}: cannot relayout from register layout "
                        f"{layout_text(source)} to {layout_text(target)}",
                        c.origin,
                    )
            case Equal():
                lhs, rhs = simplify(c.lhs, lookup), simplify(c.rhs, lookup)
                if isinstance(lhs, Reg) and isinstance(rhs, Reg) and lhs != rhs:
                    return _not_equal(lhs, rhs, c.origin)
    return None


def _not_equal(a: Reg, b: Reg, origin: int) -> Phrase:
    return Phrase(
        f"{FAILURE_PREFIX}: expected register layouts {layout_text(a)} and {layout_text(b)} "
        "to be equal",
        origin,
    )


# --- 2. divisibility of TMA indices ------------------------------------------------------


def _unprovable_index(program: Program, system: System) -> Phrase | None:
    """A TMA copy whose index no possible tiling of its ref divides, for want of a proof."""
    from smalto.rules.attributes import ints
    from smalto.rules.divisibility import Divisibility

    groups = _equal_groups(system)
    divides: dict[int, list[Divides]] = {}
    for c in system.constraints:
        if isinstance(c, Divides) and isinstance(c.expr, Var):
            divides.setdefault(groups[c.expr.id], []).append(c)
    if not divides:
        return None
    candidates = _tiling_candidates(system, groups)
    divisibility = Divisibility(program)
    for group, requirements in divides.items():
        tilings = candidates.get(group, [])
        multiple = _merged(requirements)
        if any(_divides(t, multiple) for t in tilings):
            continue
        for op_id in _copies_of(program, system, groups, group):
            op = program.ops[op_id]
            indices = _index_operands(op)
            lengths = ints(op.operation.attributes["slice_lengths"])
            if len(indices) != len(multiple):
                continue  # squeezed dims: JAX trips over its own assertion here
            for tiling in tilings:
                if len(tiling) > len(multiple):
                    continue
                for back in range(1, len(tiling) + 1):
                    if multiple[-back] % tiling[-back] == 0:
                        continue
                    if divisibility.known_divisor(lengths[-back], indices[-back]) != 1:
                        continue
                    return Phrase(
                        f"{FAILURE_PREFIX}. You need to prove the divisibility of index "
                        f"{len(indices) - back} using pl.multiple_of.",
                        op_id,
                    )
    return None


def _equal_groups(system: System) -> dict[int, int]:
    """Each variable's representative among those plain equalities tie together."""
    parent = list(range(len(system.variables)))

    def find(v: int) -> int:
        while parent[v] != v:
            parent[v] = parent[parent[v]]
            v = parent[v]
        return v

    for c in system.constraints:
        if isinstance(c, Equal) and isinstance(c.lhs, Var) and isinstance(c.rhs, Var):
            parent[find(c.lhs.id)] = find(c.rhs.id)
    return {v: find(v) for v in range(len(parent))}


def _tiling_candidates(system: System, groups: dict[int, int]) -> dict[int, list[tuple[int, ...]]]:
    """The tilings a ref can only have: those its requirements allow (a fixed one, the
    options of an MMA operand), fixed ones first."""
    out: dict[int, list[tuple[int, ...]]] = {}
    for element in (*system.fixed, *system.constraints):
        allowed = allowed_layouts(element)
        if allowed is None:
            continue
        tilings = [
            v.tiling for v in allowed.layouts if isinstance(v, Smem) and v.tiling is not None
        ]
        out.setdefault(groups[allowed.var], []).extend(tilings)
    return out


def _merged(requirements: list[Divides]) -> tuple[int, ...]:
    """One divisibility requirement for several: the gcd of the trailing entries."""
    import math

    rank = min(len(d.multiple) for d in requirements)
    return tuple(
        math.gcd(*(d.multiple[len(d.multiple) - rank + i] for d in requirements))
        for i in range(rank)
    )


def _divides(tiling: tuple[int, ...], multiple: tuple[int, ...]) -> bool:
    if len(tiling) > len(multiple):
        return False
    return all(m % t == 0 for t, m in zip(reversed(tiling), reversed(multiple), strict=False))


_TMA_COPIES = {"mosaic_gpu.async_load": 3, "mosaic_gpu.async_store": 2}  # index segment


def _copies_of(program: Program, system: System, groups: dict[int, int], group: int) -> list[int]:
    """The TMA copies (async_load/async_store) that require a ref's group to divide a slice."""
    ops = [
        c.origin
        for c in system.constraints
        if isinstance(c, Divides)
        and isinstance(c.expr, Var)
        and groups[c.expr.id] == group
        and program.ops[c.origin].name in _TMA_COPIES
    ]
    return list(dict.fromkeys(ops))


def _index_operands(op: Op) -> list[int]:
    """Value ids of a TMA copy's indices (the segment after ref, ref and barrier operands)."""
    # The bindings hand the attribute back as its own class; their stubs say only Attribute.
    sizes = cast(ir.DenseI32ArrayAttr, op.operation.attributes["operandSegmentSizes"])
    segments = [sizes[i] for i in range(len(sizes))]
    position = _TMA_COPIES[op.name]
    start = sum(segments[:position])
    return list(op.operands[start : start + segments[position]])
