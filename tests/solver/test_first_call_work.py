"""What a process's first call asks of the lowering's transfer schedule (``hw.transfers``).

A question costs up to tens of milliseconds where an optimized SMEM transfer has
no plan free of bank conflicts (JAX's planner tries every staggering), so a first
call can be mostly these. A load and a store of one value ask the schedule once;
the complete search asks it only about values that every cheaper check on a slot
kept, and about a slot's values only as far as its choices need; and none of this
changes an answer.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
import reference
from jax.experimental.mosaic.gpu import fragmented_array as fa

import smalto
from smalto.hw import transfers
from smalto.hw.transfers import Transfer
from smalto.solve import complete

UNSAT = Path(__file__).resolve().parents[1] / "unsat"
# The epilogue of a production sm_100 ragged dot, which no layout lowers: the search
# proves it, over every layout the stored value could take.
EPILOGUE = UNSAT / "fixes_tcgen05_transposed_epilogue.mlir"
BLACKWELL = (10, 0)


@pytest.fixture
def empty_caches() -> Iterator[None]:
    """The transfer caches as a fresh process has them (and as they were, after)."""

    def clear() -> None:
        for cached in (
            transfers._schedule_starts,
            transfers.smem_transfer_supported,
            transfers.gmem_transfer_supported,
        ):
            cached.cache_clear()

    clear()
    yield
    clear()


def test_a_load_and_a_store_of_one_value_run_the_schedule_once(empty_caches: None) -> None:
    question = ((8, 64), 128, fa.WGMMA_LAYOUT, (128, 128), (128, 1), 16, Transfer.OPTIMIZED)
    stored = transfers.smem_transfer_supported(*question, store=True)
    loaded = transfers.smem_transfer_supported(*question, store=False)
    assert stored and loaded
    assert transfers._schedule_starts.cache_info().misses == 1
    assert transfers._schedule_starts.cache_info().hits == 1


def _refusal_and_questions() -> tuple[str, int]:
    module = reference.parse(EPILOGUE.read_text(), reference.make_context())
    with pytest.raises(smalto.InferenceError) as refused:
        smalto.infer_layout(module, arch=BLACKWELL)
    return str(refused.value), transfers._schedule_starts.cache_info().misses


def test_the_complete_search_asks_the_schedule_last_with_the_same_answer(
    empty_caches: None, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Judged last, the transfers are asked about fewer values (a value another check
    rules out is never probed), and the refusal, its diagnosis included, is the same."""
    message, questions = _refusal_and_questions()
    transfers._schedule_starts.cache_clear()
    transfers.smem_transfer_supported.cache_clear()
    transfers.gmem_transfer_supported.cache_clear()
    # Every check in the order the watchers list them, as before the transfers went last.
    monkeypatch.setattr(complete, "_asks_the_lowering", lambda constraint: False)
    message_in_order, questions_in_order = _refusal_and_questions()
    assert message == message_in_order
    assert questions < questions_in_order


# Bundled corpus kernels where JAX's answer breaks a GMEM transfer, so the widened complete
# search decides: it finds layouts for the first, and proves the second has none.
WIDENED = [
    "pallas_tests/PallasCallWGTest.test_subbyte_upcast8",
    "pallas_tests/PallasCallWGTest.test_broadcast_in_dim11",
]


def _answer_and_questions(key: str) -> tuple[str, int]:
    transfers._schedule_starts.cache_clear()
    transfers.smem_transfer_supported.cache_clear()
    transfers.gmem_transfer_supported.cache_clear()
    entry = next(e for e in reference.bundled_entries() if e.key == key)
    context = reference.make_context()
    module = reference.parse(entry.path, context)
    try:
        with context:
            smalto.infer_layout(module, arch=entry.arch)
        answer = str(module)
    except smalto.InferenceError as refusal:
        answer = str(refusal)  # its diagnosis included
    return answer, transfers._schedule_starts.cache_info().misses


@pytest.mark.parametrize("key", WIDENED)
def test_root_transfers_are_judged_as_the_search_needs_them(
    key: str, empty_caches: None, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The complete search counts a slot's live values only as far as the choice of the next
    variable needs, and asks about the rest when they are tried: fewer questions than
    judging every value at the root, and the same layouts."""
    lazily, asked_lazily = _answer_and_questions(key)
    counted = complete.CompleteSearch._live_count

    def every_value_judged(search: complete.CompleteSearch, slot: int, enough: int) -> int:
        return min(counted(search, slot, 1 << 30), enough)

    monkeypatch.setattr(complete.CompleteSearch, "_live_count", every_value_judged)
    eagerly, asked_eagerly = _answer_and_questions(key)
    assert lazily == eagerly
    assert asked_lazily < asked_eagerly
