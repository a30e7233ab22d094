"""smalto inside JAX's compile path: ``smalto.jax`` on real Pallas kernels.

Everything here runs without a GPU: kernels are lowered for the CUDA platform
on the CPU, and ``smalto.jax.capture`` copies out the Mosaic GPU modules that
JAX hands to layout inference, before and after the pass.
"""

from __future__ import annotations

import importlib.util
import inspect
import os
import re
import subprocess
import sys
from pathlib import Path
from types import ModuleType

import jax
import jax.numpy as jnp
import pytest
from jax.experimental.mosaic import gpu as mgpu
from jax.experimental.mosaic.gpu import core as mgpu_core
from jax.experimental.mosaic.gpu import layout_inference
from jax.experimental.pallas import mosaic_gpu as plgpu
from reference import layout_attributes, make_context

import smalto
import smalto.jax
from smalto.jax.cli import capture_main

EXAMPLES = Path(__file__).resolve().parents[1] / "examples"
WARPGROUP = plgpu.CompilerParams(lowering_semantics=plgpu.LoweringSemantics.Warpgroup)


def _example(name: str) -> ModuleType:
    spec = importlib.util.spec_from_file_location(f"smalto_example_{name}", EXAMPLES / f"{name}.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


pallas_matmul = _example("pallas_matmul")
pallas_attention = _example("pallas_attention")


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


def _f16(*shape: int) -> jax.ShapeDtypeStruct:
    return jax.ShapeDtypeStruct(shape, jnp.float16)


KERNELS = {
    "wgmma_matmul": (pallas_matmul.matmul, pallas_matmul.example_args(), None),
    "attention": (pallas_attention.attention, pallas_attention.example_args(), None),
    "tcgen05_matmul": (blackwell_matmul, (_f16(128, 64), _f16(64, 128)), (10, 0)),
}


@pytest.fixture
def smalto_calls(monkeypatch: pytest.MonkeyPatch) -> list[tuple[int, int]]:
    """Counts calls of ``smalto.infer_layout`` (the hook looks it up at call time)."""
    calls: list[tuple[int, int]] = []
    real = smalto.infer_layout

    def counting(module, **kwargs):
        calls.append(kwargs["arch"])
        return real(module, **kwargs)

    monkeypatch.setattr(smalto, "infer_layout", counting)
    return calls


@pytest.mark.parametrize("name", list(KERNELS))
def test_smalto_and_jax_agree_on_pallas_kernels(name: str, smalto_calls: list) -> None:
    fn, args, arch = KERNELS[name]
    by_jax = smalto.jax.capture(fn, *args, arch=arch)
    assert smalto_calls == []
    with smalto.jax.enabled():
        by_smalto = smalto.jax.capture(fn, *args, arch=arch)
    expected_arch = arch or (9, 0)
    assert smalto_calls == [expected_arch]
    assert [c.inferred_by for c in by_jax] == ["jax"]
    assert [c.inferred_by for c in by_smalto] == ["smalto"]
    (theirs,), (ours,) = by_jax, by_smalto
    assert theirs.ok and ours.ok, ours.error or theirs.error
    assert ours.arch == theirs.arch == expected_arch
    assert ours.text == theirs.text  # the same kernel reached both passes
    context = make_context()
    expected = layout_attributes(theirs.module(inferred=True, context=context))
    assert expected, "the kernel should carry layout attributes"
    assert layout_attributes(ours.module(inferred=True, context=context)) == expected


def test_blackwell_kernel_carries_tmem_layouts() -> None:
    fn, args, arch = KERNELS["tcgen05_matmul"]
    with smalto.jax.enabled():
        (kernel,) = smalto.jax.capture(fn, *args, arch=arch)
    assert "mosaic_gpu.arch_major = 10" in kernel.text
    assert "tcgen05_mma" in kernel.text
    assert "out_tmem_layouts" in (kernel.inferred_text or "")


def test_enabled_routes_a_plain_jit_lowering_through_smalto(smalto_calls: list) -> None:
    fn = jax.jit(pallas_matmul.matmul)
    args = pallas_matmul.example_args()
    fn.trace(*args).lower(lowering_platforms=("cuda",))  # cached by JAX from here on
    with smalto.jax.enabled():
        assert smalto.jax.is_installed()
        # Enabling clears JAX's caches: the kernel is lowered again, by smalto.
        fn.trace(*args).lower(lowering_platforms=("cuda",))
    assert smalto_calls == [(9, 0)]
    assert not smalto.jax.is_installed()


def _contradictory_cast_kernel(x: jax.Array) -> jax.Array:
    def body(x_gmem, out_gmem, acc):
        acc[...] = plgpu.layout_cast(x_gmem[...].astype(jnp.float32), plgpu.Layout.WGMMA)
        strided = plgpu.Layout.WG_STRIDED((64, 64), vec_size=2)
        out_gmem[...] = plgpu.layout_cast(acc[...], strided).astype(out_gmem.dtype)  # BAD CAST

    return plgpu.kernel(
        body,
        out_type=jax.ShapeDtypeStruct((64, 64), jnp.float16),
        scratch_types=[plgpu.ACC((64, 64), jnp.float32)],
        compiler_params=WARPGROUP,
    )(x)


def _line_of(marker: str) -> int:
    lines, first = inspect.getsourcelines(_contradictory_cast_kernel)
    return first + next(i for i, line in enumerate(lines) if marker in line)


def test_inference_error_names_the_users_file_and_line() -> None:
    with smalto.jax.enabled(), pytest.raises(smalto.InferenceError) as raised:
        jax.jit(_contradictory_cast_kernel).trace(_f16(64, 64)).lower(lowering_platforms=("cuda",))
    message = str(raised.value)
    assert message.startswith(smalto.FAILURE_PREFIX)
    assert "layout_cast" in message
    here = re.escape(Path(__file__).name)
    assert re.search(rf'{here}"?:{_line_of("BAD CAST")}\b', message), message


def test_capture_returns_the_failing_module_with_its_error() -> None:
    with smalto.jax.enabled():
        (kernel,) = smalto.jax.capture(_contradictory_cast_kernel, _f16(64, 64))
    assert not kernel.ok and kernel.inferred_text is None
    assert isinstance(kernel.error, smalto.InferenceError)
    # The pre-inference module still parses, locations and all, for `smalto infer`.
    with pytest.raises(smalto.InferenceError, match=Path(__file__).name):
        smalto.infer_layout(kernel.module())


def _jax_functions() -> tuple[object, object, object]:
    return mgpu.infer_layout, layout_inference.infer_layout, mgpu_core._infer_arch


def test_uninstall_restores_jax_functions_exactly() -> None:
    originals = _jax_functions()
    assert smalto.jax.jax_infer_layout() is originals[0] is originals[1]
    smalto.jax.install()
    smalto.jax.install()  # idempotent
    assert mgpu.infer_layout is not originals[0]
    assert layout_inference.infer_layout is mgpu.infer_layout
    assert smalto.jax.jax_infer_layout() is originals[0]
    smalto.jax.uninstall()
    assert all(now is then for now, then in zip(_jax_functions(), originals, strict=True))
    with smalto.jax.enabled():
        with smalto.jax.enabled():
            pass
        assert smalto.jax.is_installed()  # the inner block restores the outer state
    assert all(now is then for now, then in zip(_jax_functions(), originals, strict=True))
    smalto.jax.capture(blackwell_matmul, _f16(128, 64), _f16(64, 128), arch=(10, 0))
    assert all(now is then for now, then in zip(_jax_functions(), originals, strict=True))


def test_uninstall_restores_after_an_error() -> None:
    originals = _jax_functions()
    with pytest.raises(RuntimeError), smalto.jax.enabled():
        raise RuntimeError
    assert all(now is then for now, then in zip(_jax_functions(), originals, strict=True))


def test_dump_to_writes_modules_before_and_after_inference(tmp_path: Path) -> None:
    with smalto.jax.enabled(dump_to=tmp_path):
        smalto.jax.capture(pallas_matmul.matmul, *pallas_matmul.example_args())
    assert sorted(p.name for p in tmp_path.iterdir()) == [
        "001-kernel.inferred.mlir",
        "001-kernel.mlir",
    ]
    assert "in_layouts" in (tmp_path / "001-kernel.inferred.mlir").read_text()


def test_environment_variable_installs_on_import() -> None:
    code = (
        "import smalto.jax, jax.experimental.mosaic.gpu as m; "
        "print(smalto.jax.is_installed(), m.infer_layout is smalto.jax.jax_infer_layout())"
    )
    env = {**os.environ, "SMALTO_JAX": "1", "JAX_PLATFORMS": "cpu"}
    env.pop("SMALTO_JAX_DUMP", None)
    repo = Path(__file__).resolve().parents[1]
    out = subprocess.run(
        [sys.executable, "-c", code], env=env, cwd=repo, capture_output=True, text=True, check=True
    )
    assert out.stdout.split() == ["True", "False"]


def test_capture_cli_writes_mlir_files(tmp_path: Path, capsys: pytest.CaptureFixture) -> None:
    script = EXAMPLES / "pallas_matmul.py"
    status = capture_main(
        [f"{script}:matmul", "--arg", "f16[256,128]", "--arg", "f16[128,256]", "-o", str(tmp_path)]
    )
    assert status == 0
    written = tmp_path / "kernel.mlir"
    assert capsys.readouterr().out.split() == [str(written)]
    text = written.read_text()
    assert "mosaic_gpu.wgmma" in text and "in_layouts" not in text  # before inference
    context = make_context()
    module = smalto.jax.CapturedModule("kernel", (9, 0), text, None, "jax").module(context=context)
    smalto.infer_layout(module)


MATMUL_SCRIPT = str(EXAMPLES / "pallas_matmul.py")


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["nowhere.py:f"], "cannot read"),
        ([MATMUL_SCRIPT], "SCRIPT.py:FUNCTION"),
        ([f"{MATMUL_SCRIPT}:missing"], "no function 'missing'"),
        ([f"{MATMUL_SCRIPT}:matmul", "--arg", "f16[2,"], "--arg"),
        ([f"{MATMUL_SCRIPT}:matmul", "--arg", "q7[2]"], "unknown dtype"),
    ],
)
def test_capture_cli_usage_errors(argv: list, message: str, capsys: pytest.CaptureFixture) -> None:
    assert capture_main(argv) == 2
    err = capsys.readouterr().err
    assert "error:" in err and message in err
    assert "Traceback" not in err


BAD_CAST_SCRIPT = """
import jax, jax.numpy as jnp
from jax.experimental.pallas import mosaic_gpu as plgpu

def bad(x):
    def body(x_gmem, out_gmem, acc):
        acc[...] = plgpu.layout_cast(x_gmem[...].astype(jnp.float32), plgpu.Layout.WGMMA)
        strided = plgpu.Layout.WG_STRIDED((64, 64), vec_size=2)
        out_gmem[...] = plgpu.layout_cast(acc[...], strided).astype(out_gmem.dtype)
    return plgpu.kernel(
        body,
        out_type=jax.ShapeDtypeStruct((64, 64), jnp.float16),
        scratch_types=[plgpu.ACC((64, 64), jnp.float32)],
        compiler_params=plgpu.CompilerParams(
            lowering_semantics=plgpu.LoweringSemantics.Warpgroup),
    )(x)
"""


def test_capture_cli_reports_inference_failure(
    tmp_path: Path, capsys: pytest.CaptureFixture
) -> None:
    script = tmp_path / "bad_cast.py"
    script.write_text(BAD_CAST_SCRIPT)
    out = tmp_path / "out"
    argv = [f"{script}:bad", "--arg", "f16[64,64]", "--smalto", "-o", str(out)]
    assert capture_main(argv) == 1
    assert (out / "body.mlir").is_file()  # the module that failed, for `smalto infer`
    err = capsys.readouterr().err
    assert smalto.FAILURE_PREFIX in err and "bad_cast.py" in err


def test_as_gpu_kernel_path_runs_smalto(smalto_calls: list) -> None:
    """``as_gpu_kernel`` (core.py) infers layouts when the kernel is built."""
    from jax._src.lib.mlir import ir
    from jax._src.lib.mlir.dialects import arith
    from jax.experimental.mosaic.gpu import dialect as mgpu_dialect

    from smalto.jax.capture import Recorder
    from smalto.jax.hooks import observing
    from smalto.mlir import make_context

    def body(ctx, x_ref, out_ref, smem):
        x = mgpu_dialect.vector_load(x_ref)
        mgpu_dialect.vector_store(arith.addf(x, x), out_ref)

    shape = jax.ShapeDtypeStruct((128, 64), jnp.float32)

    def build() -> None:
        with make_context(), ir.Location.unknown():
            mgpu.as_gpu_kernel(
                body,
                grid=(1, 1, 1),
                block=(128, 1, 1),
                in_shape=shape,
                out_shape=shape,
                smem_scratch_shape=(),
                thread_semantics=mgpu.LoweringSemantics.Warpgroup,
            )

    recorder = Recorder()
    with observing(recorder):
        build()
        with smalto.jax.enabled():
            build()
    assert smalto_calls == [(9, 0)]
    theirs, ours = recorder.captured
    assert (theirs.inferred_by, ours.inferred_by) == ("jax", "smalto")
    context = make_context()
    expected = layout_attributes(theirs.module(inferred=True, context=context))
    assert expected
    assert layout_attributes(ours.module(inferred=True, context=context)) == expected
