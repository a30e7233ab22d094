"""Deciding a system: the three outcomes of ``decide``, and each strategy of its sequence.

``decide`` runs ``InJaxOrder``, ``Complete`` and ``Widened`` in turn on the
state under JAX's rules until one decides (``EarlyWidening`` is consulted at
the checkpoint: ``test_checkpoint.py``). Each strategy has one method,
``run(state) -> Decision | None``; these tests hold each to what it decides
and to what it leaves the next, and ``for_diagnosis`` to the caller's options.
"""

from __future__ import annotations

from pathlib import Path

import pytest
import reference
from rule_kit import HOPPER, WGMMA, gmem, kernel, layout_cast, parse, vec, vector_load, vector_store

import smalto
from smalto.basics.mlir import in_context
from smalto.constraints.language import GmemTransfer, System
from smalto.program.reader import read_program
from smalto.program.view import Program
from smalto.rules import consumers, derive_system
from smalto.solve import for_diagnosis as diagnosis_entry
from smalto.solve import search
from smalto.solve.decision import Exhausted, NoLayouts, Solved
from smalto.solve.for_diagnosis import CORE_FUEL, EDITED_FUEL, DiagnosisSearches, for_diagnosis
from smalto.solve.options import SolveOptions
from smalto.solve.propagation import Propagation
from smalto.solve.search import Complete, EarlyWidening, InJaxOrder, Widened, decide

UNSAT = Path(__file__).resolve().parents[1] / "unsat"
BLACKWELL = (10, 0)
# The answer in JAX's order breaks its GMEM transfer; the complete search over JAX's
# rules finds one that lowers.
TCGEN05 = (
    reference.BUNDLED_ROOT / "mosaic_tests" / "MosaicGpuDialectTCGen05Test.test_tcgen05_mma30.mlir"
)


def _loaded() -> str:
    x = vec((64, 128), "f32")
    return kernel(
        [vector_load("x", "arg0", gmem((64, 128), "f32"), x, optimized=True)],
        [gmem((64, 128), "f32")],
    )


def _wgmma_roundtrip() -> str:
    """A bf16 WGMMA value loaded from and stored to GMEM: only the widened search converts."""
    x, g = vec((128, 128), "bf16"), gmem((128, 128), "bf16")
    return kernel(
        [
            vector_load("x", "arg0", g, x, optimized=True),
            layout_cast("y", "x", x, WGMMA),
            vector_store("y", x, "arg1", g),
        ],
        [g, g],
    )


def _derived(text: str, arch: tuple[int, int] = HOPPER) -> tuple[System, Program]:
    module = parse(text)
    with in_context(module):
        program = read_program(module, consumers())
        return derive_system(program, arch), program


def _unsat(name: str = "words_iota_mask_in_row_layout") -> tuple[System, Program, tuple[int, int]]:
    text = (UNSAT / f"{name}.mlir").read_text()
    arch = reference.text_arch(text)
    system, program = _derived(text, arch)
    return system, program, arch


# --- the outcomes ------------------------------------------------------------------------------


def test_solved_in_jax_order() -> None:
    system, program = _derived(_loaded())
    decided = decide(system, program, SolveOptions(arch=HOPPER))
    assert isinstance(decided, Solved) and decided.in_jax_order
    assert not decided.state.complete and not decided.state.widened
    assert all(value is not None for value in decided.state.solution())


def test_solved_by_smaltos_own_search() -> None:
    system, program = _derived(_wgmma_roundtrip())
    decided = decide(system, program, SolveOptions(arch=HOPPER))
    assert isinstance(decided, Solved) and not decided.in_jax_order and decided.state.widened


def test_no_layouts_names_its_proof_and_what_jaxs_answer_broke() -> None:
    system, program, arch = _unsat("relayout_unsupported")
    decided = decide(system, program, SolveOptions(arch=arch))
    assert isinstance(decided, NoLayouts) and decided.proof.widened
    # The widest search alone proves it too: no layout the lowering accepts.
    assert isinstance(search.widest(system, program, SolveOptions(arch=arch)), NoLayouts)
    assert isinstance(decided.jax_answer_breaks, list)


def test_exhausted_where_the_fuel_runs_out_in_jax_order() -> None:
    system, program = _derived(_wgmma_roundtrip())
    decided = decide(system, program, SolveOptions(fuel=1, arch=HOPPER))
    assert isinstance(decided, Exhausted) and decided.spent == 1 and decided.open_variables


# --- each strategy -----------------------------------------------------------------------------


def test_in_jax_order_leaves_the_state_at_the_root_with_what_its_answer_broke() -> None:
    system, program = _derived(_wgmma_roundtrip())
    state = Propagation(system, program, HOPPER, 10_000)
    in_jax_order = InJaxOrder(program)
    assert in_jax_order.run(state) is None
    assert len(state.trail) == state.root_mark and state.searching
    assert [type(c) for c, _ in in_jax_order.answer_breaks] == [GmemTransfer, GmemTransfer]


def test_in_jax_order_decides_nothing_where_jaxs_rules_fail_at_the_root() -> None:
    system, program, arch = _unsat("relayout_unsupported")
    state = Propagation(system, program, arch, 10_000)
    in_jax_order = InJaxOrder(program)
    if state.propagate_root():
        pytest.skip("JAX's rules hold at this kernel's root")
    fresh = Propagation(system, program, arch, 10_000)
    assert in_jax_order.run(fresh) is None and not fresh.searching
    assert Complete().run(fresh) is None  # nothing to search from


def test_complete_finds_what_jaxs_order_does_not() -> None:
    system, program = _derived(TCGEN05.read_text(), BLACKWELL)
    state = Propagation(system, program, BLACKWELL, 10_000)
    assert InJaxOrder(program).run(state) is None
    decided = Complete().run(state)
    assert isinstance(decided, Solved) and not decided.in_jax_order and state.complete


def test_complete_out_of_fuel_asks_the_widened_search() -> None:
    """Out of fuel, the complete search over JAX's rules is ``Exhausted`` only where the
    widened search finds layouts; where it proves there are none, that is the answer."""
    system, program = _derived(TCGEN05.read_text(), BLACKWELL)
    options = SolveOptions(fuel=10_000, arch=BLACKWELL)

    def starved() -> Propagation:
        state = Propagation(system, program, BLACKWELL, 10_000)
        assert InJaxOrder(program).run(state) is None
        state.fuel.total = 1  # (the complete search gets what is left)
        return state

    assert isinstance(Complete().run(starved()), Exhausted)
    early = EarlyWidening(system, program, options)
    widened = Widened(early, InJaxOrder(program))
    # A widened search that found layouts: out of fuel is the answer.
    early.found = Solved(Propagation(system, program, BLACKWELL, 1), in_jax_order=False)
    assert isinstance(Complete(widened).run(starved()), Exhausted)
    # One that proved there are none: that proof is the answer.
    proof = Propagation(system, program, BLACKWELL, 1, widened=True)
    early.found = NoLayouts(proof, [])
    decided = Complete(widened).run(starved())
    assert isinstance(decided, NoLayouts) and decided.proof is proof


def test_widened_takes_what_the_early_widening_found(monkeypatch: pytest.MonkeyPatch) -> None:
    system, program = _derived(_wgmma_roundtrip())
    options = SolveOptions(arch=HOPPER)
    asked: list[int] = []
    real = search.widest

    def widest(system: System, program: Program, options: SolveOptions, *args: object):  # type: ignore[no-untyped-def]
        asked.append(options.fuel)
        return real(system, program, options, *args)  # type: ignore[arg-type]

    monkeypatch.setattr(search, "widest", widest)
    state = Propagation(system, program, HOPPER, options.fuel)
    in_jax_order = InJaxOrder(program)
    assert in_jax_order.run(state) is None
    early = EarlyWidening(system, program, options)
    decided = Widened(early, in_jax_order).run(state)
    # Made with the fuel less the work the search in JAX's order did.
    assert isinstance(decided, Solved) and asked == [options.fuel - state.fuel.work]
    early.found = decided
    assert Widened(early, in_jax_order).run(state) is decided and len(asked) == 1


def test_widened_no_layouts_carries_jaxs_answer_breaks() -> None:
    system, program, arch = _unsat("relayout_unsupported")
    options = SolveOptions(arch=arch)
    state = Propagation(system, program, arch, options.fuel)
    in_jax_order = InJaxOrder(program)
    in_jax_order.run(state)
    in_jax_order.answer_breaks = [("marker", None)]  # type: ignore[list-item]
    decided = Widened(EarlyWidening(system, program, options), in_jax_order).run(state)
    assert isinstance(decided, NoLayouts) and decided.jax_answer_breaks == [("marker", None)]


def test_early_widening_gives_only_a_proof_and_keeps_what_it_found(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    system, program, arch = _unsat()
    options = SolveOptions(arch=arch)
    state = Propagation(system, program, arch, options.fuel)
    state.fuel.budget = 1_000
    early = EarlyWidening(system, program, options)
    proof = early.run(state)
    assert isinstance(proof, NoLayouts) and early.found is proof
    # Layouts exist: no decision, and the layouts kept for ``Widened``.
    system, program = _derived(_wgmma_roundtrip())
    early = EarlyWidening(system, program, options)
    state = Propagation(system, program, HOPPER, options.fuel)
    assert early.run(state) is None and isinstance(early.found, Solved)
    # Out of fuel: as if never made.
    monkeypatch.setattr(search, "widest", lambda *args: Exhausted(1, []))
    early = EarlyWidening(system, program, options)
    assert early.run(state) is None and early.found is None


# --- the diagnosis's entry ---------------------------------------------------------------------


def test_for_diagnosis_takes_the_callers_options() -> None:
    options = SolveOptions(fuel=7, arch=BLACKWELL, allow_unoptimized=True)
    searches = for_diagnosis(options)
    assert searches.arch == BLACKWELL
    assert searches.pass_options == SolveOptions(
        fuel=EDITED_FUEL, arch=BLACKWELL, allow_unoptimized=True
    )


def test_a_diagnosis_searches_under_the_options_inference_was_given(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Every search a refusal's diagnosis makes is under the caller's options (their
    architecture, their switches), with the fuel of its kind."""
    seen: list[SolveOptions] = []
    real = diagnosis_entry.widest

    def widest(system: System, program: Program, options: SolveOptions, *args: object):  # type: ignore[no-untyped-def]
        seen.append(options)
        return real(system, program, options, *args)  # type: ignore[arg-type]

    monkeypatch.setattr(diagnosis_entry, "widest", widest)
    text = (UNSAT / "relayout_unsupported.mlir").read_text()
    arch = reference.text_arch(text)
    module = reference.parse(text, reference.make_context())
    with pytest.raises(smalto.InferenceError) as raised:
        smalto.infer_layout(module, arch=arch, fuel=54_321, rewrite=False)
    assert "why" in str(raised.value)
    assert seen and all(
        o == SolveOptions(fuel=CORE_FUEL, arch=arch, rewrite=False) for o in seen
    ), seen
    assert isinstance(for_diagnosis(SolveOptions()), DiagnosisSearches)
