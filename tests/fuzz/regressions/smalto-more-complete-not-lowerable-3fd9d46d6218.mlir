// fuzz regression: smalto-more-complete-not-lowerable
// arch: 9.0
// detail: NotImplementedError: Pointwise operations on 4-bit types are unsupported (except bitwise operations). Upcast to a 16- or 32-bit type before performing the operation.
func.func @kernel() {
  %v1 = "arith.constant"() <{value = dense<1> : vector<64x64xi4>}> : () -> vector<64x64xi4>
  %r2 = "mosaic_gpu.slice_smem"() <{offset = 0 : i32}> : () -> memref<64x64xi4, #gpu.address_space<workgroup>>
  %b3 = "mosaic_gpu.slice_smem"() <{offset = 65536 : i32}> : () -> memref<!mosaic_gpu.barrier, #gpu.address_space<workgroup>>
  %s4 = "arith.constant"() <{value = 0 : i32}> : () -> i32
  "mosaic_gpu.async_store_smem"(%v1, %r2, %b3, %s4) <{cluster_dim = 0 : i32}> : (vector<64x64xi4>, memref<64x64xi4, #gpu.address_space<workgroup>>, memref<!mosaic_gpu.barrier, #gpu.address_space<workgroup>>, i32) -> ()
  %v5 = "arith.addi"(%v1, %v1) : (vector<64x64xi4>, vector<64x64xi4>) -> vector<64x64xi4>
  "func.return"() : () -> ()
}
