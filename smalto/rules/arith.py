"""Rules for `arith` and `math`: pointwise ops and constants.

Restated by the checker in ``smalto.check.arith`` (policy: docs/rules_and_checks.md).
"""

from __future__ import annotations

from jax._src.lib.mlir import ir

from smalto.basics.elementwise import ELEMENTWISE
from smalto.constraints.language import LayoutKind, RegisterBits, Role, Site, Var
from smalto.hw import layouts as hl
from smalto.program.view import Kind, Op
from smalto.rules.context import RuleContext, rule

# One layout for operands and result (``smalto.basics.elementwise``).
POINTWISE = ELEMENTWISE
_OPERAND, _RESULT = Role.OPERAND, Role.RESULT


@rule(*POINTWISE)
def pointwise(ctx: RuleContext, op: Op) -> None:
    """All vector operands and results of an elementwise op share one layout."""
    values = ctx.program.values
    vector, op_id = Kind.VECTOR, op.id
    sites = [
        Site(op_id, _OPERAND, i) for i, v in enumerate(op.operands) if values[v].kind is vector
    ]
    sites += [Site(op_id, _RESULT, i) for i, v in enumerate(op.results) if values[v].kind is vector]
    # The result's type gives the variable's element type (for default layouts).
    var = ctx.new_var(*sites, key=sites[-1])
    if op.name in hl.CONVERSIONS:
        bitwidth = values[op.results[0]].bitwidth
        if bitwidth is not None and bitwidth % 8:
            ctx.require(RegisterBits(Var(var), bitwidth, 8, op.id))
        if hl.packs_sub_byte_registers(
            op.name, _element(values[op.operands[0]].type), _element(values[op.results[0]].type)
        ):
            # (A splat producer still converts to a tiled layout at this use.)
            ctx.not_of_kind(var, op, LayoutKind.SPLAT)


def _element(ty: ir.Type) -> ir.Type | None:
    try:
        return ir.ShapedType(ty).element_type
    except ValueError:
        return None


@rule("arith.constant")
def constant(ctx: RuleContext, op: Op) -> None:
    """A splat constant starts as a splat; a dense one must be laid out in registers."""
    var = ctx.new_var(Site(op.id, _RESULT, 0))
    if ctx.is_splat_constant(op.operation.attributes["value"]):
        ctx.fix(var, ctx.splat(ctx.system.variables[var].shape), op, "the constant")
    else:
        ctx.not_of_kind(var, op, LayoutKind.SPLAT)
