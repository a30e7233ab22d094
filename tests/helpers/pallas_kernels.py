"""Pallas Mosaic GPU kernels (jax 0.12.0.1 API) for the integration tests, and
``assert_lowers``: the check that a kernel lowers for a GPU with smalto's layouts.

``assert_lowers`` needs no GPU: the kernel is lowered for CUDA on the host with
the architecture forced, smalto infers the layouts, and JAX's own Mosaic GPU
dialect lowering and verifier consume them. Use it to show that a kernel
lowers through smalto, e.g. one JAX's pass cannot infer::

    with pytest.raises(smalto.jax.KernelLoweringError) as jax_failed:
        smalto.jax.lower(kernel, *args, arch=(10, 0), by="jax")
    assert jax_failed.value.stage == "inference"
    assert_lowers(kernel, *args, arch=(10, 0))
"""

from __future__ import annotations

import importlib.util
from collections.abc import Callable
from pathlib import Path
from types import ModuleType
from typing import Any

import jax
import jax.numpy as jnp
import pytest
from jax.experimental.pallas import mosaic_gpu as plgpu

import smalto.jax
from smalto.jax import KernelLoweringError, Lowering

HOPPER = (9, 0)
BLACKWELL = (10, 0)
EXAMPLES = Path(__file__).resolve().parents[2] / "examples"
WARPGROUP = plgpu.CompilerParams(lowering_semantics=plgpu.LoweringSemantics.Warpgroup)
# The custom call a lowered Mosaic GPU kernel becomes in the StableHLO module.
MOSAIC_GPU_CALL = "stablehlo.custom_call @mosaic_gpu_v2"


def assert_lowers(
    fn: Callable[..., Any], *args: Any, arch: tuple[int, int], kernels: int = 1
) -> Lowering:
    """Asserts that ``fn(*args)`` lowers for ``arch`` with smalto inferring every layout.

    Fails the test (with the stage that failed and JAX's or smalto's message)
    unless the lowering succeeds, built ``kernels`` warpgroup kernels for
    ``arch``, smalto inferred each of them, and each became a Mosaic GPU custom
    call in the lowered module.
    """
    try:
        lowering = smalto.jax.lower(fn, *args, arch=arch, by="smalto")
    except KernelLoweringError as error:
        pytest.fail(f"[{error.stage}] {error}", pytrace=False)
    assert len(lowering.kernels) == kernels, [k.name for k in lowering.kernels]
    assert lowering.arch == arch
    for kernel in lowering.kernels:
        assert kernel.inferred_by == "smalto" and kernel.arch == arch
        assert f"mosaic_gpu.arch_major = {arch[0]} : i32" in kernel.text
        assert kernel.inferred_text is not None and "_layouts = [" in kernel.inferred_text
    assert lowering.lowered.as_text().count(MOSAIC_GPU_CALL) == kernels
    return lowering


def example(name: str) -> ModuleType:
    """Imports ``examples/NAME.py``."""
    spec = importlib.util.spec_from_file_location(f"smalto_example_{name}", EXAMPLES / f"{name}.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def f16(*shape: int) -> jax.ShapeDtypeStruct:
    return jax.ShapeDtypeStruct(shape, jnp.float16)


def f32(*shape: int) -> jax.ShapeDtypeStruct:
    return jax.ShapeDtypeStruct(shape, jnp.float32)


def add_one(x: jax.Array) -> jax.Array:
    """Elementwise ``x + 1`` straight from GMEM: a load, an add, a store."""

    def body(x_gmem, out_gmem):
        out_gmem[...] = x_gmem[...] + 1.0

    return plgpu.kernel(
        body, out_type=jax.ShapeDtypeStruct(x.shape, x.dtype), compiler_params=WARPGROUP
    )(x)


def row_softmax(x: jax.Array) -> jax.Array:
    """Softmax over the rows of one f32 tile in SMEM: reductions and broadcasts."""

    def body(x_gmem, out_gmem, x_smem, barrier):
        plgpu.copy_gmem_to_smem(x_gmem, x_smem, barrier)
        plgpu.barrier_wait(barrier)
        x = x_smem[...]
        e = jnp.exp(x - jax.lax.broadcast_in_dim(x.max(axis=1), x.shape, [0]))
        x_smem[...] = e / jax.lax.broadcast_in_dim(e.sum(axis=1), x.shape, [0])
        plgpu.commit_smem()
        plgpu.copy_smem_to_gmem(x_smem, out_gmem)
        plgpu.wait_smem_to_gmem(0)

    return plgpu.kernel(
        body,
        out_type=jax.ShapeDtypeStruct(x.shape, x.dtype),
        scratch_types=[plgpu.SMEM(x.shape, x.dtype), plgpu.Barrier()],
        compiler_params=WARPGROUP,
    )(x)


def blackwell_matmul(a: jax.Array, b: jax.Array) -> jax.Array:
    """One 128x128 tile with tcgen05: SMEM operands, a TMEM accumulator."""
    (m, k), (_, n) = a.shape, b.shape
    transforms = (plgpu.TilingTransform((8, 64)), plgpu.SwizzleTransform(128))

    def body(a_gmem, b_gmem, out_gmem, a_smem, b_smem, acc_tmem, out_smem, loaded, mma_done):
        plgpu.copy_gmem_to_smem(a_gmem, a_smem, loaded)
        plgpu.copy_gmem_to_smem(b_gmem, b_smem, loaded)
        plgpu.barrier_wait(loaded)
        plgpu.tcgen05_mma(acc_tmem, a_smem, b_smem, mma_done, accumulate=False)
        plgpu.barrier_wait(mma_done)
        out_smem[...] = plgpu.async_load_tmem(acc_tmem).astype(out_smem.dtype)
        plgpu.commit_smem()
        plgpu.copy_smem_to_gmem(out_smem, out_gmem)
        plgpu.wait_smem_to_gmem(0)

    return plgpu.kernel(
        body,
        out_type=jax.ShapeDtypeStruct((m, n), a.dtype),
        scratch_types=[
            plgpu.SMEM((m, k), a.dtype, transforms=transforms),
            plgpu.SMEM((k, n), a.dtype, transforms=transforms),
            plgpu.TMEM((m, n), jnp.float32),
            plgpu.SMEM((m, n), a.dtype, transforms=transforms),
            plgpu.Barrier(num_arrivals=2),
            plgpu.Barrier(orders_tensor_core=True),
        ],
        compiler_params=WARPGROUP,
    )(a, b)
