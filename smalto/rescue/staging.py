"""The staging rescue (``stage_through_smem``): the transfers with no optimized plan routed
through SMEM (``smalto.rewrite.staging``), where the module as written has no layouts that
lower.

Off unless the caller asks: it grows the kernel's SMEM and adds a round trip
through it (a store, two warpgroup barriers, a load), and Pallas' contract is to
raise where an optimized transfer has no plan. Which transfers stand in the way
is found as for unoptimized transfers (``smalto.rewrite.transfers.Plan``: the
fewest whose requirement, relaxed, lets the system be solved); a copy of the
module with those routed through SMEM is then inferred, every transfer still
optimized, and only if that works is the module changed. Tried before
``allow_unoptimized``: with both on, a transfer is made unoptimized only where
staging cannot serve (too much SMEM, an op staging does not reroute).
"""

from __future__ import annotations

from collections.abc import Sequence

from jax._src.lib.mlir import ir

from smalto.basics.mlir import clone_module
from smalto.errors import StagedThroughSmemWarning
from smalto.pipeline.steps import Failure, solve_copy
from smalto.rescue.attempt import Attempt, Rescued, warn_at
from smalto.rewrite.staging import (
    STAGED_OPS,
    OverSmemLimit,
    StagedOp,
    StagingNotPossible,
    stage,
)
from smalto.smem.allocations import read_smem_map


def rescue(attempt: Attempt) -> Rescued | None:
    """The module with the transfers in the way staged through SMEM, if that infers; else
    None (with a note saying why, where there were transfers to stage)."""
    found = attempt.transfers_in_the_way()
    if found is None:
        return None  # a refused annotation, or fuel: no transfer plan stands in the way
    plan, ops = found
    if ops is None:
        return None  # no transfer stands in the way (the unoptimized rescue says so)
    program = plan.program
    others = sorted({program.ops[op].name for op in ops} - STAGED_OPS)
    if others:
        attempt.notes.append(
            f"smalto cannot stage {', '.join(others)} through SMEM (stage_through_smem): it "
            "reroutes vector_load and vector_store only"
        )
        return None
    copy = clone_module(attempt.module)
    try:
        changed = stage(copy, ops)
    except StagingNotPossible as why:
        attempt.notes.append(
            f"smalto did not stage the {len(ops)} transfer(s) with no optimized plan through "
            f"SMEM (stage_through_smem): {why}"
            + (_smem_users(attempt.module) if isinstance(why, OverSmemLimit) else "")
        )
        return None
    try:
        inference = solve_copy(copy, attempt.options)
    except Failure:
        attempt.notes.append(
            f"smalto also tried staging the {len(ops)} transfer(s) with no optimized plan "
            "through SMEM (stage_through_smem): the staged module has no layouts either"
        )
        return None
    return Rescued(inference, changed, lambda module: stage(module, ops), _warn)


def _smem_users(module: ir.Module) -> str:
    """What already takes the kernel's SMEM, largest first (``smalto smem`` shows it all)."""
    smem = read_smem_map(module)
    users = sorted(smem.allocations, key=lambda a: (-a.footprint, a.index))[:4]
    if not users:
        return ""
    lines = "".join(f"\n    {a.summary()}" for a in users)
    return f"; the kernel's SMEM ({smem.total} bytes) is taken already by:{lines}"


def warning_message(staged: StagedOp, count: int) -> str:
    return (
        f"the kernel as written has no layouts that lower; smalto staged {count} transfer(s) "
        f"through SMEM (stage_through_smem=True), every transfer optimized. {staged}"
    )


def _warn(changed: Sequence[object]) -> None:
    """One warning per staged op, shown at the user's line where there is one."""
    staged = [s for s in changed if isinstance(s, StagedOp)]
    for one in staged:
        warn_at(StagedThroughSmemWarning(warning_message(one, len(staged)), one), one.position)
