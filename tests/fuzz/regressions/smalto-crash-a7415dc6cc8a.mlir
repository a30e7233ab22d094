// fuzz regression: smalto-crash
// arch: 10.0
// note: a [tile<[64]>, swizzle<32>] i4 ref: the swizzle is kept as given (jax 0.12)
// detail: AssertionError: 
func.func @kernel() {
  %v1 = "arith.constant"() <{value = dense<1> : vector<64xi4>}> : () -> vector<64xi4>
  %r2 = "mosaic_gpu.slice_smem"() <{offset = 0 : i32}> : () -> memref<64xi4, #gpu.address_space<workgroup>>
  %r3 = "mosaic_gpu.with_transforms"(%r2) <{transforms = [#mosaic_gpu.tile<[64]>, #mosaic_gpu.swizzle<32 : i32>]}> : (memref<64xi4, #gpu.address_space<workgroup>>) -> memref<64xi4, #gpu.address_space<workgroup>>
  "mosaic_gpu.vector_store"(%v1, %r3) : (vector<64xi4>, memref<64xi4, #gpu.address_space<workgroup>>) -> ()
  "func.return"() : () -> ()
}
