// fuzz regression: checker-rejects
// arch: 9.0
// detail: -:6:3: mosaic_gpu.async_store_smem: the lowering cannot store WGMMA_COL: it replicates elements
func.func @kernel() {
  %v1 = "arith.constant"() <{value = dense<1.000000e+00> : vector<8x128xf32>}> : () -> vector<8x128xf32>
  %r2 = "mosaic_gpu.slice_smem"() <{offset = 0 : i32}> : () -> memref<8x128xf32, #gpu.address_space<workgroup>>
  %b3 = "mosaic_gpu.slice_smem"() <{offset = 65536 : i32}> : () -> memref<!mosaic_gpu.barrier, #gpu.address_space<workgroup>>
  %s4 = "arith.constant"() <{value = 0 : i32}> : () -> i32
  "mosaic_gpu.async_store_smem"(%v1, %r2, %b3, %s4) <{cluster_dim = 0 : i32, optimized = true}> : (vector<8x128xf32>, memref<8x128xf32, #gpu.address_space<workgroup>>, memref<!mosaic_gpu.barrier, #gpu.address_space<workgroup>>, i32) -> ()
  "func.return"() : () -> ()
}
