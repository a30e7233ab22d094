"""``smalto fix`` does not ask JAX's pass about a kernel smalto's solver proves has no
layouts that lower (``smalto.jax.prediction``): JAX's search on such a kernel ends only
when its fuel runs out (a layer norm of f32[64,256]: minutes). A kernel with layouts is
still asked, and JAX's pass alone proves it lowers."""

from __future__ import annotations

import runpy
from collections.abc import Callable
from pathlib import Path
from typing import Any

import jax
import pytest

import smalto.jax
from smalto.jax import hooks
from smalto.jax.fixing import lower_with
from smalto.jax.prediction import PredictedFailure

REPO = Path(__file__).resolve().parents[2]
NORMS = runpy.run_path(str(REPO / "tests" / "fix_kernels" / "keepdims_norms.py"))
TILE = jax.ShapeDtypeStruct((128, 128), "float32")


@pytest.fixture
def jax_asked(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """The modules JAX's own pass is run on (their text, as they come to it)."""
    asked: list[str] = []
    original = hooks.jax_infer_layout()

    def counted(module: Any, **keywords: Any) -> None:
        asked.append(str(module))
        original(module, **keywords)

    def counting() -> Callable[..., None]:
        return counted

    monkeypatch.setattr(hooks, "jax_infer_layout", counting)
    return asked


def test_fix_does_not_ask_jax_about_a_kernel_smalto_proves_has_no_layouts(
    jax_asked: list[str],
) -> None:
    """rms_norm with its statistic kept (N, 1) beside a WGMMA tile: no layout lowers."""
    ok, error = lower_with(NORMS["rms_norm"], (TILE,), (9, 0), "jax")
    assert not ok
    assert isinstance(error, PredictedFailure)
    assert "smalto's search over every layout JAX's lowering accepts" in str(error)
    assert jax_asked == []


def test_the_prediction_agrees_with_jax_s_own_pass(jax_asked: list[str]) -> None:
    """Asked (no prediction), JAX's pass rejects the same kernel: the prediction said what
    it would have said, not proven."""
    with pytest.raises(smalto.jax.KernelLoweringError) as failed:
        smalto.jax.lower(NORMS["rms_norm"], TILE, arch=(9, 0), by="jax")
    assert failed.value.stage in ("inference", "after inference")
    assert not isinstance(failed.value.kernels[-1].error, PredictedFailure)
    assert len(jax_asked) == 1


def test_a_kernel_with_layouts_is_still_proven_by_jax_s_pass(jax_asked: list[str]) -> None:
    """softmax's keepdims JAX's pass lays out: it is asked, and it lowers the kernel."""
    ok, error = lower_with(NORMS["softmax"], (TILE,), (9, 0), "jax")
    assert ok, error
    assert len(jax_asked) == 1
    assert "in_layouts" not in jax_asked[0]  # (JAX's pass got the module as written)
