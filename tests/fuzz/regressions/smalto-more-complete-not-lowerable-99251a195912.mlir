// fuzz regression: smalto-more-complete-not-lowerable
// arch: 10.0
// detail: NotImplementedError: Cannot convert from TiledLayout(tiling=Tiling(tiles=((64, 8), (16, 8), (8, 8), (2, 2), (2, 1))), warp_dims=(-10,), lane_dims=(-6, -3, -5), vector_dim=-2, unreduced_operation=None) to TiledLayout(tiling=Tiling(tiles=((64, 8), (16, 8), (8, 8), (2,))), warp_dims=(-7,), lane_dims=(-
func.func @kernel() {
  %r2 = "mosaic_gpu.slice_smem"() <{offset = 0 : i32}> : () -> memref<128x64xi4, #gpu.address_space<workgroup>>
  %r3 = "memref.transpose"(%r2) <{permutation = affine_map<(d0, d1) -> (d1, d0)>}> : (memref<128x64xi4, #gpu.address_space<workgroup>>) -> memref<64x128xi4, strided<[1, 64]>, #gpu.address_space<workgroup>>
  %v1 = "mosaic_gpu.vector_load"(%r3) : (memref<64x128xi4, strided<[1, 64]>, #gpu.address_space<workgroup>>) -> vector<64x128xi4>
  %v4 = "mosaic_gpu.layout_cast"(%v1) <{new_layout = #mosaic_gpu.TiledLayout<[[64, 8], [16, 8], [8, 8], [2]], warp_dims = [-7], lane_dims = [-3, -2], vector_dim = -1>, strict = false}> : (vector<64x128xi4>) -> vector<64x128xi4>
  "func.return"() : () -> ()
}
