// fuzz regression: attributes-differ
// arch: 9.0
// detail: 3:scf.while in_layouts: jax=[#mosaic_gpu.WGSplatFragLayout<[128, 256]>] smalto=[#mosaic_gpu.TiledLayout<[[64, 8], [16, 8], [8, 8], [2]], warp_dims = [-7], lane_dims = [-3, -2], vector_dim = -1>]
func.func @kernel() {
  %v1 = "arith.constant"() <{value = dense<1> : vector<128x256xi16>}> : () -> vector<128x256xi16>
  %v2 = "scf.while"(%v1) ({
  ^bb0(%a4: vector<128x256xi16>):
    %f3 = "arith.constant"() <{value = false}> : () -> i1
    %r6 = "mosaic_gpu.slice_smem"() <{offset = 0 : i32}> : () -> memref<64x128xi8, #gpu.address_space<workgroup>>
    %r7 = "mosaic_gpu.with_transforms"(%r6) <{transforms = [#mosaic_gpu.tile<[8, 64]>, #mosaic_gpu.swizzle<64 : i32>]}> : (memref<64x128xi8, #gpu.address_space<workgroup>>) -> memref<64x128xi8, #gpu.address_space<workgroup>>
    %v5 = "mosaic_gpu.vector_load"(%r7) : (memref<64x128xi8, #gpu.address_space<workgroup>>) -> vector<64x128xi8>
    %b8 = "mosaic_gpu.slice_smem"() <{offset = 65536 : i32}> : () -> memref<!mosaic_gpu.barrier, #gpu.address_space<workgroup>>
    %s9 = "arith.constant"() <{value = 0 : i32}> : () -> i32
    "mosaic_gpu.async_store_smem"(%v5, %r7, %b8, %s9) <{cluster_dim = 0 : i32, optimized = true}> : (vector<64x128xi8>, memref<64x128xi8, #gpu.address_space<workgroup>>, memref<!mosaic_gpu.barrier, #gpu.address_space<workgroup>>, i32) -> ()
    %v10 = "arith.addi"(%v1, %a4) : (vector<128x256xi16>, vector<128x256xi16>) -> vector<128x256xi16>
    "scf.condition"(%f3, %v1) : (i1, vector<128x256xi16>) -> ()
  }, {
  ^bb0(%a11: vector<128x256xi16>):
    "scf.yield"(%v1) : (vector<128x256xi16>) -> ()
  }) : (vector<128x256xi16>) -> (vector<128x256xi16>)
  %v12 = "arith.addi"(%v1, %v1) : (vector<128x256xi16>, vector<128x256xi16>) -> vector<128x256xi16>
  %v13 = "arith.addi"(%v1, %v2) : (vector<128x256xi16>, vector<128x256xi16>) -> vector<128x256xi16>
  %v14 = "arith.constant"() <{value = dense<1> : vector<128x256xi16>}> : () -> vector<128x256xi16>
  %v15 = "arith.muli"(%v14, %v1) : (vector<128x256xi16>, vector<128x256xi16>) -> vector<128x256xi16>
  "func.return"() : () -> ()
}
