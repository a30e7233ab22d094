"""Hopper: a tile loaded with ``layout=`` the transposed WGMMA layout, doubled and stored
through ``o_smem.T``: smalto lays it out, JAX's own pass finds no layouts, and no single
edit of its layouts makes JAX's pass accept it. It compiles with smalto only."""

import jax
from jax.experimental.pallas import mosaic_gpu as plgpu


def copy_tile(a, b):
    def body(a_gmem, b_gmem, o_gmem, a_smem, o_smem, loaded):
        plgpu.copy_gmem_to_smem(a_gmem, a_smem, loaded)
        plgpu.barrier_wait(loaded)
        x = plgpu.load(a_smem, layout=plgpu.Layout.WGMMA_TRANSPOSED)
        o_smem.T[...] = x * 2
        plgpu.commit_smem()
        plgpu.copy_smem_to_gmem(o_smem, o_gmem)
        plgpu.wait_smem_to_gmem(0)

    return plgpu.kernel(
        body,
        out_type=jax.ShapeDtypeStruct(a.shape, a.dtype),
        scratch_types=[
            plgpu.SMEM(a.shape, a.dtype),
            plgpu.SMEM(a.shape, a.dtype),
            plgpu.Barrier(),
        ],
        compiler_params=plgpu.CompilerParams(lowering_semantics=plgpu.LoweringSemantics.Warpgroup),
    )(a, b)
