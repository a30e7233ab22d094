"""``bench.first_call`` times what it says: each pass's first and second call on the
module, the import, the outcome and the answer (nothing is timed here); and its
held-out kernels are corpus modules the tests and the other benchmarks leave out."""

from __future__ import annotations

from pathlib import Path

import pytest
import reference

from bench import first_call, fresh_process

UNSAT = Path(__file__).resolve().parents[1] / "unsat"
KERNEL = reference.BUNDLED_ROOT / "kernels" / "custom_elementwise_chain_grid.mlir"


@pytest.mark.parametrize("which", first_call.PASSES)
def test_a_fresh_process_reports_both_calls_the_import_and_the_answer(which: str) -> None:
    figures = fresh_process.measure(KERNEL, which, (9, 0))
    assert figures["outcome"] == "ok"
    assert figures["first"] > 0 and figures["second"] > 0
    assert ("smalto_import" in figures) == (which == "smalto")
    assert figures["jax_import"] >= 0


def test_both_passes_give_one_answer_where_jax_lowers() -> None:
    answers = {
        which: fresh_process.measure(KERNEL, which, (9, 0))["answer"]
        for which in "jax smalto".split()
    }
    assert answers["jax"] == answers["smalto"]


def test_the_refusal_is_timed_as_a_raise() -> None:
    figures = fresh_process.measure(first_call.REFUSAL, "smalto", (10, 0))
    assert figures["outcome"] == "InferenceError"
    assert first_call.module_arch(first_call.REFUSAL) == (10, 0)


def test_held_out_kernels_are_neither_in_the_sample_nor_refusals() -> None:
    if reference.corpus_root() is None:
        pytest.skip("the shared corpus is not present")
    chosen = first_call.held_out(20)
    assert len(chosen) == 20 == len(set(chosen))
    root = reference.corpus_root()
    assert root is not None
    keys = {path.relative_to(root).with_suffix("").as_posix() for path in chosen}
    bundled = {entry.key for entry in reference.bundled_entries()}
    refusals = set(first_call.CORPUS_REFUSALS.read_text().split())
    assert not keys & bundled and not keys & refusals
    assert all(not key.startswith("kernels/") for key in keys)


def _measured(name: str, *, same_answer: bool, smalto_first: float) -> first_call.Measured:
    return first_call.Measured(
        name=name,
        jax_first=4.0,
        smalto_first=smalto_first,
        jax_second=2.0,
        smalto_second=1.0,
        jax_import=300.0,
        smalto_import=45.0,
        outcome={"jax": "ok", "smalto": "ok"},
        same_answer=same_answer,
    )


def test_the_summary_of_kernels_whose_answers_all_differ_from_jax() -> None:
    # One kernel whose layouts from JAX do not lower, as a user names it alone:
    # there are no identical answers to summarise, and the summary still says the rest.
    lines = first_call.summary_lines([_measured("k", same_answer=False, smalto_first=5.0)], [])
    assert lines[0].startswith("first call, JAX/smalto: median 0.80x")
    assert "smalto slower on 1 of 1 (k)" in lines[0]
    assert not any("identical answers only" in line for line in lines)
    assert lines[-1].startswith("import smalto.infer beyond JAX's Mosaic GPU package: median 45 ms")


def test_the_summary_counts_identical_answers_apart() -> None:
    kernels = [
        _measured("same", same_answer=True, smalto_first=1.0),
        _measured("differs", same_answer=False, smalto_first=8.0),
    ]
    lines = first_call.summary_lines(kernels, [])
    identical = [line for line in lines if "identical answers only" in line]
    assert identical[0].startswith("first call (identical answers only), JAX/smalto: median 4.00x")
    assert "smalto slower on 0 of 1" in identical[0]
