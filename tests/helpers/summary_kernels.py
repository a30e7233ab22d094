# ruff: noqa: E501  (layout attributes and kernel lines are kept whole)
"""Kernels the summary's and the report's tests share."""

from __future__ import annotations

WGMMA = "#mosaic_gpu.TiledLayout<[[64, 8], [16, 8], [8, 8], [2]], warp_dims = [-7], lane_dims = [-3, -2], vector_dim = -1>"


WGMMA_T = "#mosaic_gpu.TiledLayout<[[64, 8], [16, 8], [8, 8], [2, 2], [2, 1]], warp_dims = [-10], lane_dims = [-6, -3, -5], vector_dim = -2>"


SMEM = "memref<64x64xbf16, #gpu.address_space<workgroup>>"


# A bf16 tile transposed in registers and back (two relayouts with shuffles), with a
# splat constant added in between (a free broadcast).
TRANSPOSED = f"""module {{
  func.func @kernel() {{
    %ref = "mosaic_gpu.slice_smem"() <{{offset = 0 : i32}}> : () -> {SMEM} loc("kernel.py":5:4)
    %x = "mosaic_gpu.vector_load"(%ref) : ({SMEM}) -> vector<64x64xbf16> loc("kernel.py":6:8)
    %a = "mosaic_gpu.layout_cast"(%x) <{{new_layout = {WGMMA}}}> : (vector<64x64xbf16>) -> vector<64x64xbf16> loc("kernel.py":7:8)
    %t = "mosaic_gpu.layout_cast"(%a) <{{new_layout = {WGMMA_T}}}> : (vector<64x64xbf16>) -> vector<64x64xbf16> loc("kernel.py":8:8)
    %one = arith.constant dense<1.0> : vector<64x64xbf16> loc("kernel.py":9:10)
    %y = arith.addf %t, %one : vector<64x64xbf16> loc("kernel.py":10:8)
    %z = "mosaic_gpu.layout_cast"(%y) <{{new_layout = {WGMMA}}}> : (vector<64x64xbf16>) -> vector<64x64xbf16> loc("kernel.py":11:8)
    "mosaic_gpu.vector_store"(%z, %ref) : (vector<64x64xbf16>, {SMEM}) -> () loc("kernel.py":12:4)
    return
  }}
}}
"""
