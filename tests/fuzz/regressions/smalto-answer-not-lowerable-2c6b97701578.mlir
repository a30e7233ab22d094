// fuzz regression: smalto-answer-not-lowerable
// arch: 9.0
// detail: MLIRError: Verification failed: error: "-":14:3: 'vector.store' op most minor memref dim must have unit stride note: "-":14:3: see current operation: "vector.store"(%1060, %1036, %1072, %1069) : (vector<4xf16>, memref<64x128xf16, strided<[1, 64]>, #gpu.address_space<workgroup>>, index, index) -> ()
func.func @kernel() {
  %v1 = "arith.constant"() <{value = dense<1.000000e+00> : vector<128x64xf32>}> : () -> vector<128x64xf32>
  %v2 = "arith.constant"() <{value = dense<1.000000e+00> : vector<128x16xf16>}> : () -> vector<128x16xf16>
  %s4 = "arith.constant"() <{value = 2.000000e+00 : f16}> : () -> f16
  %v3 = "vector.broadcast"(%s4) : (f16) -> vector<16x64xf16>
  %v5 = "mosaic_gpu.mma"(%v1, %v2, %v3) : (vector<128x64xf32>, vector<128x16xf16>, vector<16x64xf16>) -> vector<128x64xf32>
  %v6 = "arith.constant"() <{value = dense<1.000000e+00> : vector<2x128x64xf16>}> : () -> vector<2x128x64xf16>
  %v7 = "mosaic_gpu.optimization_barrier"(%v6) : (vector<2x128x64xf16>) -> vector<2x128x64xf16>
  %v8 = "arith.constant"() <{value = dense<true> : vector<256x128xi1>}> : () -> vector<256x128xi1>
  %s10 = "arith.constant"() <{value = 2.000000e+00 : f16}> : () -> f16
  %v9 = "vector.broadcast"(%s10) : (f16) -> vector<64x128xf16>
  %r11 = "mosaic_gpu.slice_smem"() <{alias_id = 1 : i64, offset = 0 : i32}> : () -> memref<128x64xf16, #gpu.address_space<workgroup>>
  %r12 = "memref.transpose"(%r11) <{permutation = affine_map<(d0, d1) -> (d1, d0)>}> : (memref<128x64xf16, #gpu.address_space<workgroup>>) -> memref<64x128xf16, strided<[1, 64]>, #gpu.address_space<workgroup>>
  "mosaic_gpu.vector_store"(%v9, %r12) : (vector<64x128xf16>, memref<64x128xf16, strided<[1, 64]>, #gpu.address_space<workgroup>>) -> ()
  %v13 = "arith.constant"() <{value = dense<1.000000e+00> : vector<32x64xf32>}> : () -> vector<32x64xf32>
  %v14 = "arith.constant"() <{value = dense<1.000000e+00> : vector<32x16xf16>}> : () -> vector<32x16xf16>
  %v15 = "mosaic_gpu.mma"(%v13, %v14, %v3) : (vector<32x64xf32>, vector<32x16xf16>, vector<16x64xf16>) -> vector<32x64xf32>
  %v16 = "arith.constant"() <{value = dense<true> : vector<8x128xi1>}> : () -> vector<8x128xi1>
  "func.return"() : () -> ()
}
