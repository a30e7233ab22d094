// fuzz regression: attributes-differ
// arch: 9.0
// expect: sat
// note: a 256xi4 dense constant takes jax 0.12's sub-byte strided default; smalto then tiled a splat broadcast source JAX keeps splat
// detail: 3:mosaic_gpu.broadcast_in_dim in_layouts: jax=[#mosaic_gpu.WGSplatFragLayout<[128]>] smalto=[#mosaic_gpu.TiledLayout<[[64], [16], [8], [1]], warp_dims = [-4], lane_dims = [-2, #mosaic_gpu.Replicated<times = 4>], vector_dim = -1>]
func.func @kernel() {
  %v6 = "arith.constant"() <{value = dense<1.000000e+00> : vector<128xf32>}> : () -> vector<128xf32>
  %v7 = "mosaic_gpu.broadcast_in_dim"(%v6) <{broadcast_dimensions = array<i64: 0>}> : (vector<128xf32>) -> vector<128x256xf32>
  %v10 = "arith.constant"() <{value = dense<[0, 1, 2, 3, 4, 5, 6, 0, 1, 2, 3, 4, 5, 6, 0, 1, 2, 3, 4, 5, 6, 0, 1, 2, 3, 4, 5, 6, 0, 1, 2, 3, 4, 5, 6, 0, 1, 2, 3, 4, 5, 6, 0, 1, 2, 3, 4, 5, 6, 0, 1, 2, 3, 4, 5, 6, 0, 1, 2, 3, 4, 5, 6, 0, 1, 2, 3, 4, 5, 6, 0, 1, 2, 3, 4, 5, 6, 0, 1, 2, 3, 4, 5, 6, 0, 1, 2, 3, 4, 5, 6, 0, 1, 2, 3, 4, 5, 6, 0, 1, 2, 3, 4, 5, 6, 0, 1, 2, 3, 4, 5, 6, 0, 1, 2, 3, 4, 5, 6, 0, 1, 2, 3, 4, 5, 6, 0, 1, 2, 3, 4, 5, 6, 0, 1, 2, 3, 4, 5, 6, 0, 1, 2, 3, 4, 5, 6, 0, 1, 2, 3, 4, 5, 6, 0, 1, 2, 3, 4, 5, 6, 0, 1, 2, 3, 4, 5, 6, 0, 1, 2, 3, 4, 5, 6, 0, 1, 2, 3, 4, 5, 6, 0, 1, 2, 3, 4, 5, 6, 0, 1, 2, 3, 4, 5, 6, 0, 1, 2, 3, 4, 5, 6, 0, 1, 2, 3, 4, 5, 6, 0, 1, 2, 3, 4, 5, 6, 0, 1, 2, 3, 4, 5, 6, 0, 1, 2, 3, 4, 5, 6, 0, 1, 2, 3, 4, 5, 6, 0, 1, 2, 3, 4, 5, 6, 0, 1, 2, 3, 4, 5, 6, 0, 1, 2, 3]> : vector<256xi4>}> : () -> vector<256xi4>
  "func.return"() : () -> ()
}
