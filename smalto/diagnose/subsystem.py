"""A system of just some requirements, over just the variables they mention.

Finding a minimal conflict asks, dozens of times, whether a handful of
requirements can hold together. The solver prepares a domain for every
variable of the system it is given, so asking with the whole kernel's
variables costs as much as solving the kernel; renumbered onto the few
variables the requirements mention, each question costs almost nothing.
(The answer is the same: a variable no requirement mentions is free.)

One thing the whole kernel gives its searches that a handful of requirements
does not: the layouts its other requirements mention, which the search offers
every variable. A transposed SMEM view's transforms are found from its
ref's, but the search propagates a transpose only from the view to the ref;
without the kernel's other requirements, the view's transforms (the ref's,
transposed back) would be offered nowhere, and a satisfiable handful would
read as a conflict. So each such value is mentioned by a variable of its own,
fixed to it and tied to nothing (``_hints``).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from typing import Any

from smalto.constraints.language import (
    Collapse,
    Constraint,
    Element,
    Equal,
    Expr,
    Fixed,
    Reduce,
    Reshape,
    System,
    Transpose,
    Var,
    Variable,
    as_solved,
    element_variables,
)
from smalto.hw import layouts as hl
from smalto.hw.values import Smem

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


def subsystem(system: System, elements: Sequence[Element]) -> System:
    """``elements`` as a system of their own, over the variables they mention, renumbered.

    Held as the whole system holds them (``as_solved``): a layout an op imposes outright,
    fixed or its one option, is where the search starts."""
    ids: dict[int, int] = {}
    for e in elements:
        for v in element_variables(e):
            ids.setdefault(v, len(ids))
    variables = [_renumbered(system.variables[old], new) for old, new in ids.items()]
    constraints, imposed = as_solved(elements)
    fixed = [Fixed(ids[f.var], f.value, f.origin, f.what) for f in imposed]
    for hint in _hints(system, constraints, imposed):
        variable, value, origin = hint
        fixed.append(Fixed(len(variables), value, origin, "a layout to offer"))
        variables.append(_renumbered(variable, len(variables)))
    return System(
        variables=variables,
        constraints=[_renamed(c, ids) for c in constraints],
        fixed=fixed,
        var_of_site={},
    )


def _hints(
    system: System, constraints: Sequence[Constraint], imposed: Sequence[Fixed]
) -> list[tuple[Variable, Smem, int]]:
    """The transforms of each transposed view of an SMEM ref the requirements fix (the
    ref's fixed transforms transposed back), each with the view's variable and the op:
    values the whole kernel's search would be offered, which the requirements alone do not
    mention."""
    stated = [f.value for f in imposed if type(f.value) is Smem]
    hints: list[tuple[Variable, Smem, int]] = []
    if not stated:
        return hints
    for e in constraints:
        if type(e) is not Equal:
            continue
        for view in (e.lhs, e.rhs):
            if type(view) is not Transpose or type(view.expr) is not Var:
                continue
            variable = system.variables[view.expr.id]
            inverse = tuple(view.permutation.index(i) for i in range(len(view.permutation)))
            for value in stated:
                if value.tiling is None:
                    continue
                tiling = hl.transposed_tiling(value.tiling, inverse)
                back = Smem(tiling, value.swizzle) if tiling is not None else None
                if back is not None and hl.smem_valid(
                    back, variable.shape, variable.strides, variable.bitwidth
                ):
                    hints.append((variable, back, e.origin))
    return hints


def _renumbered(v: Variable, new: int) -> Variable:
    """``v`` as variable ``new`` of a subsystem, with no sites (``dataclasses.replace``
    without its field walk: a core's search makes these dozens of times)."""
    return Variable(new, v.kind, v.shape, v.bitwidth, v.strides, v.key, v.key_value, [])


def _renamed(c: Constraint, ids: dict[int, int]) -> Constraint:
    kind = type(c)
    fields = _FIELDS.get(kind.__name__, ("expr",))
    # (Which fields hold expressions depends on the constraint's kind, a table mypy cannot
    # follow into the constructor's keywords.)
    arguments: dict[str, Any] = {name: getattr(c, name) for name in _init_fields(kind)}
    for name in fields:
        arguments[name] = _expr(arguments[name], ids)
    return kind(**arguments)


def _init_fields(kind: type[Constraint]) -> tuple[str, ...]:
    """The fields a constraint's constructor takes (what ``dataclasses.replace`` copies)."""
    names = _INIT_FIELDS.get(kind)
    if names is None:
        names = _INIT_FIELDS[kind] = tuple(f.name for f in dataclasses.fields(kind) if f.init)
    return names


_INIT_FIELDS: dict[type[Constraint], tuple[str, ...]] = {}


def _expr(expr: Expr, ids: dict[int, int]) -> Expr:
    if isinstance(expr, Var):
        return Var(ids[expr.id])
    if isinstance(expr, _WRAPPERS):
        return dataclasses.replace(expr, expr=_expr(expr.expr, ids))
    return expr


__all__ = ["subsystem"]
