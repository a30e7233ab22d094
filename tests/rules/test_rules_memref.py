"""Rules for `memref` views of SMEM refs (Hopper).

What the ops require:
- ``memref.subview``: a window of the ref keeps its tiling, so the tiling must
  divide the window's sizes and its offsets, as far as they are known (static,
  or dynamic with divisibility facts such as ``mosaic_gpu.assume_multiple``);
  dimensions that the window squeezes away do not count.
- ``memref.cast``: the same ref.
- ``memref.transpose``: the tiling, permuted (inferred both ways).
- ``memref.expand_shape``: only trailing dims that are not split may be tiled.
- ``memref.collapse_shape``: the tiling must survive merging the dims.
- ``memref.load``/``memref.store``: scalar refs (barrier phases, flags), untiled.

The register side of each test is a ``vector_load`` cast to WGMMA, which asks
for the widest swizzled tiling the view allows.
"""

from __future__ import annotations

import pytest
from rule_kit import (
    UNTILED,
    WGMMA,
    WORKGROUP,
    in_transforms,
    infer_like_jax,
    kernel,
    layout_cast,
    op,
    out_layouts,
    out_transforms,
    rejected_like_jax,
    run_jax,
    run_smalto,
    slice_smem,
    smem,
    vec,
    vector_load,
    with_transforms,
)

BF16 = "bf16"
V = vec((64, 64), BF16)
SWIZZLED = ((8, 64), 128)


def _wgmma_load(ref: str, ref_ty: str) -> list[str]:
    return [vector_load("v", ref, ref_ty, V), layout_cast("c", "v", V, WGMMA)]


def _assume(name: str, value: str, multiple: int) -> str:
    return (
        f'%{name} = "mosaic_gpu.assume_multiple"(%{value}) <{{multiple = {multiple} : i32}}> '
        ": (i32) -> i32"
    )


# --- memref.subview ------------------------------------------------------------------------------


def test_subview_with_a_static_offset_in_a_squeezed_dim():
    source = smem((2, 64, 64), BF16)
    window = smem((64, 64), BF16, "strided<[64, 1], offset: 4096>")
    module = infer_like_jax(
        kernel(
            [
                slice_smem("r", source),
                f"%s = memref.subview %r[1, 0, 0] [1, 64, 64] [1, 1, 1] : {source} to {window}",
                *_wgmma_load("s", window),
            ]
        )
    )
    subview = op(module, "memref.subview")
    assert in_transforms(subview) == out_transforms(subview) == [SWIZZLED]
    assert out_transforms(op(module, "mosaic_gpu.slice_smem")) == [SWIZZLED]


def test_subview_with_a_dynamic_offset_in_a_squeezed_dim():
    """The squeezed dim is not tiled: its unknown offset constrains nothing."""
    source = smem((4, 64, 64), BF16)
    window = smem((64, 64), BF16, "strided<[64, 1], offset: ?>")
    module = infer_like_jax(
        kernel(
            [
                slice_smem("r", source),
                f"%s = memref.subview %r[%arg0, 0, 0] [1, 64, 64] [1, 1, 1] : {source} to {window}",
                *_wgmma_load("s", window),
            ],
            ["index"],
        )
    )
    assert in_transforms(op(module, "memref.subview")) == [SWIZZLED]


ROWS_SOURCE = smem((128, 64), BF16)
DYNAMIC_WINDOW = smem((64, 64), BF16, "strided<[64, 1], offset: ?>")


def _rows_window(pre: list[str], index: str, window: str = DYNAMIC_WINDOW) -> str:
    return kernel(
        [
            slice_smem("r", ROWS_SOURCE),
            *pre,
            f"%s = memref.subview %r[{index}, 0] [64, 64] [1, 1] : {ROWS_SOURCE} to {window}",
            *_wgmma_load("s", window),
        ],
        ["index", "i32"],
    )


@pytest.mark.parametrize(
    "pre",
    [
        [_assume("m", "arg1", 16), "%i = arith.index_cast %m : i32 to index"],
        ["%c8 = arith.constant 8 : index", "%i = arith.muli %arg0, %c8 : index"],
    ],
    ids=["assume-multiple-16", "times-8"],
)
def test_subview_with_a_dynamic_row_offset_known_to_be_a_multiple_of_the_tile(pre):
    module = infer_like_jax(_rows_window(pre, "%i"))
    assert in_transforms(op(module, "memref.subview")) == [SWIZZLED]


def test_subview_with_a_static_row_offset_on_a_tile_boundary():
    window = smem((64, 64), BF16, "strided<[64, 1], offset: 512>")
    module = infer_like_jax(_rows_window([], "8", window))
    assert in_transforms(op(module, "memref.subview")) == [SWIZZLED]


# A row offset inside a tile: the ref's tiling is cut down to what divides it,
# as JAX does (the Divides on the subview's source applies to the whole ref).
@pytest.mark.parametrize(
    ("pre", "index", "window", "rows"),
    [
        ([], "4", smem((64, 64), BF16, "strided<[64, 1], offset: 256>"), 4),
        ([_assume("m", "arg1", 2), "%i = arith.index_cast %m : i32 to index"], "%i", None, 2),
        ([], "%arg0", None, 1),
    ],
    ids=["static-4", "assume-multiple-2", "unknown"],
)
def test_subview_with_a_row_offset_inside_a_tile(pre, index, window, rows):
    module = infer_like_jax(_rows_window(pre, index, window or DYNAMIC_WINDOW))
    assert in_transforms(op(module, "memref.subview")) == [((rows, 64), 128)]


def test_subview_with_a_user_tiling_the_offset_breaks_is_rejected():
    window = smem((64, 64), BF16, "strided<[64, 1], offset: 256>")
    rejected_like_jax(
        kernel(
            [
                slice_smem("q", ROWS_SOURCE),
                with_transforms("r", "q", ROWS_SOURCE, (8, 64), 128),
                f"%s = memref.subview %r[4, 0] [64, 64] [1, 1] : {ROWS_SOURCE} to {window}",
            ]
        )
    )


def test_subview_keeps_a_user_tiling_on_its_result():
    source = smem((2, 64, 64), BF16)
    window = smem((64, 64), BF16, "strided<[64, 1], offset: 4096>")
    module = infer_like_jax(
        kernel(
            [
                slice_smem("q", source),
                with_transforms("r", "q", source, (8, 32), 64),
                f"%s = memref.subview %r[1, 0, 0] [1, 64, 64] [1, 1, 1] : {source} to {window}",
                vector_load("v", "s", window, V),
            ]
        )
    )
    subview = op(module, "memref.subview")
    assert in_transforms(subview) == out_transforms(subview) == [((8, 32), 64)]
    assert out_layouts(op(module, "mosaic_gpu.vector_load")) == [WGMMA]


# --- memref.cast ----------------------------------------------------------------------------------


def test_cast_is_the_same_ref():
    ref = smem((64, 64), BF16)
    dynamic = smem((64, 64), BF16, "strided<[64, 1], offset: ?>")
    module = infer_like_jax(
        kernel(
            [
                slice_smem("r", ref),
                f"%d = memref.cast %r : {ref} to {dynamic}",
                *_wgmma_load("d", dynamic),
            ]
        )
    )
    cast = op(module, "memref.cast")
    assert in_transforms(cast) == out_transforms(cast) == [SWIZZLED]
    assert out_transforms(op(module, "mosaic_gpu.slice_smem")) == [SWIZZLED]


# --- memref.transpose ----------------------------------------------------------------------------

SOURCE_64x128 = smem((64, 128), BF16)
TRANSPOSED_128x64 = smem((128, 64), BF16, "strided<[1, 128]>")


def _transpose(name: str, ref: str) -> str:
    return (
        f"%{name} = memref.transpose %{ref} (i, j) -> (j, i) "
        f": {SOURCE_64x128} to {TRANSPOSED_128x64}"
    )


def test_transpose_permutes_the_tiling_forward():
    module = infer_like_jax(
        kernel(
            [
                slice_smem("q", SOURCE_64x128),
                with_transforms("r", "q", SOURCE_64x128, (8, 64), 128),
                _transpose("t", "r"),
            ]
        )
    )
    transpose = op(module, "memref.transpose")
    assert in_transforms(transpose) == [((8, 64), 128)]
    assert out_transforms(transpose) == [((64, 8), 128)]


def test_transpose_permutes_the_tiling_backward():
    """A tiling asked for on the transposed view is the source's, permuted back."""
    module = infer_like_jax(
        kernel(
            [
                slice_smem("r", SOURCE_64x128),
                _transpose("t", "r"),
                with_transforms("w", "t", TRANSPOSED_128x64, (64, 8), 128),
            ]
        )
    )
    assert out_transforms(op(module, "mosaic_gpu.slice_smem")) == [((8, 64), 128)]
    assert in_transforms(op(module, "memref.transpose")) == [((8, 64), 128)]


@pytest.mark.parametrize(
    ("tile", "swizzle"), [((8, 64), 64), ((8, 64), None), (None, 128)], ids=str
)
def test_transpose_keeps_the_swizzle(tile, swizzle):
    """The swizzle is physical: it stays as given while the tiling is permuted."""
    module = infer_like_jax(
        kernel(
            [
                slice_smem("q", SOURCE_64x128),
                with_transforms("r", "q", SOURCE_64x128, tile, swizzle),
                _transpose("t", "r"),
            ]
        )
    )
    transposed = None if tile is None else tile[::-1]
    assert out_transforms(op(module, "memref.transpose")) == [(transposed, swizzle)]


def test_collapse_shape_keeps_the_swizzle():
    source, collapsed = smem((2, 64, 64), BF16), smem((128, 64), BF16)
    module = infer_like_jax(
        kernel(
            [
                slice_smem("q", source),
                with_transforms("r", "q", source, (1, 8, 64), 32),
                f"%c = memref.collapse_shape %r [[0, 1], [2]] : {source} into {collapsed}",
            ]
        )
    )
    assert out_transforms(op(module, "memref.collapse_shape")) == [((8, 64), 32)]


def _expand(name: str, ref: str, groups: str, shape: str, source: str, expanded: str) -> str:
    return (
        f"%{name} = memref.expand_shape %{ref} {groups} output_shape [{shape}] "
        f": {source} into {expanded}"
    )


# --- memref.expand_shape / collapse_shape ---------------------------------------------


def test_expand_shape_without_requirements_stays_untiled():
    source, expanded = smem((128, 64), BF16), smem((2, 64, 64), BF16)
    module = infer_like_jax(
        kernel(
            [
                slice_smem("r", source),
                _expand("e", "r", "[[0, 1], [2]]", "2, 64, 64", source, expanded),
                vector_load("v", "e", expanded, vec((2, 64, 64), BF16)),
            ]
        )
    )
    expand = op(module, "memref.expand_shape")
    assert in_transforms(expand) == out_transforms(expand) == [UNTILED]


def test_expand_shape_keeps_a_tiling_of_its_unsplit_trailing_dim():
    source, expanded = smem((128, 64), BF16), smem((2, 64, 64), BF16)
    module = infer_like_jax(
        kernel(
            [
                slice_smem("q", source),
                with_transforms("r", "q", source, (64,), 128),
                _expand("e", "r", "[[0, 1], [2]]", "2, 64, 64", source, expanded),
            ]
        )
    )
    expand = op(module, "memref.expand_shape")
    assert in_transforms(expand) == out_transforms(expand) == [((64,), 128)]


def test_expand_shape_adding_a_leading_dim_keeps_a_2d_tiling():
    source, expanded = smem((2, 128, 64), BF16), smem((1, 2, 128, 64), BF16)
    module = infer_like_jax(
        kernel(
            [
                slice_smem("q", source),
                with_transforms("r", "q", source, (8, 64), 128),
                f"%e = memref.expand_shape %r [[0, 1], [2], [3]] output_shape [1, 2, 128, 64] "
                f": {source} into {expanded}",
            ]
        )
    )
    assert out_transforms(op(module, "memref.expand_shape")) == [((8, 64), 128)]


def test_expand_shape_tiling_a_split_dim_is_rejected():
    source, expanded = smem((128, 64), BF16), smem((128, 1, 64), BF16)
    rejected_like_jax(
        kernel(
            [
                slice_smem("q", source),
                with_transforms("r", "q", source, (8, 64), 128),
                _expand("e", "r", "[[0], [1, 2]]", "128, 1, 64", source, expanded),
            ]
        )
    )


def test_expand_shape_read_as_wgmma_through_a_subview():
    """A 1D tiling (64,) with swizzle 128: only the unsplit trailing dim may be tiled.

    jax 0.12.0.1's pass crashes here (an IndexError reading the minor width
    of the 1-D tile it conjures); smalto skips that candidate, and its
    complete search finds the tiling jax 0.10.2 gave.
    """
    source, expanded = smem((64, 64), BF16), smem((1, 64, 64), BF16)
    window = smem((64, 64), BF16, "strided<[64, 1]>")
    text = kernel(
        [
            slice_smem("r", source),
            _expand("e", "r", "[[0, 1], [2]]", "1, 64, 64", source, expanded),
            f"%s = memref.subview %e[0, 0, 0] [1, 64, 64] [1, 1, 1] : {expanded} to {window}",
            *_wgmma_load("s", window),
        ]
    )
    module = run_smalto(text)
    assert out_transforms(op(module, "memref.expand_shape")) == [((64,), 128)]
    assert out_layouts(op(module, "mosaic_gpu.vector_load")) == [WGMMA]
    with pytest.raises(IndexError):
        run_jax(text)


def test_collapse_shape_merges_a_3d_tiling():
    source, collapsed = smem((2, 64, 64), BF16), smem((128, 64), BF16)
    module = infer_like_jax(
        kernel(
            [
                slice_smem("q", source),
                with_transforms("r", "q", source, (1, 8, 64), 128),
                f"%c = memref.collapse_shape %r [[0, 1], [2]] : {source} into {collapsed}",
                vector_load("v", "c", collapsed, vec((128, 64), BF16)),
            ]
        )
    )
    collapse = op(module, "memref.collapse_shape")
    assert in_transforms(collapse) == [((1, 8, 64), 128)]
    assert out_transforms(collapse) == [((8, 64), 128)]
    assert in_transforms(op(module, "mosaic_gpu.vector_load")) == [((8, 64), 128)]
    assert out_layouts(op(module, "mosaic_gpu.vector_load")) == [WGMMA]


def test_collapse_shape_merging_a_tiled_dim_with_an_untiled_one_is_rejected():
    """A 2D tiling of a 3D ref would merge the tiled rows with the untiled leading dim."""
    source, collapsed = smem((2, 64, 64), BF16), smem((128, 64), BF16)
    rejected_like_jax(
        kernel(
            [
                slice_smem("q", source),
                with_transforms("r", "q", source, (8, 64), 128),
                f"%c = memref.collapse_shape %r [[0, 1], [2]] : {source} into {collapsed}",
            ]
        )
    )


def test_collapse_shape_without_requirements_stays_untiled():
    """(JAX's pass crashes on this one with a Python TypeError: no comparison.)"""
    source, collapsed = smem((2, 64, 64), BF16), smem((128, 64), BF16)
    module = run_smalto(
        kernel(
            [
                slice_smem("r", source),
                f"%c = memref.collapse_shape %r [[0, 1], [2]] : {source} into {collapsed}",
                vector_load("v", "c", collapsed, vec((128, 64), BF16)),
            ]
        )
    )
    collapse = op(module, "memref.collapse_shape")
    assert in_transforms(collapse) == out_transforms(collapse) == [UNTILED]


# --- memref.load / memref.store ------------------------------------------------------------------


def test_scalar_loads_and_stores_use_untiled_refs():
    one, scalar = smem((1,), "i32"), f"memref<i32, {WORKGROUP}>"
    module = infer_like_jax(
        kernel(
            [
                slice_smem("r", one),
                "%c0 = arith.constant 0 : index",
                f"%x = memref.load %r[%c0] : {one}",
                f"memref.store %x, %r[%c0] : {one}",
                slice_smem("q", scalar, offset=64),
                f"%y = memref.load %q[] : {scalar}",
            ]
        )
    )
    assert in_transforms(op(module, "memref.load", 0)) == [UNTILED]
    assert in_transforms(op(module, "memref.store")) == [UNTILED]
    assert in_transforms(op(module, "memref.load", 1)) == [UNTILED]
    assert out_transforms(op(module, "mosaic_gpu.slice_smem", 0)) == [UNTILED]


def test_scalar_load_operand_is_untiled_whatever_its_producer():
    """As in JAX, the load's own operand site is untiled; it is not tied to the ref's
    producer, which may keep a (1,) tiling."""
    one = smem((1,), "i32")
    module = infer_like_jax(
        kernel(
            [
                slice_smem("q", one),
                with_transforms("r", "q", one, (1,)),
                "%c0 = arith.constant 0 : index",
                f"%x = memref.load %r[%c0] : {one}",
            ]
        )
    )
    assert in_transforms(op(module, "memref.load")) == [UNTILED]
    ((tiling, _),) = out_transforms(op(module, "mosaic_gpu.with_transforms"))
    assert tiling == (1,)


def test_load_of_a_non_scalar_smem_ref_is_not_supported():
    ref = smem((4,), "i32")
    rejected_like_jax(
        kernel(
            [
                slice_smem("r", ref),
                "%c0 = arith.constant 0 : index",
                f"%x = memref.load %r[%c0] : {ref}",
            ]
        ),
        NotImplementedError,
    )
