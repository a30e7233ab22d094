"""Staging reuses dead SMEM, and ``smalto check`` catches a wrong reuse (issue #50, items 3
and 4).

A staging buffer takes bytes of the kernel's own SMEM that the liveness analysis
(``smalto.program.smem_liveness``) proves dead around the staged op; staged buffers
never live at once share them. Every staged module here is checked by smalto's
checker and lowered by JAX's own dialect lowering (with a launch context); where the
evaluator runs the kernel, it proves the staged module leaves every buffer as the
module as written does, with SMEM modelled as one block of bytes (so that a buffer
placed over bytes still needed changes what the kernel computes).
"""

from __future__ import annotations

import functools
import re
import warnings
from pathlib import Path
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from corpus_lowering import lower_with_jax
from jax._src.pallas.mosaic_gpu.interpret.interpret_pallas_call import (
    reset_gpu_interpret_mode_state,
)
from jax.experimental.pallas import mosaic_gpu as plgpu
from rule_kit import parse
from staging_kit import assert_staging_exact, without_proven_ends
from user_kernels_ragged import BLACKWELL, ragged_dot_args, ragged_dot_f32
from user_kernels_staging import (
    tcgen05_three_epilogues,
    tcgen05_three_epilogues_staged_in_place,
)
from user_kernels_unoptimized import sds

import smalto
import smalto.jax
from smalto.hw.memory import SMEM_PER_BLOCK, STAGED
from smalto.program.smem_liveness import SmemLiveness
from smalto.rewrite.staging import ALIGNMENT

UNOPTIMIZED = "optimized = false"
_SMEM_SIZE = re.compile(r"dynamic_shared_memory_size %c(\d+)_i32")
_STAGED_SLICE = re.compile(
    r'"mosaic_gpu.slice_smem"\(\) <\{offset = (\d+) : i32\}> \{[^}]*' + re.escape(STAGED)
)

_WAITS = re.compile(r"^ *nvvm\.cp\.async\.bulk\.wait_group 0.*$", re.MULTILINE)


def _smem_size(text: str) -> int:
    (size,) = {int(s) for s in _SMEM_SIZE.findall(text)}
    return size


def _staged(text: str) -> tuple[Any, list[Any]]:
    module = parse(text)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        smalto.infer_layout(module, arch=BLACKWELL, stage_through_smem=True)
    return module, [w for w in caught if issubclass(w.category, smalto.StagedThroughSmemWarning)]


def _three_epilogues(*, f32_first: bool) -> str:
    args = (sds((128, 64), jnp.bfloat16), sds((64, 128), jnp.bfloat16))
    fn = functools.partial(tcgen05_three_epilogues, f32_first=f32_first)
    (captured,) = smalto.jax.capture(fn, *args)
    return captured.text


@pytest.fixture(scope="module")
def three_epilogues() -> str:
    return _three_epilogues(f32_first=False)


@pytest.fixture(scope="module")
def scratch_held_across() -> str:
    return _three_epilogues(f32_first=True)


@pytest.fixture(scope="module")
def ragged_dot() -> str:
    (captured,) = smalto.jax.capture(ragged_dot_f32, *ragged_dot_args())
    return captured.text


_OPERANDS = (0, 128 * 64 * 2 + 64 * 128 * 2)  # a (128x64 bf16), b (64x128 bf16)


def test_staged_buffers_never_live_at_once_share_the_dead_bytes_of_the_mma_operands(
    three_epilogues: str,
) -> None:
    """Two bf16 epilogues staged (32 KiB each) after the MMA: both buffers take the bytes of
    its operands, dead once the wait on the barrier its commit arrives on is passed (their
    TMA loads ended at the wait before it); SMEM does not grow (past the end it would have
    grown by 32 KiB, and by the sum, 64 KiB, without sharing)."""
    text = three_epilogues
    module, warned = _staged(text)
    staged = str(module)
    assert len(warned) == 2
    for warning in warned:
        assert "reuses SMEM the kernel does not need there (bytes 0 to 32768" in str(
            warning.message
        )
        assert warning.message.staged.dead_region == _OPERANDS
    assert _smem_size(staged) == _smem_size(text)
    assert _STAGED_SLICE.findall(staged) == ["0"] * 2
    assert UNOPTIMIZED not in staged
    assert not smalto.check.check(module, BLACKWELL)
    assert_staging_exact(parse(text), module)
    lower_with_jax(module)  # (last: it lowers the module in place)


def test_staged_buffers_share_the_dead_bytes_of_a_scratch(
    three_epilogues: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """With the MMA operands' bytes never ended, both buffers take the f32 scratch's bytes
    (nothing held there until its store): SMEM does not grow either."""
    without_proven_ends(monkeypatch)
    text = three_epilogues
    module, warned = _staged(text)
    staged = str(module)
    assert [w.message.staged.dead_region for w in warned] == [(32768, 65536)] * 2
    assert _smem_size(staged) == _smem_size(text)
    scratch = re.search(
        r"alias_id = \d+ : i64, offset = (\d+) : i32\}> : \(\) -> memref<128x128xf32", text
    )
    assert scratch is not None
    assert _STAGED_SLICE.findall(staged) == [scratch.group(1)] * 2
    assert not smalto.check.check(module, BLACKWELL)
    assert_staging_exact(parse(text), module)
    lower_with_jax(module)


def test_the_ragged_dot_stages_within_what_a_block_may_have(ragged_dot: str) -> None:
    """The sm_100 ragged dot with an f32 output (the public library's block sizes): past
    the end, its 32 KiB staging buffer would need 263 168 bytes (295 936 with one per
    warpgroup, as staging had before); the epilogue buffer is dead between the wait at
    the top of the epilogue and the store, and only the store warpgroup touches it: the
    staging buffer takes it, every transfer optimized, SMEM as written."""
    text = ragged_dot
    before = _smem_size(text)
    past_the_end = -(-before // ALIGNMENT) * ALIGNMENT + 64 * 128 * 4
    assert before <= SMEM_PER_BLOCK < past_the_end == 263_168
    module, warned = _staged(text)
    staged = str(module)
    (warning,) = warned
    assert warning.message.staged.warpgroups == 1
    assert _smem_size(staged) == before <= SMEM_PER_BLOCK
    (offset,) = _STAGED_SLICE.findall(staged)
    epilogue = re.search(r"offset = (\d+) : i32\}> : \(\) -> memref<64x128xf32", text)
    assert epilogue is not None and offset == epilogue.group(1)
    assert UNOPTIMIZED not in staged
    assert not smalto.check.check(module, BLACKWELL)
    lower_with_jax(module)


def test_the_checker_catches_a_buffer_over_bytes_a_tma_copy_still_reads(
    ragged_dot: str,
) -> None:
    """A wrong reuse the rewrite never makes, made by hand on the staged ragged dot: the
    epilogue's waits for its TMA copies removed, the copies out of the epilogue buffer
    (the previous tile's) may still be reading the bytes the staging buffer takes."""
    module, _ = _staged(ragged_dot)
    unwaited = parse(_WAITS.sub("", str(module)))
    (violation,) = smalto.check.check(unwaited, BLACKWELL)
    assert violation.op == "mosaic_gpu.vector_store"
    assert "two buffers overlap while both are live" in violation.message
    assert "a TMA copy out of it may still be reading those bytes" in violation.message
    # The module as written, without its waits, has no two buffers over the same bytes.
    plain = smalto.check.check(parse(_WAITS.sub("", ragged_dot)), BLACKWELL)
    assert not [v for v in plain if "overlap" in v.message]


def test_bytes_held_across_the_op_are_not_taken(
    scratch_held_across: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The f32 scratch written before the bf16 epilogues and copied out after them holds
    data across both: no buffer takes its bytes. The MMA operands' bytes, dead after its
    wait, take both buffers; with the operands never ended, the buffers go past the end
    (one region for both: +32 KiB, not 64)."""
    text = scratch_held_across
    module, warned = _staged(text)
    assert [w.message.staged.dead_region for w in warned] == [_OPERANDS] * 2
    assert _smem_size(str(module)) == _smem_size(text)
    assert not smalto.check.check(module, BLACKWELL)
    assert_staging_exact(parse(text), module)
    without_proven_ends(monkeypatch)
    module, warned = _staged(text)
    assert len(warned) == 2 and all(w.message.staged.dead_region is None for w in warned)
    start = -(-_smem_size(text) // ALIGNMENT) * ALIGNMENT
    assert _smem_size(str(module)) == start + 128 * 128 * 2
    assert _STAGED_SLICE.findall(str(module)) == [str(start)] * 2
    assert not smalto.check.check(module, BLACKWELL)


def test_a_rewrite_that_reuses_live_bytes_is_caught_by_check_and_the_evaluator(
    scratch_held_across: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A mutant of the rewrite whose proof forgets the reads after the op (and, so that the
    operands' bytes are not free first, the MMA's wait): the buffers land on the f32
    scratch, which holds ``acc`` until its TMA copy; the checker and the evaluator both
    refuse the result."""
    without_proven_ends(monkeypatch)
    monkeypatch.setattr(SmemLiveness, "read_before_kill", lambda *_, **__: False)
    module, _ = _staged(scratch_held_across)
    scratch = re.search(
        r"alias_id = \d+ : i64, offset = (\d+) : i32\}> : \(\) -> memref<128x128xf32",
        scratch_held_across,
    )
    assert scratch is not None
    assert _STAGED_SLICE.findall(str(module)) == [scratch.group(1)] * 2
    violations = smalto.check.check(module, BLACKWELL)
    assert any(
        "two buffers overlap while both are live" in v.message
        and "its data there is read later" in v.message
        for v in violations
    )
    with pytest.raises(AssertionError, match="differs"):
        assert_staging_exact(parse(scratch_held_across), module)


_MBARRIER_WAITS = re.compile(r"^ *nvvm\.mbarrier\.try_wait\.parity .*$", re.MULTILINE)


def test_the_checker_catches_the_operands_taken_with_the_mmas_wait_dropped(
    three_epilogues: str,
) -> None:
    """A staged kernel whose buffers took the MMA operands' bytes, its wait for the MMA
    dropped by hand: the staged store writes bytes the MMA may still be reading."""
    module, _ = _staged(three_epilogues)
    text = str(module)
    waits = _MBARRIER_WAITS.findall(text)
    assert len(waits) == 2  # the TMA loads', then the MMA's
    unwaited = parse(text.replace(waits[1] + "\n", "", 1))
    violations = [v for v in smalto.check.check(unwaited, BLACKWELL) if "overlap" in v.message]
    assert violations and all(v.op == "mosaic_gpu.vector_store" for v in violations)
    assert all("an MMA may still be reading those bytes" in v.message for v in violations)
    # With its wait, none (and the loads' wait dropped instead: the MMA still ends).
    assert not [v for v in smalto.check.check(module, BLACKWELL) if "overlap" in v.message]


def _interpreted(fn: Any, *args: Any) -> list[Any]:
    """The kernel's outputs as JAX's Mosaic GPU interpreter computes them, its race
    detector on (a race raises)."""
    try:
        with plgpu.force_gpu_interpret_mode(plgpu.InterpretGPUParams(detect_races=True)):
            return [np.asarray(x) for x in jax.jit(fn)(*args)]
    finally:
        reset_gpu_interpret_mode_state()


def test_the_pallas_form_of_the_reuse_computes_the_same_in_jaxs_interpreter() -> None:
    """The three epilogues staged in place, written in Pallas (the bf16 values through a
    buffer over the f32 scratch's bytes: ``plgpu.RefUnion``), run in JAX's interpreter
    with its race detector on: bit for bit what the kernel as written computes (inputs
    in quarters: the products are exact). Through the route (``smalto.jax``), it lowers
    with every transfer optimized and no more SMEM than as written; JAX's own pass
    finds it no layouts that lower. The oracle is not blind: the same buffer while the
    scratch holds its data for its TMA copy (``f32_first``) is a race it reports."""
    a = (jnp.arange(128 * 64) % 7 / 4).reshape(128, 64).astype(jnp.bfloat16)
    b = (jnp.arange(64 * 128) % 5 / 4 - 0.5).reshape(64, 128).astype(jnp.bfloat16)
    as_written = _interpreted(tcgen05_three_epilogues, a, b)
    in_place = _interpreted(tcgen05_three_epilogues_staged_in_place, a, b)
    for x, y in zip(as_written, in_place, strict=True):
        np.testing.assert_array_equal(x.view(np.uint8), y.view(np.uint8))
    specs = (sds(a.shape, a.dtype), sds(b.shape, b.dtype))
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        lowering = smalto.jax.lower(
            tcgen05_three_epilogues_staged_in_place, *specs, arch=BLACKWELL, by="smalto"
        )
    assert any(issubclass(w.category, smalto.SmaltoOnlyWarning) for w in caught)
    (kernel,) = lowering.kernels
    assert kernel.inferred_text is not None and UNOPTIMIZED not in kernel.inferred_text
    (captured,) = smalto.jax.capture(tcgen05_three_epilogues, *specs)
    assert _smem_size(kernel.text) == _smem_size(captured.text)
    wrong = functools.partial(tcgen05_three_epilogues_staged_in_place, f32_first=True)
    with pytest.raises(jax.errors.JaxRuntimeError, match="RACE DETECTED"):
        _interpreted(wrong, a, b)


def test_the_pallas_form_of_the_ragged_dots_reuse_computes_the_same_in_jaxs_interpreter() -> None:
    """The ragged dot with its epilogue staged in place, written in Pallas (the accumulator
    through a plain buffer over the epilogue buffer's bytes), run in JAX's interpreter
    with its race detector on, on an M block split between two groups: bit for bit the
    ragged product (exact: inputs in quarters), every row. Through the route, it lowers
    with every transfer optimized, within what a block may have."""
    m, k, n = 64, 256, 128
    x = (jnp.arange(m * k) % 7 / 4).reshape(m, k).astype(jnp.bfloat16)
    w = (jnp.arange(2 * n * k) % 5 / 4 - 0.5).reshape(2, n, k).astype(jnp.bfloat16)
    # One M block split between the groups: rows 0-39 of group 0, rows 40-63 of group 1.
    group_id, start = jnp.array([0, 1], jnp.int32), jnp.array([0, 40], jnp.int32)
    size, row0 = jnp.array([40, 24], jnp.int32), jnp.array([0, 0], jnp.int32)
    meta = (group_id, start, size, row0)
    in_place = functools.partial(ragged_dot_f32, staged_in_place=True)
    (staged,) = _interpreted(lambda *a: (in_place(*a),), x, w, *meta)
    xf, wf = np.asarray(x, np.float32), np.asarray(w, np.float32)
    np.testing.assert_array_equal(staged[:40], xf[:40] @ wf[0].T)
    np.testing.assert_array_equal(staged[40:], xf[40:] @ wf[1].T)
    specs = ragged_dot_args()
    lowering = smalto.jax.lower(in_place, *specs, arch=BLACKWELL, by="smalto")
    (kernel,) = lowering.kernels
    assert kernel.inferred_text is not None and UNOPTIMIZED not in kernel.inferred_text
    assert _smem_size(kernel.text) <= SMEM_PER_BLOCK


def test_past_the_end_one_buffer_serves_an_op_only_one_warpgroup_runs(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Without dead SMEM to take (the search for it stubbed out), the ragged dot's staging
    buffer goes past the end; only its store warpgroup runs the staged store (under
    ``warpgroup == 1``), so one buffer serves, not one per warpgroup of the block."""
    from smalto.rewrite import staging

    monkeypatch.setattr(staging, "_dead_regions", lambda *_: {})
    fn = functools.partial(ragged_dot_f32, block_k=128)
    (captured,) = smalto.jax.capture(fn, *ragged_dot_args())
    text = captured.text
    module, warned = _staged(text)
    (warning,) = warned
    assert warning.message.staged.warpgroups == 1
    start = -(-_smem_size(text) // ALIGNMENT) * ALIGNMENT
    assert _smem_size(str(module)) == start + 64 * 128 * 4
    assert "memref.subview" not in "".join(
        line for line in str(module).splitlines() if STAGED in line
    )
    assert not smalto.check.check(module, BLACKWELL)
    lower_with_jax(module)


_MMA88 = Path(__file__).resolve().parents[1] / "smem_kernels" / "tcgen05_mma88.mlir"


def test_a_kernel_whose_only_smem_is_mma_operands_stages_within_what_a_block_may_have(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """JAX's tcgen05_mma88 (the corpus' one refusal staging could not fit): its 128x512 f16
    result staged needs 131072 bytes; past the end, 295 936 bytes a block. The operands'
    160 KiB are dead once the wait on the barrier the MMA's commit arrives on is passed:
    the staging buffer takes them, SMEM as written."""
    text = _MMA88.read_text()
    module, warned = _staged(text)
    staged = str(module)
    (warning,) = warned
    assert warning.message.staged.dead_region == (0, 131072)
    assert _smem_size(staged) == _smem_size(str(parse(text))) == 163860 <= SMEM_PER_BLOCK
    assert _STAGED_SLICE.findall(staged) == ["0"]
    assert UNOPTIMIZED not in staged
    assert not smalto.check.check(module, BLACKWELL)
    assert_staging_exact(parse(text), module)
    # The MMA's wait dropped: the staged store writes bytes the MMA may still be reading.
    waits = _MBARRIER_WAITS.findall(staged)
    assert len(waits) == 3  # the two TMA loads', then the MMA's
    unwaited = parse(staged.replace(waits[2] + "\n", "", 1))
    violations = [v for v in smalto.check.check(unwaited, BLACKWELL) if "overlap" in v.message]
    assert violations and all("an MMA may still be reading" in v.message for v in violations)
    lower_with_jax(module)  # (it lowers the module in place)
    # With the operands never ended, staging goes past the end, over the limit.
    without_proven_ends(monkeypatch)
    with pytest.raises(smalto.InferenceError) as refused:
        smalto.infer_layout(parse(text), arch=BLACKWELL, stage_through_smem=True)
    assert "295936" in "\n".join(refused.value.notes)


def test_a_wgmma_kernels_buffer_over_its_operands_with_the_wait_dropped_is_caught() -> None:
    """Hopper (``wgmma fp8 out``): the staged store's buffer takes the wgmma's operands'
    bytes after the ``wgmma.wait_group 0`` that follows the commit; that wait removed, the
    checker reports the store over bytes the MMA may still be reading."""
    from user_kernels_unoptimized import matmul_narrow_out

    fn = functools.partial(matmul_narrow_out, out_dtype=jnp.float8_e4m3fn)
    (captured,) = smalto.jax.capture(
        fn, sds((128, 64), jnp.bfloat16), sds((64, 128), jnp.bfloat16), arch=(9, 0)
    )
    module = parse(captured.text)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        smalto.infer_layout(module, arch=(9, 0), stage_through_smem=True)
    (warning,) = [w for w in caught if issubclass(w.category, smalto.StagedThroughSmemWarning)]
    assert warning.message.staged.dead_region == (0, 128 * 128)
    staged = str(module)
    assert not smalto.check.check(module, (9, 0))
    waits = [line for line in staged.splitlines() if "wgmma.wait_group.sync.aligned 0;" in line]
    assert len(waits) == 1
    unwaited = parse(staged.replace(waits[0] + "\n", "", 1))
    violations = [v for v in smalto.check.check(unwaited, (9, 0)) if "overlap" in v.message]
    assert violations and all("an MMA may still be reading" in v.message for v in violations)
