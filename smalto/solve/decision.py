"""What deciding a system found: one typed outcome (``Decision``).

``Solved``: an assignment, held by the propagation state that found it.
``NoLayouts``: no assignment the lowering accepts exists; ``proof`` is the
state of the widest search that proved it (its conflict, its root's
explanation), and ``jax_answer_breaks`` what the answer in JAX's order broke.
``Exhausted``: the fuel ran out before the system was decided.
"""

from __future__ import annotations

from collections.abc import Callable
from functools import cached_property

from smalto.basics.records import value_class
from smalto.constraints.language import Constraint
from smalto.hw.values import Const
from smalto.solve.fuel import FuelExhausted
from smalto.solve.propagation import Propagation

# The lowering requirements an answer in JAX's order broke, each with the value it gave
# the requirement's register variable.
Breaks = list[tuple[Constraint, Const]]


@value_class(frozen=True, slots=True)
class Solved:
    """An assignment: ``state.solution()``. ``in_jax_order``: found by the search in JAX's
    order (JAX's answer), not by one of smalto's complete searches."""

    state: Propagation
    in_jax_order: bool


class NoLayouts:
    """No assignment the lowering accepts: ``proof``, the state of the search that proved
    it (``conflict``, ``empty_slot``, ``root_explanation()``), and ``jax_answer_breaks``:
    the lowering requirements the answer in JAX's order broke (empty where it found
    none). Where that search was stopped early, they are found when first read (a
    diagnosis reads them; raising the error does not): ``jax_answer_breaks`` is given
    as the function that finds them.
    """

    __match_args__ = ("proof", "jax_answer_breaks")

    def __init__(self, proof: Propagation, jax_answer_breaks: Breaks | Callable[[], Breaks]):
        self.proof = proof
        self._breaks = jax_answer_breaks

    @cached_property
    def jax_answer_breaks(self) -> Breaks:
        breaks = self._breaks
        return breaks() if callable(breaks) else breaks

    def __repr__(self) -> str:
        return f"NoLayouts(conflict={self.proof.conflict!r})"


@value_class(frozen=True, slots=True)
class Exhausted:
    """The fuel ran out first: ``spent`` attempts, with ``open_variables`` still open."""

    spent: int
    open_variables: list[int]

    @staticmethod
    def of(exhausted: FuelExhausted) -> Exhausted:
        return Exhausted(exhausted.spent, exhausted.open_variables)


Decision = Solved | NoLayouts | Exhausted

__all__ = ["Breaks", "Decision", "Exhausted", "NoLayouts", "Solved"]
