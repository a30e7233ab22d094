"""Where an answer's layouts cost speed: what smalto says of an answer JAX's own pass has
not found.

Where JAX's answer lowers, smalto's is that answer, so there is nothing to say.
Where it does not (smalto's complete or widened search found the layouts), the
answer may compile only at a cost, and the author should hear it at the kernel's
line (issue #52), with its cause:

- **narrow vectors**: a strided value in vectors shorter than the widest that
  fit a strided value of its type (JAX's ``WGStridedFragLayout.from_shaped_type``:
  up to 8 bytes a vector), or a register transfer of one element a vector,
  narrower than a 4-byte SMEM bank word (an access per element);
- **relayouts**: values converted between producer and consumer
  (``pipeline.relayouts``), each a shuffle of registers the kernel as written
  does not have.

The cause named is the transfer through a ref whose minor dim is strided (a
transposed view: ``ref.T``, ``transpose_ref``), where one moves a narrow value:
each element of a vector must sit next to the one before it in memory, so that
transfer moves one element at a time, and the values computed together with it
share its layout.

Read off the answer's layouts (``pipeline.relayouts.AnswerLayouts``): as the solver
holds them, where ``smalto.infer`` says it (no walk over the module through the
bindings), or as written on an annotated module (``speed_costs``).
"""

from __future__ import annotations

from jax._src.lib.mlir import ir
from jax.experimental.mosaic.gpu import fragmented_array as fa

from smalto.basics.records import record
from smalto.hw.names import register_layout_name
from smalto.pipeline.relayouts import (
    OPERAND,
    RESULT,
    AnswerLayouts,
    Relayout,
    relayouts,
    written_layouts,
)
from smalto.program.type_facts import facts_by_text
from smalto.program.view import Kind, Op, Value
from smalto.source.locations import FilePosition, file_position

_STORE = "mosaic_gpu.vector_store"
_TRANSFERS = frozenset({"mosaic_gpu.vector_load", _STORE})
# Narrower than a bank word, a vector costs an access per element or two.
_WORD_BITS = fa.SMEM_BANK_BYTES * 8
_RELAYOUT = "a relayout of its operand"


@record
class SpeedCost:
    """One place where the answer's layouts cost speed."""

    op: str
    position: FilePosition | None
    what: str  # the cost, in words

    def __str__(self) -> str:
        where = f" at {self.position}" if self.position is not None else ""
        return f"`{self.op}`{where}: {self.what}"


@record
class SpeedReport:
    """What an answer's layouts cost, and why, where known."""

    costs: tuple[SpeedCost, ...]
    cause: SpeedCost | None  # the transfer through a strided view that forces narrow vectors

    def message(self) -> str:
        shown = "; ".join(str(c) for c in self.costs[:6])
        more = f"; and {len(self.costs) - 6} more" if len(self.costs) > 6 else ""
        because = (
            f". The cause: {self.cause}"
            if self.cause is not None
            else ". smalto's search found no faster layouts that lower"
        )
        places = f"{len(self.costs)} place{'s' if len(self.costs) != 1 else ''}"
        return (
            f"the layouts smalto found for this kernel cost speed ({places}): "
            f"{shown}{more}{because}"
        )


def speed_costs(module: ir.Module) -> SpeedReport:
    """Where the layouts written on ``module`` cost speed, in program order, and the cause.
    Must run inside the module's context."""
    return answer_speed_costs(written_layouts(module))


def answer_speed_costs(layouts: AnswerLayouts, found: list[Relayout] | None = None) -> SpeedReport:
    """Where the answer ``layouts`` gives costs speed, in program order, and the cause;
    ``found``: its relayouts, where the caller has read them already."""
    program = layouts.program
    costs: list[SpeedCost] = []
    causes: list[SpeedCost] = []
    usual: dict[object, int | None] = {}  # the vector length JAX gives a strided value, by type
    for op_id in program.layout_ops:
        op = program.ops[op_id]
        if op.name in _TRANSFERS:
            moved = layouts.first_vector(op_id, OPERAND if op.name == _STORE else RESULT)
            layout = None if moved is None or moved[1] is None else moved[1].layout
            narrow_transfer = _narrow_transfer(layouts, op, layout)
            if narrow_transfer is not None:
                costs.append(narrow_transfer)
            stride = _strided_minor(layouts, op)
            if stride is not None and _vector_length(layout) == 1:
                causes.append(
                    SpeedCost(
                        op.name,
                        file_position(op.location),
                        f"it moves a value through a ref whose minor dim has stride {stride} "
                        "(a transposed view), where a vector's elements must be adjacent: "
                        "one element a vector, and the values computed with it share its "
                        "layout",
                    )
                )
        costs.extend(_narrow_strided_results(layouts, op, usual))
    for relayout in relayouts(layouts) if found is None else found:
        costs.append(
            SpeedCost(
                relayout.op,
                relayout.position,
                f"{_RELAYOUT}, {relayout.source} -> {relayout.target}",
            )
        )
    costs.sort(key=lambda c: (c.position is None, _line(c)))
    narrow = any(not c.what.startswith(_RELAYOUT) for c in costs)
    return SpeedReport(tuple(costs), causes[0] if narrow and causes else None)


def _line(cost: SpeedCost) -> tuple[str, int, int]:
    p = cost.position
    return ("", 0, 0) if p is None else (p.file, p.line, p.column)


def _narrow_strided_results(
    layouts: AnswerLayouts, op: Op, usual: dict[object, int | None]
) -> list[SpeedCost]:
    """The strided results of ``op`` in vectors shorter than JAX gives such a value."""
    found = []
    values = layouts.program.values
    for index, vid in enumerate(op.results):
        value = values[vid]
        if value.kind is not Kind.VECTOR:
            continue
        stated = layouts.layout(op.id, RESULT, index)
        if stated is None or not stated.is_strided:
            continue
        layout = stated.layout
        assert isinstance(layout, fa.WGStridedFragLayout)
        if value.info not in usual:
            made = fa.WGStridedFragLayout.from_shaped_type(value.type)
            usual[value.info] = None if made is None else made.vec_size
        widest = usual[value.info]
        if widest is None or layout.vec_size >= widest:
            continue
        found.append(
            SpeedCost(
                op.name,
                file_position(op.location),
                f"its {_shape(value)} result is strided with vectors of {layout.vec_size}, "
                f"where vectors of {widest} fit such a value",
            )
        )
    return found


def _vector_length(layout: fa.FragmentedLayout | None) -> int | None:
    """The elements a vector of a transfer's register layout holds."""
    if isinstance(layout, fa.WGStridedFragLayout):
        return layout.vec_size
    if isinstance(layout, fa.TiledLayout):
        return layout.vector_length
    return None


def _narrow_transfer(
    layouts: AnswerLayouts, op: Op, layout: fa.FragmentedLayout | None
) -> SpeedCost | None:
    """A register transfer of one element a vector, narrower than a bank word (a tiled
    layout; a strided one is said where its value is made)."""
    if not isinstance(layout, fa.TiledLayout) or layout.vector_length != 1:
        return None
    ids = op.operands if op.name == _STORE else op.results
    value = layouts.program.values[ids[0]]
    bits = value.bitwidth
    if bits is None or layout.vector_length * bits >= _WORD_BITS:
        return None
    name = register_layout_name(layout) or "its layout"
    size = _bytes(layout.vector_length * bits)
    return SpeedCost(
        op.name,
        file_position(op.location),
        f"it moves {_shape(value)} in {name}, vectors of {layout.vector_length} ({size} each): "
        f"narrower than a {fa.SMEM_BANK_BYTES}-byte bank word",
    )


def _bytes(bits: int) -> str:
    return f"{bits} bits" if bits % 8 else f"{bits // 8} byte{'s' if bits > 8 else ''}"


def _strided_minor(layouts: AnswerLayouts, op: Op) -> int | None:
    """The stride of the minor dim of the ref ``op`` moves through, where it is not 1."""
    ref = layouts.program.values[op.operands[1] if op.name == _STORE else op.operands[0]]
    strides = _strides(ref)
    if not strides or strides[-1] == 1:
        return None
    return strides[-1]


def _strides(value: Value) -> tuple[int, ...] | None:
    """A memref's strides (the view reads them of every ref it registers; one it read late
    as a scalar, here); None for any other value."""
    if value.info is not None:
        return value.strides
    ty = value.type
    return facts_by_text(ty)[3] if isinstance(ty, ir.MemRefType) else None


def _shape(value: Value) -> str:
    """A vector's type, as the bindings print its shape and element (``128x128xbf16``)."""
    element = ir.VectorType(value.type).element_type
    return "x".join(map(str, value.shape)) + f"x{element}"


__all__ = ["SpeedCost", "SpeedReport", "answer_speed_costs", "speed_costs"]
