"""Names for layouts, for messages: WGMMA_LAYOUT rather than a page of tiling."""

from __future__ import annotations

from jax.experimental.mosaic.gpu import fragmented_array as fa
from jax.experimental.mosaic.gpu import tcgen05

from smalto.hw.values import Const, Reg, Smem, Tmem

REGISTER_LAYOUTS: dict[str, fa.TiledLayout] = {
    "WGMMA_LAYOUT": fa.WGMMA_LAYOUT,
    "WGMMA_TRANSPOSED_LAYOUT": fa.WGMMA_TRANSPOSED_LAYOUT,
    "WGMMA_ROW_LAYOUT": fa.WGMMA_ROW_LAYOUT,
    "WGMMA_COL_LAYOUT": fa.WGMMA_COL_LAYOUT,
    "WGMMA_LAYOUT_8BIT": fa.WGMMA_LAYOUT_8BIT,
    "WGMMA_LAYOUT_ACC_32BIT": fa.WGMMA_LAYOUT_ACC_32BIT,
    "WGMMA_LAYOUT_UPCAST_2X": fa.WGMMA_LAYOUT_UPCAST_2X,
    "WGMMA_LAYOUT_UPCAST_4X": fa.WGMMA_LAYOUT_UPCAST_4X,
    "TCGEN05_LAYOUT": fa.TCGEN05_LAYOUT,
    "TCGEN05_TRANSPOSED_LAYOUT": fa.TCGEN05_TRANSPOSED_LAYOUT,
    "TCGEN05_ROW_LAYOUT": fa.TCGEN05_ROW_LAYOUT,
    "TCGEN05_COL_LAYOUT": fa.TCGEN05_COL_LAYOUT,
    "TMEM_NATIVE_LAYOUT": fa.TMEM_NATIVE_LAYOUT,
    "TMA_INDICES_LAYOUT": fa.TMA_INDICES_LAYOUT,
    "TMA_INDICES_4_LAYOUT": fa.TMA_INDICES_4_LAYOUT,
}
_REGISTER_NAME = {layout: name for name, layout in reversed(REGISTER_LAYOUTS.items())}


def register_layout_name(layout: fa.FragmentedLayout) -> str | None:
    if isinstance(layout, fa.TiledLayout):
        return _REGISTER_NAME.get(layout)
    return None


def _tmem_name(layout: tcgen05.TMEMLayout) -> str | None:
    for packing in (1, 2, 4, 8):
        if layout == tcgen05.tmem_default_layout(packing):
            return f"the default TMEM layout (packing {packing})"
    if layout == tcgen05.scales_layout():
        return "the TMEM scales layout"
    if layout == tcgen05.b_scales_m64_collective_layout():
        return "the collective M=64 TMEM B-scales layout"
    if layout == tcgen05.sparse_meta_layout():
        return "the TMEM sparsity-metadata layout"
    return None


def describe_value(value: Const) -> str:
    """A short, readable description of a layout value."""
    match value:
        case Reg(layout=fa.WGSplatFragLayout(shape=shape)):
            return f"a splat of shape {shape}"
        case Reg(layout=fa.WGStridedFragLayout(vec_size=vec)):
            return f"a strided layout (vector size {vec})"
        case Reg(layout=layout):
            return register_layout_name(layout) or str(layout)
        case Smem(tiling=None, swizzle=None):
            return "untiled (no SMEM transforms)"
        case Smem(tiling=None, swizzle=swizzle):
            return f"untiled, swizzled by {swizzle} bytes"
        case Smem(tiling=tiling, swizzle=None):
            return f"tiled by {tiling}, unswizzled"
        case Smem(tiling=tiling, swizzle=swizzle):
            return f"tiled by {tiling}, swizzled by {swizzle} bytes"
        case Tmem(layout=layout):
            return _tmem_name(layout) or str(layout)
    return str(value)
