// fuzz regression: smalto-answer-not-lowerable
// arch: 9.0
// detail: NotImplementedError: Vector length should be a multiple of byte size
func.func @kernel(%arg0: memref<1024x1024xbf16>) {
  %v1 = "arith.constant"() <{value = dense<1> : vector<128xi4>}> : () -> vector<128xi4>
  %r2 = "mosaic_gpu.slice_smem"() <{alias_id = 1 : i64, offset = 0 : i32}> : () -> memref<128xi4, #gpu.address_space<workgroup>>
  "mosaic_gpu.vector_store"(%v1, %r2) <{optimized = false}> : (vector<128xi4>, memref<128xi4, #gpu.address_space<workgroup>>) -> ()
  %v3 = "arith.constant"() <{value = dense<1> : vector<128xi4>}> : () -> vector<128xi4>
  %v4 = "arith.extsi"(%v3) : (vector<128xi4>) -> vector<128xi8>
  %v5 = "arith.muli"(%v1, %v3) : (vector<128xi4>, vector<128xi4>) -> vector<128xi4>
  %r6 = "mosaic_gpu.slice_smem"() <{offset = 65536 : i32}> : () -> memref<16x64xbf16, #gpu.address_space<workgroup>>
  %v7 = "arith.constant"() <{value = dense<1> : vector<16xi32>}> : () -> vector<16xi32>
  %i8 = "arith.constant"() <{value = 0 : i32}> : () -> i32
  %b9 = "mosaic_gpu.slice_smem"() <{offset = 131072 : i32}> : () -> memref<!mosaic_gpu.barrier, #gpu.address_space<workgroup>>
  "mosaic_gpu.async_load"(%arg0, %r6, %b9, %v7, %i8) <{collective = [], operandSegmentSizes = array<i32: 1, 1, 1, 2, 0, 0>, slice_lengths = array<i64: 16, 64>}> : (memref<1024x1024xbf16>, memref<16x64xbf16, #gpu.address_space<workgroup>>, memref<!mosaic_gpu.barrier, #gpu.address_space<workgroup>>, vector<16xi32>, i32) -> ()
  %v10 = "arith.constant"() <{value = dense<1.000000e+00> : vector<64x64x2xf32>}> : () -> vector<64x64x2xf32>
  %v11 = "vector.shape_cast"(%v10) : (vector<64x64x2xf32>) -> vector<64x128xf32>
  %v12 = "arith.truncf"(%v11) : (vector<64x128xf32>) -> vector<64x128xf16>
  "func.return"() : () -> ()
}
