// fuzz regression: smalto-unsat-jax-sat
// arch: 9.0
// detail: Failed to infer a possible set of layouts: these requirements cannot all hold: - %8 : vector<128xf32> must be TCGEN05_ROW_LAYOUT: it is the cast result of `mosaic_gpu.layout_cast` at -:23:10 - %cst_1 cannot be splat (`arith.constant` at -:21:10) - %cst_1 must be convertible by the layout cast `mosai
func.func @kernel() {
  %v1 = "arith.constant"() <{value = dense<1> : vector<128x128xi16>}> : () -> vector<128x128xi16>
  %r3 = "mosaic_gpu.slice_smem"() <{offset = 0 : i32}> : () -> memref<64x128xf16, #gpu.address_space<workgroup>>
  %r4 = "mosaic_gpu.with_transforms"(%r3) <{transforms = [#mosaic_gpu.tile<[8, 64]>, #mosaic_gpu.swizzle<128 : i32>]}> : (memref<64x128xf16, #gpu.address_space<workgroup>>) -> memref<64x128xf16, #gpu.address_space<workgroup>>
  %v2 = "mosaic_gpu.vector_load"(%r4) <{optimized = true}> : (memref<64x128xf16, #gpu.address_space<workgroup>>) -> vector<64x128xf16>
  %c5 = "arith.constant"() <{value = 0 : index}> : () -> index
  %c6 = "arith.constant"() <{value = 4 : index}> : () -> index
  %c7 = "arith.constant"() <{value = 1 : index}> : () -> index
  %rv8:2 = "scf.for"(%c5, %c6, %c7, %v1, %v2) ({
  ^bb0(%i10: index, %a11: vector<128x128xi16>, %a12: vector<64x128xf16>):
    %v13 = "arith.constant"() <{value = dense<1.000000e+00> : vector<256xf32>}> : () -> vector<256xf32>
    %v14 = "mosaic_gpu.optimization_barrier"(%v13) : (vector<256xf32>) -> vector<256xf32>
    "scf.yield"(%v1, %a12) : (vector<128x128xi16>, vector<64x128xf16>) -> ()
  }) : (index, index, index, vector<128x128xi16>, vector<64x128xf16>) -> (vector<128x128xi16>, vector<64x128xf16>)
  "mosaic_gpu.vector_store"(%rv8#1, %r4) : (vector<64x128xf16>, memref<64x128xf16, #gpu.address_space<workgroup>>) -> ()
  %s16 = "arith.constant"() <{value = 2 : i32}> : () -> i32
  %v15 = "vector.broadcast"(%s16) : (i32) -> vector<128x128xi32>
  %v17 = "arith.trunci"(%v15) : (vector<128x128xi32>) -> vector<128x128xi16>
  %v18 = "arith.constant"() <{value = dense<1.000000e+00> : vector<64x128xf16>}> : () -> vector<64x128xf16>
  %v19 = "arith.mulf"(%rv8#1, %v18) : (vector<64x128xf16>, vector<64x128xf16>) -> vector<64x128xf16>
  %v20 = "arith.constant"() <{value = dense<[0.0, 1.0, 2.0, 3.0, 4.0, 5.0, 6.0, 0.0, 1.0, 2.0, 3.0, 4.0, 5.0, 6.0, 0.0, 1.0, 2.0, 3.0, 4.0, 5.0, 6.0, 0.0, 1.0, 2.0, 3.0, 4.0, 5.0, 6.0, 0.0, 1.0, 2.0, 3.0, 4.0, 5.0, 6.0, 0.0, 1.0, 2.0, 3.0, 4.0, 5.0, 6.0, 0.0, 1.0, 2.0, 3.0, 4.0, 5.0, 6.0, 0.0, 1.0, 2.0, 3.0, 4.0, 5.0, 6.0, 0.0, 1.0, 2.0, 3.0, 4.0, 5.0, 6.0, 0.0, 1.0, 2.0, 3.0, 4.0, 5.0, 6.0, 0.0, 1.0, 2.0, 3.0, 4.0, 5.0, 6.0, 0.0, 1.0, 2.0, 3.0, 4.0, 5.0, 6.0, 0.0, 1.0, 2.0, 3.0, 4.0, 5.0, 6.0, 0.0, 1.0, 2.0, 3.0, 4.0, 5.0, 6.0, 0.0, 1.0, 2.0, 3.0, 4.0, 5.0, 6.0, 0.0, 1.0, 2.0, 3.0, 4.0, 5.0, 6.0, 0.0, 1.0, 2.0, 3.0, 4.0, 5.0, 6.0, 0.0, 1.0, 2.0, 3.0, 4.0, 5.0, 6.0, 0.0, 1.0]> : vector<128xf32>}> : () -> vector<128xf32>
  %s21 = "vector.reduction"(%v20) <{kind = #vector.kind<add>}> {offset = 0 : i32, scratch_size = 2048 : i32} : (vector<128xf32>) -> f32
  %v22 = "mosaic_gpu.layout_cast"(%v20) <{new_layout = #mosaic_gpu.TiledLayout<[[128], [32], [8], [1]], warp_dims = [-4], lane_dims = [-2, #mosaic_gpu.Replicated<times = 4>], vector_dim = -1>}> : (vector<128xf32>) -> vector<128xf32>
  %s24 = "arith.constant"() <{value = 2.000000e+00 : f32}> : () -> f32
  %v23 = "vector.broadcast"(%s24) : (f32) -> vector<128x128xf32>
  %v25 = "arith.constant"() <{value = dense<1.000000e+00> : vector<128x128xf32>}> : () -> vector<128x128xf32>
  %v26 = "arith.cmpf"(%v23, %v25) <{predicate = 2 : i64}> : (vector<128x128xf32>, vector<128x128xf32>) -> vector<128x128xi1>
  %v27 = "arith.select"(%v26, %v23, %v25) : (vector<128x128xi1>, vector<128x128xf32>, vector<128x128xf32>) -> vector<128x128xf32>
  %s29 = "arith.constant"() <{value = 2.000000e+00 : f32}> : () -> f32
  %v28 = "vector.broadcast"(%s29) : (f32) -> vector<256x128xf32>
  %v30 = "vector.multi_reduction"(%v28, %v20) <{kind = #vector.kind<maximumf>, reduction_dims = array<i64: 0>}> {offset = 0 : i32, scratch_size = 2048 : i32} : (vector<256x128xf32>, vector<128xf32>) -> vector<128xf32>
  "func.return"() : () -> ()
}
