"""Layout values to and from MLIR attributes, in JAX's encoding.

Attributes are built once per distinct value and module (they belong to the
module's context): kernels reuse few layouts, and building an attribute through
the bindings costs far more than a dictionary lookup.
"""

from __future__ import annotations

import re

from jax._src.lib import mosaic_gpu_dialect as mgpu
from jax._src.lib.mlir import ir
from jax.experimental.mosaic.gpu import fragmented_array as fa
from jax.experimental.mosaic.gpu import launch_context as lc
from jax.experimental.mosaic.gpu import layouts as jax_layouts
from jax.experimental.mosaic.gpu import tcgen05

from smalto.basics import percontext
from smalto.hw import building
from smalto.hw import layouts as hl
from smalto.hw.values import Reg, Smem, Tmem


class AttributeCache:
    """Builds each distinct layout/transform attribute once (within one context).

    The attributes are kept with the context (``percontext``), so that the
    next module inferred in it finds them built; kept as the bindings' raw
    pointers (capsules), since an attribute object would keep its context
    alive, and with it the cache.
    """

    def __init__(self, context: ir.Context) -> None:
        self._layouts: dict[object, ir.Attribute] = {}
        self._transforms: dict[Smem, ir.Attribute] = {}
        self._kept_layouts: dict[object, object] = percontext.cache(context, "layout attributes")
        self._kept_transforms: dict[Smem, object] = percontext.cache(
            context, "transform attributes"
        )

    def layout(self, value: Reg | Tmem) -> ir.Attribute:
        attr = self._layouts.get(value)
        if attr is None:
            kept = self._kept_layouts.get(value)
            if kept is not None:
                attr = ir.Attribute._CAPICreate(kept)
            else:
                # (Not parsed from its text: the first parse in a process costs
                # 0.2 ms, more than building a kernel's few layouts.)
                attr = jax_layouts.to_layout_attr(value.layout)
                self._kept_layouts[value] = attr._CAPIPtr
            self._layouts[value] = attr
        return attr

    def transforms(self, value: Smem) -> ir.Attribute:
        """``[tile]``, ``[tile, swizzle]``, ``[swizzle]`` or ``[]``: only what the value has."""
        attr = self._transforms.get(value)
        if attr is None:
            kept = self._kept_transforms.get(value)
            if kept is not None:
                attr = ir.Attribute._CAPICreate(kept)
            else:
                parts = []
                if value.tiling is not None:
                    parts.append(mgpu.TileTransformAttr.get(value.tiling))
                if value.swizzle is not None:
                    parts.append(mgpu.SwizzleTransformAttr.get(mgpu.SwizzlingMode(value.swizzle)))
                attr = ir.ArrayAttr.get(parts)
                self._kept_transforms[value] = attr._CAPIPtr
            self._transforms[value] = attr
        return attr


# Decoded attributes, by their text: decoding through JAX costs tens of
# microseconds, printing an attribute a few. Kernels (and successive kernels)
# name the same few layouts; the text determines the value, so the cache
# holds only immutable keys and values. Bounded, lest a long session grow it.
_DECODED_LIMIT = 4096
_layouts_by_text: dict[str, fa.FragmentedLayout] = {}
_transforms_by_text: dict[str, Smem] = {}


def attribute_text(layout: fa.TiledLayout) -> str:
    """The text of a tiled layout's attribute, as JAX's ``to_layout_attr`` makes it and
    the bindings print it (no dims of a partial reduction)."""

    def dims(values: tuple[int | fa.Replicated | fa.Unreduced, ...]) -> str:
        return ", ".join(
            str(d) if isinstance(d, int) else f"#mosaic_gpu.Replicated<times = {d.times}>"
            for d in values
        )

    tiles = ", ".join("[" + ", ".join(map(str, tile)) + "]" for tile in layout.tiling.tiles)
    return (
        f"#mosaic_gpu.TiledLayout<[{tiles}], warp_dims = [{dims(layout.warp_dims)}], "
        f"lane_dims = [{dims(layout.lane_dims)}], vector_dim = {layout.vector_dim}>"
    )


# JAX's named register layouts by the text of their attribute: the layouts kernels
# name far more than any other. JAX's decoder builds and canonicalizes a new layout
# each time (0.1-0.3 ms the first time in a process); the text picks out JAX's own
# constant instead, the same value. ``tests/jax_parity/test_layout_facts.py`` holds
# each text to the attribute JAX makes of its constant, and every named layout of
# JAX's to a text here.
NAMED_LAYOUT_TEXTS: dict[str, fa.TiledLayout] = {
    attribute_text(layout): layout
    for layout in (
        fa.WGMMA_LAYOUT,
        fa.WGMMA_LAYOUT_8BIT,
        fa.WGMMA_LAYOUT_ACC_32BIT,
        fa.WGMMA_LAYOUT_UPCAST_2X,
        fa.WGMMA_LAYOUT_UPCAST_4X,
        fa.WGMMA_ROW_LAYOUT,
        fa.WGMMA_COL_LAYOUT,  # TCGEN05_COL_LAYOUT is the same layout
        fa.WGMMA_TRANSPOSED_LAYOUT,
        fa.TCGEN05_LAYOUT,
        fa.TCGEN05_ROW_LAYOUT,
        fa.TCGEN05_TRANSPOSED_LAYOUT,
        fa.TMEM_NATIVE_LAYOUT,
        fa.TMA_INDICES_LAYOUT,
        fa.TMA_INDICES_4_LAYOUT,
    )
}


# The families of layouts made by a formula, by the text of their attribute:
# ``tcgen05``'s TMEM layouts and the register layout of a collective M=64 TMEM
# load (most Blackwell kernels cast to one). Read off the text and made by
# ``hw.layouts``, which refuses what JAX's constructor refuses (JAX's decoder
# then says why).
def _tiled_text(tiles: str, warps: str, lanes: str) -> re.Pattern[str]:
    return re.compile(
        rf"#mosaic_gpu\.TiledLayout<\[{tiles}\], warp_dims = \[{warps}\], "
        rf"lane_dims = \[{lanes}\], vector_dim = -1>"
    )


_TMEM_DEFAULT = _tiled_text(r"\[128, (\d+)\], \[32, (\d+)\]", "-4", "-2")
_TMEM_HALF_LANE = _tiled_text(r"\[64, (\d+)\], \[16, (\d+)\], \[(\d+)\]", "-5", "-4, -3")
_TMEM_M64_COLLECTIVE = _tiled_text(r"\[64, (\d+)\], \[32, (\d+)\], \[(\d+)\]", "-4, -5", "-3")
_M64_COLLECTIVE = _tiled_text(r"\[64, (\d+)\], \[32, (\d+)\], \[8, 8\], \[2\]", "-6, -7", "-3, -2")


def _family_layout(text: str) -> fa.TiledLayout | None:
    """The register layout an attribute of one of those families names, else None."""
    made: fa.TiledLayout | None = None
    try:
        if found := _TMEM_DEFAULT.fullmatch(text):
            packing, again = map(int, found.groups())
            made = hl.tmem_default(packing).layout if packing == again else None
        elif found := _TMEM_HALF_LANE.fullmatch(text):
            columns, half, packing = map(int, found.groups())
            made = hl.tmem_half_lane(columns, packing) if half * 2 == columns else None
        elif found := _TMEM_M64_COLLECTIVE.fullmatch(text):
            columns, half, packing = map(int, found.groups())
            made = hl.tmem_m64_collective(columns, packing) if half * 2 == columns else None
        elif found := _M64_COLLECTIVE.fullmatch(text):
            columns, half = map(int, found.groups())
            made = hl.m64_collective(columns) if half * 2 == columns else None
    except ValueError:
        return None
    if made is None:
        return None
    # Decoded as a register layout: a TMEM layout's mirror has its fields.
    return building.canonical_tiled(
        made.tiling.tiles, made.warp_dims, made.lane_dims, made.vector_dim
    )


def decode_layout(attr: ir.Attribute) -> fa.FragmentedLayout:
    """A register layout from its attribute (raises NotImplementedError if unknown)."""
    text = str(attr)
    layout = _layouts_by_text.get(text)
    if layout is None:
        layout = (
            NAMED_LAYOUT_TEXTS.get(text)
            or _family_layout(text)
            or jax_layouts.from_layout_attr(attr)
        )
        if len(_layouts_by_text) >= _DECODED_LIMIT:
            _layouts_by_text.clear()
        _layouts_by_text[text] = layout
    return layout


def decode_tmem_layout(attr: ir.Attribute) -> tcgen05.TMEMLayout:
    layout = decode_layout(attr)
    if not isinstance(layout, fa.TiledLayout):
        raise ValueError(f"a TMEM layout must be tiled, got {attr}")
    return tcgen05.TMEMLayout(layout.tiling, layout.warp_dims, layout.lane_dims, layout.vector_dim)


def decode_transforms(attrs: ir.ArrayAttr) -> Smem:
    """The SMEM value of a transform list: ``[]``, ``[tile]``, ``[tile, swizzle]`` or ``[swizzle]``.

    A tile alone means unswizzled; ``swizzle<16>`` (no swizzle) reads as none.
    Raises NotImplementedError for other lists, ValueError for a bad swizzle.
    """
    text = str(attrs)
    decoded = _transforms_by_text.get(text)
    if decoded is None:
        decoded = _decode_transforms(attrs)
        if len(_transforms_by_text) >= _DECODED_LIMIT:
            _transforms_by_text.clear()
        _transforms_by_text[text] = decoded
    return decoded


def _swizzle_bytes(mode: mgpu.SwizzlingMode) -> int | None:
    return None if mode == mgpu.SwizzlingMode.kNoSwizzle else int(mode)


def _decode_transforms(attrs: ir.ArrayAttr) -> Smem:
    transforms = [jax_layouts.from_transform_attr(a) for a in attrs]
    match transforms:
        case []:
            return Smem(None, None)
        case [lc.TileTransform() as tile]:
            return Smem(tuple(tile.tiling), None)
        case [lc.TileTransform() as tile, mgpu.SwizzlingMode() as swizzle]:
            return Smem(tuple(tile.tiling), _swizzle_bytes(swizzle))
        case [mgpu.SwizzlingMode() as swizzle]:
            return Smem(None, _swizzle_bytes(swizzle))
    raise NotImplementedError(f"Unsupported transforms {transforms}")
