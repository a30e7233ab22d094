"""The relayouts an annotated module asks of the lowering: each vector a producer lays out
one way and a consumer reads another (``out_layouts`` against ``in_layouts``).

Where smalto answers a kernel JAX's own pass finds no layouts for (its complete or
widened search did), the relayouts of its answer are what it added to make the kernel
compile: the route names them in its warning (``smalto.SmaltoOnlyWarning``).
"""

from __future__ import annotations

from dataclasses import dataclass

from jax._src.lib.mlir import ir

from smalto.hw.encode import decode_layout
from smalto.hw.names import pallas_layout, register_layout_name
from smalto.hw.values import Reg
from smalto.source.locations import FilePosition, file_position

_IN, _OUT = "in_layouts", "out_layouts"


@dataclass(frozen=True)
class Relayout:
    """A vector converted between its producer and a consumer."""

    op: str  # the consumer
    position: FilePosition | None  # the consumer's line, where located
    source: str  # the producer's layout, by name (else as the attribute says it)
    target: str  # the consumer's
    pallas: str | None = None  # the consumer's, as Pallas writes it (``plgpu.Layout.X``)

    def __str__(self) -> str:
        where = f" at {self.position}" if self.position is not None else ""
        return f"`{self.op}`{where}: {self.source} -> {self.target}"


def relayouts(module: ir.Module) -> list[Relayout]:
    """The relayouts of ``module``'s answer, in program order."""
    found: list[Relayout] = []

    def visit(op: ir.Operation) -> ir.WalkResult:
        if _IN in op.attributes:
            stated = list(ir.ArrayAttr(op.attributes[_IN]))
            vectors = [v for v in op.operands if isinstance(v.type, ir.VectorType)]
            for value, wanted in zip(vectors, stated, strict=False):
                made = _layout_made(value)
                if made is None or str(made) == str(wanted) or "Splat" in str(made):
                    continue  # (a splat is converted where used, JAX's answers too)
                position = file_position(op.location)
                found.append(
                    Relayout(op.name, position, _named(made), _named(wanted), _pallas(wanted))
                )
        return ir.WalkResult.ADVANCE

    module.operation.walk(visit, ir.WalkOrder.PRE_ORDER)
    return found


_TRANSFERS = {
    "vector.load": _OUT,
    "mosaic_gpu.vector_load": _OUT,
    "vector.store": _IN,
    "mosaic_gpu.vector_store": _IN,
}


def transfer_layouts(module: ir.Module) -> list[Relayout]:
    """The layout of each register value ``module``'s answer loads or stores, where Pallas
    names it (source and target alike: no relayout), in program order: what a cast at the
    value's line would state (``plgpu.layout_cast(x_ref[...], plgpu.Layout.WGMMA)``)."""
    found: list[Relayout] = []

    def visit(op: ir.Operation) -> ir.WalkResult:
        side = _TRANSFERS.get(op.name)
        if side is not None and side in op.attributes:
            stated = list(ir.ArrayAttr(op.attributes[side]))
            pallas = _pallas(stated[0]) if stated else None
            if pallas is not None and "Splat" not in str(stated[0]):
                name = _named(stated[0])
                found.append(Relayout(op.name, file_position(op.location), name, name, pallas))
        return ir.WalkResult.ADVANCE

    module.operation.walk(visit, ir.WalkOrder.PRE_ORDER)
    return found


def _named(attr: ir.Attribute) -> str:
    """A register layout by its name (``WGMMA``), else as the attribute says it."""
    try:
        return register_layout_name(decode_layout(attr)) or str(attr)
    except Exception:  # noqa: BLE001 -- a layout no name is known for: its attribute
        return str(attr)


def _pallas(attr: ir.Attribute) -> str | None:
    try:
        return pallas_layout(Reg(decode_layout(attr)))
    except Exception:  # noqa: BLE001 -- a layout Pallas has no name for
        return None


def _layout_made(value: ir.Value) -> ir.Attribute | None:
    """The layout the producer of ``value`` gives it, where it states one."""
    made_by = value.owner
    owner = made_by if isinstance(made_by, ir.Operation) else getattr(made_by, "operation", None)
    if not isinstance(owner, ir.Operation) or _OUT not in owner.attributes:
        return None
    vectors = [r for r in owner.results if isinstance(r.type, ir.VectorType)]
    index = next((i for i, r in enumerate(vectors) if r == value), None)
    stated = list(ir.ArrayAttr(owner.attributes[_OUT]))
    return stated[index] if index is not None and index < len(stated) else None


__all__ = ["Relayout", "relayouts", "transfer_layouts"]
