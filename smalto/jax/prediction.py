"""Not asking JAX's pass what smalto's solver proves it cannot answer.

JAX's pass, on a kernel with no layouts, searches until its fuel runs out: on a
layer norm of f32[64,256] whose load states its layout, minutes (``smalto fix``
asks it about the kernel as written and about each candidate edit). smalto's
solver decides the same module in a fraction of a second; where its search over
every layout the lowering accepts (``smalto.solve.search.decide``) proves there
is none, no assignment JAX's search could find lowers either, so JAX's pass
cannot prove the kernel compiles, and is not asked (``jax_finds_none``).

This only ever turns an answer into "not proven": a kernel smalto finds layouts
for, or one it could not decide, is still asked of JAX's pass, and what JAX's
pass accepts is the only proof anything is written on.
"""

from __future__ import annotations

from jax._src.lib.mlir import ir

from smalto.basics.mlir import in_context
from smalto.pipeline.steps import Unsatisfiable, solve_copy
from smalto.solve.options import DEFAULT_FUEL, SolveOptions

PREDICTED = (
    "not run: smalto's search over every layout JAX's lowering accepts proves this kernel "
    "has none, so JAX's search (which ends only when its fuel runs out, minutes on such a "
    "kernel) can find none that lowers"
)


class PredictedFailure(ValueError):
    """JAX's pass, not run on a module smalto proved has no layouts that lower (a
    ``ValueError``, as JAX's pass raises where it finds none)."""


def jax_finds_none(module: ir.Module, arch: tuple[int, int], fuel: int | None) -> bool:
    """Whether smalto's solver proves ``module`` has no layouts that lower (so JAX's pass,
    given ``fuel``, cannot lay it out in a way that lowers). False where it finds layouts,
    runs out of fuel, or cannot read the module: JAX's pass is then asked. The module is
    left as it came (nothing is written on it)."""
    options = SolveOptions(fuel=DEFAULT_FUEL if fuel is None else fuel, arch=arch, rewrite=False)
    try:
        with in_context(module):
            solve_copy(module, options)
    except Unsatisfiable:
        return True
    except Exception:  # (any other answer, or none: JAX's pass decides)
        return False
    return False
