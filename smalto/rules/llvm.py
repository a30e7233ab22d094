"""Rules for the few `llvm` ops that carry vectors.

The checker has no rule for them: ``smalto.check.flow`` checks what flows in and out
(policy: docs/rules_and_checks.md).
"""

from __future__ import annotations

from smalto.program.view import Op
from smalto.rules.context import RuleContext, rule


@rule("llvm.mlir.undef", "ub.poison")
def undefined(ctx: RuleContext, op: Op) -> None:
    """An undefined vector is free: it takes whatever layout its users need."""
    ctx.new_var(ctx.result(op, 0))
