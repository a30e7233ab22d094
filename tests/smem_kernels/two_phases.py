"""A kernel with two SMEM buffers of one shape, one for each phase, both allocated for the
whole kernel (``scratch_types``): 256 KiB, over the 227 KiB a block may have, though never
more than 128 KiB is in use at once. One buffer can serve both phases."""

from __future__ import annotations

import jax
from jax.experimental.pallas import mosaic_gpu as plgpu

SHAPE = (256, 128)


def two_phases(x: jax.Array) -> tuple[jax.Array, jax.Array]:
    def kernel(x_gmem, doubled_gmem, shifted_gmem, first_smem, second_smem):
        first_smem[...] = x_gmem[...] * 2
        doubled_gmem[...] = first_smem[...]
        second_smem[...] = x_gmem[...] + 1
        shifted_gmem[...] = second_smem[...]

    out = jax.ShapeDtypeStruct(SHAPE, x.dtype)
    return plgpu.kernel(
        kernel,
        out_type=(out, out),
        scratch_types=[plgpu.SMEM(SHAPE, x.dtype), plgpu.SMEM(SHAPE, x.dtype)],
    )(x)
