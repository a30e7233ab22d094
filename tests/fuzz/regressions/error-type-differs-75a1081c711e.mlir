// fuzz regression: error-type-differs
// arch: 10.0
// note: vector_concat (jax 0.12) of splats with nothing tiled: JAX says unsat (ValueError), smalto had no rule (NotImplementedError)
// detail: JAX: unsat (Failed to infer a possible set of layouts. This should only happen if user-provided layout casts are unsatisfiable. To dump the constraint system for debugging, use `MOSAIC_GPU_DUMP_CONSTRAINT_SYSTEM=1`.); smalto: unsupported (smalto has no layout rule for `mosaic_gpu.vector_concat` (at 
func.func @kernel() {
  %v1 = "arith.constant"() <{value = dense<1.000000e+00> : vector<32x128xbf16>}> : () -> vector<32x128xbf16>
  %v2 = "arith.constant"() <{value = dense<1.000000e+00> : vector<96x128xbf16>}> : () -> vector<96x128xbf16>
  %v3 = "mosaic_gpu.vector_concat"(%v1, %v2) <{dimension = 0 : i32}> : (vector<32x128xbf16>, vector<96x128xbf16>) -> vector<128x128xbf16>
  "func.return"() : () -> ()
}
