// fuzz regression: checker-rejects
// arch: 9.0
// note: strict layout_cast (jax 0.12): a broadcast cast strictly must stay a splat or be the cast layout already
// detail: -:7:9: mosaic_gpu.layout_cast: cannot relayout WGMMA to WGMMA_TRANSPOSED (a strict cast changes only a splat's layout)
func.func @kernel() {
  %r2 = "mosaic_gpu.slice_smem"() <{offset = 0 : i32}> : () -> memref<64x64xi4, #gpu.address_space<workgroup>>
  %v1 = "mosaic_gpu.vector_load"(%r2) : (memref<64x64xi4, #gpu.address_space<workgroup>>) -> vector<64x64xi4>
  %v3 = "mosaic_gpu.layout_cast"(%v1) <{new_layout = #mosaic_gpu.TiledLayout<[[64, 8], [16, 8], [8, 8], [2]], warp_dims = [-7], lane_dims = [-3, -2], vector_dim = -1>, strict = true}> : (vector<64x64xi4>) -> vector<64x64xi4>
  %s5 = "arith.constant"() <{value = 2 : i4}> : () -> i4
  %v4 = "vector.broadcast"(%s5) : (i4) -> vector<128x256xi4>
  %v6 = "mosaic_gpu.layout_cast"(%v4) <{new_layout = #mosaic_gpu.TiledLayout<[[64, 8], [16, 8], [8, 8], [2, 2], [2, 1]], warp_dims = [-10], lane_dims = [-6, -3, -5], vector_dim = -2>, strict = true}> : (vector<128x256xi4>) -> vector<128x256xi4>
  %v7 = "arith.constant"() <{value = dense<1.000000e+00> : vector<128x64x2xf16>}> : () -> vector<128x64x2xf16>
  %v8 = "vector.shape_cast"(%v7) : (vector<128x64x2xf16>) -> vector<128x128xf16>
  %v9 = "vector.extract_strided_slice"(%v8) <{offsets = [64, 0], sizes = [64, 128], strides = [1, 1]}> : (vector<128x128xf16>) -> vector<64x128xf16>
  "func.return"() : () -> ()
}
