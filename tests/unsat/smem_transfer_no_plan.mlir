module {
  func.func @kernel() {
    %raw = "mosaic_gpu.slice_smem"() <{offset = 0 : i32}> : () -> memref<128x128xf16, #gpu.address_space<workgroup>> loc("kernel.py":30:4)
    %ref = "mosaic_gpu.with_transforms"(%raw) <{transforms = [#mosaic_gpu.tile<[8, 64]>]}> : (memref<128x128xf16, #gpu.address_space<workgroup>>) -> memref<128x128xf16, #gpu.address_space<workgroup>> loc("kernel.py":31:10)
    %c = "arith.constant"() <{value = dense<1.0> : vector<128x128xf16>}> : () -> vector<128x128xf16> loc("kernel.py":32:8)
    %t = "mosaic_gpu.layout_cast"(%c) <{new_layout = #mosaic_gpu.TiledLayout<[[64, 8], [16, 8], [8, 8], [2]], warp_dims = [-7], lane_dims = [-3, -2], vector_dim = -1>}> : (vector<128x128xf16>) -> vector<128x128xf16> loc("kernel.py":33:8)
    "mosaic_gpu.vector_store"(%t, %ref) <{optimized = true}> : (vector<128x128xf16>, memref<128x128xf16, #gpu.address_space<workgroup>>) -> () loc("kernel.py":34:4)
    return
  }
}
