"""Unit tests for the Blackwell (sm_100) rules: tensor memory and tcgen05.

Each test builds a small module (see ``mlir_snippets``), runs smalto on it
for ``arch=(10, 0)`` and checks the attributes the op under test gets. Where
JAX's pass accepts the module too, ``infer`` also asserts that smalto's
attributes are identical to JAX's; where smalto must reject a module,
``rejected`` checks the ``InferenceError`` and, where JAX rejects it as well,
that JAX does.

Expected layouts are named with JAX's own layout types (``tcgen05``,
``fragmented_array``), encoded the way the attributes are.
"""

from __future__ import annotations

import re

import jax_check
import pytest
import reference
from blackwell_kit import (
    ADDR,
    BLACKWELL,
    HOPPER,
    PRED,
    TCGEN05,
    UNTILED,
    WGMMA,
    alloc,
    array,
    as_register,
    attr,
    copy_to_tmem,
    dealloc,
    infer,
    layout_cast,
    load_gmem,
    load_tmem,
    mma_kernel,
    on,
    reg,
    rejected,
    slice_tmem,
    store_tmem,
    tiled,
    tmem_cast,
    tmem_default,
    tmem_half_lane,
)
from jax._src.lib import mosaic_gpu_dialect as mgpu
from jax._src.lib.mlir import ir
from jax.experimental.mosaic.gpu import fragmented_array as fa
from jax.experimental.mosaic.gpu import tcgen05
from mlir_snippets import SmemSlicer, func_module, parse, smem_type, tmem_type

import smalto
from smalto import FAILURE_PREFIX

# --- expected values ---------------------------------------------------------------


def tmem_m64_collective(columns: int, packing: int = 1) -> str:
    return attr(tcgen05.tmem_m64_collective_layout(columns, packing))


# --- op text ---------------------------------------------------------------------------


# --- running both passes -------------------------------------------------------------


# --- tmem_alloc / tmem_dealloc -------------------------------------------------------------

ALLOC_96_ROWS = func_module([alloc("t", "96x128xf32")], [ADDR])


@pytest.mark.parametrize(
    ("ty", "collective", "packing", "expected"),
    [
        ("128x128xf32", False, 1, lambda: tmem_default(1)),
        ("128x64xf32", True, 1, lambda: tmem_default(1)),
        ("64x128xf32", False, 1, lambda: tmem_half_lane(128)),
        ("64x256xf32", True, 1, lambda: tmem_m64_collective(256)),
        # The default ignores the alloc's packing: JAX infers it with packing 1.
        ("128x128xf16", False, 2, lambda: tmem_default(1)),
    ],
    ids=["128-rows", "128-rows-collective", "64-rows", "64-rows-collective", "packed-f16"],
)
def test_tmem_alloc_gets_the_default_layout_for_its_shape(ty, collective, packing, expected):
    text = func_module([alloc("t", ty, collective=collective, packing=packing)], [ADDR])
    attributes = infer(text)
    assert on(attributes, "mosaic_gpu.tmem_alloc") == {
        "in_transforms": array(UNTILED),  # the SMEM word that receives the address
        "out_tmem_layouts": array(expected()),
    }


def test_tmem_alloc_with_no_fitting_layout_is_rejected():
    rejected(ALLOC_96_ROWS)


def test_tmem_dealloc_sees_the_allocated_layout():
    attributes = infer(func_module([alloc("t", "64x128xf32"), dealloc("t", "64x128xf32")], [ADDR]))
    assert on(attributes, "mosaic_gpu.tmem_dealloc") == {
        "in_tmem_layouts": array(tmem_half_lane(128))
    }


# --- tmem_layout_cast ---------------------------------------------------------------------


def test_tmem_layout_cast_sets_the_layout_of_the_ref_it_casts():
    ty = "128x128xf16"
    attributes = infer(
        func_module(
            [
                alloc("t", ty, packing=2),
                tmem_cast("c", "t", ty, tmem_default(2)),
                load_tmem("v", "c", ty),
                dealloc("t", ty),
            ],
            [ADDR],
        )
    )
    packed = array(tmem_default(2))
    assert on(attributes, "mosaic_gpu.tmem_layout_cast") == {
        "in_tmem_layouts": packed,
        "out_tmem_layouts": packed,
    }
    # The cast does not create a new ref: the allocation and its users follow it.
    assert on(attributes, "mosaic_gpu.tmem_alloc")["out_tmem_layouts"] == packed
    assert on(attributes, "mosaic_gpu.tmem_dealloc")["in_tmem_layouts"] == packed
    assert on(attributes, "mosaic_gpu.async_load_tmem")["in_tmem_layouts"] == packed


def test_tmem_layout_cast_that_does_not_fit_the_ref_is_rejected():
    ty = "64x128xf32"
    message = rejected(
        func_module([alloc("t", ty), tmem_cast("c", "t", ty, tmem_default(1))], [ADDR])
    )
    assert "mosaic_gpu.tmem_layout_cast" in message
    assert "(64, 128)" in message


# --- slice_tmem -------------------------------------------------------------------------------

WHOLE = "128x256xi32"
HALF_F16 = "128x128xf16"


def test_slice_tmem_has_its_own_layout():
    attributes = infer(
        func_module(
            [
                alloc("t", WHOLE),
                slice_tmem("s", "t", WHOLE, HALF_F16, 128),
                tmem_cast("c", "s", HALF_F16, tmem_default(2)),
            ],
            [ADDR],
        )
    )
    assert on(attributes, "mosaic_gpu.slice_tmem") == {
        "in_tmem_layouts": array(tmem_default(1)),
        "out_tmem_layouts": array(tmem_default(2)),
    }


def test_slices_with_the_same_alias_id_share_one_layout():
    attributes = infer(
        func_module(
            [
                alloc("t", WHOLE),
                slice_tmem("s0", "t", WHOLE, HALF_F16, 0, alias_id=1),
                slice_tmem("s1", "t", WHOLE, HALF_F16, 0, alias_id=1),
                tmem_cast("c", "s0", HALF_F16, tmem_default(2)),
                load_tmem("v", "s1", HALF_F16),
            ],
            [ADDR],
        )
    )
    packed = array(tmem_default(2))
    assert on(attributes, "mosaic_gpu.slice_tmem", 0)["out_tmem_layouts"] == packed
    assert on(attributes, "mosaic_gpu.slice_tmem", 1)["out_tmem_layouts"] == packed
    assert on(attributes, "mosaic_gpu.async_load_tmem")["in_tmem_layouts"] == packed


@pytest.mark.parametrize(
    ("second_offset", "second_alias", "shared"),
    [(0, 1, True), (0, None, False), (0, 2, False), (128, 1, True)],
    ids=["same-id-and-offset", "no-id", "other-id", "same-id-other-offset"],
)
def test_only_slices_with_the_same_alias_id_are_one_ref(second_offset, second_alias, shared):
    """The alias id alone names the ref: its offset does not matter (jax 0.12.0.1)."""
    body = [
        alloc("t", WHOLE),
        slice_tmem("s0", "t", WHOLE, HALF_F16, 0, alias_id=1),
        slice_tmem("s1", "t", WHOLE, HALF_F16, second_offset, alias_id=second_alias),
        tmem_cast("c0", "s0", HALF_F16, tmem_default(2)),
        tmem_cast("c1", "s1", HALF_F16, tmem_default(1)),
    ]
    text = func_module(body, [ADDR])
    if shared:  # one ref cannot be cast to two layouts
        rejected(text)
    else:
        attributes = infer(text)
        assert on(attributes, "mosaic_gpu.slice_tmem", 1)["out_tmem_layouts"] == array(
            tmem_default(1)
        )


def test_aliased_tmem_slices_of_different_shapes_are_rejected():
    text = func_module(
        [
            alloc("t", WHOLE),
            slice_tmem("s0", "t", WHOLE, HALF_F16, 0, alias_id=1),
            slice_tmem("s1", "t", WHOLE, "128x64xf16", 0, alias_id=1),
            load_tmem("v", "s1", "128x64xf16"),
        ],
        [ADDR],
    )
    module = parse(text, reference.shared_context())
    with pytest.raises(ValueError, match="Shape mismatch between variable and") as ours:
        smalto.infer_layout(module, arch=BLACKWELL)
    assert "(128, 128) != (128, 64)" in str(ours.value)
    with pytest.raises(ValueError, match=r"Shape mismatch between variable and .*\(128, 128\) "):
        reference.jax_attributes(text, BLACKWELL, reference.shared_context())


# --- tcgen05_mma ------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("acc", "a", "b", "collective", "expected"),
    [
        ("128x128xf32", "128x64xf16", "64x128xf16", False, lambda: tmem_default(1)),
        ("128x256xf32", "128x64xf16", "64x128xf16", True, lambda: tmem_default(1)),
        ("64x128xf32", "64x64xf16", "64x128xf16", False, lambda: tmem_half_lane(128)),
        ("64x256xf32", "64x64xf16", "64x128xf16", True, lambda: tmem_m64_collective(256)),
    ],
    ids=["m128", "m128-collective", "m64", "m64-collective"],
)
def test_tcgen05_mma_accumulator_layout(acc, a, b, collective, expected):
    attributes = infer(mma_kernel(acc, a, b, collective=collective))
    op = on(attributes, "mosaic_gpu.tcgen05_mma")
    assert op["in_tmem_layouts"] == array(expected())
    assert on(attributes, "mosaic_gpu.tmem_alloc")["out_tmem_layouts"] == array(expected())


@pytest.mark.parametrize(
    ("a", "a_strides", "b", "b_strides", "a_tiling", "b_tiling"),
    [
        ("128x64xf16", None, "64x128xf16", None, (8, 64, 128), (8, 64, 128)),
        ("128x128xf8E5M2", None, "128x128xf8E5M2", None, (8, 128, 128), (8, 128, 128)),
        ("128x64xf16", [1, 128], "64x128xf16", None, (64, 8, 128), (8, 64, 128)),
        ("128x64xf16", None, "64x128xf16", [1, 64], (8, 64, 128), (64, 8, 128)),
    ],
    ids=["f16", "f8", "a-transposed", "b-transposed"],
)
def test_tcgen05_mma_smem_operands_get_an_mma_tiling(
    a, a_strides, b, b_strides, a_tiling, b_tiling
):
    attributes = infer(mma_kernel("128x128xf32", a, b, a_strides=a_strides, b_strides=b_strides))
    expected = array(tiled(*a_tiling), tiled(*b_tiling))
    assert on(attributes, "mosaic_gpu.tcgen05_mma")["in_transforms"] == expected
    assert on(attributes, "mosaic_gpu.slice_smem", 0)["out_transforms"] == array(tiled(*a_tiling))
    assert on(attributes, "mosaic_gpu.slice_smem", 1)["out_transforms"] == array(tiled(*b_tiling))


def test_tcgen05_mma_with_a_in_tmem():
    attributes = infer(mma_kernel("128x128xf32", "128x64xf16", "64x128xf16", a_in_tmem=True))
    op = on(attributes, "mosaic_gpu.tcgen05_mma")
    # A is packed two 16-bit elements per TMEM cell; only B is in SMEM.
    assert op["in_tmem_layouts"] == array(tmem_default(1), tmem_default(2))
    assert op["in_transforms"] == array(tiled(8, 64, 128))
    assert on(attributes, "mosaic_gpu.tmem_alloc", 1)["out_tmem_layouts"] == array(tmem_default(2))


@pytest.mark.parametrize(
    ("acc", "a", "b", "b_strides", "collective", "b_tiling"),
    [
        # M = 64 splits N in two lane groups: a B tile must fit in N / 2 columns.
        ("64x64xf32", "64x64xf16", "64x64xf16", None, False, (8, 32, 64)),
        ("64x32xf32", "64x64xf16", "64x32xf16", None, False, (8, 16, 32)),
        ("64x32xf32", "64x64xf16", "64x32xf16", [1, 64], False, (16, 8, 32)),
        ("64x16xf32", "64x32xf32", "32x16xf32", None, False, (8, 8, 32)),
        # The same N with M = 128, or a collective M = 64, is not split.
        ("128x64xf32", "128x64xf16", "64x64xf16", None, False, (8, 64, 128)),
        ("64x256xf32", "64x64xf16", "64x128xf16", None, True, (8, 64, 128)),
    ],
    ids=["m64-n64", "m64-n32", "m64-n32-b-transposed", "m64-n16-f32", "m128-n64", "m64-collective"],
)
def test_tcgen05_mma_m64_splits_n_and_limits_the_b_tiling(
    acc, a, b, b_strides, collective, b_tiling
):
    attributes = infer(mma_kernel(acc, a, b, b_strides=b_strides, collective=collective))
    assert on(attributes, "mosaic_gpu.slice_smem", 1)["out_transforms"] == array(tiled(*b_tiling))


def mma_m64_with_narrow_n() -> str:
    # For f16, N / 2 = 8 columns is 16 bytes: no swizzle an MMA accepts is that narrow.
    return mma_kernel("64x16xf32", "64x64xf16", "64x16xf16")


def test_tcgen05_mma_m64_with_no_b_tiling_narrow_enough_is_rejected():
    rejected(mma_m64_with_narrow_n())


def test_tmem_alloc_rejection_names_the_op_and_the_shape():
    message = rejected(ALLOC_96_ROWS)
    assert "mosaic_gpu.tmem_alloc" in message
    assert "(96, 128)" in message


def test_tcgen05_mma_b_no_mma_tile_fits_is_rejected_at_derivation():
    """An 8-bit B with N = 16: no (8, 32·k) tile divides it; JAX says so before the M = 64 check."""
    text = mma_kernel("64x16xf32", "64x128xf8E5M2", "128x16xf8E5M2")
    message = rejected(text)
    assert "mosaic_gpu.tcgen05_mma" in message
    expected = (
        "No valid tiling found for SMEM reference. (128, 16) not divisible by candidate "
        "tiling (8, 32)"
    )
    assert expected in message
    with pytest.raises(ValueError, match=re.escape(expected)):
        reference.jax_attributes(text, BLACKWELL, reference.shared_context())


def test_tcgen05_mma_sparse_metadata_layout():
    meta = "128x128xi2"
    attributes = infer(
        mma_kernel(
            "128x32xi32",
            "128x128xi8",
            "256x32xi8",
            extra=[alloc("meta", meta)],
            sparse_meta=meta,
        )
    )
    op = on(attributes, "mosaic_gpu.tcgen05_mma")
    sparse = attr(tcgen05.sparse_meta_layout())
    assert op["in_tmem_layouts"] == array(tmem_default(1), sparse)
    assert op["in_transforms"] == array(tiled(8, 128, 128), tiled(8, 32, 32))
    assert on(attributes, "mosaic_gpu.tmem_alloc", 1)["out_tmem_layouts"] == array(sparse)


SCALES = ("128x8xf8E8M0FNU", "256x8xf8E8M0FNU")


def scale_allocs(collective: bool = False) -> list[str]:
    return [
        alloc("sa", SCALES[0], collective=collective),
        alloc("sb", SCALES[1], collective=collective),
    ]


def test_tcgen05_mma_scales_layout():
    attributes = infer(
        mma_kernel(
            "128x256xf32",
            "128x256xf8E5M2",
            "256x256xf8E5M2",
            b_strides=[1, 256],
            extra=scale_allocs(),
            scales=SCALES,
        )
    )
    scales = attr(tcgen05.scales_layout())
    op = on(attributes, "mosaic_gpu.tcgen05_mma")
    assert op["in_tmem_layouts"] == array(tmem_default(1), scales, scales)
    assert op["in_transforms"] == array(tiled(8, 128, 128), tiled(128, 8, 128))


def test_tcgen05_mma_collective_m64_b_scales_layout():
    attributes = infer(
        mma_kernel(
            "64x192xf32",
            "64x256xf8E5M2",
            "256x96xf8E5M2",
            b_strides=[1, 256],
            collective=True,
            extra=scale_allocs(collective=True),
            scales=SCALES,
        )
    )
    op = on(attributes, "mosaic_gpu.tcgen05_mma")
    assert op["in_tmem_layouts"] == array(
        tmem_m64_collective(192),
        attr(tcgen05.scales_layout()),
        attr(tcgen05.b_scales_m64_collective_layout()),
    )


@pytest.mark.parametrize(
    ("acc", "a", "b"),
    [("96x128xf32", "96x64xf16", "64x128xf16"), ("64x8xf32", "64x64xf16", "64x8xf16")],
    ids=["96-rows", "64-rows-8-columns"],
)
def test_tcgen05_mma_accumulator_no_tmem_layout_fits_is_rejected(acc, a, b):
    message = rejected(mma_kernel(acc, a, b))
    assert "mosaic_gpu.tcgen05_mma" in message
    assert "accumulator" in message
    shape = tuple(int(d) for d in acc.split("x")[:2])
    assert str(shape) in message


@pytest.mark.parametrize("kept", ["a_scale", "b_scale"])
def test_tcgen05_mma_with_one_scale_is_rejected(kept):
    # The verifier refuses one scale without the other, so the module is parsed
    # with both and the MMA rebuilt in memory with one (builders do not verify).
    text = mma_kernel(
        "128x256xf32",
        "128x256xf8E5M2",
        "256x256xf8E5M2",
        b_strides=[1, 256],
        extra=scale_allocs(),
        scales=SCALES,
    )
    ctx = reference.shared_context()
    module = parse(text, ctx)
    with ctx, ir.Location.unknown():
        found: list[ir.OpView] = []

        def visit(op: ir.Operation) -> ir.WalkResult:
            if op.name == "mosaic_gpu.tcgen05_mma":
                found.append(op.opview)
            return ir.WalkResult.ADVANCE

        module.operation.walk(visit)
        (old,) = found
        mgpu.TcGen05MMAOp(
            old.accumulator,
            old.a,
            old.b,
            old.accumulate,
            **{kept: getattr(old, kept)},
            collective=old.collective,
            ip=ir.InsertionPoint(old),
        )
        old.operation.erase()
        before = str(module)
        with pytest.raises(smalto.InferenceError) as error:
            smalto.infer_layout(module, arch=BLACKWELL)
        assert str(module) == before
    message = str(error.value)
    assert message.startswith(FAILURE_PREFIX)
    assert "mosaic_gpu.tcgen05_mma" in message
    assert "scale" in message


# --- async_load_tmem / async_store_tmem -------------------------------------------------------


@pytest.mark.parametrize(
    ("ty", "collective", "tmem", "register"),
    [
        ("128x128xf32", False, lambda: tmem_default(1), lambda: reg(TCGEN05)),
        ("128x64xi32", False, lambda: tmem_default(1), lambda: reg(TCGEN05)),
        ("128x128xbf16", False, lambda: tmem_default(1), lambda: reg(TCGEN05)),
        # Half-lane TMEM: JAX's candidates try the TMEM layout's own register form
        # before WGMMA, and it is a valid transfer, so it wins.
        (
            "64x128xf32",
            False,
            lambda: tmem_half_lane(128),
            lambda: as_register(tcgen05.tmem_half_lane_layout(128)),
        ),
        (
            "64x128xf32",
            True,
            lambda: tmem_m64_collective(128),
            lambda: as_register(tcgen05.tmem_m64_collective_layout(128)),
        ),
    ],
    ids=["f32", "i32", "bf16-unpacked", "half-lane", "m64-collective"],
)
def test_async_load_tmem_register_layout_from_the_tmem_layout(ty, collective, tmem, register):
    attributes = infer(
        func_module([alloc("t", ty, collective=collective), load_tmem("v", "t", ty)], [ADDR])
    )
    assert on(attributes, "mosaic_gpu.async_load_tmem") == {
        "in_tmem_layouts": array(tmem()),
        "out_layouts": array(register()),
    }


def test_async_load_tmem_of_a_packed_ref_gets_tcgen05():
    ty = "128x128xbf16"
    attributes = infer(
        func_module(
            [
                alloc("t", WHOLE),
                slice_tmem("s", "t", WHOLE, ty, 0),
                load_tmem("v", "s", ty),
                layout_cast("w", "v", ty, reg(TCGEN05)),
            ],
            [ADDR],
        )
    )
    # A slice has no default layout: the register side picks it, packed first.
    assert on(attributes, "mosaic_gpu.async_load_tmem") == {
        "in_tmem_layouts": array(tmem_default(2)),
        "out_layouts": array(reg(TCGEN05)),
    }


@pytest.mark.parametrize(
    ("ty", "register", "tmem"),
    [
        # WGMMA registers come from a half-lane TMEM layout, for 64 rows (128
        # rows are two row tiles, which a TMEM load does not take: see below).
        ("64x128xf32", lambda: reg(WGMMA), lambda: tmem_half_lane(128)),
        ("128x128xf32", lambda: reg(TCGEN05), lambda: tmem_default(1)),
        (
            "64x128xf32",
            lambda: attr(tcgen05.fa_m64_collective_layout(128)),
            lambda: tmem_m64_collective(128),
        ),
        (
            "64x128xbf16",
            lambda: attr(tcgen05.fa_m64_collective_layout(128)),
            lambda: tmem_m64_collective(128, 2),
        ),
        ("128x128xf32", lambda: attr(fa.TMEM_NATIVE_LAYOUT), lambda: tmem_default(1)),
    ],
    ids=["wgmma-64", "tcgen05", "m64-collective", "m64-collective-bf16", "native"],
)
def test_async_load_tmem_tmem_layout_from_the_register_layout(ty, register, tmem):
    attributes = infer(
        func_module(
            [
                alloc("t", WHOLE),
                slice_tmem("s", "t", WHOLE, ty, 0),
                load_tmem("v", "s", ty),
                layout_cast("w", "v", ty, register()),
            ],
            [ADDR],
        )
    )
    assert on(attributes, "mosaic_gpu.async_load_tmem") == {
        "in_tmem_layouts": array(tmem()),
        "out_layouts": array(register()),
    }


def test_a_tmem_load_takes_one_row_tile():
    """WGMMA from a half-lane TMEM layout on 128 rows: JAX's constraints allow it,
    its lowering raises ("Loading multiple row tiles": WGMMA's 64-row tile makes
    two). smalto refuses, naming the transfer; 64 rows lower (above)."""
    from rule_kit import lower_in_launch

    ty = "128x128xf32"
    text = func_module(
        [
            alloc("t", WHOLE),
            slice_tmem("s", "t", WHOLE, ty, 0),
            load_tmem("v", "s", ty),
            layout_cast("w", "v", ty, reg(WGMMA)),
        ],
        [ADDR],
    )
    theirs = parse(text, reference.shared_context())
    from jax.experimental.mosaic.gpu import layout_inference

    with theirs.context, ir.Location.unknown():
        layout_inference.infer_layout(theirs, arch=BLACKWELL)
    assert "in_tmem_layouts = [" in str(theirs)
    with pytest.raises(NotImplementedError, match="Loading multiple row tiles"):
        lower_in_launch(theirs, BLACKWELL)
    message = rejected(text, jax_rejects=False)
    assert "supported TMEM transfer" in message


@pytest.mark.parametrize("ty", ["128x128xf16", "128x128xi8", "64x128xf32", "64x128xbf16"])
def test_async_load_tmem_from_a_slice_nothing_constrains(ty):
    # Neither side has a layout to start from (a slice has no default TMEM
    # layout), so JAX's search gives up; smalto's complete search finds a pair
    # that JAX's own constraint system accepts.
    text = func_module(
        [alloc("t", WHOLE), slice_tmem("s", "t", WHOLE, ty, 0), load_tmem("v", "s", ty)], [ADDR]
    )
    with pytest.raises(ValueError, match=FAILURE_PREFIX):
        reference.jax_attributes(text, BLACKWELL, reference.shared_context())
    assert jax_check.check_with_jax(text, BLACKWELL) == []


@pytest.mark.parametrize(
    ("ty", "register", "tmem"),
    [
        ("128x128xf32", lambda: reg(TCGEN05), lambda: tmem_default(1)),
        ("128x128xbf16", lambda: reg(TCGEN05), lambda: tmem_default(1)),
        (
            "64x128xf32",
            lambda: as_register(tcgen05.tmem_half_lane_layout(128)),
            lambda: tmem_half_lane(128),
        ),
    ],
    ids=["f32", "bf16", "half-lane"],
)
def test_async_store_tmem_register_layout_from_the_tmem_layout(ty, register, tmem):
    attributes = infer(
        func_module(
            [alloc("t", ty), load_gmem("v", "g", ty), store_tmem("v", "t", ty)],
            [ADDR, ("g", f"memref<{ty}>")],
        )
    )
    assert on(attributes, "mosaic_gpu.async_store_tmem") == {
        "in_layouts": array(register()),
        "in_tmem_layouts": array(tmem()),
    }
    assert on(attributes, "mosaic_gpu.vector_load")["out_layouts"] == array(register())


# --- SMEM -> TMEM copies -----------------------------------------------------------------------


@pytest.mark.parametrize(
    ("ty", "packing", "tiling"),
    [
        ("128x128xf32", 1, (8, 32, 128)),
        ("128x128xbf16", 2, (8, 64, 128)),
        ("128x8xf32", 1, (8, 8, 32)),
        # Only the 16-byte tile fits: taken unswizzled (jax 0.10.2 wrote swizzle<16>).
        ("128x4xf32", 1, (8, 4, None)),
    ],
    ids=["f32", "bf16-packed", "narrow", "unswizzled"],
)
def test_async_store_smem_to_tmem(ty, packing, tiling):
    source = smem_type(ty)
    attributes = infer(
        func_module(
            [
                alloc("t", ty, packing=packing),
                SmemSlicer()("s", source),
                copy_to_tmem("async_store_smem_to_tmem", "s", source, "t", ty),
            ],
            [ADDR],
        )
    )
    # The destination takes the default layout for its element packing, which
    # overrides the allocation's (unpacked) default.
    assert on(attributes, "mosaic_gpu.async_store_smem_to_tmem") == {
        "in_transforms": array(tiled(*tiling)),
        "in_tmem_layouts": array(tmem_default(packing)),
    }
    assert on(attributes, "mosaic_gpu.tmem_alloc")["out_tmem_layouts"] == array(
        tmem_default(packing)
    )


def test_async_store_sparse_metadata_smem_to_tmem():
    source, dest = smem_type("1x2x128x64xi2"), "128x128xi2"
    attributes = infer(
        func_module(
            [
                alloc("t", dest),
                SmemSlicer()("s", source),
                copy_to_tmem("async_store_sparse_metadata_smem_to_tmem", "s", source, "t", dest),
            ],
            [ADDR],
        )
    )
    assert on(attributes, "mosaic_gpu.async_store_sparse_metadata_smem_to_tmem") == {
        "in_transforms": array(UNTILED),
        "in_tmem_layouts": array(attr(tcgen05.sparse_meta_layout())),
    }


@pytest.mark.parametrize(
    ("source", "dest", "layout"),
    [
        ("1x2x32x16xf8E8M0FNU", "128x8xf8E8M0FNU", tcgen05.scales_layout),
        ("2x2x32x16xf8E8M0FNU", "256x8xf8E8M0FNU", tcgen05.scales_layout),
        # (1, K / 4, 64, 16): the B scales of a collective M = 64 MMA.
        ("1x2x64x16xf8E8M0FNU", "256x8xf8E8M0FNU", tcgen05.b_scales_m64_collective_layout),
    ],
    ids=["a-scales", "two-row-blocks", "m64-collective-b-scales"],
)
def test_async_store_scales_smem_to_tmem(source, dest, layout):
    source_ty = smem_type(source)
    attributes = infer(
        func_module(
            [
                alloc("t", dest),
                SmemSlicer()("s", source_ty),
                copy_to_tmem("async_store_scales_smem_to_tmem", "s", source_ty, "t", dest),
            ],
            [ADDR],
        )
    )
    assert on(attributes, "mosaic_gpu.async_store_scales_smem_to_tmem") == {
        "in_transforms": array(UNTILED),
        "in_tmem_layouts": array(attr(layout())),
    }


# --- warp_map ---------------------------------------------------------------------------------


def test_tmem_ref_keeps_its_layout_through_warp_map():
    acc, a, b = tmem_type("128x128xf32"), smem_type("128x64xf16"), smem_type("64x128xf16")
    slice_smem = SmemSlicer()
    attributes = infer(
        func_module(
            [
                alloc("acc", "128x128xf32"),
                slice_smem("a", a),
                slice_smem("b", b),
                '"mosaic_gpu.warp_map"(%acc, %a, %b, %p) ({',
                f"^bb0(%wacc: {acc}, %wa: {a}, %wb: {b}, %wp: i1):",
                f'"mosaic_gpu.tcgen05_mma"(%wacc, %wa, %wb, %wp) <{{collective = false, '
                f"operandSegmentSizes = array<i32: 1, 1, 1, 1, 0, 0, 0>}}> : "
                f"({acc}, {a}, {b}, i1) -> ()",
                f"}}) : ({acc}, {a}, {b}, i1) -> ()",
                load_tmem("v", "acc", "128x128xf32"),
            ],
            [ADDR, PRED],
        )
    )
    default = array(tmem_default(1))
    assert on(attributes, "mosaic_gpu.warp_map") == {
        "in_tmem_layouts": default,
        "in_transforms": array(tiled(8, 64, 128), tiled(8, 64, 128)),
    }
    assert on(attributes, "mosaic_gpu.tcgen05_mma")["in_tmem_layouts"] == default
    assert on(attributes, "mosaic_gpu.async_load_tmem")["in_tmem_layouts"] == default


def test_tmem_layout_cast_inside_warp_map_applies_outside():
    ty = "128x128xbf16"
    ref = tmem_type(ty)
    attributes = infer(
        func_module(
            [
                alloc("t", WHOLE),
                slice_tmem("s", "t", WHOLE, ty, 0),
                '"mosaic_gpu.warp_map"(%s) ({',
                f"^bb0(%w: {ref}):",
                tmem_cast("c", "w", ty, tmem_default(2)),
                f"}}) : ({ref}) -> ()",
                load_tmem("v", "s", ty),
            ],
            [ADDR],
        )
    )
    packed = array(tmem_default(2))
    assert on(attributes, "mosaic_gpu.warp_map")["in_tmem_layouts"] == packed
    assert on(attributes, "mosaic_gpu.async_load_tmem")["in_tmem_layouts"] == packed


# --- SMEM <-> registers: TCGEN05 before WGMMA on Blackwell ---------------------------------------

WITH_TRANSFORMS = (
    '%w = "mosaic_gpu.with_transforms"(%s) <{{transforms = [#mosaic_gpu.tile<[8, 64]>, '
    "#mosaic_gpu.swizzle<128 : i32>]}}> : ({ty}) -> {ty}"
)


@pytest.mark.parametrize(
    ("arch", "rows", "expected"),
    [(BLACKWELL, 128, TCGEN05), (HOPPER, 128, WGMMA), (BLACKWELL, 64, WGMMA), (HOPPER, 64, WGMMA)],
    ids=["sm100", "sm90", "sm100-64-rows", "sm90-64-rows"],
)
def test_vector_load_from_tiled_smem_prefers_tcgen05_on_blackwell(arch, rows, expected):
    # 64 rows do not fill a TCGEN05 tile, so Blackwell falls back to WGMMA.
    ty = smem_type(f"{rows}x128xf16")
    attributes = infer(
        func_module(
            [
                SmemSlicer()("s", ty),
                WITH_TRANSFORMS.format(ty=ty),
                f'%v = "mosaic_gpu.vector_load"(%w) : ({ty}) -> vector<{rows}x128xf16>',
            ]
        ),
        arch,
    )
    assert on(attributes, "mosaic_gpu.vector_load")["out_layouts"] == array(reg(expected))


@pytest.mark.parametrize(
    ("arch", "expected"), [(BLACKWELL, TCGEN05), (HOPPER, WGMMA)], ids=["sm100", "sm90"]
)
def test_vector_store_to_tiled_smem_prefers_tcgen05_on_blackwell(arch, expected):
    ty = smem_type("128x128xf16")
    attributes = infer(
        func_module(
            [
                SmemSlicer()("s", ty),
                WITH_TRANSFORMS.format(ty=ty),
                load_gmem("v", "g", "128x128xf16"),
                f'"mosaic_gpu.vector_store"(%v, %w) : (vector<128x128xf16>, {ty}) -> ()',
            ],
            [("g", "memref<128x128xf16>")],
        ),
        arch,
    )
    assert on(attributes, "mosaic_gpu.vector_store")["in_layouts"] == array(reg(expected))
