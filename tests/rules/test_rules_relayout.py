"""Relayouts (Hopper): what `mosaic_gpu.layout_cast` may convert, strict casts,
and the splat-to-tiled rule, as in JAX 0.12.

What the lowering implements: a splat becomes any layout whose tile divides
the splat's trailing dims; WGMMA <-> WGMMA_TRANSPOSED for 16- and 32-bit
elements (JAX's constraints allow any width, its lowering does not); WGMMA_UPCAST_2X <->
WGMMA for 4-, 8- and 16-bit elements (both ways since JAX 0.12); between a
producer and its user only splats change layout. A cast marked ``strict``
converts only from a splat: any other operand must already be in the cast's
layout. A cast to a layout that does not tile its operand is an error.

The GMEM loads here are unoptimized: an optimized one must coalesce, which
WGMMA and its transpose do not for every type (JAX's answer would then not
lower, and smalto's would differ; see ``test_gmem_transfer``).
"""

from __future__ import annotations

import pytest
from fuzz.property import try_jax_lowering
from jax._src.lib.mlir import ir
from jax.experimental.mosaic.gpu import fragmented_array as fa
from rule_kit import (
    HOPPER,
    WGMMA,
    WGMMA_TRANSPOSED,
    gmem,
    in_layouts,
    infer_like_jax,
    kernel,
    layout_attr_text,
    layout_cast,
    op,
    out_layouts,
    rejected_like_jax,
    run_jax,
    run_smalto,
    slice_smem,
    smem,
    splat,
    vec,
    vector_load,
)

import smalto
from smalto.check import check

UPCAST_2X = fa.WGMMA_LAYOUT_UPCAST_2X
CAST = "mosaic_gpu.layout_cast"
SHAPE = (128, 128)


def strict_cast(name: str, value: str, vec_ty: str, layout: fa.FragmentedLayout) -> str:
    attr = layout_attr_text(layout)
    return (
        f'%{name} = "{CAST}"(%{value}) <{{new_layout = {attr}, strict = true}}> '
        f": ({vec_ty}) -> {vec_ty}"
    )


def _two_casts(dtype: str, first: fa.FragmentedLayout, second: fa.FragmentedLayout) -> str:
    """A loaded value cast to ``first``, and that result cast to ``second``."""
    v = vec(SHAPE, dtype)
    return kernel(
        [
            vector_load("x", "arg0", gmem(SHAPE, dtype), v, optimized=False),
            layout_cast("a", "x", v, first),
            layout_cast("b", "a", v, second),
        ],
        [gmem(SHAPE, dtype)],
    )


# --- tiled relayouts ---------------------------------------------------------------------


@pytest.mark.parametrize("dtype", ["bf16", "i8", "i4", "f16"])
@pytest.mark.parametrize("first, second", [(WGMMA, UPCAST_2X), (UPCAST_2X, WGMMA)])
def test_upcast_2x_converts_both_ways_for_narrow_types(
    dtype: str, first: fa.TiledLayout, second: fa.TiledLayout
):
    module = infer_like_jax(_two_casts(dtype, first, second))
    second_cast = op(module, CAST, 1)
    assert in_layouts(second_cast) == [first]
    assert out_layouts(second_cast) == [second]


@pytest.mark.parametrize("dtype", ["f32", "i32"])
@pytest.mark.parametrize("first, second", [(WGMMA, UPCAST_2X), (UPCAST_2X, WGMMA)])
def test_upcast_2x_does_not_convert_32_bit_types(
    dtype: str, first: fa.TiledLayout, second: fa.TiledLayout
):
    rejected_like_jax(_two_casts(dtype, first, second))


TRANSPOSES = [(WGMMA, WGMMA_TRANSPOSED), (WGMMA_TRANSPOSED, WGMMA)]


def _smem_cast(dtype: str, first: fa.TiledLayout, second: fa.TiledLayout) -> str:
    """An SMEM load cast to ``first`` then ``second``; a transposed ref for WGMMA_TRANSPOSED,
    so that the load itself lowers in ``first``."""
    v = vec(SHAPE, dtype)
    plain = smem(SHAPE, dtype)
    body = [slice_smem("r", plain)]
    if first == WGMMA_TRANSPOSED:
        ref_ty = smem(SHAPE, dtype, f"strided<[1, {SHAPE[0]}]>")
        body.append(
            f'%t = "memref.transpose"(%r) <{{permutation = affine_map<(d0, d1) -> (d1, d0)>}}> '
            f": ({plain}) -> {ref_ty}"
        )
        body.append(vector_load("x", "t", ref_ty, v))
    else:
        body.append(vector_load("x", "r", plain, v))
    body += [layout_cast("a", "x", v, first), layout_cast("b", "a", v, second)]
    return kernel(body)


@pytest.mark.parametrize("dtype", ["f32", "bf16"])
@pytest.mark.parametrize("first, second", TRANSPOSES)
def test_transposes_convert_16_and_32_bit_values(
    dtype: str, first: fa.TiledLayout, second: fa.TiledLayout
):
    module = infer_like_jax(_smem_cast(dtype, first, second))
    assert in_layouts(op(module, CAST, 1)) == [first]
    assert try_jax_lowering(module, HOPPER) is None


@pytest.mark.parametrize("dtype", ["i8", "i4"])
@pytest.mark.parametrize("first, second", TRANSPOSES)
def test_transposes_of_narrow_values_are_refused_as_the_lowering_refuses_them(
    dtype: str, first: fa.TiledLayout, second: fa.TiledLayout
):
    """JAX's constraints allow the transpose at any width; its lowering shuffles 16 and
    32 bits only, so JAX's own answer fails to lower and smalto says no layouts exist."""
    text = _smem_cast(dtype, first, second)
    jax_answer = run_jax(text)
    assert in_layouts(op(jax_answer, CAST, 1)) == [first]
    assert "Cannot convert from" in (try_jax_lowering(jax_answer, HOPPER) or "")
    with pytest.raises(smalto.InferenceError, match="cannot relayout"):
        run_smalto(text)
    module = run_jax(text)
    assert any("cannot relayout" in v.message for v in check(module) if v.op == CAST)


def test_unrelated_tiled_layouts_do_not_convert():
    rejected_like_jax(_two_casts("bf16", fa.WGMMA_ROW_LAYOUT, WGMMA))


# --- splat to tiled --------------------------------------------------------------------


def test_a_splat_broadcasts_when_the_tile_divides_its_trailing_dims():
    """(2, 128, 128) into WGMMA (64 x 8 tiles): the trailing (128, 128) is what counts."""
    v = vec((2, 128, 128), "f32")
    module = infer_like_jax(
        kernel([f"%c = arith.constant dense<1.0> : {v}", layout_cast("w", "c", v, WGMMA)])
    )
    # The splat is relaid out where the cast uses it (JAX 0.10 compared the
    # leading (2, 128) with the tile and refused).
    assert out_layouts(op(module, "arith.constant")) == [splat(2, 128, 128)]
    assert in_layouts(op(module, CAST)) == out_layouts(op(module, CAST)) == [WGMMA]


def test_a_splat_with_an_untileable_trailing_dim_cannot_be_cast():
    """(64, 128, 4): the leading dims would take WGMMA's tile, but the trailing 4 does not
    (and then WGMMA does not fit the value at all: the cast itself is refused)."""
    v = vec((64, 128, 4), "f32")
    text = kernel([f"%c = arith.constant dense<1.0> : {v}", layout_cast("w", "c", v, WGMMA)])
    error = rejected_like_jax(text)
    assert "Cannot cast to layout" in str(error)


# --- strict casts ----------------------------------------------------------------------


def test_a_strict_cast_makes_its_operand_take_the_layout():
    """Cast to WGMMA_TRANSPOSED, then strictly to WGMMA: only the first may convert, so
    the loaded value is WGMMA (with a non-strict second cast, JAX's answer too).

    (Loaded from SMEM without transforms: WGMMA_TRANSPOSED moves through no
    row-major GMEM ref, and from a GMEM ref JAX's answer to the non-strict
    kernel, WGMMA_TRANSPOSED, would not lower.)"""
    v = vec(SHAPE, "f32")
    ref = smem(SHAPE, "f32")
    load = [slice_smem("r", ref), vector_load("x", "r", ref, v, optimized=False)]
    loose = kernel(
        [*load, layout_cast("a", "x", v, WGMMA_TRANSPOSED), layout_cast("b", "x", v, WGMMA)],
    )
    strict = kernel(
        [*load, layout_cast("a", "x", v, WGMMA_TRANSPOSED), strict_cast("b", "x", v, WGMMA)],
    )
    infer_like_jax(loose)
    module = infer_like_jax(strict)
    assert out_layouts(op(module, "mosaic_gpu.vector_load")) == [WGMMA]
    assert in_layouts(op(module, CAST, 0)) == [WGMMA]
    assert out_layouts(op(module, CAST, 0)) == [WGMMA_TRANSPOSED]


def test_a_strict_cast_converts_a_splat():
    v = vec(SHAPE, "f32")
    module = infer_like_jax(
        kernel([f"%c = arith.constant dense<1.0> : {v}", strict_cast("w", "c", v, WGMMA)])
    )
    assert out_layouts(op(module, "arith.constant")) == [splat(*SHAPE)]
    assert out_layouts(op(module, CAST)) == [WGMMA]


def test_a_strict_cast_of_a_tiled_value_is_the_identity_or_fails():
    """WGMMA -> WGMMA_TRANSPOSED is a supported relayout, but not in a strict cast."""
    v = vec(SHAPE, "f32")
    load = vector_load("x", "arg0", gmem(SHAPE, "f32"), v, optimized=False)
    same = kernel(
        [load, layout_cast("a", "x", v, WGMMA), strict_cast("b", "a", v, WGMMA)],
        [gmem(SHAPE, "f32")],
    )
    assert in_layouts(op(infer_like_jax(same), CAST, 1)) == [WGMMA]
    rejected_like_jax(
        kernel(
            [load, layout_cast("a", "x", v, WGMMA), strict_cast("b", "a", v, WGMMA_TRANSPOSED)],
            [gmem(SHAPE, "f32")],
        )
    )


def test_a_strict_cast_of_a_strided_value_fails():
    """A strided operand (fixed by a first cast) must equal the strict cast's layout."""
    strided = fa.WGStridedFragLayout(shape=SHAPE, vec_size=2)
    rejected_like_jax(
        kernel(
            [
                vector_load("x", "arg0", gmem(SHAPE, "f32"), vec(SHAPE, "f32"), optimized=False),
                layout_cast("a", "x", vec(SHAPE, "f32"), strided),
                strict_cast("b", "a", vec(SHAPE, "f32"), WGMMA),
            ],
            [gmem(SHAPE, "f32")],
        )
    )


# --- a cast that does not fit its operand ---------------------------------------------------


@pytest.mark.parametrize("strict", [False, True])
def test_a_cast_to_a_layout_that_does_not_tile_the_operand_says_so_as_jax(strict: bool):
    v = vec((32, 8), "f32")
    cast = strict_cast if strict else layout_cast
    text = kernel(
        [vector_load("x", "arg0", gmem((32, 8), "f32"), v), cast("y", "x", v, WGMMA)],
        [gmem((32, 8), "f32")],
    )
    with pytest.raises(ValueError) as theirs:
        run_jax(text)
    with pytest.raises(smalto.InferenceError) as ours:
        run_smalto(text)
    # JAX's message, whole, but for the layout (named where JAX prints its repr), then
    # smalto's own explanation.
    jax_message = str(theirs.value)
    layout_repr = jax_message.removeprefix("Cannot cast to layout ").split(": the layout", 1)[0]
    assert layout_repr.startswith("TiledLayout(")
    assert jax_message.replace(layout_repr, "WGMMA") in str(ours.value)
    assert str(ours.value).startswith(smalto.FAILURE_PREFIX)


def test_the_checker_catches_a_strict_cast_that_converts_a_tiled_value():
    """A non-strict cast may turn WGMMA_TRANSPOSED into WGMMA; a strict one may not."""
    v = vec(SHAPE, "f32")
    load = vector_load("x", "arg0", gmem(SHAPE, "f32"), v, optimized=False)
    module = infer_like_jax(
        kernel(
            [load, layout_cast("a", "x", v, WGMMA_TRANSPOSED), strict_cast("b", "x", v, WGMMA)],
            [gmem(SHAPE, "f32")],
        )
    )
    assert check(module) == []
    strict = op(module, CAST, 1)
    with module.context:
        strict.attributes["in_layouts"] = ir.ArrayAttr.get(
            [ir.Attribute.parse(layout_attr_text(WGMMA_TRANSPOSED))]
        )
    messages = [v.message for v in check(module) if v.op == CAST]
    assert any("cannot relayout" in m for m in messages), messages
