"""The pass: read, derive, solve, annotate."""

from __future__ import annotations

import contextlib

from jax._src.lib.mlir import ir

from smalto import annotate
from smalto.diagnose import describe_conflict
from smalto.errors import InferenceError
from smalto.program import read_program
from smalto.rules import derive_system
from smalto.solve.search import FuelExhausted, Solver

# Ample for every kernel we know: the search needs a few dozen attempts at most
# where JAX's pass may need thousands.
DEFAULT_FUEL = 100_000


def infer_layout(
    module: ir.Module, *, fuel: int = DEFAULT_FUEL, arch: tuple[int, int] = (9, 0)
) -> None:
    """Infers register layouts, SMEM transforms and TMEM layouts for ``module``.

    Writes ``in_layouts``/``out_layouts``, ``in_transforms``/``out_transforms``
    and ``in_tmem_layouts``/``out_tmem_layouts`` on the ops, exactly as JAX's
    ``infer_layout`` does. Raises ``InferenceError`` when no assignment exists
    or ``fuel`` attempts did not find one, ``NotImplementedError`` for ops it
    has no rule for; in both cases the module is left unchanged.
    """
    if fuel <= 0:
        raise ValueError(f"fuel must be positive, got {fuel}")
    if tuple(arch) not in ((9, 0), (10, 0)):
        raise ValueError(f"unsupported arch {arch}: smalto targets sm_90 (9, 0) and sm_100 (10, 0)")
    with _in_context(module):
        program = read_program(module)
        system = derive_system(program, tuple(arch))
        solver = Solver(system, program, tuple(arch), fuel)
        try:
            solved = solver.solve()
        except FuelExhausted as e:
            raise InferenceError(
                f"the search ran out of fuel after {e.spent} attempts with "
                f"{len(e.open_variables)} values still open. Consider adding layout "
                "annotations (e.g. `plgpu.layout_cast`) to guide the search, or raise `fuel`."
            ) from None
        if not solved:
            raise InferenceError(describe_conflict(program, system, solver))
        plan = annotate.plan_attributes(program, system, solver.solution())
        annotate.write_attributes(program, plan)


@contextlib.contextmanager
def _in_context(module: ir.Module):
    # Attribute construction needs a current context and location.
    with module.context, ir.Location.unknown(module.context):
        yield
