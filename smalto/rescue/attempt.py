"""What a rescue is given (``Attempt``) and what it gives back when it works (``Rescued``)."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

from jax._src.lib.mlir import ir

from smalto.pipeline.steps import Failure, Inference
from smalto.solve.options import SolveOptions


@dataclass
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


@dataclass(frozen=True)
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
