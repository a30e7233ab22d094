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

import smalto
from smalto.program import reader as program_module
from smalto.program.reader import read_program
from smalto.program.view import OPAQUE_REGIONS, Kind, Program, within
from smalto.rules import consumers

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
        program = read_program(module, consumers())
        expected = _naive(module)
    assert [op.id for op in program.ops] == list(range(len(program.ops)))
    assert _renumbered(program) == expected
    # Each op keeps its own operation: the name read through it agrees.
    assert all(op.operation.name == op.name for op in program.ops)
    # Layout ops: exactly those with a vector, TMEM ref or transformable SMEM ref,
    # but inside an already lowered body (whose values, asked for, have their kinds).
    values = program.values
    opaque: dict[int, bool] = {}
    wanted = [
        op.id
        for op in program.ops
        if any(
            values[v].kind in (Kind.VECTOR, Kind.TMEM) or values[v].transformable
            for v in (*op.operands, *op.results)
        )
        and not within(program, op, OPAQUE_REGIONS, opaque)
    ]
    assert program.layout_ops == wanted


def _uses(program: Program) -> dict[tuple[int, int, int | None], list[tuple[int, int]]]:
    """The uses of register values, keyed by where each value is defined (ids may differ)."""
    return {
        (v.producer.op, v.producer.index, v.producer.region): list(v.uses)
        for v in program.values
        if v.uses and v.producer is not None
    }


@pytest.mark.parametrize("entry", ENTRIES[:20], ids=[e.key for e in ENTRIES[:20]])
def test_reading_keyed_by_values_gives_the_same_view(
    entry: reference.CorpusEntry, ctx: Any
) -> None:
    """The fallback for a hash shared by two values reads the same program."""
    module = reference.parse(entry.path, ctx)
    with ctx, ir.Location.unknown():
        by_hash = read_program(module, consumers())
        reader = program_module._Reader(by_hash=False, consumers=consumers())
        top = reader.read(module)
        assert reader.check_uses()
        by_value = Program(reader.tables, top, module)
        assert _renumbered(by_value) == _renumbered(by_hash)
    assert by_value.layout_ops == by_hash.layout_ops
    assert _uses(by_value) == _uses(by_hash)


def test_reading_every_op_gives_the_same_view(ctx: Any) -> None:
    """Reading the operands of every op finds what the walk finds reading only some."""
    for entry in ENTRIES[:40]:
        module = reference.parse(entry.path, ctx)
        with ctx, ir.Location.unknown():
            lean = read_program(module, consumers())
            full = read_program(module)
            assert _renumbered(full) == _renumbered(lean), entry.key
        assert full.layout_ops == lean.layout_ops, entry.key
        assert _uses(full) == _uses(lean), entry.key


# An op without a rule that uses a vector: its operands are not read by the
# walk (it has no vector result), so only counting the vector's uses finds it.
_VECTOR_USED_BY_A_SCALAR_OP = """
func.func @f(%i: i32) {
  %v = arith.constant dense<1.0> : vector<4xf32>
  %e = llvm.extractelement %v[%i : i32] : vector<4xf32>
  return
}
"""


def test_a_vector_used_where_the_walk_did_not_look_is_found(ctx: Any) -> None:
    module = reference.parse(_VECTOR_USED_BY_A_SCALAR_OP, ctx)
    with ctx, ir.Location.unknown():
        program = read_program(module, consumers())
        names = [op.name for op in program.ops]
        assert [names[i] for i in program.layout_ops] == ["arith.constant", "llvm.extractelement"]
        (vector,) = program.ops[names.index("arith.constant")].results
        assert program.values[vector].uses == [(names.index("llvm.extractelement"), 0)]
        with pytest.raises(NotImplementedError, match="llvm.extractelement"):
            smalto.infer_layout(module)


_LATE_SCALAR = """
func.func @f() {
  %s = arith.constant 2.0 : f32
  %v = vector.broadcast %s : f32 to vector<128xf32>
  return
}
"""


def test_scalars_read_late_know_their_producers(ctx: Any) -> None:
    """A scalar first met as an operand learns its producer through the bindings."""
    module = reference.parse(_LATE_SCALAR, ctx)
    with ctx, ir.Location.unknown():
        program = read_program(module, consumers())
        names = [op.name for op in program.ops]
        (scalar,) = program.ops[names.index("vector.broadcast")].operands
        producer = program.values[scalar].producer
        constant = names.index("arith.constant")
        assert producer is not None and (producer.op, producer.index) == (constant, 0)
        assert program.ops[constant].results == (scalar,)
        assert str(program.values[scalar].type) == "f32"


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
        program = read_program(module, consumers())
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
        expected = _renumbered(read_program(module, consumers()))
        real_init = program_module._Reader.__init__
        keyed: list[bool] = []

        def colliding_init(self: Any, *, by_hash: bool, consumers: Any = None) -> None:
            real_init(self, by_hash=by_hash, consumers=consumers)
            keyed.append(by_hash)
            if by_hash:
                # Every value's hash collides with the first.
                self.value_ids = self.tables.value_ids = _Colliding()

        monkeypatch.setattr(program_module._Reader, "__init__", colliding_init)
        program = read_program(module, consumers())
    assert keyed == [True, False]
    assert _renumbered(program) == expected


class _Colliding(dict):  # type: ignore[type-arg]
    """A dictionary in which every new key seems taken once one key is in."""

    def setdefault(self, key: object, default: Any = None) -> Any:
        if self:
            return -1
        return super().setdefault(key, default)
