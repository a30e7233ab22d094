// fuzz regression: checker-rejects
// arch: 9.0
// detail: -:14:12: mosaic_gpu.broadcast_in_dim: the result is TCGEN05_ROW, a tiling of 1 of its 2 dims; the lowering broadcasts only into fully tiled layouts
func.func @kernel() {
  %v1 = "arith.constant"() <{value = dense<1.000000e+00> : vector<256xf32>}> : () -> vector<256xf32>
  %v2 = "mosaic_gpu.layout_cast"(%v1) <{new_layout = #mosaic_gpu.TiledLayout<[[128], [32], [8], [1]], warp_dims = [-4], lane_dims = [-2, #mosaic_gpu.Replicated<times = 4>], vector_dim = -1>}> : (vector<256xf32>) -> vector<256xf32>
  %v3 = "scf.while"(%v2) ({
  ^bb0(%a5: vector<256xf32>):
    %f4 = "arith.constant"() <{value = false}> : () -> i1
    %v6 = "arith.constant"() <{value = dense<1.000000e+00> : vector<256xf32>}> : () -> vector<256xf32>
    "scf.condition"(%f4, %v6) : (i1, vector<256xf32>) -> ()
  }, {
  ^bb0(%a7: vector<256xf32>):
    %v8 = "arith.constant"() <{value = dense<[0.0, 1.0, 2.0, 3.0, 4.0, 5.0, 6.0, 0.0, 1.0, 2.0, 3.0, 4.0, 5.0, 6.0, 0.0, 1.0, 2.0, 3.0, 4.0, 5.0, 6.0, 0.0, 1.0, 2.0, 3.0, 4.0, 5.0, 6.0, 0.0, 1.0, 2.0, 3.0, 4.0, 5.0, 6.0, 0.0, 1.0, 2.0, 3.0, 4.0, 5.0, 6.0, 0.0, 1.0, 2.0, 3.0, 4.0, 5.0, 6.0, 0.0, 1.0, 2.0, 3.0, 4.0, 5.0, 6.0, 0.0, 1.0, 2.0, 3.0, 4.0, 5.0, 6.0, 0.0, 1.0, 2.0, 3.0, 4.0, 5.0, 6.0, 0.0, 1.0, 2.0, 3.0, 4.0, 5.0, 6.0, 0.0, 1.0, 2.0, 3.0, 4.0, 5.0, 6.0, 0.0, 1.0, 2.0, 3.0, 4.0, 5.0, 6.0, 0.0, 1.0, 2.0, 3.0, 4.0, 5.0, 6.0, 0.0, 1.0, 2.0, 3.0, 4.0, 5.0, 6.0, 0.0, 1.0, 2.0, 3.0, 4.0, 5.0, 6.0, 0.0, 1.0, 2.0, 3.0, 4.0, 5.0, 6.0, 0.0, 1.0, 2.0, 3.0, 4.0, 5.0, 6.0, 0.0, 1.0]> : vector<128xf32>}> : () -> vector<128xf32>
    %v9 = "arith.cmpf"(%v8, %v8) <{predicate = 2 : i64}> : (vector<128xf32>, vector<128xf32>) -> vector<128xi1>
    %v10 = "arith.select"(%v9, %v8, %v8) : (vector<128xi1>, vector<128xf32>, vector<128xf32>) -> vector<128xf32>
    %v11 = "mosaic_gpu.broadcast_in_dim"(%v1) <{broadcast_dimensions = array<i64: 1>}> : (vector<256xf32>) -> vector<128x256xf32>
    %v12 = "arith.constant"() <{value = dense<1> : vector<128xi32>}> : () -> vector<128xi32>
    %v13 = "arith.sitofp"(%v12) : (vector<128xi32>) -> vector<128xf32>
    %s15 = "arith.constant"() <{value = 2.000000e+00 : f32}> : () -> f32
    %v14 = "vector.broadcast"(%s15) : (f32) -> vector<256xf32>
    "scf.yield"(%v14) : (vector<256xf32>) -> ()
  }) : (vector<256xf32>) -> (vector<256xf32>)
  %r16 = "mosaic_gpu.slice_smem"() <{offset = 0 : i32}> : () -> memref<256xf32, #gpu.address_space<workgroup>>
  "mosaic_gpu.vector_store"(%v2, %r16) <{optimized = false}> : (vector<256xf32>, memref<256xf32, #gpu.address_space<workgroup>>) -> ()
  %r18 = "mosaic_gpu.slice_smem"() <{offset = 65536 : i32}> : () -> memref<256x128xf32, #gpu.address_space<workgroup>>
  %v17 = "mosaic_gpu.vector_load"(%r18) <{optimized = true}> : (memref<256x128xf32, #gpu.address_space<workgroup>>) -> vector<256x128xf32>
  %v19 = "vector.multi_reduction"(%v17, %v1) <{kind = #vector.kind<add>, reduction_dims = array<i64: 1>}> {offset = 0 : i32, scratch_size = 2048 : i32} : (vector<256x128xf32>, vector<256xf32>) -> vector<256xf32>
  %v20 = "arith.addf"(%v17, %v17) : (vector<256x128xf32>, vector<256x128xf32>) -> vector<256x128xf32>
  %v21 = "arith.constant"() <{value = dense<1.000000e+00> : vector<64xf16>}> : () -> vector<64xf16>
  %v22 = "math.absf"(%v21) : (vector<64xf16>) -> vector<64xf16>
  %v23 = "math.exp"(%v19) : (vector<256xf32>) -> vector<256xf32>
  %v24 = "math.tanh"(%v2) : (vector<256xf32>) -> vector<256xf32>
  "func.return"() : () -> ()
}
