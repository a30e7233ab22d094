"""Reading what to draw: layout names and attributes, shapes, element types, SMEM specs."""

from __future__ import annotations

import math
import re

from jax._src.lib.mlir import ir
from jax.experimental.mosaic.gpu import fragmented_array as fa
from jax.experimental.mosaic.gpu import layouts as jax_layouts
from jax.experimental.mosaic.gpu import tcgen05

from smalto.basics.mlir import make_context
from smalto.draw.help_names import TMEM_LAYOUT_NAMES
from smalto.draw.layout_names import read_layout, smem_transforms
from smalto.hw.names import describe_value
from smalto.hw.values import Reg, Tmem

# The most elements a shape to draw may have: a picture shows every one (a warpgroup's
# registers hold at most 128 x 255 32-bit words, TMEM 128 x 512), and each costs memory.
MAX_DRAWN_ELEMENTS = 1 << 20


class SpecError(ValueError):
    """A layout, shape, type or SMEM spec that cannot be read (a usage error)."""


def layout_name(layout: fa.FragmentedLayout | tcgen05.TMEMLayout) -> str:
    """A register or TMEM layout by the name smalto prints (``WGMMA``, ``strided ×8``,
    ``splat``, ``TMEM default``), else its compact form."""
    if isinstance(layout, tcgen05.TMEMLayout):
        return describe_value(Tmem(layout))
    return describe_value(Reg(layout))


def parse_shape(text: str) -> tuple[int, ...]:
    """``64x64`` (also ``64,64`` or ``64``) as a tuple of positive ints."""
    parts = re.split(r"[x,×]", text.strip().lower())
    try:
        shape = tuple(int(p) for p in parts)
    except ValueError:
        shape = ()
    if not shape or any(d <= 0 for d in shape):
        raise SpecError(f"bad shape {text!r} (expected sizes joined by 'x', like 64x64)")
    elements = math.prod(shape)
    if elements > MAX_DRAWN_ELEMENTS:
        raise SpecError(
            f"shape {text!r} has {elements:,} elements: smalto draws at most "
            f"{MAX_DRAWN_ELEMENTS:,} (1024x1024; a warpgroup's registers hold far fewer)"
        )
    return shape


_DTYPE_BITS = {"bf16": 16, "tf32": 32, "index": 64}


def parse_dtype(text: str) -> int:
    """The bitwidth of an element type: f32, bf16, f16, f8E4M3FN, i8, i4, ..."""
    name = text.strip()
    bits = _DTYPE_BITS.get(name.lower())
    if bits is None:
        match = re.fullmatch(r"[fiu](\d+)(e\d+m\d+\w*)?", name.lower())
        bits = int(match[1]) if match else None
    if bits is None or bits <= 0 or bits > 64 or bits & (bits - 1):
        raise SpecError(f"unknown element type {text!r} (try f32, bf16, f16, f8E4M3FN, i8, i4)")
    return bits


def mlir_element_type(text: str) -> str:
    """The MLIR spelling of an element type (``bf16``, ``f32``, ``i8``, ``f8E4M3FN``), whatever
    the case it is written in."""
    name = text.strip()
    with make_context():
        for candidate in (name, name.lower(), *_FLOAT8_NAMES.get(name.lower(), ())):
            try:
                ir.Type.parse(candidate)
            except ir.MLIRError:
                continue
            return candidate
    raise SpecError(f"unknown element type {text!r} (try f32, bf16, f16, f8E4M3FN, i8, i4)")


_FLOAT8_NAMES = {
    name.lower(): (name,)
    for name in (
        "f8E4M3FN", "f8E5M2", "f8E4M3", "f8E4M3FNUZ", "f8E5M2FNUZ", "f8E4M3B11FNUZ", "f8E3M4",
        "f8E8M0FNU", "f4E2M1FN", "f6E2M3FN", "f6E3M2FN",
    )
}  # fmt: skip


def parse_register_layout(text: str, shape: tuple[int, ...], bitwidth: int) -> fa.FragmentedLayout:
    """A register layout from a name (any smalto prints, or a Pallas spelling) or an
    attribute."""
    spec = text.strip()
    if spec.startswith("#"):
        return parse_attribute(spec)
    found = read_layout(spec, shape, bitwidth)
    if not isinstance(found, Reg):
        raise SpecError(f"{text!r} is not a register layout")
    return found.layout


def parse_tmem_layout(
    text: str | None, shape: tuple[int, ...], packing: int, collective: bool
) -> tcgen05.TMEMLayout:
    """A TMEM layout from an attribute, or (None) the one JAX picks for the shape. (Names
    are read by ``layout_names``.)"""
    if text is None:
        try:
            return tcgen05._infer_tmem_layout(shape, collective, packing)
        except ValueError as error:
            raise SpecError(f"no TMEM layout for shape {shape}: {error}") from None
    if text.strip().startswith("#"):
        layout = parse_attribute(text.strip())
        if not isinstance(layout, fa.TiledLayout):
            raise SpecError("a TMEM layout must be a tiled layout")
        return tcgen05.TMEMLayout(
            layout.tiling, layout.warp_dims, layout.lane_dims, layout.vector_dim
        )
    raise SpecError(
        f"unknown TMEM layout {text!r}; expected {', '.join(TMEM_LAYOUT_NAMES)} or an attribute"
    )


def parse_attribute(text: str) -> fa.FragmentedLayout:
    """A register layout attribute (JAX reads no TMEM layout attribute: it says
    NotImplementedError, here a ``SpecError``)."""
    with make_context(), ir.Location.unknown():
        try:
            attribute = ir.Attribute.parse(text)
        except ir.MLIRError as error:
            message = " ".join(str(error).split())
            raise SpecError(f"cannot parse layout attribute: {message}") from None
        try:
            return jax_layouts.from_layout_attr(attribute)
        except (NotImplementedError, ValueError) as error:
            raise SpecError(f"not a Mosaic GPU layout: {text} ({error})") from None


def parse_smem_spec(text: str) -> tuple[tuple[int, ...] | None, int | None]:
    """``tile=8x64,swizzle=128`` (either part optional), or the transforms as smalto
    prints them (``tiled 64×8 + swizzle 128``, ``tiled 8x64, no swizzle``, ``untiled``), as
    (tiling, swizzle)."""
    printed = smem_transforms(text)
    if printed is not None:
        return printed.tiling, printed.swizzle or 16
    tiling: tuple[int, ...] | None = None
    swizzle: int | None = None
    for part in filter(None, (p.strip() for p in text.split(","))):
        key, sep, value = part.partition("=")
        key = key.strip().lower()
        if not sep:
            raise SpecError(
                f"bad SMEM spec part {part!r} (expected tile=AxB or swizzle=N, or transforms "
                "as smalto prints them: 'tiled 8×64 + swizzle 128')"
            )
        if key == "tile":
            tiling = None if value.strip().lower() in ("", "none") else parse_shape(value)
        elif key == "swizzle":
            try:
                swizzle = int(value)
            except ValueError:
                raise SpecError(f"bad swizzle {value!r} (expected 16, 32, 64 or 128)") from None
        else:
            raise SpecError(f"unknown SMEM spec key {key!r} (expected tile or swizzle)")
    return tiling, swizzle
