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
