"""Turning a solver failure into words a kernel author can act on."""

from __future__ import annotations

from smalto.constraints import System
from smalto.program import Program

_NOTHING_FITS = "no assignment of layouts satisfies every op's requirements"


def describe_conflict(program: Program, system: System, solver: object) -> str:
    conflict = getattr(solver, "conflict", None)
    if conflict is None:
        return _NOTHING_FITS
    parts = []
    if conflict.fixed is not None:
        op = program.ops[conflict.fixed.origin]
        parts.append(f"`{op.name}` at {op.location} requires {conflict.fixed.value}")
    if conflict.constraint is not None:
        op = program.ops[conflict.constraint.origin]
        kind = type(conflict.constraint).__name__
        parts.append(f"requirement {kind} of `{op.name}` at {op.location} cannot hold")
    return "; ".join(parts) or _NOTHING_FITS
