// fuzz regression: smalto-answer-not-lowerable
// arch: 9.0
// detail: ValueError: Cannot concatenate non-vector values
func.func @kernel() {
  %v1 = "arith.constant"() <{value = dense<true> : vector<64x128xi1>}> : () -> vector<64x128xi1>
  %v2 = "mosaic_gpu.layout_cast"(%v1) <{new_layout = #mosaic_gpu.TiledLayout<[[64, 8], [16, 8], [8, 8], [2]], warp_dims = [-7], lane_dims = [-3, -2], vector_dim = -1>}> : (vector<64x128xi1>) -> vector<64x128xi1>
  %r4 = "mosaic_gpu.slice_smem"() <{offset = 0 : i32}> : () -> memref<128x256xf32, #gpu.address_space<workgroup>>
  %v3 = "mosaic_gpu.vector_load"(%r4) : (memref<128x256xf32, #gpu.address_space<workgroup>>) -> vector<128x256xf32>
  %v5 = "math.sqrt"(%v3) : (vector<128x256xf32>) -> vector<128x256xf32>
  %s7 = "arith.constant"() <{value = 2 : i4}> : () -> i4
  %v6 = "vector.broadcast"(%s7) : (i4) -> vector<128x256xi4>
  %v8 = "arith.extsi"(%v6) : (vector<128x256xi4>) -> vector<128x256xi8>
  %v9 = "arith.constant"() <{value = dense<1> : vector<128x256xi4>}> : () -> vector<128x256xi4>
  %r10 = "mosaic_gpu.slice_smem"() <{alias_id = 1 : i64, offset = 65536 : i32}> : () -> memref<128x256xi4, #gpu.address_space<workgroup>>
  "mosaic_gpu.vector_store"(%v9, %r10) : (vector<128x256xi4>, memref<128x256xi4, #gpu.address_space<workgroup>>) -> ()
  %v11 = "arith.constant"() <{value = dense<[0.0, 1.0, 2.0, 3.0, 4.0, 5.0, 6.0, 0.0, 1.0, 2.0, 3.0, 4.0, 5.0, 6.0, 0.0, 1.0, 2.0, 3.0, 4.0, 5.0, 6.0, 0.0, 1.0, 2.0, 3.0, 4.0, 5.0, 6.0, 0.0, 1.0, 2.0, 3.0, 4.0, 5.0, 6.0, 0.0, 1.0, 2.0, 3.0, 4.0, 5.0, 6.0, 0.0, 1.0, 2.0, 3.0, 4.0, 5.0, 6.0, 0.0, 1.0, 2.0, 3.0, 4.0, 5.0, 6.0, 0.0, 1.0, 2.0, 3.0, 4.0, 5.0, 6.0, 0.0, 1.0, 2.0, 3.0, 4.0, 5.0, 6.0, 0.0, 1.0, 2.0, 3.0, 4.0, 5.0, 6.0, 0.0, 1.0, 2.0, 3.0, 4.0, 5.0, 6.0, 0.0, 1.0, 2.0, 3.0, 4.0, 5.0, 6.0, 0.0, 1.0, 2.0, 3.0, 4.0, 5.0, 6.0, 0.0, 1.0, 2.0, 3.0, 4.0, 5.0, 6.0, 0.0, 1.0, 2.0, 3.0, 4.0, 5.0, 6.0, 0.0, 1.0, 2.0, 3.0, 4.0, 5.0, 6.0, 0.0, 1.0, 2.0, 3.0, 4.0, 5.0, 6.0, 0.0, 1.0]> : vector<128xf32>}> : () -> vector<128xf32>
  %v12 = "mosaic_gpu.broadcast_in_dim"(%v11) <{broadcast_dimensions = array<i64: 1>}> : (vector<128xf32>) -> vector<64x128xf32>
  %v13 = "arith.constant"() <{value = dense<1> : vector<128x256xi8>}> : () -> vector<128x256xi8>
  %v14 = "mosaic_gpu.optimization_barrier"(%v13) : (vector<128x256xi8>) -> vector<128x256xi8>
  "func.return"() : () -> ()
}
