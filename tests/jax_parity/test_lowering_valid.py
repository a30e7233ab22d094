"""Every answer smalto returns lowers (issue #17): Pallas kernels through JAX's own lowering.

Each kernel of ``user_kernels_lowering`` is lowered for CUDA (no GPU needed)
with the architecture forced, once with JAX 0.12.0.1's pass and once with
smalto's, all the way through JAX's Mosaic GPU dialect lowering with a
launch context (``smalto.jax.lower``):

- where JAX's answer lowers, smalto's attributes are JAX's;
- where JAX's lowering rejects JAX's answer (a 16-bit GMEM transfer that
  moves half sectors, a tiled broadcast below its result's rank), or JAX's
  pass finds nothing (a rank-3 broadcast of a 2-D operand, 32-row chunks
  reduced over their rows), smalto's answer lowers and the checker accepts
  it;
- where no layout lowers, smalto says so with JAX's phrase, the lowering's
  reason and a change to make, and the kernel with that change lowers.
"""

from __future__ import annotations

import warnings
from functools import partial
from typing import Any

import jax
import jax.numpy as jnp
import pytest
import reference
from jax import lax
from jax._src.lib.mlir import ir
from pallas_kernels import assert_lowers
from user_kernels_lowering import (
    BLACKWELL,
    HOPPER,
    WARPGROUP,
    column_stats_in_chunks,
    gated_matmul,
    gated_tcgen05_matmul,
    matmul_plus_residual,
    scale_rows_3d,
    sds,
    tmem_plus_residual,
    tmem_row_sums,
    tmem_row_sums_via_smem,
)

import smalto
import smalto.jax
from smalto.check import check
from smalto.jax import KernelLoweringError
from smalto.jax.lowering import Lowering

BF16, F16, F32 = jnp.bfloat16, jnp.float16, jnp.float32
FAILURE = "Failed to infer a possible set of layouts"


def jax_rejects(fn: Any, *args: Any, arch: tuple[int, int]) -> KernelLoweringError:
    """JAX's pass on the kernel: it finds no layouts, or its lowering rejects them."""
    with pytest.raises(KernelLoweringError) as failed:
        smalto.jax.lower(fn, *args, arch=arch, by="jax")
    assert failed.value.stage in ("inference", "after inference"), failed.value
    return failed.value


def smalto_lowers(fn: Any, *args: Any, arch: tuple[int, int]) -> Lowering:
    """smalto's answer lowers through JAX's lowering, and the checker accepts it."""
    lowering = assert_lowers(fn, *args, arch=arch)
    for kernel in lowering.kernels:
        assert kernel.inferred_text is not None
        module = reference.parse(kernel.inferred_text, reference.shared_context())
        assert check(module, arch) == [], kernel.name
    return lowering


def no_layout_lowers(fn: Any, *args: Any, arch: tuple[int, int]) -> str:
    """smalto's error where no layout lowers: JAX's phrase first, then ours."""
    with pytest.raises(KernelLoweringError) as failed:
        smalto.jax.lower(fn, *args, arch=arch, by="smalto")
    assert failed.value.stage == "inference"
    error = failed.value.__cause__
    assert isinstance(error, smalto.InferenceError)
    assert str(error).startswith(FAILURE)
    return str(error)


def same_as_jax(fn: Any, *args: Any, arch: tuple[int, int]) -> None:
    """Where JAX's answer lowers, smalto's attributes are JAX's, kernel by kernel."""
    theirs = smalto.jax.lower(fn, *args, arch=arch, by="jax")
    ours = smalto_lowers(fn, *args, arch=arch)
    for a, b in zip(theirs.kernels, ours.kernels, strict=True):
        assert a.inferred_text is not None and b.inferred_text is not None
        ctx = reference.shared_context()
        jax_attrs = reference.layout_attributes(reference.parse(a.inferred_text, ctx))
        our_attrs = reference.layout_attributes(reference.parse(b.inferred_text, ctx))
        assert reference.diff_attributes(jax_attrs, our_attrs) == []


# --- 1. answers JAX's lowering rejects ------------------------------------------------------


@pytest.mark.parametrize(
    ("dtype", "mkn", "out_dtype"),
    [
        (BF16, (64, 64, 128), F32),
        (F16, (128, 64, 256), F32),
        (BF16, (64, 64, 128), BF16),
        (F16, (64, 128, 64), F16),
    ],
    ids=["bf16", "f16-128x256", "bf16-out", "f16-out"],
)
def test_a_16bit_residual_added_to_a_wgmma_accumulator(dtype, mkn, out_dtype) -> None:
    """``acc + r_ref[...].astype(f32)``: JAX loads the residual in WGMMA (16 bytes a
    row, half a sector; its lowering rejects it). smalto loads it so that its
    rows fill sectors and converts it where it is used."""
    m, k, n = mkn
    args = (sds((m, k), dtype), sds((k, n), dtype), sds((m, n), dtype))
    kernel = partial(matmul_plus_residual, out_dtype=out_dtype)
    failed = jax_rejects(kernel, *args, arch=HOPPER)
    assert failed.stage == "after inference" and "32 byte sectors" in str(failed)
    smalto_lowers(kernel, *args, arch=HOPPER)


def test_an_f32_residual_keeps_jaxs_answer() -> None:
    """The same kernel with an f32 residual: JAX's answer lowers, and is smalto's."""
    args = (sds((64, 64), F16), sds((64, 128), F16), sds((64, 128), F32))
    same_as_jax(matmul_plus_residual, *args, arch=HOPPER)


@pytest.mark.parametrize("dtype", [BF16, F16])
def test_16bit_tmem_row_sums_stored_to_gmem_have_no_layout(dtype) -> None:
    """Row sums of a TMEM accumulator: one row a lane, 2 bytes a thread in 16 bits.
    JAX answers TCGEN05_ROW and its lowering rejects it; smalto finds that no
    layout lowers and says what to do without changing the output's type: the fast
    fix first, staging the store through SMEM (which lowers), then the store made
    unoptimized at the user's line. An f32 output lowers with JAX's own answer."""
    args = (sds((128, 64), BF16), sds((64, 128), BF16))
    kernel = partial(tmem_row_sums, out_dtype=dtype)
    failed = jax_rejects(kernel, *args, arch=BLACKWELL)
    assert "GMEM transfer width (2 bytes/thread) is smaller than 4 bytes" in str(failed)
    message = no_layout_lowers(kernel, *args, arch=BLACKWELL)
    assert "JAX's pass would give" in message and "TCGEN05_ROW" in message
    assert "GMEM transfer width (2 bytes/thread) is smaller than 4 bytes" in message
    assert "jnp.float32" not in message  # a remedy never changes what the kernel returns
    assert "`plgpu.store(o_gmem, jnp.sum(acc, axis=1).astype(out_dtype), optimized=False)`" in (
        message
    )
    # (The fast fix first, issue #49: every transfer stays optimized.)
    assert message.index("plgpu.copy_smem_to_gmem") < message.index("optimized=False")
    same_as_jax(partial(tmem_row_sums, out_dtype=F32), *args, arch=BLACKWELL)
    smalto_lowers(partial(tmem_row_sums_via_smem, out_dtype=dtype), *args, arch=BLACKWELL)


def test_a_16bit_residual_from_gmem_added_to_tmem_has_no_layout() -> None:
    """A bf16 residual read straight from GMEM into TCGEN05 (one row a lane) moves
    half sectors, and nothing converts to TCGEN05; smalto says so and suggests
    SMEM, with the transforms to give it; that kernel lowers. In f32, JAX's
    answer lowers and is smalto's."""
    args = (sds((128, 64), BF16), sds((64, 128), BF16), sds((128, 128), BF16))
    jax_rejects(tmem_plus_residual, *args, arch=BLACKWELL)
    message = no_layout_lowers(tmem_plus_residual, *args, arch=BLACKWELL)
    assert "copy it into SMEM first" in message
    assert "plgpu.TilingTransform((8, 64)), plgpu.SwizzleTransform(128)" in message
    smalto_lowers(partial(tmem_plus_residual, via_smem=True), *args, arch=BLACKWELL)
    f32 = (*args[:2], sds((128, 128), F32))
    same_as_jax(tmem_plus_residual, *f32, arch=BLACKWELL)


# --- 2. layouts JAX's rules do not offer ----------------------------------------------------


@pytest.mark.parametrize(
    ("arch", "shape", "dtype"),
    [
        (HOPPER, (4, 64, 128), F32),
        (HOPPER, (4, 64, 128), BF16),
        (HOPPER, (2, 128, 256), F16),
        (BLACKWELL, (4, 64, 128), F32),
        (BLACKWELL, (2, 64, 256), BF16),
    ],
    ids=["h-f32", "h-bf16", "h-f16-2x128x256", "b-f32", "b-bf16"],
)
def test_a_row_scale_broadcast_into_a_rank3_value(arch, shape, dtype) -> None:
    """``x * s[:, :, None] + b`` with an f32 scale: JAX finds no layouts. The result
    takes WGMMA (16-bit: its wide rows) lifted to rank 3, the scale that layout
    reduced over the broadcast dim, the SMEM buffer a tiling and swizzle."""
    b, m, n = shape
    args = (sds(shape, dtype), sds((b, m), F32), sds(shape, dtype))
    failed = jax_rejects(scale_rows_3d, *args, arch=arch)
    assert failed.stage == "inference"
    smalto_lowers(scale_rows_3d, *args, arch=arch)


def test_a_16bit_row_scale_read_from_gmem_has_no_layout() -> None:
    """A bf16 (B, M) scale reduced from any tiling of the result moves 2 bytes a
    thread: no layout lowers; smalto suggests SMEM, and that kernel lowers."""
    args = (sds((4, 64, 128), BF16), sds((4, 64), BF16), sds((4, 64, 128), BF16))
    message = no_layout_lowers(scale_rows_3d, *args, arch=HOPPER)
    assert "16-bit elements must coalesce" in message and "copy it into SMEM first" in message
    smalto_lowers(partial(scale_rows_3d, via_smem=True), *args, arch=HOPPER)


@pytest.mark.parametrize(
    ("mkn", "batch", "dtype"),
    [((64, 64, 128), 2, BF16), ((128, 64, 128), 4, F16), ((64, 128, 256), 2, BF16)],
    ids=["64x128-b2", "128x128-b4-f16", "64x256-b2"],
)
def test_a_wgmma_accumulator_gated_per_batch(mkn, batch, dtype) -> None:
    """``acc[None] * g[:, None, :]``: JAX gives the (B, M, N) result the rank-2 WGMMA
    tiling and its lowering rejects it ("Tiling rank different than broadcast
    result rank"); smalto lifts WGMMA to rank 3 and gives g its reduction."""
    m, k, n = mkn
    args = (sds((m, k), dtype), sds((k, n), dtype), sds((batch, n), F32))
    failed = jax_rejects(gated_matmul, *args, arch=HOPPER)
    assert "Tiling rank different than broadcast result rank" in str(failed)
    smalto_lowers(gated_matmul, *args, arch=HOPPER)


def test_a_16bit_gate_goes_through_smem() -> None:
    """A bf16 gate read from GMEM in the reduced WGMMA layout moves 16 bytes a row:
    no layout lowers, smalto suggests SMEM, and that kernel lowers."""
    args = (sds((64, 64), BF16), sds((64, 128), BF16), sds((2, 128), BF16))
    message = no_layout_lowers(gated_matmul, *args, arch=HOPPER)
    assert "copy it into SMEM first" in message
    smalto_lowers(partial(gated_matmul, via_smem=True), *args, arch=HOPPER)


@pytest.mark.parametrize(
    ("n", "batch", "dtype"), [(128, 2, BF16), (64, 4, F16)], ids=["128-b2-bf16", "64-b4-f16"]
)
def test_a_tmem_accumulator_gated_per_batch(n, batch, dtype) -> None:
    """The same on Blackwell: TCGEN05 lifted to rank 3, staged through a rank-3 SMEM
    buffer without transforms (smalto tiles and swizzles it)."""
    args = (sds((128, 64), dtype), sds((64, n), dtype), sds((batch, n), F32))
    failed = jax_rejects(gated_tcgen05_matmul, *args, arch=BLACKWELL)
    assert "Tiling rank different than broadcast result rank" in str(failed)
    smalto_lowers(gated_tcgen05_matmul, *args, arch=BLACKWELL)


def test_jax_finds_no_layout_for_32_row_chunks() -> None:
    """(JAX's search takes seconds on these kernels: one is enough.)"""
    kernel = partial(column_stats_in_chunks, stat="max")
    assert jax_rejects(kernel, sds((128, 128), F32), arch=HOPPER).stage == "inference"


@pytest.mark.parametrize(
    ("arch", "shape", "dtype", "stat"),
    [
        (HOPPER, (128, 128), F32, "count"),
        (HOPPER, (128, 128), F32, "max"),
        (HOPPER, (128, 256), BF16, "count"),
        (BLACKWELL, (96, 128), F16, "max"),
        (BLACKWELL, (64, 256), F32, "count"),
    ],
    ids=["h-f32-count", "h-f32-max", "h-bf16-count", "b-f16-max", "b-f32-count"],
)
def test_column_statistics_of_32_row_chunks(arch, shape, dtype, stat) -> None:
    """A fori_loop over (32, N) chunks of an SMEM buffer, reduced over their rows:
    shorter than WGMMA's 64-row tile; smalto tiles only the minor dim (tiles
    ((1, 128), (32,), (1,)))."""
    kernel = partial(column_stats_in_chunks, stat=stat)
    lowering = smalto_lowers(kernel, sds(shape, dtype), arch=arch)
    (inferred,) = lowering.kernels
    assert "TiledLayout<[[1, 128], [32], [1]]" in (inferred.inferred_text or "")


# --- 4. keep-dims code: what to change ---------------------------------------------------------


def _rms_norm(x: jax.Array, w: jax.Array, *, keepdims: bool) -> jax.Array:
    def body(x_gmem, w_gmem, o_gmem):
        x = x_gmem[...]
        if keepdims:
            scale = lax.rsqrt(jnp.mean(x * x, axis=-1, keepdims=True) + 1e-6)
        else:
            scale = lax.rsqrt(jnp.mean(x * x, axis=-1) + 1e-6)[:, None]
        o_gmem[...] = x * scale * w_gmem[...]

    return plgpu_kernel(body, x)(x, w)


def plgpu_kernel(body: Any, x: jax.Array) -> Any:
    from jax.experimental.pallas import mosaic_gpu as plgpu

    return plgpu.kernel(body, out_type=sds(x.shape, x.dtype), compiler_params=WARPGROUP)


@pytest.mark.parametrize("arch", [HOPPER, BLACKWELL], ids=["h", "b"])
def test_keepdims_code_is_told_to_expand_where_it_broadcasts(arch) -> None:
    """RMS norm with ``keepdims=True``: the computed (N, 1) statistic is broadcast,
    which no tiled layout of JAX 0.12's lowering does. Without the unit-dim
    rewrite, smalto says what to write instead, and the kernel written so
    lowers; with it (the default), the kernel as written lowers."""
    args = (sds((128, 128), F32), sds((128,), F32))
    keepdims = partial(_rms_norm, keepdims=True)
    with smalto.jax.enabled(), warnings.catch_warnings():
        warnings.simplefilter("ignore", smalto.UnitDimRewriteWarning)
        (captured,) = smalto.jax.capture(keepdims, *args, arch=arch)
    module = reference.parse(captured.text, reference.make_context())
    with module.context, ir.Location.unknown(), pytest.raises(smalto.InferenceError) as failed:
        smalto.infer_layout(module, arch=arch, rewrite=False)
    assert str(failed.value).startswith(FAILURE)
    assert "compute it without the unit dim and expand it where it is broadcast" in str(
        failed.value
    )
    smalto_lowers(partial(_rms_norm, keepdims=False), *args, arch=arch)
    with pytest.warns(smalto.UnitDimRewriteWarning):
        smalto_lowers(keepdims, *args, arch=arch)
