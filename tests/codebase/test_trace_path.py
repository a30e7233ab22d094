"""The pass reads straight: following one value through it touches few modules and
doubles back little (``bench.trace_path``; issue #35, part 3).

A ceiling, not a timing: a change that spreads the path over more modules, or
makes one call back into a module that called it (a callback, one state split
over classes in several files), must lower the figures elsewhere or say why.
"""

from __future__ import annotations

from bench import trace_path

# The figures after #35 part 3 (before it: 28 modules, 7 doubles back).
MODULES_CEILING = 27
DOUBLES_BACK_CEILING = 2


def test_a_reduction_of_a_wgmma_accumulator_reads_straight_through_the_pass() -> None:
    found = trace_path.measure()
    assert len(found.modules) <= MODULES_CEILING, found.modules
    assert len(found.doubles_back) <= DOUBLES_BACK_CEILING, found.doubles_back
    # The avoidable ones stay gone: the view calls no reader back, the searches
    # share one state instead of inheriting it, the relayouts are no third rule file.
    assert ("smalto.program.reader", "smalto.program.view") not in found.doubles_back
    assert not any(
        below in ("smalto.solve.jax_order", "smalto.solve.complete")
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
