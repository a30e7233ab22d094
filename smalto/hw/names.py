"""Names for layouts in messages: ``WGMMA``, ``TMEM half_lane``, ``tiled 8×64 + swizzle 128``.

A kernel author knows layouts by the names JAX and Pallas give them
(``plgpu.Layout.WGMMA``, ``WGMMA.reduce(1)``, ``tcgen05.tmem_half_lane_layout``),
never by the page of tiling a ``TiledLayout`` prints. Every layout a message
shows goes through ``describe_value``: the name where there is one, else a
compact form (``tiled (64, 8)(16, 8)(8, 8)(2) warps -7 lanes -3,-2 vector -1``),
never a Python repr. ``pallas_layout`` spells a register layout as Pallas code.
"""

from __future__ import annotations

from collections.abc import Callable
from functools import cache, lru_cache

from jax.experimental.mosaic.gpu import fragmented_array as fa
from jax.experimental.mosaic.gpu import tcgen05

from smalto.basics.records import value_class
from smalto.hw.values import Const, Reg, Smem, Tmem

# Named register layouts, by the names JAX's messages and Pallas' ``plgpu.Layout`` use
# (with ``_ROW``/``_COL`` for the reductions of a 2D layout over its columns/rows).
# Equal layouts keep their first name.
REGISTER_LAYOUTS: dict[str, fa.TiledLayout] = {
    "WGMMA": fa.WGMMA_LAYOUT,
    "WGMMA_TRANSPOSED": fa.WGMMA_TRANSPOSED_LAYOUT,
    "WGMMA_ROW": fa.WGMMA_ROW_LAYOUT,
    "WGMMA_COL": fa.WGMMA_COL_LAYOUT,
    "WGMMA_8BIT": fa.WGMMA_LAYOUT_8BIT,
    "WGMMA_ACC_32BIT": fa.WGMMA_LAYOUT_ACC_32BIT,
    "WGMMA_UPCAST_2X": fa.WGMMA_LAYOUT_UPCAST_2X,
    "WGMMA_UPCAST_4X": fa.WGMMA_LAYOUT_UPCAST_4X,
    "TCGEN05": fa.TCGEN05_LAYOUT,
    "TCGEN05_TRANSPOSED": fa.TCGEN05_TRANSPOSED_LAYOUT,
    "TCGEN05_ROW": fa.TCGEN05_ROW_LAYOUT,
    "TCGEN05_COL": fa.TCGEN05_COL_LAYOUT,
    "TMEM_NATIVE": fa.TMEM_NATIVE_LAYOUT,
    "TMA_INDICES": fa.TMA_INDICES_LAYOUT,
    "TMA_INDICES_4": fa.TMA_INDICES_4_LAYOUT,
}
# Hopper's named layouts; Blackwell has these and the TCGEN05 / TMEM ones.
HOPPER_NAMES = (
    "WGMMA",
    "WGMMA_TRANSPOSED",
    "WGMMA_ROW",
    "WGMMA_COL",
    "WGMMA_8BIT",
    "WGMMA_UPCAST_2X",
    "WGMMA_UPCAST_4X",
)
_REGISTER_NAME = {layout: name for name, layout in reversed(REGISTER_LAYOUTS.items())}

# How Pallas spells each named layout (``plgpu`` is ``jax.experimental.pallas.mosaic_gpu``).
_PALLAS = {
    "WGMMA": "plgpu.Layout.WGMMA",
    "WGMMA_TRANSPOSED": "plgpu.Layout.WGMMA_TRANSPOSED",
    "WGMMA_ROW": "plgpu.Layout.WGMMA.reduce(1)",
    "WGMMA_COL": "plgpu.Layout.WGMMA.reduce(0)",
    "WGMMA_8BIT": "plgpu.Layout.WGMMA_8BIT",
    "WGMMA_ACC_32BIT": "plgpu.Layout._WGMMA_ACC_32BIT",
    "WGMMA_UPCAST_2X": "plgpu.Layout.WGMMA_UPCAST_2X",
    "WGMMA_UPCAST_4X": "plgpu.Layout.WGMMA_UPCAST_4X",
    "TCGEN05": "plgpu.Layout.TCGEN05",
    "TCGEN05_TRANSPOSED": "plgpu.Layout.TCGEN05_TRANSPOSED",
    "TCGEN05_ROW": "plgpu.Layout.TCGEN05.reduce(1)",
    "TCGEN05_COL": "plgpu.Layout.TCGEN05.reduce(0)",
    "TMEM_NATIVE": "plgpu.Layout.TCGEN05_TMEM_NATIVE",
    "TMA_INDICES": "plgpu.Layout.TMA_INDICES",
    "TMA_INDICES_4": "plgpu.Layout.TMA_INDICES_4",
}


def register_layout_name(layout: fa.FragmentedLayout) -> str | None:
    """``WGMMA``, ``TCGEN05_ROW``, ``TCGEN05_M64_COLLECTIVE(128)``...; None if it has no name."""
    if isinstance(layout, fa.TiledLayout):
        return _REGISTER_NAME.get(layout) or _parametrized_name(layout)
    return None


@cache
def _parametrized_name(layout: fa.TiledLayout) -> str | None:
    """Names of the layouts JAX builds from a parameter (a column count, a vector length)."""
    tiles = layout.tiling.tiles
    if len(tiles[0]) == 2 and tiles[0][1] % 16 == 0:
        columns = tiles[0][1]
        if layout == tcgen05.fa_m64_collective_layout(columns):
            return f"TCGEN05_M64_COLLECTIVE({columns})"
        for packing in (1, 2, 4, 8):
            native = _built(tcgen05.tmem_m64_collective_layout, columns, packing)
            if native is not None and layout == native.as_tiled_layout():
                return f"TCGEN05_M64_COLLECTIVE_NATIVE({columns})"
    vector = layout.vector_length
    if vector and layout == fa.tmem_native_layout(vector):
        return f"TMEM_NATIVE({vector})"
    return _derived_names().get(layout)


@cache
def _derived_names() -> dict[fa.TiledLayout, str]:
    """The reductions of the named 2D layouts, and their keep-dims forms (a reduction
    with ``keepdims=True``): ``TMEM_NATIVE.reduce(1)``, ``WGMMA_ROW keepdims``."""
    from smalto.hw.layouts import keep_dims

    names: dict[fa.TiledLayout, str] = {}
    for name, layout in REGISTER_LAYOUTS.items():
        if len(layout.base_tile_shape) != 2:
            continue
        for axis in (0, 1):
            reduced = layout.reduce((axis,))
            reduced_name = _REGISTER_NAME.get(reduced, f"{name}.reduce({axis})")
            names.setdefault(reduced, reduced_name)
            names.setdefault(keep_dims(layout, axis), f"{reduced_name} keepdims")
    return names


def _built[T](builder: Callable[..., T], *args: int) -> T | None:
    """``builder(*args)``, or None where JAX refuses those arguments (a name is never worth
    an error)."""
    try:
        return builder(*args)
    except ValueError:
        return None


def pallas_layout(value: Reg) -> str | None:
    """The Pallas expression for a register layout (``plgpu.Layout.WGMMA.reduce(1)``)."""
    layout = value.layout
    if isinstance(layout, fa.WGSplatFragLayout):
        return f"plgpu.Layout.WG_SPLAT({layout.shape})"
    if isinstance(layout, fa.WGStridedFragLayout):
        return f"plgpu.Layout.WG_STRIDED({layout.shape}, vec_size={layout.vec_size})"
    name = register_layout_name(layout)
    if name is None:
        return None
    if name in _PALLAS:
        return _PALLAS[name]
    if name.startswith("TMEM_NATIVE("):
        return f"plgpu.Layout.TCGEN05_TMEM_NATIVE{name[len('TMEM_NATIVE') :]}"
    if name.startswith("TCGEN05_M64_COLLECTIVE"):
        return f"plgpu.Layout.{name}"
    base, dot, reduction = name.partition(".reduce(")
    if dot and base in _PALLAS:
        return f"{_PALLAS[base]}.reduce({reduction}"
    return None  # keep-dims layouts: Pallas has no name for them


# --- TMEM ----------------------------------------------------------------------------


@value_class(frozen=True)
class TmemName:
    """A TMEM layout as ``tcgen05`` builds it: which builder, and its column count and packing."""

    kind: str  # default, half_lane, m64_collective, scales, b_scales_m64_collective, sparse_meta
    columns: int | None = None
    packing: int = 1

    def __str__(self) -> str:
        packed = f" (packing {self.packing})" if self.packing != 1 else ""
        return f"TMEM {self.kind}{packed}"


@cache
def tmem_name(layout: tcgen05.TMEMLayout) -> TmemName | None:
    """Which of ``tcgen05``'s TMEM layouts this is; None for any other."""
    for packing in (1, 2, 4, 8):
        if layout == tcgen05.tmem_default_layout(packing):
            return TmemName("default", None, packing)
    tiles = layout.tiling.tiles
    if len(tiles[0]) == 2 and tiles[0][0] == 64 and tiles[0][1] % 16 == 0:
        columns = tiles[0][1]
        for packing in (1, 2, 4, 8):
            if layout == _built(tcgen05.tmem_half_lane_layout, columns, packing):
                return TmemName("half_lane", columns, packing)
            if layout == _built(tcgen05.tmem_m64_collective_layout, columns, packing):
                return TmemName("m64_collective", columns, packing)
    for kind, builder in (
        ("scales", tcgen05.scales_layout),
        ("b_scales_m64_collective", tcgen05.b_scales_m64_collective_layout),
        ("sparse_meta", tcgen05.sparse_meta_layout),
    ):
        if layout == builder():
            return TmemName(kind)
    return None


# --- the compact form of anything else -------------------------------------------------


def _dim(d: int | fa.Replicated | fa.Unreduced) -> str:
    return f"×{d.times}" if isinstance(d, fa.Replicated) else str(d)


def compact_tiled(layout: fa.TiledLayout) -> str:
    """``tiled (64, 8)(16, 8)(8, 8)(2) warps -7 lanes -3,-2 vector -1``: one short line."""
    tiles = "".join(f"({', '.join(map(str, t))})" for t in layout.tiling.tiles)
    warps = ",".join(_dim(d) for d in layout.warp_dims) or "-"
    lanes = ",".join(_dim(d) for d in layout.lane_dims) or "-"
    return f"tiled {tiles} warps {warps} lanes {lanes} vector {_dim(layout.vector_dim)}"


@cache
def _tmem_native_name(layout: fa.TiledLayout) -> str | None:
    """The TMEM layout whose lanes and columns a register layout reads as they lie (what
    ``async_load_tmem`` gives without a relayout), by name: ``half_lane``."""
    try:
        as_tmem = tcgen05.TMEMLayout(
            layout.tiling, layout.warp_dims, layout.lane_dims, layout.vector_dim
        )
    except (ValueError, TypeError, AssertionError):
        return None
    named = tmem_name(as_tmem)
    if named is None:
        return None
    return named.kind if named.packing == 1 else f"{named.kind} (packing {named.packing})"


def smem_name(value: Smem) -> str:
    """``tiled 8×64 + swizzle 128``, ``tiled 8×64, no swizzle``, ``untiled``."""
    tiled = "untiled" if value.tiling is None else "tiled " + "×".join(map(str, value.tiling))
    if value.swizzle in (None, 16):  # 16 bytes: JAX's old spelling of no swizzle
        return tiled if value.tiling is None else f"{tiled}, no swizzle"
    return f"{tiled} + swizzle {value.swizzle}"


@lru_cache(maxsize=4096)
def describe_value(value: Const) -> str:
    """A layout value by name (``WGMMA``, ``splat``, ``strided ×2``, ``TMEM half_lane``,
    ``tiled 8×64 + swizzle 128``), else in a compact form.

    (Kept per value: a message names its few layouts many times, and finding a tiled
    layout's name hashes JAX's layout, a walk over its tiling; values hash once.)
    """
    match value:
        case Reg(layout=fa.WGSplatFragLayout()):
            return "splat"
        case Reg(layout=fa.WGStridedFragLayout(vec_size=vec)):
            return f"strided ×{vec}"
        case Reg(layout=layout):
            name = register_layout_name(layout)
            if name is not None:
                return name
            if isinstance(layout, fa.TiledLayout):
                native = _tmem_native_name(layout)
                return f"TMEM_NATIVE {native}" if native else compact_tiled(layout)
            return type(layout).__name__
        case Smem():
            return smem_name(value)
        case Tmem(layout=layout):
            found = tmem_name(layout)
            return str(found) if found is not None else f"TMEM {compact_tiled(layout)}"
    return type(value).__name__


def describe_value_whole(value: Const) -> str:
    """``describe_value``, with the shape a strided layout is made for (``strided ×2 over
    (64, 128)``): where a layout does not fit its value, its own shape is what is wrong."""
    if isinstance(value, Reg) and isinstance(value.layout, fa.WGStridedFragLayout):
        return f"{describe_value(value)} over {tuple(value.layout.shape)}"
    return describe_value(value)
