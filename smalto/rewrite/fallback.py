"""When the module as written has no layouts: try it rewritten, keep it only if that infers.

The rewrite is tried on a copy first; the module itself is rewritten (the
same, deterministic rewrite) only once the copy is known to infer. So a
failure leaves the module exactly as it came, and the error raised is the one
about the module as written, with a note that the rewrite was tried.
"""

from __future__ import annotations

import warnings
from collections.abc import Callable

from jax._src.lib.mlir import ir

from smalto.errors import InferenceError, UnitDimRewriteWarning
from smalto.mlir import clone_module
from smalto.rewrite.patterns import RewrittenOp
from smalto.rewrite.unit_dims import rewritable_webs, rewrite_unit_dims


def solve_rewritten[Solved](
    module: ir.Module,
    error: InferenceError,
    *,
    solve_copy: Callable[[ir.Module], object],
    solve: Callable[[ir.Module], Solved],
) -> Solved:
    """The result of ``solve`` on ``module`` rewritten, if a rewritten copy of it
    solves (``solve_copy``); else raises ``error``, the failure of the module as
    written, and leaves ``module`` untouched.

    Warns (``UnitDimRewriteWarning``) with every op it changed.
    """
    if not rewritable_webs(module):
        raise error
    copy = clone_module(module)
    rewrite_unit_dims(copy)
    try:
        solve_copy(copy)
    except InferenceError:
        solved = False
    else:
        solved = True
    del copy
    if not solved:
        error.add_note(
            "smalto also tried computing the values expanded by unit dims without them "
            "(the unit-dim rewrite); the rewritten module has no layouts either"
        )
        raise error
    rewritten = rewrite_unit_dims(module)
    result = solve(module)
    _warn(rewritten)
    return result


def rewrite_message(rewritten: tuple[RewrittenOp, ...]) -> str:
    lines = [
        f"the module as written has no layouts; smalto rewrote {len(rewritten)} ops to "
        "compute values expanded by unit dims without them (infer_layout(..., "
        "rewrite=False) turns this off):"
    ]
    lines += [f"  {record}" for record in rewritten]
    return "\n".join(lines)


def _warn(rewritten: tuple[RewrittenOp, ...]) -> None:
    """One warning naming every rewritten op, shown at the first user line it names."""
    message = UnitDimRewriteWarning(rewrite_message(rewritten), rewritten)
    for record in rewritten:
        position = record.position
        if position is not None:
            warnings.warn_explicit(message, UnitDimRewriteWarning, position.file, position.line)
            return
    warnings.warn(message, stacklevel=5)
