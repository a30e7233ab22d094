// fuzz regression: smalto-answer-not-lowerable
// arch: 9.0
// detail: NotImplementedError: Unsupported layout: WGSplatFragLayout(shape=(256, 128))
func.func @kernel() {
  %r2 = "mosaic_gpu.slice_smem"() <{alias_id = 1 : i64, offset = 0 : i32}> : () -> memref<128xi32, #gpu.address_space<workgroup>>
  %v1 = "mosaic_gpu.vector_load"(%r2) : (memref<128xi32, #gpu.address_space<workgroup>>) -> vector<128xi32>
  %v3 = "arith.constant"() <{value = dense<1> : vector<128xi32>}> : () -> vector<128xi32>
  %v4 = "arith.andi"(%v1, %v3) : (vector<128xi32>, vector<128xi32>) -> vector<128xi32>
  %v5 = "mosaic_gpu.layout_cast"(%v1) <{new_layout = #mosaic_gpu.TiledLayout<[[128], [32], [8], [1]], warp_dims = [-4], lane_dims = [-2, #mosaic_gpu.Replicated<times = 4>], vector_dim = -1>}> : (vector<128xi32>) -> vector<128xi32>
  %v6 = "arith.constant"() <{value = dense<1.000000e+00> : vector<128xf32>}> : () -> vector<128xf32>
  %v7 = "mosaic_gpu.broadcast_in_dim"(%v6) <{broadcast_dimensions = array<i64: 0>}> : (vector<128xf32>) -> vector<128x256xf32>
  %v8 = "arith.constant"() <{value = dense<1.000000e+00> : vector<128x256xf32>}> : () -> vector<128x256xf32>
  %v9 = "arith.truncf"(%v8) : (vector<128x256xf32>) -> vector<128x256xf16>
  %v10 = "arith.constant"() <{value = dense<1.000000e+00> : vector<256xf32>}> : () -> vector<256xf32>
  %v11 = "mosaic_gpu.broadcast_in_dim"(%v10) <{broadcast_dimensions = array<i64: 0>}> : (vector<256xf32>) -> vector<256x128xf32>
  %v12 = "vector.multi_reduction"(%v11, %v10) <{kind = #vector.kind<maximumf>, reduction_dims = array<i64: 1>}> {offset = 0 : i32, scratch_size = 2048 : i32} : (vector<256x128xf32>, vector<256xf32>) -> vector<256xf32>
  %v13 = "mosaic_gpu.optimization_barrier"(%v9) : (vector<128x256xf16>) -> vector<128x256xf16>
  "func.return"() : () -> ()
}
