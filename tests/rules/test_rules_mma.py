"""Rule for `mosaic_gpu.mma` (warp-level MMA) as in JAX 0.12, on Hopper.

What the op requires: the accumulator, A and B in the MMA layouts of the
element type, where the four warps of the warpgroup split between M and N by
the accumulator's shape: as many along M (4, 2, then 1) as the accumulator
tile (16 * m_warps, 8 * (4 / m_warps)) divides (m, n). If none does, the op
cannot be laid out; nor if A or B is not tiled by its layout.
"""

from __future__ import annotations

import pytest
from jax._src.lib.mlir import ir
from jax.experimental.mosaic.gpu.mma import MMALayouts
from rule_kit import (
    gmem,
    in_layouts,
    infer_like_jax,
    kernel,
    op,
    out_layouts,
    run_jax,
    run_smalto,
    shared_context,
    vec,
    vector_load,
)

import smalto

MMA = "mosaic_gpu.mma"


def mma_kernel(m: int, n: int, k: int, dtype: str, acc_dtype: str) -> str:
    """An mma of operands loaded from GMEM; B from a column-major ref, since its
    layout's vectors run down the columns (no schedule moves it through a
    row-major ref, so JAX's answer would not lower)."""
    acc, a, b = vec((m, n), acc_dtype), vec((m, k), dtype), vec((k, n), dtype)
    b_ref = f"memref<{k}x{n}x{dtype}, strided<[1, {k}]>>"
    return kernel(
        [
            vector_load("acc", "arg0", gmem((m, n), acc_dtype), acc),
            vector_load("a", "arg1", gmem((m, k), dtype), a),
            vector_load("b", "arg2", b_ref, b),
            f'%r = "{MMA}"(%acc, %a, %b) : ({acc}, {a}, {b}) -> {acc}',
        ],
        [gmem((m, n), acc_dtype), gmem((m, k), dtype), b_ref],
    )


def expected_layouts(dtype: str, m_warps: int) -> MMALayouts:
    with shared_context(), ir.Location.unknown():
        return MMALayouts(ir.Type.parse(dtype), m_warps=m_warps)


@pytest.mark.parametrize(
    ("m", "n", "k", "dtype", "acc_dtype", "m_warps"),
    [
        (64, 8, 16, "bf16", "f32", 4),
        (128, 64, 64, "f16", "f32", 4),
        (32, 16, 16, "bf16", "f32", 2),  # 32 rows: two warps along M, two along N
        (32, 48, 32, "i8", "i32", 2),
        (16, 32, 16, "f16", "f32", 1),  # 16 rows: one warp along M, four along N
        (48, 96, 16, "bf16", "f32", 1),
        (64, 16, 8, "f64", "f64", 4),  # one 64-bit element per register
    ],
    ids=["64x8", "128x64", "32x16", "32x48-i8", "16x32", "48x96", "f64"],
)
def test_the_accumulator_shape_chooses_the_warp_split(m, n, k, dtype, acc_dtype, m_warps):
    module = infer_like_jax(mma_kernel(m, n, k, dtype, acc_dtype))
    expected = expected_layouts(dtype, m_warps)
    target = op(module, MMA)
    assert in_layouts(target) == [expected.acc, expected.lhs, expected.rhs]
    assert out_layouts(target) == [expected.acc]
    # The loads produce the MMA layouts directly.
    loads = [out_layouts(op(module, "mosaic_gpu.vector_load", i))[0] for i in range(3)]
    assert loads == [expected.acc, expected.lhs, expected.rhs]


def test_four_warps_along_m_keep_a_replicated_warp_dim_in_a():
    """JAX 0.12's A layout at four M warps carries a Replicated(1) warp dim (written out)."""
    module = infer_like_jax(mma_kernel(64, 8, 16, "bf16", "f32"))
    a_attr = ir.ArrayAttr(op(module, MMA).attributes["in_layouts"])[1]
    assert "Replicated<times = 1>" in str(a_attr)


@pytest.mark.parametrize(("m", "n"), [(16, 8), (8, 32), (64, 4)])
def test_an_accumulator_no_warp_split_divides_is_rejected_with_jaxs_message(m: int, n: int):
    text = mma_kernel(m, n, 16, "bf16", "f32")
    with pytest.raises(ValueError) as theirs:
        run_jax(text)
    with pytest.raises(smalto.InferenceError) as ours:
        run_smalto(text)
    assert "No valid m_warps in (1, 2, 4) for MMA shape" in str(theirs.value)
    assert str(theirs.value) in str(ours.value)
    assert str(ours.value).startswith(smalto.FAILURE_PREFIX)


def test_an_operand_its_layout_does_not_tile_is_rejected_with_jaxs_message():
    """K = 12 for bf16: A's tile is 16 wide along K."""
    text = mma_kernel(64, 8, 12, "bf16", "f32")
    with pytest.raises(ValueError) as theirs:
        run_jax(text)
    with pytest.raises(smalto.InferenceError) as ours:
        run_smalto(text)
    assert "to the 'a' operand of MMAOp" in str(theirs.value)
    # JAX's sentence, its layout named as smalto names it, not by its 461-character repr.
    jax_words = str(theirs.value)
    layout_repr = jax_words.removeprefix("Cannot assign layout ").split(" to the 'a' operand")[0]
    assert layout_repr.startswith("TiledLayout(")
    first_line = str(ours.value).splitlines()[0]
    assert (
        jax_words.replace(
            layout_repr, "tiled (64, 16)(16, 8)(8, 8)(2) warps -7,×1 lanes -3,-2 vector -1"
        )
        in first_line
    )
    assert "TiledLayout(" not in first_line
