// fuzz regression: checker-rejects
// arch: 9.0
// detail: -:5:9: vector.multi_reduction: the source is WGMMA_ROW, a tiling of 1 of its 2 dims; the lowering reduces only fully tiled sources
func.func @kernel() {
  %r2 = "mosaic_gpu.slice_smem"() <{offset = 0 : i32}> : () -> memref<64x128xf32, #gpu.address_space<workgroup>>
  %v1 = "mosaic_gpu.vector_load"(%r2) : (memref<64x128xf32, #gpu.address_space<workgroup>>) -> vector<64x128xf32>
  %v3 = "arith.constant"() <{value = dense<1.000000e+00> : vector<128xf32>}> : () -> vector<128xf32>
  %v4 = "vector.multi_reduction"(%v1, %v3) <{kind = #vector.kind<add>, reduction_dims = array<i64: 0>}> {offset = 0 : i32, scratch_size = 2048 : i32} : (vector<64x128xf32>, vector<128xf32>) -> vector<128xf32>
  "func.return"() : () -> ()
}
