"""Rule for `mosaic_gpu.vector_concat`: joining vectors along one dimension.

The lowering stacks the operands' register arrays along ``dimension``, so every
operand must be in the result's layout (a tiled one: the concatenation of
splats or strided vectors is not implemented). Nothing in the op proposes a
layout: it has to come from the values around it.

Restated by the checker in ``smalto.check.mosaic_gpu`` (``vector_concat``), which
also takes strided values joined along dim 0 (the lowering does; JAX's inference
does not; policy: docs/rules_and_checks.md).
"""

from __future__ import annotations

from smalto.constraints.language import Equal, LayoutKind, Var
from smalto.program.view import Op
from smalto.rules.context import RuleContext, rule


@rule("mosaic_gpu.vector_concat")
def vector_concat(ctx: RuleContext, op: Op) -> None:
    """Operands and result share one tiled layout (each of its own shape)."""
    result = ctx.new_var(ctx.result(op, 0))
    ctx.not_of_kind(result, op, LayoutKind.SPLAT, LayoutKind.STRIDED)
    # One variable per operand, equal to the result's: the shapes differ along
    # ``dimension``, so they cannot be sites of one variable, but a tiled
    # layout does not depend on the shape.
    for i in range(len(op.operands)):
        operand = ctx.new_var(ctx.operand(op, i))
        ctx.require(Equal(Var(operand), Var(result), op.id))
