"""Rescues: ways to change a module that has no layouts as written into one that has.

Where the pass finds no layouts (``smalto.pipeline.steps.Failure``), ``smalto.infer``
tries the rescues the caller turned on, in the order of ``RESCUES``, each
given what the pass found (``Attempt``). A rescue changes a copy of the
module and infers it; if the copy infers, it returns the solved copy and the
change (``Rescued``), else nothing. The first that works has its change
announced, then made on the module itself, which is then inferred as
written; when none works the module is left as it came, and the error is
the one about the module as written, with a note from each rescue that tried.

A rescue is turned on by a setting of ``SolveOptions`` (a keyword of
``smalto.infer_layout``), which ``RESCUES`` names with it (``rewrite``: the
unit-dim rewrite, ``unit_dims``; ``stage_through_smem``: the transfers in the
way routed through SMEM, ``staging``; ``allow_unoptimized``: the fewest
transfers made unoptimized, ``unoptimized``). To add one: a module here with a
function ``Attempt -> Rescued | None``, its entry in ``RESCUES``, and its
setting in ``SolveOptions`` with the keyword on ``infer_layout``.
"""

from __future__ import annotations

from collections.abc import Callable

from jax._src.lib.mlir import ir

from smalto.pipeline.steps import Failure, Inference
from smalto.rescue.attempt import Attempt, Rescue, Rescued
from smalto.solve.options import SolveOptions

__all__ = ["RESCUES", "Attempt", "Rescue", "Rescued", "rescue", "wants_a_rescue"]


def _unit_dims(attempt: Attempt) -> Rescued | None:
    from smalto.rescue import unit_dims

    return unit_dims.rescue(attempt)


# (Each rescue's module, and the rewrite under it, is imported when the rescue is first
# tried: a kernel that infers as written, or a refusal with the other rescues off, never
# loads them.)
def _staging(attempt: Attempt) -> Rescued | None:
    from smalto.rescue import staging

    return staging.rescue(attempt)


def _unoptimized(attempt: Attempt) -> Rescued | None:
    from smalto.rescue import unoptimized

    return unoptimized.rescue(attempt)


# (the infer_layout keyword that turns it on, whether the options turn it on, the
# rescue), in the order they are tried. The unit-dim rewrite first: it costs nothing
# at run time; then staging through SMEM, which keeps every transfer optimized at the
# cost of a round trip through SMEM; an unoptimized transfer last, where staging
# cannot serve.
RESCUES: tuple[tuple[str, Callable[[SolveOptions], bool], Rescue], ...] = (
    ("rewrite", lambda options: options.rewrite, _unit_dims),
    ("stage_through_smem", lambda options: options.stage_through_smem, _staging),
    ("allow_unoptimized", lambda options: options.allow_unoptimized, _unoptimized),
)


def wants_a_rescue(options: SolveOptions) -> bool:
    """Whether ``options`` turn any rescue on."""
    return any(wanted(options) for _, wanted, _ in RESCUES)


def rescue(
    module: ir.Module,
    failure: Failure,
    options: SolveOptions,
    *,
    solve: Callable[[ir.Module], Inference],
) -> tuple[Inference | None, list[str]]:
    """Tries the rescues ``options`` turn on, in order, on ``module``, which the pass
    found no layouts for (``failure``).

    Returns the inference of the module, changed by the first rescue that works
    (``solve``: the pass on the changed module), or None, leaving the module as it
    came; and the notes of the rescues that tried in vain.
    """
    attempt = Attempt(module, failure, options)
    for _, wanted, try_rescue in RESCUES:
        if not wanted(options):
            continue
        rescued = try_rescue(attempt)
        if rescued is None:
            continue
        change = rescued.change
        # Announced before the module changes: where the caller turns the warning
        # into an error, the module stays as it came (a failed inference changes
        # nothing). The change is deterministic: the copy's is the module's.
        rescued.announce(rescued.changed)
        del rescued  # the copy and its inference: the module itself is inferred below
        change(module)
        return solve(module), attempt.notes
    return None, attempt.notes
