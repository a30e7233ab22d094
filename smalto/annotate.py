"""Writing the solution onto the ops, as the attributes JAX's lowering reads.

Every attribute is computed and checked before the first one is written, so a
failure leaves the module exactly as it came in.
"""

from __future__ import annotations

from jax._src.lib.mlir import ir

from smalto.constraints import Role, System
from smalto.hw.encode import AttributeCache
from smalto.hw.values import Const, Reg, Tmem
from smalto.program import Kind, Op, Program

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
    """The attributes to set, per op id, in op order."""
    cache = AttributeCache(program.context)
    ops = program.ops
    # Per op, per role (operands, results): per index, the element attribute
    # and which list it goes in (None: no site there).
    per_op: dict[int, tuple[list[_Entry | None], list[_Entry | None]]] = {}
    for variable in system.variables:
        value = values[variable.id]
        # One attribute for all the variable's sites (built at the first that
        # needs it): the swizzle is part of an SMEM value, not of each site.
        family = _family(value)
        attr: ir.Attribute | None = None
        for site in variable.sites:
            role = site.role
            if role == _ARGUMENT:
                continue  # block arguments carry no attributes
            op = ops[site.op]
            if attr is None:
                attr = (
                    cache.transforms(value)  # type: ignore[arg-type]
                    if family == _TRANSFORMS
                    else cache.layout(value)  # type: ignore[arg-type]
                )
            slots = per_op.get(site.op)
            if slots is None:
                slots = per_op[site.op] = ([None] * len(op.operands), [None] * len(op.results))
            slots[role][site.index] = (attr, family)
    arrays: dict[tuple[int, ...], ir.ArrayAttr] = {}
    return [
        (op_id, _op_attributes(program, ops[op_id], per_op[op_id], arrays))
        for op_id in sorted(per_op)
    ]


_Entry = tuple[ir.Attribute, int]  # an element attribute and the list it goes in
# Which attribute list an entry goes in.
_LAYOUTS, _TMEM_LAYOUTS, _TRANSFORMS = 0, 1, 2
_OPERAND, _RESULT, _ARGUMENT = Role.OPERAND, Role.RESULT, Role.ARGUMENT
_VECTOR, _TMEM = Kind.VECTOR, Kind.TMEM
# The attribute names, per role and list.
_NAMES = (
    ("in_layouts", "in_tmem_layouts", "in_transforms"),
    ("out_layouts", "out_tmem_layouts", "out_transforms"),
)


def _family(value: Const) -> int:
    if isinstance(value, Reg):
        return _LAYOUTS
    if isinstance(value, Tmem):
        return _TMEM_LAYOUTS
    return _TRANSFORMS


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


def _op_attributes(
    program: Program,
    op: Op,
    slots: tuple[list[_Entry | None], list[_Entry | None]],
    arrays: dict[tuple[int, ...], ir.ArrayAttr],
) -> dict[str, ir.Attribute]:
    values = program.values
    attrs: dict[str, ir.Attribute] = {}
    for role, value_ids in ((_OPERAND, op.operands), (_RESULT, op.results)):
        counts = [0, 0, 0]  # values per list: vectors, TMEM refs, transformable refs
        for vid in value_ids:
            info = values[vid]
            kind = info.kind
            if kind == _VECTOR:
                counts[_LAYOUTS] += 1
            elif kind == _TMEM:
                counts[_TMEM_LAYOUTS] += 1
            elif info.transformable:
                counts[_TRANSFORMS] += 1
        if not any(counts):
            continue
        lists: tuple[list[ir.Attribute], ...] = ([], [], [])
        for entry in slots[role]:
            if entry is not None:
                lists[entry[1]].append(entry[0])
        names = _NAMES[role]
        for family, count in enumerate(counts):
            if count:
                _check_count(op, names[family], len(lists[family]), count)
                attrs[names[family]] = _array(lists[family], arrays)
    return attrs


def _check_count(op: object, name: str, got: int, expected: int) -> None:
    if got != expected:
        raise AssertionError(
            f"smalto bug: {name} of `{op.name}` would have {got} entries for {expected} values"  # type: ignore[attr-defined]
        )


def write_attributes(program: Program, plan: list[tuple[int, dict[str, ir.Attribute]]]) -> None:
    for op_id, attrs in plan:
        attributes = program.ops[op_id].operation.attributes
        for name, attr in attrs.items():
            attributes[name] = attr
