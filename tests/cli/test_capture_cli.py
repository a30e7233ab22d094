"""``smalto capture`` and ``smalto.jax.capture`` where users need them (issue #34, part 3).

The commonest failing kernel, a bf16 epilogue of a WGMMA (Hopper) or TMEM (Blackwell)
accumulator stored straight to GMEM, gets layouts from JAX's pass that JAX's own
lowering then rejects: the module is still captured and written, and the capture says
what happened. Capture runs smalto's pass (fast) unless ``--jax`` asks for JAX's, and
names its files after the captured function, so two captures into one folder keep
both. Real Pallas kernels, lowered on the CPU.
"""

from __future__ import annotations

import textwrap
from pathlib import Path

import jax
import jax.numpy as jnp
import pytest
from cli_run import run
from jax.experimental.mosaic import gpu as mgpu

import smalto
import smalto.jax

KERNELS = """
import jax
import jax.numpy as jnp
from jax.experimental import pallas as pl
from jax.experimental.pallas import mosaic_gpu as plgpu

WARPGROUP = plgpu.CompilerParams(lowering_semantics=plgpu.LoweringSemantics.Warpgroup)


def _operand(shape, dtype):
    swizzle = plgpu.find_swizzle(shape[1] * jnp.dtype(dtype).itemsize * 8)
    tiling = plgpu.TilingTransform((8, swizzle // jnp.dtype(dtype).itemsize))
    return plgpu.SMEM(shape, dtype, transforms=(tiling, plgpu.SwizzleTransform(swizzle)))


def gemm_bias_gelu(a, b, bias):
    m, k = a.shape
    _, n = b.shape

    def kernel(a_gmem, b_gmem, bias_gmem, o_gmem, a_smem, b_smem, loaded):
        plgpu.copy_gmem_to_smem(a_gmem, a_smem, loaded)
        plgpu.copy_gmem_to_smem(b_gmem, b_smem, loaded)
        plgpu.barrier_wait(loaded)

        def mma(acc_ref):
            plgpu.wgmma(acc_ref, a_smem, b_smem)
            return acc_ref[...]

        acc = pl.run_scoped(mma, plgpu.ACC((m, n), jnp.float32))
        y = acc + bias_gmem[...].astype(jnp.float32)
        o_gmem[...] = jax.nn.gelu(y).astype(jnp.bfloat16)

    return plgpu.kernel(
        kernel,
        out_type=jax.ShapeDtypeStruct((m, n), jnp.bfloat16),
        scratch_types=[_operand((m, k), a.dtype), _operand((k, n), b.dtype),
                       plgpu.Barrier(num_arrivals=2)],
        compiler_params=WARPGROUP,
    )(a, b, bias)


def tcgen05_gemm_bf16_out(a, b):
    m, k = a.shape
    _, n = b.shape

    def kernel(a_gmem, b_gmem, o_gmem, a_smem, b_smem, acc_tmem, loaded, done):
        plgpu.copy_gmem_to_smem(a_gmem, a_smem, loaded)
        plgpu.copy_gmem_to_smem(b_gmem, b_smem, loaded)
        plgpu.barrier_wait(loaded)
        plgpu.tcgen05_mma(acc_tmem, a_smem, b_smem, done, accumulate=False)
        plgpu.barrier_wait(done)
        o_gmem[...] = plgpu.async_load_tmem(acc_tmem).astype(jnp.bfloat16)

    return plgpu.kernel(
        kernel,
        out_type=jax.ShapeDtypeStruct((m, n), jnp.bfloat16),
        scratch_types=[_operand((m, k), a.dtype), _operand((k, n), b.dtype),
                       plgpu.TMEM((m, n), jnp.float32), plgpu.Barrier(num_arrivals=2),
                       plgpu.Barrier(orders_tensor_core=True)],
        compiler_params=WARPGROUP,
    )(a, b)


def scale(x):
    def kernel(x_gmem, o_gmem):
        o_gmem[...] = x_gmem[...] * 2.0

    return plgpu.kernel(kernel, out_type=jax.ShapeDtypeStruct(x.shape, x.dtype),
                        compiler_params=WARPGROUP)(x)


def scale_twice(x):
    return scale(scale(x) + 1.0)


def row_sum_cast_to_columns(x):
    def kernel(x_gmem, o_gmem):
        s = jnp.sum(plgpu.layout_cast(x_gmem[...], plgpu.Layout.WGMMA), axis=1)
        o_gmem[...] = plgpu.layout_cast(s, plgpu.Layout.WGMMA.reduce(0))

    return plgpu.kernel(kernel, out_type=jax.ShapeDtypeStruct(x.shape[:1], x.dtype),
                        compiler_params=WARPGROUP)(x)
"""

GEMM_ARGS = ["--arg", "bf16[128,64]", "--arg", "bf16[64,128]", "--arg", "bf16[128,128]"]


@pytest.fixture
def script(tmp_path: Path) -> Path:
    path = tmp_path / "kernels.py"
    path.write_text(textwrap.dedent(KERNELS))
    return path


def _load(script: Path, name: str):  # noqa: ANN202 - a user's function
    import runpy

    return runpy.run_path(str(script))[name]


def _bf16(*shape: int) -> jax.ShapeDtypeStruct:
    return jax.ShapeDtypeStruct(shape, jnp.bfloat16)


@pytest.fixture
def jax_pass_calls(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """Counts calls of JAX's own pass (the hook saves the attribute it finds at patch time)."""
    calls: list[str] = []
    real = mgpu.infer_layout

    def counting(module, **kwargs):  # noqa: ANN001, ANN202
        calls.append("jax")
        return real(module, **kwargs)

    monkeypatch.setattr(mgpu, "infer_layout", counting)
    return calls


def test_api_keeps_a_module_whose_jax_layouts_the_lowering_rejects(script: Path) -> None:
    """A bf16 WGMMA epilogue stored straight to GMEM: JAX's pass answers, its lowering
    rejects the answer. capture returns the module with the rejection, never raises."""
    gemm = _load(script, "gemm_bias_gelu")
    (kernel,) = smalto.jax.capture(gemm, _bf16(128, 64), _bf16(64, 128), _bf16(128, 128))
    assert kernel.inferred_by == "jax" and kernel.ok and not kernel.compiles
    assert "sectors" in str(kernel.lowering_error)
    assert kernel.inferred_text is not None  # JAX's answer, as it wrote it
    smalto.infer_layout(kernel.module())  # the module captured is smalto's to infer


def test_api_keeps_a_blackwell_tmem_epilogue(script: Path) -> None:
    gemm = _load(script, "tcgen05_gemm_bf16_out")
    (kernel,) = smalto.jax.capture(gemm, _bf16(128, 64), _bf16(64, 128), arch=(10, 0))
    assert kernel.arch == (10, 0) and kernel.ok and kernel.lowering_error is not None
    assert "tcgen05_mma" in kernel.text


def test_api_by_smalto_runs_smalto_and_restores_the_pass(
    script: Path, jax_pass_calls: list[str]
) -> None:
    gemm = _load(script, "gemm_bias_gelu")
    (kernel,) = smalto.jax.capture(
        gemm, _bf16(128, 64), _bf16(64, 128), _bf16(128, 128), by="smalto"
    )
    assert jax_pass_calls == [] and kernel.inferred_by == "smalto" and kernel.compiles
    assert not smalto.jax.is_installed()  # the pass in force before is in force after


def test_capture_writes_the_module_jax_cannot_compile_without_running_jax(
    script: Path, tmp_path: Path, jax_pass_calls: list[str]
) -> None:
    ran = run("capture", f"{script}:gemm_bias_gelu", *GEMM_ARGS, "-o", tmp_path / "out")
    written = tmp_path / "out" / "gemm_bias_gelu.mlir"
    assert ran.status == 0 and ran.out.splitlines() == [str(written)], ran.err
    assert "wgmma" in written.read_text()
    assert jax_pass_calls == []  # only the module was needed: JAX's pass never ran
    assert ran.err == (
        f"smalto: note: {written}: smalto's layout inference found layouts and JAX's "
        "lowering took them; JAX's own pass was not run (--jax runs it)\n"
    )


def test_capture_with_jax_says_its_lowering_rejected_the_answer(
    script: Path, tmp_path: Path
) -> None:
    ran = run("capture", f"{script}:gemm_bias_gelu", *GEMM_ARGS, "--jax", "-o", tmp_path)
    written = tmp_path / "gemm_bias_gelu.mlir"
    assert ran.status == 0 and written.is_file(), ran.err
    what, advice = ran.err.splitlines()
    assert what.startswith(
        f"smalto: note: {written}: JAX's layout inference answered, and JAX's Mosaic GPU "
        "lowering rejected its layouts: TransferPlanDerivationError"
    )
    assert advice == (
        f"smalto: note: smalto's pass finds layouts for it: `smalto infer {written}` prints "
        "them; the kernel lowers inside `with smalto.jax.enabled():`"
    )
    assert run("infer", written).status == 0  # what the note promises
    assert "kernel kernel" not in ran.err


def test_capture_of_a_kernel_no_pass_can_lay_out_points_to_infer_and_fix(
    script: Path, tmp_path: Path
) -> None:
    target = f"{script}:row_sum_cast_to_columns"
    ran = run("capture", target, "--arg", "f32[128,128]", "-o", tmp_path)
    written = tmp_path / "row_sum_cast_to_columns.mlir"
    assert ran.status == 0 and written.is_file(), ran.err
    what, advice = ran.err.splitlines()
    assert what.startswith(f"smalto: note: {written}: smalto's layout inference found no layouts")
    assert "WGMMA_ROW to WGMMA_COL" in what
    assert advice == (
        f"smalto: note: `smalto infer {written}` says why and which edits make it lower; "
        f"`smalto fix {target} --arg f32[128,128]` applies the verified fix to the script"
    )
    strict = run("capture", target, "--arg", "f32[128,128]", "--smalto", "-o", tmp_path)
    assert strict.status == 1 and strict.err.startswith(f"smalto: error: {written}: Failed")
    both = run("capture", target, "--arg", "f32[128,128]", "--smalto", "--jax")
    assert both.status == 2


def test_two_functions_captured_into_one_folder_keep_both(script: Path, tmp_path: Path) -> None:
    """Both Pallas bodies are called ``kernel``: the files are named after the functions."""
    first = run("capture", f"{script}:gemm_bias_gelu", *GEMM_ARGS, "-o", tmp_path)
    second = run("capture", f"{script}:scale", "--arg", "f32[128,128]", "-o", tmp_path)
    assert first.status == second.status == 0
    assert sorted(p.name for p in tmp_path.glob("*.mlir")) == ["gemm_bias_gelu.mlir", "scale.mlir"]
    assert "wgmma" in (tmp_path / "gemm_bias_gelu.mlir").read_text()
    assert "wgmma" not in (tmp_path / "scale.mlir").read_text()


def test_a_function_with_two_kernels_gets_numbered_files(script: Path, tmp_path: Path) -> None:
    ran = run("capture", f"{script}:scale_twice", "--arg", "f32[128,128]", "--inferred",
              "-o", tmp_path)  # fmt: skip
    assert ran.status == 0, ran.err
    names = [Path(p).name for p in ran.out.splitlines()]
    assert names == [
        "scale_twice-1.mlir",
        "scale_twice-1.inferred.mlir",
        "scale_twice-2.mlir",
        "scale_twice-2.inferred.mlir",
    ]
    assert "in_layouts" in (tmp_path / "scale_twice-2.inferred.mlir").read_text()
