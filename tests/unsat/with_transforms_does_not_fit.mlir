module {
  func.func @kernel() {
    %raw = "mosaic_gpu.slice_smem"() <{offset = 0 : i32}> : () -> memref<4x64xf16, #gpu.address_space<workgroup>> loc("kernel.py":60:4)
    %ref = "mosaic_gpu.with_transforms"(%raw) <{transforms = [#mosaic_gpu.tile<[8, 64]>, #mosaic_gpu.swizzle<128 : i32>]}> : (memref<4x64xf16, #gpu.address_space<workgroup>>) -> memref<4x64xf16, #gpu.address_space<workgroup>> loc("kernel.py":61:10)
    %v = "mosaic_gpu.vector_load"(%ref) : (memref<4x64xf16, #gpu.address_space<workgroup>>) -> vector<4x64xf16> loc("kernel.py":62:8)
    return
  }
}
