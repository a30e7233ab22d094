"""The relayouts between a register value's producer and each of its consumers.

Every rule states what holds at its own op; what holds along each use of a
register value (only a splat may change layout on the way) is stated here,
once all rules have run and the variables of every site are known.

Restated by the checker in ``smalto.check.flow`` with ``smalto.check.relayouts``
(policy: docs/rules_and_checks.md).
"""

from __future__ import annotations

from smalto.constraints import Constraint, Relayout, Role, Var
from smalto.program import Kind
from smalto.rules.context import RuleContext

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
                vid = (
                    op.results[index] if role is _RESULT else op.regions[region][0][0][index]  # type: ignore[index]
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
