"""Pallas kernels (jax 0.12.0.1) whose layouts cannot be inferred, written as users write them.

Each is a small, plausible kernel with one mistake in its layout annotations:
a ``layout_cast`` to the wrong reduced layout, casts that contradict each
other, SMEM transforms that do not fit a wgmma or a store, TMEM refs declared
with the layout of another MMA... The modules JAX hands to layout inference
for them are in ``pallas_*.mlir`` next to this file, their locations pointing
at the lines below (``kernels.py:LINE:COLUMN``). Rewrite them after changing a
kernel with::

    .venv/bin/python tests/unsat/kernels.py
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

HOPPER = (9, 0)
BLACKWELL = (10, 0)
WARPGROUP = plgpu.CompilerParams(lowering_semantics=plgpu.LoweringSemantics.Warpgroup)
HERE = Path(__file__).resolve().parent
SWIZZLED_F16 = (plgpu.TilingTransform((8, 64)), plgpu.SwizzleTransform(128))


def _sds(*shape: int, dtype: Any = jnp.float32) -> jax.ShapeDtypeStruct:
    return jax.ShapeDtypeStruct(shape, dtype)


def _kernel(body: Callable[..., None], out: jax.ShapeDtypeStruct, **kwargs: Any) -> Callable:
    return plgpu.kernel(body, out_type=out, compiler_params=WARPGROUP, **kwargs)


# --- Hopper ------------------------------------------------------------------------------


def row_sum_cast_to_columns(x: jax.Array) -> jax.Array:
    """Sums each row of a WGMMA tile, then casts the sums to the *column* layout."""

    def body(x_gmem, out_gmem, x_smem, barrier):
        plgpu.copy_gmem_to_smem(x_gmem, x_smem, barrier)
        plgpu.barrier_wait(barrier)
        x = plgpu.layout_cast(x_smem[...], plgpu.Layout.WGMMA)
        s = jnp.sum(x, axis=1)
        out_gmem[...] = plgpu.layout_cast(s, plgpu.Layout.WGMMA.reduce(0))

    return _kernel(
        body,
        _sds(x.shape[0]),
        scratch_types=[plgpu.SMEM(x.shape, x.dtype), plgpu.Barrier()],
    )(x)


def column_max_cast_to_rows(x: jax.Array) -> jax.Array:
    """A bf16 column max cast to the row layout (``reduce(1)`` where ``reduce(0)`` is meant)."""

    def body(x_gmem, out_gmem, x_smem, barrier):
        plgpu.copy_gmem_to_smem(x_gmem, x_smem, barrier)
        plgpu.barrier_wait(barrier)
        x = plgpu.layout_cast(x_smem[...], plgpu.Layout.WGMMA)
        m = jnp.max(x, axis=0)
        out_gmem[...] = plgpu.layout_cast(m, plgpu.Layout.WGMMA.reduce(1)).astype(jnp.float32)

    return _kernel(
        body,
        _sds(x.shape[1]),
        scratch_types=[plgpu.SMEM(x.shape, x.dtype, transforms=SWIZZLED_F16), plgpu.Barrier()],
    )(x)


def wgmma_then_strided(a: jax.Array, b: jax.Array) -> jax.Array:
    """A wgmma whose accumulator is cast to a strided layout before the epilogue."""
    m, n = a.shape[0], b.shape[1]

    def body(a_gmem, b_gmem, out_gmem, a_smem, b_smem, out_smem, barrier):
        plgpu.copy_gmem_to_smem(a_gmem, a_smem, barrier)
        plgpu.copy_gmem_to_smem(b_gmem, b_smem, barrier)
        plgpu.barrier_wait(barrier)

        def matmul(acc_ref):
            plgpu.wgmma(acc_ref, a_smem, b_smem)
            plgpu.wgmma_wait(0)
            return acc_ref[...]

        acc = jax.experimental.pallas.run_scoped(matmul, plgpu.ACC((m, n), jnp.float32))
        acc = plgpu.layout_cast(acc, plgpu.Layout.WG_STRIDED((m, n), vec_size=2))
        out_smem[...] = acc.astype(out_smem.dtype)
        plgpu.commit_smem()
        plgpu.copy_smem_to_gmem(out_smem, out_gmem)
        plgpu.wait_smem_to_gmem(0)

    return _kernel(
        body,
        _sds(m, n, dtype=a.dtype),
        scratch_types=[
            plgpu.SMEM(a.shape, a.dtype, transforms=SWIZZLED_F16),
            plgpu.SMEM(b.shape, b.dtype, transforms=SWIZZLED_F16),
            plgpu.SMEM((m, n), a.dtype, transforms=SWIZZLED_F16),
            plgpu.Barrier(num_arrivals=2),
        ],
    )(a, b)


def wgmma_operand_not_swizzled(a: jax.Array, b: jax.Array) -> jax.Array:
    """A wgmma operand tiled 8x64 but not swizzled: wgmma reads swizzled tiles only."""
    m, n = a.shape[0], b.shape[1]
    narrow = (plgpu.TilingTransform((8, 64)),)

    def body(a_gmem, b_gmem, out_gmem, a_smem, b_smem, out_smem, barrier):
        plgpu.copy_gmem_to_smem(a_gmem, a_smem, barrier)
        plgpu.copy_gmem_to_smem(b_gmem, b_smem, barrier)
        plgpu.barrier_wait(barrier)

        def matmul(acc_ref):
            plgpu.wgmma(acc_ref, a_smem, b_smem)
            plgpu.wgmma_wait(0)
            return acc_ref[...]

        acc = jax.experimental.pallas.run_scoped(matmul, plgpu.ACC((m, n), jnp.float32))
        out_smem[...] = acc.astype(out_smem.dtype)
        plgpu.commit_smem()
        plgpu.copy_smem_to_gmem(out_smem, out_gmem)
        plgpu.wait_smem_to_gmem(0)

    return _kernel(
        body,
        _sds(m, n, dtype=a.dtype),
        scratch_types=[
            plgpu.SMEM(a.shape, a.dtype, transforms=SWIZZLED_F16),
            plgpu.SMEM(b.shape, b.dtype, transforms=narrow),
            plgpu.SMEM((m, n), a.dtype, transforms=SWIZZLED_F16),
            plgpu.Barrier(num_arrivals=2),
        ],
    )(a, b)


def epilogue_to_unswizzled_smem(a: jax.Array, b: jax.Array) -> jax.Array:
    """The wgmma result stored to an SMEM tile that is tiled but not swizzled."""
    m, n = a.shape[0], b.shape[1]
    tiled_only = (plgpu.TilingTransform((8, 64)),)

    def body(a_gmem, b_gmem, out_gmem, a_smem, b_smem, out_smem, barrier):
        plgpu.copy_gmem_to_smem(a_gmem, a_smem, barrier)
        plgpu.copy_gmem_to_smem(b_gmem, b_smem, barrier)
        plgpu.barrier_wait(barrier)

        def matmul(acc_ref):
            plgpu.wgmma(acc_ref, a_smem, b_smem)
            plgpu.wgmma_wait(0)
            return acc_ref[...]

        acc = jax.experimental.pallas.run_scoped(matmul, plgpu.ACC((m, n), jnp.float32))
        out_smem[...] = acc.astype(out_smem.dtype)
        plgpu.commit_smem()
        plgpu.copy_smem_to_gmem(out_smem, out_gmem)
        plgpu.wait_smem_to_gmem(0)

    return _kernel(
        body,
        _sds(m, n, dtype=a.dtype),
        scratch_types=[
            plgpu.SMEM(a.shape, a.dtype, transforms=SWIZZLED_F16),
            plgpu.SMEM(b.shape, b.dtype, transforms=SWIZZLED_F16),
            plgpu.SMEM((m, n), a.dtype, transforms=tiled_only),
            plgpu.Barrier(num_arrivals=2),
        ],
    )(a, b)


def strided_loop_carry(x: jax.Array) -> jax.Array:
    """A loop carry started strided, then accumulated with WGMMA tiles."""

    def body(x_gmem, out_gmem, x_smem, barrier):
        plgpu.copy_gmem_to_smem(x_gmem, x_smem, barrier)
        plgpu.barrier_wait(barrier)
        init = plgpu.layout_cast(
            jnp.zeros(x.shape, jnp.float32), plgpu.Layout.WG_STRIDED(x.shape, vec_size=2)
        )

        def step(i, acc):
            tile = plgpu.layout_cast(x_smem[...], plgpu.Layout.WGMMA)
            return acc + tile * i.astype(jnp.float32)

        out_gmem[...] = jax.lax.fori_loop(0, 4, step, init)

    return _kernel(
        body,
        _sds(*x.shape),
        scratch_types=[plgpu.SMEM(x.shape, x.dtype), plgpu.Barrier()],
    )(x)


# --- Blackwell -----------------------------------------------------------------------------


def _tcgen05_matmul(
    epilogue: Callable[..., None],
    a: jax.Array,
    b: jax.Array,
    acc_type: Any,
    *,
    out_dtype: Any = None,
    **kernel_args: Any,
) -> jax.Array:
    """An SMEM x SMEM tcgen05 MMA into ``acc_type``, then ``epilogue(acc_tmem, out_smem)``."""
    m, n = a.shape[0], b.shape[1]
    out_dtype = out_dtype or a.dtype

    def body(a_gmem, b_gmem, out_gmem, a_smem, b_smem, acc_tmem, out_smem, loaded, mma_done):
        plgpu.copy_gmem_to_smem(a_gmem, a_smem, loaded)
        plgpu.copy_gmem_to_smem(b_gmem, b_smem, loaded)
        plgpu.barrier_wait(loaded)
        plgpu.tcgen05_mma(acc_tmem, a_smem, b_smem, mma_done, accumulate=False)
        plgpu.barrier_wait(mma_done)
        epilogue(acc_tmem, out_smem)
        plgpu.commit_smem()
        plgpu.copy_smem_to_gmem(out_smem, out_gmem)
        plgpu.wait_smem_to_gmem(0)

    out_shape = (m, n) if out_dtype == a.dtype else (m,)
    out_transforms = SWIZZLED_F16 if len(out_shape) == 2 else ()
    return _kernel(
        body,
        _sds(*out_shape, dtype=out_dtype),
        scratch_types=[
            plgpu.SMEM(a.shape, a.dtype, transforms=SWIZZLED_F16),
            plgpu.SMEM(b.shape, b.dtype, transforms=SWIZZLED_F16),
            acc_type,
            plgpu.SMEM(out_shape, out_dtype, transforms=out_transforms),
            plgpu.Barrier(num_arrivals=2),
            plgpu.Barrier(orders_tensor_core=True),
        ],
        **kernel_args,
    )(a, b)


def _store_tile(acc_tmem, out_smem) -> None:
    out_smem[...] = plgpu.async_load_tmem(acc_tmem).astype(out_smem.dtype)


def tmem_acc_m64_layout_not_collective(a: jax.Array, b: jax.Array) -> jax.Array:
    """An M=64 accumulator given the collective (2-CTA) TMEM layout, for a 1-CTA MMA."""
    m, n = a.shape[0], b.shape[1]
    layout = plgpu.TMEMLayout.M64_COLLECTIVE_LAYOUT(n)
    acc = plgpu.TMEM((m, n), jnp.float32, layout=layout)
    return _tcgen05_matmul(_store_tile, a, b, acc)


def tmem_acc_declared_collective(a: jax.Array, b: jax.Array) -> jax.Array:
    """An M=64 accumulator declared ``collective=True`` (in a 2-CTA cluster) for an MMA
    that is not collective: its TMEM layout is the collective one, and so is its
    allocation, which JAX's lowering will not mix with a 1-CTA MMA whatever the layouts."""
    m, n = a.shape[0], b.shape[1]
    acc = plgpu.TMEM((m, n), jnp.float32, collective=True)
    return _tcgen05_matmul(_store_tile, a, b, acc, cluster=(2,), cluster_names=("x",))


def tmem_acc_m64_layout_on_128_rows(a: jax.Array, b: jax.Array) -> jax.Array:
    """A 128-row accumulator given the M=64 collective TMEM layout by hand."""
    m, n = a.shape[0], b.shape[1]
    layout = plgpu.TMEMLayout.M64_COLLECTIVE_LAYOUT(n)
    acc = plgpu.TMEM((m, n), jnp.float32, layout=layout)
    return _tcgen05_matmul(_store_tile, a, b, acc)


def tmem_load_as_wgmma(a: jax.Array, b: jax.Array) -> jax.Array:
    """A Hopper habit on Blackwell: loading the TMEM accumulator in the WGMMA layout."""
    m, n = a.shape[0], b.shape[1]

    def epilogue(acc_tmem, out_smem) -> None:
        acc = plgpu.async_load_tmem(acc_tmem, layout=plgpu.Layout.WGMMA)
        out_smem[...] = acc.astype(out_smem.dtype)

    return _tcgen05_matmul(epilogue, a, b, plgpu.TMEM((m, n), jnp.float32))


def tcgen05_row_sum_cast_to_columns(a: jax.Array, b: jax.Array) -> jax.Array:
    """Row sums of a TCGEN05 accumulator cast to the column layout."""
    m, n = a.shape[0], b.shape[1]

    def epilogue(acc_tmem, out_smem) -> None:
        acc = plgpu.async_load_tmem(acc_tmem, layout=plgpu.Layout.TCGEN05)
        sums = jnp.sum(acc, axis=1)
        out_smem[...] = plgpu.layout_cast(sums, plgpu.Layout.TCGEN05.reduce(0))

    return _tcgen05_matmul(epilogue, a, b, plgpu.TMEM((m, n), jnp.float32), out_dtype=jnp.float32)


def tmem_store_strided(a: jax.Array, b: jax.Array, bias: jax.Array) -> jax.Array:
    """A bias written into the TMEM accumulator from a strided layout before the MMA."""
    m, n = a.shape[0], b.shape[1]

    def body(a_gmem, b_gmem, bias_gmem, out_gmem, a_smem, b_smem, acc_tmem, out_smem, *bars):
        loaded, mma_done = bars
        plgpu.copy_gmem_to_smem(a_gmem, a_smem, loaded)
        plgpu.copy_gmem_to_smem(b_gmem, b_smem, loaded)
        bias = plgpu.layout_cast(bias_gmem[...], plgpu.Layout.WG_STRIDED((m, n), vec_size=4))
        plgpu.async_store_tmem(acc_tmem, bias)
        plgpu.commit_tmem()
        plgpu.barrier_wait(loaded)
        plgpu.tcgen05_mma(acc_tmem, a_smem, b_smem, mma_done, accumulate=True)
        plgpu.barrier_wait(mma_done)
        out_smem[...] = plgpu.async_load_tmem(acc_tmem).astype(out_smem.dtype)
        plgpu.commit_smem()
        plgpu.copy_smem_to_gmem(out_smem, out_gmem)
        plgpu.wait_smem_to_gmem(0)

    return _kernel(
        body,
        _sds(m, n, dtype=a.dtype),
        scratch_types=[
            plgpu.SMEM(a.shape, a.dtype, transforms=SWIZZLED_F16),
            plgpu.SMEM(b.shape, b.dtype, transforms=SWIZZLED_F16),
            plgpu.TMEM((m, n), jnp.float32),
            plgpu.SMEM((m, n), a.dtype, transforms=SWIZZLED_F16),
            plgpu.Barrier(num_arrivals=2),
            plgpu.Barrier(orders_tensor_core=True),
        ],
    )(a, b, bias)


# name -> (kernel, arguments, arch)
def small_tile_cast_to_wgmma(x: jax.Array) -> jax.Array:
    """A 32-row tile cast to the WGMMA layout, whose tiles have 64 rows."""

    def body(x_gmem, out_gmem, x_smem, barrier):
        plgpu.copy_gmem_to_smem(x_gmem, x_smem, barrier)
        plgpu.barrier_wait(barrier)
        x = plgpu.layout_cast(x_smem[...], plgpu.Layout.WGMMA)
        out_gmem[...] = x * 2.0

    return _kernel(
        body, _sds(*x.shape), scratch_types=[plgpu.SMEM(x.shape, x.dtype), plgpu.Barrier()]
    )(x)


def tmem_collective_and_single_cta_mma(a: jax.Array, b: jax.Array, b2: jax.Array) -> jax.Array:
    """One collective TMEM accumulator (128 rows: the same TMEM layout either way) written
    by a collective MMA, then by a 1-CTA one: every layout fits, and JAX's lowering still
    refuses to mix collective and 1-CTA tensor-core ops in one kernel."""
    m, n = a.shape[0], b2.shape[1]

    def body(a_gmem, b_gmem, b2_gmem, out_gmem, a_smem, b_smem, b2_smem, acc_tmem, out_smem, *bars):
        loaded, first_done, second_done = bars
        plgpu.copy_gmem_to_smem(a_gmem, a_smem, loaded)
        plgpu.copy_gmem_to_smem(b_gmem, b_smem, loaded)
        plgpu.copy_gmem_to_smem(b2_gmem, b2_smem, loaded)
        plgpu.barrier_wait(loaded)
        plgpu.tcgen05_mma(acc_tmem, a_smem, b_smem, first_done, collective_axis="x")
        plgpu.barrier_wait(first_done)
        plgpu.tcgen05_mma(acc_tmem, a_smem, b2_smem, second_done, accumulate=True)
        plgpu.barrier_wait(second_done)
        out_smem[...] = plgpu.async_load_tmem(acc_tmem).astype(out_smem.dtype)
        plgpu.commit_smem()
        plgpu.copy_smem_to_gmem(out_smem, out_gmem)
        plgpu.wait_smem_to_gmem(0)

    return _kernel(
        body,
        _sds(m, n, dtype=a.dtype),
        scratch_types=[
            plgpu.SMEM(a.shape, a.dtype, transforms=SWIZZLED_F16),
            plgpu.SMEM(b.shape, b.dtype, transforms=SWIZZLED_F16),
            plgpu.SMEM(b2.shape, b2.dtype, transforms=SWIZZLED_F16),
            plgpu.TMEM((m, n), jnp.float32, collective=True),
            plgpu.SMEM((m, n), a.dtype, transforms=SWIZZLED_F16),
            plgpu.Barrier(num_arrivals=3),
            plgpu.Barrier(orders_tensor_core=True),
            plgpu.Barrier(orders_tensor_core=True),
        ],
        cluster=(2,),
        cluster_names=("x",),
    )(a, b, b2)


def strided_cast_of_another_shape(x: jax.Array) -> jax.Array:
    """A (128, 64) tile cast to a strided layout written for (64, 128): the layout's own
    shape is what is wrong."""

    def body(x_gmem, out_gmem, x_smem, barrier):
        plgpu.copy_gmem_to_smem(x_gmem, x_smem, barrier)
        plgpu.barrier_wait(barrier)
        x = plgpu.layout_cast(x_smem[...], plgpu.Layout.WG_STRIDED((64, 128), vec_size=2))
        out_gmem[...] = x * 2.0

    return _kernel(
        body, _sds(*x.shape), scratch_types=[plgpu.SMEM(x.shape, x.dtype), plgpu.Barrier()]
    )(x)


KERNELS: dict[str, tuple[Callable[..., jax.Array], tuple[Any, ...], tuple[int, int]]] = {
    "row_sum_cast_to_columns": (row_sum_cast_to_columns, (_sds(128, 128),), HOPPER),
    "column_max_cast_to_rows": (
        column_max_cast_to_rows,
        (_sds(64, 128, dtype=jnp.bfloat16),),
        HOPPER,
    ),
    "small_tile_cast_to_wgmma": (small_tile_cast_to_wgmma, (_sds(32, 128),), HOPPER),
    "wgmma_then_strided": (
        wgmma_then_strided,
        (_sds(64, 64, dtype=jnp.float16), _sds(64, 128, dtype=jnp.float16)),
        HOPPER,
    ),
    "wgmma_operand_not_swizzled": (
        wgmma_operand_not_swizzled,
        (_sds(64, 64, dtype=jnp.float16), _sds(64, 128, dtype=jnp.float16)),
        HOPPER,
    ),
    "epilogue_to_unswizzled_smem": (
        epilogue_to_unswizzled_smem,
        (_sds(64, 64, dtype=jnp.float16), _sds(64, 128, dtype=jnp.float16)),
        HOPPER,
    ),
    "strided_loop_carry": (strided_loop_carry, (_sds(64, 128),), HOPPER),
    "tmem_acc_m64_layout_not_collective": (
        tmem_acc_m64_layout_not_collective,
        (_sds(64, 64, dtype=jnp.float16), _sds(64, 128, dtype=jnp.float16)),
        BLACKWELL,
    ),
    "tmem_acc_declared_collective": (
        tmem_acc_declared_collective,
        (_sds(64, 64, dtype=jnp.float16), _sds(64, 128, dtype=jnp.float16)),
        BLACKWELL,
    ),
    "tmem_acc_m64_layout_on_128_rows": (
        tmem_acc_m64_layout_on_128_rows,
        (_sds(128, 64, dtype=jnp.float16), _sds(64, 128, dtype=jnp.float16)),
        BLACKWELL,
    ),
    "tmem_load_as_wgmma": (
        tmem_load_as_wgmma,
        (_sds(128, 64, dtype=jnp.float16), _sds(64, 128, dtype=jnp.float16)),
        BLACKWELL,
    ),
    "tcgen05_row_sum_cast_to_columns": (
        tcgen05_row_sum_cast_to_columns,
        (_sds(128, 64, dtype=jnp.float16), _sds(64, 128, dtype=jnp.float16)),
        BLACKWELL,
    ),
    "tmem_store_strided": (
        tmem_store_strided,
        (_sds(128, 64, dtype=jnp.float16), _sds(64, 128, dtype=jnp.float16), _sds(128, 128)),
        BLACKWELL,
    ),
    "tmem_collective_and_single_cta_mma": (
        tmem_collective_and_single_cta_mma,
        (
            _sds(128, 64, dtype=jnp.float16),
            _sds(64, 128, dtype=jnp.float16),
            _sds(64, 256, dtype=jnp.float16),
        ),
        BLACKWELL,
    ),
    "strided_cast_of_another_shape": (strided_cast_of_another_shape, (_sds(128, 64),), HOPPER),
}


def fixture_text(name: str) -> str:
    """The module JAX hands to layout inference for kernel ``name``, located in this file."""
    sys.path.insert(0, str(HERE.parents[1]))
    import smalto.jax

    fn, args, arch = KERNELS[name]
    captured = smalto.jax.capture(fn, *args, arch=arch)
    text = captured[-1].text
    text = text.replace(f'"{Path(__file__).resolve()}"', '"kernels.py"')
    # The dump name counts lowerings in this process: a fixed one keeps the file stable.
    return re.sub(r'mosaic_gpu\.dump_basename = "[^"]*"', 'mosaic_gpu.dump_basename = "k"', text)


if __name__ == "__main__":
    for kernel_name in sys.argv[1:] or KERNELS:
        (HERE / f"pallas_{kernel_name}.mlir").write_text(fixture_text(kernel_name))
        print(f"wrote pallas_{kernel_name}.mlir")
