// fuzz regression: smalto-fuel
// arch: 9.0
// expect: sat
// detail: Failed to infer a possible set of layouts: the search ran out of fuel after 5000 attempts; still open: %2. Add layout annotations (e.g. `plgpu.layout_cast` on one of these values) to guide the search, or raise `fuel`.
func.func @kernel() {
  %v1 = "arith.constant"() <{value = dense<1.000000e+00> : vector<64x128xf32>}> : () -> vector<64x128xf32>
  %v5 = "arith.constant"() <{value = dense<1.000000e+00> : vector<8192xf32>}> : () -> vector<8192xf32>
  %v6 = "vector.shape_cast"(%v5) : (vector<8192xf32>) -> vector<64x128xf32>
  %v8 = "arith.addf"(%v1, %v1) : (vector<64x128xf32>, vector<64x128xf32>) -> vector<64x128xf32>
  %v9 = "arith.addf"(%v1, %v1) : (vector<64x128xf32>, vector<64x128xf32>) -> vector<64x128xf32>
  %r10 = "mosaic_gpu.slice_smem"() <{offset = 0 : i32}> : () -> memref<64x128xf32, #gpu.address_space<workgroup>>
  %b11 = "mosaic_gpu.slice_smem"() <{offset = 65536 : i32}> : () -> memref<!mosaic_gpu.barrier, #gpu.address_space<workgroup>>
  %s12 = "arith.constant"() <{value = 0 : i32}> : () -> i32
  "mosaic_gpu.async_store_smem"(%v1, %r10, %b11, %s12) <{cluster_dim = 0 : i32, optimized = true}> : (vector<64x128xf32>, memref<64x128xf32, #gpu.address_space<workgroup>>, memref<!mosaic_gpu.barrier, #gpu.address_space<workgroup>>, i32) -> ()
  "func.return"() : () -> ()
}
