"""Switching passes never clears JAX's caches: the route is part of their key.

The pass in force, its options and a forced arch live in a JAX user context
(``smalto.jax.hooks``), which JAX puts in the key of its tracing, lowering and
compilation caches. Entering or leaving ``smalto.jax.enabled()``, ``install()`` and
``uninstall()`` therefore clear nothing, and still no lowering made with one pass is
handed to a call with the other: the refusal's caller does not wait on JAX's whole
cache being thrown away as the error leaves the block (issue #33), and a thread
outside any block is never handed the block's lowerings (issue #43).
"""

from __future__ import annotations

from pathlib import Path

import jax
import pytest
import reference
from beyond_kernels import gelu_exact as plain_gelu_exact
from pallas_kernels import add_one as plain_add_one
from pallas_kernels import f32

import smalto
import smalto.jax
from smalto.jax import hooks

UNSAT = Path(__file__).resolve().parents[1] / "unsat"


@pytest.fixture
def clearings(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """Each call of ``jax.clear_caches`` (counted, not run)."""
    calls: list[int] = []
    monkeypatch.setattr(jax, "clear_caches", lambda: calls.append(1))
    return calls


@pytest.fixture
def passes_run(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """Which pass each layout-inference call ran (JAX's, smalto's)."""
    from jax.experimental.mosaic import gpu as mgpu
    from jax.experimental.mosaic.gpu import layout_inference

    runs: list[str] = []
    real_smalto, real_jax = smalto.infer_layout, layout_inference.infer_layout

    def by_smalto(module, **kwargs):
        runs.append("smalto")
        return real_smalto(module, **kwargs)

    def by_jax(module, **kwargs):
        runs.append("jax")
        return real_jax(module, **kwargs)

    monkeypatch.setattr(smalto, "infer_layout", by_smalto)
    # JAX's own, as the hook finds it and calls it where no route says smalto.
    monkeypatch.setattr(layout_inference, "infer_layout", by_jax)
    monkeypatch.setattr(mgpu, "infer_layout", by_jax)
    return runs


def _lower(fn, *args) -> bool:
    """A plain JAX lowering for CUDA, as a user's ``jax.jit`` makes it: whether it lowers."""
    try:
        jax.jit(fn).trace(*args).lower(lowering_platforms=("cuda",))
    except Exception:  # noqa: BLE001 - JAX's pass refusing, whatever it raises
        return False
    return True


def _fresh(kernel):
    """``kernel`` behind a function of its own: nothing of it in JAX's caches yet."""

    def fresh(x):
        return kernel(x)

    return fresh


def test_refusals_inside_a_block_clear_nothing(clearings: list[int]) -> None:
    module = reference.parse(UNSAT / "cast_does_not_fit.mlir", reference.make_context())
    with smalto.jax.enabled():
        for _ in range(2):
            with pytest.raises(smalto.InferenceError):
                hooks.dispatch(module, arch=(9, 0))
    assert clearings == []
    assert not smalto.jax.is_installed()


def test_switching_passes_keeps_each_pass_lowerings_apart(
    clearings: list[int], passes_run: list[str]
) -> None:
    """Exact GELU: JAX's pass has no rule for ``math.erf``, smalto's lays it out. Each
    pass's outcome is its own, in and out of blocks and installs, and what each lowered
    is reused from JAX's caches (the pass does not run again) without any clearing."""
    x = f32(128, 128)
    add_one, gelu_exact = _fresh(plain_add_one), _fresh(plain_gelu_exact)
    assert [_lower(add_one, x), _lower(gelu_exact, x)] == [True, False]
    assert passes_run == ["jax", "jax"]
    with smalto.jax.enabled():
        assert [_lower(add_one, x), _lower(gelu_exact, x)] == [True, True]
        assert passes_run[2:] == ["smalto", "smalto"]
        assert [_lower(add_one, x), _lower(gelu_exact, x)] == [True, True]
    assert passes_run[4:] == []  # cached: same route
    assert _lower(add_one, x) and not _lower(gelu_exact, x)
    # JAX's add_one comes from the cache; its refused row softmax was never cached.
    assert passes_run[4:] == ["jax"]
    smalto.jax.install()
    try:
        assert _lower(gelu_exact, x)
    finally:
        smalto.jax.uninstall()
    assert not _lower(gelu_exact, x)
    assert clearings == []


def test_options_are_part_of_the_key(passes_run: list[str]) -> None:
    x = f32(128, 128)
    add_one = _fresh(plain_add_one)
    with smalto.jax.enabled():
        _lower(add_one, x)
    with smalto.jax.enabled(rewrite=False):
        _lower(add_one, x)
    with smalto.jax.enabled():
        _lower(add_one, x)
    # Once per distinct set of options; the third block finds the first's lowering.
    assert passes_run.count("smalto") == 2
