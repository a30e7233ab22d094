// fuzz regression: checker-rejects
// arch: 9.0
// detail: -:7:3: mosaic_gpu.async_load: a copy with swizzle 64 needs the minor dim to be exactly 32 elements, not 64 (untiled, swizzle 64)
func.func @kernel(%arg0: memref<1024x1024xf16>) {
  %r1 = "mosaic_gpu.slice_smem"() <{alias_id = 1 : i64, offset = 0 : i32}> : () -> memref<16x64xf16, #gpu.address_space<workgroup>>
  %r2 = "mosaic_gpu.with_transforms"(%r1) <{transforms = [#mosaic_gpu.swizzle<64 : i32>]}> : (memref<16x64xf16, #gpu.address_space<workgroup>>) -> memref<16x64xf16, #gpu.address_space<workgroup>>
  %v3 = "arith.constant"() <{value = dense<1> : vector<16xi32>}> : () -> vector<16xi32>
  %i4 = "arith.constant"() <{value = 0 : i32}> : () -> i32
  %b5 = "mosaic_gpu.slice_smem"() <{offset = 65536 : i32}> : () -> memref<!mosaic_gpu.barrier, #gpu.address_space<workgroup>>
  "mosaic_gpu.async_load"(%arg0, %r2, %b5, %v3, %i4) <{collective = [], operandSegmentSizes = array<i32: 1, 1, 1, 2, 0, 0>, slice_lengths = array<i64: 16, 64>}> : (memref<1024x1024xf16>, memref<16x64xf16, #gpu.address_space<workgroup>>, memref<!mosaic_gpu.barrier, #gpu.address_space<workgroup>>, vector<16xi32>, i32) -> ()
  %v6 = "arith.addi"(%v3, %v3) : (vector<16xi32>, vector<16xi32>) -> vector<16xi32>
  %v7 = "arith.constant"() <{value = dense<1.000000e+00> : vector<64x128xf32>}> : () -> vector<64x128xf32>
  %v8 = "vector.extract_strided_slice"(%v7) <{offsets = [0, 0], sizes = [32, 128], strides = [1, 1]}> : (vector<64x128xf32>) -> vector<32x128xf32>
  "func.return"() : () -> ()
}
