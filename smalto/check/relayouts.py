"""Which register relayouts jax 0.12.0.1 performs, between ops and at layout casts.

At a ``strict`` layout cast only a splat may change layout (it is rebuilt
from its one value). A non-strict layout cast, and the lowering of every op
for each of its operands (it converts the producer's registers to the
layout the consumer takes them in), also perform the tiled relayouts of
``FragmentedArray.to_layout``: transposes of the WGMMA and TCGEN05 layouts,
the upcast layouts to and from WGMMA for 4-, 8- and 16-bit elements, and
TMEM-native layouts of any vector length. (JAX's rules allow only the splat
conversions between ops; its lowering performs all of them.)

This restates ``smalto.hw.layouts.relayout_allowed``, which the solver reads, on
purpose: docs/rules_and_checks.md says why.
"""

from __future__ import annotations

from jax.experimental.mosaic.gpu import fragmented_array as fa
from jax.experimental.mosaic.gpu import layouts as jax_layouts

from smalto.hw.values import Reg

_TRANSPOSES = (
    (fa.WGMMA_LAYOUT, fa.WGMMA_TRANSPOSED_LAYOUT),
    (fa.WGMMA_TRANSPOSED_LAYOUT, fa.WGMMA_LAYOUT),
    (fa.TCGEN05_LAYOUT, fa.TCGEN05_TRANSPOSED_LAYOUT),
    (fa.TCGEN05_TRANSPOSED_LAYOUT, fa.TCGEN05_LAYOUT),
)


def _tmem_native(layout: fa.TiledLayout) -> bool:
    return layout == fa.tmem_native_layout(layout.vector_length)


def _tiled(src: fa.TiledLayout, dst: fa.TiledLayout, bitwidth: int) -> bool:
    if (src, dst) in _TRANSPOSES:
        # FragmentedArray.to_layout shuffles 16- and 32-bit values only.
        return bitwidth in (16, 32)
    upcast_2x, upcast_4x, wgmma = (
        fa.WGMMA_LAYOUT_UPCAST_2X,
        fa.WGMMA_LAYOUT_UPCAST_4X,
        fa.WGMMA_LAYOUT,
    )
    two_and_one = fa.can_relayout_wgmma_2x_to_wgmma(bitwidth)  # both ways in 0.12
    four_to_two = fa.can_relayout_wgmma_4x_to_wgmma_2x(bitwidth)
    if (src, dst) in ((upcast_2x, wgmma), (wgmma, upcast_2x)):
        return two_and_one
    if (src, dst) == (upcast_4x, upcast_2x):
        return four_to_two
    if (src, dst) == (upcast_4x, wgmma):
        return four_to_two and two_and_one
    return _tmem_native(src) and _tmem_native(dst)


def relayout_allowed(src: Reg, dst: Reg, bitwidth: int, *, strict: bool) -> bool:
    """Whether a value laid out as ``src`` can be used as ``dst``."""
    if src == dst:
        return True
    s, d = src.layout, dst.layout
    if isinstance(s, fa.WGSplatFragLayout):
        if isinstance(d, fa.WGStridedFragLayout):
            return s.shape == d.shape
        if isinstance(d, fa.TiledLayout):
            # The splat's trailing dims must hold whole tiles (jax 0.12.0.1).
            return jax_layouts.splat_is_compatible_with_tiled(s, d)
        return False
    if strict:
        return False
    if isinstance(s, fa.TiledLayout) and isinstance(d, fa.TiledLayout):
        return _tiled(s, d, bitwidth)
    return False
