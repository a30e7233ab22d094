// fuzz regression: checker-rejects
// arch: 9.0
// detail: -:4:9: vector.multi_reduction: the source is TCGEN05_ROW, a tiling of 1 of its 2 dims; the lowering reduces only fully tiled sources
func.func @kernel() {
  %v1 = "arith.constant"() <{value = dense<1.000000e+00> : vector<128x256xf32>}> : () -> vector<128x256xf32>
  %v2 = "arith.constant"() <{value = dense<1.000000e+00> : vector<256xf32>}> : () -> vector<256xf32>
  %v3 = "vector.multi_reduction"(%v1, %v2) <{kind = #vector.kind<add>, reduction_dims = array<i64: 0>}> {offset = 0 : i32, scratch_size = 2048 : i32} : (vector<128x256xf32>, vector<256xf32>) -> vector<256xf32>
  %v4 = "mosaic_gpu.optimization_barrier"(%v3) : (vector<256xf32>) -> vector<256xf32>
  %s6 = "arith.constant"() <{value = 2.000000e+00 : f16}> : () -> f16
  %v5 = "vector.broadcast"(%s6) : (f16) -> vector<64x64xf16>
  %v7 = "math.absf"(%v5) : (vector<64x64xf16>) -> vector<64x64xf16>
  %v8 = "mosaic_gpu.layout_cast"(%v4) <{new_layout = #mosaic_gpu.TiledLayout<[[128], [32], [8], [1]], warp_dims = [-4], lane_dims = [-2, #mosaic_gpu.Replicated<times = 4>], vector_dim = -1>}> : (vector<256xf32>) -> vector<256xf32>
  %v9 = "mosaic_gpu.optimization_barrier"(%v5) : (vector<64x64xf16>) -> vector<64x64xf16>
  %s11 = "arith.constant"() <{value = 2.000000e+00 : f16}> : () -> f16
  %v10 = "vector.broadcast"(%s11) : (f16) -> vector<128x64xf16>
  %v12 = "vector.extract_strided_slice"(%v10) <{offsets = [0, 0], sizes = [128, 32], strides = [1, 1]}> : (vector<128x64xf16>) -> vector<128x32xf16>
  "func.return"() : () -> ()
}
