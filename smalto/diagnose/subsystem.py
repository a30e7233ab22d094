"""A system of just some requirements, over just the variables they mention.

Finding a minimal conflict asks, dozens of times, whether a handful of
requirements can hold together. The solver prepares a domain for every
variable of the system it is given, so asking with the whole kernel's
variables costs as much as solving the kernel; renumbered onto the few
variables the requirements mention, each question costs almost nothing.
(The answer is the same: a variable no requirement mentions is free.)
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence

from smalto.constraints import (
    Collapse,
    Constraint,
    Fixed,
    Reduce,
    Reshape,
    System,
    Transpose,
    Var,
    constraint_variables,
)

_WRAPPERS = (Reduce, Reshape, Transpose, Collapse)
# The fields of each kind of constraint that hold expressions (see ``expressions_of``).
_FIELDS = {
    "Equal": ("lhs", "rhs"),
    "Relayout": ("source", "target"),
    "Broadcast": ("src", "dst"),
    "SmemTransfer": ("smem", "reg"),
    "TmemTransfer": ("tmem", "reg"),
    "GmemTransfer": ("reg",),
}


def subsystem(system: System, elements: Sequence[Constraint | Fixed]) -> System:
    """``elements`` as a system of their own, over the variables they mention, renumbered."""
    ids: dict[int, int] = {}
    for e in elements:
        for v in (e.var,) if isinstance(e, Fixed) else constraint_variables(e):
            ids.setdefault(v, len(ids))
    variables = [
        dataclasses.replace(system.variables[old], id=new, sites=[]) for old, new in ids.items()
    ]
    return System(
        variables=variables,
        constraints=[_renamed(e, ids) for e in elements if not isinstance(e, Fixed)],
        fixed=[
            Fixed(ids[e.var], e.value, e.origin, e.what) for e in elements if isinstance(e, Fixed)
        ],
        var_of_site={},
    )


def _renamed(c: Constraint, ids: dict[int, int]) -> Constraint:
    fields = _FIELDS.get(type(c).__name__, ("expr",))
    return dataclasses.replace(c, **{f: _expr(getattr(c, f), ids) for f in fields})  # type: ignore[type-var]


def _expr(expr: object, ids: dict[int, int]) -> object:
    if type(expr) is Var:
        return Var(ids[expr.id])
    if isinstance(expr, _WRAPPERS):
        return dataclasses.replace(expr, expr=_expr(expr.expr, ids))  # type: ignore[type-var]
    return expr


__all__ = ["subsystem"]
