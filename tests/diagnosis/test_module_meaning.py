"""Whether an edit of a kernel's module keeps what the kernel computes, where no Python is
at hand (``smalto.diagnose.meaning``): the edited module must equal the original once
layout casts are read as their operand and layout, transform and ``optimized``
attributes are set aside. Removing a cast or an SMEM ref's transforms, or making a
transfer unoptimized keeps it; another axis for a reduction, another dimension for a
broadcast do not."""

from __future__ import annotations

from pathlib import Path

import pytest

from smalto.basics.mlir import parse_module
from smalto.diagnose.edits import AXIS, BROADCAST, DROP, UNOPTIMIZE, Edit, ops_in_order
from smalto.diagnose.meaning import changes_meaning, computation

UNSAT = Path(__file__).parents[1] / "unsat"


def _module_and_ops(name: str) -> tuple[object, dict[str, list[int]]]:
    module = parse_module((UNSAT / name).read_text())
    ids: dict[str, list[int]] = {}
    for number, op in enumerate(ops_in_order(module.operation)):
        ids.setdefault(op.name, []).append(number)
    return module, ids


@pytest.mark.parametrize(
    ("name", "op", "kind"),
    [
        ("async_load_index_not_divisible.mlir", "mosaic_gpu.with_transforms", DROP),
        ("pallas_row_sum_cast_to_columns.mlir", "mosaic_gpu.layout_cast", DROP),
        ("pallas_epilogue_to_unswizzled_smem.mlir", "mosaic_gpu.with_transforms", DROP),
        ("words_row_sum_broadcast_along_columns.mlir", "mosaic_gpu.vector_store", UNOPTIMIZE),
    ],
)
def test_an_edit_of_layouts_keeps_what_the_kernel_computes(name: str, op: str, kind: str) -> None:
    module, ids = _module_and_ops(name)
    assert ids.get(op), f"{name} has no {op}"
    edit = Edit(kind, (ids[op][-1],))
    assert not changes_meaning(module.operation, (edit,))


@pytest.mark.parametrize(
    ("op", "kind", "position"),
    [("vector.multi_reduction", AXIS, 0), ("mosaic_gpu.broadcast_in_dim", BROADCAST, 0)],
)
def test_another_axis_or_broadcast_changes_it(op: str, kind: str, position: int) -> None:
    module, ids = _module_and_ops("words_row_sum_broadcast_along_columns.mlir")
    edit = Edit(kind, (ids[op][0],), position=position)
    assert changes_meaning(module.operation, (edit,))


def test_the_original_is_read_the_same_every_time() -> None:
    module, _ = _module_and_ops("words_row_sum_broadcast_along_columns.mlir")
    assert computation(module.operation) == computation(module.operation)


@pytest.mark.parametrize("name", sorted(p.name for p in UNSAT.glob("*.mlir")))
def test_the_check_where_an_edit_acts_agrees_with_the_whole_modules(name: str) -> None:
    """``changes_meaning`` compares only the ops an edit changes, removes or adds: for
    every verified edit of every failing module, the same answer as comparing the whole
    edited module with the original."""
    from jax._src.lib.mlir import ir

    import smalto
    from smalto.basics.mlir import clone_module, module_arch
    from smalto.diagnose.edits import apply

    text = (UNSAT / name).read_text()
    module = parse_module(text)
    try:
        smalto.infer_layout(module, arch=module_arch(module) or (9, 0))
    except smalto.InferenceError as error:
        conflict = error.conflict
    except NotImplementedError:  # (an unsupported gather: no layouts, no edits)
        return
    else:
        return
    problems = getattr(conflict, "problems", None) or []
    edits = [e.edit for p in problems for e in p.edits if e.edit is not None]
    original = parse_module(text)
    for edit in edits:
        with original.context, ir.Location.unknown(original.context):
            copy = clone_module(original.operation)
            apply(edit, ops_in_order(copy.operation))
        whole = computation(original.operation) != computation(copy.operation)
        assert changes_meaning(original.operation, (edit,)) == whole, edit
