"""Layouts and SMEM transforms written as JAX's pass writes them in its errors.

Tools and tests match JAX 0.12.0.1's failure messages word for word, and those
name layouts with ``layouts.pprint_layout`` (``WGMMA``,
``WGStridedFragLayout(shape=(64, 64), vec_size=2)``) and refs by their
transforms (``ref with transforms (TilingTransform((8, 64)), SwizzleTransform(128))``).
"""

from __future__ import annotations

from jax.experimental.mosaic.gpu import layouts as jax_layouts

from smalto.hw import layouts as hl
from smalto.hw.names import describe_value
from smalto.hw.values import Const, Reg, Smem, Tmem


def layout_text(value: Const) -> str:
    """A register (or TMEM) layout as JAX's messages print it; a tiled layout JAX has no
    name for by smalto's name for it (``tiled (128)(32)(1) ...``), not its repr."""
    match value:
        case Reg(layout=layout):
            text = jax_layouts.pprint_layout(layout)
            if text.startswith("TiledLayout("):
                return describe_value(value)
            return text
        case Tmem():
            return describe_value(value)
    return str(value)


def smem_swizzle(value: Smem) -> int | None:
    """The value's swizzle in bytes, ``None`` when unswizzled."""
    # Read by name: the SMEM value carries its swizzle (jax 0.12 semantics);
    # 16 bytes is how "no swizzle" used to be spelled.
    swizzle = getattr(value, "swizzle", None)
    return None if swizzle in (None, 16) else int(swizzle)


def ref_text(value: Smem) -> str:
    """An SMEM ref's transforms as JAX's transfer error names them."""
    tiling, swizzle = value.tiling, smem_swizzle(value)
    if tiling is None:
        if swizzle is None:
            return "untransformed ref"
        return f"ref with transforms (SwizzleTransform({swizzle}),)"
    if swizzle is None:
        return f"ref with transforms (TilingTransform({tuple(tiling)}),)"
    return f"ref with transforms (TilingTransform({tuple(tiling)}), SwizzleTransform({swizzle}))"


def tile_transform_text(tiling: tuple[int, ...]) -> str:
    """A tiling as JAX prints its ``TileTransform``."""
    return f"TileTransform(tiling={tuple(tiling)}, rounding=None)"


def does_not_fit(op_name: str, what: str, value: Const, shape: tuple[int, ...]) -> str:
    """JAX's sentence for an op that imposes a layout its value's shape cannot take."""
    # JAX's sentence, with the layout by name where JAX prints a repr.
    match value:
        case Reg() if op_name == "mosaic_gpu.layout_cast":
            return (
                f"Cannot cast to layout {layout_text(value)}: the layout is not compatible "
                f"with the operand shape {shape}."
            )
        case Reg():
            return (
                f"Cannot assign layout {layout_text(value)} to {what} of `{op_name}`: the "
                f"layout is not compatible with the shape {shape}."
            )
        case Tmem() if op_name == "mosaic_gpu.tmem_layout_cast":
            return (
                f"Cannot cast to TMEM layout {layout_text(value)} in `{op_name}`: the layout is "
                f"not compatible with the operand shape {shape}."
            )
        case Tmem():
            return (
                f"Cannot assign TMEM layout {layout_text(value)} to {what} of `{op_name}`: the "
                f"layout is not compatible with the shape {shape}."
            )
        case Smem(tiling=tiling):
            tiled = "empty tiling" if not tiling else f"tiling {tile_transform_text(tiling)}"
            swizzle = smem_swizzle(value)
            swizzled = "no swizzle" if swizzle is None else f"{swizzle} swizzle"
            return f"Cannot apply {tiled} with {swizzled} to memref with shape {shape}."
    return f"Cannot assign {value} to {what} of `{op_name}` (shape {shape})."


def does_not_fit_type(value: Const, shape: tuple[int, ...], bitwidth: int | None) -> str | None:
    """Why a value of this shape and element width cannot take ``value``, in the words JAX's
    lowering raises it with (``TMEMLayout.check_type``, the tiling of a register layout);
    None where it can."""
    if isinstance(value, Tmem):
        if bitwidth is None:
            return None
        try:
            value.layout.check_type(shape, bitwidth)
        except ValueError as error:
            return " ".join(str(error).split())
        return None
    if isinstance(value, Reg) and not hl.fits(value, shape):
        layout = value.layout
        try:
            layout.registers_shape(shape)
        except (ValueError, AssertionError) as error:
            return " ".join(str(error).split()) or f"{shape} does not fit the layout"
        return f"{shape} does not fit the layout"
    return None
