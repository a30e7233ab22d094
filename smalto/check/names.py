"""How messages name layouts: JAX's named register layouts by name, the rest in short."""

from __future__ import annotations

from jax.experimental.mosaic.gpu import fragmented_array as fa

from smalto.check.semantics import Layout
from smalto.check.smem import Transforms
from smalto.hw.names import describe_value
from smalto.hw.values import Reg, Tmem


def describe(layout: Layout | None) -> str:
    match layout:
        case None:
            return "nothing"
        case Reg(layout=inner):
            name = NAMED.get(inner)
            if name is not None:
                return name
            if isinstance(inner, fa.WGSplatFragLayout):
                return f"splat{inner.shape}"
            if isinstance(inner, fa.WGStridedFragLayout):
                return f"strided{inner.shape}/vec{inner.vec_size}"
            return describe_value(layout)  # a name, or a compact form: never a repr
        case Tmem():
            return describe_value(layout)  # TMEM default, TMEM half_lane, ...
        case Transforms(tiling=tiling, swizzle=swizzle):
            tiled = "untiled" if tiling is None else f"tiled {tiling}"
            if swizzle is not None:
                return f"{tiled}, swizzle {swizzle}"
            return tiled if tiling is None else f"{tiled}, no swizzle"
    return str(layout)


NAMED: dict[object, str] = {}
for _name_, _layout_ in (
    ("WGMMA", fa.WGMMA_LAYOUT),
    ("WGMMA_8BIT", fa.WGMMA_LAYOUT_8BIT),
    ("WGMMA_TRANSPOSED", fa.WGMMA_TRANSPOSED_LAYOUT),
    ("WGMMA_ROW", fa.WGMMA_ROW_LAYOUT),
    ("WGMMA_COL", fa.WGMMA_COL_LAYOUT),
    ("WGMMA_UPCAST_2X", fa.WGMMA_LAYOUT_UPCAST_2X),
    ("WGMMA_UPCAST_4X", fa.WGMMA_LAYOUT_UPCAST_4X),
    ("TCGEN05", fa.TCGEN05_LAYOUT),
    ("TCGEN05_TRANSPOSED", fa.TCGEN05_TRANSPOSED_LAYOUT),
    ("TCGEN05_ROW", fa.TCGEN05_ROW_LAYOUT),
    ("TCGEN05_COL", fa.TCGEN05_COL_LAYOUT),
    ("TMEM_NATIVE", fa.TMEM_NATIVE_LAYOUT),
    ("TMA_INDICES", fa.TMA_INDICES_LAYOUT),
    ("TMA_INDICES_4", fa.TMA_INDICES_4_LAYOUT),
):
    NAMED.setdefault(_layout_, _name_)  # equal layouts keep their first name
