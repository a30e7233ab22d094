"""`mosaic_gpu.async_load_tmem` with `reduce` (new in JAX 0.12), on Blackwell.

What the op requires: the loaded value and the TMEM ref form a supported
TMEM <-> register transfer (never a splat or strided layout); with ``reduce``
the op has a second result, each row's reduction (min, max, absmin, absmax),
whose layout is the loaded layout reduced over the columns. The lowering
(``TMEMRef.load``) fuses the reduction only into a TMEM-native load, which
smalto requires; JAX's constraints leave the layout open, its search keeps
TCGEN05, and its lowering then fails ("Fused load-reduce is not supported for
this layout": shown in ``tests/rules/test_check_jax012.py``), so here smalto's
answer differs from JAX's on purpose.
"""

from __future__ import annotations

import pytest
from jax._src.lib.mlir import ir
from jax.experimental.mosaic.gpu import fragmented_array as fa
from mlir_snippets import tmem_type
from rule_kit import (
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
)

from smalto.check import check

BLACKWELL = (10, 0)
ADDR = "memref<i32, #gpu.address_space<workgroup>>"
LOAD = "mosaic_gpu.async_load_tmem"
MIN, MAX, ABSMIN, ABSMAX = range(4)  # TMEMLoadReduction


def reducing_load(elt: str = "f32", reduction: int = MAX, after: tuple[str, ...] = ()) -> str:
    """A 128x128 TMEM allocation loaded with a row reduction into ``%v`` and ``%r``."""
    t = tmem_type(f"128x128x{elt}")
    return kernel(
        [
            slice_smem("addr", ADDR),
            f'%t = "mosaic_gpu.tmem_alloc"(%addr) <{{collective = false, packing = 1 : i32}}> '
            f": ({ADDR}) -> {t}",
            f'%v, %r = "{LOAD}"(%t) <{{reduce = {reduction} : i32}}> : ({t}) -> '
            f"(vector<128x128x{elt}>, vector<128x{elt}>)",
            *after,
        ]
    )


@pytest.mark.parametrize(
    ("elt", "reduction"), [("f32", MAX), ("f32", MIN), ("f32", ABSMAX), ("i32", MIN)]
)
def test_the_reduction_is_the_loaded_layout_reduced_over_columns(elt: str, reduction: int):
    """Nothing names a layout: smalto takes TMEM-native, JAX TCGEN05 (which cannot lower)."""
    module = run_smalto(reducing_load(elt, reduction), BLACKWELL)
    loaded, reduced = out_layouts(op(module, LOAD))
    assert loaded == fa.TMEM_NATIVE_LAYOUT
    assert reduced == fa.TMEM_NATIVE_LAYOUT.reduce([1])
    jax_loaded, _ = out_layouts(op(run_jax(reducing_load(elt, reduction), BLACKWELL), LOAD))
    assert jax_loaded == fa.TCGEN05_LAYOUT
    assert check(module, BLACKWELL) == []


def test_a_cast_to_another_layout_is_a_conflict():
    """A user cast to TCGEN05 cannot be honoured: the fused reduction needs TMEM-native."""
    v = "vector<128x128xf32>"
    with pytest.raises(ValueError, match="Failed to infer a possible set of layouts"):
        run_smalto(reducing_load(after=(layout_cast("c", "v", v, fa.TCGEN05_LAYOUT),)), BLACKWELL)


def test_a_cast_of_the_loaded_value_decides_both_results():
    """The fused reduce lowers from the TMEM-native layout: cast the loaded value to it."""
    v = "vector<128x128xf32>"
    module = infer_like_jax(
        reducing_load(after=(layout_cast("c", "v", v, fa.TMEM_NATIVE_LAYOUT),)), BLACKWELL
    )
    loaded, reduced = out_layouts(op(module, LOAD))
    assert loaded == fa.TMEM_NATIVE_LAYOUT
    assert reduced == fa.TMEM_NATIVE_LAYOUT.reduce([1])


def test_a_cast_of_the_reduction_decides_the_loaded_value():
    """The reduced TMEM-native layout can only come from the TMEM-native one."""
    row = fa.TMEM_NATIVE_LAYOUT.reduce([1])
    module = infer_like_jax(
        reducing_load(after=(layout_cast("c", "r", "vector<128xf32>", row),)), BLACKWELL
    )
    loaded, reduced = out_layouts(op(module, LOAD))
    assert loaded == fa.TMEM_NATIVE_LAYOUT
    assert reduced == row


def test_the_loaded_value_is_never_strided():
    """(Nor a splat, which a layout cast cannot name.)"""
    v = "vector<128x128xf32>"
    strided = fa.WGStridedFragLayout(shape=(128, 128), vec_size=2)
    rejected_like_jax(reducing_load(after=(layout_cast("c", "v", v, strided),)), arch=BLACKWELL)


def test_a_load_without_reduce_still_has_one_result():
    t = tmem_type("128x128xf32")
    module = infer_like_jax(
        kernel(
            [
                slice_smem("addr", ADDR),
                f'%t = "mosaic_gpu.tmem_alloc"(%addr) <{{collective = false, packing = 1 : i32}}>'
                f" : ({ADDR}) -> {t}",
                f'%v = "{LOAD}"(%t) : ({t}) -> vector<128x128xf32>',
            ]
        ),
        BLACKWELL,
    )
    assert out_layouts(op(module, LOAD)) == [fa.TCGEN05_LAYOUT]


def test_the_checker_accepts_the_answer_and_catches_a_wrong_reduction():
    module = run_smalto(reducing_load(), BLACKWELL)
    assert check(module, BLACKWELL) == []
    target = op(module, LOAD)
    with module.context:
        loaded = ir.Attribute.parse(layout_attr_text(fa.TMEM_NATIVE_LAYOUT))
        wrong = ir.Attribute.parse(layout_attr_text(fa.TCGEN05_LAYOUT.reduce([1])))
        target.attributes["out_layouts"] = ir.ArrayAttr.get([loaded, wrong])
    messages = [v.message for v in check(module, BLACKWELL) if v.op == LOAD]
    assert any("row reduction" in m for m in messages), messages
