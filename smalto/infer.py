"""The pass: read, derive, solve, annotate."""

from __future__ import annotations

import contextlib
import gc
from collections.abc import Iterator
from dataclasses import dataclass
from typing import TextIO

from jax._src.lib.mlir import ir

from smalto import annotate
from smalto.constraints import System, conflicting_fixed
from smalto.diagnose import describe_conflict, describe_fuel_exhaustion, suggest_at_derivation
from smalto.dump import after_derivation
from smalto.errors import FAILURE_PREFIX, InferenceError
from smalto.mlir import in_context
from smalto.phrases import OUT_OF_FUEL, unsatisfiable
from smalto.program import Program
from smalto.reader import read_program
from smalto.rules import derive_system
from smalto.solve.search import FuelExhausted, Solver, decide
from smalto.tracebacks import with_op_traceback
from smalto.validate import check_input

# Ample for every kernel we know: the search needs a few dozen attempts at most
# where JAX's pass may need thousands.
DEFAULT_FUEL = 100_000


@dataclass
class Inference:
    """Everything one inference produced: the program view, the system, the solved solver."""

    program: Program
    system: System
    solver: Solver


def solve_module(
    module: ir.Module,
    *,
    fuel: int = DEFAULT_FUEL,
    arch: tuple[int, int] = (9, 0),
    dump_to: TextIO | None = None,
    rewrite: bool = False,
) -> Inference:
    """Infers layouts without writing them; raises as ``infer_layout`` does.

    Between the rules and the search, names the module for dumps and dumps
    the system when asked (``dump_to``, or JAX's environment variables), as
    JAX's pass does (see ``smalto.dump``). With ``rewrite``, a module with no
    layouts as written is tried again after the unit-dim rewrite
    (``smalto.rewrite``), and rewritten in place if that infers. Must run
    inside the module's context (``infer_layout`` takes care of it).
    """
    arch = tuple(arch)  # type: ignore[assignment]
    try:
        # With the rewrite to try, the diagnosis waits: the rewritten module
        # may infer, and then nobody reads it (it is most of a failure's cost).
        return _solve_as_written(module, fuel, arch, dump_to, diagnose=not rewrite)
    except InferenceError as error:
        if not rewrite:
            raise
        failed = error
    # Only here, where the module has no layouts: a module that infers never
    # even imports the rewrite.
    from smalto.rewrite.fallback import solve_rewritten

    try:
        return solve_rewritten(
            module,
            failed,
            solve_copy=lambda copy: search(*_derived(copy, arch), arch, fuel, diagnose=False),
            solve=lambda rewritten: _solve_as_written(rewritten, fuel, arch, dump_to),
        )
    except Undiagnosed as undiagnosed:
        raise undiagnosed.diagnosed() from None


def _solve_as_written(
    module: ir.Module,
    fuel: int,
    arch: tuple[int, int],
    dump_to: TextIO | None,
    *,
    diagnose: bool = True,
) -> Inference:
    program = read_program(module)
    check_input(program, fuel=fuel, arch=arch)
    try:
        system = derive_system(program, arch)
    except InferenceError as error:
        suggest_at_derivation(error, program, arch)  # an annotation its value cannot take
        raise
    if not conflicting_fixed(system):
        # (JAX's pass gives up on such a system before it gets here.)
        after_derivation(module, program, system, dump_to)
    return search(program, system, arch, fuel, diagnose=diagnose)


def _derived(module: ir.Module, arch: tuple[int, int]) -> tuple[Program, System]:
    program = read_program(module)
    return program, derive_system(program, arch)


class Undiagnosed(InferenceError):
    """No layouts, the diagnosis not made yet: ``diagnosed()`` makes the error to raise.

    Notes added to it (``add_note``) are carried over to that error.
    """

    def __init__(self, program: Program, system: System, solver: Solver) -> None:
        super().__init__("no layouts (not diagnosed yet)")
        self.parts = (program, system, solver)

    def diagnosed(self) -> InferenceError:
        error = _unsatisfiable_error(*self.parts)
        for note in getattr(self, "__notes__", ()):
            error.add_note(note)
        return error


def search(
    program: Program,
    system: System,
    arch: tuple[int, int],
    fuel: int,
    *,
    diagnose: bool = True,
) -> Inference:
    """Solves a derived system; an ``InferenceError`` in JAX's words and then ours if it
    cannot (``Undiagnosed`` without ``diagnose``, when there is no assignment)."""
    try:
        solver = decide(system, program, arch, fuel)
        solved = solver.solved
    except FuelExhausted as e:
        reason = describe_fuel_exhaustion(program, system, e.spent, e.open_variables)
        raise InferenceError(reason, phrase=f"{FAILURE_PREFIX}: {OUT_OF_FUEL}") from None
    if not solved:
        if not diagnose:
            raise Undiagnosed(program, system, solver)
        raise _unsatisfiable_error(program, system, solver)
    return Inference(program, system, solver)


def _unsatisfiable_error(program: Program, system: System, solver: Solver) -> InferenceError:
    """The error for a system with no assignment: JAX's phrase, then the diagnosis."""
    phrase = unsatisfiable(program, system)
    message, report = describe_conflict(program, system, solver)
    error = InferenceError(message, conflict=report, phrase=phrase.text)
    # The op JAX blames, else the first one of the conflict: its source line
    # ends the traceback, as in JAX's errors.
    culprit = phrase.op
    if culprit is None and report.requirements:
        culprit = report.requirements[0].element.origin
    if culprit is not None:
        op = program.ops[culprit]
        with_op_traceback(error, op.operation, op.name)
    return error


def infer_layout(
    module: ir.Module,
    *,
    fuel: int = DEFAULT_FUEL,
    arch: tuple[int, int] = (9, 0),
    rewrite: bool = True,
) -> None:
    """Infers register layouts, SMEM transforms and TMEM layouts for ``module``.

    Writes ``in_layouts``/``out_layouts``, ``in_transforms``/``out_transforms``
    and ``in_tmem_layouts``/``out_tmem_layouts`` on the ops, exactly as JAX's
    ``infer_layout`` does. Raises ``InferenceError`` when no assignment exists
    or ``fuel`` attempts did not find one (the message starts with JAX's own
    for that failure), ``NotImplementedError`` for ops it has no rule for. Like
    JAX's pass, it sets the module's ``mosaic_gpu.dump_basename`` if absent
    once the rules have run (so also when the search fails); otherwise a
    failure leaves the module unchanged.

    Where the module as written has no layouts, and ``rewrite`` is true,
    smalto tries the unit-dim rewrite (``smalto.rewrite``): values expanded
    by unit dims (``keepdims=True`` statistics) computed without them. If the
    rewritten module infers, the module is rewritten in place, its layouts
    written, and a ``smalto.UnitDimRewriteWarning`` names every changed op;
    if not, the module is left as it came and the error is the one about the
    module as written.
    """
    with in_context(module), _cyclic_gc_paused():
        result = solve_module(module, fuel=fuel, arch=arch, rewrite=rewrite)
        plan = annotate.plan_attributes(result.program, result.system, result.solver.solution())
        annotate.write_attributes(result.program, plan)
        # Freed here, while the collector is paused: they hold no cycles, so
        # reference counting frees them all; left alive, they would be
        # traversed by the collection that resuming it sets off.
        del result, plan


@contextlib.contextmanager
def _cyclic_gc_paused() -> Iterator[None]:
    """Pauses Python's cyclic garbage collector for one inference, as it was on entry.

    The pass allocates many thousands of small objects (program view, sites,
    constraints, trail entries) in a few milliseconds; each allocation burst
    can set off a collection that traverses them, and now and then one that
    traverses every object of the process (JAX's included), tens of
    milliseconds at once. Nothing the pass allocates needs the collector
    before it returns: reference counting frees it, and the collector
    resumes on the way out, whatever happens. (Whatever is still alive when
    it resumes is traversed by the collection the allocations since set
    off: callers free what they made first.) About 7% on kernels dense in
    register values, and no more stalls.
    """
    if not gc.isenabled():
        yield
        return
    gc.disable()
    try:
        yield
    finally:
        gc.enable()
