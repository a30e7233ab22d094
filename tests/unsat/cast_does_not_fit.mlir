module {
  func.func @kernel() {
    %c = "arith.constant"() <{value = dense<1.0> : vector<32x32xf32>}> : () -> vector<32x32xf32> loc("kernel.py":50:8)
    %t = "mosaic_gpu.layout_cast"(%c) <{new_layout = #mosaic_gpu.TiledLayout<[[64, 8], [16, 8], [8, 8], [2]], warp_dims = [-7], lane_dims = [-3, -2], vector_dim = -1>}> : (vector<32x32xf32>) -> vector<32x32xf32> loc("kernel.py":51:8)
    return
  }
}
