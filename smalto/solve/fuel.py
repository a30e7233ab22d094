"""Fuel: the attempts a solver may make and those it made, and when each search must stop.

One ``Fuel`` per propagation state, shared by the searches made on it. JAX's
pass counts an attempt per candidate it tries (a splat tried for a value
that cannot be one is an attempt, though it does no work); smalto counts
those (``spent``) and, apart, the attempts that did work (``work``): the
budget of the search in JAX's order bounds the work, the user's fuel the
attempts. The searches count (``spent += 1``, ``work += 1``) and compare
against the limits themselves, at every candidate; where a limit is met,
what happens is decided here (``out_of_work``, ``past_jaxs_fuel``).
"""

from __future__ import annotations

import sys
from collections.abc import Callable


class FuelExhausted(Exception):
    """The fuel ran out before the system was decided: ``spent`` attempts, with
    ``open_variables`` still open."""

    def __init__(self, spent: int, open_variables: list[int]) -> None:
        super().__init__(f"search ran out of fuel after {spent} attempts")
        self.spent = spent
        self.open_variables = open_variables


class AtCheckpoint(Exception):
    """The search in JAX's order, having done the attempts of work its checkpoint names,
    stops there (back at the root) for its caller to decide whether to go on.

    A search that does not backtrack takes one attempt per open variable; one
    that goes on far past that wanders through a kernel with no answer, as
    JAX's pass does before it gives up. Its caller (``search.InJaxOrder``) can
    find that out sooner (the widened search proving no layout lowers) and not
    go on; where it goes on, it runs the search again without the checkpoint
    (the same search, step for step: it is deterministic).
    """


# What a search hands over to name the variables still open, where the fuel runs out
# (asked only then: listing them walks every variable).
OpenVariables = Callable[[], list[int]]


class Fuel:
    """The fuel of one propagation state: its counts and limits (see the module's doc).

    ``total``: the fuel the solver was given. ``spent``: attempts, counted as
    JAX's pass counts its fuel. ``work``: the attempts of the search in JAX's order
    that did work. ``limit``:
    the attempts the search under way may spend. ``work_limit``: where the
    work meets the search in JAX's order's checkpoint, else its budget.
    ``past_jaxs``: whether the search in JAX's order went on past the fuel
    JAX's pass has (``past_jaxs_fuel``): its answer, if any, is then not JAX's.
    """

    __slots__ = (
        "total",
        "spent",
        "work",
        "limit",
        "work_limit",
        "past_jaxs",
        "budget",
        "checkpoint",
    )

    def __init__(self, total: int) -> None:
        self.total = total
        self.spent = 0
        self.work = 0
        self.limit = total
        self.work_limit = sys.maxsize
        self.past_jaxs = False
        # The attempts of work the search in JAX's order may take (its budget), and
        # its checkpoint (attempts of work; ``AtCheckpoint``).
        self.budget = 0
        self.checkpoint: int | None = None

    # --- the search in JAX's order ---------------------------------------------------

    def start_in_jax_order(self, budget: int, checkpoint: int | None) -> None:
        """The search in JAX's order starts, from nothing spent: all of the fuel, ``budget``
        attempts of work, and the ``checkpoint`` (attempts of work), if it comes before
        the budget."""
        self.spent = self.work = 0
        self.past_jaxs = False
        self.limit = self.total
        self.budget = budget
        if checkpoint is not None and checkpoint >= budget:
            checkpoint = None  # the budget comes first
        self.checkpoint = checkpoint
        # Met where the work passes the checkpoint, else the budget (``out_of_work``).
        self.work_limit = budget if checkpoint is None else checkpoint

    def out_of_work(self, open_variables: OpenVariables) -> None:
        """The work reached ``work_limit``: at the checkpoint, raises ``AtCheckpoint``; at
        the budget, ``FuelExhausted``."""
        if self.checkpoint is None or self.work >= self.budget:
            raise FuelExhausted(self.spent, open_variables())
        raise AtCheckpoint

    def past_jaxs_fuel(self, complete: bool, open_variables: OpenVariables) -> None:
        """JAX's pass, searching in this order, runs out of fuel here: raises ``FuelExhausted``,
        unless the fuel went on doomed candidates, the work within the budget.

        Then JAX's pass has no answer, and smalto goes on in JAX's order
        (what JAX would answer with more fuel), counting work only: in a kernel
        of a thousand loops fed by one splat, JAX's fuel runs out on doomed
        splats with the search nearly done, and the complete search would
        start over. The user's fuel still bounds the work (``solve``).
        ``complete``: whether the state judges as the complete search does.
        """
        # (The budget, though a checkpoint not passed yet holds the work below it.)
        if complete or self.total <= max(self.work_limit, self.budget):
            raise FuelExhausted(self.spent, open_variables())
        self.past_jaxs = True
        self.limit = sys.maxsize

    def spend_on_doomed(self, count: int, complete: bool, open_variables: OpenVariables) -> None:
        """Spends ``count`` attempts on doomed candidates (a splat for a value that cannot be
        one) without trying them: as trying each would, after checking the fuel."""
        if self.work >= self.work_limit:
            self.out_of_work(open_variables)
        if self.spent + count > self.limit:
            # Where trying them one by one would have run out.
            self.spent = self.limit
            self.past_jaxs_fuel(complete, open_variables)
        self.spent += count

    # --- the complete search ---------------------------------------------------------

    def start_complete(self, fuel: int) -> None:
        """The complete search starts, with ``fuel`` attempts: smalto's own search, whose
        fuel goes on work (the splats JAX's order spent fuel on did none). ``work`` stays
        what the search in JAX's order did (what the widened search's fuel is counted
        from: ``search.Widened``)."""
        self.spent = self.work
        self.limit = fuel
        self.work_limit = sys.maxsize

    def exhausted(self, open_variables: OpenVariables) -> FuelExhausted:
        """The error for fuel run out here."""
        return FuelExhausted(self.spent, open_variables())
