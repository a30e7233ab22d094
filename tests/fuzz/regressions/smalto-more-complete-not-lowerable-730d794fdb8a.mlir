// fuzz regression: smalto-more-complete-not-lowerable
// arch: 10.0
// detail: ValueError: Register bitwidth in target type must be divisible by 8, got 4
func.func @kernel() {
  %s2 = "arith.constant"() <{value = 2 : i32}> : () -> i32
  %v1 = "vector.broadcast"(%s2) : (i32) -> vector<128xi32>
  %v3 = "arith.trunci"(%v1) : (vector<128xi32>) -> vector<128xi4>
  %r5 = "mosaic_gpu.slice_smem"() <{offset = 0 : i32}> : () -> memref<256xf32, #gpu.address_space<workgroup>>
  %r6 = "mosaic_gpu.with_transforms"(%r5) <{transforms = [#mosaic_gpu.tile<[256]>, #mosaic_gpu.swizzle<16 : i32>]}> : (memref<256xf32, #gpu.address_space<workgroup>>) -> memref<256xf32, #gpu.address_space<workgroup>>
  %v4 = "mosaic_gpu.vector_load"(%r6) : (memref<256xf32, #gpu.address_space<workgroup>>) -> vector<256xf32>
  %s7 = "vector.reduction"(%v4) <{kind = #vector.kind<add>}> {offset = 0 : i32, scratch_size = 2048 : i32} : (vector<256xf32>) -> f32
  "func.return"() : () -> ()
}
