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
