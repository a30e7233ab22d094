module {
  func.func @kernel(%gmem: memref<256x256xf16>, %i: i32) {
    %raw = "mosaic_gpu.slice_smem"() <{offset = 0 : i32}> : () -> memref<64x64xf16, #gpu.address_space<workgroup>> loc("kernel.py":90:4)
    %ref = "mosaic_gpu.with_transforms"(%raw) <{transforms = [#mosaic_gpu.tile<[8, 64]>, #mosaic_gpu.swizzle<128 : i32>]}> : (memref<64x64xf16, #gpu.address_space<workgroup>>) -> memref<64x64xf16, #gpu.address_space<workgroup>> loc("kernel.py":91:10)
    %c0 = "arith.constant"() <{value = 0 : i32}> : () -> i32 loc("kernel.py":92:4)
    %bar = "mosaic_gpu.slice_smem"() <{offset = 8192 : i32}> : () -> memref<!mosaic_gpu.barrier, #gpu.address_space<workgroup>> loc("kernel.py":92:8)
    "mosaic_gpu.async_load"(%gmem, %ref, %bar, %i, %c0) <{collective = [], oob_fill_mode = 2 : i32, operandSegmentSizes = array<i32: 1, 1, 1, 2, 0, 0>, slice_lengths = array<i64: 64, 64>}> : (memref<256x256xf16>, memref<64x64xf16, #gpu.address_space<workgroup>>, memref<!mosaic_gpu.barrier, #gpu.address_space<workgroup>>, i32, i32) -> () loc("kernel.py":93:4)
    return
  }
}
