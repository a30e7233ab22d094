"""An independent check of smalto's annotations, by JAX's own constraint system.

JAX's pass derives its constraints from the module as usual; where it would
search, we hand it smalto's answer (decoded from the attributes smalto wrote)
and let JAX's own reduction decide whether every constraint holds. JAX then
annotates its copy from that answer, which must give the same attributes.
Used for kernels JAX cannot solve itself (its search runs out of fuel).
"""

from __future__ import annotations

from typing import Any

import reference


def _preorder(module: Any) -> list[Any]:
    ops: list[Any] = []

    def visit(op: Any) -> None:
        ops.append(op.operation)
        for region in op.regions:
            for block in region:
                for inner in block.operations:
                    visit(inner)

    for op in module.body.operations:
        visit(op)
    return ops


def _decode_site(op_annotated: Any, is_operand: bool, index: int) -> Any:
    from jax._src.lib.mlir import ir
    from jax.experimental.mosaic.gpu import constraints as cs
    from jax.experimental.mosaic.gpu import inference_utils, layouts, tcgen05, utils
    from jax.experimental.mosaic.gpu import launch_context as lc

    values = list(op_annotated.operands if is_operand else op_annotated.results)
    value = values[index]
    prefix = "in" if is_operand else "out"
    attrs = op_annotated.attributes
    if isinstance(value.type, ir.VectorType):
        position = sum(isinstance(v.type, ir.VectorType) for v in values[:index])
        return cs.RegisterLayout(layouts.from_layout_attr(attrs[f"{prefix}_layouts"][position]))
    if utils.is_tmem_ref(value):
        position = sum(
            isinstance(v.type, ir.MemRefType) and utils.is_tmem_ref(v) for v in values[:index]
        )
        tiled = layouts.from_layout_attr(attrs[f"{prefix}_tmem_layouts"][position])
        return cs.TMEMLayout(
            tcgen05.TMEMLayout(tiled.tiling, tiled.warp_dims, tiled.lane_dims, tiled.vector_dim)
        )
    position = sum(inference_utils.is_transformable_smem_memref(v) for v in values[:index])
    transforms = [layouts.from_transform_attr(t) for t in attrs[f"{prefix}_transforms"][position]]
    tiles = [t for t in transforms if isinstance(t, lc.TileTransform)]
    swizzles = [int(t) for t in transforms if not isinstance(t, lc.TileTransform)]
    swizzle = swizzles[0] if swizzles and swizzles[0] != 16 else None
    return cs.SMEMTransforms(tiles[0] if tiles else None, swizzle)


def check_with_jax(text: str, arch: tuple[int, int], fuel: int = 100_000) -> list[str]:
    """Problems JAX's constraint system finds with smalto's answer (empty: none)."""
    from jax._src.lib.mlir import ir
    from jax.experimental.mosaic.gpu import constraints as cs
    from jax.experimental.mosaic.gpu import layout_inference as li

    import smalto

    ctx = reference.make_context()
    ours, theirs = reference.parse(text, ctx), reference.parse(text, ctx)
    smalto.infer_layout(ours, arch=arch, fuel=fuel)
    annotated = _preorder(ours)
    index_of = {op: i for i, op in enumerate(_preorder(theirs))}
    problems: list[str] = []

    def from_smalto(unknowns: Any, system: Any, *, fuel: int, arch: tuple[int, int]) -> Any:
        assignments = {}
        for var in unknowns:
            site = var.key
            if site.type == li.VariableType.ARGUMENT:
                problems.append(f"variable keyed by a block argument: {site}")
                continue
            op = annotated[index_of[site.operation.operation]]
            is_operand = site.type == li.VariableType.OPERAND
            assignments[var] = _decode_site(op, is_operand, site.index)
        combined = cs.ConstraintSystem(assignments=assignments) & system
        reduced = cs.reduce(combined) if not isinstance(combined, cs.Unsatisfiable) else combined
        if isinstance(reduced, cs.Unsatisfiable):
            problems.append("JAX's constraint system rejects smalto's assignment")
            return cs.Unsatisfiable(), fuel
        if reduced.constraints:
            problems.append(f"constraints left undecided: {list(map(str, reduced.constraints))}")
        return {v: reduced.assignments[v] for v in unknowns}, fuel

    original = li.find_assignments_for
    li.find_assignments_for = from_smalto
    try:
        with ctx, ir.Location.unknown():
            li.infer_layout(theirs, arch=arch)
    except ValueError as e:
        problems.append(f"JAX's pass failed with smalto's answer: {e}")
    finally:
        li.find_assignments_for = original
    if not problems:
        diff = reference.diff_attributes(
            reference.layout_attributes(theirs), reference.layout_attributes(ours)
        )
        problems.extend(diff)
    return problems
