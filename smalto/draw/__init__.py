"""Pictures of layouts: register layouts, SMEM transforms, TMEM layouts (``smalto draw``)."""

from smalto.draw.cli import draw_main
from smalto.draw.ownership import Ownership, TmemPlacement, ownership, tmem_placement
from smalto.draw.smem import SmemPlacement, smem_placement

__all__ = [
    "Ownership",
    "SmemPlacement",
    "TmemPlacement",
    "draw_main",
    "ownership",
    "smem_placement",
    "tmem_placement",
]
