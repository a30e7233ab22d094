"""What a process's first call asks of the lowering's transfer schedule (``hw.transfers``).

A question costs up to tens of milliseconds where an optimized SMEM transfer has
no plan free of bank conflicts (JAX's planner tries every staggering), so a first
call can be mostly these. A load and a store of one value ask the schedule once;
the complete search asks it only about values that every cheaper check on a slot
kept, and about a slot's values only as far as its choices need; and none of this
changes an answer.
"""

from __future__ import annotations

import functools
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
import reference
from jax._src.lib.mlir import ir
from jax.experimental.mosaic.gpu import fragmented_array as fa
from jax.experimental.mosaic.gpu import layouts as jax_layouts

import smalto
from smalto.hw import encode, transfers
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


def _empty_every_cache() -> None:
    """smalto's per-process caches as a fresh process has them (layouts, answers, texts)."""
    for name, module in list(sys.modules.items()):
        if name == "smalto" or name.startswith("smalto."):
            for value in list(vars(module).values()):
                if isinstance(value, functools._lru_cache_wrapper):
                    value.cache_clear()
    encode._layouts_by_text.clear()


# Bundled kernels of the kinds a first call meets: a WGMMA matmul and a flash attention
# (MMA operands in SMEM), row reductions, a 16-bit store that needs the widened search.
FIRST_CALLS = [
    "kernels/hopper_matmul_t128x128x64_s4_wgN",
    "kernels/flash_attn_fwd_wg_hd128_b64x128",
    "kernels/custom_softmax_rows_bcast_hint",
    "pallas_tests/PallasCallWGTest.test_subbyte_upcast8",
]


@pytest.mark.parametrize("key", FIRST_CALLS)
def test_a_first_call_builds_no_layout_through_jax(
    key: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """JAX's named layouts are read off their text, the layouts smalto offers and their
    reductions are built from data held to JAX (``hw.building``), and MMA operands are
    told from a table: none goes through JAX's checking constructors, decoder or ``reduce``
    (each 0.05-0.3 ms the first time in a process). The answer is the same as with them."""
    entry = next(e for e in reference.bundled_entries() if e.key == key)
    _empty_every_cache()
    context = reference.make_context()
    expected = reference.parse(entry.path, context)
    with context:
        smalto.infer_layout(expected, arch=entry.arch)
    _empty_every_cache()
    through_jax: list[str] = []
    constructor, reduce = fa.TiledLayout.__post_init__, fa.TiledLayout.reduce
    decode = jax_layouts.from_layout_attr

    def counted_constructor(self: fa.TiledLayout, *args: object) -> None:
        through_jax.append("constructor")
        constructor(self, *args)

    def counted_reduce(self: fa.TiledLayout, *args: object, **kwargs: object) -> fa.TiledLayout:
        through_jax.append("reduce")
        return reduce(self, *args, **kwargs)

    def counted_decode(attr: ir.Attribute) -> fa.FragmentedLayout:
        through_jax.append("decode")
        return decode(attr)

    monkeypatch.setattr(fa.TiledLayout, "__post_init__", counted_constructor)
    monkeypatch.setattr(fa.TiledLayout, "reduce", counted_reduce)
    monkeypatch.setattr(jax_layouts, "from_layout_attr", counted_decode)
    module = reference.parse(entry.path, context)
    with context:
        smalto.infer_layout(module, arch=entry.arch)
    assert through_jax == []
    assert str(module) == str(expected)
