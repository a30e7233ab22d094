"""The settings of one inference: ``SolveOptions``, made once by ``smalto.infer_layout``
from its keywords and handed down, whole, to the pass, the solver and the rescues.

A new setting is a field here, the keyword that sets it on ``infer_layout``
(``smalto.infer``), and the one place that reads it: whatever lies between
passes the options on without naming their fields.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import cast

# Ample for every kernel we know: the search needs a few dozen attempts at most
# where JAX's pass may need thousands.
DEFAULT_FUEL = 100_000
HOPPER = (9, 0)


@dataclass(frozen=True, slots=True)
class SolveOptions:
    """How to infer one module.

    ``fuel``: the attempts the search may make (as JAX's pass counts its own).
    ``arch``: the GPU architecture, (major, minor). ``rewrite``: where the
    module as written has no layouts, try the unit-dim rewrite
    (``smalto.rescue.unit_dims``). ``stage_through_smem``: then route the
    transfers with no optimized plan through SMEM (``smalto.rescue.staging``).
    ``allow_unoptimized``: then make the fewest transfers unoptimized
    (``smalto.rescue.unoptimized``).
    """

    fuel: int = DEFAULT_FUEL
    arch: tuple[int, int] = HOPPER
    rewrite: bool = True
    allow_unoptimized: bool = False
    stage_through_smem: bool = False

    def __post_init__(self) -> None:
        # A caller may pass the pair as a list: a tuple from here on (a key, compared).
        if type(self.arch) is not tuple:
            object.__setattr__(self, "arch", cast(tuple[int, int], tuple(self.arch)))
