module {
  func.func @kernel(%i: index) {
    %raw = "mosaic_gpu.slice_smem"() <{offset = 0 : i32}> : () -> memref<256x64xf16, #gpu.address_space<workgroup>> loc("kernel.py":40:4)
    %ref = "mosaic_gpu.with_transforms"(%raw) <{transforms = [#mosaic_gpu.tile<[8, 64]>, #mosaic_gpu.swizzle<128 : i32>]}> : (memref<256x64xf16, #gpu.address_space<workgroup>>) -> memref<256x64xf16, #gpu.address_space<workgroup>> loc("kernel.py":41:10)
    %sub = "memref.subview"(%ref, %i) <{operandSegmentSizes = array<i32: 1, 1, 0, 0>, static_offsets = array<i64: -9223372036854775808, 0>, static_sizes = array<i64: 64, 64>, static_strides = array<i64: 1, 1>}> : (memref<256x64xf16, #gpu.address_space<workgroup>>, index) -> memref<64x64xf16, strided<[64, 1], offset: ?>, #gpu.address_space<workgroup>> loc("kernel.py":42:10)
    %v = "mosaic_gpu.vector_load"(%sub) : (memref<64x64xf16, strided<[64, 1], offset: ?>, #gpu.address_space<workgroup>>) -> vector<64x64xf16> loc("kernel.py":43:8)
    return
  }
}
