"""What smalto reads of JAX's layouts without JAX's classes, held to those classes.

The first kernel of a process should not pay for building layouts JAX already has,
or for JAX's general methods where a few integers answer:
``hw.encode.NAMED_LAYOUT_TEXTS`` reads JAX's named register layouts off their
attribute text. Each text must be exactly what JAX prints for its constant, and no
named layout of JAX's may be missing (a kernel naming it would still decode, through
JAX, but slowly). ``hw.layouts`` asks whether a tiling applies to a shape on
integers.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable

import mma_operand_table
import pytest
import reduction_table
import reference
from hypothesis import given
from hypothesis import strategies as st
from jax._src.lib.mlir import ir
from jax.experimental.mosaic.gpu import fragmented_array as fa
from jax.experimental.mosaic.gpu import launch_context as lc
from jax.experimental.mosaic.gpu import layouts as jax_layouts
from jax.experimental.mosaic.gpu import tcgen05

from smalto.hw import building, encode, schedule
from smalto.hw import layouts as hl
from smalto.hw import mma_operand_table as hw_mma_operand_table
from smalto.hw.values import Reg, Tmem

NAMED = {
    name: value
    for name, value in vars(fa).items()
    if name.isupper() and isinstance(value, fa.TiledLayout)
}


@pytest.fixture(scope="module")
def context() -> ir.Context:
    return reference.make_context()


def test_jax_names_the_layouts_the_table_expects() -> None:
    # A new JAX that adds or drops a named layout must be looked at here.
    assert len(NAMED) == 15
    assert {id(v) for v in encode.NAMED_LAYOUT_TEXTS.values()} <= {id(v) for v in NAMED.values()}


@pytest.mark.parametrize("name", sorted(NAMED))
def test_every_named_layout_is_read_off_its_text(name: str, context: ir.Context) -> None:
    with context:
        text = str(jax_layouts.to_layout_attr(NAMED[name]))
    assert text in encode.NAMED_LAYOUT_TEXTS
    assert encode.NAMED_LAYOUT_TEXTS[text] == NAMED[name]
    # Written back as the same attribute JAX would make of it.
    with context:
        written = encode.AttributeCache(context).layout(Reg(NAMED[name]))
        assert written == jax_layouts.to_layout_attr(NAMED[name])


@pytest.mark.parametrize("text", sorted(encode.NAMED_LAYOUT_TEXTS))
def test_each_text_decodes_through_jax_to_its_layout(text: str, context: ir.Context) -> None:
    with context:
        attr = ir.Attribute.parse(text)
        assert str(attr) == text  # printed back as written: the key a module's attribute has
        decoded = jax_layouts.from_layout_attr(attr)
    layout = encode.NAMED_LAYOUT_TEXTS[text]
    assert decoded == layout
    assert (decoded.tiling.tiles, decoded.warp_dims, decoded.lane_dims, decoded.vector_dim) == (
        layout.tiling.tiles,
        layout.warp_dims,
        layout.lane_dims,
        layout.vector_dim,
    )


def test_decoding_a_named_layout_gives_jax_constant(context: ir.Context) -> None:
    encode._layouts_by_text.clear()
    with context:
        attr = jax_layouts.to_layout_attr(fa.WGMMA_LAYOUT_UPCAST_2X)
        assert encode.decode_layout(attr) is fa.WGMMA_LAYOUT_UPCAST_2X
        # Any other layout still decodes, through JAX.
        other = fa.tmem_native_layout(8)
        assert other not in NAMED.values()
        assert encode.decode_layout(jax_layouts.to_layout_attr(other)) == other


_TILE = st.lists(st.sampled_from([1, 2, 3, 4, 8, 16, 64]), min_size=1, max_size=3)


@given(
    tiles=st.lists(_TILE, min_size=1, max_size=4),
    shape=st.lists(st.sampled_from([1, 2, 4, 6, 8, 16, 24, 64, 128, 256]), max_size=4),
)
def test_whether_a_tiling_applies_is_what_jax_says(
    tiles: list[list[int]], shape: list[int]
) -> None:
    # Tiles of decreasing rank, as a Tiling requires.
    tiles = sorted(tiles, key=len, reverse=True)
    tiling = fa.Tiling(tuple(tuple(t) for t in tiles))
    try:
        tiling.tile_shape(tuple(shape))
    except ValueError:
        applies = False
    else:
        applies = True
    assert hl._tiling_applies.__wrapped__(tiling, tuple(shape)) is applies


@pytest.mark.parametrize("name", sorted(NAMED))
def test_named_layouts_apply_where_jax_says(name: str) -> None:
    tiling = NAMED[name].tiling
    for shape in [(64,), (128,), (8, 8), (64, 256), (128, 8), (2, 128, 64), (16, 2), (3, 64, 16)]:
        try:
            tiling.tile_shape(shape)
        except ValueError:
            applies = False
        else:
            applies = True
        assert hl._tiling_applies.__wrapped__(tiling, shape) is applies, shape


# --- layouts built without JAX's re-checks (hw.building) ------------------------


def _same(ours: object, jax_s: object) -> None:
    """Equal to JAX's, field by field (built without JAX's constructor, every field of
    its class must be set), and the same in what the lowering derives from it."""
    assert type(ours) is type(jax_s)
    assert ours == jax_s and hash(ours) == hash(jax_s) and repr(ours) == repr(jax_s)
    for field in dataclasses.fields(type(jax_s)):
        assert getattr(ours, field.name) == getattr(jax_s, field.name), field.name
    if isinstance(ours, fa.TiledLayout) and isinstance(jax_s, fa.TiledLayout):
        for derived in ("tiled_tiling_shape", "vector_length", "base_tile_shape"):
            assert getattr(ours, derived) == getattr(jax_s, derived), derived
        assert ours.tiling.tile_shape(ours.base_tile_shape) == jax_s.tiling.tile_shape(
            jax_s.base_tile_shape
        )


def test_the_fields_smalto_sets_are_jax_s_fields() -> None:
    # ``hw.building`` sets these and no others: a JAX that adds one must be looked at.
    assert [f.name for f in dataclasses.fields(fa.TiledLayout)] == [
        "tiling",
        "warp_dims",
        "lane_dims",
        "vector_dim",
        "unreduced_operation",
    ]
    assert [f.name for f in dataclasses.fields(fa.Tiling)] == ["tiles"]
    assert [f.name for f in dataclasses.fields(fa.WGStridedFragLayout)] == ["shape", "vec_size"]


@given(
    shape=st.lists(st.sampled_from([1, 2, 3, 8, 64, 128, 256, 384]), min_size=1, max_size=4),
    vec=st.sampled_from([1, 2, 4, 8, 16]),
)
def test_strided_layouts_are_jax_s_and_refused_where_jax_refuses(
    shape: list[int], vec: int
) -> None:
    try:
        jax_s = fa.WGStridedFragLayout(tuple(shape), vec)
    except ValueError:
        with pytest.raises(ValueError):
            building.strided(tuple(shape), vec)
    else:
        _same(building.strided(tuple(shape), vec), jax_s)


def _checked(layout: fa.TiledLayout) -> fa.TiledLayout:
    """The layout as JAX's constructor makes it, canonicalization checked."""
    return fa.TiledLayout(layout.tiling, layout.warp_dims, layout.lane_dims, layout.vector_dim)


@pytest.mark.parametrize("bitwidth", [4, 8, 16, 32, 64])
def test_wide_rows_is_canonical(bitwidth: int) -> None:
    layout = hl.wide_rows.__wrapped__(bitwidth)
    _same(layout, _checked(layout))


@pytest.mark.parametrize("rank", [1, 2, 3, 4])
@pytest.mark.parametrize("vec", [1, 2, 4, 8, 16, 32])
def test_minor_only_is_canonical(rank: int, vec: int) -> None:
    layout = hl.minor_only.__wrapped__(rank, vec)
    _same(layout, _checked(layout))


def test_the_m64_collective_layout_is_jax_s() -> None:
    for columns in range(16, 2064, 16):
        _same(hl.m64_collective.__wrapped__(columns), tcgen05.fa_m64_collective_layout(columns))
    for columns in (8, 24, 100):
        with pytest.raises(ValueError):
            tcgen05.fa_m64_collective_layout(columns)
        with pytest.raises(ValueError):
            hl.m64_collective.__wrapped__(columns)


def test_the_reduction_table_is_what_jax_gives_today() -> None:
    assert reduction_table.TABLE.read_text() == reduction_table.source(), (
        "smalto/hw/reduction_table.py is stale: run python -m tests.helpers.reduction_table"
    )


def test_every_row_of_the_reduction_table_is_jax_s_reduce() -> None:
    rows = reduction_table.reductions()
    assert len(rows) > 200
    for (plain, axes), result in rows.items():
        layout = building.from_fields(plain)
        _same(building.reduced(layout, axes), layout.reduce(list(axes)))
        assert building.fields(layout.reduce(list(axes))) == result
    # Every named layout of rank 2 is in it, with each of its axes.
    for layout in NAMED.values():
        if len(layout.base_tile_shape) == 2:
            for axis in (0, 1):
                assert building.reduced(layout, (axis,)) is not None


def test_reductions_come_from_the_table_and_others_from_jax(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    outside = hl.lifted(fa.WGMMA_LAYOUT, 4)
    assert outside is not None and building.reduced(outside, (3,)) is None
    wide = hl.wide_rows(16)
    expected = {(outside, (3,)): outside.reduce([3]), (wide, (0,)): wide.reduce([0])}
    reduce = fa.TiledLayout.reduce

    def jax_reduce(self: fa.TiledLayout, axes: list[int]) -> fa.TiledLayout:
        assert self == outside, "a tabled reduction went to JAX"
        return reduce(self, axes)

    monkeypatch.setattr(fa.TiledLayout, "reduce", jax_reduce)
    hl.reduce_tiled.cache_clear()
    try:
        assert hl.reduce_tiled(fa.WGMMA_LAYOUT, (1,)) == fa.WGMMA_ROW_LAYOUT
        for (layout, axes), reduced in expected.items():
            assert hl.reduce_tiled(layout, axes) == reduced
    finally:
        hl.reduce_tiled.cache_clear()


def _outcome(make: Callable[..., object], *args: object) -> object:
    """What a factory gives, or the kind of error it raises."""
    try:
        return make(*args)
    except ValueError:
        return ValueError


_PACKINGS = (1, 2, 3, 4, 8, 16, 32, 64)
_COLUMNS = tuple(range(8, 1040, 8))


def test_tmem_layouts_are_jax_s_and_refused_where_jax_refuses() -> None:
    for packing in _PACKINGS:
        jax_s = _outcome(tcgen05.tmem_default_layout, packing)
        ours = _outcome(hl.tmem_default.__wrapped__, packing)
        if jax_s is ValueError:
            assert ours is ValueError
        else:
            assert isinstance(ours, Tmem)
            _same(ours.layout, jax_s)
        for columns in _COLUMNS:
            for mine, theirs in (
                (hl.tmem_half_lane, tcgen05.tmem_half_lane_layout),
                (hl.tmem_m64_collective, tcgen05.tmem_m64_collective_layout),
            ):
                jax_s = _outcome(theirs, columns, packing)
                ours = _outcome(mine.__wrapped__, columns, packing)
                if jax_s is ValueError:
                    assert ours is ValueError, (mine, columns, packing)
                else:
                    _same(ours, jax_s)


def test_the_tmem_layout_of_a_shape_is_jax_s() -> None:
    for rows in (32, 64, 128, 256):
        for columns in (8, 16, 24, 64, 100, 128, 256, 512):
            for packing in _PACKINGS:
                for collective in (False, True):
                    shape = (rows, columns)
                    jax_s = _outcome(tcgen05._infer_tmem_layout, shape, collective, packing)
                    ours = _outcome(hl.tmem_for_shape.__wrapped__, shape, collective, packing)
                    if jax_s is ValueError:
                        assert ours is ValueError, (shape, collective, packing)
                    else:
                        assert isinstance(ours, Tmem)
                        _same(ours.layout, jax_s)
    with pytest.raises(ValueError):
        hl.tmem_for_shape.__wrapped__((2, 64, 64), False, 1)


@given(
    tiling=st.lists(st.sampled_from([1, 2, 8, 16, 64, 128]), max_size=3),
    shape=st.lists(st.sampled_from([1, 2, 8, 24, 64, 128, 256]), max_size=4),
)
def test_whether_an_smem_tiling_applies_is_what_jax_says(
    tiling: list[int], shape: list[int]
) -> None:
    try:
        lc.TileTransform(tuple(tiling)).transform_shape(tuple(shape))
    except ValueError:
        applies = False
    else:
        applies = True
    assert hl._smem_tiling_applies.__wrapped__(tuple(tiling), tuple(shape)) is applies


def _family_texts() -> list[str]:
    """Attribute texts of the families ``hw.encode`` reads off their text, valid and not."""
    texts = []
    for packing in (1, 2, 3, 4, 8, 16):
        texts.append(
            f"#mosaic_gpu.TiledLayout<[[128, {packing}], [32, {packing}]], warp_dims = [-4], "
            "lane_dims = [-2], vector_dim = -1>"
        )
        for columns in (8, 16, 32, 48, 64, 128, 256, 512):
            for half in (columns // 2, columns // 4):
                texts.append(
                    f"#mosaic_gpu.TiledLayout<[[64, {columns}], [16, {half}], [{packing}]], "
                    "warp_dims = [-5], lane_dims = [-4, -3], vector_dim = -1>"
                )
                texts.append(
                    f"#mosaic_gpu.TiledLayout<[[64, {columns}], [32, {half}], [{packing}]], "
                    "warp_dims = [-4, -5], lane_dims = [-3], vector_dim = -1>"
                )
                texts.append(
                    f"#mosaic_gpu.TiledLayout<[[64, {columns}], [32, {half}], [8, 8], [2]], "
                    "warp_dims = [-6, -7], lane_dims = [-3, -2], vector_dim = -1>"
                )
    return texts


def test_layouts_of_a_family_decode_as_jax_decodes_them(context: ir.Context) -> None:
    decoded_here = 0
    with context:
        for text in _family_texts():
            try:
                attr = ir.Attribute.parse(text)
                jax_s = jax_layouts.from_layout_attr(attr)
            except (ValueError, RuntimeError):  # JAX refuses it: so must smalto
                assert encode._family_layout(text) is None, text
                continue
            assert str(attr) == text
            ours = encode._family_layout(text)
            if ours is not None:
                decoded_here += 1
                _same(ours, jax_s)
            encode._layouts_by_text.clear()
            _same(encode.decode_layout(attr), jax_s)
    assert decoded_here > 100


def test_the_mma_operand_table_is_what_jax_gives_today() -> None:
    assert mma_operand_table.TABLE.read_text() == mma_operand_table.source(), (
        "smalto/hw/mma_operand_table.py is stale: run python -m tests.helpers.mma_operand_table"
    )
    assert {8, 16, 32} <= set(hw_mma_operand_table.OPERANDS)


def test_mma_operands_are_told_as_jax_s_layouts_tell_them() -> None:
    """``schedule._mma_operand`` (from the table) says of every layout what comparing it
    with JAX's ``MMALayouts`` says."""
    candidates: list[fa.TiledLayout] = [*NAMED.values(), *reduction_table.catalog()]
    for bitwidth in (4, 8, 16, 32):
        lhs, rhs = schedule._mma_operands(bitwidth)
        candidates += [*lhs, *rhs]
    tmem_mirror = tcgen05.TMEMLayout(
        fa.WGMMA_LAYOUT.tiling, fa.WGMMA_LAYOUT.warp_dims, fa.WGMMA_LAYOUT.lane_dims, -1
    )
    candidates.append(tmem_mirror)
    told = 0
    for bitwidth in (4, 8, 16, 32):
        lhs, rhs = schedule._mma_operands(bitwidth)
        for layout in candidates:
            expected = "lhs" if layout in lhs else "rhs" if layout in rhs else None
            assert schedule._mma_operand(layout, bitwidth) == expected, (layout, bitwidth)
            told += expected is not None
    assert told >= 24


def test_attribute_texts_are_jax_s_for_the_layouts_smalto_offers(context: ir.Context) -> None:
    with context:
        for layout in reduction_table.catalog():
            assert encode.attribute_text(layout) == str(jax_layouts.to_layout_attr(layout))
