"""The unit-dim rescue: values expanded by unit dims (``keepdims=True`` statistics)
computed without them (``smalto.rewrite``), where the module as written has no layouts.

The rewrite is tried on a copy first; the module itself is rewritten (the
same, deterministic rewrite) only once the copy is known to infer. A
``UnitDimRewriteWarning`` names every changed op.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

from smalto.basics.mlir import clone_module
from smalto.errors import UnitDimRewriteWarning
from smalto.pipeline.steps import Failure, solve_copy
from smalto.rescue.attempt import Attempt, Rescued, warn_at
from smalto.rewrite.webs import may_have_webs

if TYPE_CHECKING:
    from smalto.rewrite.patterns import RewrittenOp

TRIED_IN_VAIN = (
    "smalto also tried computing the values expanded by unit dims without them "
    "(the unit-dim rewrite); the rewritten module has no layouts either"
)


def rescue(attempt: Attempt) -> Rescued | None:
    """The module rewritten, if a rewritten copy infers; else None (with a note when
    there was something to rewrite)."""
    if not may_have_webs(attempt.failure.program):
        return None  # (the rewrite itself is not even imported)
    from smalto.rewrite.unit_dims import rewritable_webs, rewrite_unit_dims

    if not rewritable_webs(attempt.module):
        return None
    copy = clone_module(attempt.module)
    rewritten = rewrite_unit_dims(copy)
    try:
        inference = solve_copy(copy, attempt.options)
    except Failure:
        attempt.notes.append(TRIED_IN_VAIN)
        return None
    return Rescued(inference, rewritten, rewrite_unit_dims, _warn)


def rewrite_message(rewritten: Sequence[RewrittenOp]) -> str:
    lines = [
        f"the module as written has no layouts; smalto rewrote {len(rewritten)} ops to "
        "compute values expanded by unit dims without them (infer_layout(..., "
        "rewrite=False) turns this off):"
    ]
    lines += [f"  {record}" for record in rewritten]
    return "\n".join(lines)


def _warn(rewritten: Sequence[object]) -> None:
    """One warning naming every rewritten op, shown at the first user line it names."""
    from smalto.rewrite.patterns import RewrittenOp

    records = tuple(r for r in rewritten if isinstance(r, RewrittenOp))
    first = next((r.position for r in records if r.position is not None), None)
    warn_at(UnitDimRewriteWarning(rewrite_message(records), records), first)
