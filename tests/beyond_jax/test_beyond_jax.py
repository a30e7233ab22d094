"""Kernels JAX 0.12.0.1's layout inference cannot infer, though layouts exist
that JAX's own lowering accepts (issue #13).

For every case of ``beyond_kernels.CASES``:

- JAX's pass fails, at the stage and with the message recorded in the case;
- the hand-written layouts of the case lower through JAX's own Mosaic GPU
  lowering (they pin the layouts the engine must find);
- smalto infers layouts that lower (``xfail`` until the engine supports #13).

Everything runs on the CPU: kernels are lowered for CUDA with the arch forced.
"""

from __future__ import annotations

import functools
import re
from functools import partial

import jax.numpy as jnp
import pytest
from beyond_kernels import (
    BLACKWELL,
    CASES,
    HOPPER,
    KEEP_COLS,
    KEEP_ROWS,
    MINOR_ONLY,
    NO_RULE,
    RANK_MISMATCH,
    WGMMA,
    WGMMA_3D,
    WGMMA_COL,
    WGMMA_ROW,
    WIDE_16BIT,
    Case,
    _sds,
    arctan2,
    bias_add_3d,
    gelu_exact,
    index_leading,
    jax_violations,
    keep_dims,
    keepdims_reduce_wgmma_hint,
    lower_annotated,
    reshape_to_keepdims,
)
from jax.experimental.mosaic.gpu import fragmented_array as fa
from jax.experimental.pallas import mosaic_gpu as plgpu
from pallas_kernels import MOSAIC_GPU_CALL, WARPGROUP, assert_lowers

import smalto.jax
from smalto.check import check
from smalto.jax import KernelLoweringError, Lowering

ENGINE_PENDING = pytest.mark.xfail(
    strict=True, reason="16-bit GMEM transfers need a layout wider than WGMMA (#13)"
)
IDS = [case.id for case in CASES]


# JAX's search takes seconds to fail on the scaled keep-dims reductions (the other cases,
# a fraction of one): CI runs one of the four (axis 0 or 1, Hopper or Blackwell), the same
# path, and SMALTO_SLOW=1 all (tests/conftest.py).
_SLOW_FOR_JAX = pytest.mark.sample(1)


@pytest.mark.parametrize(
    "case",
    [pytest.param(c, marks=_SLOW_FOR_JAX) if "_scaled_" in c.name else c for c in CASES],
    ids=IDS,
)
def test_jax_cannot_infer(case: Case) -> None:
    with pytest.raises(KernelLoweringError) as failed:
        smalto.jax.lower(case.fn, *case.args, arch=case.arch, by="jax")
    assert failed.value.stage == case.jax_stage
    assert case.jax_says in str(failed.value)


@functools.cache
def _hand_lowering(case_id: str) -> Lowering:
    """The case lowered with its hand-written layouts, once for the two tests that read it."""
    case = next(c for c in CASES if c.id == case_id)
    return lower_annotated(case.fn, *case.args, arch=case.arch, layouts=case.layouts)


@pytest.mark.parametrize("case", CASES, ids=IDS)
def test_hand_layouts_lower(case: Case) -> None:
    lowering = _hand_lowering(case.id)
    assert lowering.arch == case.arch
    assert lowering.lowered.as_text().count(MOSAIC_GPU_CALL) == 1


@pytest.mark.parametrize("case", [c for c in CASES if c.kind != "erf_atan2"], ids=lambda c: c.id)
def test_jax_constraints_hold_under_hand_layouts(case: Case) -> None:
    (kernel,) = _hand_lowering(case.id).kernels
    assert kernel.inferred_text is not None
    assert jax_violations(kernel.inferred_text, case.arch) == []


@pytest.mark.parametrize(
    "case",
    [pytest.param(c, marks=ENGINE_PENDING) if c.engine_pending else c for c in CASES],
    ids=IDS,
)
def test_smalto_infers_layouts_that_lower(case: Case) -> None:
    (kernel,) = assert_lowers(case.fn, *case.args, arch=case.arch).kernels
    # The independent checker accepts them too.
    assert check(kernel.module(inferred=True), case.arch) == []


@pytest.mark.parametrize(
    "case", [c for c in CASES if c.jax_stage == "after inference"], ids=lambda c: c.id
)
def test_checker_rejects_jax_answers_its_lowering_rejects(case: Case) -> None:
    """JAX's tiled broadcast results below their own rank fail in its lowering;
    ``smalto check`` says so from the attributes alone."""
    with pytest.raises(KernelLoweringError) as failed:
        smalto.jax.lower(case.fn, *case.args, arch=case.arch, by="jax")
    assert RANK_MISMATCH in str(failed.value)
    violations = check(failed.value.kernels[-1].module(inferred=True), case.arch)
    assert any(v.op == "mosaic_gpu.broadcast_in_dim" for v in violations), violations


# --- The layouts themselves ---------------------------------------------------


def test_keep_dims_layouts_reduce_to_the_row_and_column_layouts() -> None:
    assert keep_dims(WGMMA, 1) == KEEP_ROWS and keep_dims(WGMMA, 0) == KEEP_COLS
    assert KEEP_ROWS.reduce([1]) == WGMMA_ROW == WGMMA.reduce([1])
    assert KEEP_COLS.reduce([0]) == WGMMA_COL == WGMMA.reduce([0])
    # The tiling the issue proposes for (N, 1) is this one before canonicalization.
    proposed = fa.TiledLayout(
        fa.Tiling(((64, 1), (16, 1), (8, 1), (1, 1))),
        warp_dims=(-8,),
        lane_dims=(-4, fa.Replicated(4)),
        vector_dim=-1,
        _check_canonical=False,
    )
    assert proposed.canonicalize() == KEEP_ROWS


def test_rank3_wgmma_reduces_to_wgmma() -> None:
    assert WGMMA_3D.reduce([0]) == WGMMA
    assert WGMMA_3D.reduce([0, 1]) == WGMMA_COL
    proposed = fa.TiledLayout(
        fa.Tiling(((1, 64, 8), (1, 16, 8), (1, 8, 8), (2,))),
        warp_dims=(-9,),
        lane_dims=(-3, -2),
        vector_dim=-1,
        _check_canonical=False,
    )
    assert proposed.canonicalize() == WGMMA_3D


def test_minor_only_layout_is_one_column_per_thread() -> None:
    assert MINOR_ONLY.base_tile_shape == (128,)
    assert MINOR_ONLY.vector_length == 1
    assert MINOR_ONLY.registers_shape((128,)) == (1, 1, 1, 1)


# --- Controls: what JAX does infer, next to what it does not ------------------


@pytest.mark.parametrize("arch", [HOPPER, BLACKWELL])
def test_jax_infers_the_same_reduction_without_keepdims(arch: tuple[int, int]) -> None:
    def rowmax(x):
        def body(x_gmem, out_gmem):
            x = plgpu.layout_cast(x_gmem[...], plgpu.Layout.WGMMA)
            out_gmem[...] = x.max(axis=1)

        return plgpu.kernel(body, out_type=_sds((x.shape[0],), x.dtype), compiler_params=WARPGROUP)(
            x
        )

    x = _sds((128, 128), jnp.float32)
    smalto.jax.lower(rowmax, x, arch=arch, by="jax")
    with pytest.raises(KernelLoweringError):
        smalto.jax.lower(partial(keepdims_reduce_wgmma_hint, axis=1), x, arch=arch, by="jax")


def test_jax_infers_a_rank3_broadcast_without_a_wgmma_hint() -> None:
    # Strided layouts broadcast at any rank; the rank-2 WGMMA tiling does not.
    (kernel,) = smalto.jax.lower(
        bias_add_3d, _sds((2, 64, 128), jnp.float32), _sds((128,), jnp.float32), by="jax"
    ).kernels
    assert "WGStridedFragLayout<[2, 64, 128]" in (kernel.inferred_text or "")


@pytest.mark.parametrize("dtype", [jnp.float32, jnp.bfloat16])
def test_erf_and_atan2_get_what_jax_gives_their_twins(dtype) -> None:
    """With ``exp`` for ``erf`` (``x * y`` for ``atan2``), JAX infers the kernels;
    smalto gives the originals the same layout attributes."""
    x = _sds((128, 128), dtype)
    for twin, original, args in (
        (partial(gelu_exact, erf=jnp.exp), gelu_exact, (x,)),
        (partial(arctan2, atan2=lambda a, b: a * b), arctan2, (x, x)),
    ):
        (theirs,) = smalto.jax.lower(twin, *args, by="jax").kernels
        with pytest.raises(KernelLoweringError, match=NO_RULE):
            smalto.jax.lower(original, *args, by="jax")
        (ours,) = smalto.jax.lower(original, *args, by="smalto").kernels
        assert (
            _strided(ours.inferred_text)
            == _strided(theirs.inferred_text)
            == {f"WGStridedFragLayout<[128, 128], {8 // jnp.dtype(dtype).itemsize}>"}
        )


def _strided(text: str | None) -> set[str]:
    return set(re.findall(r"WGStridedFragLayout<[^>]*>", text or ""))


def test_jax_rank2_answer_for_a_rank3_broadcast_is_rejected_by_its_lowering() -> None:
    case = next(c for c in CASES if c.kind == "broadcast3d")
    with pytest.raises(KernelLoweringError) as failed:
        smalto.jax.lower(case.fn, *case.args, arch=case.arch, by="jax")
    assert failed.value.stage == "after inference"
    assert RANK_MISMATCH in str(failed.value)
    # JAX's own constraints accept its rejected answer: they are too loose.
    rejected = failed.value.kernels[-1].inferred_text
    assert rejected is not None
    assert jax_violations(rejected, case.arch) == []


# --- Out of reach: JAX's lowering itself rejects every layout -------------------


@pytest.mark.parametrize("reshaped", [WGMMA_ROW, KEEP_ROWS])
def test_reshape_through_a_size1_dim_lowers_in_no_layout(reshaped: fa.TiledLayout) -> None:
    x = _sds((128, 128), jnp.float32)
    layouts = {
        "mosaic_gpu.vector_load": WGMMA,
        "mosaic_gpu.layout_cast": WGMMA,
        "vector.multi_reduction": WGMMA_ROW,
        "vector.shape_cast": reshaped,
    }
    with pytest.raises(KernelLoweringError, match="Can't reshape") as failed:
        lower_annotated(reshape_to_keepdims, x, arch=HOPPER, layouts=layouts)
    assert failed.value.stage == "after inference"
    for by in ("jax", "smalto"):
        with pytest.raises(KernelLoweringError) as failed:
            smalto.jax.lower(reshape_to_keepdims, x, arch=HOPPER, by=by)
        assert failed.value.stage == "inference"


@pytest.mark.parametrize("axis", [1, 0])
def test_a_16bit_keepdims_column_cannot_be_stored_to_gmem(axis: int) -> None:
    """A 16-bit (N, 1) vector reduced from WIDE_16BIT stores 2 bytes per thread,
    which JAX's GMEM store rejects; the (1, N) one stores 16 bytes per thread
    and lowers. (The 16-bit keep-dims cases store f32.)"""

    def keep_store(x):
        def body(x_gmem, out_gmem):
            out_gmem[...] = jnp.max(x_gmem[...], axis=axis, keepdims=True)

        shape = (1, 128) if axis == 0 else (128, 1)
        return plgpu.kernel(body, out_type=_sds(shape, x.dtype), compiler_params=WARPGROUP)(x)

    layouts = {
        "mosaic_gpu.vector_load": WIDE_16BIT,
        "vector.multi_reduction": WIDE_16BIT.reduce([axis]),
        "mosaic_gpu.broadcast_in_dim": keep_dims(WIDE_16BIT, axis),
    }
    x = _sds((128, 128), jnp.bfloat16)
    if axis == 0:
        lower_annotated(keep_store, x, arch=HOPPER, layouts=layouts)
        return
    with pytest.raises(KernelLoweringError, match="smaller than 4 bytes") as failed:
        lower_annotated(keep_store, x, arch=HOPPER, layouts=layouts)
    assert failed.value.stage == "after inference"


@pytest.mark.parametrize(
    "layout", [MINOR_ONLY, WGMMA_ROW, WGMMA_COL, fa.TCGEN05_ROW_LAYOUT], ids=str
)
def test_leading_index_of_2d_f32_lowers_in_any_rank1_tiling(layout: fa.TiledLayout) -> None:
    """The extract keeps its source's layout, so any layout tiling only the minor
    dim (the named row/column layouts too) lowers for f32 from GMEM."""
    lower_annotated(
        partial(index_leading, index=3),
        _sds((128, 128), jnp.float32),
        arch=HOPPER,
        layouts={"*": layout},
    )


# --- 16-bit GMEM transfers: a lowering requirement JAX's constraints omit ----------


@pytest.mark.parametrize("dtype", [jnp.bfloat16, jnp.float16])
def test_checker_flags_16bit_gmem_transfers_that_do_not_coalesce(dtype) -> None:
    """A 16-bit (2, 64, 128) value loaded from GMEM in WGMMA: 16 bytes a row, not
    whole 32-byte sectors. JAX's lowering rejects it and ``smalto check`` says so;
    in WIDE_16BIT both accept it."""
    x = _sds((2, 64, 128), dtype)
    fn = partial(index_leading, index=1)
    with pytest.raises(KernelLoweringError, match="32 byte sectors") as failed:
        lower_annotated(fn, x, arch=HOPPER, layouts={"*": WGMMA})
    rejected = failed.value.kernels[-1]
    violations = check(rejected.module(inferred=True), HOPPER)
    assert any("GMEM ref" in v.message and "32 byte sectors" in v.message for v in violations)
    (kernel,) = lower_annotated(fn, x, arch=HOPPER, layouts={"*": WIDE_16BIT}).kernels
    assert check(kernel.module(inferred=True), HOPPER) == []
