// fuzz regression: checker-rejects
// arch: 10.0
// detail: -:19:10: vector.multi_reduction: the source is WGMMA_COL, a tiling of 1 of its 2 dims; the lowering reduces only fully tiled sources
func.func @kernel() {
  %r2 = "mosaic_gpu.slice_smem"() <{offset = 0 : i32}> : () -> memref<64xi32, #gpu.address_space<workgroup>>
  %v1 = "mosaic_gpu.vector_load"(%r2) : (memref<64xi32, #gpu.address_space<workgroup>>) -> vector<64xi32>
  %v3 = "arith.constant"() <{value = dense<1.000000e+00> : vector<128x256xf16>}> : () -> vector<128x256xf16>
  %rv4:2 = "scf.while"(%v1, %v3) ({
  ^bb0(%a7: vector<64xi32>, %a8: vector<128x256xf16>):
    %f6 = "arith.constant"() <{value = false}> : () -> i1
    %v9 = "arith.constant"() <{value = dense<1> : vector<64xi32>}> : () -> vector<64xi32>
    "scf.condition"(%f6, %v9, %v3) : (i1, vector<64xi32>, vector<128x256xf16>) -> ()
  }, {
  ^bb0(%a10: vector<64xi32>, %a11: vector<128x256xf16>):
    %v12 = "arith.constant"() <{value = dense<1> : vector<64xi32>}> : () -> vector<64xi32>
    %v13 = "mosaic_gpu.layout_cast"(%v12) <{new_layout = #mosaic_gpu.TiledLayout<[[8], [2]], warp_dims = [#mosaic_gpu.Replicated<times = 4>], lane_dims = [#mosaic_gpu.Replicated<times = 8>, -2], vector_dim = -1>}> : (vector<64xi32>) -> vector<64xi32>
    %v14 = "mosaic_gpu.broadcasted_iota"() <{dimension = 0 : i32}> : () -> vector<64xi32>
    "scf.yield"(%v14, %a11) : (vector<64xi32>, vector<128x256xf16>) -> ()
  }) : (vector<64xi32>, vector<128x256xf16>) -> (vector<64xi32>, vector<128x256xf16>)
  %v15 = "arith.constant"() <{value = dense<1.000000e+00> : vector<256x128xf32>}> : () -> vector<256x128xf32>
  %v16 = "arith.constant"() <{value = dense<1.000000e+00> : vector<128xf32>}> : () -> vector<128xf32>
  %v17 = "vector.multi_reduction"(%v15, %v16) <{kind = #vector.kind<add>, reduction_dims = array<i64: 0>}> {offset = 0 : i32, scratch_size = 2048 : i32} : (vector<256x128xf32>, vector<128xf32>) -> vector<128xf32>
  %v18 = "arith.constant"() <{value = dense<1> : vector<128x256xi32>}> : () -> vector<128x256xi32>
  %c19 = "arith.constant"() <{value = 0 : index}> : () -> index
  %c20 = "arith.constant"() <{value = 4 : index}> : () -> index
  %c21 = "arith.constant"() <{value = 1 : index}> : () -> index
  %rv22:2 = "scf.for"(%c19, %c20, %c21, %rv4#1, %rv4#1) ({
  ^bb0(%i24: index, %a25: vector<128x256xf16>, %a26: vector<128x256xf16>):
    "scf.yield"(%a26, %rv4#1) : (vector<128x256xf16>, vector<128x256xf16>) -> ()
  }) : (index, index, index, vector<128x256xf16>, vector<128x256xf16>) -> (vector<128x256xf16>, vector<128x256xf16>)
  "func.return"() : () -> ()
}
