"""SMEM transforms as written: a tiling and a swizzle, read and judged by the checker.

jax 0.12.0.1 writes the two independently: ``[]``, ``[tile]`` (tiled, not
swizzled), ``[swizzle]`` (swizzled, not tiled) or ``[tile, swizzle]``. The
lowering reads them the same way (``swizzle<16>`` is "no swizzle"), so the
checker keeps both as given and asks of each what the lowering asks of it.
"""

from __future__ import annotations

from jax._src.lib import mosaic_gpu_dialect as mgpu
from jax._src.lib.mlir import ir
from jax.experimental.mosaic.gpu import dialect_lowering

from smalto.basics.records import record

SWIZZLES = (128, 64, 32)  # bytes; widest first, the order of JAX's MMA options
_NO_SWIZZLE = 16  # what the dialect calls no swizzle (kNoSwizzle)


@record
class Transforms:
    """An SMEM ref's transforms: a tiling (None: untiled) and a swizzle in bytes (None: none)."""

    tiling: tuple[int, ...] | None
    swizzle: int | None


UNTRANSFORMED = Transforms(None, None)


def decode_transforms(attr: ir.Attribute) -> Transforms:
    """The transforms of one entry of ``in_/out_transforms`` (or of ``with_transforms``).

    Raises ValueError for what the lowering would not read: another kind of
    transform, or more than one tile or swizzle.
    """
    tiling: tuple[int, ...] | None = None
    swizzle: int | None = None
    swizzles = 0
    for transform in ir.ArrayAttr(attr):
        if isinstance(transform, mgpu.TileTransformAttr):
            if tiling is not None:
                raise ValueError("more than one tile transform")
            tiling = tuple(mgpu.TileTransformAttr(transform).tiling)
        elif isinstance(transform, mgpu.SwizzleTransformAttr):
            swizzles += 1
            if swizzles > 1:
                raise ValueError("more than one swizzle transform")
            mode = int(mgpu.SwizzleTransformAttr(transform).swizzle)
            swizzle = None if mode == _NO_SWIZZLE else mode
        else:
            raise ValueError(f"unsupported transform {transform}")
    return Transforms(tiling, swizzle)


def _argmin(values: tuple[int, ...]) -> int:
    return min(range(len(values)), key=values.__getitem__)


def tiled_strides(strides: tuple[int, ...], tiling: tuple[int, ...]) -> tuple[int, ...] | None:
    """The strides of the ref once tiled, as the lowering computes them; None where it cannot."""
    try:
        return tuple(dialect_lowering.tile_strides(strides, tiling))
    except ValueError:
        return None


def minor_extent(value: Transforms, shape: tuple[int, ...], strides: tuple[int, ...]) -> int | None:
    """Elements along the physically minor dim: of the tile if tiled, else of the ref."""
    if value.tiling is None:
        return shape[_argmin(strides)] if shape else None
    tiled = tiled_strides(strides, value.tiling)
    if tiled is None:
        return None
    return value.tiling[_argmin(tiled[-len(value.tiling) :])]


def invalid(
    value: Transforms, shape: tuple[int, ...], strides: tuple[int, ...] | None, bitwidth: int | None
) -> str | None:
    """Why a ref of this type cannot take these transforms; None when it can.

    The tiling must tile the shape; a swizzle must fit whole in the minor dim
    (of the tile, when tiled); a ref with two unit-stride dims, or one that is
    not contiguous, cannot be swizzled or tiled.
    """
    tiling, swizzle = value.tiling, value.swizzle
    if swizzle is not None and swizzle not in SWIZZLES:
        return f"swizzle {swizzle} is not one of 32, 64, 128"
    if tiling is not None and not tiling:
        return "an empty tiling is not supported"
    if value == UNTRANSFORMED:
        return None
    if not shape:
        return "a scalar ref takes no tiling or swizzle"
    if tiling is not None:
        if len(tiling) > len(shape):
            return f"tiling {tiling} has more dims than the ref"
        if any(s % t for s, t in zip(shape[-len(tiling) :], tiling, strict=True)):
            return f"tiling {tiling} does not tile the shape {shape}"
    if strides is None or bitwidth is None:
        return None  # nothing more can be read from the type
    if min(strides) != 1:
        return "a non-contiguous ref cannot be tiled or swizzled"
    if tiling is not None and tiled_strides(strides, tiling) is None:
        return f"tiling {tiling} would tile dims that are not the minor ones"
    if swizzle is None:
        return None
    if strides.count(1) > 1:
        return "a ref with two unit-stride dims cannot be swizzled"
    elements = 8 * swizzle // bitwidth
    minor = minor_extent(value, shape, strides)
    if minor is None or minor % elements:
        where = "minor tile dim" if tiling is not None else "minor dim"
        return (
            f"swizzle {swizzle} spans {elements} elements of {bitwidth} bits, which do not "
            f"divide the {where} ({minor})"
        )
    return None


def mma_options(
    shape: tuple[int, ...], bitwidth: int, transposed: bool, unswizzled: bool
) -> tuple[Transforms, ...]:
    """The transforms an MMA instruction reads an SMEM operand with, widest swizzle first.

    A swizzle of s bytes pairs with the tile (8, 8·s/bitwidth) (transposed
    refs: (8·s/bitwidth, 8)); ``unswizzled`` adds the 16-byte tile without
    swizzle. Only tiles that divide the operand's shape are kept.
    """
    options: list[Transforms] = []
    for swizzle in (*SWIZZLES, None) if unswizzled else SWIZZLES:
        elements = 8 * (swizzle or _NO_SWIZZLE) // bitwidth
        tiling = (elements, 8) if transposed else (8, elements)
        if all(s % t == 0 for s, t in zip(shape, tiling, strict=False)):
            options.append(Transforms(tiling, swizzle))
    return tuple(options)
