"""Turning a failed inference into words a kernel author can act on.

- ``problems``: every independent problem of a kernel, one after the other,
  each set aside by its likeliest fix before the next is looked for;
- ``conflict``: from a system with no solution, a minimal set of requirements
  that cannot hold together (found by ``core``, over just the variables they
  mention: ``subsystem``), each with the op that imposed it and where, and
  what the values involved were forced to;
- ``origins``: where each value of the conflict is defined (for a cast
  result, the cast and what it casts);
- ``edits``, ``candidates``, ``verify``: the single edits of the user's
  annotations that could resolve it, tried on a copy of the module; only
  those that make inference succeed and the checker accept are suggested;
- ``suggest``: the suggestion, in Pallas terms, from those edits (else a hint).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from smalto.basics.lazy_names import lazy_names

if TYPE_CHECKING:
    from smalto.constraints.conflict_report import ConflictReport, Requirement
    from smalto.diagnose.conflict import describe_fuel_exhaustion, diagnose
    from smalto.diagnose.problems import describe_conflict
    from smalto.diagnose.suggest import suggest_at_derivation
    from smalto.pipeline.describe import Namer, describe_element

__all__ = [
    "ConflictReport",
    "Namer",
    "Requirement",
    "describe_conflict",
    "describe_element",
    "describe_fuel_exhaustion",
    "diagnose",
    "suggest_at_derivation",
]

# Public name -> the module that defines it. Loaded on first use: the pass imports the
# modules a refusal raises with (``jax_phrases``), and a process whose kernels all infer
# never pays for the rest of the diagnosis (half of ``import smalto.infer``).
_LAZY = {
    "ConflictReport": "smalto.constraints.conflict_report",
    "Requirement": "smalto.constraints.conflict_report",
    "describe_fuel_exhaustion": "smalto.diagnose.conflict",
    "diagnose": "smalto.diagnose.conflict",
    "describe_conflict": "smalto.diagnose.problems",
    "suggest_at_derivation": "smalto.diagnose.suggest",
    "Namer": "smalto.pipeline.describe",
    "describe_element": "smalto.pipeline.describe",
}


__getattr__, __dir__ = lazy_names(__name__, _LAZY, globals())
