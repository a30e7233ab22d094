module {
  func.func @kernel() {
    %ref = "mosaic_gpu.slice_smem"() <{offset = 0 : i32}> : () -> memref<64x64xf16, #gpu.address_space<workgroup>> loc("kernel.py":70:4)
    "mosaic_gpu.custom_primitive"(%ref, %ref) <{in_layouts = [], in_transforms = [[#mosaic_gpu.tile<[8, 64]>, #mosaic_gpu.swizzle<128 : i32>], [#mosaic_gpu.tile<[8, 32]>, #mosaic_gpu.swizzle<64 : i32>]], out_layouts = []}> ({
    ^bb0(%a: memref<64x64xf16, #gpu.address_space<workgroup>>, %b: memref<64x64xf16, #gpu.address_space<workgroup>>):
      "mosaic_gpu.return"() : () -> ()
    }) : (memref<64x64xf16, #gpu.address_space<workgroup>>, memref<64x64xf16, #gpu.address_space<workgroup>>) -> () loc("kernel.py":71:4)
    return
  }
}
