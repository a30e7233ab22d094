"""smalto: layout inference for Mosaic GPU kernels.

``infer_layout`` is a drop-in for
``jax.experimental.mosaic.gpu.infer_layout(module, *, fuel=..., arch=...)``.

The names below are loaded on first use: ``import smalto`` (which every
``smalto.*`` submodule, the command line included, runs first) costs no JAX
import, so that ``smalto --help`` answers at once.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from smalto import check as check  # the checker's package: smalto.check.check(module, arch)
    from smalto.errors import (
        FAILURE_PREFIX,
        InferenceError,
        SlowLayoutsWarning,
        SmaltoOnlyWarning,
        StagedThroughSmemWarning,
        UnitDimRewriteWarning,
        UnoptimizedTransferWarning,
    )
    from smalto.infer import DEFAULT_FUEL, infer_layout

__all__ = [
    "DEFAULT_FUEL",
    "FAILURE_PREFIX",
    "InferenceError",
    "SlowLayoutsWarning",
    "SmaltoOnlyWarning",
    "StagedThroughSmemWarning",
    "UnitDimRewriteWarning",
    "UnoptimizedTransferWarning",
    "__version__",
    "infer_layout",
]

# Public name -> the module that defines it.
_LAZY = {
    "DEFAULT_FUEL": "smalto.infer",
    "infer_layout": "smalto.infer",
    "FAILURE_PREFIX": "smalto.errors",
    "InferenceError": "smalto.errors",
    "SlowLayoutsWarning": "smalto.errors",
    "SmaltoOnlyWarning": "smalto.errors",
    "StagedThroughSmemWarning": "smalto.errors",
    "UnitDimRewriteWarning": "smalto.errors",
    "UnoptimizedTransferWarning": "smalto.errors",
}


def __getattr__(name: str) -> Any:
    if name in _LAZY:
        value = getattr(importlib.import_module(_LAZY[name]), name)
    elif name == "check":
        # The checker's package: the checker is its ``check`` (``smalto.check.check``).
        value = importlib.import_module("smalto.check")
    elif name == "__version__":
        from smalto.basics.version import version

        value = version()
    else:
        raise AttributeError(f"module 'smalto' has no attribute {name!r}")
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted({*globals(), *_LAZY, "check", "__version__"})
