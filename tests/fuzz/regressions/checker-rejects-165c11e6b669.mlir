// fuzz regression: checker-rejects
// arch: 10.0
// detail: -:16:7: mosaic_gpu.async_load: a copy with swizzle 32 needs the minor tile dim to be exactly 8 elements, not 16 (tiled (16, 8), swizzle 32)
func.func @kernel(%arg0: memref<1024x1024xf32>) {
  %c1 = "arith.constant"() <{value = 0 : index}> : () -> index
  %v2 = "scf.index_switch"(%c1) <{cases = array<i64: 0, 1>}> ({
    %v3 = "arith.constant"() <{value = dense<1.000000e+00> : vector<16xf16>}> : () -> vector<16xf16>
    "scf.yield"(%v3) : (vector<16xf16>) -> ()
  }, {
    %v4 = "arith.constant"() <{value = dense<1> : vector<128x64xi4>}> : () -> vector<128x64xi4>
    %v5 = "arith.extsi"(%v4) : (vector<128x64xi4>) -> vector<128x64xi8>
    %c6 = "arith.constant"() <{value = 2 : index}> : () -> index
    %rv7:2 = "scf.index_switch"(%c6) <{cases = array<i64: 0>}> ({
      %r9 = "mosaic_gpu.slice_smem"() <{alias_id = 1 : i64, offset = 0 : i32}> : () -> memref<128x64xf32, #gpu.address_space<workgroup>>
      %r10 = "memref.transpose"(%r9) <{permutation = affine_map<(d0, d1) -> (d1, d0)>}> : (memref<128x64xf32, #gpu.address_space<workgroup>>) -> memref<64x128xf32, strided<[1, 64]>, #gpu.address_space<workgroup>>
      %i11 = "arith.constant"() <{value = 64 : i32}> : () -> i32
      %i12 = "arith.constant"() <{value = 8 : i32}> : () -> i32
      %b13 = "mosaic_gpu.slice_smem"() <{offset = 65536 : i32}> : () -> memref<!mosaic_gpu.barrier, #gpu.address_space<workgroup>>
      "mosaic_gpu.async_load"(%arg0, %r10, %b13, %i11, %i12) <{collective = [], operandSegmentSizes = array<i32: 1, 1, 1, 2, 0, 0>, slice_lengths = array<i64: 64, 128>}> : (memref<1024x1024xf32>, memref<64x128xf32, strided<[1, 64]>, #gpu.address_space<workgroup>>, memref<!mosaic_gpu.barrier, #gpu.address_space<workgroup>>, i32, i32) -> ()
      %v14 = "arith.constant"() <{value = dense<true> : vector<64x64xi1>}> : () -> vector<64x64xi1>
      %v15 = "mosaic_gpu.optimization_barrier"(%v14) : (vector<64x64xi1>) -> vector<64x64xi1>
      %r17 = "mosaic_gpu.slice_smem"() <{offset = 131072 : i32}> : () -> memref<64x256xf16, #gpu.address_space<workgroup>>
      %r18 = "memref.transpose"(%r17) <{permutation = affine_map<(d0, d1) -> (d1, d0)>}> : (memref<64x256xf16, #gpu.address_space<workgroup>>) -> memref<256x64xf16, strided<[1, 256]>, #gpu.address_space<workgroup>>
      %v16 = "mosaic_gpu.vector_load"(%r18) <{optimized = false}> : (memref<256x64xf16, strided<[1, 256]>, #gpu.address_space<workgroup>>) -> vector<256x64xf16>
      %s20 = "arith.constant"() <{value = 2.000000e+00 : f16}> : () -> f16
      %v19 = "vector.broadcast"(%s20) : (f16) -> vector<256x64xf16>
      %v21 = "mosaic_gpu.vector_concat"(%v16, %v19) <{dimension = 1 : i32}> : (vector<256x64xf16>, vector<256x64xf16>) -> vector<256x128xf16>
      %v22 = "arith.constant"() <{value = dense<1> : vector<128x64xi8>}> : () -> vector<128x64xi8>
      "scf.yield"(%v5, %v22) : (vector<128x64xi8>, vector<128x64xi8>) -> ()
    }, {
      "scf.yield"(%v5, %v5) : (vector<128x64xi8>, vector<128x64xi8>) -> ()
    }) : (index) -> (vector<128x64xi8>, vector<128x64xi8>)
    %s24 = "arith.constant"() <{value = 2.000000e+00 : f16}> : () -> f16
    %v23 = "vector.broadcast"(%s24) : (f16) -> vector<16xf16>
    "scf.yield"(%v23) : (vector<16xf16>) -> ()
  }, {
    %r26 = "mosaic_gpu.slice_smem"() <{alias_id = 2 : i64, offset = 196608 : i32}> : () -> memref<16xf16, #gpu.address_space<workgroup>>
    %v25 = "mosaic_gpu.vector_load"(%r26) : (memref<16xf16, #gpu.address_space<workgroup>>) -> vector<16xf16>
    "scf.yield"(%v25) : (vector<16xf16>) -> ()
  }) : (index) -> (vector<16xf16>)
  %v27 = "arith.addf"(%v2, %v2) : (vector<16xf16>, vector<16xf16>) -> vector<16xf16>
  %v28 = "arith.constant"() <{value = dense<1.000000e+00> : vector<16xf16>}> : () -> vector<16xf16>
  %v29 = "arith.cmpf"(%v28, %v28) <{predicate = 2 : i64}> : (vector<16xf16>, vector<16xf16>) -> vector<16xi1>
  %v30 = "arith.select"(%v29, %v28, %v28) : (vector<16xi1>, vector<16xf16>, vector<16xf16>) -> vector<16xf16>
  %s32 = "arith.constant"() <{value = 2.000000e+00 : f32}> : () -> f32
  %v31 = "vector.broadcast"(%s32) : (f32) -> vector<64x128xf32>
  %r33 = "mosaic_gpu.slice_smem"() <{offset = 262144 : i32}> : () -> memref<64x64xf16, #gpu.address_space<workgroup>>
  %r34 = "mosaic_gpu.slice_smem"() <{offset = 327680 : i32}> : () -> memref<128x64xf16, #gpu.address_space<workgroup>>
  %r35 = "memref.transpose"(%r34) <{permutation = affine_map<(d0, d1) -> (d1, d0)>}> : (memref<128x64xf16, #gpu.address_space<workgroup>>) -> memref<64x128xf16, strided<[1, 64]>, #gpu.address_space<workgroup>>
  %v36 = "mosaic_gpu.wgmma"(%v31, %r33, %r35) : (vector<64x128xf32>, memref<64x64xf16, #gpu.address_space<workgroup>>, memref<64x128xf16, strided<[1, 64]>, #gpu.address_space<workgroup>>) -> vector<64x128xf32>
  "func.return"() : () -> ()
}
