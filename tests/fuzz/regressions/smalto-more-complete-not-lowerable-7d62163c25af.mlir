// fuzz regression: smalto-more-complete-not-lowerable
// arch: 9.0
// detail: NotImplementedError: 2
func.func @kernel() {
  %r2 = "mosaic_gpu.slice_smem"() <{offset = 0 : i32}> : () -> memref<128x256xi8, #gpu.address_space<workgroup>>
  %v1 = "mosaic_gpu.vector_load"(%r2) <{optimized = false}> : (memref<128x256xi8, #gpu.address_space<workgroup>>) -> vector<128x256xi8>
  %v3 = "mosaic_gpu.optimization_barrier"(%v1) : (vector<128x256xi8>) -> vector<128x256xi8>
  %v4 = "arith.constant"() <{value = dense<[0.0, 1.0, 2.0, 3.0, 4.0, 5.0, 6.0, 0.0, 1.0, 2.0, 3.0, 4.0, 5.0, 6.0, 0.0, 1.0, 2.0, 3.0, 4.0, 5.0, 6.0, 0.0, 1.0, 2.0, 3.0, 4.0, 5.0, 6.0, 0.0, 1.0, 2.0, 3.0, 4.0, 5.0, 6.0, 0.0, 1.0, 2.0, 3.0, 4.0, 5.0, 6.0, 0.0, 1.0, 2.0, 3.0, 4.0, 5.0, 6.0, 0.0, 1.0, 2.0, 3.0, 4.0, 5.0, 6.0, 0.0, 1.0, 2.0, 3.0, 4.0, 5.0, 6.0, 0.0]> : vector<64xf32>}> : () -> vector<64xf32>
  %s5 = "vector.reduction"(%v4) <{kind = #vector.kind<add>}> {offset = 0 : i32, scratch_size = 2048 : i32} : (vector<64xf32>) -> f32
  "func.return"() : () -> ()
}
