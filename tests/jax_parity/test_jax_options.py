"""Options of ``smalto.infer_layout`` through the Pallas route (``smalto.jax``).

JAX's own call gives the module, the fuel and the arch; every other keyword of
``smalto.infer_layout`` (``rewrite``, and those to come) is given to
``install``, ``enabled`` or ``lower`` and reaches every call smalto makes.
"""

from __future__ import annotations

import warnings

import jax.numpy as jnp
import pytest
from user_kernels_keepdims import HOPPER, rms_norm

import smalto
import smalto.jax
from smalto.jax import KernelLoweringError
from smalto.jax.hooks import pass_options

X = jnp.zeros((64, 128), jnp.float32)
W = jnp.zeros((128,), jnp.float32)


def _lower_rms_norm(**options: object) -> smalto.jax.Lowering:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", smalto.UnitDimRewriteWarning)
        return smalto.jax.lower(rms_norm, X, W, arch=HOPPER, **options)


def test_the_options_are_infer_layouts_keywords_but_fuel_and_arch() -> None:
    assert "rewrite" in pass_options()
    assert not {"fuel", "arch"} & pass_options()


def test_an_option_reaches_the_pass() -> None:
    """The RMS norm written with keepdims=True has no layouts as written: it lowers
    only through the unit-dim rewrite, which ``rewrite=False`` turns off."""
    lowering = _lower_rms_norm()
    assert lowering.inferred_by == "smalto"
    with pytest.raises(KernelLoweringError) as raised:
        _lower_rms_norm(rewrite=False)
    assert raised.value.stage == "inference"
    assert str(raised.value.__cause__).startswith(smalto.FAILURE_PREFIX)


def test_enabled_gives_its_options_inside_the_block_only() -> None:
    with smalto.jax.enabled(rewrite=False):
        with pytest.raises(KernelLoweringError):
            _lower_rms_norm()
    # The options in force before the block (none) are back.
    assert _lower_rms_norm().inferred_by == "smalto"


def test_install_keeps_its_options_until_uninstall() -> None:
    smalto.jax.install(rewrite=False)
    try:
        with pytest.raises(KernelLoweringError):
            _lower_rms_norm()
    finally:
        smalto.jax.uninstall()
    assert not smalto.jax.is_installed()
    assert _lower_rms_norm().inferred_by == "smalto"


@pytest.mark.parametrize("option", ["fuel", "arch", "rewrites"])
def test_an_option_the_pass_does_not_take_is_refused_up_front(option: str) -> None:
    with pytest.raises(TypeError, match=repr(option)):
        smalto.jax.install(**{option: True})
    with pytest.raises(TypeError, match=repr(option)), smalto.jax.enabled(**{option: True}):
        pass
    assert not smalto.jax.is_installed()
