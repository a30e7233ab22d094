"""What holds between ops: producers and consumers, aliased slices, free refs.

The solver's statement: ``smalto.rules.vector_relayouts`` (and, for aliased slices,
``RuleContext.aliased_var`` in ``smalto.rules.context``; policy: docs/rules_and_checks.md).
"""

from __future__ import annotations

from jax._src.lib.mlir import ir

from smalto.check.core import FOR_BOUNDS, IN, LAYOUTS, OUT, Checker, family_of
from smalto.check.names import describe, describe_apart
from smalto.check.relayouts import relayout_allowed
from smalto.check.semantics import Layout
from smalto.hw.values import Reg
from smalto.program.view import Op


def produced_layout(c: Checker, vid: int) -> Layout | None:
    """The layout a value has where it is defined; None where nothing says."""
    producer = c.program.values[vid].producer
    if producer is None:
        return None
    if producer.region is None:
        return c.sites.get((producer.op, OUT, producer.index))
    owner = c.program.ops[producer.op]
    match owner.name, producer.region:
        case "scf.for", 0 if producer.index >= 1:
            return c.sites.get((owner.id, IN, FOR_BOUNDS + producer.index - 1))
        case "scf.while", 0:
            return c.sites.get((owner.id, IN, producer.index))
        case "scf.while", 1:
            return c.sites.get((owner.id, OUT, producer.index))
        case "mosaic_gpu.warp_map", 0:
            return c.sites.get((owner.id, IN, producer.index))
    return None


def check_uses(c: Checker, op: Op) -> None:
    """Each operand's layout is reachable from what its producer gives."""
    values = c.program.values
    for index, vid in enumerate(op.operands):
        value = values[vid]
        family = family_of(value)
        if family is None:
            continue
        used = c.get(op, IN, index)
        given = produced_layout(c, vid)
        if used is None or given is None or used == given:
            continue
        if family is LAYOUTS:
            assert isinstance(used, Reg) and isinstance(given, Reg)
            # The lowering converts every operand from its producer's layout
            # to its consumer's (``FragmentedArray.to_layout``): more than
            # JAX's rules allow between ops (a splat only), but no more than
            # a layout cast performs.
            if relayout_allowed(given, used, value.bitwidth or 0, strict=False):
                continue
            used_name, given_name = describe_apart(used, given)
            c.report(
                op,
                f"operand #{index} is used as {used_name} but produced as "
                f"{given_name}; the lowering cannot convert between them",
            )
        else:
            used_name, given_name = describe_apart(used, given)
            c.report(
                op,
                f"operand #{index} is used with {family.suffix} {used_name} but the "
                f"ref was defined with {given_name}",
            )


def check_aliases(c: Checker) -> None:
    """Slices of SMEM (or of TMEM) with one alias id are one ref, whatever their offsets."""
    seen: dict[tuple[str, int], tuple[Op, Layout]] = {}
    for op in c.annotated:
        if op.name not in ("mosaic_gpu.slice_smem", "mosaic_gpu.slice_tmem"):
            continue
        attributes = op.operation.attributes
        if "alias_id" not in attributes:
            continue
        layout = c.get(op, OUT, 0)
        if layout is None:
            continue
        alias_id = ir.IntegerAttr(attributes["alias_id"]).value
        key = (op.name, alias_id)
        if key not in seen:
            seen[key] = (op, layout)
        elif seen[key][1] != layout:
            first, first_layout = seen[key]
            c.report(
                op,
                f"aliases the slice at {c.location(first)} (alias_id {alias_id}) but is "
                f"{describe(layout)} where that one is {describe(first_layout)}",
            )


def check_free_refs(c: Checker) -> None:
    """A ref whose definition says nothing (a function argument) has one layout at all uses."""
    first_use: dict[int, tuple[Op, int, Layout]] = {}
    for op in c.annotated:
        for index, vid in enumerate(op.operands):
            value = c.program.values[vid]
            if family_of(value) in (None, LAYOUTS) or produced_layout(c, vid) is not None:
                continue
            layout = c.get(op, IN, index)
            if layout is None:
                continue
            if vid not in first_use:
                first_use[vid] = (op, index, layout)
            elif first_use[vid][2] != layout:
                other, other_index, other_layout = first_use[vid]
                c.report(
                    op,
                    f"operand #{index} is {describe(layout)} but the same ref is "
                    f"{describe(other_layout)} at operand #{other_index} of {other.name} "
                    f"({c.location(other)})",
                )
