// fuzz regression: smalto-more-complete-not-lowerable
// arch: 10.0
// detail: MLIRError: Verification failed: error: "-":9:11: 'vector.load' op most minor memref dim must have unit stride note: "-":9:11: see current operation: %252 = "vector.load"(%237, %250, %247) : (memref<64x128xf16, strided<[1, 64]>, #gpu.address_space<workgroup>>, index, index) -> vector<4xf16>
func.func @kernel() {
  %r2 = "mosaic_gpu.slice_smem"() <{alias_id = 1 : i64, offset = 0 : i32}> : () -> memref<16xf32, #gpu.address_space<workgroup>>
  %v1 = "mosaic_gpu.vector_load"(%r2) : (memref<16xf32, #gpu.address_space<workgroup>>) -> vector<16xf32>
  %v3 = "arith.maximumf"(%v1, %v1) : (vector<16xf32>, vector<16xf32>) -> vector<16xf32>
  %c4 = "arith.constant"() <{value = 2 : index}> : () -> index
  %v5 = "scf.index_switch"(%c4) <{cases = array<i64: 0>}> ({
    %r7 = "mosaic_gpu.slice_smem"() <{offset = 65536 : i32}> : () -> memref<128x64xf16, #gpu.address_space<workgroup>>
    %r8 = "memref.transpose"(%r7) <{permutation = affine_map<(d0, d1) -> (d1, d0)>}> : (memref<128x64xf16, #gpu.address_space<workgroup>>) -> memref<64x128xf16, strided<[1, 64]>, #gpu.address_space<workgroup>>
    %v6 = "mosaic_gpu.vector_load"(%r8) <{optimized = true}> : (memref<64x128xf16, strided<[1, 64]>, #gpu.address_space<workgroup>>) -> vector<64x128xf16>
    %v9 = "mosaic_gpu.layout_cast"(%v6) <{new_layout = #mosaic_gpu.WGStridedFragLayout<[64, 128], 4>, strict = true}> : (vector<64x128xf16>) -> vector<64x128xf16>
    "scf.yield"(%v1) : (vector<16xf32>) -> ()
  }, {
    "scf.yield"(%v3) : (vector<16xf32>) -> ()
  }) : (index) -> (vector<16xf32>)
  %v10 = "arith.addf"(%v1, %v1) : (vector<16xf32>, vector<16xf32>) -> vector<16xf32>
  %v11 = "arith.cmpf"(%v5, %v3) <{predicate = 2 : i64}> : (vector<16xf32>, vector<16xf32>) -> vector<16xi1>
  %v12 = "arith.select"(%v11, %v5, %v3) : (vector<16xi1>, vector<16xf32>, vector<16xf32>) -> vector<16xf32>
  %v13 = "arith.truncf"(%v1) : (vector<16xf32>) -> vector<16xf16>
  "func.return"() : () -> ()
}
