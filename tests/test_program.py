"""The program view against a plain recursive reading of the module through the bindings.

``read_program`` walks the module with ``ir.Operation.walk`` (one callback
per op) and works out each op's block from block op counts, and keys values
by hash; this checks every part of the view against the obvious, slow
reading: op names in pre-order, parents, regions, blocks and their
arguments, operand and result ids (by value identity), layout ops, and uses.
"""

from __future__ import annotations

from typing import Any

import pytest
import reference
from jax._src.lib.mlir import ir

from smalto import program as program_module
from smalto.program import Kind, Program, read_program

ENTRIES = reference.bundled_entries()


def _naive(module: ir.Module) -> dict[str, Any]:
    """Names, parents, block structure and operand/result ids, read recursively."""
    ids: dict[ir.Value, int] = {}
    names: list[str] = []
    parents: list[int | None] = []
    operands: list[tuple[int, ...]] = []
    results: list[tuple[int, ...]] = []
    regions: dict[int, list[list[tuple[tuple[int, ...], list[int]]]]] = {}

    def value_id(v: ir.Value) -> int:
        if v not in ids:
            ids[v] = len(ids)
        return ids[v]

    def read_block(block: ir.Block, parent: int | None) -> list[int]:
        body = []
        for view in block.operations:
            op = view.operation
            oid = len(names)
            body.append(oid)
            names.append(op.name)
            parents.append(parent)
            operands.append(tuple(value_id(v) for v in op.operands))
            results.append(tuple(value_id(r) for r in op.results))
            if len(op.regions):
                regions[oid] = [
                    [
                        (tuple(value_id(a) for a in b.arguments), read_block(b, oid))
                        for b in region.blocks
                    ]
                    for region in op.regions
                ]
        return body

    top = read_block(module.body, None)
    return {
        "top": top,
        "names": names,
        "parents": parents,
        "operands": operands,
        "results": results,
        "regions": regions,
    }


def _renumbered(program: Program) -> dict[str, Any]:
    """The view's structure with value ids renumbered in first-seen order (as ``_naive``)."""
    order: dict[int, int] = {}

    def vid(v: int) -> int:
        if v not in order:
            order[v] = len(order)
        return order[v]

    operands, results, regions = [], [], {}

    # Same visiting order as _naive: an op's operands, results, then its regions.
    def visit(oid: int) -> None:
        op = program.ops[oid]
        operands.append(tuple(vid(v) for v in op.operands))
        results.append(tuple(vid(v) for v in op.results))
        if op.regions:
            regions[oid] = [
                [(tuple(vid(a) for a in args), visit_all(body)) for args, body in blocks]
                for blocks in op.regions
            ]

    def visit_all(body: list[int]) -> list[int]:
        for oid in body:
            visit(oid)
        return body

    visit_all(program.top_level)
    return {
        "top": program.top_level,
        "names": [op.name for op in program.ops],
        "parents": [op.parent for op in program.ops],
        # Pre-order ids: visiting in body order lists ops by id.
        "operands": operands,
        "results": results,
        "regions": regions,
    }


@pytest.fixture(scope="module")
def ctx() -> Any:
    return reference.shared_context()


@pytest.mark.parametrize("entry", ENTRIES, ids=[e.key for e in ENTRIES])
def test_view_matches_a_recursive_reading(entry: reference.CorpusEntry, ctx: Any) -> None:
    module = reference.parse(entry.path, ctx)
    with ctx, ir.Location.unknown():
        program = read_program(module)
        expected = _naive(module)
    assert [op.id for op in program.ops] == list(range(len(program.ops)))
    assert _renumbered(program) == expected
    # Each op keeps its own operation: the name read through it agrees.
    assert all(op.operation.name == op.name for op in program.ops)
    # Layout ops: exactly those with a vector, TMEM ref or transformable SMEM ref.
    values = program.values
    wanted = [
        op.id
        for op in program.ops
        if any(
            values[v].kind in (Kind.VECTOR, Kind.TMEM) or values[v].transformable
            for v in (*op.operands, *op.results)
        )
    ]
    assert program.layout_ops == wanted


@pytest.mark.parametrize("entry", ENTRIES[:20], ids=[e.key for e in ENTRIES[:20]])
def test_reading_keyed_by_values_gives_the_same_view(
    entry: reference.CorpusEntry, ctx: Any
) -> None:
    """The fallback for a hash shared by two values reads the same program."""
    module = reference.parse(entry.path, ctx)
    with ctx, ir.Location.unknown():
        by_hash = read_program(module)
        reader = program_module._Reader(by_hash=False)
        top = reader.read(module)
        reader.order_uses()
    assert top == by_hash.top_level
    assert [(op.name, op.operands, op.results, op.parent) for op in reader.ops] == [
        (op.name, op.operands, op.results, op.parent) for op in by_hash.ops
    ]
    assert [v.uses for v in reader.values] == [v.uses for v in by_hash.values]


_MULTI_BLOCK = """
func.func @f(%c: i1, %r: memref<128x64xf16, #gpu.address_space<workgroup>>) {
  cf.cond_br %c, ^bb1, ^bb2
^bb1:
  %a = arith.constant 1 : index
  cf.br ^bb3(%a : index)
^bb2:
  %b = arith.constant 2 : index
  cf.br ^bb3(%b : index)
^bb3(%x: index):
  scf.if %c {
  } else {
    %v = arith.constant dense<1.0> : vector<128x64xf16>
  }
  %w = scf.execute_region -> index {
    cf.br ^e(%x : index)
  ^e(%y: index):
    scf.yield %y : index
  }
  return
}
func.func @g() {
  return
}
"""


def test_multi_block_regions_and_empty_blocks(ctx: Any) -> None:
    """Blocks after the first, empty blocks, and ops after a region are placed right."""
    module = reference.parse(_MULTI_BLOCK, ctx)
    with ctx, ir.Location.unknown():
        program = read_program(module)
        expected = _naive(module)
    assert _renumbered(program) == expected
    names = [op.name for op in program.ops]
    # The second function is a top-level op, not inside the first.
    assert program.ops[names.index("func.func", 1)].parent is None
    if_op = program.ops[names.index("scf.if")]
    (then_block,), (else_block,) = if_op.regions
    assert then_block[1] != [] and program.ops[then_block[1][0]].name == "scf.yield"
    assert [program.ops[o].name for o in else_block[1]] == ["arith.constant", "scf.yield"]
    constants = [i for i, name in enumerate(names) if name == "arith.constant"]
    assert program.layout_ops == [constants[2]]  # the vector one


def test_a_hash_collision_rereads_keyed_by_values(
    ctx: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    """When two values share a hash, the module is read again keyed by the values."""
    module = reference.parse(_MULTI_BLOCK, ctx)
    with ctx, ir.Location.unknown():
        expected = _renumbered(read_program(module))
        real_init = program_module._Reader.__init__
        keyed: list[bool] = []

        def colliding_init(self: Any, *, by_hash: bool) -> None:
            real_init(self, by_hash=by_hash)
            keyed.append(by_hash)
            if by_hash:
                # Every value's hash collides with the first.
                self.value_ids = _Colliding()

        monkeypatch.setattr(program_module._Reader, "__init__", colliding_init)
        program = read_program(module)
    assert keyed == [True, False]
    assert _renumbered(program) == expected


class _Colliding(dict):  # type: ignore[type-arg]
    """A dictionary in which every new key seems taken once one key is in."""

    def setdefault(self, key: object, default: Any = None) -> Any:
        if self:
            return -1
        return super().setdefault(key, default)
