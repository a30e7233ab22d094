"""Rules for `mosaic_gpu` ops on Hopper (sm_90): registers, SMEM and TMA.

What the ops require:
- ``broadcast_in_dim``: the source's layout is the destination's reduced over
  the broadcast dims (WGMMA from WGMMA_ROW along dim 0, WGMMA_COL along dim 1).
- ``broadcasted_iota``, ``vector_load``, ``multimem_load_reduce``: values that
  differ per element, never a splat.
- ``layout_cast``: the result has the given layout; the operand may be relaid
  out to it where a relayout exists (not strict: WGMMA -> WGMMA_TRANSPOSED).
- ``optimization_barrier``, ``debug_print``, ``print_layout``: any layout,
  passed through unchanged.
- SMEM <-> registers (``vector_load``, ``vector_store``, ``async_store_smem``):
  the SMEM tiling and swizzle must give an (optimized) transfer plan for the
  register layout: for WGMMA, 8 rows by one 128-byte swizzle span when the
  minor dimension allows it.
- ``wgmma``: accumulator in WGMMA; A from registers in WGMMA (WGMMA_8BIT for
  8-bit types) or from SMEM with B's tiling; B tiled for the MMA (transposed
  refs read the tiling transposed).
- ``mma``: accumulator, A and B in the warp-level MMA layouts of the type.
- ``with_transforms``, ``custom_primitive``: the user's transforms and layouts.
- ``slice_smem``: a new ref, except that slices with the same offset and
  ``alias_id`` are the same ref. ``get_cluster_ref``: the same ref.
- ``async_load``/``async_store``: the tiling divides the slice, given what is
  known of the (dynamic) offsets; vector indices (gather/scatter, and
  ``async_prefetch``) live in the TMA index layouts.
- ``warp_map``: refs keep their transforms inside the body.
- ``try_cluster_cancel``/``query_cluster_cancel``: the response buffer is untiled.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest
import reference
from jax.experimental.mosaic.gpu import fragmented_array as fa
from jax.experimental.mosaic.gpu.mma import MMALayouts
from rule_kit import (
    BARRIER,
    TMA_INDICES,
    TMA_INDICES_4,
    UNTILED,
    WGMMA,
    WGMMA_8BIT,
    WGMMA_COL,
    WGMMA_ROW,
    WGMMA_TRANSPOSED,
    gmem,
    in_layouts,
    in_transforms,
    infer_like_jax,
    is_tiled,
    jax_fails,
    kernel,
    layout_attr_text,
    layout_cast,
    op,
    out_layouts,
    out_transforms,
    parse,
    rejected_like_jax,
    run_jax,
    run_smalto,
    slice_smem,
    smem,
    splat,
    strided,
    vec,
    vector_load,
    vector_store,
    with_transforms,
)

import smalto

F32 = "f32"
SHAPE = (64, 128)
V = vec(SHAPE, F32)
G = gmem(SHAPE, F32)
SWIZZLED_64x64_BF16 = ((8, 64), 128)


# --- broadcast_in_dim ------------------------------------------------------------------------


def _broadcast(source: str, src_ty: str, dims: str) -> str:
    return (
        f'%b = "mosaic_gpu.broadcast_in_dim"(%{source}) '
        f"<{{broadcast_dimensions = array<i64: {dims}>}}> : ({src_ty}) -> {V}"
    )


@pytest.mark.parametrize(
    ("length", "dims", "reduced"), [(64, "0", WGMMA_ROW), (128, "1", WGMMA_COL)], ids=["row", "col"]
)
def test_broadcast_in_dim_forward(length: int, dims: str, reduced):
    small = vec((length,), F32)
    module = infer_like_jax(
        kernel(
            [
                vector_load("x", "arg0", gmem((length,), F32), small),
                layout_cast("y", "x", small, reduced),
                _broadcast("y", small, dims),
            ],
            [gmem((length,), F32)],
        )
    )
    broadcast = op(module, "mosaic_gpu.broadcast_in_dim")
    assert in_layouts(broadcast) == [reduced]
    assert out_layouts(broadcast) == [WGMMA]


@pytest.mark.parametrize(
    ("length", "dims", "reduced"), [(64, "0", WGMMA_ROW), (128, "1", WGMMA_COL)], ids=["row", "col"]
)
def test_broadcast_in_dim_backward(length: int, dims: str, reduced):
    """The destination is WGMMA: the source must be WGMMA reduced over the new dim."""
    small = vec((length,), F32)
    module = infer_like_jax(
        kernel(
            [
                vector_load("x", "arg0", gmem((length,), F32), small),
                _broadcast("x", small, dims),
                layout_cast("c", "b", V, WGMMA),
            ],
            [gmem((length,), F32)],
        )
    )
    assert out_layouts(op(module, "mosaic_gpu.vector_load")) == [reduced]
    assert out_layouts(op(module, "mosaic_gpu.broadcast_in_dim")) == [WGMMA]


# --- broadcasted_iota, layout_cast, optimization_barrier, printing --------------------------------


def test_broadcasted_iota_is_not_a_splat():
    iv = vec(SHAPE, "i32")
    module = infer_like_jax(
        kernel([f'%i = "mosaic_gpu.broadcasted_iota"() <{{dimension = 0 : i32}}> : () -> {iv}'])
    )
    (layout,) = out_layouts(op(module, "mosaic_gpu.broadcasted_iota"))
    assert isinstance(layout, fa.WGStridedFragLayout) and layout.shape == SHAPE


def test_broadcasted_iota_takes_a_cast_layout():
    iv = vec(SHAPE, "i32")
    module = infer_like_jax(
        kernel(
            [
                f'%i = "mosaic_gpu.broadcasted_iota"() <{{dimension = 1 : i32}}> : () -> {iv}',
                layout_cast("c", "i", iv, WGMMA),
            ]
        )
    )
    assert out_layouts(op(module, "mosaic_gpu.broadcasted_iota")) == [WGMMA]


def test_layout_cast_of_a_load_needs_no_relayout():
    """The loaded value itself becomes WGMMA: no conversion is preferred."""
    module = infer_like_jax(
        kernel([vector_load("x", "arg0", G, V), layout_cast("c", "x", V, WGMMA)], [G])
    )
    assert out_layouts(op(module, "mosaic_gpu.vector_load")) == [WGMMA]
    cast = op(module, "mosaic_gpu.layout_cast")
    assert in_layouts(cast) == [WGMMA] and out_layouts(cast) == [WGMMA]


def test_layout_cast_may_relayout_its_operand():
    """Not strict: a WGMMA value may be cast to WGMMA_TRANSPOSED."""
    module = infer_like_jax(
        kernel(
            [
                vector_load("x", "arg0", G, V),
                layout_cast("w", "x", V, WGMMA),
                layout_cast("t", "w", V, WGMMA_TRANSPOSED),
            ],
            [G],
        )
    )
    cast = op(module, "mosaic_gpu.layout_cast", 1)
    assert in_layouts(cast) == [WGMMA] and out_layouts(cast) == [WGMMA_TRANSPOSED]


def test_uses_of_a_value_are_strict_where_a_cast_is_not():
    """An add of a WGMMA value and a WGMMA_TRANSPOSED one: JAX's rules allow no
    relayout between uses; JAX's lowering converts the operand of the add (a
    32-bit transpose), and smalto's answer does that."""
    from rule_kit import lowers_beyond_jax

    module = lowers_beyond_jax(
        kernel(
            [
                vector_load("x", "arg0", G, V),
                layout_cast("w", "x", V, WGMMA),
                layout_cast("t", "x", V, WGMMA_TRANSPOSED),
                f"%r = arith.addf %w, %t : {V}",
            ],
            [G],
        )
    )
    (layout,) = out_layouts(op(module, "arith.addf"))
    assert in_layouts(op(module, "arith.addf")) == [layout, layout]


def test_layout_cast_to_a_layout_that_does_not_fit_the_shape_is_rejected():
    v = vec((32, 128), F32)
    text = kernel(
        [vector_load("x", "arg0", gmem((32, 128), F32), v), layout_cast("c", "x", v, WGMMA)],
        [gmem((32, 128), F32)],
    )
    module = parse(text)
    before = str(module)
    with pytest.raises(ValueError, match=smalto.FAILURE_PREFIX):
        smalto.infer_layout(module)
    assert str(module) == before


def test_optimization_barrier_passes_layouts_through():
    module = infer_like_jax(
        kernel(
            [
                vector_load("x", "arg0", G, V),
                layout_cast("y", "x", V, WGMMA),
                "%s = arith.constant 1 : i32",
                f"%c = arith.constant dense<2.0> : {V}",
                f'%o:3 = "mosaic_gpu.optimization_barrier"(%y, %s, %c) '
                f": ({V}, i32, {V}) -> ({V}, i32, {V})",
            ],
            [G],
        )
    )
    barrier = op(module, "mosaic_gpu.optimization_barrier")
    # One entry per vector operand/result: the scalar has none.
    assert in_layouts(barrier) == [WGMMA, splat(*SHAPE)]
    assert out_layouts(barrier) == [WGMMA, splat(*SHAPE)]


@pytest.mark.parametrize("cast", [None, WGMMA], ids=["strided", "wgmma"])
def test_debug_print_accepts_any_layout(cast):
    body = [vector_load("x", "arg0", G, V)]
    printed = "x"
    if cast is not None:
        body.append(layout_cast("y", "x", V, cast))
        printed = "y"
    body.append(f'"mosaic_gpu.debug_print"(%{printed}) <{{format = "v: "}}> : ({V}) -> ()')
    module = infer_like_jax(kernel(body, [G]))
    (loaded,) = out_layouts(op(module, "mosaic_gpu.vector_load"))
    assert in_layouts(op(module, "mosaic_gpu.debug_print")) == [loaded]
    assert (loaded == WGMMA) == (cast is not None)


def test_print_layout_of_a_vector_reports_its_layout():
    # WGMMA_TRANSPOSED loads from a column-major ref (not from a row-major one).
    columns = f"memref<{SHAPE[0]}x{SHAPE[1]}x{F32}, strided<[1, {SHAPE[0]}]>>"
    module = infer_like_jax(
        kernel(
            [
                vector_load("x", "arg0", columns, V),
                layout_cast("y", "x", V, WGMMA_TRANSPOSED),
                f'"mosaic_gpu.print_layout"(%y) <{{format = "{{}}"}}> : ({V}) -> ()',
            ],
            [columns],
        )
    )
    assert in_layouts(op(module, "mosaic_gpu.print_layout")) == [WGMMA_TRANSPOSED]


# --- SMEM <-> registers: tiling and swizzle ------------------------------------------------------


TRANSFERS = [
    # dtype, shape, register layout, expected (tiling, swizzle)
    ("bf16", (64, 64), WGMMA, ((8, 64), 128)),
    ("f16", (64, 128), WGMMA, ((8, 64), 128)),
    ("bf16", (64, 32), WGMMA, ((8, 32), 64)),
    ("bf16", (64, 16), WGMMA, ((8, 16), 32)),
    ("f32", (64, 32), WGMMA, ((8, 32), 128)),
    ("f32", (64, 128), WGMMA, ((8, 32), 128)),
    ("i8", (64, 128), WGMMA_8BIT, ((8, 128), 128)),
]


def _transfer_id(case) -> str:
    dtype, shape, layout, _ = case
    return f"{dtype}-{shape[0]}x{shape[1]}-{'8bit' if layout == WGMMA_8BIT else 'wgmma'}"


@pytest.mark.parametrize("case", TRANSFERS, ids=_transfer_id)
def test_vector_load_from_smem_chooses_tiling_and_swizzle(case):
    dtype, shape, layout, expected = case
    ref, v = smem(shape, dtype), vec(shape, dtype)
    module = infer_like_jax(
        kernel(
            [slice_smem("r", ref), vector_load("v", "r", ref, v), layout_cast("c", "v", v, layout)]
        )
    )
    load = op(module, "mosaic_gpu.vector_load")
    assert out_layouts(load) == [layout]
    assert in_transforms(load) == [expected]
    assert out_transforms(op(module, "mosaic_gpu.slice_smem")) == [expected]


@pytest.mark.parametrize("case", TRANSFERS, ids=_transfer_id)
def test_vector_store_to_smem_chooses_tiling_and_swizzle(case):
    dtype, shape, _, expected = case
    ref, v = smem(shape, dtype), vec(shape, dtype)
    module = infer_like_jax(
        kernel(
            [
                vector_load("x", "arg0", gmem(shape, dtype), v),
                layout_cast("w", "x", v, WGMMA),
                slice_smem("r", ref),
                vector_store("w", v, "r", ref),
            ],
            [gmem(shape, dtype)],
        )
    )
    store = op(module, "mosaic_gpu.vector_store")
    assert in_layouts(store) == [WGMMA]
    assert in_transforms(store) == [expected]


def test_vector_load_from_smem_with_no_register_requirement_stays_untiled():
    ref, v = smem((64, 64), "bf16"), vec((64, 64), "bf16")
    module = infer_like_jax(kernel([slice_smem("r", ref), vector_load("v", "r", ref, v)]))
    load = op(module, "mosaic_gpu.vector_load")
    assert in_transforms(load) == [UNTILED]
    (layout,) = out_layouts(load)
    assert isinstance(layout, fa.WGStridedFragLayout)


def test_unoptimized_vector_load_still_gets_a_tiling_for_wgmma():
    ref, v = smem((64, 64), "bf16"), vec((64, 64), "bf16")
    module = infer_like_jax(
        kernel(
            [
                slice_smem("r", ref),
                vector_load("v", "r", ref, v, optimized=False),
                layout_cast("c", "v", v, WGMMA),
            ]
        )
    )
    assert in_transforms(op(module, "mosaic_gpu.vector_load")) == [SWIZZLED_64x64_BF16]


def test_optimized_wgmma_load_from_a_ref_forced_untiled_is_rejected():
    ref, v = smem((64, 64), "bf16"), vec((64, 64), "bf16")
    rejected_like_jax(
        kernel(
            [
                slice_smem("r", ref),
                with_transforms("w", "r", ref),
                vector_load("v", "w", ref, v),
                layout_cast("c", "v", v, WGMMA),
            ]
        )
    )


def test_store_without_optimized_attribute_requires_an_optimized_transfer():
    """An unset ``optimized`` means optimized, for stores as for loads (jax 0.12.0.1).

    WGMMA stored into a ref fixed untiled has no bank-conflict-free plan.
    """
    ref, v = smem((64, 64), "bf16"), vec((64, 64), "bf16")
    body = [
        vector_load("x", "arg0", gmem((64, 64), "bf16"), v),
        layout_cast("w", "x", v, WGMMA),
        slice_smem("r", ref),
        with_transforms("u", "r", ref),
    ]
    rejected_like_jax(kernel([*body, vector_store("w", v, "u", ref)], [gmem((64, 64), "bf16")]))
    # Asking for an unoptimized store makes it fine.
    unoptimized = vector_store("w", v, "u", ref).replace(
        '"(%w, %u)', '"(%w, %u) <{optimized = false}>'
    )
    module = infer_like_jax(kernel([*body, unoptimized], [gmem((64, 64), "bf16")]))
    store = op(module, "mosaic_gpu.vector_store")
    assert in_layouts(store) == [WGMMA] and in_transforms(store) == [UNTILED]


# --- async_store_smem ----------------------------------------------------------------------------


def _async_store_smem(value: str, v: str, ref: str) -> list[str]:
    return [
        slice_smem("r", ref),
        slice_smem("bar", BARRIER, offset=65536),
        "%ci = arith.constant 0 : i32",
        f'"mosaic_gpu.async_store_smem"(%{value}, %r, %bar, %ci) '
        f"<{{cluster_dim = 0 : i32, optimized = true}}> : ({v}, {ref}, {BARRIER}, i32) -> ()",
    ]


def test_async_store_smem_of_wgmma():
    ref, v = smem((64, 32), F32), vec((64, 32), F32)
    module = infer_like_jax(
        kernel(
            [
                vector_load("x", "arg0", gmem((64, 32), F32), v),
                layout_cast("w", "x", v, WGMMA),
                *_async_store_smem("w", v, ref),
            ],
            [gmem((64, 32), F32)],
        )
    )
    store = op(module, "mosaic_gpu.async_store_smem")
    assert in_layouts(store) == [WGMMA]
    assert in_transforms(store) == [((8, 32), 128)]


def test_async_store_smem_of_a_splat_stores_a_tiled_layout():
    """Neither strided nor splat values can be stored asynchronously: the splat
    constant is relaid out to a tiled layout at the store. (JAX's search finds
    no candidate here.)"""
    ref, v = smem((64, 32), F32), vec((64, 32), F32)
    text = kernel([f"%x = arith.constant dense<1.0> : {v}", *_async_store_smem("x", v, ref)])
    assert jax_fails(text)
    module = run_smalto(text)
    assert out_layouts(op(module, "arith.constant")) == [splat(64, 32)]
    store = op(module, "mosaic_gpu.async_store_smem")
    (layout,) = in_layouts(store)
    assert is_tiled(layout)
    ((tiling, swizzle),) = in_transforms(store)
    assert tiling is not None and swizzle is not None


# --- wgmma ---------------------------------------------------------------------------------------

ACC = vec((64, 128), F32)
A_REF = smem((64, 64), "bf16")
B_REF = smem((64, 128), "bf16")


def _wgmma(a: str, a_ty: str, b: str, b_ty: str, acc_ty: str = ACC) -> str:
    return f'%r = "mosaic_gpu.wgmma"(%acc, %{a}, %{b}) : ({acc_ty}, {a_ty}, {b_ty}) -> {acc_ty}'


def test_wgmma_with_both_operands_in_smem():
    module = infer_like_jax(
        kernel(
            [
                f"%acc = arith.constant dense<0.0> : {ACC}",
                slice_smem("a", A_REF),
                slice_smem("b", B_REF, offset=16384),
                _wgmma("a", A_REF, "b", B_REF),
            ]
        )
    )
    wgmma = op(module, "mosaic_gpu.wgmma")
    assert in_layouts(wgmma) == [WGMMA] and out_layouts(wgmma) == [WGMMA]
    assert in_transforms(wgmma) == [SWIZZLED_64x64_BF16, SWIZZLED_64x64_BF16]
    # The splat accumulator is relaid out to WGMMA at the wgmma.
    assert out_layouts(op(module, "arith.constant")) == [splat(64, 128)]


def test_wgmma_with_a_in_registers():
    av = vec((64, 64), "bf16")
    module = infer_like_jax(
        kernel(
            [
                f"%acc = arith.constant dense<0.0> : {ACC}",
                slice_smem("a", A_REF),
                vector_load("av", "a", A_REF, av),
                slice_smem("b", B_REF, offset=16384),
                _wgmma("av", av, "b", B_REF),
            ]
        )
    )
    wgmma = op(module, "mosaic_gpu.wgmma")
    assert in_layouts(wgmma) == [WGMMA, WGMMA]
    assert in_transforms(wgmma) == [SWIZZLED_64x64_BF16]
    # A's load from SMEM gets a tiling that makes the WGMMA transfer possible.
    assert out_layouts(op(module, "mosaic_gpu.vector_load")) == [WGMMA]
    assert in_transforms(op(module, "mosaic_gpu.vector_load")) == [SWIZZLED_64x64_BF16]


def test_wgmma_with_8bit_a_in_registers():
    acc = vec((64, 128), "i32")
    a_ref, av = smem((64, 64), "i8"), vec((64, 64), "i8")
    b_ref = smem((128, 64), "i8")
    b_t = smem((64, 128), "i8", "strided<[1, 64]>")
    module = infer_like_jax(
        kernel(
            [
                f"%acc = arith.constant dense<0> : {acc}",
                slice_smem("a", a_ref),
                vector_load("av", "a", a_ref, av),
                slice_smem("b", b_ref, offset=16384),
                f"%bt = memref.transpose %b (i, j) -> (j, i) : {b_ref} to {b_t}",
                _wgmma("av", av, "bt", b_t, acc),
            ]
        )
    )
    wgmma = op(module, "mosaic_gpu.wgmma")
    assert in_layouts(wgmma) == [WGMMA, WGMMA_8BIT]
    assert out_layouts(op(module, "mosaic_gpu.vector_load")) == [WGMMA_8BIT]
    # B is K-major: the transposed view reads the (8, 64) tiling as (64, 8).
    assert in_transforms(wgmma) == [((64, 8), 64)]
    assert out_transforms(op(module, "mosaic_gpu.slice_smem", 1)) == [((8, 64), 64)]


def test_wgmma_with_transposed_b():
    b_ref = smem((128, 64), "bf16")
    b_t = smem((64, 128), "bf16", "strided<[1, 64]>")
    module = infer_like_jax(
        kernel(
            [
                f"%acc = arith.constant dense<0.0> : {ACC}",
                slice_smem("a", A_REF),
                slice_smem("b", b_ref, offset=16384),
                f"%bt = memref.transpose %b (i, j) -> (j, i) : {b_ref} to {b_t}",
                _wgmma("a", A_REF, "bt", b_t),
            ]
        )
    )
    transpose = op(module, "memref.transpose")
    assert in_transforms(transpose) == [SWIZZLED_64x64_BF16]
    assert out_transforms(transpose) == [((64, 8), 128)]
    # A is not transposed, B is: A's tiling is B's, transposed back.
    assert in_transforms(op(module, "mosaic_gpu.wgmma")) == [SWIZZLED_64x64_BF16, ((64, 8), 128)]


def test_wgmma_with_transposed_a():
    a_t = smem((64, 64), "bf16", "strided<[1, 64]>")
    module = infer_like_jax(
        kernel(
            [
                f"%acc = arith.constant dense<0.0> : {ACC}",
                slice_smem("a", A_REF),
                f"%at = memref.transpose %a (i, j) -> (j, i) : {A_REF} to {a_t}",
                slice_smem("b", B_REF, offset=16384),
                _wgmma("at", a_t, "b", B_REF),
            ]
        )
    )
    assert in_transforms(op(module, "mosaic_gpu.wgmma")) == [((64, 8), 128), SWIZZLED_64x64_BF16]
    assert out_transforms(op(module, "mosaic_gpu.slice_smem", 0)) == [SWIZZLED_64x64_BF16]


def test_wgmma_b_with_user_tiling_constrains_a():
    """B's user-given tiling (8, 32) with swizzle 64 is A's too."""
    module = infer_like_jax(
        kernel(
            [
                f"%acc = arith.constant dense<0.0> : {ACC}",
                slice_smem("a", A_REF),
                slice_smem("b", B_REF, offset=16384),
                with_transforms("bw", "b", B_REF, (8, 32), 64),
                _wgmma("a", A_REF, "bw", B_REF),
            ]
        )
    )
    assert in_transforms(op(module, "mosaic_gpu.wgmma")) == [((8, 32), 64), ((8, 32), 64)]


def test_wgmma_accumulator_loaded_from_smem_is_tiled_for_wgmma():
    acc_ref = smem((64, 128), F32)
    module = infer_like_jax(
        kernel(
            [
                slice_smem("ar", acc_ref, offset=32768),
                vector_load("acc", "ar", acc_ref, ACC),
                slice_smem("a", A_REF),
                slice_smem("b", B_REF, offset=16384),
                _wgmma("a", A_REF, "b", B_REF),
                vector_store("r", ACC, "ar", acc_ref),
            ]
        )
    )
    assert out_layouts(op(module, "mosaic_gpu.vector_load")) == [WGMMA]
    assert in_transforms(op(module, "mosaic_gpu.vector_load")) == [((8, 32), 128)]
    assert in_layouts(op(module, "mosaic_gpu.vector_store")) == [WGMMA]


# --- mma -----------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("m", "n", "k", "dtype", "acc_dtype"),
    [
        (64, 8, 16, "bf16", F32),
        (128, 64, 64, "f16", F32),
        (64, 8, 32, "i8", "i32"),
        (64, 16, 32, "f8E4M3FN", F32),
    ],
    ids=["bf16", "f16", "i8", "f8"],
)
def test_mma_operands_take_the_mma_layouts(m, n, k, dtype, acc_dtype):
    # B's layout has its vectors down the columns: it loads from a column-major
    # ref (from a row-major one no transfer moves it, and JAX's answer, which
    # would load it so, does not lower).
    acc, a, b = vec((m, n), acc_dtype), vec((m, k), dtype), vec((k, n), dtype)
    b_ref = f"memref<{k}x{n}x{dtype}, strided<[1, {k}]>>"
    module = infer_like_jax(
        kernel(
            [
                vector_load("acc", "arg0", gmem((m, n), acc_dtype), acc),
                vector_load("a", "arg1", gmem((m, k), dtype), a),
                vector_load("b", "arg2", b_ref, b),
                f'%r = "mosaic_gpu.mma"(%acc, %a, %b) : ({acc}, {a}, {b}) -> {acc}',
            ],
            [gmem((m, n), acc_dtype), gmem((m, k), dtype), b_ref],
        )
    )
    mma = op(module, "mosaic_gpu.mma")
    with module.context:
        from jax._src.lib.mlir import ir

        expected = MMALayouts(ir.Type.parse(dtype))
    assert in_layouts(mma) == [expected.acc, expected.lhs, expected.rhs]
    assert out_layouts(mma) == [expected.acc]
    # The loads produce the MMA layouts directly.
    assert [out_layouts(op(module, "mosaic_gpu.vector_load", i))[0] for i in range(3)] == [
        expected.acc,
        expected.lhs,
        expected.rhs,
    ]


# --- with_transforms, slice_smem aliases, get_cluster_ref -----------------------------------------


def test_with_transforms_are_the_refs_transforms():
    ref, v = smem((64, 64), "bf16"), vec((64, 64), "bf16")
    module = infer_like_jax(
        kernel(
            [
                slice_smem("r", ref),
                with_transforms("w", "r", ref, (8, 32), 64),
                vector_load("v", "w", ref, v),
            ]
        )
    )
    assert out_transforms(op(module, "mosaic_gpu.slice_smem")) == [((8, 32), 64)]
    wt = op(module, "mosaic_gpu.with_transforms")
    assert in_transforms(wt) == out_transforms(wt) == [((8, 32), 64)]
    # With a tiled ref the load prefers a tiled register layout.
    assert out_layouts(op(module, "mosaic_gpu.vector_load")) == [WGMMA]


def test_with_transforms_keeps_a_valid_user_swizzle():
    """A swizzle narrower than the minor tile is valid, and kept as given."""
    ref, v = smem((64, 64), "bf16"), vec((64, 64), "bf16")
    module = infer_like_jax(
        kernel(
            [
                slice_smem("r", ref),
                with_transforms("w", "r", ref, (8, 64), 64),
                vector_load("v", "w", ref, v),
                layout_cast("c", "v", v, WGMMA),
            ]
        )
    )
    assert out_transforms(op(module, "mosaic_gpu.with_transforms")) == [((8, 64), 64)]
    assert in_transforms(op(module, "mosaic_gpu.vector_load")) == [((8, 64), 64)]


def test_with_transforms_tile_alone_is_unswizzled():
    ref = smem((64, 64), "bf16")
    module = infer_like_jax(kernel([slice_smem("r", ref), with_transforms("w", "r", ref, (8, 64))]))
    assert out_transforms(op(module, "mosaic_gpu.slice_smem")) == [((8, 64), None)]
    transforms = op(module, "mosaic_gpu.with_transforms").attributes["out_transforms"]
    assert str(transforms) == "[[#mosaic_gpu.tile<[8, 64]>]]"


def test_with_transforms_swizzle_alone_is_accepted_and_loads_wgmma():
    """A ``[swizzle]`` ref is one swizzled tile: WGMMA moves through it optimized."""
    ref, v = smem((128, 128), "bf16"), vec((128, 128), "bf16")
    module = infer_like_jax(
        kernel(
            [
                slice_smem("r", ref),
                with_transforms("w", "r", ref, None, 128),
                vector_load("v", "w", ref, v),
                layout_cast("c", "v", v, WGMMA),
            ]
        )
    )
    load = op(module, "mosaic_gpu.vector_load")
    assert in_transforms(load) == [(None, 128)]
    assert out_layouts(load) == [WGMMA]
    assert str(load.attributes["in_transforms"]) == "[[#mosaic_gpu.swizzle<128 : i32>]]"


def test_with_transforms_swizzle_wider_than_the_minor_tile_is_rejected():
    ref = smem((64, 64), "bf16")
    text = kernel([slice_smem("r", ref), with_transforms("w", "r", ref, (8, 32), 128)])
    message = str(rejected_like_jax(text))
    expected = (
        "Cannot apply tiling TileTransform(tiling=(8, 32), rounding=None) with 128 swizzle "
        "to memref with shape (64, 64)."
    )
    assert expected in message
    with pytest.raises(ValueError, match=re.escape(expected)):
        run_jax(text)


def test_with_transforms_swizzle_alone_on_a_narrow_ref_is_rejected():
    ref = smem((64, 32), "bf16")  # 64 bytes a row: no 128-byte swizzle
    text = kernel([slice_smem("r", ref), with_transforms("w", "r", ref, None, 128)])
    expected = "Cannot apply empty tiling with 128 swizzle to memref with shape (64, 32)."
    assert expected in str(rejected_like_jax(text))


def test_with_transforms_swizzle_on_a_ref_with_two_unit_strides_is_rejected():
    ref = smem((64, 1), "bf16")
    text = kernel([slice_smem("r", ref), with_transforms("w", "r", ref, (8, 1), 32)])
    expected = (
        "Cannot apply tiling TileTransform(tiling=(8, 1), rounding=None) with 32 swizzle "
        "to memref with shape (64, 1)."
    )
    assert expected in str(rejected_like_jax(text))


def test_with_transforms_empty_tiling_is_not_implemented():
    ref = smem((64, 64), "bf16")
    text = kernel([slice_smem("r", ref), with_transforms("w", "r", ref, ())])
    error = rejected_like_jax(text, NotImplementedError)
    assert "Empty tiling unsupported" in str(error)


def test_transforms_on_a_non_contiguous_ref_are_not_implemented():
    ref = smem((64, 32), "bf16", "strided<[64, 2]>")
    text = kernel([slice_smem("r", ref), with_transforms("w", "r", ref)])
    error = rejected_like_jax(text, NotImplementedError)
    assert "We cannot apply swizzle to non-contiguous refs" in str(error)


def test_a_swizzle_jax_does_not_accept_is_a_value_error():
    from smalto.hw.values import Smem

    with pytest.raises(ValueError, match="Swizzle 16 is not supported. Only 32, 64 and 128"):
        Smem((8, 8), 16)


def test_swizzle_16_reads_as_no_swizzle():
    ref = smem((64, 64), "bf16")
    module = infer_like_jax(
        kernel([slice_smem("r", ref), with_transforms("w", "r", ref, (8, 64), 16)])
    )
    assert out_transforms(op(module, "mosaic_gpu.slice_smem")) == [((8, 64), None)]


def test_slices_with_the_same_alias_id_share_transforms():
    ref, v = smem((64, 64), "bf16"), vec((64, 64), "bf16")
    module = infer_like_jax(
        kernel(
            [
                slice_smem("r", ref, alias_id=1),
                slice_smem("s", ref, alias_id=1),
                slice_smem("t", ref, alias_id=2),
                slice_smem("u", ref),
                vector_load("v", "r", ref, v),
                layout_cast("c", "v", v, WGMMA),
                vector_load("vs", "s", ref, v),
                vector_load("vt", "t", ref, v),
                vector_load("vu", "u", ref, v),
            ]
        )
    )
    r, s, t, u = (out_transforms(op(module, "mosaic_gpu.slice_smem", i)) for i in range(4))
    assert r == s == [SWIZZLED_64x64_BF16]
    # Another alias id, or none, is another ref: nothing asks it to be tiled.
    assert t == u == [UNTILED]
    assert out_layouts(op(module, "mosaic_gpu.vector_load", 1)) == [WGMMA]


def test_slices_with_the_same_alias_id_at_other_offsets_are_one_ref():
    """The alias id alone names the ref (jax 0.12.0.1), whatever the offsets."""
    ref, v = smem((64, 64), "bf16"), vec((64, 64), "bf16")
    module = infer_like_jax(
        kernel(
            [
                slice_smem("r", ref, alias_id=1),
                slice_smem("s", ref, offset=8192, alias_id=1),
                vector_load("v", "r", ref, v),
                layout_cast("c", "v", v, WGMMA),
                vector_load("vs", "s", ref, v),
            ]
        )
    )
    assert out_transforms(op(module, "mosaic_gpu.slice_smem", 0)) == [SWIZZLED_64x64_BF16]
    assert out_transforms(op(module, "mosaic_gpu.slice_smem", 1)) == [SWIZZLED_64x64_BF16]


def test_aliased_slices_of_different_shapes_are_rejected():
    ref, other = smem((64, 64), "bf16"), smem((64, 32), "bf16")
    text = kernel([slice_smem("r", ref, alias_id=1), slice_smem("s", other, alias_id=1)])
    module = parse(text)
    with pytest.raises(ValueError, match="Shape mismatch between variable and") as ours:
        smalto.infer_layout(module)
    assert "(64, 64) != (64, 32)" in str(ours.value)
    with pytest.raises(ValueError, match=r"Shape mismatch .*\(64, 64\) != \(64, 32\)"):
        run_jax(text)


def test_aliased_slices_with_conflicting_transforms_are_rejected():
    ref = smem((64, 64), "bf16")
    rejected_like_jax(
        kernel(
            [
                slice_smem("r", ref, alias_id=3),
                slice_smem("s", ref, alias_id=3),
                with_transforms("a", "r", ref, (8, 64), 128),
                with_transforms("b", "s", ref, (8, 32), 64),
            ]
        )
    )


def test_get_cluster_ref_shares_the_refs_transforms():
    ref, v = smem((64, 64), "bf16"), vec((64, 64), "bf16")
    cluster = "memref<64x64xbf16, #mosaic_gpu.smem_cluster>"
    module = infer_like_jax(
        kernel(
            [
                slice_smem("r", ref),
                "%c1 = arith.constant 1 : i32",
                '%g = "mosaic_gpu.get_cluster_ref"(%r, %c1) '
                "<{operandSegmentSizes = array<i32: 1, 1, 0, 0>}> "
                f": ({ref}, i32) -> {cluster}",
                vector_load("v", "g", cluster, v),
                layout_cast("c", "v", v, WGMMA),
            ]
        )
    )
    get = op(module, "mosaic_gpu.get_cluster_ref")
    assert in_transforms(get) == out_transforms(get) == [SWIZZLED_64x64_BF16]
    assert out_transforms(op(module, "mosaic_gpu.slice_smem")) == [SWIZZLED_64x64_BF16]


# --- async_load / async_store: divisibility of dynamic offsets ----------------------------

TMA_GMEM = gmem((256, 256), "bf16")
TMA_REF = smem((64, 64), "bf16")


# How the row offset is computed -> the row tiling a (64, 64) bf16 WGMMA load gets.
def _assume(name: str, value: str, multiple: int) -> str:
    return (
        f'%{name} = "mosaic_gpu.assume_multiple"(%{value}) <{{multiple = {multiple} : i32}}> '
        ": (i32) -> i32"
    )


OFFSETS = {
    "constant-0": (["%i = arith.constant 0 : i32"], 8),
    "constant-12": (["%i = arith.constant 12 : i32"], 4),
    "argument": (["%i = arith.addi %arg1, %arg2 : i32"], 1),
    "assume-multiple-8": ([_assume("i", "arg1", 8)], 8),
    "assume-multiple-4": ([_assume("i", "arg1", 4)], 4),
    "assume-multiple-24": ([_assume("i", "arg1", 24)], 8),
    "assume-twice": ([_assume("a", "arg1", 3), _assume("i", "a", 2)], 2),
    "times-16": (["%c16 = arith.constant 16 : i32", "%i = arith.muli %arg1, %c16 : i32"], 8),
    "sum-of-multiples": (
        [_assume("a", "arg1", 8), _assume("b", "arg2", 16), "%i = arith.addi %a, %b : i32"],
        8,
    ),
    "sum-with-unknown": ([_assume("a", "arg1", 8), "%i = arith.addi %a, %arg2 : i32"], 1),
    "difference": (
        [_assume("a", "arg1", 4), _assume("b", "arg2", 8), "%i = arith.subi %b, %a : i32"],
        4,
    ),
    "max": ([_assume("a", "arg1", 4), _assume("b", "arg2", 8), "%i = arith.maxsi %a, %b : i32"], 4),
    "select": (
        [
            _assume("a", "arg1", 16),
            "%c8 = arith.constant 8 : i32",
            "%p = arith.cmpi slt, %arg1, %arg2 : i32",
            "%i = arith.select %p, %a, %c8 : i32",
        ],
        8,
    ),
    "mask": (["%m = arith.constant -4 : i32", "%i = arith.andi %arg1, %m : i32"], 4),
    "index-cast": (
        ["%k = arith.constant 32 : index", "%i = arith.index_cast %k : index to i32"],
        8,
    ),
}


def _async_load(index: str) -> str:
    return (
        f'"mosaic_gpu.async_load"(%arg0, %r, %bar, {index}, %z) <{{collective = [], '
        "operandSegmentSizes = array<i32: 1, 1, 1, 2, 0, 0>, "
        "slice_lengths = array<i64: 64, 64>}> : "
        f"({TMA_GMEM}, {TMA_REF}, {BARRIER}, i32, i32) -> ()"
    )


def _async_store(index: str) -> str:
    return (
        f'"mosaic_gpu.async_store"(%r, %arg0, {index}, %z) '
        "<{operandSegmentSizes = array<i32: 1, 1, 2, 0, 0>, slice_lengths = array<i64: 64, 64>}> "
        f": ({TMA_REF}, {TMA_GMEM}, i32, i32) -> ()"
    )


@pytest.mark.parametrize("how", list(OFFSETS))
def test_async_load_tiling_divides_what_is_known_of_the_offset(how: str):
    pre, rows = OFFSETS[how]
    v = vec((64, 64), "bf16")
    module = infer_like_jax(
        kernel(
            [
                slice_smem("r", TMA_REF),
                slice_smem("bar", BARRIER, offset=65536),
                "%z = arith.constant 0 : i32",
                *pre,
                _async_load("%i"),
                vector_load("v", "r", TMA_REF, v),
                layout_cast("c", "v", v, WGMMA),
            ],
            [TMA_GMEM, "i32", "i32"],
        )
    )
    assert in_transforms(op(module, "mosaic_gpu.async_load")) == [((rows, 64), 128)]


@pytest.mark.parametrize("how", ["constant-0", "argument", "assume-multiple-4"])
def test_async_store_tiling_divides_what_is_known_of_the_offset(how: str):
    pre, rows = OFFSETS[how]
    v = vec((64, 64), "bf16")
    module = infer_like_jax(
        kernel(
            [
                vector_load("x", "arg3", gmem((64, 64), "bf16"), v),
                layout_cast("w", "x", v, WGMMA),
                slice_smem("r", TMA_REF),
                vector_store("w", v, "r", TMA_REF),
                "%z = arith.constant 0 : i32",
                *pre,
                _async_store("%i"),
            ],
            [TMA_GMEM, "i32", "i32", gmem((64, 64), "bf16")],
        )
    )
    assert in_transforms(op(module, "mosaic_gpu.async_store")) == [((rows, 64), 128)]


def test_async_load_alone_leaves_the_ref_untiled():
    module = infer_like_jax(
        kernel(
            [
                slice_smem("r", TMA_REF),
                slice_smem("bar", BARRIER, offset=65536),
                "%z = arith.constant 0 : i32",
                _async_load("%arg1"),
            ],
            [TMA_GMEM, "i32"],
        )
    )
    load = op(module, "mosaic_gpu.async_load")
    assert in_transforms(load) == [UNTILED]
    assert "in_layouts" not in load.attributes


def test_async_load_with_a_user_tiling_the_offset_breaks_is_rejected():
    rejected_like_jax(
        kernel(
            [
                slice_smem("s", TMA_REF),
                with_transforms("r", "s", TMA_REF, (8, 64), 128),
                slice_smem("bar", BARRIER, offset=65536),
                "%z = arith.constant 0 : i32",
                "%i = arith.constant 4 : i32",
                _async_load("%i"),
            ],
            [TMA_GMEM],
        )
    )


# --- gather / scatter / prefetch indices ---------------------------------------------------------


@pytest.mark.parametrize(
    ("count", "layout"), [(32, TMA_INDICES), (8, TMA_INDICES_4)], ids=["16s", "4s"]
)
@pytest.mark.parametrize("kind", ["async_load", "async_store", "async_prefetch"])
def test_vector_indices_take_the_tma_index_layouts(kind: str, count: int, layout):
    idx = vec((count,), "i32")
    ref = smem((count, 64), "bf16")
    lengths = f"slice_lengths = array<i64: {count}, 64>"
    body = [vector_load("idx", "arg1", gmem((count,), "i32"), idx), "%z = arith.constant 0 : i32"]
    if kind == "async_load":
        body += [
            slice_smem("r", ref),
            slice_smem("bar", BARRIER, offset=65536),
            f'"mosaic_gpu.async_load"(%arg0, %r, %bar, %idx, %z) <{{collective = [], '
            f"operandSegmentSizes = array<i32: 1, 1, 1, 2, 0, 0>, {lengths}}}> : "
            f"({TMA_GMEM}, {ref}, {BARRIER}, {idx}, i32) -> ()",
        ]
    elif kind == "async_store":
        body += [
            slice_smem("r", ref),
            '"mosaic_gpu.async_store"(%r, %arg0, %idx, %z) '
            f"<{{operandSegmentSizes = array<i32: 1, 1, 2, 0, 0>, {lengths}}}> "
            f": ({ref}, {TMA_GMEM}, {idx}, i32) -> ()",
        ]
    else:
        body.append(
            '"mosaic_gpu.async_prefetch"(%arg0, %idx, %z) <{collective = [], '
            f"operandSegmentSizes = array<i32: 1, 2, 0>, {lengths}}}> "
            f": ({TMA_GMEM}, {idx}, i32) -> ()"
        )
    module = infer_like_jax(kernel(body, [TMA_GMEM, gmem((count,), "i32")]))
    tma = op(module, f"mosaic_gpu.{kind}")
    assert in_layouts(tma) == [layout]
    assert out_layouts(op(module, "mosaic_gpu.vector_load")) == [layout]
    if kind != "async_prefetch":
        assert in_transforms(tma) == [UNTILED]


def test_gather_indices_not_a_multiple_of_4_are_rejected():
    idx = vec((6,), "i32")
    rejected_like_jax(
        kernel(
            [
                vector_load("idx", "arg1", gmem((6,), "i32"), idx),
                "%z = arith.constant 0 : i32",
                '"mosaic_gpu.async_prefetch"(%arg0, %idx, %z) <{collective = [], '
                "operandSegmentSizes = array<i32: 1, 2, 0>, "
                f"slice_lengths = array<i64: 6, 64>}}> : ({TMA_GMEM}, {idx}, i32) -> ()",
            ],
            [TMA_GMEM, gmem((6,), "i32")],
        )
    )


# --- custom_primitive ----------------------------------------------------------------------------


def test_custom_primitive_fixes_its_layouts_and_transforms():
    ref, v = smem((64, 64), "bf16"), vec((64, 64), "bf16")
    wgmma = layout_attr_text(WGMMA)
    tiled = "[#mosaic_gpu.tile<[8, 64]>, #mosaic_gpu.swizzle<128 : i32>]"
    module = infer_like_jax(
        kernel(
            [
                slice_smem("r", ref),
                vector_load("x", "arg0", gmem((64, 64), "bf16"), v),
                f'%o = "mosaic_gpu.custom_primitive"(%x, %r) <{{in_layouts = [{wgmma}], '
                f"in_transforms = [{tiled}], out_layouts = [{wgmma}]}}> ({{",
                # The body is already lowered: nothing in it is inferred.
                f"  %q = arith.constant dense<0.0> : {v}",
                f'  "mosaic_gpu.return"(%q) : ({v}) -> ()',
                f"}}) : ({v}, {ref}) -> {v}",
                f"%s = arith.addf %o, %o : {v}",
            ],
            [gmem((64, 64), "bf16")],
        )
    )
    primitive = op(module, "mosaic_gpu.custom_primitive")
    assert in_layouts(primitive) == [WGMMA] and out_layouts(primitive) == [WGMMA]
    assert in_transforms(primitive) == [SWIZZLED_64x64_BF16]
    assert out_transforms(op(module, "mosaic_gpu.slice_smem")) == [SWIZZLED_64x64_BF16]
    assert out_layouts(op(module, "mosaic_gpu.vector_load")) == [WGMMA]
    assert in_layouts(op(module, "arith.addf")) == [WGMMA, WGMMA]
    # Nothing inside the primitive's body is annotated.
    assert "out_layouts" not in op(module, "arith.constant").attributes


def test_custom_primitive_given_one_ref_twice_with_two_tilings_is_rejected():
    ref = smem((64, 64), "bf16")
    tiled = "[#mosaic_gpu.tile<[8, 64]>, #mosaic_gpu.swizzle<128 : i32>]"
    rejected_like_jax(
        kernel(
            [
                slice_smem("r", ref),
                '"mosaic_gpu.custom_primitive"(%r, %r) <{in_layouts = [], '
                f"in_transforms = [[], {tiled}], out_layouts = []}}> ({{",
                '  "mosaic_gpu.return"() : () -> ()',
                f"}}) : ({ref}, {ref}) -> ()",
            ]
        )
    )


def _primitive_on(ref: str, transforms: str) -> str:
    return kernel(
        [
            slice_smem("r", ref),
            '"mosaic_gpu.custom_primitive"(%r) <{in_layouts = [], '
            f"in_transforms = [{transforms}], out_layouts = []}}> ({{",
            '  "mosaic_gpu.return"() : () -> ()',
            f"}}) : ({ref}) -> ()",
        ]
    )


@pytest.mark.parametrize(
    ("transforms", "expected"),
    [
        ("[#mosaic_gpu.swizzle<128 : i32>]", (None, 128)),
        ("[#mosaic_gpu.tile<[8, 64]>]", ((8, 64), None)),
        ("[#mosaic_gpu.tile<[8, 64]>, #mosaic_gpu.swizzle<32 : i32>]", ((8, 64), 32)),
    ],
    ids=["swizzle-alone", "tile-alone", "narrow-swizzle"],
)
def test_custom_primitive_transforms_are_kept_as_given(transforms: str, expected):
    module = infer_like_jax(_primitive_on(smem((64, 64), "bf16"), transforms))
    assert in_transforms(op(module, "mosaic_gpu.custom_primitive")) == [expected]
    assert out_transforms(op(module, "mosaic_gpu.slice_smem")) == [expected]


def test_custom_primitive_transforms_invalid_for_the_ref_are_unsatisfiable():
    """Checked when assigned, not at derivation: the system has no solution."""
    transforms = "[#mosaic_gpu.tile<[8, 32]>, #mosaic_gpu.swizzle<128 : i32>]"
    rejected_like_jax(_primitive_on(smem((64, 64), "bf16"), transforms))


# --- warp_map ------------------------------------------------------------------------------


def _warp_map_loading(multiple: int, barrier_as_ref: bool) -> str:
    """A warp_map whose body TMA-loads into an SMEM ref at a row offset known to be a
    multiple of ``multiple`` (an ``assume_multiple`` outside the body); outside,
    the ref is read as WGMMA. The barrier enters as a pointer, as Pallas passes it,
    or as a barrier ref."""
    ref, v = TMA_REF, vec((64, 64), "bf16")
    barrier_ty = BARRIER if barrier_as_ref else "!llvm.ptr<3>"
    inner_barrier = (
        []
        if barrier_as_ref
        else [f"  %wb = builtin.unrealized_conversion_cast %wp : !llvm.ptr<3> to {BARRIER}"]
    )
    barrier_name = "%wp" if barrier_as_ref else "%wb"
    barrier_operand = "%bar" if barrier_as_ref else "%arg2"
    return kernel(
        [
            slice_smem("r", ref),
            *([slice_smem("bar", BARRIER, offset=65536)] if barrier_as_ref else []),
            _assume("i", "arg1", multiple),
            "%z = arith.constant 0 : i32",
            f'"mosaic_gpu.warp_map"(%r, {barrier_operand}, %i, %z, %arg0) ({{',
            f"^bb0(%wr: {ref}, %wp: {barrier_ty}, %wi: i32, %wz: i32, %wg: {TMA_GMEM}):",
            *inner_barrier,
            f'  "mosaic_gpu.async_load"(%wg, %wr, {barrier_name}, %wi, %wz) <{{collective = [], '
            "operandSegmentSizes = array<i32: 1, 1, 1, 2, 0, 0>, "
            "slice_lengths = array<i64: 64, 64>}> : "
            f"({TMA_GMEM}, {ref}, {BARRIER}, i32, i32) -> ()",
            f"}}) : ({ref}, {barrier_ty}, i32, i32, {TMA_GMEM}) -> ()",
            vector_load("v", "r", ref, v),
            layout_cast("c", "v", v, WGMMA),
        ],
        [TMA_GMEM, "i32", "!llvm.ptr<3>"],
    )


@pytest.mark.parametrize(("multiple", "rows"), [(8, 8), (2, 2)])
def test_warp_map_refs_keep_their_transforms_and_divisibility_flows_in(multiple: int, rows: int):
    module = infer_like_jax(_warp_map_loading(multiple, barrier_as_ref=False))
    expected = [((rows, 64), 128)]
    assert in_transforms(op(module, "mosaic_gpu.warp_map")) == expected
    assert in_transforms(op(module, "mosaic_gpu.async_load")) == expected
    assert in_transforms(op(module, "mosaic_gpu.vector_load")) == expected


def test_warp_map_taking_a_barrier_ref():
    """Barriers take no transforms: only the data ref is annotated."""
    module = run_smalto(_warp_map_loading(8, barrier_as_ref=True))
    assert in_transforms(op(module, "mosaic_gpu.warp_map")) == [((8, 64), 128)]


# --- cluster launch control, multimem ------------------------------------------------------------


def test_cluster_cancel_response_buffer_is_untiled():
    ref = smem((16,), "i8")
    module = infer_like_jax(
        kernel(
            [
                slice_smem("r", ref),
                slice_smem("bar", BARRIER, offset=1024),
                "%t = arith.constant true",
                f'"mosaic_gpu.try_cluster_cancel"(%r, %bar, %t) : ({ref}, {BARRIER}, i1) -> ()',
                f'%q:4 = "mosaic_gpu.query_cluster_cancel"(%r) : ({ref}) -> (i32, i32, i32, i1)',
            ]
        )
    )
    assert in_transforms(op(module, "mosaic_gpu.try_cluster_cancel")) == [UNTILED]
    assert in_transforms(op(module, "mosaic_gpu.query_cluster_cancel")) == [UNTILED]
    assert out_transforms(op(module, "mosaic_gpu.slice_smem")) == [UNTILED]


MULTIMEM_REF = "memref<1x1x2048xbf16, strided<[16777216, 4096, 1]>>"
MULTIMEM_VEC = vec((1, 1, 2048), "bf16")


def _multimem() -> str:
    return (
        f'%m = "mosaic_gpu.multimem_load_reduce"(%arg0) <{{reduction_type = 0 : i32}}> '
        f": ({MULTIMEM_REF}) -> {MULTIMEM_VEC}"
    )


def test_multimem_load_reduce_is_not_a_splat():
    module = infer_like_jax(kernel([_multimem()], [MULTIMEM_REF]))
    (layout,) = out_layouts(op(module, "mosaic_gpu.multimem_load_reduce"))
    assert isinstance(layout, fa.WGStridedFragLayout) and layout.shape == (1, 1, 2048)


def test_multimem_load_reduce_takes_a_cast_strided_layout():
    module = infer_like_jax(
        kernel(
            [_multimem(), layout_cast("c", "m", MULTIMEM_VEC, strided((1, 1, 2048), 8))],
            [MULTIMEM_REF],
        )
    )
    assert out_layouts(op(module, "mosaic_gpu.multimem_load_reduce")) == [strided((1, 1, 2048), 8)]


CORPUS_MULTIMEM = "kernels/multidevice_reduce_scatter_add_bf16"


def test_multimem_reduce_scatter_kernel_matches_jax():
    root = reference.corpus_root()
    entries = {
        e.key: e for e in (reference.load_entries(root) if root else reference.bundled_entries())
    }
    if CORPUS_MULTIMEM not in entries:
        pytest.skip("the corpus kernel is not available")
    entry = entries[CORPUS_MULTIMEM]
    expected, error = reference.run_jax(Path(entry.path), entry.arch)
    assert error is None
    actual, _ = reference.smalto_attributes(Path(entry.path), entry.arch)
    assert reference.diff_attributes(expected, actual) == []
    (multimem,) = [attrs for name, attrs in actual if name.endswith("multimem_load_reduce")]
    assert "WGStridedFragLayout<[1, 1, 2048], 8>" in multimem["out_layouts"]


# --- jax 0.12.0.1: MMA operands and gather indices take one of a few exact values ----------------


def test_wgmma_b_with_one_fitting_tile_is_settled_without_search():
    """B of 16 bf16 columns: only (8, 16) with 32-byte swizzle tiles it."""
    b_ref, acc = smem((64, 16), "bf16"), vec((64, 16), F32)
    module = infer_like_jax(
        kernel(
            [
                f"%acc = arith.constant dense<0.0> : {acc}",
                slice_smem("a", A_REF),
                slice_smem("b", b_ref, offset=16384),
                _wgmma("a", A_REF, "b", b_ref, acc),
            ]
        )
    )
    assert in_transforms(op(module, "mosaic_gpu.wgmma")) == [((8, 16), 32), ((8, 16), 32)]


def test_wgmma_b_that_no_mma_tile_divides_fails_at_derivation():
    b_ref, acc = smem((64, 8), "bf16"), vec((64, 8), F32)
    text = kernel(
        [
            f"%acc = arith.constant dense<0.0> : {acc}",
            slice_smem("a", A_REF),
            slice_smem("b", b_ref, offset=16384),
            _wgmma("a", A_REF, "b", b_ref, acc),
        ]
    )
    expected = (
        "No valid tiling found for SMEM reference. (64, 8) not divisible by candidate "
        "tiling (8, 16)"
    )
    assert expected in str(rejected_like_jax(text))
    with pytest.raises(ValueError, match=re.escape(expected)):
        run_jax(text)


def test_wgmma_b_fixed_unswizzled_is_rejected():
    """A tile-only ref is unswizzled, which no wgmma operand may be."""
    rejected_like_jax(
        kernel(
            [
                f"%acc = arith.constant dense<0.0> : {ACC}",
                slice_smem("a", A_REF),
                slice_smem("q", B_REF, offset=16384),
                with_transforms("b", "q", B_REF, (8, 64)),
                _wgmma("a", A_REF, "b", B_REF),
            ]
        )
    )


def test_wgmma_b_keeps_a_narrower_user_swizzle_among_the_options():
    module = infer_like_jax(
        kernel(
            [
                f"%acc = arith.constant dense<0.0> : {ACC}",
                slice_smem("a", A_REF),
                slice_smem("q", B_REF, offset=16384),
                with_transforms("b", "q", B_REF, (8, 32), 64),
                _wgmma("a", A_REF, "b", B_REF),
            ]
        )
    )
    assert in_transforms(op(module, "mosaic_gpu.wgmma")) == [((8, 32), 64), ((8, 32), 64)]


def _gather_load(count: int, segments: str = "1, 1, 1, 2, 0, 0") -> tuple[str, str, str]:
    idx = vec((count,), "i32")
    ref = smem((count, 64), "bf16")
    return (
        idx,
        ref,
        f'"mosaic_gpu.async_load"(%arg0, %r, %bar, %idx, %z) <{{collective = [], '
        f"operandSegmentSizes = array<i32: {segments}>, "
        f"slice_lengths = array<i64: {count}, 64>}}> : "
        f"({TMA_GMEM}, {ref}, {BARRIER}, {idx}, i32) -> ()",
    )


@pytest.mark.parametrize(("count", "layout"), [(32, TMA_INDICES), (8, TMA_INDICES_4)])
def test_gather_indices_prefer_tma_indices_where_the_rows_allow(count: int, layout):
    idx, ref, load = _gather_load(count)
    module = infer_like_jax(
        kernel(
            [
                vector_load("idx", "arg1", gmem((count,), "i32"), idx),
                "%z = arith.constant 0 : i32",
                slice_smem("r", ref),
                slice_smem("bar", BARRIER, offset=65536),
                load,
            ],
            [TMA_GMEM, gmem((count,), "i32")],
        )
    )
    assert in_layouts(op(module, "mosaic_gpu.async_load")) == [layout]


def test_sixteen_gather_indices_cast_to_tma_indices_4_solve():
    """16 rows allow both index layouts; a cast to the 4-row one is honoured (jax 0.12.0.1)."""
    idx, ref, load = _gather_load(16)
    module = infer_like_jax(
        kernel(
            [
                vector_load("x", "arg1", gmem((16,), "i32"), idx),
                layout_cast("idx", "x", idx, TMA_INDICES_4),
                "%z = arith.constant 0 : i32",
                slice_smem("r", ref),
                slice_smem("bar", BARRIER, offset=65536),
                load,
            ],
            [TMA_GMEM, gmem((16,), "i32")],
        )
    )
    assert in_layouts(op(module, "mosaic_gpu.async_load")) == [TMA_INDICES_4]


def test_gather_indices_of_an_odd_count_are_rejected_with_jax_text():
    idx = vec((6,), "i32")
    text = kernel(
        [
            vector_load("idx", "arg1", gmem((6,), "i32"), idx),
            "%z = arith.constant 0 : i32",
            '"mosaic_gpu.async_prefetch"(%arg0, %idx, %z) <{collective = [], '
            "operandSegmentSizes = array<i32: 1, 2, 0>, slice_lengths = array<i64: 6, 64>}> "
            f": ({TMA_GMEM}, {idx}, i32) -> ()",
        ],
        [TMA_GMEM, gmem((6,), "i32")],
    )
    assert "Unsupported TMA index shape (6,)" in str(rejected_like_jax(text))


# --- jax 0.12.0.1: transfers follow the lowering's own schedule ---------------------------------


def _transposed_load(layout: fa.FragmentedLayout, dtype: str, transforms: tuple | None = None):
    """A load in ``layout`` from the transpose of a 64x64 ref (its minor dim is dim 0)."""
    ref = smem((64, 64), dtype)
    t = smem((64, 64), dtype, "strided<[1, 64]>")
    v = vec((64, 64), dtype)
    body = [slice_smem("r", ref)]
    src = "r"
    if transforms is not None:
        body.append(with_transforms("w", "r", ref, *transforms))
        src = "w"
    body += [
        f"%t = memref.transpose %{src} (i, j) -> (j, i) : {ref} to {t}",
        vector_load("v", "t", t, v),
        layout_cast("c", "v", v, layout),
    ]
    return kernel(body)


@pytest.mark.parametrize(
    ("layout", "dtype"),
    [(WGMMA, "bf16"), (WGMMA_ROW, "f32"), (WGMMA_TRANSPOSED, "bf16")],
    ids=["wgmma-16bit", "row-32bit", "transposed-16bit"],
)
def test_loads_from_a_transposed_ref_use_the_transposed_schedule(layout, dtype):
    """No longer only the transposed layouts: WGMMA moves through ldmatrix.trans (§4.4)."""
    module = infer_like_jax(_transposed_load(layout, dtype))
    assert out_layouts(op(module, "mosaic_gpu.vector_load")) == [layout]


def test_wgmma_transposed_into_a_row_major_ref_is_never_transferable():
    """The vectorised dim of WGMMA_TRANSPOSED needs stride 1: no schedule, in any mode.

    JAX's pass therefore finds no layouts. JAX's lowering converts the stored
    value to the layout the store takes it in (a 16-bit transpose): smalto's
    answer stores it as WGMMA."""
    from rule_kit import lowers_beyond_jax

    ref, v = smem((64, 64), "bf16"), vec((64, 64), "bf16")
    for optimized in ("", " <{optimized = false}>"):
        module = lowers_beyond_jax(
            kernel(
                [
                    vector_load("x", "arg0", gmem((64, 64), "bf16"), v),
                    layout_cast("w", "x", v, WGMMA_TRANSPOSED),
                    slice_smem("r", ref),
                    vector_store("w", v, "r", ref).replace('"(%w, %r)', f'"(%w, %r){optimized}'),
                ],
                [gmem((64, 64), "bf16")],
            )
        )
        assert out_layouts(op(module, "mosaic_gpu.layout_cast")) == [WGMMA_TRANSPOSED]
        assert in_layouts(op(module, "mosaic_gpu.vector_store")) != [WGMMA_TRANSPOSED]


def test_unswizzled_tiles_make_optimized_wgmma_loads_conflict():
    """A tile-only (8, 64) bf16 ref: the 16-byte schedule has bank conflicts.

    Unoptimized, it is fine."""
    ref, v = smem((64, 64), "bf16"), vec((64, 64), "bf16")

    def body(optimized: bool | None) -> str:
        return kernel(
            [
                slice_smem("r", ref),
                with_transforms("w", "r", ref, (8, 64)),
                vector_load("v", "w", ref, v, optimized=optimized),
                layout_cast("c", "v", v, WGMMA),
            ]
        )

    rejected_like_jax(body(None))
    module = infer_like_jax(body(False))
    assert in_transforms(op(module, "mosaic_gpu.vector_load")) == [((8, 64), None)]


def test_transfer_answers_match_jax_constraint_on_a_sweep():
    """smalto's feasibility is JAX's ``IsTransferableSmemRegisters``, wherever JAX answers."""
    from jax._src.lib.mlir import ir
    from jax.experimental.mosaic.gpu import constraints as cs
    from jax.experimental.mosaic.gpu import launch_context as lc

    from smalto.hw import layouts as hl
    from smalto.hw.transfers import Transfer, smem_transfer_supported
    from smalto.hw.values import Smem

    layouts = [WGMMA, WGMMA_ROW, WGMMA_TRANSPOSED, WGMMA_8BIT]
    compared = 0
    for bitwidth in (8, 16):
        for strides in ((64, 1), (1, 64)):
            transposed = strides[0] == 1
            tilings = [
                None,
                *(
                    ((e, 8) if transposed else (8, e))
                    for e in (8 * 64 // bitwidth, 8 * 32 // bitwidth)
                ),
            ]
            for tiling in tilings:
                for swizzle in (None, 32, 64):
                    if not hl.smem_valid(Smem(tiling, swizzle), (64, 64), strides, bitwidth):
                        continue
                    for layout in layouts:
                        for optimized in (True, False):
                            with reference.shared_context(), ir.Location.unknown():
                                theirs = cs.IsTransferableSmemRegisters(
                                    cs.SMEMTransforms(
                                        lc.TileTransform(tiling) if tiling else None, swizzle
                                    ),
                                    cs.RegisterLayout(layout),
                                    (64, 64),
                                    strides,
                                    bitwidth,
                                    optimized,
                                )
                                try:
                                    expected = theirs.holds()
                                except ValueError:
                                    continue  # JAX's pass crashes here; smalto says no
                            mode = Transfer.OPTIMIZED if optimized else Transfer.UNOPTIMIZED
                            ours = smem_transfer_supported(
                                tiling, swizzle, layout, (64, 64), strides, bitwidth, mode
                            )
                            assert ours == expected, (
                                bitwidth,
                                strides,
                                tiling,
                                swizzle,
                                layout,
                                optimized,
                            )
                            compared += 1
    assert compared > 100
