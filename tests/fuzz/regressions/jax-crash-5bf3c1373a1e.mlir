// fuzz regression: jax-crash
// arch: 9.0
// expect: sat
// note: JAX's wgmma rule drops A's site when A and B are one ref and then fails its own count check; smalto annotates both
// detail: Expected the same number of in_transforms (1) as SMEM ref operands (2). op= %1 = mosaic_gpu.wgmma accumulator(%cst : vector<64x64xf32>) a(%0 : memref<64x64xf16, #gpu.address_space<workgroup>>) b(%0 : memref<64x64xf16, #gpu.address_space<workgroup>>) {in_layouts = [#mosaic_gpu.TiledLayout<[[64, 8], [
func.func @kernel() {
  %v1 = "arith.constant"() <{value = dense<1.000000e+00> : vector<64x64xf32>}> : () -> vector<64x64xf32>
  %r2 = "mosaic_gpu.slice_smem"() <{offset = 0 : i32}> : () -> memref<64x64xf16, #gpu.address_space<workgroup>>
  %v3 = "mosaic_gpu.wgmma"(%v1, %r2, %r2) : (vector<64x64xf32>, memref<64x64xf16, #gpu.address_space<workgroup>>, memref<64x64xf16, #gpu.address_space<workgroup>>) -> vector<64x64xf32>
  "func.return"() : () -> ()
}
