"""Requirements of `arith` and `math` ops: elementwise ops and constants.

The solver's statement: ``smalto.rules.arith`` (policy: docs/rules_and_checks.md).
"""

from __future__ import annotations

from jax._src.lib.mlir import ir

from smalto.check.core import (
    OUT,
    Checker,
    rule,
)
from smalto.check.names import describe
from smalto.hw import layouts as hl
from smalto.program.view import Kind, Op


def elementwise(c: Checker, op: Op) -> None:
    """Elementwise ops compute each element in place: one layout for all their vectors."""
    c.same(op, c.vector_sites(op), "an elementwise op keeps one layout")
    if op.name in hl.CONVERSIONS and c.program.values[op.results[0]].kind == Kind.VECTOR:
        bitwidth = c.value(op, OUT, 0).bitwidth
        layout = c.reg(op, OUT, 0)
        if bitwidth and layout is not None and not hl.registers_hold_bits(layout, bitwidth, 8):
            c.report(
                op,
                f"the result is {describe(layout)}: a conversion into {bitwidth}-bit elements "
                "makes whole bytes of each register, so needs vector registers of a multiple "
                "of 8 bits",
            )
        source = ir.ShapedType(c.program.values[op.operands[0]].type).element_type
        result = ir.ShapedType(c.program.values[op.results[0]].type).element_type
        if (
            layout is not None
            and layout.is_splat
            and hl.packs_sub_byte_registers(op.name, source, result)
        ):
            c.report(
                op,
                f"the value is {describe(layout)}: a conversion from {source} to {result} "
                "packs vector registers into words, which a splat does not have",
            )


@rule("arith.constant")
def _constant(c: Checker, op: Op) -> None:
    if not op.results or c.program.values[op.results[0]].kind != Kind.VECTOR:
        return
    attr = op.operation.attributes["value"]
    shape = c.value(op, OUT, 0).shape
    if isinstance(attr, ir.DenseElementsAttr) and ir.DenseElementsAttr(attr).is_splat:
        c.expect(op, OUT, 0, hl.splat(shape), "a splat constant")
    else:
        c.not_kinds(op, OUT, 0, splat=True, strided=False)
