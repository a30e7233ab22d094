"""Rules for `scf`: loops and switches carry layouts through their regions.

Restated by the checker in ``smalto.check.scf`` (policy: docs/rules_and_checks.md).
"""

from __future__ import annotations

from smalto.program.view import Kind, Op
from smalto.rules.context import RuleContext, rule

# scf.for's lower bound, upper bound and step come before the loop-carried values.
_FOR_BOUNDS = 3


def _terminator(ctx: RuleContext, op: Op, region: int, name: str) -> Op:
    _, body = op.regions[region][0]
    terminator = ctx.program.ops[body[-1]]
    if terminator.name != name:
        raise NotImplementedError(f"`{op.name}` region ending in `{terminator.name}`")
    return terminator


@rule("scf.for")
def for_loop(ctx: RuleContext, op: Op) -> None:
    """An iter_arg, its block argument, the loop result and the yielded value agree."""
    yield_op = _terminator(ctx, op, 0, "scf.yield")
    values = ctx.program.values
    for index in range(_FOR_BOUNDS, len(op.operands)):
        value = values[op.operands[index]]
        if value.kind != Kind.VECTOR and value.kind != Kind.SMEM:
            continue
        carried = index - _FOR_BOUNDS
        sites = (
            ctx.operand(op, index),
            ctx.argument(op, 0, carried + 1),  # argument 0 is the induction variable
            ctx.result(op, carried),
            ctx.operand(yield_op, carried),
        )
        if value.kind == Kind.VECTOR:
            ctx.new_var(*sites)
        else:
            ctx.add_sites(ctx.ref(op, index), *sites)


@rule("scf.while")
def while_loop(ctx: RuleContext, op: Op) -> None:
    """Operands flow to `before` and back from `after`; results come from the condition."""
    condition = _terminator(ctx, op, 0, "scf.condition")
    yield_op = _terminator(ctx, op, 1, "scf.yield")
    values = ctx.program.values
    for i, v in enumerate(op.operands):
        if values[v].kind == Kind.VECTOR:
            ctx.new_var(ctx.operand(op, i), ctx.argument(op, 0, i), ctx.operand(yield_op, i))
    for i, v in enumerate(op.results):
        if values[v].kind == Kind.VECTOR:
            # The condition's operand 0 is the boolean.
            ctx.new_var(ctx.result(op, i), ctx.argument(op, 1, i), ctx.operand(condition, i + 1))


@rule("scf.index_switch")
def index_switch(ctx: RuleContext, op: Op) -> None:
    """Each result agrees with the value every case yields for it."""
    values = ctx.program.values
    yields = [_terminator(ctx, op, r, "scf.yield") for r in range(len(op.regions))]
    for i, v in enumerate(op.results):
        if values[v].kind == Kind.VECTOR:
            ctx.new_var(ctx.result(op, i), *(ctx.operand(y, i) for y in yields))
