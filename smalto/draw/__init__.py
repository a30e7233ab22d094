"""Pictures of layouts: register layouts, SMEM transforms, TMEM layouts (``smalto draw``),
and the SMEM bank conflicts of a transfer.

Names are imported on first use, so that ``smalto draw --help`` does not load JAX.
(``smalto.draw.ownership`` is the module; its function is ``smalto.draw.ownership.ownership``,
since importing a submodule sets the package attribute of its name.)
"""

from __future__ import annotations

import importlib
from typing import Any

_EXPORTS = {
    "Ownership": "smalto.draw.ownership",
    "TmemPlacement": "smalto.draw.ownership",
    "tmem_placement": "smalto.draw.ownership",
    "SmemPlacement": "smalto.draw.smem",
    "smem_placement": "smalto.draw.smem",
    "BankConflicts": "smalto.draw.transfer_conflicts",
    "bank_conflicts": "smalto.draw.transfer_conflicts",
}

__all__ = sorted(_EXPORTS)


def __getattr__(name: str) -> Any:
    module = _EXPORTS.get(name)
    if module is None:
        raise AttributeError(f"module 'smalto.draw' has no attribute {name!r}")
    return getattr(importlib.import_module(module), name)
