"""The one entry through which a diagnosis searches: ``for_diagnosis(options)``.

A diagnosis searches many small systems (cores it shrinks, kernels it edits)
under the options of the inference it explains, the caller's: their
architecture, and whatever a later setting changes in how a system is
decided. Each kind of question gets the fuel of its kind (a diagnosis's
searches are many, and each a small one; the user's fuel bounds the pass's
search, not these).
"""

from __future__ import annotations

from dataclasses import replace

from smalto.basics.records import value_class
from smalto.constraints.language import System
from smalto.program.view import Program
from smalto.solve.complete import DomainsMade
from smalto.solve.decision import Decision
from smalto.solve.options import SolveOptions
from smalto.solve.search import decide, under_jax_rules, widest

# An edited kernel a single edit fixes needs few search steps; one that needs more is
# no likely fix (``as_the_pass``, ``pass_options``).
EDITED_FUEL = 20_000
# Whether a cut of a kernel's requirements holds together (``widest``).
CORE_FUEL = 5_000
# A value's layout without its annotation: a search that needs more steps than this
# is no likely fix either (``under_jax_rules``).
RELAXED_FUEL = 2_000


@value_class(frozen=True, slots=True)
class DiagnosisSearches:
    """The searches of a diagnosis, under ``options`` (the caller's), each with its fuel."""

    options: SolveOptions

    @property
    def arch(self) -> tuple[int, int]:
        return self.options.arch

    @property
    def pass_options(self) -> SolveOptions:
        """The options for the pass run again on an edited copy of the kernel."""
        return replace(self.options, fuel=EDITED_FUEL)

    def as_the_pass(self, system: System, program: Program) -> Decision:
        """An edited system decided as the pass decides it (``decide``)."""
        return decide(system, program, self.pass_options)

    def widest(self, system: System, program: Program, made: DomainsMade | None = None) -> Decision:
        """Whether any layout the lowering accepts satisfies ``system`` (``search.widest``)."""
        return widest(system, program, replace(self.options, fuel=CORE_FUEL), made)

    def under_jax_rules(self, system: System, program: Program) -> Decision:
        """JAX's order, then the complete search over JAX's rules (``search.under_jax_rules``)."""
        return under_jax_rules(system, program, replace(self.options, fuel=RELAXED_FUEL))


def for_diagnosis(options: SolveOptions) -> DiagnosisSearches:
    """The searches a diagnosis runs, under the caller's ``options``."""
    return DiagnosisSearches(options)


__all__ = ["CORE_FUEL", "EDITED_FUEL", "RELAXED_FUEL", "DiagnosisSearches", "for_diagnosis"]
