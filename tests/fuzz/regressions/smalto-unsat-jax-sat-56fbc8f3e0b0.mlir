// fuzz regression: smalto-unsat-jax-sat
// arch: 10.0
// detail: Failed to infer a possible set of layouts: these requirements cannot all hold: - %7 : vector<128xf32> must be WGMMA_ROW_LAYOUT: it is the cast result of `mosaic_gpu.layout_cast` at -:23:12 - %1 cannot be splat (`mosaic_gpu.vector_load` at -:3:9) - %1 (from `mosaic_gpu.vector_load` at -:3:9) is used 
func.func @kernel() {
  %r2 = "mosaic_gpu.slice_smem"() <{offset = 0 : i32}> : () -> memref<128xf32, #gpu.address_space<workgroup>>
  %v1 = "mosaic_gpu.vector_load"(%r2) <{optimized = false}> : (memref<128xf32, #gpu.address_space<workgroup>>) -> vector<128xf32>
  %s3 = "vector.reduction"(%v1) <{kind = #vector.kind<add>}> {offset = 0 : i32, scratch_size = 2048 : i32} : (vector<128xf32>) -> f32
  %c4 = "arith.constant"() <{value = 1 : index}> : () -> index
  %rv5:2 = "scf.index_switch"(%c4) <{cases = array<i64: 0, 1>}> ({
    "scf.yield"(%v1, %v1) : (vector<128xf32>, vector<128xf32>) -> ()
  }, {
    %v7 = "math.absf"(%v1) : (vector<128xf32>) -> vector<128xf32>
    %c8 = "arith.constant"() <{value = 0 : index}> : () -> index
    %c9 = "arith.constant"() <{value = 4 : index}> : () -> index
    %c10 = "arith.constant"() <{value = 1 : index}> : () -> index
    %v11 = "scf.for"(%c8, %c9, %c10, %v7) ({
    ^bb0(%i12: index, %a13: vector<128xf32>):
      %v14 = "arith.constant"() <{value = dense<[0.0, 1.0, 2.0, 3.0, 4.0, 5.0, 6.0, 0.0, 1.0, 2.0, 3.0, 4.0, 5.0, 6.0, 0.0, 1.0, 2.0, 3.0, 4.0, 5.0, 6.0, 0.0, 1.0, 2.0, 3.0, 4.0, 5.0, 6.0, 0.0, 1.0, 2.0, 3.0, 4.0, 5.0, 6.0, 0.0, 1.0, 2.0, 3.0, 4.0, 5.0, 6.0, 0.0, 1.0, 2.0, 3.0, 4.0, 5.0, 6.0, 0.0, 1.0, 2.0, 3.0, 4.0, 5.0, 6.0, 0.0, 1.0, 2.0, 3.0, 4.0, 5.0, 6.0, 0.0, 1.0, 2.0, 3.0, 4.0, 5.0, 6.0, 0.0, 1.0, 2.0, 3.0, 4.0, 5.0, 6.0, 0.0, 1.0, 2.0, 3.0, 4.0, 5.0, 6.0, 0.0, 1.0, 2.0, 3.0, 4.0, 5.0, 6.0, 0.0, 1.0, 2.0, 3.0, 4.0, 5.0, 6.0, 0.0, 1.0, 2.0, 3.0, 4.0, 5.0, 6.0, 0.0, 1.0, 2.0, 3.0, 4.0, 5.0, 6.0, 0.0, 1.0, 2.0, 3.0, 4.0, 5.0, 6.0, 0.0, 1.0, 2.0, 3.0, 4.0, 5.0, 6.0, 0.0, 1.0]> : vector<128xf32>}> : () -> vector<128xf32>
      %v15 = "mosaic_gpu.broadcast_in_dim"(%v14) <{broadcast_dimensions = array<i64: 1>}> : (vector<128xf32>) -> vector<64x128xf32>
      "scf.yield"(%v14) : (vector<128xf32>) -> ()
    }) : (index, index, index, vector<128xf32>) -> (vector<128xf32>)
    %v16 = "arith.constant"() <{value = dense<1.000000e+00> : vector<64x128xf16>}> : () -> vector<64x128xf16>
    %v17 = "arith.constant"() <{value = dense<1.000000e+00> : vector<128xf32>}> : () -> vector<128xf32>
    "scf.yield"(%v7, %v17) : (vector<128xf32>, vector<128xf32>) -> ()
  }, {
    %v18 = "mosaic_gpu.layout_cast"(%v1) <{new_layout = #mosaic_gpu.TiledLayout<[[64], [16], [8], [1]], warp_dims = [-4], lane_dims = [-2, #mosaic_gpu.Replicated<times = 4>], vector_dim = -1>}> : (vector<128xf32>) -> vector<128xf32>
    "scf.yield"(%v1, %v18) : (vector<128xf32>, vector<128xf32>) -> ()
  }) : (index) -> (vector<128xf32>, vector<128xf32>)
  %v19 = "arith.constant"() <{value = dense<1.000000e+00> : vector<64xf32>}> : () -> vector<64xf32>
  %s20 = "vector.reduction"(%v19) <{kind = #vector.kind<add>}> {offset = 0 : i32, scratch_size = 2048 : i32} : (vector<64xf32>) -> f32
  %v21 = "vector.broadcast"(%s20) : (f32) -> vector<128xf32>
  %v22 = "arith.constant"() <{value = dense<1.000000e+00> : vector<64xf32>}> : () -> vector<64xf32>
  %v23 = "mosaic_gpu.optimization_barrier"(%v22) : (vector<64xf32>) -> vector<64xf32>
  "func.return"() : () -> ()
}
