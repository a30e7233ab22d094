"""Writing the solution onto the ops, as the attributes JAX's lowering reads.

Every attribute is computed and checked before the first one is written, so a
failure leaves the module exactly as it came in.
"""

from __future__ import annotations

from jax._src.lib.mlir import ir

from smalto.constraints import Role, System
from smalto.hw import layouts as hl
from smalto.hw.encode import AttributeCache
from smalto.hw.values import Const, Reg, Smem, Tmem
from smalto.program import Kind, Program

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
    per_op: dict[int, list[tuple[Role, int, Const, int]]] = {}
    for variable in system.variables:
        value = values[variable.id]
        for site in variable.sites:
            if site.role == Role.ARGUMENT:
                continue  # block arguments carry no attributes
            op = program.ops[site.op]
            vid = op.operands[site.index] if site.role == Role.OPERAND else op.results[site.index]
            per_op.setdefault(site.op, []).append((site.role, site.index, value, vid))
    cache = AttributeCache()
    plan = []
    for op_id in sorted(per_op):
        plan.append(
            (op_id, _op_attributes(program, op_id, sorted(per_op[op_id], key=_order), cache))
        )
    return plan


def _order(entry: tuple[Role, int, Const, int]) -> tuple[int, int]:
    return int(entry[0]), entry[1]


def _op_attributes(
    program: Program, op_id: int, entries: list[tuple[Role, int, Const, int]], cache: AttributeCache
) -> dict[str, ir.Attribute]:
    op = program.ops[op_id]
    values = program.values
    attrs: dict[str, ir.Attribute] = {}
    for role, prefix, value_ids in (
        (Role.OPERAND, "in", op.operands),
        (Role.RESULT, "out", op.results),
    ):
        mine = [(value, vid) for r, _, value, vid in entries if r == role]
        kinds = [values[v].kind for v in value_ids]
        if Kind.VECTOR in kinds:
            layouts = [cache.layout(v) for v, _ in mine if isinstance(v, Reg)]
            _check_count(op, f"{prefix}_layouts", len(layouts), kinds.count(Kind.VECTOR))
            attrs[f"{prefix}_layouts"] = ir.ArrayAttr.get(layouts)
        if Kind.TMEM in kinds:
            layouts = [cache.layout(v) for v, _ in mine if isinstance(v, Tmem)]
            _check_count(op, f"{prefix}_tmem_layouts", len(layouts), kinds.count(Kind.TMEM))
            attrs[f"{prefix}_tmem_layouts"] = ir.ArrayAttr.get(layouts)
        transformable = sum(values[v].transformable for v in value_ids)
        if transformable:
            transforms = []
            for value, vid in mine:
                if isinstance(value, Smem):
                    info = values[vid]
                    swizzle = hl.swizzle_for(value.tiling, info.strides or (), info.bitwidth or 8)
                    transforms.append(cache.transforms(value, swizzle))
            _check_count(op, f"{prefix}_transforms", len(transforms), transformable)
            attrs[f"{prefix}_transforms"] = ir.ArrayAttr.get(transforms)
    return attrs


def _check_count(op: object, name: str, got: int, expected: int) -> None:
    if got != expected:
        raise AssertionError(
            f"smalto bug: {name} of `{op.name}` would have {got} entries for {expected} values"  # type: ignore[attr-defined]
        )


def write_attributes(program: Program, plan: list[tuple[int, dict[str, ir.Attribute]]]) -> None:
    for op_id, attrs in plan:
        attributes = program.ops[op_id].view.operation.attributes
        for name, attr in attrs.items():
            attributes[name] = attr
