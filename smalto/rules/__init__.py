"""Per-op rules: which sites share a layout, and what must hold between them.

A rule is a function ``rule(ctx, op)`` registered under the op's name, one
module per dialect (``arith``, ``vector``, ``scf``, ``memref``, ``mosaic_gpu``,
``tmem``, ``concat``, ``llvm``), all loaded with this package. It creates
variables for the op's sites (or joins them to their producer's, for memory
refs), states constraints, and fixes layouts the op imposes (``context``:
what a rule sees). A rule never solves anything. ``derive_system`` runs every
op's rule, then states the producer-to-consumer relayouts (``vector_relayouts``,
here: the one statement of what holds along a use). ``consumers`` names the
ops whose operands the pass tells the reader to read.
"""

from __future__ import annotations

from functools import cache
from typing import cast

from smalto.constraints.language import Constraint, Relayout, Role, System, Var
from smalto.program.view import OPAQUE_REGIONS, Kind, Program, within

# Each dialect's rules register themselves (``context.rule``) on import.
from smalto.rules import arith, concat, llvm, memref, mosaic_gpu, scf, tmem, vector  # noqa: F401
from smalto.rules.context import RULES, TERMINATORS, RuleContext

__all__ = ["RULES", "TERMINATORS", "RuleContext", "consumers", "derive_system"]


@cache
def consumers() -> frozenset[str]:
    """Ops that may use a value needing a layout though their results need none: what the
    pass tells the reader to read (``smalto.program.reader.read_program``).

    Every op with a rule and each terminator, but the elementwise `arith` and
    `math` ops: their operands are vectors only where their results are.
    (One set, made once every rule has registered: the reader keeps its table
    of what to do with each op name per set.)
    """
    return frozenset(
        name for name in RULES if not name.startswith(("arith.", "math."))
    ) | frozenset(TERMINATORS)


def derive_system(program: Program, arch: tuple[int, int]) -> System:
    """Runs every op's rule and adds the producer/consumer relayouts."""
    ctx = RuleContext(program, arch)
    rules = RULES
    opaque: dict[int, bool] = {}
    ops, made = program.ops, program.ops.made
    # Pre-order, as a recursive visit would go; only the ops with layouts, and
    # none inside an already lowered body.
    for op_id in program.layout_ops:
        op = made[op_id] or ops[op_id]
        name = op.name
        if name in TERMINATORS:
            continue
        # ``within``'s memo, asked here first: most ops share a parent.
        parent = op.parent
        if parent is not None:
            inside = opaque.get(parent)
            if inside is None:
                inside = within(program, op, OPAQUE_REGIONS, opaque)
            if inside:
                continue
        rule_fn = rules.get(name)
        if rule_fn is None:
            raise NotImplementedError(
                f"No layout inference rule defined for `{name}` at {op.where}: smalto "
                "has no layout rule for it"
            )
        rule_fn(ctx, op)
    ctx.system.constraints.extend(vector_relayouts(ctx))
    return ctx.system


# The relayouts between a register value's producer and each of its consumers.
# Every rule states what holds at its own op; what holds along each use of a
# register value (only a splat may change layout on the way) is stated here,
# once all rules have run and the variables of every site are known.
# Restated by the checker in ``smalto.check.flow`` with ``smalto.check.relayouts``
# (policy: docs/rules_and_checks.md).

_OPERAND, _RESULT = Role.OPERAND, Role.RESULT


def vector_relayouts(ctx: RuleContext) -> list[Constraint]:
    """Producer-to-consumer relayouts between register variables.

    Each register operand's producer must convert to it; with ``strict`` only
    splats may change layout, so in practice producer and consumer agree.
    """
    system, program = ctx.system, ctx.program
    values, ops, made = program.values, program.ops, ctx._made
    vectors = [v for v in system.variables if v.kind == Kind.VECTOR]
    # One pass over the register sites first: the variable of each value's
    # defining site and of each operand, keyed by plain ints (building and
    # hashing Site objects for each lookup would cost several times more).
    # A register value's producer and users are register sites, so these
    # two maps hold every variable the loop below asks for.
    defined_in: dict[int, int] = {}
    used_in: dict[tuple[int, int], int] = {}
    # Per variable, its sites as (op id, whether an operand, index, value id).
    site_values: list[list[tuple[int, bool, int, int]]] = []
    # One expression per variable, shared by its relayouts (records are never changed).
    exprs: dict[int, Var] = {}
    for variable in vectors:
        var = variable.id
        exprs[var] = Var(var)
        entries = []
        for op_id, role, index, region in variable.sites:
            # _value_id, inline.
            op = made[op_id] or ops[op_id]
            if role is _OPERAND:
                vid = op.operands[index]
                used_in[(op_id, index)] = var
            else:
                # A block argument's site names its region (Site.region is None elsewhere).
                vid = (
                    op.results[index]
                    if role is _RESULT
                    else op.regions[cast(int, region)][0][0][index]
                )
                defined_in[vid] = var
            entries.append((op_id, role is _OPERAND, index, vid))
        site_values.append(entries)
    out: list[Constraint] = []
    visited: set[int] = set()
    for variable, entries in zip(vectors, site_values, strict=True):
        var = variable.id
        this = exprs[var]
        for op_id, is_operand, _, vid in entries:
            value = values[vid]
            bitwidth = value.bitwidth or 0
            if is_operand:
                source = defined_in.get(vid) if value.producer is not None else None
                if source is not None and source not in visited:
                    out.append(Relayout(exprs[source], this, bitwidth, True, op_id))
            else:
                for user, index in value.uses:
                    target = used_in.get((user, index))
                    if target is not None and target not in visited:
                        out.append(Relayout(this, exprs[target], bitwidth, True, user))
        visited.add(var)
    return out
