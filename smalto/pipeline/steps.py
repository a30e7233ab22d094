"""The pass: read, derive, solve, write.

``solve_as_written`` reads a module into the program view (``smalto.program.reader``),
checks what it can take (``smalto.pipeline.validate``), runs every op's rule
(``smalto.rules``), names the module for dumps and dumps the system when
asked (``smalto.pipeline.dump``), and decides the system (``smalto.solve``);
``write`` puts the answer on the ops (``smalto.pipeline.annotate``).

Where it finds no layouts, the pass says what it found and stops: it raises a
``Failure`` (a rule refused the module, no assignment exists, the fuel ran
out) with the program, the system and the solver, undiagnosed. What to do
about it (try a rescue on a copy, put the failure into words) is the caller's
(``smalto.infer``): the diagnosis is most of a failure's cost, and nobody
reads it where a rescue then infers the module.
"""

from __future__ import annotations

from typing import TextIO

from jax._src.lib.mlir import ir

from smalto.basics.records import value_class
from smalto.constraints.language import System, conflicting_fixed
from smalto.errors import InferenceError
from smalto.pipeline import annotate
from smalto.pipeline.dump import after_derivation
from smalto.pipeline.validate import check_input
from smalto.program.reader import read_program
from smalto.program.view import Program
from smalto.rules import consumers, derive_system
from smalto.rules.tmem import mixed_collective
from smalto.solve.decision import Exhausted, NoLayouts, Solved
from smalto.solve.options import DEFAULT_FUEL, SolveOptions
from smalto.solve.search import decide

__all__ = [
    "DEFAULT_FUEL",
    "Failure",
    "Inference",
    "OutOfFuel",
    "RulesRefused",
    "SolveOptions",
    "Unsatisfiable",
    "derive",
    "solve",
    "solve_as_written",
    "solve_copy",
    "write",
]


@value_class()
class Inference:
    """Everything one inference produced: the program view, the system, and what solved it
    (``Solved``: the state that holds the answer, and whether JAX's order found it)."""

    program: Program
    system: System
    solved: Solved


class Failure(Exception):
    """The pass found no layouts for the module; what it found, not diagnosed yet.

    Raised by the pass for its caller (``smalto.infer``), which diagnoses it:
    it is never the error a user sees. The module is as it came.
    """

    def __init__(self, program: Program, what: str) -> None:
        super().__init__(what)
        self.program = program


class RulesRefused(Failure):
    """A rule refused the module (an annotation its value cannot take): ``error`` says
    why in full, JAX's phrase first."""

    def __init__(self, program: Program, error: InferenceError) -> None:
        super().__init__(program, "a rule refused the module")
        self.error = error


class Unsatisfiable(Failure):
    """No assignment satisfies the derived system: ``decision`` says what proved it and
    what the answer in JAX's order broke (``smalto.solve.search.decide``)."""

    def __init__(self, program: Program, system: System, decision: NoLayouts) -> None:
        super().__init__(program, "no layout assignment exists")
        self.system = system
        self.decision = decision


class OutOfFuel(Failure):
    """The search spent its fuel before it decided the system: ``spent`` attempts,
    with ``open_variables`` still open."""

    def __init__(
        self, program: Program, system: System, spent: int, open_variables: list[int]
    ) -> None:
        super().__init__(program, f"the search ran out of fuel after {spent} attempts")
        self.system = system
        self.spent = spent
        self.open_variables = open_variables


def solve_as_written(
    module: ir.Module, options: SolveOptions, dump_to: TextIO | None = None
) -> Inference:
    """Infers ``module``'s layouts without writing them; raises ``Failure`` where it has none.

    Between the rules and the search, names the module for dumps and dumps the
    system when asked (``dump_to``, or JAX's environment variables), as JAX's
    pass does. Refuses bad arguments and values it cannot lay out
    (``smalto.pipeline.validate``), and ops without a rule (``NotImplementedError``).
    Must run inside the module's context.
    """
    program = read_program(module, consumers())
    check_input(program, fuel=options.fuel, arch=options.arch)
    system = derive(program, options)
    if not conflicting_fixed(system):
        # (JAX's pass gives up on such a system before it gets here.)
        after_derivation(module, program, system, dump_to)
    return solve(program, system, options)


def solve_copy(module: ir.Module, options: SolveOptions) -> Inference:
    """The pass on a copy a rescue changed (``smalto.rescue``): read, derive, solve, with
    no input check (the module as written passed it) and no dump; raises ``Failure``."""
    program = read_program(module, consumers())
    return solve(program, derive(program, options), options)


def derive(program: Program, options: SolveOptions) -> System:
    """Runs every op's rule (``smalto.rules``); ``RulesRefused`` where a rule refuses."""
    try:
        return derive_system(program, options.arch)
    except InferenceError as error:
        raise RulesRefused(program, error) from None


def solve(program: Program, system: System, options: SolveOptions) -> Inference:
    """Decides a derived system; ``Unsatisfiable`` or ``OutOfFuel`` where it finds no
    assignment."""
    match decide(system, program, options):
        case Exhausted(spent=spent, open_variables=open_variables):
            raise OutOfFuel(program, system, spent, open_variables)
        case NoLayouts() as no_layouts:
            raise Unsatisfiable(program, system, no_layouts)
        case Solved() as solved:
            pass
    # Layouts found, but none makes JAX's lowering take a kernel that mixes collective and
    # 1-CTA tensor-core ops: refused here, so that no answer smalto gives fails to lower.
    # (Only Blackwell kernels have tensor-core ops that can be collective.)
    if options.arch >= (10, 0):
        mixed = mixed_collective(program)
        if mixed is not None:
            raise RulesRefused(program, mixed)
    return Inference(program, system, solved)


def write(inference: Inference) -> None:
    """Writes the layouts an inference found onto the module's ops (``annotate``)."""
    plan = annotate.plan_attributes(
        inference.program, inference.system, inference.solved.state.solution()
    )
    annotate.write_attributes(inference.program, plan)
