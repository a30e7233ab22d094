"""What a kernel's ``gpu.launch`` says of its block: the threads, the dynamic SMEM, and the
op around an op (read by the checker's SMEM budget and by staging through SMEM)."""

from __future__ import annotations

from jax._src.lib.mlir import ir

LAUNCH = "gpu.launch"
# ``gpu.launch``'s operand segments: async dependencies, grid (3), block (3), cluster (3),
# dynamic SMEM size, async object.
_BLOCK_SEGMENTS = (4, 5, 6)
_DYNAMIC_SMEM_SEGMENT = 10


def enclosing_launch(operation: ir.Operation) -> ir.Operation | None:
    """The ``gpu.launch`` ``operation`` runs in, if any."""
    parent = operation.parent
    while parent is not None and parent.name != LAUNCH:
        parent = parent.parent
    return parent.operation if parent is not None else None


def dynamic_smem_operand(launch: ir.Operation) -> int | None:
    """The operand number of the launch's ``dynamic_shared_memory_size`` (None: it has none)."""
    segments = _segments(launch)
    if segments is None or segments[_DYNAMIC_SMEM_SEGMENT] != 1:
        return None
    return sum(segments[:_DYNAMIC_SMEM_SEGMENT])


def dynamic_smem(launch: ir.Operation) -> int | None:
    """The launch's dynamic SMEM size in bytes, where it is a constant."""
    operand = dynamic_smem_operand(launch)
    return None if operand is None else constant_int(launch.operands[operand])


def block_size(launch: ir.Operation) -> tuple[int, int, int] | None:
    """The launch's threads per block (x, y, z), where they are constants."""
    segments = _segments(launch)
    if segments is None:
        return None
    sizes = [constant_int(launch.operands[sum(segments[:s])]) for s in _BLOCK_SEGMENTS]
    if any(size is None for size in sizes):
        return None
    x, y, z = (int(size or 0) for size in sizes)
    return x, y, z


def constant_int(value: ir.Value) -> int | None:
    """The value of an integer ``arith.constant`` (None for anything else)."""
    owner = value.owner
    if isinstance(owner, ir.Block) or owner.name != "arith.constant":
        return None
    attribute = owner.attributes["value"]
    return int(ir.IntegerAttr(attribute).value) if isinstance(attribute, ir.IntegerAttr) else None


def _segments(launch: ir.Operation) -> list[int] | None:
    attributes = launch.attributes
    if "operandSegmentSizes" not in attributes:
        return None
    segments = [int(s) for s in ir.DenseI32ArrayAttr(attributes["operandSegmentSizes"])]
    return segments if len(segments) > _DYNAMIC_SMEM_SEGMENT else None
