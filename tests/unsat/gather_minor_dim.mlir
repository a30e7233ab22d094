module {
  func.func @kernel(%gmem: memref<256x256xf16>, %idx: vector<16xi32>) {
    %ref = "mosaic_gpu.slice_smem"() <{offset = 0 : i32}> : () -> memref<16x8xf16, #gpu.address_space<workgroup>> loc("kernel.py":5:4)
    %bar = "mosaic_gpu.slice_smem"() <{offset = 8192 : i32}> : () -> memref<!mosaic_gpu.barrier, #gpu.address_space<workgroup>> loc("kernel.py":6:4)
    %c0 = "arith.constant"() <{value = 0 : i32}> : () -> i32 loc("kernel.py":7:4)
    "mosaic_gpu.async_load"(%gmem, %ref, %bar, %idx, %c0) <{collective = [], oob_fill_mode = 2 : i32, operandSegmentSizes = array<i32: 1, 1, 1, 2, 0, 0>, slice_lengths = array<i64: 16, 8>}> : (memref<256x256xf16>, memref<16x8xf16, #gpu.address_space<workgroup>>, memref<!mosaic_gpu.barrier, #gpu.address_space<workgroup>>, vector<16xi32>, i32) -> () loc("kernel.py":8:4)
    return
  }
}
