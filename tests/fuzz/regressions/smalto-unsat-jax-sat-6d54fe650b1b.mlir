// fuzz regression: smalto-unsat-jax-sat
// arch: 9.0
// expect: sat
// note: mma with a 16x64 accumulator: jax 0.12 splits the warps 1 x 4 (MMALayouts.for_shape)
// detail: Failed to infer a possible set of layouts: `mosaic_gpu.mma` at -:5:9 requires the accumulator to be WGMMA_LAYOUT, which does not fit its shape (16, 64)
func.func @kernel() {
  %v1 = "arith.constant"() <{value = dense<1.000000e+00> : vector<16x64xf32>}> : () -> vector<16x64xf32>
  %v2 = "arith.constant"() <{value = dense<1.000000e+00> : vector<16x32xbf16>}> : () -> vector<16x32xbf16>
  %v3 = "arith.constant"() <{value = dense<1.000000e+00> : vector<32x64xbf16>}> : () -> vector<32x64xbf16>
  %v4 = "mosaic_gpu.mma"(%v1, %v2, %v3) : (vector<16x64xf32>, vector<16x32xbf16>, vector<32x64xbf16>) -> vector<16x64xf32>
  "func.return"() : () -> ()
}
