// fuzz regression: smalto-crash
// arch: 9.0
// detail: ValueError: Tiling ((128, 8), (32, 8), (8, 8), (2,)) does not apply to shape ((64,), (1, 128))
func.func @kernel() {
  %r7 = "mosaic_gpu.slice_smem"() <{offset = 0 : i32}> : () -> memref<64x128xbf16, #gpu.address_space<workgroup>>
  %v6 = "mosaic_gpu.vector_load"(%r7) : (memref<64x128xbf16, #gpu.address_space<workgroup>>) -> vector<64x128xbf16>
  %v18 = "mosaic_gpu.layout_cast"(%v6) <{new_layout = #mosaic_gpu.TiledLayout<[[64, 8], [16, 8], [8, 8], [2]], warp_dims = [-7], lane_dims = [-3, -2], vector_dim = -1>}> : (vector<64x128xbf16>) -> vector<64x128xbf16>
  %r19 = "mosaic_gpu.slice_smem"() <{offset = 262144 : i32}> : () -> memref<64x128xbf16, #gpu.address_space<workgroup>>
  %r20 = "mosaic_gpu.with_transforms"(%r19) <{transforms = [#mosaic_gpu.tile<[128]>, #mosaic_gpu.swizzle<16 : i32>]}> : (memref<64x128xbf16, #gpu.address_space<workgroup>>) -> memref<64x128xbf16, #gpu.address_space<workgroup>>
  %b21 = "mosaic_gpu.slice_smem"() <{offset = 327680 : i32}> : () -> memref<!mosaic_gpu.barrier, #gpu.address_space<workgroup>>
  %s22 = "arith.constant"() <{value = 0 : i32}> : () -> i32
  "mosaic_gpu.async_store_smem"(%v18, %r20, %b21, %s22) <{cluster_dim = 0 : i32, optimized = true}> : (vector<64x128xbf16>, memref<64x128xbf16, #gpu.address_space<workgroup>>, memref<!mosaic_gpu.barrier, #gpu.address_space<workgroup>>, i32) -> ()
  "func.return"() : () -> ()
}
