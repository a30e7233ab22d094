"""A suggested edit made on a module as a person would make it, for the tests that check
each verified edit.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from typing import Any

from jax._src.lib.mlir import ir

import smalto
import smalto.jax
from smalto.diagnose.suggest import SuggestedEdit
from smalto.source.locations import location_text


def ops_of(module: ir.Module) -> list[ir.Operation]:
    found: list[ir.Operation] = []

    def visit(op: ir.Operation) -> ir.WalkResult:
        found.append(op)
        return ir.WalkResult.ADVANCE

    module.operation.walk(visit)
    return found


def _at(module: ir.Module, name: str, where: str) -> list[ir.Operation]:
    """The ops named ``name`` at ``where`` (a captured module's paths are absolute)."""
    return [
        op
        for op in ops_of(module)
        if op.name == name and location_text(op.location).endswith(where.split("/")[-1])
    ]


def make_edit(module: ir.Module, edit: SuggestedEdit) -> None:
    """Makes ``edit`` on ``module`` from its data alone (not through smalto's own code)."""
    with module.context, ir.Location.unknown():
        if edit.kind in ("retarget", "drop"):
            assert edit.attribute is not None
            for name, where in dict.fromkeys(edit.ops):
                found = [
                    op
                    for op in _at(module, name, where)
                    if str(op.attributes[edit.attribute]) == edit.old_attribute
                ]
                assert found, (name, where, edit.old_attribute)
                for op in found:
                    if edit.kind == "retarget":
                        assert edit.new_attribute is not None
                        op.attributes[edit.attribute] = ir.Attribute.parse(edit.new_attribute)
                    else:
                        op.results[0].replace_all_uses_with(op.operands[0])
                        op.erase()
            return
        if edit.kind == "unoptimize":
            for name, where in dict.fromkeys(edit.ops):
                for op in _at(module, name, where):
                    op.attributes["optimized"] = ir.BoolAttr.get(False)
            return
        assert edit.kind == "add_cast" and edit.new_attribute is not None
        layout = ir.Attribute.parse(edit.new_attribute)
        if edit.use is not None:
            name, where, operand = edit.use
            (consumer,) = _at(module, name, where)
            value = consumer.operands[operand]
            with ir.InsertionPoint(consumer):
                cast = _cast(value, layout)
            consumer.operands[operand] = cast.result
            return
        ((name, where),) = edit.ops
        (producer,) = _at(module, name, where)
        assert edit.result is not None
        value = producer.results[edit.result]
        with ir.InsertionPoint.after(producer):
            cast = _cast(value, layout)
        value.replace_all_uses_except(cast.result, cast)


def _cast(value: ir.Value, layout: ir.Attribute) -> ir.Operation:
    return ir.Operation.create(
        "mosaic_gpu.layout_cast",
        results=[value.type],
        operands=[value],
        attributes={"new_layout": layout},
    )


@contextlib.contextmanager
def editing_first(edit: SuggestedEdit) -> Iterator[list[ir.Module]]:
    """smalto's pass, but the edit is made on the module first (inside JAX's lowering)."""
    real = smalto.infer_layout
    edited: list[ir.Module] = []

    def editing(module: ir.Module, **kwargs: Any) -> None:
        make_edit(module, edit)
        edited.append(module)
        real(module, **kwargs)

    smalto.infer_layout = editing  # type: ignore[assignment]  # the hook looks it up per call
    try:
        yield edited
    finally:
        smalto.infer_layout = real  # type: ignore[assignment]
