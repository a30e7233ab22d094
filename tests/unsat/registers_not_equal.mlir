module {
  func.func @kernel() {
    %ref = "mosaic_gpu.slice_smem"() <{offset = 0 : i32}> : () -> memref<128x128xf32, #gpu.address_space<workgroup>> loc("kernel.py":80:4)
    %v = "mosaic_gpu.vector_load"(%ref) : (memref<128x128xf32, #gpu.address_space<workgroup>>) -> vector<128x128xf32> loc("kernel.py":81:8)
    "mosaic_gpu.custom_primitive"(%v) <{in_layouts = [#mosaic_gpu.TiledLayout<[[64, 8], [16, 8], [8, 8], [2]], warp_dims = [-7], lane_dims = [-3, -2], vector_dim = -1>], in_transforms = [], out_layouts = []}> ({
      "mosaic_gpu.return"() : () -> ()
    }) : (vector<128x128xf32>) -> () loc("kernel.py":82:4)
    %a = "arith.addf"(%v, %v) : (vector<128x128xf32>, vector<128x128xf32>) -> vector<128x128xf32> loc("kernel.py":83:8)
    "mosaic_gpu.custom_primitive"(%a) <{in_layouts = [#mosaic_gpu.WGStridedFragLayout<[128, 128], 2>], in_transforms = [], out_layouts = []}> ({
      "mosaic_gpu.return"() : () -> ()
    }) : (vector<128x128xf32>) -> () loc("kernel.py":84:4)
    return
  }
}
