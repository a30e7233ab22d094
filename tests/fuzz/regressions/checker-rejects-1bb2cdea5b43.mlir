// fuzz regression: checker-rejects
// arch: 9.0
// detail: -:16:14: mosaic_gpu.broadcast_in_dim: the result is WGMMA_ROW, a tiling of 1 of its 2 dims; the lowering broadcasts only into fully tiled layouts
func.func @kernel() {
  %v1 = "arith.constant"() <{value = dense<1.000000e+00> : vector<64x128xf32>}> : () -> vector<64x128xf32>
  %v3 = "arith.constant"() <{value = dense<1.000000e+00> : vector<64x128xf16>}> : () -> vector<64x128xf16>
  %c4 = "arith.constant"() <{value = 0 : index}> : () -> index
  %c5 = "arith.constant"() <{value = 4 : index}> : () -> index
  %c6 = "arith.constant"() <{value = 1 : index}> : () -> index
  %rv7:2 = "scf.for"(%c4, %c5, %c6, %v1, %v3) ({
  ^bb0(%i9: index, %a10: vector<64x128xf32>, %a11: vector<64x128xf16>):
    %rv13:2 = "scf.while"(%v3, %v3) ({
    ^bb0(%a16: vector<64x128xf16>, %a17: vector<64x128xf16>):
      %f15 = "arith.constant"() <{value = false}> : () -> i1
      "scf.condition"(%f15, %v3, %v3) : (i1, vector<64x128xf16>, vector<64x128xf16>) -> ()
    }, {
    ^bb0(%a21: vector<64x128xf16>, %a22: vector<64x128xf16>):
      %v27 = "arith.constant"() <{value = dense<1.000000e+00> : vector<128xf32>}> : () -> vector<128xf32>
      %v28 = "mosaic_gpu.broadcast_in_dim"(%v27) <{broadcast_dimensions = array<i64: 1>}> : (vector<128xf32>) -> vector<64x128xf32>
      "scf.yield"(%v3, %v3) : (vector<64x128xf16>, vector<64x128xf16>) -> ()
    }) : (vector<64x128xf16>, vector<64x128xf16>) -> (vector<64x128xf16>, vector<64x128xf16>)
    "scf.yield"(%v1, %v3) : (vector<64x128xf32>, vector<64x128xf16>) -> ()
  }) : (index, index, index, vector<64x128xf32>, vector<64x128xf16>) -> (vector<64x128xf32>, vector<64x128xf16>)
  %v29 = "arith.constant"() <{value = dense<[0.0, 1.0, 2.0, 3.0, 4.0, 5.0, 6.0, 0.0, 1.0, 2.0, 3.0, 4.0, 5.0, 6.0, 0.0, 1.0, 2.0, 3.0, 4.0, 5.0, 6.0, 0.0, 1.0, 2.0, 3.0, 4.0, 5.0, 6.0, 0.0, 1.0, 2.0, 3.0, 4.0, 5.0, 6.0, 0.0, 1.0, 2.0, 3.0, 4.0, 5.0, 6.0, 0.0, 1.0, 2.0, 3.0, 4.0, 5.0, 6.0, 0.0, 1.0, 2.0, 3.0, 4.0, 5.0, 6.0, 0.0, 1.0, 2.0, 3.0, 4.0, 5.0, 6.0, 0.0]> : vector<64xf32>}> : () -> vector<64xf32>
  "func.return"() : () -> ()
}

