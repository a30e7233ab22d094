"""A multi_reduction of a value whose tiled layout covers fewer dims than it has.

JAX 0.12.0.1's lowering reduces over dims that such a tiling leaves untiled
(within each thread) but misreads a tiled one (it looks the reduced dim up in
the tiling by its index in the vector). JAX's constraints accept both; smalto
accepts the first, with JAX's answer, and refuses the second, on which JAX's
answer fails to lower. Each case is lowered with JAX's own dialect lowering.
"""

from __future__ import annotations

import pytest
import reference
from fuzz.property import try_jax_lowering
from jax._src.lib.mlir import ir
from jax.experimental.mosaic.gpu import fragmented_array as fa
from jax.experimental.mosaic.gpu import layout_inference as jax_layout_inference
from rule_kit import layout_attr_text

import smalto
from smalto.check import check

HOPPER = (9, 0)


def reduction(layout: fa.TiledLayout, dim: int) -> str:
    """A (256, 128) f32 splat cast to ``layout``, reduced over ``dim``."""
    out = 128 if dim == 0 else 256
    return f"""func.func @kernel() {{
  %s = "arith.constant"() <{{value = 2.0 : f32}}> : () -> f32
  %v = "vector.broadcast"(%s) : (f32) -> vector<256x128xf32>
  %w = "mosaic_gpu.layout_cast"(%v) <{{new_layout = {layout_attr_text(layout)}}}> : (vector<256x128xf32>) -> vector<256x128xf32>
  %acc = "arith.constant"() <{{value = dense<0.0> : vector<{out}xf32>}}> : () -> vector<{out}xf32>
  %r = "vector.multi_reduction"(%w, %acc) <{{kind = #vector.kind<add>, reduction_dims = array<i64: {dim}>}}> {{offset = 0 : i32, scratch_size = 2048 : i32}} : (vector<256x128xf32>, vector<{out}xf32>) -> vector<{out}xf32>
  %q = "mosaic_gpu.optimization_barrier"(%r) : (vector<{out}xf32>) -> vector<{out}xf32>
  "func.return"() : () -> ()
}}"""  # noqa: E501


def by_jax(text: str) -> ir.Module:
    module = reference.parse(text, reference.make_context())
    with module.context, ir.Location.unknown():
        jax_layout_inference.infer_layout(module, arch=HOPPER)
    return module


ROW_TILES = [fa.WGMMA_ROW_LAYOUT, fa.WGMMA_COL_LAYOUT, fa.TCGEN05_ROW_LAYOUT]


@pytest.mark.parametrize("layout", ROW_TILES, ids=["WGMMA_ROW", "WGMMA_COL", "TCGEN05_ROW"])
def test_reducing_the_untiled_dim_is_inferred_like_jax_and_lowers(layout: fa.TiledLayout) -> None:
    text = reduction(layout, 0)
    jax_module = by_jax(text)
    assert try_jax_lowering(by_jax(text), HOPPER) is None
    module = reference.parse(text, reference.make_context())
    smalto.infer_layout(module, arch=HOPPER)
    assert reference.layout_attributes(module) == reference.layout_attributes(jax_module)
    assert check(module, HOPPER) == []
    assert try_jax_lowering(module, HOPPER) is None


@pytest.mark.parametrize("layout", ROW_TILES, ids=["WGMMA_ROW", "WGMMA_COL", "TCGEN05_ROW"])
def test_reducing_the_tiled_dim_is_refused_where_jax_answer_cannot_lower(
    layout: fa.TiledLayout,
) -> None:
    text = reduction(layout, 1)
    jax_module = by_jax(text)  # JAX's constraints accept it ...
    assert check(jax_module, HOPPER) != []
    # ... its lowering does not.
    assert "Invalid dimension" in (try_jax_lowering(jax_module, HOPPER) or "")
    module = reference.parse(text, reference.make_context())
    with pytest.raises(ValueError, match="Failed to infer a possible set of layouts"):
        smalto.infer_layout(module, arch=HOPPER)
