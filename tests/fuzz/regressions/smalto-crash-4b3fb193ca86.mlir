// fuzz regression: smalto-crash
// arch: 10.0
// expect: sat
// note: async_load_tmem with reduce (jax 0.12): two results, two out_layouts
// detail: AssertionError: smalto bug: out_layouts of `mosaic_gpu.async_load_tmem` would have 1 entries for 2 values
func.func @kernel() {
  %r4 = "mosaic_gpu.slice_smem"() <{offset = 0 : i32}> : () -> memref<i32, #gpu.address_space<workgroup>>
  %t5 = "mosaic_gpu.tmem_alloc"(%r4) <{collective = false, packing = 1 : i32}> : (memref<i32, #gpu.address_space<workgroup>>) -> memref<128x64xf32, #mosaic_gpu.tmem>
  %l11:2 = "mosaic_gpu.async_load_tmem"(%t5) <{reduce = 1 : i32}> : (memref<128x64xf32, #mosaic_gpu.tmem>) -> (vector<128x64xf32>, vector<128xf32>)
  "func.return"() : () -> ()
}
