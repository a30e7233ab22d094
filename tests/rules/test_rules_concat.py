"""Rule for `mosaic_gpu.vector_concat` (new in JAX 0.12), on Hopper.

What the op requires: the lowering stacks the operands' registers along
``dimension``, so all operands and the result share one tiled layout (splat and
strided concatenation is not implemented); nothing in the op proposes one, so
it comes from elsewhere, e.g. a layout cast. Splat operands are relaid out into
it where they are used.
"""

from __future__ import annotations

from collections.abc import Sequence

from jax._src.lib.mlir import ir
from rule_kit import (
    WGMMA,
    WGMMA_TRANSPOSED,
    gmem,
    in_layouts,
    infer_like_jax,
    is_tiled,
    jax_fails,
    kernel,
    layout_attr_text,
    layout_cast,
    op,
    out_layouts,
    rejected_like_jax,
    run_smalto,
    splat,
    vec,
    vector_load,
    vector_store,
)

from smalto.check import check

CONCAT = "mosaic_gpu.vector_concat"
HALF, WHOLE = (64, 128), (128, 128)


def concat(name: str, operands: Sequence[str], types: Sequence[str], result: str, dim: int) -> str:
    names = ", ".join(f"%{o}" for o in operands)
    return (
        f'%{name} = "{CONCAT}"({names}) <{{dimension = {dim} : i32}}> '
        f": ({', '.join(types)}) -> {result}"
    )


def test_operands_take_the_cast_layout_of_one_of_them():
    """One operand cast to WGMMA: the other loaded operand and the result follow it."""
    h, w = vec(HALF, "f32"), vec(WHOLE, "f32")
    module = infer_like_jax(
        kernel(
            [
                vector_load("x", "arg0", gmem(HALF, "f32"), h),
                vector_load("y", "arg0", gmem(HALF, "f32"), h),
                layout_cast("cx", "x", h, WGMMA),
                concat("c", ["cx", "y"], [h, h], w, 0),
                vector_store("c", w, "arg1", gmem(WHOLE, "f32")),
            ],
            [gmem(HALF, "f32"), gmem(WHOLE, "f32")],
        )
    )
    target = op(module, CONCAT)
    assert in_layouts(target) == [WGMMA, WGMMA]
    assert out_layouts(target) == [WGMMA]
    assert out_layouts(op(module, "mosaic_gpu.vector_load", 1)) == [WGMMA]


def test_the_result_cast_decides_along_the_minor_dimension():
    """Three operands along dim 1, the result cast to WGMMA_TRANSPOSED afterwards.

    (Loaded from a column-major ref: WGMMA_TRANSPOSED moves through no
    row-major one, so JAX's answer would not lower.)"""
    h, w = vec((128, 64), "bf16"), vec((128, 192), "bf16")
    columns = "memref<128x64xbf16, strided<[1, 128]>>"
    module = infer_like_jax(
        kernel(
            [
                *(vector_load(n, "arg0", columns, h) for n in "abc"),
                concat("r", ["a", "b", "c"], [h, h, h], w, 1),
                layout_cast("t", "r", w, WGMMA_TRANSPOSED),
            ],
            [columns],
        )
    )
    target = op(module, CONCAT)
    assert in_layouts(target) == [WGMMA_TRANSPOSED] * 3
    assert out_layouts(target) == [WGMMA_TRANSPOSED]


def test_splat_operands_are_relaid_out_at_the_concat():
    """A splat constant used twice stays a splat; its uses read the tiled layout."""
    a, b, r = vec(HALF, "f32"), vec((64, 64), "f32"), vec((64, 256), "f32")
    module = infer_like_jax(
        kernel(
            [
                vector_load("x", "arg0", gmem(HALF, "f32"), a),
                f"%s = arith.constant dense<1.0> : {b}",
                layout_cast("cx", "x", a, WGMMA),
                concat("c", ["cx", "s", "s"], [a, b, b], r, 1),
            ],
            [gmem(HALF, "f32")],
        )
    )
    assert out_layouts(op(module, "arith.constant")) == [splat(64, 64)]
    assert in_layouts(op(module, CONCAT)) == [WGMMA] * 3


def test_concat_of_splats_is_not_a_splat():
    """Two splat constants: the result is not a splat, and no tiled layout is named."""
    b, r = vec((64, 64), "f32"), vec((128, 64), "f32")
    text = kernel(
        [
            f"%s = arith.constant dense<1.0> : {b}",
            f"%t = arith.constant dense<2.0> : {b}",
            concat("c", ["s", "t"], [b, b], r, 0),
            layout_cast("w", "c", r, WGMMA),
        ]
    )
    module = infer_like_jax(text)
    assert out_layouts(op(module, CONCAT)) == [WGMMA]
    assert in_layouts(op(module, CONCAT)) == [WGMMA, WGMMA]


def test_a_layout_that_does_not_tile_an_operand_is_rejected():
    """A (32, 128) operand cannot be in WGMMA (64-row tiles), so neither can the result."""
    a, b, r = vec(HALF, "f32"), vec((32, 128), "f32"), vec((96, 128), "f32")
    rejected_like_jax(
        kernel(
            [
                vector_load("x", "arg0", gmem(HALF, "f32"), a),
                vector_load("y", "arg1", gmem((32, 128), "f32"), b),
                layout_cast("cx", "x", a, WGMMA),
                concat("c", ["cx", "y"], [a, b], r, 0),
            ],
            [gmem(HALF, "f32"), gmem((32, 128), "f32")],
        )
    )


def _concat_of_transposed(dtype: str) -> str:
    h, w = vec(HALF, dtype), vec(WHOLE, dtype)
    return kernel(
        [
            vector_load("x", "arg0", gmem(HALF, dtype), h),
            vector_load("y", "arg0", gmem(HALF, dtype), h),
            layout_cast("cx", "x", h, WGMMA),
            layout_cast("cy", "y", h, WGMMA_TRANSPOSED),
            concat("c", ["cx", "cy"], [h, h], w, 0),
        ],
        [gmem(HALF, dtype)],
    )


def test_two_operands_in_different_cast_layouts_are_rejected():
    """8-bit values, which the lowering does not transpose between ops."""
    rejected_like_jax(_concat_of_transposed("i8"))


def test_two_operands_in_transposed_layouts_meet_at_a_conversion():
    """32-bit values: the lowering transposes an operand to the concatenation's layout."""
    from rule_kit import lowers_beyond_jax

    module = lowers_beyond_jax(_concat_of_transposed("f32"))
    (layout,) = out_layouts(op(module, "mosaic_gpu.vector_concat"))
    assert in_layouts(op(module, "mosaic_gpu.vector_concat")) == [layout, layout]


def test_without_a_named_layout_smalto_still_finds_a_tiled_one():
    """JAX proposes no tiled layout here and fails; smalto's complete search finds one.

    Whatever it picks must be tiled (the op's requirement), shared by all, and fit
    every operand shape.
    """
    h, w = vec(HALF, "f32"), vec(WHOLE, "f32")
    text = kernel(
        [
            vector_load("x", "arg0", gmem(HALF, "f32"), h),
            vector_load("y", "arg0", gmem(HALF, "f32"), h),
            concat("c", ["x", "y"], [h, h], w, 0),
        ],
        [gmem(HALF, "f32")],
    )
    assert jax_fails(text)
    target = op(run_smalto(text), CONCAT)
    (layout,) = out_layouts(target)
    assert is_tiled(layout)
    assert in_layouts(target) == [layout, layout]


def test_the_checker_accepts_the_answer_and_catches_a_mismatched_operand():
    h, w = vec(HALF, "f32"), vec(WHOLE, "f32")
    module = infer_like_jax(
        kernel(
            [
                vector_load("x", "arg0", gmem(HALF, "f32"), h),
                vector_load("y", "arg0", gmem(HALF, "f32"), h),
                layout_cast("cx", "x", h, WGMMA),
                concat("c", ["cx", "y"], [h, h], w, 0),
            ],
            [gmem(HALF, "f32")],
        )
    )
    assert check(module) == []
    target = op(module, CONCAT)
    with module.context:
        wgmma = ir.Attribute.parse(layout_attr_text(WGMMA))
        transposed = ir.Attribute.parse(layout_attr_text(WGMMA_TRANSPOSED))
        target.attributes["in_layouts"] = ir.ArrayAttr.get([wgmma, transposed])
    messages = [v.message for v in check(module) if v.op == CONCAT]
    assert any("concatenated values share one tiled layout" in m for m in messages), messages
