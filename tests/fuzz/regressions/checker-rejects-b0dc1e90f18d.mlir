// fuzz regression: checker-rejects
// arch: 9.0
// detail: -:5:9: vector.multi_reduction: the source is WGMMA_ROW, a tiling of 1 of its 2 dims; the lowering reduces only fully tiled sources
func.func @kernel() {
  %s2 = "arith.constant"() <{value = 2.000000e+00 : f32}> : () -> f32
  %v1 = "vector.broadcast"(%s2) : (f32) -> vector<64x128xf32>
  %v3 = "arith.constant"() <{value = dense<1.000000e+00> : vector<128xf32>}> : () -> vector<128xf32>
  %v4 = "vector.multi_reduction"(%v1, %v3) <{kind = #vector.kind<add>, reduction_dims = array<i64: 0>}> {offset = 0 : i32, scratch_size = 2048 : i32} : (vector<64x128xf32>, vector<128xf32>) -> vector<128xf32>
  %v5 = "scf.while"(%v4) ({
  ^bb0(%a7: vector<128xf32>):
    %f6 = "arith.constant"() <{value = false}> : () -> i1
    %v8 = "arith.constant"() <{value = dense<1.000000e+00> : vector<128x256xbf16>}> : () -> vector<128x256xbf16>
    %v9 = "mosaic_gpu.layout_cast"(%v8) <{new_layout = #mosaic_gpu.TiledLayout<[[128, 8], [32, 8], [8, 8], [2]], warp_dims = [-7], lane_dims = [-3, -2], vector_dim = -1>}> : (vector<128x256xbf16>) -> vector<128x256xbf16>
    %c10 = "arith.constant"() <{value = 1 : index}> : () -> index
    %rv11:2 = "scf.index_switch"(%c10) <{cases = array<i64: 0, 1>}> ({
      %v13 = "arith.constant"() <{value = dense<1.000000e+00> : vector<128x256xf16>}> : () -> vector<128x256xf16>
      %v14 = "math.exp"(%v13) : (vector<128x256xf16>) -> vector<128x256xf16>
      %v15 = "arith.constant"() <{value = dense<1.000000e+00> : vector<64x64xf32>}> : () -> vector<64x64xf32>
      %r16 = "mosaic_gpu.slice_smem"() <{offset = 0 : i32}> : () -> memref<2x64x64xbf16, #gpu.address_space<workgroup>>
      %c17 = "arith.constant"() <{value = 1 : index}> : () -> index
      %r18 = "memref.subview"(%r16, %c17) <{operandSegmentSizes = array<i32: 1, 1, 0, 0>, static_offsets = array<i64: -9223372036854775808, 0, 0>, static_sizes = array<i64: 1, 64, 64>, static_strides = array<i64: 1, 1, 1>}> : (memref<2x64x64xbf16, #gpu.address_space<workgroup>>, index) -> memref<64x64xbf16, strided<[64, 1], offset: ?>, #gpu.address_space<workgroup>>
      %r19 = "mosaic_gpu.slice_smem"() <{offset = 65536 : i32}> : () -> memref<2x64x64xbf16, #gpu.address_space<workgroup>>
      %c20 = "arith.constant"() <{value = 0 : index}> : () -> index
      %r21 = "memref.subview"(%r19, %c20) <{operandSegmentSizes = array<i32: 1, 1, 0, 0>, static_offsets = array<i64: -9223372036854775808, 0, 0>, static_sizes = array<i64: 1, 64, 64>, static_strides = array<i64: 1, 1, 1>}> : (memref<2x64x64xbf16, #gpu.address_space<workgroup>>, index) -> memref<64x64xbf16, strided<[64, 1], offset: ?>, #gpu.address_space<workgroup>>
      %v22 = "mosaic_gpu.wgmma"(%v15, %r18, %r21) : (vector<64x64xf32>, memref<64x64xbf16, strided<[64, 1], offset: ?>, #gpu.address_space<workgroup>>, memref<64x64xbf16, strided<[64, 1], offset: ?>, #gpu.address_space<workgroup>>) -> vector<64x64xf32>
      %v23 = "mosaic_gpu.layout_cast"(%v3) <{new_layout = #mosaic_gpu.TiledLayout<[[64], [16], [8], [1]], warp_dims = [-4], lane_dims = [-2, #mosaic_gpu.Replicated<times = 4>], vector_dim = -1>}> : (vector<128xf32>) -> vector<128xf32>
      %s25 = "arith.constant"() <{value = 2.000000e+00 : f16}> : () -> f16
      %v24 = "vector.broadcast"(%s25) : (f16) -> vector<64x128xf16>
      %s27 = "arith.constant"() <{value = 2.000000e+00 : bf16}> : () -> bf16
      %v26 = "vector.broadcast"(%s27) : (bf16) -> vector<64x64xbf16>
      "scf.yield"(%v24, %v26) : (vector<64x128xf16>, vector<64x64xbf16>) -> ()
    }, {
      %v28 = "arith.addf"(%v8, %v8) : (vector<128x256xbf16>, vector<128x256xbf16>) -> vector<128x256xbf16>
      %v29 = "arith.constant"() <{value = dense<1.000000e+00> : vector<64x128xf16>}> : () -> vector<64x128xf16>
      %s31 = "arith.constant"() <{value = 2.000000e+00 : bf16}> : () -> bf16
      %v30 = "vector.broadcast"(%s31) : (bf16) -> vector<64x64xbf16>
      "scf.yield"(%v29, %v30) : (vector<64x128xf16>, vector<64x64xbf16>) -> ()
    }, {
      %v32 = "arith.constant"() <{value = dense<1.000000e+00> : vector<64x128xf16>}> : () -> vector<64x128xf16>
      %v33 = "arith.constant"() <{value = dense<1.000000e+00> : vector<64x64xbf16>}> : () -> vector<64x64xbf16>
      "scf.yield"(%v32, %v33) : (vector<64x128xf16>, vector<64x64xbf16>) -> ()
    }) : (index) -> (vector<64x128xf16>, vector<64x64xbf16>)
    "scf.condition"(%f6, %v3) : (i1, vector<128xf32>) -> ()
  }, {
  ^bb0(%a34: vector<128xf32>):
    "scf.yield"(%v3) : (vector<128xf32>) -> ()
  }) : (vector<128xf32>) -> (vector<128xf32>)
  %v35 = "arith.addf"(%v5, %v3) : (vector<128xf32>, vector<128xf32>) -> vector<128xf32>
  %v36 = "arith.addf"(%v3, %v3) : (vector<128xf32>, vector<128xf32>) -> vector<128xf32>
  %r38 = "mosaic_gpu.slice_smem"() <{offset = 131072 : i32}> : () -> memref<128xf32, #gpu.address_space<workgroup>>
  %r39 = "mosaic_gpu.with_transforms"(%r38) <{transforms = [#mosaic_gpu.tile<[128]>, #mosaic_gpu.swizzle<16 : i32>]}> : (memref<128xf32, #gpu.address_space<workgroup>>) -> memref<128xf32, #gpu.address_space<workgroup>>
  %v37 = "mosaic_gpu.vector_load"(%r39) <{optimized = false}> : (memref<128xf32, #gpu.address_space<workgroup>>) -> vector<128xf32>
  %v40 = "arith.addf"(%v4, %v37) : (vector<128xf32>, vector<128xf32>) -> vector<128xf32>
  %v41 = "arith.addf"(%v5, %v5) : (vector<128xf32>, vector<128xf32>) -> vector<128xf32>
  %v42 = "arith.addf"(%v4, %v4) : (vector<128xf32>, vector<128xf32>) -> vector<128xf32>
  %v43 = "arith.addf"(%v3, %v3) : (vector<128xf32>, vector<128xf32>) -> vector<128xf32>
  "func.return"() : () -> ()
}
