"""smalto against JAX's own pass, module by module, on the corpus.

JAX's results come from the cache in ``.cache/reference/`` (see
``reference.py``). The corpus is ``../shared/corpus`` when present, else the
bundled sample in ``tests/corpus``; ``SMALTO_CORPUS=bundled|full`` forces one.
Modules on which JAX's pass is known to fail (``jax_infer_ok: false``, the
fuel-exhausted ones) are left out: they take JAX minutes.

Where JAX's answer lowers, smalto's is identical to it. Where JAX's own
lowering rejects JAX's answer (an optimized GMEM transfer that does not
coalesce: the checker finds it in JAX's answer, and
``test_check.test_jax_annotations_pass`` lowers such answers to show the
lowering raises), smalto answers with layouts the checker accepts, or
reports that no layout lowers (``corpus_lowering.smalto_fixes_jax_answer``).
"""

from __future__ import annotations

from pathlib import Path

import corpus_lowering
import pytest
import reference

MAX_DIFF_LINES = 40

CORPUS_NAME, ENTRIES = reference.selected_entries()
COMPARED = [e for e in ENTRIES if e.jax_ok]


def _param(entry: reference.CorpusEntry) -> object:
    marks = [pytest.mark.blackwell] if entry.blackwell else []
    return pytest.param(entry, id=entry.key, marks=marks)


def _format_diff(lines: list[str]) -> str:
    shown = lines[:MAX_DIFF_LINES]
    if len(lines) > MAX_DIFF_LINES:
        shown.append(f"... and {len(lines) - MAX_DIFF_LINES} more differences")
    return "\n".join(shown)


def _require_smalto() -> None:
    """Skip while ``smalto.infer`` does not exist; any other import error fails."""
    try:
        import smalto.infer  # noqa: F401
    except ModuleNotFoundError as e:
        if e.name != "smalto.infer":
            raise
        pytest.skip("smalto.infer (smalto.infer_layout) does not exist yet")


@pytest.mark.parametrize("entry", [_param(e) for e in COMPARED])
def test_same_attributes_as_jax(entry: reference.CorpusEntry) -> None:
    _require_smalto()
    expected, jax_error = reference.run_jax(entry.path, entry.arch)
    if expected is None:
        pytest.skip(f"JAX's pass fails on this module: {jax_error}")
    ours = reference.smalto_outcome(entry.path, entry.arch)
    lines = reference.diff_attributes(expected, ours.attributes) if ours.attributes else []
    if ours.attributes is not None and not lines:
        return
    if corpus_lowering.smalto_fixes_jax_answer(entry, ours.error) is not None:
        return  # JAX's answer does not lower; smalto's does, or smalto says none does
    if ours.attributes is None:
        pytest.fail(f"{entry.key} (arch {entry.arch}): smalto failed: {ours.error}", pytrace=False)
    if lines:
        pytest.fail(
            f"{entry.key} (arch {entry.arch}): {len(lines)} differences from JAX\n"
            + _format_diff(lines),
            pytrace=False,
        )


# Small and varied: a splat/strided test, a TMEM test, a wgmma pipeline, a kernel.
DETERMINISM_KEYS = (
    "pallas_tests/PipelineWGTest.test_emit1",
    "mosaic_tests/MosaicGpuDialectTCGen05Test.test_tcgen05_mma30",
    "kernels/blackwell_ragged_dot_collective",
)


def _bundled(key: str) -> reference.CorpusEntry:
    entries = {e.key: e for e in reference.bundled_entries()}
    return entries[key]


@pytest.mark.parametrize("key", DETERMINISM_KEYS)
def test_reference_is_deterministic(key: str) -> None:
    """JAX vs JAX on two separately parsed copies: the comparison itself is sound."""
    entry = _bundled(key)
    first, _ = reference.jax_attributes(entry.path, entry.arch, reference.make_context())
    second, _ = reference.jax_attributes(entry.path, entry.arch, reference.make_context())
    assert first, "JAX wrote no layout attributes at all"
    assert reference.diff_attributes(first, second) == []


def test_reference_cache_round_trip(tmp_path: Path) -> None:
    entry = _bundled(DETERMINISM_KEYS[0])
    fresh = reference.jax_outcome(entry.path, entry.arch, cache_dir=tmp_path)
    cached = reference.jax_outcome(entry.path, entry.arch, cache_dir=tmp_path)
    assert not fresh.cached and cached.cached
    assert fresh.attributes is not None and cached.attributes == fresh.attributes


def test_diff_reports_each_difference() -> None:
    jax = [("3:vector.load", {"out_layouts": "[A]"}), ("5:arith.addf", {"in_layouts": "[A, A]"})]
    smalto = [("3:vector.load", {"out_layouts": "[B]"}), ("7:arith.mulf", {"in_layouts": "[A]"})]
    assert reference.diff_attributes(jax, jax) == []
    assert reference.diff_attributes(jax, smalto) == [
        "3:vector.load out_layouts: jax=[A] smalto=[B]",
        "5:arith.addf in_layouts: jax=[A, A] smalto=<absent>",
        "7:arith.mulf in_layouts: jax=<absent> smalto=[A]",
    ]
