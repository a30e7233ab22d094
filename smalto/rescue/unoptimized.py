"""The unoptimized-transfer rescue (``allow_unoptimized``): the fewest transfers made
unoptimized (``smalto.rewrite.transfers``), where the module as written has no layouts
that lower.

Off unless the caller asks: Pallas' contract is to raise where an optimized
transfer has no plan, and an unoptimized one costs speed (uncoalesced GMEM
accesses, bank-conflicted SMEM ones). The set is found on the derived system;
a copy of the module with those ops unoptimized is then inferred, and only if
that works is the module changed. One ``UnoptimizedTransferWarning`` per
changed op, at its source line: the cost, the one-word change in Pallas that
says the same, and the fast alternative.
"""

from __future__ import annotations

from collections.abc import Sequence

from smalto.basics.mlir import clone_module
from smalto.errors import UnoptimizedTransferWarning
from smalto.pipeline.steps import Failure, solve_copy
from smalto.rescue.attempt import Attempt, Rescued, warn_at
from smalto.rewrite.transfers import UnoptimizedOp, unoptimize


def rescue(attempt: Attempt) -> Rescued | None:
    """The module with the fewest transfers unoptimized, if that infers; else None (with
    a note where there were optimized transfers to try)."""
    found = attempt.transfers_in_the_way()
    if found is None:
        return None  # a refused annotation, or fuel: no transfer plan stands in the way
    plan, ops = found
    if ops is None:
        if plan.candidates:
            attempt.notes.append(
                f"smalto also tried making the kernel's {len(plan.candidates)} optimized "
                "transfer(s) unoptimized (allow_unoptimized): it has no layouts even then, so "
                "what stands in the way is not a transfer plan"
            )
        return None
    copy = clone_module(attempt.module)
    changed = unoptimize(copy, ops)
    try:
        inference = solve_copy(copy, attempt.options)
    except Failure:  # the plan's widest search said yes: a bug of smalto's, not the user's
        attempt.notes.append("smalto's unoptimized-transfer plan did not infer (a bug)")
        return None
    return Rescued(inference, changed, lambda module: unoptimize(module, ops), _warn)


def warning_message(transfer: UnoptimizedOp, count: int) -> str:
    return (
        f"the kernel as written has no layouts that lower; smalto made {count} transfer(s) "
        f"unoptimized (allow_unoptimized=True). {transfer}"
    )


def _warn(changed: Sequence[object]) -> None:
    """One warning per changed op, shown at the user's line where there is one."""
    transfers = [t for t in changed if isinstance(t, UnoptimizedOp)]
    for transfer in transfers:
        message = UnoptimizedTransferWarning(warning_message(transfer, len(transfers)), transfer)
        warn_at(message, transfer.position)
