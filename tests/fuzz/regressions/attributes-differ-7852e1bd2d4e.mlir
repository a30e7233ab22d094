// fuzz regression: attributes-differ
// arch: 10.0
// detail: 4:arith.maxsi in_layouts: jax=[#mosaic_gpu.TiledLayout<[[128, 8], [32, 8], [8, 8], [2]], warp_dims = [-7], lane_dims = [-3, -2], vector_dim = -1>, #mosaic_gpu.TiledLayout<[[128, 8], [32, 8], [8, 8], [2]], warp_dims = [-7], lane_dims = [-3, -2], vector_dim = -1>] smalto=[#mosaic_gpu.TiledLayout<[[64,
func.func @kernel() {
  %v1 = "arith.constant"() <{value = dense<1> : vector<128x256xi8>}> : () -> vector<128x256xi8>
  %v2 = "arith.constant"() <{value = dense<1> : vector<128x256xi8>}> : () -> vector<128x256xi8>
  %v3 = "arith.maxsi"(%v1, %v2) : (vector<128x256xi8>, vector<128x256xi8>) -> vector<128x256xi8>
  %v4 = "mosaic_gpu.optimization_barrier"(%v1) : (vector<128x256xi8>) -> vector<128x256xi8>
  %v5 = "mosaic_gpu.layout_cast"(%v4) <{new_layout = #mosaic_gpu.TiledLayout<[[64, 8], [16, 8], [8, 8], [2, 2], [2, 1]], warp_dims = [-10], lane_dims = [-6, -3, -5], vector_dim = -2>}> : (vector<128x256xi8>) -> vector<128x256xi8>
  %c6 = "arith.constant"() <{value = 0 : index}> : () -> index
  %v7 = "scf.index_switch"(%c6) <{cases = array<i64: 0, 1>}> ({
    %v8 = "arith.constant"() <{value = dense<1> : vector<128x256xi8>}> : () -> vector<128x256xi8>
    "scf.yield"(%v8) : (vector<128x256xi8>) -> ()
  }, {
    "scf.yield"(%v5) : (vector<128x256xi8>) -> ()
  }, {
    "scf.yield"(%v2) : (vector<128x256xi8>) -> ()
  }) : (index) -> (vector<128x256xi8>)
  %s10 = "arith.constant"() <{value = 2 : i8}> : () -> i8
  %v9 = "vector.broadcast"(%s10) : (i8) -> vector<128x256xi8>
  %v11 = "scf.while"(%v9) ({
  ^bb0(%a13: vector<128x256xi8>):
    %f12 = "arith.constant"() <{value = false}> : () -> i1
    %r14 = "mosaic_gpu.slice_smem"() <{offset = 0 : i32}> : () -> memref<128x256xi8, #gpu.address_space<workgroup>>
    %r15 = "mosaic_gpu.with_transforms"(%r14) <{transforms = [#mosaic_gpu.tile<[8, 16]>, #mosaic_gpu.swizzle<16 : i32>]}> : (memref<128x256xi8, #gpu.address_space<workgroup>>) -> memref<128x256xi8, #gpu.address_space<workgroup>>
    %b16 = "mosaic_gpu.slice_smem"() <{offset = 65536 : i32}> : () -> memref<!mosaic_gpu.barrier, #gpu.address_space<workgroup>>
    %s17 = "arith.constant"() <{value = 0 : i32}> : () -> i32
    "mosaic_gpu.async_store_smem"(%a13, %r15, %b16, %s17) <{cluster_dim = 0 : i32, optimized = true}> : (vector<128x256xi8>, memref<128x256xi8, #gpu.address_space<workgroup>>, memref<!mosaic_gpu.barrier, #gpu.address_space<workgroup>>, i32) -> ()
    "scf.condition"(%f12, %v4) : (i1, vector<128x256xi8>) -> ()
  }, {
  ^bb0(%a18: vector<128x256xi8>):
    "scf.yield"(%v3) : (vector<128x256xi8>) -> ()
  }) : (vector<128x256xi8>) -> (vector<128x256xi8>)
  %s20 = "arith.constant"() <{value = 2.000000e+00 : f16}> : () -> f16
  %v19 = "vector.broadcast"(%s20) : (f16) -> vector<16384xf16>
  %v21 = "vector.shape_cast"(%v19) : (vector<16384xf16>) -> vector<128x128xf16>
  "func.return"() : () -> ()
}
