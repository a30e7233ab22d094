"""The layout attributes smalto keeps per context as the bindings' raw pointers
(``hw.encode.AttributeCache``, through ``ir.Attribute._CAPICreate``: private API of
jaxlib's MLIR bindings) are made again as the very attributes JAX's ``to_layout_attr``
makes (docs/jax_upgrade.md)."""

from __future__ import annotations

from jax._src.lib.mlir import ir
from jax.experimental.mosaic.gpu import fragmented_array as fa
from jax.experimental.mosaic.gpu import layouts as jax_layouts

from smalto.basics.mlir import make_context
from smalto.hw.encode import AttributeCache
from smalto.hw.values import Reg, Smem


def test_an_attribute_made_again_from_its_kept_pointer_is_jax_s() -> None:
    context = make_context()
    with context:
        layouts = [fa.WGMMA_LAYOUT, fa.WGMMA_ROW_LAYOUT, fa.WGStridedFragLayout((128, 4), 4)]
        first = AttributeCache(context)
        made = [first.layout(Reg(layout)) for layout in layouts]
        tiled = first.transforms(Smem(tiling=(8, 64), swizzle=128))
        again = AttributeCache(context)  # a second module in the same context
        for layout, before in zip(layouts, made, strict=True):
            kept = again.layout(Reg(layout))
            assert kept is not before  # (made from the pointer, not handed back)
            assert kept == before == jax_layouts.to_layout_attr(layout)
            assert isinstance(kept, ir.Attribute) and str(kept) == str(before)
        assert again.transforms(Smem(tiling=(8, 64), swizzle=128)) == tiled
        assert str(tiled) == "[#mosaic_gpu.tile<[8, 64]>, #mosaic_gpu.swizzle<128 : i32>]"
