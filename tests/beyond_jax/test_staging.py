"""``stage_through_smem``: transfers with no optimized plan routed through SMEM, every
transfer optimized (issue #42).

Every answer is lowered by JAX's own dialect lowering with a launch context
(the Pallas kernels through ``smalto.jax.lower``, the modules with the launch
context rebuilt from their ``gpu.launch``), checked by smalto's checker, and
proven by the reference evaluator to compute what the module as written does.
The option acts only where the module as written has no layouts that lower; it
never changes an answer smalto gives as written, and a failed inference leaves
the module as it came.
"""

from __future__ import annotations

import functools
import html
import json
import re
import warnings
from collections.abc import Callable
from pathlib import Path
from typing import Any

import jax.numpy as jnp
import pytest
import reference
from cli_run import run
from corpus_lowering import apply_attributes, lower_with_jax
from rule_kit import parse
from staging_kernels import REUSES_DEAD_SMEM, STAGED_KERNELS
from staging_kit import assert_staging_exact, staged_text, without_proven_ends
from user_kernels_staging import (
    column_sums_narrow_out,
    tcgen05_narrow_out_beside_a_big_table,
)
from user_kernels_unoptimized import (
    BLACKWELL,
    HOPPER,
    matmul_narrow_out,
    scale_window,
    sds,
    sum_of_table_columns,
    tcgen05_narrow_out,
)

import smalto
import smalto.jax
from smalto.basics.mlir import in_context
from smalto.hw.memory import SMEM_PER_BLOCK, STAGED
from smalto.rewrite.staging import ALIGNMENT

TESTS = Path(__file__).resolve().parents[1]
BF16, F16, F32 = jnp.bfloat16, jnp.float16, jnp.float32
UNOPTIMIZED = "optimized = false"
_SMEM_SIZE = re.compile(r"dynamic_shared_memory_size %c(\d+)_i32")


def _a(dtype: Any = BF16) -> Any:
    return sds((128, 64), dtype)


def _b(dtype: Any = BF16) -> Any:
    return sds((64, 128), dtype)


def _lower(fn: Callable[..., Any], *args: Any, arch: tuple[int, int], **options: Any) -> Any:
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        lowering = smalto.jax.lower(fn, *args, arch=arch, by="smalto", **options)
    return lowering, [w for w in caught if issubclass(w.category, Warning)]


def _of(caught: list[Any], category: type[Warning]) -> list[Any]:
    return [w for w in caught if issubclass(w.category, category)]


def _inferred(lowering: Any) -> list[str]:
    """Each kernel's inferred module, without the dump name (a counter of the process)."""
    return [re.sub(r'dump_basename = "[^"]*"', "", k.inferred_text) for k in lowering.kernels]


def _smem_size(text: str) -> int:
    (size,) = {int(s) for s in _SMEM_SIZE.findall(text)}
    return size


@pytest.mark.parametrize(
    ("name", "arch", "fn", "args", "count", "largest", "warpgroups"),
    STAGED_KERNELS,
    ids=[k[0] for k in STAGED_KERNELS],
)
def test_refused_as_written_compiles_staged_with_every_transfer_optimized(
    name: str,
    arch: tuple[int, int],
    fn: Callable[..., Any],
    args: Any,
    count: int,
    largest: int,
    warpgroups: int,
) -> None:
    with pytest.raises(smalto.jax.KernelLoweringError) as refused:
        smalto.jax.lower(fn, *args, arch=arch, by="smalto")
    assert refused.value.stage == "inference"
    # JAX's own lowering took it (``lower`` runs it); nothing was made unoptimized.
    lowering, caught = _lower(fn, *args, arch=arch, stage_through_smem=True)
    (kernel,) = lowering.kernels
    assert kernel.inferred_by == "smalto" and kernel.inferred_text is not None
    text, inferred = kernel.text, kernel.inferred_text
    assert inferred.count(UNOPTIMIZED) == text.count(UNOPTIMIZED)
    assert not _of(caught, smalto.UnoptimizedTransferWarning)
    # One warning per staged op, at its own line of the kernel's file, with the bytes.
    staged = _of(caught, smalto.StagedThroughSmemWarning)
    assert len(staged) == count == len({w.lineno for w in staged})
    grown = _smem_size(inferred) - _smem_size(text)
    for warning in staged:
        assert Path(warning.filename).name.startswith("user_kernels_")
        said = "SMEM did not grow" if not largest else f"grew by {grown} bytes"
        if name in REUSES_DEAD_SMEM:
            said = "reuses SMEM the kernel does not need there"
        assert said in str(warning.message)
    # Past the old end, 1024-aligned, by the largest buffer (the round trips share one
    # region), one per warpgroup; or in the reductions' scratch, nothing added.
    before = _smem_size(text)
    start = -(-before // ALIGNMENT) * ALIGNMENT
    if largest:
        assert _smem_size(inferred) == start + largest * warpgroups <= SMEM_PER_BLOCK
        assert inferred.count(f"offset = {start} : i32") == count
    else:
        assert grown == 0
    module = parse(inferred)
    assert not smalto.check.check(module, arch)


# The evaluator runs one CTA: a collective MMA reads the other CTA's operands, which it does
# not model (the staged epilogue of the collective kernel is the same as the others').
EVALUATED = [k for k in STAGED_KERNELS if not k[0].startswith("collective")]


@pytest.mark.parametrize(
    ("name", "arch", "fn", "args"),
    [k[:4] for k in EVALUATED],
    ids=[k[0] for k in EVALUATED],
)
def test_the_staged_module_computes_what_the_module_as_written_does(
    name: str, arch: tuple[int, int], fn: Callable[..., Any], args: Any
) -> None:
    """The reference evaluator runs the module as written and the staged one on the same
    random inputs: every buffer of the kernel ends the same, bit for bit."""
    (captured,) = smalto.jax.capture(fn, *args)
    as_written = parse(captured.text)
    staged = parse(captured.text)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", smalto.StagedThroughSmemWarning)
        smalto.infer_layout(staged, arch=arch, stage_through_smem=True)
    assert_staging_exact(as_written, staged)


# The staged kernels whose staged module JAX's own pass answers with layouts its lowering
# takes (elsewhere it gives the reload the producer's layout again, which does not lower).
JAX_LOWERS_STAGED = {
    "tcgen05 bf16 row sums",
    "tcgen05 plus a bf16 bias row",
    "tcgen05 shift by a table column",
}


@pytest.mark.parametrize(
    ("name", "arch", "fn", "args"),
    [k[:4] for k in STAGED_KERNELS],
    ids=[k[0] for k in STAGED_KERNELS],
)
def test_on_a_staged_module_smalto_answers_as_jax_does_where_that_lowers(
    name: str, arch: tuple[int, int], fn: Callable[..., Any], args: Any
) -> None:
    """Rule 1 on the modules staging makes: where JAX's own pass answers with layouts its
    lowering takes, smalto's are the same, attribute for attribute."""
    (captured,) = smalto.jax.capture(fn, *args)
    text = staged_text(parse(captured.text), arch)
    ours, _ = reference.smalto_attributes(text, arch)
    theirs, _ = reference.jax_attributes(text, arch)
    module = parse(text)
    apply_attributes(module, theirs)
    if name not in JAX_LOWERS_STAGED:
        with pytest.raises(Exception, match="GMEM transfer"):
            lower_with_jax(module)
        return
    lower_with_jax(module)
    assert not reference.diff_attributes(theirs, ours)


def test_a_small_buffer_reuses_the_reductions_scratch(monkeypatch: pytest.MonkeyPatch) -> None:
    """Pallas reserves SMEM for cross-warp reductions; a staging buffer that fits reuses it
    (barriers on both sides of the round trip keep the reductions' use and ours apart):
    the kernel's SMEM does not grow. (The MMA operands' bytes, dead after its wait, would
    serve first: their ends are not proven here.)"""
    without_proven_ends(monkeypatch)
    fn = functools.partial(column_sums_narrow_out, out_dtype=BF16)
    args = (sds((64, 64), BF16), _b())
    lowering, caught = _lower(fn, *args, arch=HOPPER, stage_through_smem=True)
    (kernel,) = lowering.kernels
    text, inferred = kernel.text, kernel.inferred_text
    assert _smem_size(inferred) == _smem_size(text)
    (scratch,) = set(re.findall(r"offset = (\d+) : i32, scratch_size = 2048", text))
    (staging,) = re.findall(
        r'"mosaic_gpu.slice_smem"\(\) <\{offset = (\d+) : i32\}> \{[^}]*' + re.escape(STAGED),
        inferred,
    )
    assert staging == scratch
    (warning,) = _of(caught, smalto.StagedThroughSmemWarning)
    assert "reuses the reductions' SMEM scratch: SMEM did not grow" in str(warning.message)
    assert inferred.count("bar.sync") == 3  # before the store, after it, after the load
    assert not smalto.check.check(parse(inferred), HOPPER)
    (captured,) = smalto.jax.capture(fn, *args)
    staged = parse(captured.text)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", smalto.StagedThroughSmemWarning)
        smalto.infer_layout(staged, arch=HOPPER, stage_through_smem=True)
    assert_staging_exact(parse(captured.text), staged)


def test_a_broken_round_trip_is_caught_by_the_evaluator() -> None:
    """The oracle is not blind: a round trip that reloads from the wrong buffer (the
    staging buffer as it was, not as stored) differs from the module as written."""
    fn = functools.partial(tcgen05_narrow_out, out_dtype=BF16)
    (captured,) = smalto.jax.capture(fn, _a(), _b())
    as_written, staged = parse(captured.text), parse(captured.text)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", smalto.StagedThroughSmemWarning)
        smalto.infer_layout(staged, arch=BLACKWELL, stage_through_smem=True)
    with in_context(staged):
        ops = [op for op in _walk(staged) if STAGED in op.attributes]
        (store,) = [op for op in ops if op.name == "mosaic_gpu.vector_store"]
        store.operation.erase()  # the reload then reads the buffer's random contents
    with pytest.raises(AssertionError, match="differs"):
        assert_staging_exact(as_written, staged)


def _walk(module: Any) -> list[Any]:
    from evaluator import walk

    return list(walk(module))


@pytest.mark.parametrize(
    ("arch", "fn", "args"),
    [
        (HOPPER, functools.partial(matmul_narrow_out, out_dtype=BF16), (_a(), _b())),
        (HOPPER, sum_of_table_columns, (sds((128, 2), F32),)),
        (BLACKWELL, scale_window, (sds((64, 128), BF16),)),
    ],
    ids=["wgmma bf16 out", "sum of table columns", "window bf16"],
)
def test_the_option_never_acts_where_the_kernel_lowers_as_written(
    arch: tuple[int, int], fn: Callable[..., Any], args: Any
) -> None:
    plain, _ = _lower(fn, *args, arch=arch)
    staged, caught = _lower(fn, *args, arch=arch, stage_through_smem=True)
    assert not _of(caught, smalto.StagedThroughSmemWarning)
    assert _inferred(staged) == _inferred(plain)


def test_staging_comes_before_unoptimized_transfers() -> None:
    fn = functools.partial(tcgen05_narrow_out, out_dtype=BF16)
    lowering, caught = _lower(
        fn, _a(), _b(), arch=BLACKWELL, stage_through_smem=True, allow_unoptimized=True
    )
    assert len(_of(caught, smalto.StagedThroughSmemWarning)) == 1
    assert not _of(caught, smalto.UnoptimizedTransferWarning)
    (kernel,) = lowering.kernels
    assert UNOPTIMIZED not in kernel.inferred_text


def _big_table(rows: int) -> tuple[Callable[..., Any], tuple[Any, ...]]:
    fn = functools.partial(tcgen05_narrow_out_beside_a_big_table, out_dtype=BF16)
    return fn, (_a(), _b(), sds((2, rows, 256), BF16))


def test_staging_that_needs_more_smem_than_a_block_has_is_refused_with_the_bytes(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """(With the MMA operands' ends not proven: their bytes would take the buffer.)"""
    without_proven_ends(monkeypatch)
    fn, args = _big_table(180)  # 184320 bytes of table
    with pytest.raises(smalto.jax.KernelLoweringError) as refused:
        _lower(fn, *args, arch=BLACKWELL, stage_through_smem=True)
    assert refused.value.stage == "inference"
    (captured,) = smalto.jax.capture(fn, *args)
    start = -(-_smem_size(captured.text) // ALIGNMENT) * ALIGNMENT
    needed = start + 128 * 128 * 2
    assert needed > SMEM_PER_BLOCK
    # The error about the module as written, with a note of the bytes staging needed; the
    # module as it came (a failed inference changes nothing).
    module = parse(captured.text)
    with pytest.raises(smalto.InferenceError) as error:
        smalto.infer_layout(module, arch=BLACKWELL, stage_through_smem=True)
    (note,) = error.value.notes
    assert f"needs {needed} bytes of SMEM per block, over the {SMEM_PER_BLOCK}" in note
    assert str(module) == str(parse(captured.text))
    # With both options, the transfer staging cannot serve is made unoptimized instead.
    lowering, caught = _lower(
        fn, *args, arch=BLACKWELL, stage_through_smem=True, allow_unoptimized=True
    )
    assert len(_of(caught, smalto.UnoptimizedTransferWarning)) == 1
    assert not _of(caught, smalto.StagedThroughSmemWarning)
    # A smaller table leaves room: staged.
    fn, args = _big_table(40)
    _, caught = _lower(fn, *args, arch=BLACKWELL, stage_through_smem=True)
    assert len(_of(caught, smalto.StagedThroughSmemWarning)) == 1


def test_what_staging_tried_in_vain_is_said_once_at_every_door(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    """The note of a rescue tried in vain is in the message itself: the Pallas route's
    error quotes the message, not an inner exception's notes (``add_note``)."""
    without_proven_ends(monkeypatch)
    fn, args = _big_table(180)
    # The route: ``smalto.jax.lower``'s error, and the error JAX's lowering raised.
    with pytest.raises(smalto.jax.KernelLoweringError) as refused:
        _lower(fn, *args, arch=BLACKWELL, stage_through_smem=True)
    routed = str(refused.value)
    tried = "smalto did not stage the 1 transfer(s) with no optimized plan through SMEM"
    assert routed.count(tried) == 1
    assert routed.count(f"bytes of SMEM per block, over the {SMEM_PER_BLOCK}") == 1
    raised = refused.value.__cause__
    assert raised is not None and tried in str(raised)
    # ``infer_layout`` itself: in the message, once, and said nowhere else.
    (captured,) = smalto.jax.capture(fn, *args)
    with pytest.raises(smalto.InferenceError) as direct:
        smalto.infer_layout(parse(captured.text), arch=BLACKWELL, stage_through_smem=True)
    (note,) = direct.value.notes
    assert note.startswith(tried) and str(direct.value).count(note) == 1
    assert str(direct.value).endswith(note)
    assert not getattr(direct.value, "__notes__", ())
    # The CLI: plain, verbose, JSON and the report page, once each.
    source = tmp_path / "table.mlir"
    source.write_text(captured.text)
    first = note.splitlines()[0]
    for flags in ((), ("--verbose",)):
        ran = run("infer", "--arch", "10.0", "--stage-through-smem", *flags, str(source))
        assert ran.status == 1 and ran.err.count(first) == 1, ran.err
    ran = run("infer", "--arch", "10.0", "--stage-through-smem", "--json", str(source))
    assert ran.status == 1
    (document,) = [json.loads(line) for line in ran.out.splitlines() if line.strip()]
    assert document["notes"] == [note] and document["message"].count(first) == 1
    page = tmp_path / "refused.html"
    run("infer", "--arch", "10.0", "--stage-through-smem", str(source), "--report", str(page))
    assert page.read_text().count(html.escape(first)) == 1


# --- modules: SMEM stores with no conflict-free plan, JAX's own test kernels ----------------


SMEM_NO_PLAN = [
    "pallas_epilogue_to_unswizzled_smem.mlir",
    "fixes_tcgen05_transposed_epilogue.mlir",
    "fixes_transposed_tile_load.mlir",
]
CORPUS = reference.load_entries(TESTS / "unoptimized")
# JAX test kernels whose staged module has no layouts (a TMEM layout no SMEM transforms
# serve conflict-free): with both options, they are made unoptimized instead.
NOT_STAGED = {
    "mosaic_tests/MosaicGpuDialectTest.test_smem_gmem_registers_load_store47",
    "pallas_tests/PallasCallTCGen05WGTest.test_tmem_store_load_collective1",
}


def _staged_module(text: str, arch: tuple[int, int]) -> tuple[Any, list[Any]]:
    module = parse(text)
    with pytest.raises(smalto.InferenceError):
        smalto.infer_layout(parse(text), arch=arch)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        smalto.infer_layout(module, arch=arch, stage_through_smem=True)
    return module, _of(caught, smalto.StagedThroughSmemWarning)


@pytest.mark.parametrize("name", SMEM_NO_PLAN)
def test_smem_transfers_with_no_conflict_free_plan_are_relaid_through_a_buffer(name: str) -> None:
    text = (TESTS / "unsat" / name).read_text()
    arch = reference.text_arch(text)
    module, staged = _staged_module(text, arch)
    assert len(staged) == 1 and staged[0].message.staged.memory == "SMEM"
    assert UNOPTIMIZED not in str(module)
    assert not smalto.check.check(module, arch)
    assert_staging_exact(parse(text), module)
    lower_with_jax(module)


@pytest.mark.parametrize("entry", CORPUS, ids=lambda e: e.key)
def test_jax_test_kernels_compile_staged_or_say_why_not(entry: reference.CorpusEntry) -> None:
    text = entry.path.read_text()
    if entry.key in NOT_STAGED:
        with pytest.raises(smalto.InferenceError) as refused:
            smalto.infer_layout(parse(text), arch=entry.arch, stage_through_smem=True)
        (note,) = refused.value.notes
        assert "staging" in note and "no layouts either" in note
        module = parse(text)
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            smalto.infer_layout(
                module, arch=entry.arch, stage_through_smem=True, allow_unoptimized=True
            )
        assert _of(caught, smalto.UnoptimizedTransferWarning)
        return
    module, staged = _staged_module(text, entry.arch)
    assert staged and UNOPTIMIZED not in str(module).replace(
        UNOPTIMIZED, "", text.count(UNOPTIMIZED)
    )
    assert not smalto.check.check(module, entry.arch)
    lower_with_jax(module)


# --- the checker, the faces -------------------------------------------------------------------


def test_the_checker_refuses_a_slice_past_the_end_and_smem_past_the_limit(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    without_proven_ends(monkeypatch)  # (the staging buffer past the end, SMEM grown)
    fn = functools.partial(tcgen05_narrow_out, out_dtype=BF16)
    lowering, _ = _lower(fn, _a(), _b(), arch=BLACKWELL, stage_through_smem=True)
    inferred = lowering.kernels[0].inferred_text
    size = _smem_size(inferred)
    # (The launch's size is the constant staging made: the SSA name keeps the old size.)
    constant = f"arith.constant {{{STAGED}}} {size} : i32"
    assert inferred.count(constant) == 1
    shrunk = parse(inferred.replace(constant, "arith.constant 32788 : i32"))
    (violation,) = smalto.check.check(shrunk, BLACKWELL)
    assert "past the end of the kernel's dynamic SMEM (32788 bytes)" in str(violation)
    grown = parse(inferred.replace(constant, "arith.constant 240000 : i32"))
    (violation,) = smalto.check.check(grown, BLACKWELL)
    assert f"240000 bytes of dynamic SMEM per block, over the {SMEM_PER_BLOCK}" in str(violation)


def test_smalto_infer_stages_with_the_flag_and_warns_per_op(tmp_path: Path) -> None:
    source = TESTS / "unsat" / "fixes_tcgen05_fp8_out.mlir"
    refused = run("infer", str(source))
    assert refused.status == 1
    ran = run("infer", "--stage-through-smem", str(source))
    assert ran.status == 0, ran.err
    assert "smalto.staged" in ran.out and UNOPTIMIZED not in ran.out
    (line,) = [line for line in ran.err.splitlines() if "SMEM buffer" in line]
    assert line.startswith("smalto: warning: ") and "GMEM store" in line and "grew by" in line
    # The report says it first.
    page = tmp_path / "report.html"
    ran = run("infer", "--stage-through-smem", str(source), "--report", str(page))
    assert ran.status == 0, ran.err
    report = page.read_text()
    assert "<code>--stage-through-smem</code>" in report and "GMEM store" in report


def test_smalto_check_knows_a_staged_module(tmp_path: Path) -> None:
    staged = tmp_path / "staged.mlir"
    ran = run("infer", "--stage-through-smem", str(TESTS / "unsat" / "fixes_tcgen05_fp8_out.mlir"))
    assert ran.status == 0, ran.err
    staged.write_text(ran.out)
    size = _smem_size(ran.out)
    checked = run("check", str(staged))
    assert checked.status == 0, checked.out + checked.err
    assert checked.out.strip().endswith(
        f"; 1 transfer staged through SMEM by smalto (dynamic SMEM {size} bytes)"
    )
    assert '"staged_through_smem": 1' in run("check", "--json", str(staged)).out
    plain = run("check", "--json", str(TESTS / "unsat" / "fixes_tcgen05_fp8_out.mlir")).out
    assert '"staged_through_smem": 0' in plain


def test_install_and_the_environment_pass_the_option(monkeypatch: pytest.MonkeyPatch) -> None:
    smalto.jax.install(stage_through_smem=True)
    try:
        assert dict(smalto.jax.hooks.current_route().options) == {"stage_through_smem": True}
    finally:
        smalto.jax.uninstall()
    monkeypatch.setenv("SMALTO_JAX", "1")
    monkeypatch.setenv("SMALTO_JAX_STAGE_THROUGH_SMEM", "1")
    try:
        smalto.jax._install_from_environment()
        assert dict(smalto.jax.hooks.current_route().options) == {"stage_through_smem": True}
    finally:
        smalto.jax.uninstall()


def test_python_m_smalto_jax_run_takes_the_option(tmp_path: Path) -> None:
    import os
    import subprocess
    import sys

    script = tmp_path / "show.py"
    script.write_text(
        "import smalto.jax\n"
        "from smalto.jax.hooks import current_route\n"
        "print(smalto.jax.is_installed(), dict(current_route().options))\n"
    )
    environment = {**os.environ, "PYTHONPATH": str(TESTS.parent)}
    ran = subprocess.run(
        [sys.executable, "-m", "smalto.jax", "run", "--stage-through-smem", str(script)],
        capture_output=True,
        text=True,
        env=environment,
        timeout=300,
        check=False,
    )
    assert ran.returncode == 0, ran.stderr
    assert ran.stdout.strip() == "True {'stage_through_smem': True}"
