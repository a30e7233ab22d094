"""jax#32123: the Pallas quickstart's add of two 32-element vectors, on Mosaic GPU. JAX
0.12.0.1's own pass finds no layouts for it; smalto's answer stores the sum in the
WGMMA column layout, and cast to it (``plgpu.Layout.WGMMA.reduce(0)``) at the store,
the kernel lowers with JAX's own pass."""

import jax
from jax.experimental.pallas import mosaic_gpu as plgpu


def add_vectors(x, y):
    def body(x_ref, y_ref, o_ref):
        o_ref[...] = x_ref[...] + y_ref[...]

    return plgpu.kernel(
        body,
        out_type=jax.ShapeDtypeStruct(x.shape, x.dtype),
        compiler_params=plgpu.CompilerParams(lowering_semantics=plgpu.LoweringSemantics.Warpgroup),
    )(x, y)
