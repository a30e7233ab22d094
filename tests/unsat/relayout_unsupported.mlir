module {
  func.func @kernel() {
    %ref = "mosaic_gpu.slice_smem"() <{offset = 0 : i32}> : () -> memref<128x128xf32, #gpu.address_space<workgroup>> loc("kernel.py":20:4)
    %v = "mosaic_gpu.vector_load"(%ref) : (memref<128x128xf32, #gpu.address_space<workgroup>>) -> vector<128x128xf32> loc("kernel.py":21:8)
    %a = "mosaic_gpu.layout_cast"(%v) <{new_layout = #mosaic_gpu.TiledLayout<[[64, 8], [16, 8], [8, 8], [2]], warp_dims = [-7], lane_dims = [-3, -2], vector_dim = -1>}> : (vector<128x128xf32>) -> vector<128x128xf32> loc("kernel.py":22:8)
    %b = "mosaic_gpu.layout_cast"(%a) <{new_layout = #mosaic_gpu.WGStridedFragLayout<[128, 128], 2>}> : (vector<128x128xf32>) -> vector<128x128xf32> loc("kernel.py":23:8)
    "mosaic_gpu.vector_store"(%b, %ref) : (vector<128x128xf32>, memref<128x128xf32, #gpu.address_space<workgroup>>) -> () loc("kernel.py":24:4)
    return
  }
}
