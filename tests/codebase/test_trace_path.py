"""The pass reads straight: following one value through it touches few modules and
doubles back little (``path_trace``, ``python -m bench.trace_path``; issue #35, part 3).

A ceiling, not a timing: a change that spreads the path over more modules, or
makes one call back into a module that called it (a callback, one state split
over classes in several files), must lower the figures elsewhere or say why.
"""

from __future__ import annotations

import path_trace as trace_path

# The figures after #44 part 3 (before it: 26 modules entered, under a ceiling of 27,
# and 2 doubles back; before #35 part 3: 28 and 7). The solver now holds the state
# rather than being it: the search no longer doubles back into the state's module
# from its root. The fuel's accounting (``solve.fuel``) and the settings of one
# inference (``solve.options``) are modules of their own, one job each, which the
# path enters: two more modules. Issue #51: the search in JAX's order is two modules by
# design, what ports JAX's search (``solve.jax_search``) and its speed machinery behind a
# small interface (``solve.candidate_scan``), and its outcome a type of its own
# (``solve.decision``); the complete search, made only where JAX's order decides
# nothing, is no longer entered: one more in all.
MODULES_CEILING = 29
DOUBLES_BACK_CEILING = 1


def test_a_reduction_of_a_wgmma_accumulator_reads_straight_through_the_pass() -> None:
    found = trace_path.measure()
    assert len(found.modules) <= MODULES_CEILING, found.modules
    assert len(found.doubles_back) <= DOUBLES_BACK_CEILING, found.doubles_back
    # The avoidable ones stay gone: the view calls no reader back, the searches
    # share one state instead of inheriting it (and the solver holds it rather than
    # being it), the relayouts are no third rule file.
    assert ("smalto.program.reader", "smalto.program.view") not in found.doubles_back
    assert not any(
        below in ("smalto.solve.jax_search", "smalto.solve.complete", "smalto.solve.search")
        for below, _ in found.doubles_back
    ), found.doubles_back
    assert "smalto.rules.relayouts" not in found.modules
    # The path is the pass's: read, rules, solver, attributes.
    for module in (
        "smalto.program.reader",
        "smalto.rules",
        "smalto.solve.search",
        "smalto.pipeline.annotate",
    ):
        assert module in found.modules
