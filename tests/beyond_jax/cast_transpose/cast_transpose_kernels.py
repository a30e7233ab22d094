"""FP8 cast-transposes (jax 0.12.0.1), as FP8 training libraries write them: a bf16 tile
cast to ``float8_e4m3fn`` and written twice, as it is and transposed (the transposed
copy feeds the backward pass's matmul).

- ``through_gmem``: the tile read from and both copies written to GMEM directly, the
  transposed one through ``out_t.T``. JAX's pass answers with strided vectors of 4
  (the bf16 load's widest), which its lowering rejects ("internal verification
  error": a vector store through a view whose minor dim is strided); smalto's answer
  makes every value of the tile strided with vectors of 1 (where 8 fit the FP8
  value), which lowers, slowly.
- ``through_smem``: the tile staged through swizzled SMEM with TMA, both copies
  stored into SMEM (the transposed one through ``ot_smem.T``) and copied out. JAX's
  pass finds no layouts; smalto's widened search does, with relayouts and 1-byte
  vectors for the transposed store.

The modules JAX hands to layout inference for them are in ``*.mlir`` beside this
file, their locations pointing at the lines below (``cast_transpose_kernels.py:LINE:COLUMN``).
Rewrite them after changing a kernel with::

    .venv/bin/python tests/beyond_jax/cast_transpose/cast_transpose_kernels.py
"""

from __future__ import annotations

import re
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import jax
import jax.numpy as jnp
from jax.experimental.pallas import mosaic_gpu as plgpu

HERE = Path(__file__).resolve().parent
HOPPER = (9, 0)
F8 = jnp.float8_e4m3fn
WARPGROUP = plgpu.CompilerParams(lowering_semantics=plgpu.LoweringSemantics.Warpgroup)


def _swizzled(dtype: Any) -> tuple[Any, ...]:
    columns = 128 // jnp.dtype(dtype).itemsize
    return (plgpu.TilingTransform((8, columns)), plgpu.SwizzleTransform(128))


def through_gmem(x: jax.Array) -> Any:
    """``x`` cast to FP8, written as it is and transposed, straight from and to GMEM."""
    m, n = x.shape

    def body(x_gmem, out_gmem, out_t_gmem):
        y = x_gmem[...].astype(jnp.float32).astype(F8)
        out_gmem[...] = y
        out_t_gmem.T[...] = y

    out = (jax.ShapeDtypeStruct((m, n), F8), jax.ShapeDtypeStruct((n, m), F8))
    return plgpu.kernel(body, out_type=out, compiler_params=WARPGROUP)(x)


def through_smem(x: jax.Array) -> Any:
    """``x`` cast to FP8, both copies staged through swizzled SMEM and copied out by TMA."""
    m, n = x.shape

    def body(x_gmem, out_gmem, out_t_gmem, x_smem, o_smem, ot_smem, barrier):
        plgpu.copy_gmem_to_smem(x_gmem, x_smem, barrier)
        plgpu.barrier_wait(barrier)
        y = x_smem[...].astype(jnp.float32).astype(F8)
        o_smem[...] = y
        ot_smem.T[...] = y
        plgpu.commit_smem()
        plgpu.copy_smem_to_gmem(o_smem, out_gmem)
        plgpu.copy_smem_to_gmem(ot_smem, out_t_gmem)
        plgpu.wait_smem_to_gmem(0)

    out = (jax.ShapeDtypeStruct((m, n), F8), jax.ShapeDtypeStruct((n, m), F8))
    scratch = [
        plgpu.SMEM((m, n), x.dtype, transforms=_swizzled(x.dtype)),
        plgpu.SMEM((m, n), F8, transforms=_swizzled(F8)),
        plgpu.SMEM((n, m), F8, transforms=_swizzled(F8)),
        plgpu.Barrier(),
    ]
    return plgpu.kernel(body, out_type=out, compiler_params=WARPGROUP, scratch_types=scratch)(x)


TILE = (jax.ShapeDtypeStruct((128, 128), jnp.bfloat16),)
KERNELS: dict[str, tuple[Callable[..., Any], tuple[Any, ...], tuple[int, int]]] = {
    "through_gmem": (through_gmem, TILE, HOPPER),
    "through_smem": (through_smem, TILE, HOPPER),
}


def fixture_text(name: str) -> str:
    """The module JAX hands to layout inference for kernel ``name``, located in this file."""
    sys.path.insert(0, str(HERE.parents[2]))
    import smalto.jax

    fn, args, arch = KERNELS[name]
    captured = smalto.jax.capture(fn, *args, arch=arch)
    text = captured[-1].text
    text = text.replace(f'"{Path(__file__).resolve()}"', '"cast_transpose_kernels.py"')
    # The dump name counts lowerings in this process: a fixed one keeps the file stable.
    return re.sub(r'mosaic_gpu\.dump_basename = "[^"]*"', 'mosaic_gpu.dump_basename = "k"', text)


if __name__ == "__main__":
    for kernel_name in sys.argv[1:] or KERNELS:
        (HERE / f"fp8_cast_transpose_{kernel_name}.mlir").write_text(fixture_text(kernel_name))
        print(f"wrote fp8_cast_transpose_{kernel_name}.mlir")
