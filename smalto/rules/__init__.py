"""Per-op rules: which sites share a layout, and what must hold between them.

A rule is a function ``rule(ctx, op)`` registered under the op's name, one
module per dialect (``arith``, ``vector``, ``scf``, ``memref``, ``mosaic_gpu``,
``tmem``, ``concat``, ``llvm``), all loaded with this package. It creates
variables for the op's sites (or joins them to their producer's, for memory
refs), states constraints, and fixes layouts the op imposes (``context``:
what a rule sees). A rule never solves anything. ``derive_system`` runs every
op's rule, then states the producer-to-consumer relayouts (``relayouts``).
"""

from __future__ import annotations

from smalto.constraints import System
from smalto.program import OPAQUE_REGIONS, Program, within
from smalto.reader import read_operands_of

# Each dialect's rules register themselves (``context.rule``) on import.
from smalto.rules import arith, concat, llvm, memref, mosaic_gpu, scf, tmem, vector  # noqa: F401
from smalto.rules.context import RULES, TERMINATORS, RuleContext
from smalto.rules.relayouts import vector_relayouts

__all__ = ["RULES", "TERMINATORS", "RuleContext", "consumers", "derive_system"]


def consumers() -> frozenset[str]:
    """Ops that may use a value needing a layout though their results need none.

    Every op with a rule and each terminator, but the elementwise `arith` and
    `math` ops: their operands are vectors only where their results are.
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


# The program reader reads operands only where a rule may look (``consumers``).
read_operands_of(consumers())
