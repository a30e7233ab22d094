// fuzz regression: smalto-crash
// arch: 9.0
// detail: ValueError: min() arg is an empty sequence
func.func @kernel() {
  %r1 = "mosaic_gpu.slice_smem"() <{offset = 0 : i32}> : () -> memref<i32, #gpu.address_space<workgroup>>
  %r6 = "mosaic_gpu.slice_smem"() <{offset = 65536 : i32}> : () -> memref<64xf32, #gpu.address_space<workgroup>>
  %r7 = "mosaic_gpu.with_transforms"(%r6) <{transforms = [#mosaic_gpu.tile<[64]>, #mosaic_gpu.swizzle<16 : i32>]}> : (memref<64xf32, #gpu.address_space<workgroup>>) -> memref<64xf32, #gpu.address_space<workgroup>>
  %v5 = "mosaic_gpu.vector_load"(%r7) : (memref<64xf32, #gpu.address_space<workgroup>>) -> vector<64xf32>
  "func.return"() : () -> ()
}

