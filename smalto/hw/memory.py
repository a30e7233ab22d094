"""How much SMEM a block may have, and how staging through SMEM marks what it adds: facts the
checker and staging share."""

from __future__ import annotations

# The dynamic SMEM one block may have (227 KiB) on the archs Mosaic GPU's warpgroup
# lowering targets, sm_90 and sm_100 (the CUDA occupancy tables' maximum per block).
SMEM_PER_BLOCK = 232_448

# The discardable attribute on every op that staging through SMEM adds
# (``smalto.rewrite.staging``): the checker counts the round trips by it.
STAGED = "smalto.staged"


def smem_limit(arch: tuple[int, int]) -> int:
    """The dynamic SMEM a block may have on ``arch``, in bytes."""
    del arch  # (the same on every arch the lowering supports)
    return SMEM_PER_BLOCK
