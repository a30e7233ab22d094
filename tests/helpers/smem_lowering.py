"""What JAX's own dialect lowering allocates in a kernel's SMEM: every ``_slice_smem`` it
makes (offset, bytes) and the size it checks them against (the launch's
``dynamic_shared_memory_size``), recorded while it lowers an annotated module in the
launch context its ``gpu.launch`` calls for (no GPU involved)."""

from __future__ import annotations

import contextlib
import math
import threading
from collections.abc import Iterator
from dataclasses import dataclass, field

from jax._src.lib.mlir import ir

from smalto.diagnose.jax_lowering import lower_in_own_launch

_LOCK = threading.Lock()


@dataclass
class Sliced:
    """The slices JAX's lowering made, and the SMEM size it checked them against."""

    slices: list[tuple[int, int]] = field(default_factory=list)  # (offset, bytes)
    sizes: set[int] = field(default_factory=set)


@contextlib.contextmanager
def recording_slices() -> Iterator[Sliced]:
    """Records every SMEM slice JAX's dialect lowering makes while the block runs."""
    from jax.experimental.mosaic.gpu import dialect_lowering, utils

    seen = Sliced()
    original = dialect_lowering._slice_smem

    def recorded(result: ir.MemRefType, offset: int, smem_size: int) -> ir.Value:
        size = math.prod(result.shape) * utils.bitwidth(result.element_type) // 8
        seen.slices.append((offset, size))
        seen.sizes.add(smem_size)
        return original(result, offset, smem_size)

    with _LOCK:
        dialect_lowering._slice_smem = recorded
        try:
            yield seen
        finally:
            dialect_lowering._slice_smem = original


def jax_slices(annotated: ir.Module) -> Sliced:
    """What JAX's lowering slices of ``annotated`` (consumed: it is lowered in place)."""
    with recording_slices() as seen:
        lower_in_own_launch(annotated.operation)
    return seen
