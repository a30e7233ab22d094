"""smalto: layout inference for Mosaic GPU kernels.

``infer_layout`` is a drop-in for
``jax.experimental.mosaic.gpu.infer_layout(module, *, fuel=..., arch=...)``.
"""

from smalto.check import check as check  # the independent checker (smalto.check.check)
from smalto.errors import FAILURE_PREFIX, InferenceError, UnitDimRewriteWarning
from smalto.infer import DEFAULT_FUEL, infer_layout

__all__ = [
    "DEFAULT_FUEL",
    "FAILURE_PREFIX",
    "InferenceError",
    "UnitDimRewriteWarning",
    "infer_layout",
]
