"""``hw.schedule`` answers as JAX's transfer schedule does, without building IR.

The reference is the schedule run for real (``schedule_probe.probe_schedule``:
``transfer_tiled`` up to its first step, on a throw-away ref). The two must
agree on every question the corpus's kernels ask (their inference, and the
rescues' where the kernel as written has no layouts) and on a grid of
generated questions that reaches every path of the schedule: ``ldmatrix`` rows
and columns (the 8-bit transposed one too), MMA operands, GMEM coalescing,
bank-conflict plans, sub-byte vectors, untiled refs with strides of their own.
"""

from __future__ import annotations

import itertools
import random
import warnings
from collections.abc import Iterator
from typing import Any

import pytest
import reference
from jax._src.lib.mlir import ir
from jax.experimental.mosaic.gpu import fragmented_array as fa
from jax.experimental.mosaic.gpu.mma import MMALayouts
from schedule_probe import probe_schedule

import smalto
from smalto.hw import layouts as hl
from smalto.hw import schedule, transfers
from smalto.hw.strides import row_major

Question = tuple[tuple[Any, ...], tuple[tuple[str, Any], ...]]


def _clear_transfer_caches() -> None:
    for cached in (
        schedule_answers,
        transfers.smem_transfer_supported,
        transfers.gmem_transfer_supported,
    ):
        cached.cache_clear()


schedule_answers = transfers._schedule_starts  # the cache of the model's answers


@pytest.fixture
def corpus_questions(monkeypatch: pytest.MonkeyPatch) -> Iterator[set[Question]]:
    """Every question the selected corpus asks of the schedule, caches emptied first."""
    asked: set[Question] = set()

    def recorded(*args: Any, **kwargs: Any) -> bool:
        asked.add((args, tuple(sorted(kwargs.items()))))
        return schedule_answers(*args, **kwargs)

    _clear_transfer_caches()
    monkeypatch.setattr(transfers, "_schedule_starts", recorded)
    _, entries = reference.selected_entries()
    context = reference.make_context()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for entry in entries:
            # As written; then as the rescues see it where it has no layouts.
            for options in ({}, {"allow_unoptimized": True}, {"stage_through_smem": True}):
                module = reference.parse(entry.path, context)
                try:
                    with context:
                        smalto.infer_layout(module, arch=entry.arch, **options)
                    break
                except smalto.InferenceError as refusal:
                    str(refusal)  # the diagnosis asks questions too
    yield asked
    _clear_transfer_caches()


def test_every_question_the_corpus_asks_is_answered_as_the_schedule_does(
    corpus_questions: set[Question],
) -> None:
    assert len(corpus_questions) > 20  # the corpus does ask
    answers = {True: 0, False: 0}
    for args, kwargs in corpus_questions:
        expected = probe_schedule(*args, **dict(kwargs))
        assert schedule.schedule_starts(*args, **dict(kwargs)) == expected, (args, kwargs)
        answers[expected] += 1
    assert answers[True] and answers[False]


def _mma(bitwidth: int, warps: int) -> tuple[fa.TiledLayout, ...]:
    with ir.Context():
        layouts = MMALayouts(ir.IntegerType.get_signless(bitwidth), m_warps=warps)
    return layouts.lhs, layouts.rhs, layouts.acc


def _layouts() -> list[fa.TiledLayout]:
    mma = [
        layout
        for bitwidth, warps in itertools.product((8, 16, 32), (1, 2, 4))
        for layout in _mma(bitwidth, warps)
    ]
    return [
        fa.WGMMA_LAYOUT,
        fa.WGMMA_TRANSPOSED_LAYOUT,
        fa.WGMMA_LAYOUT_8BIT,
        fa.WGMMA_LAYOUT_UPCAST_2X,
        fa.WGMMA_LAYOUT_UPCAST_4X,
        fa.WGMMA_LAYOUT_ACC_32BIT,
        fa.TCGEN05_LAYOUT,
        fa.TCGEN05_TRANSPOSED_LAYOUT,
        fa.TMEM_NATIVE_LAYOUT,
        *(hl.tmem_native(vector) for vector in (1, 4, 8)),
        hl.m64_collective(128),
        *mma,
    ]


def _strides(shape: tuple[int, ...], rng: random.Random) -> tuple[int, ...]:
    """Row-major mostly; else a transposed ref, a window of a wider one, or a column."""
    dense = row_major(shape)
    kind = rng.choice(("row-major", "row-major", "transposed", "window", "column"))
    if kind == "transposed":
        return (1, shape[0]) if len(shape) == 2 else dense
    if kind == "window":
        return (dense[0] * 2, *dense[1:])
    if kind == "column":
        return (*dense[:-1], rng.choice((2, 8)))
    return dense


def _generated_questions(count: int, seed: int) -> Iterator[tuple[tuple[Any, ...], dict[str, Any]]]:
    """``count`` questions as ``hw.transfers`` asks them (SMEM: tiled or not; GMEM)."""
    rng = random.Random(seed)
    layouts = _layouts()
    shapes = [
        (64, 64),
        (128, 64),
        (64, 128),
        (128, 128),
        (64, 256),
        (256, 32),
        (128, 16),
        (2, 128, 64),
    ]
    for _ in range(count):
        layout = rng.choice(layouts)
        shape = rng.choice(shapes)
        bitwidth = rng.choice((4, 8, 16, 16, 32))
        strides = _strides(shape, rng)
        optimized = rng.random() < 0.7
        if rng.random() < 0.3:
            kwargs = {"gmem": True, "untiled": True}
            yield (shape, 16, layout, shape, strides, bitwidth, optimized), kwargs
            continue
        swizzle = rng.choice((None, 32, 64, 128))
        tiling: tuple[int, ...] | None = None
        if rng.random() < 0.75:
            columns = (swizzle or 128) * 8 // bitwidth
            tiling = rng.choice(((8, columns), (1, columns), (64, columns), (8, 8)))
            tiling = tiling[-len(shape) :]
        txmatrix = rng.random() < 0.85
        args = (
            tiling or shape,
            swizzle or 16,
            layout,
            shape,
            strides,
            bitwidth,
            optimized,
            txmatrix,
        )
        yield args, {"untiled": tiling is None}


def test_generated_questions_are_answered_as_the_schedule_does() -> None:
    answers = {True: 0, False: 0}
    for args, kwargs in _generated_questions(1500, seed=20261206):
        expected = probe_schedule(*args, **kwargs)
        assert schedule.schedule_starts(*args, **kwargs) == expected, (args, kwargs)
        answers[expected] += 1
    # Both answers are common, so a model that always says one of them fails.
    assert min(answers.values()) > 100, answers


@pytest.mark.parametrize(
    ("args", "kwargs", "starts"),
    [
        # The WGMMA accumulator stored to a 128-byte swizzled tile by stmatrix.
        (((8, 64), 128, fa.WGMMA_LAYOUT, (128, 128), (128, 1), 16, True), {}, True),
        # The same value to GMEM: a 16-bit row gives each warp partial sectors.
        (((128, 128), 16, fa.WGMMA_LAYOUT, (128, 128), (128, 1), 16, True), {"gmem": True}, False),
        # ... which an unoptimized store does not mind.
        (((128, 128), 16, fa.WGMMA_LAYOUT, (128, 128), (128, 1), 16, False), {"gmem": True}, True),
        # An 8-bit MMA operand read by a transposed ldmatrix: that path reads the
        # architecture off the enclosing module, which the probe has not, so no.
        (((64, 256), 64, _mma(8, 4)[1], (64, 256), (256, 1), 8, True), {"untiled": True}, False),
    ],
)
def test_known_answers(args: tuple[Any, ...], kwargs: dict[str, Any], starts: bool) -> None:
    assert schedule.schedule_starts(*args, **kwargs) is starts
    assert probe_schedule(*args, **kwargs) is starts


def test_no_mlir_context_is_needed() -> None:
    """The model builds no IR: it answers with no context in force (the probe cannot)."""
    question = ((8, 64), 128, fa.WGMMA_LAYOUT, (128, 64), (64, 1), 16, True)
    assert ir.Context.current is None
    assert schedule.schedule_starts(*question)
