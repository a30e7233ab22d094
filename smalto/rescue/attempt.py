"""What a rescue is given (``Attempt``) and what it gives back when it works (``Rescued``)."""

from __future__ import annotations

import warnings
from collections.abc import Callable, Sequence
from dataclasses import field
from typing import TYPE_CHECKING

from jax._src.lib.mlir import ir

from smalto.basics.records import value_class
from smalto.pipeline.steps import Failure, Inference, Unsatisfiable
from smalto.solve.options import SolveOptions
from smalto.source.locations import FilePosition

if TYPE_CHECKING:
    from smalto.rewrite.transfers import Plan


@value_class()
class Attempt:
    """A module that has no layouts as written, and what the pass found on it.

    A rescue changes a copy of ``module``, never the module itself, inferring
    it with the same ``options``. ``notes`` collects what the rescues tried in
    vain: the error about the module as written ends with them.
    """

    module: ir.Module
    failure: Failure
    options: SolveOptions
    notes: list[str] = field(default_factory=list)
    # The transfers in the way, found once for the rescues that ask (``transfers_in_the_way``).
    _in_the_way: tuple[Plan, list[int] | None] | None = field(default=None, repr=False)

    def transfers_in_the_way(self) -> tuple[Plan, list[int] | None] | None:
        """The plan over the failed system's optimized transfers and the fewest of them
        whose requirements, relaxed, let it be solved (None: not even all of them); None
        where the failure is no unsatisfiable system (a refused annotation, fuel). Found
        once: staging and unoptimized transfers ask the same question."""
        failure = self.failure
        if not isinstance(failure, Unsatisfiable):
            return None
        if self._in_the_way is None:
            from smalto.rewrite.transfers import Plan

            plan = Plan(failure.program, failure.system, self.options)
            self._in_the_way = plan, plan.fewest()
        return self._in_the_way


@value_class(frozen=True)
class Rescued:
    """A rescue that worked on a copy of the module.

    ``inference``: the solved inference of the changed copy; ``changed``: what
    the change did to the copy (the ops, for the user). ``change`` makes the
    same change on the module itself (a rescue's changes are deterministic);
    ``announce`` tells the user what changed (warnings), before the module is
    changed.
    """

    inference: Inference
    changed: Sequence[object]
    change: Callable[[ir.Module], Sequence[object]]
    announce: Callable[[Sequence[object]], None]


# A rescue: given an attempt, a solved copy and how to change the module, or None.
Rescue = Callable[[Attempt], Rescued | None]


def warn_at(message: Warning, position: FilePosition | None) -> None:
    """Shows a rescue's warning at the user's source line ``position``; where it has none,
    at the line that called ``infer_layout`` (past this, the rescue's announcement, the
    rescues and the pass)."""
    if position is not None:
        warnings.warn_explicit(message, type(message), position.file, position.line)
    else:
        warnings.warn(message, stacklevel=6)
