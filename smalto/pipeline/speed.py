"""Where an annotated module's layouts cost speed: what smalto says of an answer JAX's own
pass has not found.

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
"""

from __future__ import annotations

from dataclasses import dataclass

from jax._src.lib.mlir import ir
from jax.experimental.mosaic.gpu import fragmented_array as fa

from smalto.hw.encode import decode_layout
from smalto.hw.names import register_layout_name
from smalto.pipeline.relayouts import Relayout, relayouts
from smalto.program.type_facts import element_bitwidth, facts_by_text
from smalto.source.locations import FilePosition, file_position

_TRANSFERS = frozenset({"mosaic_gpu.vector_load", "mosaic_gpu.vector_store"})
# Narrower than a bank word, a vector costs an access per element or two.
_WORD_BITS = fa.SMEM_BANK_BYTES * 8
_RELAYOUT = "a relayout of its operand"


@dataclass(frozen=True)
class SpeedCost:
    """One place where the answer's layouts cost speed."""

    op: str
    position: FilePosition | None
    what: str  # the cost, in words

    def __str__(self) -> str:
        where = f" at {self.position}" if self.position is not None else ""
        return f"`{self.op}`{where}: {self.what}"


@dataclass(frozen=True)
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


def speed_costs(module: ir.Module, found: list[Relayout] | None = None) -> SpeedReport:
    """Where ``module``'s layouts (written) cost speed, in program order, and the cause;
    ``found``: its relayouts, where the caller has read them already."""
    costs: list[SpeedCost] = []
    causes: list[SpeedCost] = []

    def visit(op: ir.Operation) -> ir.WalkResult:
        name = op.name
        if name in _TRANSFERS:
            narrow = _narrow_transfer(op)
            if narrow is not None:
                costs.append(narrow)
            stride = _strided_minor(op)
            if stride is not None and _moved_vector_length(op) == 1:
                causes.append(
                    SpeedCost(
                        name,
                        file_position(op.location),
                        f"it moves a value through a ref whose minor dim has stride {stride} "
                        "(a transposed view), where a vector's elements must be adjacent: "
                        "one element a vector, and the values computed with it share its "
                        "layout",
                    )
                )
        if "out_layouts" in op.attributes:
            costs.extend(_narrow_strided_results(op))
        return ir.WalkResult.ADVANCE

    module.operation.walk(visit, ir.WalkOrder.PRE_ORDER)
    for relayout in relayouts(module) if found is None else found:
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


def _narrow_strided_results(op: ir.Operation) -> list[SpeedCost]:
    """The strided results of ``op`` in vectors shorter than JAX gives such a value."""
    found = []
    stated = list(ir.ArrayAttr(op.attributes["out_layouts"]))
    vectors = [r for r in op.results if isinstance(r.type, ir.VectorType)]
    for value, attr in zip(vectors, stated, strict=False):
        try:
            layout = decode_layout(attr)
        except NotImplementedError:
            continue
        if not isinstance(layout, fa.WGStridedFragLayout):
            continue
        usual = fa.WGStridedFragLayout.from_shaped_type(value.type)
        if usual is None or layout.vec_size >= usual.vec_size:
            continue
        vty = ir.VectorType(value.type)
        found.append(
            SpeedCost(
                op.name,
                file_position(op.location),
                f"its {_shape(vty)} result is strided with vectors of {layout.vec_size}, "
                f"where vectors of {usual.vec_size} fit such a value",
            )
        )
    return found


def _moved_layout(op: ir.Operation) -> fa.FragmentedLayout | None:
    """The register layout a transfer moves its value in, as written."""
    attribute = "in_layouts" if op.name == "mosaic_gpu.vector_store" else "out_layouts"
    if attribute not in op.attributes:
        return None
    stated = list(ir.ArrayAttr(op.attributes[attribute]))
    if not stated:
        return None
    try:
        return decode_layout(stated[0])
    except NotImplementedError:
        return None


def _moved_vector_length(op: ir.Operation) -> int | None:
    """The elements a vector of the transfer's register layout holds."""
    layout = _moved_layout(op)
    if isinstance(layout, fa.WGStridedFragLayout):
        return layout.vec_size
    if isinstance(layout, fa.TiledLayout):
        return layout.vector_length
    return None


def _narrow_transfer(op: ir.Operation) -> SpeedCost | None:
    """A register transfer of one element a vector, narrower than a bank word (a tiled
    layout; a strided one is said where its value is made)."""
    layout = _moved_layout(op)
    if not isinstance(layout, fa.TiledLayout) or layout.vector_length != 1:
        return None
    value = op.operands[0] if op.name == "mosaic_gpu.vector_store" else op.results[0]
    vty = ir.VectorType(value.type)
    bits = element_bitwidth(vty.element_type)
    if bits is None or layout.vector_length * bits >= _WORD_BITS:
        return None
    name = register_layout_name(layout) or "its layout"
    size = _bytes(layout.vector_length * bits)
    return SpeedCost(
        op.name,
        file_position(op.location),
        f"it moves {_shape(vty)} in {name}, vectors of {layout.vector_length} ({size} each): "
        f"narrower than a {fa.SMEM_BANK_BYTES}-byte bank word",
    )


def _bytes(bits: int) -> str:
    return f"{bits} bits" if bits % 8 else f"{bits // 8} byte{'s' if bits > 8 else ''}"


def _strided_minor(op: ir.Operation) -> int | None:
    """The stride of the minor dim of the ref ``op`` moves through, where it is not 1."""
    ref = op.operands[1] if op.name == "mosaic_gpu.vector_store" else op.operands[0]
    if not isinstance(ref.type, ir.MemRefType):
        return None
    strides = facts_by_text(ref.type)[3]
    if not strides or strides[-1] == 1:
        return None
    return strides[-1]


def _shape(vty: ir.VectorType) -> str:
    return "x".join(map(str, vty.shape)) + f"x{vty.element_type}"
