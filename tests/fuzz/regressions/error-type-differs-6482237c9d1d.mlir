// fuzz regression: error-type-differs
// arch: 9.0
// note: [swizzle<128>] alone on an untiled ref: jax 0.12 reads it (smalto raised NotImplementedError)
// detail: JAX: unsat (Failed to infer a possible set of layouts. This should only happen if user-provided layout casts are unsatisfiable. To dump the constraint system for debugging, use `MOSAIC_GPU_DUMP_CONSTRAINT_SYSTEM=1`.); smalto: unsupported (unsupported SMEM transforms [<SwizzlingMode.k128ByteSwizzle: 
func.func @kernel() {
  %r16 = "mosaic_gpu.slice_smem"() <{offset = 0 : i32}> : () -> memref<64x64xf16, #gpu.address_space<workgroup>>
  %r17 = "mosaic_gpu.with_transforms"(%r16) <{transforms = [#mosaic_gpu.swizzle<128 : i32>]}> : (memref<64x64xf16, #gpu.address_space<workgroup>>) -> memref<64x64xf16, #gpu.address_space<workgroup>>
  %v12 = "mosaic_gpu.vector_load"(%r17) : (memref<64x64xf16, #gpu.address_space<workgroup>>) -> vector<64x64xf16>
  %v13 = "mosaic_gpu.optimization_barrier"(%v12) : (vector<64x64xf16>) -> vector<64x64xf16>
  "func.return"() : () -> ()
}
