"""TMA copies with JAX 0.12's operands (Hopper): `mosaic_gpu.async_load` without a
barrier or with a `gmem_peer_id`, and what is known to divide an offset.

What the op requires: the SMEM tiling divides the copied slice, given what is
statically known of each offset. Since JAX 0.12 the barrier is optional and a
peer-device id may follow the predicate, so the indices are found through the
op's six operand segments, not at a fixed position. A remainder (`arith.remui`,
`arith.remsi`) of two multiples of ``n`` is a multiple of ``n``.
"""

from __future__ import annotations

import pytest
from rule_kit import (
    BARRIER,
    TMA_INDICES,
    TMA_INDICES_4,
    WGMMA,
    gmem,
    in_layouts,
    in_transforms,
    infer_like_jax,
    kernel,
    layout_cast,
    lower_in_launch,
    op,
    run_jax,
    run_smalto,
    slice_smem,
    smem,
    vec,
    vector_load,
    with_transforms,
)

import smalto
from smalto.check import check

GMEM = gmem((256, 256), "bf16")
REF = smem((64, 64), "bf16")
LOAD = "mosaic_gpu.async_load"


def _assume(name: str, value: str, multiple: int) -> str:
    return (
        f'%{name} = "mosaic_gpu.assume_multiple"(%{value}) <{{multiple = {multiple} : i32}}> '
        ": (i32) -> i32"
    )


def async_load(
    indices: list[str],
    index_types: list[str],
    barrier: bool = True,
    predicate: bool = False,
    peer: bool = False,
    ref: str = "r",
    ref_ty: str = REF,
    gmem_ty: str = GMEM,
    lengths: tuple[int, int] = (64, 64),
) -> str:
    """An `async_load` from ``%arg0`` in the 0.12 generic form (six operand segments)."""
    operands = ["%arg0", f"%{ref}"] + (["%bar"] if barrier else []) + indices
    types = [gmem_ty, ref_ty] + ([BARRIER] if barrier else []) + index_types
    if predicate:
        operands.append("%p")
        types.append("i1")
    if peer:
        operands.append("%peer")
        types.append("i32")
    segments = f"1, 1, {int(barrier)}, {len(indices)}, {int(predicate)}, {int(peer)}"
    # Without a barrier (the cp.async copy) only in-bounds copies are allowed.
    fill = "" if barrier else "oob_fill_mode = 1 : i32, "
    return (
        f'"{LOAD}"({", ".join(operands)}) <{{collective = [], {fill}'
        f"operandSegmentSizes = array<i32: {segments}>, "
        f"slice_lengths = array<i64: {lengths[0]}, {lengths[1]}>}}> : "
        f"({', '.join(types)}) -> ()"
    )


def _wgmma_load_kernel(pre: list[str], load: str) -> str:
    v = vec((64, 64), "bf16")
    return kernel(
        [
            slice_smem("r", REF),
            slice_smem("bar", BARRIER, offset=65536),
            "%z = arith.constant 0 : i32",
            "%p = arith.constant true",
            "%peer = arith.constant 1 : i32",
            *pre,
            load,
            vector_load("v", "r", REF, v),
            layout_cast("c", "v", v, WGMMA),
        ],
        [GMEM, "i32", "i32"],
    )


# Which optional operands are present: the offsets must be found at their
# positions whatever precedes and follows them (read off by one, a barrier, a
# predicate or the peer id would be taken for an offset, or the read would fail).
OPERAND_FORMS = {
    "barrier": dict(barrier=True),
    "no-barrier": dict(barrier=False),
    "no-barrier-predicate-peer": dict(barrier=False, predicate=True, peer=True),
    "barrier-peer": dict(barrier=True, peer=True),
}


@pytest.mark.parametrize("form", list(OPERAND_FORMS))
def test_wgmma_tiling_divides_the_offsets_whatever_the_operands(form: str):
    pre = [_assume("i", "arg1", 8)]
    module = infer_like_jax(
        _wgmma_load_kernel(pre, async_load(["%i", "%z"], ["i32", "i32"], **OPERAND_FORMS[form]))  # type: ignore[arg-type]
    )
    assert in_transforms(op(module, LOAD)) == [((8, 64), 128)]


@pytest.mark.parametrize("form", list(OPERAND_FORMS))
def test_a_column_offset_limits_the_tiling_whatever_the_operands(form: str):
    """A column offset of 32 (bf16: 64 bytes): the 128-byte swizzled tile is cut to 32
    columns (whether that lowers is not the question: both passes agree on it)."""
    pre = ["%c32 = arith.constant 32 : i32"]
    module = infer_like_jax(
        _wgmma_load_kernel(
            pre,
            async_load(["%z", "%c32"], ["i32", "i32"], **OPERAND_FORMS[form]),  # type: ignore[arg-type]
        )
    )
    ((tiling, _),) = in_transforms(op(module, LOAD))
    assert tiling == (8, 32)


# --- remainders ------------------------------------------------------------------------------

REMAINDERS = {
    # both operands multiples of 8: so is the remainder
    "remui-of-multiples": (
        [_assume("a", "arg1", 16), _assume("b", "arg2", 8), "%i = arith.remui %a, %b : i32"],
        8,
    ),
    "remsi-of-multiples": (
        [
            _assume("a", "arg1", 8),
            "%c24 = arith.constant 24 : i32",
            "%i = arith.remsi %a, %c24 : i32",
        ],
        8,
    ),
    # one operand unknown: nothing is known
    "remui-of-unknown": ([_assume("b", "arg2", 8), "%i = arith.remui %arg1, %b : i32"], 1),
    "remsi-by-4": (
        [_assume("a", "arg1", 8), "%c4 = arith.constant 4 : i32", "%i = arith.remsi %a, %c4 : i32"],
        4,
    ),
}


@pytest.mark.parametrize("how", list(REMAINDERS))
def test_a_remainder_of_multiples_is_a_multiple(how: str):
    pre, rows = REMAINDERS[how]
    module = infer_like_jax(_wgmma_load_kernel(pre, async_load(["%i", "%z"], ["i32", "i32"])))
    assert in_transforms(op(module, LOAD)) == [((rows, 64), 128)]


# --- gather indices without a barrier ------------------------------------------------------


def _gather_kernel(rows: int, barrier: bool) -> str:
    """A TMA gather of ``rows`` rows whose indices come from GMEM.

    Unoptimized: an optimized load of the indices in a TMA index layout moves
    whole sectors for no warp (JAX's answer, which its lowering rejects; then
    smalto finds no layout: ``test_an_optimized_gather_index_load_does_not_lower``).
    """
    ref_ty = smem((rows, 128), "bf16")
    idx = vec((rows,), "i32")
    return kernel(
        [
            slice_smem("r", ref_ty),
            slice_smem("bar", BARRIER, offset=65536),
            "%z = arith.constant 0 : i32",
            f'%g = "mosaic_gpu.vector_load"(%arg1) <{{optimized = false}}> : '
            f"({gmem((rows,), 'i32')}) -> {idx}",
            async_load(
                ["%g", "%z"],
                [idx, "i32"],
                barrier=barrier,
                ref="r",
                ref_ty=ref_ty,
                gmem_ty=gmem((256, 128), "bf16"),
                lengths=(rows, 128),
            ),
        ],
        [gmem((256, 128), "bf16"), gmem((rows,), "i32")],
    )


def test_an_optimized_gather_index_load_does_not_lower():
    """JAX's answer loads the indices in TMA_INDICES, optimized: its lowering
    rejects the GMEM load; no layout both moves whole sectors and is a TMA
    index layout, and smalto says so."""
    text = _gather_kernel(32, barrier=True).replace("<{optimized = false}> ", "")
    with pytest.raises(Exception, match="32 byte sectors"):
        lower_in_launch(run_jax(text))
    with pytest.raises(smalto.InferenceError, match="GMEM"):
        run_smalto(text)


@pytest.mark.parametrize("rows, layout", [(32, TMA_INDICES), (8, TMA_INDICES_4)])
def test_gather_indices_get_the_index_layout(rows: int, layout: object):
    module = infer_like_jax(_gather_kernel(rows, barrier=True))
    assert in_layouts(op(module, LOAD)) == [layout]


@pytest.mark.parametrize("rows, layout", [(32, TMA_INDICES), (8, TMA_INDICES_4)])
def test_gather_indices_without_a_barrier_are_found_after_the_refs(rows: int, layout: object):
    """JAX 0.12.0.1 looks for gather indices from operand 3 whatever the segments, so
    without a barrier it takes the scalar column offset for the index vector and fails
    an assertion; smalto reads the segments and lays out the real index vector."""
    text = _gather_kernel(rows, barrier=False)
    with pytest.raises(AssertionError):
        run_jax(text)
    module = run_smalto(text)
    assert in_layouts(op(module, LOAD)) == [layout]


# --- a swizzled copy moves rows exactly as wide as the swizzle ---------------------------

F32_GMEM = gmem((1024, 1024), "f32")
F32_REF = smem((128, 64), "f32")
F32_VIEW = smem((64, 128), "f32", "strided<[1, 64]>")


def _swizzled_copy(tile: tuple[int, int], swizzle: int | None, *, transposed: bool) -> str:
    """An f32 copy into a ref whose transforms are given: into its transpose if asked.

    The lowering undoes a transpose before the copy, so the rows TMA moves run
    along the dim that is minor in memory: the ref's columns, the view's rows.
    The GMEM ref is a kernel argument as Mosaic GPU marks one (a cast of a
    pointer), so that JAX's lowering can build the TMA copy.
    """
    body = [
        f"%g = builtin.unrealized_conversion_cast %arg0 : !llvm.ptr to {F32_GMEM} "
        "{mosaic_gpu.original_kernel_arg}",
        slice_smem("r0", F32_REF),
        with_transforms("r", "r0", F32_REF, tile, swizzle),
        slice_smem("bar", BARRIER, offset=65536),
        "%z = arith.constant 0 : i32",
    ]
    copy = dict(gmem_ty=F32_GMEM, lengths=(128, 64), ref_ty=F32_REF)
    if transposed:
        body.append(
            '%t = "memref.transpose"(%r) <{permutation = affine_map<(d0, d1) -> (d1, d0)>}> '
            f": ({F32_REF}) -> {F32_VIEW}"
        )
        copy = dict(gmem_ty=F32_GMEM, lengths=(64, 128), ref="t", ref_ty=F32_VIEW)
    load = async_load(["%z", "%z"], ["i32", "i32"], **copy)  # type: ignore[arg-type]
    return kernel([*body, load.replace("(%arg0,", "(%g,")], ["!llvm.ptr"])


@pytest.mark.parametrize("transposed", [False, True])
def test_a_swizzled_copy_takes_rows_as_wide_as_the_swizzle(transposed: bool):
    # 8 f32 columns of the ref are 32 bytes, the swizzle's width, transposed or not.
    module = infer_like_jax(_swizzled_copy((16, 8), 32, transposed=transposed))
    assert check(module) == []
    lower_in_launch(module)


# (tile, swizzle, what the checker says of JAX's answer, what JAX's lowering raises, smalto's
# refusal): JAX's pass accepts each tiling (a valid ref), its lowering of the TMA copy does not.
# - 16 f32 columns are 64 bytes, wider than the swizzle; for a transposed view too, where the
#   rows are the view's minor *tile* dim of 16 rather than its last dim of 8;
# - an unswizzled tile whose minor dim is 2 f32 (the ref's; the view's leading dim where
#   transposed) is 8 bytes, where the copy wants whole 16-byte rows.
REFUSED_ROWS = {
    "wider-than-swizzle": ((8, 16), 32, "exactly 8 elements, not 16",
                           "require the last dimension of the slice to be exactly",
                           "exactly as wide as its swizzle"),
    "narrow-unswizzled": ((8, 2), None, "whole 16-byte rows", "divisible by 128",
                          "whole 16-byte rows"),
}  # fmt: skip


@pytest.mark.parametrize("transposed", [False, True])
@pytest.mark.parametrize("case", sorted(REFUSED_ROWS))
def test_copied_rows_the_lowering_rejects_are_refused(case: str, transposed: bool):
    tile, swizzle, checker_says, lowering_raises, smalto_says = REFUSED_ROWS[case]
    text = _swizzled_copy(tile, swizzle, transposed=transposed)
    jax_answer = run_jax(text)
    assert any(checker_says in v.message for v in check(jax_answer))
    with pytest.raises(ValueError, match=lowering_raises):
        lower_in_launch(jax_answer)
    with pytest.raises(smalto.InferenceError, match=smalto_says):
        run_smalto(text)


def test_a_free_transposed_ref_gets_whole_rows():
    """A copy into the transpose of a bf16 ref with no transforms of its own lowers: the
    tiling chosen gives whole rows along the dim minor in memory (the view's first).
    (Where the complete search decides, the fuzz once caught it choosing a 4x8 tile
    there, 8-byte rows: ``fuzz/regressions/checker-rejects-8067448621d0.mlir``.)"""
    gmem_ty, ref_ty = gmem((1024, 1024), "bf16"), smem((64, 128), "bf16")
    view_ty = smem((128, 64), "bf16", "strided<[1, 128]>")
    body = [
        f"%g = builtin.unrealized_conversion_cast %arg0 : !llvm.ptr to {gmem_ty} "
        "{mosaic_gpu.original_kernel_arg}",
        slice_smem("r", ref_ty),
        '%t = "memref.transpose"(%r) <{permutation = affine_map<(d0, d1) -> (d1, d0)>}> '
        f": ({ref_ty}) -> {view_ty}",
        slice_smem("bar", BARRIER, offset=65536),
        "%z = arith.constant 0 : i32",
    ]
    load = async_load(["%z", "%z"], ["i32", "i32"], gmem_ty=gmem_ty, lengths=(128, 64), ref="t",
                      ref_ty=view_ty)  # fmt: skip
    module = run_smalto(kernel([*body, load.replace("(%arg0,", "(%g,")], ["!llvm.ptr"]))
    assert check(module) == []
    lower_in_launch(module)


def _cp_async_copy(tile: tuple[int, int] | None, swizzle: int | None) -> str:
    """An f32 copy without a barrier (``cp.async``) into a (128, 32) ref: 128-byte rows."""
    ref_ty = smem((128, 32), "f32")
    body = [
        f"%g = builtin.unrealized_conversion_cast %arg0 : !llvm.ptr to {F32_GMEM} "
        "{mosaic_gpu.original_kernel_arg}",
        slice_smem("r0", ref_ty),
        with_transforms("r", "r0", ref_ty, tile, swizzle),
        "%z = arith.constant 0 : i32",
    ]
    load = async_load(["%z", "%z"], ["i32", "i32"], barrier=False, gmem_ty=F32_GMEM,
                      lengths=(128, 32), ref_ty=ref_ty)  # fmt: skip
    return kernel([*body, load.replace("(%arg0,", "(%g,")], ["!llvm.ptr"])


def test_a_copy_without_a_barrier_swizzles_only_a_tiled_ref():
    """cp.async (no barrier) does not swizzle an untiled ref: JAX's pass takes the
    transforms, its lowering raises; smalto refuses, and offers the tiled ref instead."""
    text = _cp_async_copy(None, 128)
    jax_answer = run_jax(text)
    assert any("cannot swizzle an untiled ref" in v.message for v in check(jax_answer))
    with pytest.raises(NotImplementedError, match="untiled CP_ASYNC"):
        lower_in_launch(jax_answer)
    with pytest.raises(smalto.InferenceError, match=r"without a barrier \(cp.async\)") as refused:
        run_smalto(text)
    assert "tiled 8×32 + swizzle 128" in str(refused.value)
    tiled = run_smalto(_cp_async_copy((8, 32), 128))
    assert check(tiled) == []
    lower_in_launch(tiled)
