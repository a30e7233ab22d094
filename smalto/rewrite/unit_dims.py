"""The unit-dim rewrite of a whole module: find the webs, apply the patterns."""

from __future__ import annotations

from collections.abc import Callable
from functools import partial

from jax._src.lib.mlir import ir

from smalto.program.view import ops_in_order
from smalto.rewrite import patterns
from smalto.rewrite.patterns import RewrittenOp
from smalto.rewrite.webs import Web, find_webs


def rewritable_webs(module: ir.Module) -> list[Web]:
    """The webs the rewrite would change (none blocked)."""
    return [web for web in find_webs(module) if web.blocked is None]


def rewrite_unit_dims(module: ir.Module) -> tuple[RewrittenOp, ...]:
    """Rewrites ``module`` in place so that values expanded by unit dims and
    broadcast later are computed without those dims; returns what changed, in
    program order (empty when nothing could be: the module is then untouched).

    Must run inside the module's context. Deterministic: the same module gives
    the same rewrite.
    """
    # (An op's hash changes with the op, so every op is looked up before any
    # changes: the steps are planned first, then run.)
    positions = {op: i for i, op in enumerate(ops_in_order(module.operation))}
    webs = rewritable_webs(module)
    Step = tuple[int, Callable[[], RewrittenOp]]
    definitions: list[Step] = []
    users: list[Step] = []
    expansions: list[Step] = []
    dead: list[ir.Operation] = []
    for web in webs:
        members = set(web.members)
        for op in web.constants:
            definitions.append((positions[op], partial(patterns.squeeze_constant, op, web)))
        for op in web.splats:
            definitions.append((positions[op], partial(patterns.squeeze_splat_broadcast, op, web)))
        for op in web.iotas:
            definitions.append((positions[op], partial(patterns.squeeze_iota, op, web)))
        for op in web.computed:
            values: list[ir.Value] = list(op.results)
            definitions.append((positions[op], partial(patterns.squeeze_values, op, values, web)))
        for op in web.carriers:
            carried: list[ir.Value] = [r for r in op.results if r in members]
            carried += [
                a
                for region in op.regions
                for block in region.blocks
                for a in block.arguments
                if a in members
            ]
            definitions.append((positions[op], partial(patterns.squeeze_values, op, carried, web)))
        for op in web.folds:
            users.append((positions[op], partial(patterns.fold_broadcast, op, web)))
        for op in web.squeezes:
            users.append((positions[op], partial(patterns.fold_squeeze, op, web)))
            dead.append(op)
        for op in web.reductions:
            users.append((positions[op], partial(patterns.narrow_reduction, op, web)))
        for user, number in web.expand_for:
            users.append((positions[user], partial(patterns.expand_for_use, user, number, web)))
        for op in web.expansions:
            expansions.append((positions[op], partial(patterns.drop_expansion, op, web)))
            dead.append(op)
    # Definitions first, in place: once they are retyped, every user that
    # stays sees the Q value (or, for an expansion, its result until it goes).
    # Then the users outside the webs; last the expansions, whose users (the
    # folded broadcasts, the new expansions) take their Q operand.
    changes = [(position, step()) for position, step in (*definitions, *users, *expansions)]
    for op in dead:
        op.erase()
    changes.sort(key=lambda change: change[0])
    return tuple(record for _, record in changes)
