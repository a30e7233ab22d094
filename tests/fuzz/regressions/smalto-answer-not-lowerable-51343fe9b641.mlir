// fuzz regression: smalto-answer-not-lowerable
// arch: 9.0
// detail: NotImplementedError: Vector length should be a multiple of byte size
func.func @kernel() {
  %r2 = "mosaic_gpu.slice_smem"() <{alias_id = 1 : i64, offset = 0 : i32}> : () -> memref<128x64xi4, #gpu.address_space<workgroup>>
  %v1 = "mosaic_gpu.vector_load"(%r2) : (memref<128x64xi4, #gpu.address_space<workgroup>>) -> vector<128x64xi4>
  %v3 = "mosaic_gpu.layout_cast"(%v1) <{new_layout = #mosaic_gpu.WGStridedFragLayout<[128, 64], 1>}> : (vector<128x64xi4>) -> vector<128x64xi4>
  %v4 = "arith.constant"() <{value = dense<1> : vector<128x64xi4>}> : () -> vector<128x64xi4>
  %v5 = "arith.addi"(%v3, %v4) : (vector<128x64xi4>, vector<128x64xi4>) -> vector<128x64xi4>
  %v6 = "arith.constant"() <{value = dense<1> : vector<128x64xi32>}> : () -> vector<128x64xi32>
  %v7 = "arith.trunci"(%v6) : (vector<128x64xi32>) -> vector<128x64xi4>
  "func.return"() : () -> ()
}
