// fuzz regression: checker-rejects
// arch: 9.0
// detail: -:7:3: mosaic_gpu.async_store_smem: no optimized transfer between registers in WGMMA and the SMEM ref memref<128x256xf16, strided<[1, 128]>, #gpu.address_space<workgroup>> tiled (8, 64), no swizzle (UnsupportedTransferError: Tiled strides must be a multiple of the vector length, except for the load 
func.func @kernel() {
  %v7 = "arith.constant"() <{value = dense<1.000000e+00> : vector<128x256xf16>}> : () -> vector<128x256xf16>
  %r8 = "mosaic_gpu.slice_smem"() <{offset = 0 : i32}> : () -> memref<256x128xf16, #gpu.address_space<workgroup>>
  %r9 = "memref.transpose"(%r8) <{permutation = affine_map<(d0, d1) -> (d1, d0)>}> : (memref<256x128xf16, #gpu.address_space<workgroup>>) -> memref<128x256xf16, strided<[1, 128]>, #gpu.address_space<workgroup>>
  %b10 = "mosaic_gpu.slice_smem"() <{offset = 65536 : i32}> : () -> memref<!mosaic_gpu.barrier, #gpu.address_space<workgroup>>
  %s11 = "arith.constant"() <{value = 0 : i32}> : () -> i32
  "mosaic_gpu.async_store_smem"(%v7, %r9, %b10, %s11) <{cluster_dim = 0 : i32}> : (vector<128x256xf16>, memref<128x256xf16, strided<[1, 128]>, #gpu.address_space<workgroup>>, memref<!mosaic_gpu.barrier, #gpu.address_space<workgroup>>, i32) -> ()
  "func.return"() : () -> ()
}
