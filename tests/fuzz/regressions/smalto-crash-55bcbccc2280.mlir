// fuzz regression: smalto-crash
// arch: 9.0
// detail: ValueError: Strides (1,) have lower rank than tiling (1, 32)
func.func @kernel() {
  %r2 = "mosaic_gpu.slice_smem"() <{offset = 0 : i32}> : () -> memref<2x64xf32, #gpu.address_space<workgroup>>
  %c3 = "arith.constant"() <{value = 0 : index}> : () -> index
  %r4 = "memref.subview"(%r2, %c3) <{operandSegmentSizes = array<i32: 1, 1, 0, 0>, static_offsets = array<i64: -9223372036854775808, 0>, static_sizes = array<i64: 1, 64>, static_strides = array<i64: 1, 1>}> : (memref<2x64xf32, #gpu.address_space<workgroup>>, index) -> memref<64xf32, strided<[1], offset: ?>, #gpu.address_space<workgroup>>
  %v1 = "mosaic_gpu.vector_load"(%r4) : (memref<64xf32, strided<[1], offset: ?>, #gpu.address_space<workgroup>>) -> vector<64xf32>
  %v5 = "mosaic_gpu.optimization_barrier"(%v1) : (vector<64xf32>) -> vector<64xf32>
  "func.return"() : () -> ()
}
