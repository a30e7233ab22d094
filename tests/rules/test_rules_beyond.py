"""Layouts smalto finds where JAX 0.12.0.1's pass finds none (issue #13), on Hopper.

The complete search (``smalto.solve.domains``) offers, besides the named
layouts, the layouts a value needs to be tiled at its own rank:

- a keep-dims reduction result ``(N, 1)`` / ``(1, N)``: a named layout with a
  size-1 tile along the kept dim (``hw.layouts.keep_dims``), which reduces to
  WGMMA_ROW / WGMMA_COL;
- a broadcast to rank 3: a named layout lifted to rank 3 with size-1 leading
  tile dims (``hw.layouts.lifted``), which reduces to the rank-2 one;
- the source of a ``vector.extract`` of a leading index, which shares one
  layout with its lower-rank result: the row/column tilings too.

JAX's pass fails on each kernel (or answers a layout its lowering rejects);
``smalto check`` accepts smalto's answer.
"""

from __future__ import annotations

import pytest
from jax.experimental.mosaic.gpu import fragmented_array as fa
from rule_kit import (
    WGMMA,
    WGMMA_COL,
    WGMMA_ROW,
    gmem,
    in_layouts,
    jax_fails,
    kernel,
    layout_cast,
    op,
    out_layouts,
    run_jax,
    run_smalto,
    vec,
    vector_load,
    vector_store,
)

from smalto.check import check
from smalto.hw import layouts as hl
from smalto.solve import domains

F32 = "f32"
HOPPER = (9, 0)
from beyond_kernels import KEEP_COLS, KEEP_ROWS, WGMMA_3D  # noqa: E402 - the target layouts


def _broadcast(name: str, source: str, src_ty: str, dst_ty: str, dims: str) -> str:
    return (
        f'%{name} = "mosaic_gpu.broadcast_in_dim"(%{source}) '
        f"<{{broadcast_dimensions = array<i64: {dims}>}}> : ({src_ty}) -> {dst_ty}"
    )


# --- the layouts ------------------------------------------------------------------------------


def test_keep_dims_of_wgmma_reduces_to_its_row_and_column_layouts() -> None:
    assert hl.keep_dims(WGMMA, 1) == KEEP_ROWS and hl.keep_dims(WGMMA, 0) == KEEP_COLS
    assert KEEP_ROWS.reduce([1]) == WGMMA_ROW and KEEP_COLS.reduce([0]) == WGMMA_COL


@pytest.mark.parametrize(
    "layout",
    [WGMMA, hl.WGMMA_TRANSPOSED, hl.TCGEN05, hl.TCGEN05_TRANSPOSED, hl.TMEM_NATIVE, hl.WGMMA_8BIT],
    ids=str,
)
@pytest.mark.parametrize("rank", [3, 4])
def test_a_lifted_layout_tiles_every_dim_and_reduces_back(layout: fa.TiledLayout, rank: int):
    up = hl.lifted(layout, rank)
    assert up is not None and len(up.base_tile_shape) == rank
    assert up.reduce(list(range(rank - 2))) == layout
    assert up.vector_length == layout.vector_length


def test_wgmma_lifted_to_rank_3_is_the_issues_tiling() -> None:
    assert hl.lifted(WGMMA, 3) == WGMMA_3D
    assert hl.lifted(WGMMA, 2) == WGMMA and hl.lifted(WGMMA, 1) is None


def test_domains_offer_own_rank_layouts_only_where_the_shape_needs_them() -> None:
    from smalto.constraints.language import Variable
    from smalto.program.view import Kind

    def values(shape: tuple[int, ...], min_rank: int | None = None) -> list:
        var = Variable(0, Kind.VECTOR, shape, 32, None, None, 0)  # type: ignore[arg-type]
        return [v.layout for v in domains.domain(var, lambda v: True, [], None, min_rank)]

    assert KEEP_ROWS in values((128, 1)) and KEEP_COLS in values((1, 128))
    assert KEEP_ROWS not in values((128, 128))
    assert WGMMA_3D in values((2, 64, 128)) and WGMMA_3D not in values((64, 128))
    # Row tilings of a 2-D vector only where a 1-D value shares its layout.
    assert WGMMA_ROW not in values((128, 128)) and WGMMA_ROW in values((128, 128), 1)


# --- kernels ----------------------------------------------------------------------------------


def test_keep_dims_maximum_of_a_wgmma_value() -> None:
    """max(x, axis=1, keepdims=True) stored: JAX finds nothing; smalto keeps rank 2."""
    x, r, k = vec((128, 128), F32), vec((128,), F32), vec((128, 1), F32)
    text = kernel(
        [
            vector_load("x", "arg0", gmem((128, 128), F32), x),
            layout_cast("y", "x", x, WGMMA),
            f"%acc = arith.constant dense<0.0> : {r}",
            f"%r = vector.multi_reduction <maxnumf>, %y, %acc [1] : {x} to {r}",
            _broadcast("k", "r", r, k, "0"),
            vector_store("k", k, "arg1", gmem((128, 1), F32)),
        ],
        [gmem((128, 128), F32), gmem((128, 1), F32)],
    )
    assert jax_fails(text)
    module = run_smalto(text)
    broadcast = op(module, "mosaic_gpu.broadcast_in_dim")
    assert in_layouts(broadcast) == [WGMMA_ROW] and out_layouts(broadcast) == [KEEP_ROWS]
    assert check(module, HOPPER) == []


def _tile_broadcast_3d() -> str:
    t, b = vec((64, 128), F32), vec((2, 64, 128), F32)
    return kernel(
        [
            vector_load("x", "arg0", gmem((64, 128), F32), t),
            layout_cast("y", "x", t, WGMMA),
            _broadcast("b", "y", t, b, "1, 2"),
            vector_store("b", b, "arg1", gmem((2, 64, 128), F32)),
        ],
        [gmem((64, 128), F32), gmem((2, 64, 128), F32)],
    )


def test_broadcast_of_a_wgmma_tile_to_rank_3() -> None:
    """JAX answers the rank-2 WGMMA layout for the (2, 64, 128) result, which its
    lowering rejects and the checker flags; smalto lifts WGMMA to rank 3."""
    text = _tile_broadcast_3d()
    theirs = run_jax(text)
    assert out_layouts(op(theirs, "mosaic_gpu.broadcast_in_dim")) == [WGMMA]
    assert any("broadcast_in_dim" in v.op for v in check(theirs, HOPPER))
    ours = run_smalto(text)
    assert out_layouts(op(ours, "mosaic_gpu.broadcast_in_dim")) == [WGMMA_3D]
    assert check(ours, HOPPER) == []


def test_leading_index_of_a_2d_value() -> None:
    """x[3] of a (128, 128) value: source and result share a layout tiling only
    the minor dim, which no named 2-D layout does."""
    x, r = vec((128, 128), F32), vec((128,), F32)
    text = kernel(
        [
            vector_load("x", "arg0", gmem((128, 128), F32), x),
            f"%r = vector.extract %x[3] : {r} from {x}",
            vector_store("r", r, "arg1", gmem((128,), F32)),
        ],
        [gmem((128, 128), F32), gmem((128,), F32)],
    )
    assert jax_fails(text)
    module = run_smalto(text)
    extract = op(module, "vector.extract")
    (layout,) = in_layouts(extract)
    assert out_layouts(extract) == [layout] and len(layout.base_tile_shape) == 1
    assert check(module, HOPPER) == []
