"""Writing the solution onto the ops, as the attributes JAX's lowering reads.

Every attribute is computed and checked before the first one is written, so a
failure leaves the module exactly as it came in.
"""

from __future__ import annotations

from typing import cast

from jax._src.lib.mlir import ir

from smalto.constraints.language import System
from smalto.hw.encode import AttributeCache
from smalto.hw.values import Const, Reg, Tmem
from smalto.program.view import Kind, Op, Program

ATTRIBUTE_NAMES = (
    "in_layouts",
    "out_layouts",
    "in_tmem_layouts",
    "out_tmem_layouts",
    "in_transforms",
    "out_transforms",
)


def plan_attributes(
    program: Program, system: System, values: list[Const]
) -> list[tuple[int, dict[str, ir.Attribute]]]:
    """The attributes to set, per op id, in op order.

    One pass over the ops that carry layouts: per operand and result that
    needs one, in order, its variable's attribute, in the list of its kind.
    An op none of whose values is in a variable (inside an already lowered
    body) gets none.
    """
    cache = AttributeCache(program.context)
    # Looked up by plain tuples: one finds the Site (a named tuple) it equals, and is
    # cheaper to make than a Site.
    var_of_site = cast("dict[tuple[int, int, int, None], int]", system.var_of_site)
    ops, program_values = program.ops, program.values
    # Per variable, its attribute (one for all its sites: the swizzle is part
    # of an SMEM value, not of each site) and list; built when first needed.
    per_var: dict[int, _Entry] = {}
    # By the identity of the value: variables share a handful of value
    # objects, and hashing a layout value walks its tiling.
    per_value: dict[int, _Entry] = {}
    arrays: dict[tuple[int, ...], ir.ArrayAttr] = {}
    plan = []
    for op_id in program.layout_ops:
        op = ops[op_id]
        attrs: dict[str, ir.Attribute] = {}
        placed = missing = 0
        for role, value_ids in ((0, op.operands), (1, op.results)):
            lists: tuple[list[ir.Attribute], ...] | None = None
            for index, vid in enumerate(value_ids):
                info = program_values[vid]
                kind = info.kind
                if kind is _VECTOR:
                    family = _LAYOUTS
                elif kind is _TMEM:
                    family = _TMEM_LAYOUTS
                elif info.transformable:
                    family = _TRANSFORMS
                else:
                    continue
                var = var_of_site.get((op_id, role, index, None))
                if var is None:
                    missing += 1
                    continue
                placed += 1
                entry = per_var.get(var)
                if entry is None:
                    entry = per_var[var] = _entry(values[var], cache, per_value)
                if entry[1] != family:
                    _wrong_family(op, role, index, entry[1], family)
                if lists is None:
                    lists = ([], [], [])
                lists[family].append(entry[0])
            if lists is not None:
                names = _NAMES[role]
                for family in (_LAYOUTS, _TMEM_LAYOUTS, _TRANSFORMS):
                    if lists[family]:
                        attrs[names[family]] = _array(lists[family], arrays)
        if missing and placed:
            raise AssertionError(
                f"smalto bug: `{op.name}` would have attributes for {placed} of its "
                f"{placed + missing} values needing layouts"
            )
        if attrs:
            plan.append((op_id, attrs))
    return plan


_Entry = tuple[ir.Attribute, int]  # an element attribute and the list it goes in
# Which attribute list an entry goes in.
_LAYOUTS, _TMEM_LAYOUTS, _TRANSFORMS = 0, 1, 2
_VECTOR, _TMEM = Kind.VECTOR, Kind.TMEM
# The attribute names, per role and list.
_NAMES = (
    ("in_layouts", "in_tmem_layouts", "in_transforms"),
    ("out_layouts", "out_tmem_layouts", "out_transforms"),
)


def _entry(value: Const, cache: AttributeCache, per_value: dict[int, _Entry]) -> _Entry:
    entry = per_value.get(id(value))
    if entry is None:
        if isinstance(value, Reg):
            entry = (cache.layout(value), _LAYOUTS)
        elif isinstance(value, Tmem):
            entry = (cache.layout(value), _TMEM_LAYOUTS)
        else:
            entry = (cache.transforms(value), _TRANSFORMS)
        per_value[id(value)] = entry
    return entry


def _wrong_family(op: Op, role: int, index: int, got: int, expected: int) -> None:
    names = _NAMES[role]
    raise AssertionError(
        f"smalto bug: {'operand' if role == 0 else 'result'} #{index} of `{op.name}` "
        f"would go in {names[got]}, not {names[expected]}"
    )


def _array(
    elements: list[ir.Attribute], arrays: dict[tuple[int, ...], ir.ArrayAttr]
) -> ir.ArrayAttr:
    """The array attribute of ``elements``, built once per distinct list.

    Elements come from one ``AttributeCache``, one object per distinct
    attribute, so their identities name the list (and hashing them would be a
    binding call each).
    """
    key = tuple(map(id, elements))
    array = arrays.get(key)
    if array is None:
        array = arrays[key] = ir.ArrayAttr.get(elements)
    return array


def write_attributes(program: Program, plan: list[tuple[int, dict[str, ir.Attribute]]]) -> None:
    for op_id, attrs in plan:
        attributes = program.ops[op_id].operation.attributes
        for name, attr in attrs.items():
            attributes[name] = attr
