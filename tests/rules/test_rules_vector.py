"""Rules for `vector` (Hopper): broadcasts, reductions, reshapes, slices, extracts.

What the ops require:
- ``vector.broadcast`` of a scalar gives the same value everywhere: a splat.
- ``vector.reduction`` reduces to a scalar: any layout of its input will do.
- ``vector.multi_reduction``: the result (and the accumulator) has the input's
  layout reduced over the reduction dims (WGMMA reduced over columns is
  WGMMA_ROW, over rows WGMMA_COL); a strided input cannot be reduced.
- ``vector.shape_cast``: a reshape that moves no element keeps the layout; it is
  inferred both ways (from the source, or back from the result).
- ``vector.extract_strided_slice`` / ``vector.insert_strided_slice``: tiled
  layouts only, with offsets on tile boundaries.
- ``vector.extract``: a scalar can only be read from a splat; a sub-vector
  keeps a tiled layout.
"""

from __future__ import annotations

import pytest
from rule_kit import (
    WGMMA,
    WGMMA_COL,
    WGMMA_ROW,
    gmem,
    in_layouts,
    infer_like_jax,
    is_tiled,
    jax_fails,
    kernel,
    layout_cast,
    op,
    out_layouts,
    rejected_like_jax,
    run_smalto,
    splat,
    strided,
    vec,
    vector_load,
    vector_store,
)

F32 = "f32"
SHAPE = (64, 128)
V = vec(SHAPE, F32)
G = gmem(SHAPE, F32)


def _wgmma_input(name: str = "y") -> list[str]:
    """``%name``: a 64x128 f32 value loaded from ``%arg0`` and cast to WGMMA."""
    return [vector_load("x", "arg0", G, V), layout_cast(name, "x", V, WGMMA)]


# --- vector.broadcast -----------------------------------------------------------------------


def test_broadcast_of_a_scalar_is_a_splat():
    module = infer_like_jax(
        kernel(
            [
                "%s = arith.constant 1.0 : f32",
                f"%b = vector.broadcast %s : f32 to {V}",
                vector_store("b", V, "arg0", G),
            ],
            [G],
        )
    )
    assert out_layouts(op(module, "vector.broadcast")) == [splat(*SHAPE)]
    assert in_layouts(op(module, "mosaic_gpu.vector_store")) == [splat(*SHAPE)]


def test_broadcast_of_a_function_argument_scalar_used_with_wgmma():
    """The broadcast stays a splat; the add reads it relaid out to WGMMA."""
    module = infer_like_jax(
        kernel(
            [
                *_wgmma_input(),
                f"%b = vector.broadcast %arg1 : f32 to {V}",
                f"%r = arith.mulf %y, %b : {V}",
            ],
            [G, "f32"],
        )
    )
    assert out_layouts(op(module, "vector.broadcast")) == [splat(*SHAPE)]
    assert in_layouts(op(module, "arith.mulf")) == [WGMMA, WGMMA]


def test_broadcast_of_a_vector_is_not_supported():
    v1 = vec((128,), F32)
    rejected_like_jax(
        kernel(
            [
                vector_load("x", "arg0", gmem((128,), F32), v1),
                f"%b = vector.broadcast %x : {v1} to {V}",
            ],
            [gmem((128,), F32)],
        ),
        NotImplementedError,
    )


# --- vector.reduction -------------------------------------------------------------------------


def test_reduction_accepts_the_strided_layout_of_its_input():
    v1 = vec((128,), F32)
    module = infer_like_jax(
        kernel(
            [
                vector_load("x", "arg0", gmem((128,), F32), v1),
                f"%s = vector.reduction <add>, %x : {v1} into f32",
            ],
            [gmem((128,), F32)],
        )
    )
    (loaded,) = out_layouts(op(module, "mosaic_gpu.vector_load"))
    assert isinstance(loaded, type(strided((128,), 1)))
    assert in_layouts(op(module, "vector.reduction")) == [loaded]
    assert "out_layouts" not in op(module, "vector.reduction").attributes


def test_reduction_accepts_a_tiled_layout():
    v1 = vec((64,), F32)
    module = infer_like_jax(
        kernel(
            [
                vector_load("x", "arg0", gmem((64,), F32), v1),
                layout_cast("y", "x", v1, WGMMA_ROW),
                f"%s = vector.reduction <maxnumf>, %y : {v1} into f32",
            ],
            [gmem((64,), F32)],
        )
    )
    assert in_layouts(op(module, "vector.reduction")) == [WGMMA_ROW]


def test_reduction_of_a_splat():
    v1 = vec((128,), "i32")
    module = infer_like_jax(
        kernel(
            [
                f"%c = arith.constant dense<2> : {v1}",
                f"%s = vector.reduction <add>, %c : {v1} into i32",
            ]
        )
    )
    assert in_layouts(op(module, "vector.reduction")) == [splat(128)]


# --- vector.multi_reduction ---------------------------------------------------------------------


@pytest.mark.parametrize(
    ("dim", "length", "expected"), [(1, 64, WGMMA_ROW), (0, 128, WGMMA_COL)], ids=["row", "col"]
)
def test_multi_reduction_of_wgmma(dim: int, length: int, expected):
    out = vec((length,), F32)
    module = infer_like_jax(
        kernel(
            [
                *_wgmma_input(),
                f"%acc = arith.constant dense<0.0> : {out}",
                f"%r = vector.multi_reduction <add>, %y, %acc [{dim}] : {V} to {out}",
                vector_store("r", out, "arg1", gmem((length,), F32)),
            ],
            [G, gmem((length,), F32)],
        )
    )
    reduction = op(module, "vector.multi_reduction")
    # The accumulator shares the result's layout; a splat constant is relaid out to it.
    assert in_layouts(reduction) == [WGMMA, expected]
    assert out_layouts(reduction) == [expected]
    assert out_layouts(op(module, "arith.constant")) == [splat(length)]
    assert in_layouts(op(module, "mosaic_gpu.vector_store")) == [expected]


def test_multi_reduction_infers_its_input_back_from_a_row_layout():
    """The result is WGMMA_ROW by a cast: the input must be a layout that reduces to it."""
    out = vec((64,), F32)
    module = infer_like_jax(
        kernel(
            [
                vector_load("x", "arg0", G, V),
                f"%acc = arith.constant dense<0.0> : {out}",
                layout_cast("a", "acc", out, WGMMA_ROW),
                f"%r = vector.multi_reduction <maximumf>, %x, %a [1] : {V} to {out}",
            ],
            [G],
        )
    )
    (source,) = out_layouts(op(module, "mosaic_gpu.vector_load"))
    assert is_tiled(source) and source.reduce((1,)) == WGMMA_ROW
    assert out_layouts(op(module, "vector.multi_reduction")) == [WGMMA_ROW]


def test_multi_reduction_of_a_strided_input_is_rejected():
    out = vec((64,), F32)
    rejected_like_jax(
        kernel(
            [
                vector_load("x", "arg0", G, V),
                layout_cast("s", "x", V, strided(SHAPE, 2)),
                f"%acc = arith.constant dense<0.0> : {out}",
                f"%r = vector.multi_reduction <add>, %s, %acc [1] : {V} to {out}",
            ],
            [G],
        )
    )


def test_multi_reduction_of_an_unconstrained_load_picks_a_tiled_layout():
    """JAX's search finds nothing here (it never conjures a tiled layout for a GMEM
    load); a tiled input is what the op requires, and smalto finds one."""
    out = vec((64,), F32)
    text = kernel(
        [
            vector_load("x", "arg0", G, V),
            f"%acc = arith.constant dense<0.0> : {out}",
            f"%r = vector.multi_reduction <add>, %x, %acc [1] : {V} to {out}",
        ],
        [G],
    )
    assert jax_fails(text)
    reduction = op(run_smalto(text), "vector.multi_reduction")
    source, acc = in_layouts(reduction)
    assert is_tiled(source)
    assert out_layouts(reduction) == [acc] == [source.reduce((1,))]


# --- vector.shape_cast ---------------------------------------------------------------------------


def test_shape_cast_forward_keeps_wgmma():
    """(128, 128) WGMMA -> (2, 64, 128): splitting a leading dim moves no element."""
    v2, v3 = vec((128, 128), F32), vec((2, 64, 128), F32)
    module = infer_like_jax(
        kernel(
            [
                vector_load("x", "arg0", gmem((128, 128), F32), v2),
                layout_cast("y", "x", v2, WGMMA),
                f"%s = vector.shape_cast %y : {v2} to {v3}",
            ],
            [gmem((128, 128), F32)],
        )
    )
    shape_cast = op(module, "vector.shape_cast")
    assert in_layouts(shape_cast) == [WGMMA] and out_layouts(shape_cast) == [WGMMA]


def test_shape_cast_backward_infers_the_source():
    """The result is cast to WGMMA after the reshape: the load before it becomes WGMMA."""
    v3, v2 = vec((2, 64, 128), F32), vec((128, 128), F32)
    module = infer_like_jax(
        kernel(
            [
                vector_load("x", "arg0", gmem((2, 64, 128), F32), v3),
                f"%s = vector.shape_cast %x : {v3} to {v2}",
                layout_cast("y", "s", v2, WGMMA),
            ],
            [gmem((2, 64, 128), F32)],
        )
    )
    assert out_layouts(op(module, "mosaic_gpu.vector_load")) == [WGMMA]
    shape_cast = op(module, "vector.shape_cast")
    assert in_layouts(shape_cast) == [WGMMA] and out_layouts(shape_cast) == [WGMMA]


def test_shape_cast_of_strided_keeps_the_vector_size():
    flat = vec((8192,), F32)
    module = infer_like_jax(
        kernel([vector_load("x", "arg0", G, V), f"%s = vector.shape_cast %x : {V} to {flat}"], [G])
    )
    (source,) = in_layouts(op(module, "vector.shape_cast"))
    assert out_layouts(op(module, "vector.shape_cast")) == [strided((8192,), source.vec_size)]


def test_shape_cast_of_a_splat_is_a_splat():
    flat = vec((8192,), F32)
    module = infer_like_jax(
        kernel(
            [f"%c = arith.constant dense<1.0> : {V}", f"%s = vector.shape_cast %c : {V} to {flat}"]
        )
    )
    assert out_layouts(op(module, "vector.shape_cast")) == [splat(8192)]


def test_shape_cast_that_breaks_wgmma_tiles_is_rejected():
    rejected_like_jax(
        kernel([*_wgmma_input(), f"%s = vector.shape_cast %y : {V} to {vec((8192,), F32)}"], [G])
    )


# --- vector.extract_strided_slice / insert_strided_slice ----------------------------------


def _extract_slice(source: str, offsets: tuple[int, int], sizes: tuple[int, int]) -> str:
    attrs = f"offsets = [{offsets[0]}, {offsets[1]}], sizes = [{sizes[0]}, {sizes[1]}]"
    return (
        f'%s = "vector.extract_strided_slice"(%{source}) <{{{attrs}, strides = [1, 1]}}> '
        f": ({V}) -> {vec(sizes, F32)}"
    )


def test_extract_strided_slice_keeps_the_tiled_layout():
    module = infer_like_jax(kernel([*_wgmma_input(), _extract_slice("y", (0, 64), (64, 64))], [G]))
    sliced = op(module, "vector.extract_strided_slice")
    assert in_layouts(sliced) == [WGMMA] and out_layouts(sliced) == [WGMMA]


def test_extract_strided_slice_off_a_tile_boundary_is_rejected():
    rejected_like_jax(kernel([*_wgmma_input(), _extract_slice("y", (0, 4), (64, 8))], [G]))


def test_extract_strided_slice_of_an_unconstrained_load_is_tiled():
    """Neither splat nor strided values can be sliced. JAX's search gives up here;
    smalto finds a tiled layout whose tiles the offsets respect."""
    text = kernel([vector_load("x", "arg0", G, V), _extract_slice("x", (0, 64), (64, 64))], [G])
    assert jax_fails(text)
    sliced = op(run_smalto(text), "vector.extract_strided_slice")
    (source,) = in_layouts(sliced)
    assert is_tiled(source) and out_layouts(sliced) == [source]
    assert 64 % source.base_tile_shape[-1] == 0


@pytest.mark.parametrize("cast_operand", ["dest", "source"])
def test_insert_strided_slice_shares_one_tiled_layout(cast_operand: str):
    small = vec((64, 64), F32)
    if cast_operand == "dest":
        body = [*_wgmma_input("d"), f"%src = arith.constant dense<0.0> : {small}"]
        args = [G]
    else:
        body = [
            vector_load("x", "arg0", gmem((64, 64), F32), small),
            layout_cast("src", "x", small, WGMMA),
            f"%d = arith.constant dense<0.0> : {V}",
        ]
        args = [gmem((64, 64), F32)]
    body.append(
        f'%r = "vector.insert_strided_slice"(%src, %d) <{{offsets = [0, 64], strides = [1, 1]}}> '
        f": ({small}, {V}) -> {V}"
    )
    module = infer_like_jax(kernel(body, args))
    insert = op(module, "vector.insert_strided_slice")
    assert in_layouts(insert) == [WGMMA, WGMMA]
    assert out_layouts(insert) == [WGMMA]


# --- vector.extract ------------------------------------------------------------------------------


def test_extract_of_a_scalar_reads_a_splat():
    module = infer_like_jax(
        kernel(
            [
                f"%c = arith.constant dense<1.0> : {V}",
                f"%e = vector.extract %c[3, 5] : f32 from {V}",
            ]
        )
    )
    extract = op(module, "vector.extract")
    assert in_layouts(extract) == [splat(*SHAPE)]
    assert "out_layouts" not in extract.attributes


def test_extract_of_a_scalar_from_a_loaded_vector_is_rejected():
    """A loaded value is never a splat, and only a splat can give up a scalar."""
    rejected_like_jax(
        kernel(
            [vector_load("x", "arg0", G, V), f"%e = vector.extract %x[0, 0] : f32 from {V}"], [G]
        )
    )


def test_extract_of_a_sub_vector_infers_the_source_back():
    v3 = vec((2, 64, 128), F32)
    module = infer_like_jax(
        kernel(
            [
                vector_load("x", "arg0", gmem((2, 64, 128), F32), v3),
                f"%e = vector.extract %x[1] : {V} from {v3}",
                layout_cast("y", "e", V, WGMMA),
            ],
            [gmem((2, 64, 128), F32)],
        )
    )
    assert out_layouts(op(module, "mosaic_gpu.vector_load")) == [WGMMA]
    extract = op(module, "vector.extract")
    assert in_layouts(extract) == [WGMMA] and out_layouts(extract) == [WGMMA]


def test_extract_of_a_sub_vector_of_an_unconstrained_load_is_tiled():
    v3 = vec((2, 64, 128), F32)
    text = kernel(
        [
            vector_load("x", "arg0", gmem((2, 64, 128), F32), v3),
            f"%e = vector.extract %x[0] : {V} from {v3}",
        ],
        [gmem((2, 64, 128), F32)],
    )
    assert jax_fails(text)
    extract = op(run_smalto(text), "vector.extract")
    (layout,) = out_layouts(extract)
    assert is_tiled(layout) and in_layouts(extract) == [layout]


def test_extract_of_a_sub_vector_at_a_dynamic_position_is_not_supported():
    v3 = vec((2, 64, 128), F32)
    text = kernel(
        [
            vector_load("x", "arg0", gmem((2, 64, 128), F32), v3),
            f"%e = vector.extract %x[%arg1] : {V} from {v3}",
            layout_cast("y", "e", V, WGMMA),
        ],
        [gmem((2, 64, 128), F32), "index"],
    )
    with pytest.raises(NotImplementedError):
        run_smalto(text)
