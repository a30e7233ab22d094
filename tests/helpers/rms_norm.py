"""RMS norm as a Pallas user writes it (keepdims): no layouts as written, layouts after the
unit-dim rewrite; and the same with a cast no layout satisfies.
"""

from __future__ import annotations

BID = "mosaic_gpu.broadcast_in_dim"


WGMMA = (
    "#mosaic_gpu.TiledLayout<[[64, 8], [16, 8], [8, 8], [2]], warp_dims = [-7], "
    "lane_dims = [-3, -2], vector_dim = -1>"
)


def _loc(line: int, column: int = 5) -> str:
    return f'loc("rms.py":{line}:{column})'


# RMS norm as a Pallas user writes it, ``x * rsqrt(mean(x * x, -1, keepdims=True) + eps)``:
# the module as written has no layouts; after the rewrite it infers.
RMS_NORM = f"""
module attributes {{mosaic_gpu.dump_basename = "rms"}} {{
  func.func @kernel(%x_ref: memref<128x256xf32>, %out: memref<128x256xf32>) {{
    %x = "mosaic_gpu.vector_load"(%x_ref) <{{optimized = true}}>
      : (memref<128x256xf32>) -> vector<128x256xf32>
      {_loc(10)}
    %sq = arith.mulf %x, %x : vector<128x256xf32> {_loc(11, 22)}
    %zero = arith.constant dense<0.0> : vector<128xf32> {_loc(11)}
    %sum = vector.multi_reduction <add>, %sq, %zero [1] : vector<128x256xf32> to vector<128xf32>
      {_loc(11, 13)}
    %keep = {BID}(%sum : vector<128xf32>) <broadcast_dimensions = [0]> -> vector<128x1xf32>
      {_loc(11, 13)}
    %n = arith.constant dense<256.0> : vector<128x1xf32> {_loc(11)}
    %mean = arith.divf %keep, %n : vector<128x1xf32> {_loc(11, 13)}
    %eps = arith.constant dense<1.0e-6> : vector<128x1xf32> {_loc(12)}
    %plus = arith.addf %mean, %eps : vector<128x1xf32> {_loc(12, 33)}
    %inv = math.rsqrt %plus : vector<128x1xf32> {_loc(12, 23)}
    %wide = {BID}(%inv : vector<128x1xf32>) <broadcast_dimensions = [0, 1]> -> vector<128x256xf32>
      {_loc(12, 19)}
    %y = arith.mulf %x, %wide : vector<128x256xf32> {_loc(12, 19)}
    "mosaic_gpu.vector_store"(%y, %out) <{{optimized = true}}>
      : (vector<128x256xf32>, memref<128x256xf32>) -> ()
      {_loc(12)}
    return
  }}
}}
"""


# The same, with a layout cast no layout satisfies (WGMMA, then a strided cast):
# rewritten or not, no layouts; the error is about the module as written.
UNSAT = RMS_NORM.replace(
    '    "mosaic_gpu.vector_store"(%y, %out)',
    f'    %w = "mosaic_gpu.layout_cast"(%y) <{{new_layout = {WGMMA}}}> '
    f": (vector<128x256xf32>) -> vector<128x256xf32> {_loc(13)}\n"
    '    %s = "mosaic_gpu.layout_cast"(%w) '
    "<{new_layout = #mosaic_gpu.WGStridedFragLayout<[128, 256], 2>}> "
    f": (vector<128x256xf32>) -> vector<128x256xf32> {_loc(14)}\n"
    '    "mosaic_gpu.vector_store"(%s, %out)',
)
