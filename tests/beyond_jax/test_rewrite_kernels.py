"""keepdims kernels compile through the unit-dim rewrite (issue #17, part 3).

For every kernel of ``user_kernels_keepdims`` (RMS norm, layer norm with
``fori_loop`` carries, softmax variants, flash attention on Hopper and
Blackwell; f32, bf16, f16), lowered for CUDA on the CPU with smalto inferring:

- the module as written has no layouts: smalto's complete search proves it
  (JAX's own pass searches until it runs out of fuel, 25 s of CPU and more,
  so it runs here with a small fuel only);
- smalto rewrites it, warns naming the user's lines, and JAX's Mosaic GPU
  dialect lowering accepts the layouts of the rewritten module, which pass
  ``smalto.check``;
- the module as written and as rewritten store the same bits (the reference
  evaluator, on random inputs), and so does the kernel written without
  keepdims, which JAX's own pass compiles, unrewritten and with the same
  layouts from smalto.
"""

from __future__ import annotations

import functools
import warnings
from pathlib import Path

import jax
import jax.numpy as jnp
import numpy as np
import pytest
import user_kernels_keepdims
from equivalence import assert_equivalent, assert_same_results
from evaluator import run
from jax._src.lib.mlir import ir
from reference import layout_attributes
from user_kernels_keepdims import BLACKWELL, HOPPER, KERNELS, REFERENCES, Kernel, row_softmax_lse

import smalto
import smalto.jax
from smalto.check import check
from smalto.diagnose.jax_phrases import OUT_OF_FUEL
from smalto.jax import Lowering


def _selected() -> list[Kernel]:
    """The attention kernels and the RMS and layer norms in every dtype on both
    archs (the second shape in one dtype per arch), the other variants in one
    dtype per arch (the suite stays fast)."""
    chosen = []
    for kernel in KERNELS:
        shape = kernel.args[0].shape
        if kernel.kind == "attention":
            head_dim = kernel.args[0].shape[-1]
            if kernel.name.endswith("_barrier") and kernel.dtype != "float16":
                continue
            if head_dim == 128 and (kernel.arch, kernel.dtype) not in (
                (HOPPER, "bfloat16"),
                (BLACKWELL, "float16"),
            ):
                continue
            chosen.append(kernel)
        elif kernel.name in ("rms_norm", "layer_norm"):
            if shape == (64, 128) and (kernel.arch, kernel.dtype) not in (
                (HOPPER, "float32"),
                (BLACKWELL, "bfloat16"),
            ):
                continue
            chosen.append(kernel)
        elif (kernel.arch, kernel.dtype) in ((HOPPER, "float32"), (BLACKWELL, "bfloat16")):
            chosen.append(kernel)
    return chosen


SELECTED = _selected()
KERNELS_FILE = str(Path(user_kernels_keepdims.__file__).resolve())


def _param(kernel: Kernel) -> object:
    return pytest.param(kernel, id=kernel.id)


@functools.cache
def _lowered(kernel: Kernel) -> tuple[Lowering, tuple[smalto.UnitDimRewriteWarning, ...]]:
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        lowering = smalto.jax.lower(kernel.written(), *kernel.args, arch=kernel.arch, by="smalto")
    rewrites = tuple(
        w.message for w in caught if isinstance(w.message, smalto.UnitDimRewriteWarning)
    )
    return lowering, rewrites


@pytest.mark.parametrize("kernel", [_param(k) for k in SELECTED])
def test_the_rewritten_kernel_lowers(kernel: Kernel) -> None:
    lowering, rewrites = _lowered(kernel)
    (captured,) = lowering.kernels
    assert lowering.arch == kernel.arch and captured.inferred_by == "smalto"
    # One warning, naming ops on the kernel's own lines.
    (warning,) = rewrites
    files = {r.position.file for r in warning.rewritten if r.position is not None}
    assert KERNELS_FILE in files
    assert check(captured.module(inferred=True), kernel.arch) == []


def _one_per_variant() -> list[Kernel]:
    """The first kernel of each variant on each arch (the complete search that proves
    "no layouts" takes up to a second: not for every dtype and shape)."""
    seen, chosen = set(), []
    for kernel in SELECTED:
        if (kernel.name, kernel.arch) not in seen:
            seen.add((kernel.name, kernel.arch))
            chosen.append(kernel)
    return chosen


@pytest.mark.parametrize("kernel", _one_per_variant(), ids=lambda k: k.id)
def test_the_module_as_written_has_no_layouts(kernel: Kernel) -> None:
    (captured,) = _lowered(kernel)[0].kernels
    module = captured.module()
    before = str(module.operation.get_asm(enable_debug_info=True))
    with pytest.raises(smalto.InferenceError) as failed:
        smalto.infer_layout(module, arch=kernel.arch, rewrite=False)
    assert OUT_OF_FUEL not in str(failed.value)  # a proof, not a search cut short
    # Tried with the rewrite on a module that cannot be rewritten into one that
    # infers, the module is left as it came: see test_rewrite_infer.py.
    assert str(module.operation.get_asm(enable_debug_info=True)) == before


@pytest.mark.parametrize("kernel", SELECTED, ids=lambda k: k.id)
def test_the_rewrite_keeps_what_the_kernel_stores(kernel: Kernel) -> None:
    (captured,) = _lowered(kernel)[0].kernels
    written, rewritten = captured.module(), captured.module(inferred=True)
    assert_equivalent(written, rewritten, min_trials=3)


_ONE_PER_KIND = [
    next(k for k in SELECTED if k.name == name and k.arch == arch)
    for name, arch in (
        ("rms_norm", HOPPER),
        ("layer_norm", BLACKWELL),
        ("attention_hopper", HOPPER),
        ("attention_blackwell", BLACKWELL),
    )
]


@pytest.mark.parametrize("kernel", _ONE_PER_KIND, ids=lambda k: k.id)
def test_jax_finds_no_layouts_within_a_small_fuel(kernel: Kernel) -> None:
    """JAX's pass spends its whole fuel on these (100 000 steps, 25 s of CPU and
    more each): here, a small fuel."""
    from jax.experimental.mosaic.gpu import layout_inference

    (captured,) = _lowered(kernel)[0].kernels
    module = captured.module()
    with (
        module.context,
        ir.Location.unknown(),
        pytest.raises(ValueError, match="Layout inference failed"),
    ):
        layout_inference.infer_layout(module, fuel=200, arch=kernel.arch)


_TWINNED = {
    ("rms_norm", HOPPER),
    ("layer_norm", BLACKWELL),
    ("log_softmax", HOPPER),
    ("masked_normalize", BLACKWELL),
    ("centered_with_row_max", HOPPER),
    ("column_mean_smem", BLACKWELL),
    ("attention_hopper", HOPPER),
    ("attention_hopper_barrier", HOPPER),
    ("attention_blackwell", BLACKWELL),
}


def _twins() -> list[Kernel]:
    """The first kernel of each variant and arch in ``_TWINNED``."""
    seen, twins = set(), []
    for kernel in SELECTED:
        key = (kernel.name, kernel.arch)
        if key in _TWINNED and key not in seen:
            seen.add(key)
            twins.append(kernel)
    return twins


@pytest.mark.parametrize("kernel", _twins(), ids=lambda k: k.id)
def test_written_without_keepdims_it_needs_no_rewrite_and_stores_the_same(kernel: Kernel) -> None:
    """The kernel written without keepdims infers as written (by JAX's own pass where
    it can, with smalto giving JAX's exact attributes; else by smalto's complete
    search), with no rewrite, and stores the same bits as the keepdims kernel."""
    by = "jax" if kernel.twin_by_jax else "smalto"
    with warnings.catch_warnings():
        warnings.simplefilter("error", smalto.UnitDimRewriteWarning)
        (twin,) = smalto.jax.lower(
            kernel.written(keepdims=False), *kernel.args, arch=kernel.arch, by=by
        ).kernels
        if by == "jax":
            module = twin.module()
            with module.context, ir.Location.unknown():
                smalto.infer_layout(module, arch=kernel.arch)
            assert layout_attributes(module) == layout_attributes(twin.module(inferred=True))
    (captured,) = _lowered(kernel)[0].kernels
    assert_same_results(run(twin.module()), run(captured.module(inferred=True)))


def test_every_kind_runs_on_both_archs_in_every_dtype() -> None:
    """The selection covers what the issue asks for."""
    covered = {(k.kind, k.arch, k.dtype) for k in SELECTED}
    for kind in ("rms_norm", "layer_norm"):
        for arch in (HOPPER, BLACKWELL):
            for dtype in ("float32", "bfloat16", "float16"):
                assert (kind, arch, dtype) in covered
    for arch in (HOPPER, BLACKWELL):
        for dtype in ("bfloat16", "float16"):
            assert ("attention", arch, dtype) in covered


_TOLERANCE = {"float32": 2e-5, "bfloat16": 2e-2, "float16": 2e-3}


@pytest.mark.parametrize(
    "kernel",
    [k for k in _one_per_variant() if k.name in REFERENCES and k.kind != "attention"],
    ids=lambda k: k.id,
)
def test_the_rewritten_kernel_computes_what_jnp_does(kernel: Kernel) -> None:
    """The evaluator runs the whole rewritten kernel (its operands straight from
    GMEM): the result is the plain jnp one, so the kernels test what they say."""
    (captured,) = _lowered(kernel)[0].kernels
    buffers = run(captured.module(inferred=True))
    inputs, outputs = buffers[: len(kernel.args)], buffers[len(kernel.args) :]
    expected = REFERENCES[kernel.name](*(jnp.asarray(x) for x in inputs))
    tolerance = _TOLERANCE[kernel.dtype]
    np.testing.assert_allclose(
        outputs[0].astype(np.float32),
        np.asarray(expected).astype(np.float32),
        rtol=tolerance,
        atol=tolerance,
    )


def test_a_keepdims_kernel_that_infers_as_written_is_not_rewritten() -> None:
    """The statistics are stored or broadcast straight from their expansion (which
    JAX's canonicalizer folds): nothing to rewrite, and nothing is."""
    x = jax.ShapeDtypeStruct((128, 256), jnp.float32)
    with warnings.catch_warnings():
        warnings.simplefilter("error", smalto.UnitDimRewriteWarning)
        (captured,) = smalto.jax.lower(row_softmax_lse, x, arch=HOPPER, by="smalto").kernels
    assert "vector<128x1xf32>" in (captured.inferred_text or "")
