// fuzz regression: checker-rejects
// arch: 10.0
// detail: -:5:9: mosaic_gpu.broadcast_in_dim: the result is WGMMA_COL, a tiling of 1 of its 2 dims; the lowering broadcasts only into fully tiled layouts
func.func @kernel() {
  %v1 = "arith.constant"() <{value = dense<1.000000e+00> : vector<1x128xf16>}> : () -> vector<1x128xf16>
  %v2 = "math.absf"(%v1) : (vector<1x128xf16>) -> vector<1x128xf16>
  %v3 = "arith.constant"() <{value = dense<[0.0, 1.0, 2.0, 3.0, 4.0, 5.0, 6.0, 0.0, 1.0, 2.0, 3.0, 4.0, 5.0, 6.0, 0.0, 1.0, 2.0, 3.0, 4.0, 5.0, 6.0, 0.0, 1.0, 2.0, 3.0, 4.0, 5.0, 6.0, 0.0, 1.0, 2.0, 3.0, 4.0, 5.0, 6.0, 0.0, 1.0, 2.0, 3.0, 4.0, 5.0, 6.0, 0.0, 1.0, 2.0, 3.0, 4.0, 5.0, 6.0, 0.0, 1.0, 2.0, 3.0, 4.0, 5.0, 6.0, 0.0, 1.0, 2.0, 3.0, 4.0, 5.0, 6.0, 0.0, 1.0, 2.0, 3.0, 4.0, 5.0, 6.0, 0.0, 1.0, 2.0, 3.0, 4.0, 5.0, 6.0, 0.0, 1.0, 2.0, 3.0, 4.0, 5.0, 6.0, 0.0, 1.0, 2.0, 3.0, 4.0, 5.0, 6.0, 0.0, 1.0, 2.0, 3.0, 4.0, 5.0, 6.0, 0.0, 1.0, 2.0, 3.0, 4.0, 5.0, 6.0, 0.0, 1.0, 2.0, 3.0, 4.0, 5.0, 6.0, 0.0, 1.0, 2.0, 3.0, 4.0, 5.0, 6.0, 0.0, 1.0, 2.0, 3.0, 4.0, 5.0, 6.0, 0.0, 1.0]> : vector<128xf32>}> : () -> vector<128xf32>
  %v4 = "mosaic_gpu.broadcast_in_dim"(%v3) <{broadcast_dimensions = array<i64: 1>}> : (vector<128xf32>) -> vector<64x128xf32>
  %v5 = "arith.constant"() <{value = dense<1.000000e+00> : vector<1x128xf16>}> : () -> vector<1x128xf16>
  %v6 = "arith.maximumf"(%v5, %v2) : (vector<1x128xf16>, vector<1x128xf16>) -> vector<1x128xf16>
  %r7 = "mosaic_gpu.slice_smem"() <{offset = 0 : i32}> : () -> memref<i32, #gpu.address_space<workgroup>>
  %t8 = "mosaic_gpu.tmem_alloc"(%r7) <{collective = false, packing = 1 : i32}> : (memref<i32, #gpu.address_space<workgroup>>) -> memref<128x64xf32, #mosaic_gpu.tmem>
  %v9 = "mosaic_gpu.async_load_tmem"(%t8) : (memref<128x64xf32, #mosaic_gpu.tmem>) -> vector<128x64xf32>
  %v10 = "mosaic_gpu.async_load_tmem"(%t8) : (memref<128x64xf32, #mosaic_gpu.tmem>) -> vector<128x64xf32>
  "mosaic_gpu.async_store_tmem"(%v9, %t8) : (vector<128x64xf32>, memref<128x64xf32, #mosaic_gpu.tmem>) -> ()
  %s11 = "vector.reduction"(%v3) <{kind = #vector.kind<add>}> {offset = 0 : i32, scratch_size = 2048 : i32} : (vector<128xf32>) -> f32
  %v12 = "math.exp"(%v9) : (vector<128x64xf32>) -> vector<128x64xf32>
  %v13 = "arith.constant"() <{value = dense<1.000000e+00> : vector<128xf32>}> : () -> vector<128xf32>
  %c14 = "arith.constant"() <{value = 0 : index}> : () -> index
  %c15 = "arith.constant"() <{value = 4 : index}> : () -> index
  %c16 = "arith.constant"() <{value = 1 : index}> : () -> index
  %rv17:2 = "scf.for"(%c14, %c15, %c16, %v4, %v13) ({
  ^bb0(%i19: index, %a20: vector<64x128xf32>, %a21: vector<128xf32>):
    %v22 = "math.absf"(%v13) : (vector<128xf32>) -> vector<128xf32>
    %v23 = "mosaic_gpu.layout_cast"(%v13) <{new_layout = #mosaic_gpu.TiledLayout<[[8], [2]], warp_dims = [#mosaic_gpu.Replicated<times = 4>], lane_dims = [#mosaic_gpu.Replicated<times = 8>, -2], vector_dim = -1>}> : (vector<128xf32>) -> vector<128xf32>
    %v24 = "arith.constant"() <{value = dense<1.000000e+00> : vector<64x128xf32>}> : () -> vector<64x128xf32>
    %v25 = "arith.constant"() <{value = dense<1.000000e+00> : vector<128xf32>}> : () -> vector<128xf32>
    "scf.yield"(%v24, %v25) : (vector<64x128xf32>, vector<128xf32>) -> ()
  }) : (index, index, index, vector<64x128xf32>, vector<128xf32>) -> (vector<64x128xf32>, vector<128xf32>)
  "func.return"() : () -> ()
}
