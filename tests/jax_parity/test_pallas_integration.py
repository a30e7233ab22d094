"""smalto inside JAX's compile path: ``smalto.jax`` on real Pallas kernels.

Everything here runs without a GPU: kernels are lowered for the CUDA platform
on the CPU, and ``smalto.jax.capture`` copies out the Mosaic GPU modules that
JAX hands to layout inference, before and after the pass.
"""

from __future__ import annotations

import inspect
import os
import re
import subprocess
import sys
from pathlib import Path

import jax
import jax.numpy as jnp
import pytest
from jax import lax
from jax._src import core as jax_core
from jax._src.lib.mlir import ir
from jax._src.pallas.mosaic_gpu.layout_rules import GPUTiledLayout, mgpu_layout_rule
from jax.experimental.mosaic import gpu as mgpu
from jax.experimental.mosaic.gpu import layout_inference
from jax.experimental.mosaic.gpu import utils as mgpu_utils
from jax.experimental.pallas import mosaic_gpu as plgpu
from pallas_kernels import (
    BLACKWELL,
    EXAMPLES,
    HOPPER,
    MOSAIC_GPU_CALL,
    WARPGROUP,
    add_one,
    assert_lowers,
    blackwell_matmul,
    example,
    f16,
    f32,
    row_softmax,
)
from reference import layout_attributes, make_context

import smalto
import smalto.jax
from smalto.cli.capture import capture_main
from smalto.jax import KernelLoweringError
from smalto.jax.capture import Recorder
from smalto.jax.hooks import observing

pallas_matmul = example("pallas_matmul")
pallas_attention = example("pallas_attention")

KERNELS = {
    "wgmma_matmul": (pallas_matmul.matmul, pallas_matmul.example_args(), None),
    "attention": (pallas_attention.attention, pallas_attention.example_args(), None),
    "tcgen05_matmul": (blackwell_matmul, (f16(128, 64), f16(64, 128)), BLACKWELL),
    "add_one": (add_one, (f32(128, 128),), None),
}

# Set by ``core.lower_mgpu_module`` before inference from a process-wide
# counter: the one part of a module that differs between two lowerings.
_DUMP_BASENAME = re.compile(r'mosaic_gpu\.dump_basename = "[^"]*"')


def _same_kernel(text: str) -> str:
    return _DUMP_BASENAME.sub('mosaic_gpu.dump_basename = "…"', text)


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
    # The same kernel reached both passes.
    assert _same_kernel(ours.text) == _same_kernel(theirs.text)
    context = make_context()
    expected = layout_attributes(theirs.module(inferred=True, context=context))
    assert expected, "the kernel should carry layout attributes"
    assert layout_attributes(ours.module(inferred=True, context=context)) == expected


def test_blackwell_kernel_carries_tmem_layouts() -> None:
    fn, args, arch = KERNELS["tcgen05_matmul"]
    with smalto.jax.enabled():
        (kernel,) = smalto.jax.capture(fn, *args, arch=arch)
    assert "mosaic_gpu.arch_major = 10 : i32" in kernel.text
    assert "tcgen05_mma" in kernel.text
    assert "out_tmem_layouts" in (kernel.inferred_text or "")


def test_enabled_routes_a_plain_jit_lowering_through_smalto(smalto_calls: list) -> None:
    fn = jax.jit(pallas_matmul.matmul)
    args = pallas_matmul.example_args()
    fn.trace(*args).lower(lowering_platforms=("cuda",))  # cached by JAX from here on
    with smalto.jax.enabled():
        assert smalto.jax.is_installed()
        # The pass in force keys JAX's caches: the kernel is lowered again, by smalto.
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
        jax.jit(_contradictory_cast_kernel).trace(f16(64, 64)).lower(lowering_platforms=("cuda",))
    message = str(raised.value)
    assert message.startswith(smalto.FAILURE_PREFIX)
    assert "layout_cast" in message
    here = re.escape(Path(__file__).name)
    assert re.search(rf'{here}"?:{_line_of("BAD CAST")}\b', message), message


def test_capture_returns_the_failing_module_with_its_error() -> None:
    with smalto.jax.enabled():
        (kernel,) = smalto.jax.capture(_contradictory_cast_kernel, f16(64, 64))
    assert not kernel.ok and kernel.inferred_text is None
    assert isinstance(kernel.error, smalto.InferenceError)
    # The pre-inference module still parses, locations and all, for `smalto infer`.
    with pytest.raises(smalto.InferenceError, match=Path(__file__).name):
        smalto.infer_layout(kernel.module())


def _jax_functions() -> tuple[object, object, object]:
    return mgpu.infer_layout, layout_inference.infer_layout, mgpu_utils._infer_arch


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
    smalto.jax.capture(blackwell_matmul, f16(128, 64), f16(64, 128), arch=BLACKWELL)
    assert all(now is then for now, then in zip(_jax_functions(), originals, strict=True))


def test_uninstall_restores_after_an_error() -> None:
    originals = _jax_functions()
    with pytest.raises(RuntimeError), smalto.jax.enabled():
        raise RuntimeError
    assert all(now is then for now, then in zip(_jax_functions(), originals, strict=True))
    with pytest.raises(KernelLoweringError):
        smalto.jax.lower(_contradictory_cast_kernel, f16(64, 64), arch=BLACKWELL)
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
    repo = Path(__file__).resolve().parents[2]
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
    written = tmp_path / "matmul.mlir"  # named after the function captured
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
    assert (out / "bad.mlir").is_file()  # the module that failed, for `smalto infer`
    err = capsys.readouterr().err
    assert smalto.FAILURE_PREFIX in err and "bad_cast.py" in err


def test_as_gpu_kernel_path_runs_smalto(smalto_calls: list) -> None:
    """``as_gpu_kernel`` (core.py) infers layouts when the kernel is built."""
    from jax._src.lib.mlir import ir
    from jax._src.lib.mlir.dialects import arith
    from jax.experimental.mosaic.gpu import dialect as mgpu_dialect

    from smalto.basics.mlir import make_context
    from smalto.jax.capture import Recorder
    from smalto.jax.hooks import observing

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


# --- The target architecture -------------------------------------------------


def test_forced_arch_reaches_the_module_and_the_pass(smalto_calls: list) -> None:
    original = mgpu_utils._infer_arch
    with smalto.jax.enabled():
        (kernel,) = smalto.jax.capture(add_one, f32(128, 128), arch=BLACKWELL)
    assert smalto_calls == [BLACKWELL]
    assert kernel.arch == BLACKWELL
    assert "mosaic_gpu.arch_major = 10 : i32, mosaic_gpu.arch_minor = 0 : i32" in kernel.text
    assert mgpu_utils._infer_arch is original
    assert smalto.jax.jax_infer_arch() is original


# --- What capture records: JAX's own dumps say so ----------------------------

_DUMPING_SCRIPT = """
import sys
import smalto.jax
from smalto.basics.mlir import parse_module
sys.path.insert(0, "tests/helpers")
from pallas_kernels import example

matmul = example("pallas_matmul")
with smalto.jax.enabled():
    (kernel,) = smalto.jax.capture(matmul.matmul, *matmul.example_args())
for name, text in (("before", kernel.text), ("after", kernel.inferred_text)):
    with open(sys.argv[1] + "/" + name + ".captured", "w") as out:
        out.write(str(parse_module(text)))
"""


def test_capture_sees_the_module_jax_dumps_around_inference(tmp_path: Path) -> None:
    """JAX dumps the module just before and just after ``infer_layout``
    (``MOSAIC_GPU_DUMP_MLIR_PASSES``); the captured texts are those modules,
    and the one after is smalto's answer, which JAX then lowered."""
    dumps = tmp_path / "dumps"
    dumps.mkdir()
    env = {
        **os.environ,
        "JAX_PLATFORMS": "cpu",
        "MOSAIC_GPU_DUMP_MLIR_PASSES": "1",
        "MOSAIC_GPU_DUMP_TO": str(dumps),
    }
    env.pop("SMALTO_JAX", None)
    env.pop("SMALTO_JAX_DUMP", None)
    repo = Path(__file__).resolve().parents[2]
    subprocess.run(
        [sys.executable, "-c", _DUMPING_SCRIPT, str(tmp_path)],
        env=env,
        cwd=repo,
        capture_output=True,
        check=True,
    )
    (before,) = dumps.glob("kernel_*.before_layout_inference.txt")
    (after,) = dumps.glob("kernel_*.after_layout_inference.txt")
    assert (tmp_path / "before.captured").read_text().strip() == before.read_text().strip()
    assert (tmp_path / "after.captured").read_text().strip() == after.read_text().strip()
    assert "in_layouts" not in before.read_text() and "in_layouts" in after.read_text()


# --- Lowering through JAX with smalto's layouts ------------------------------

LOWERS = [
    ("add_one", add_one, (f32(128, 128),), HOPPER),
    ("add_one", add_one, (f32(128, 128),), BLACKWELL),
    ("row_softmax", row_softmax, (f32(128, 128),), HOPPER),
    ("row_softmax", row_softmax, (f32(128, 128),), BLACKWELL),
    ("wgmma_matmul", pallas_matmul.matmul, pallas_matmul.example_args(), HOPPER),
    ("attention", pallas_attention.attention, pallas_attention.example_args(), HOPPER),
    ("tcgen05_matmul", blackwell_matmul, (f16(128, 64), f16(64, 128)), BLACKWELL),
]


@pytest.mark.parametrize(
    ("fn", "args", "arch"),
    [case[1:] for case in LOWERS],
    ids=[f"{case[0]}-sm{case[3][0]}{case[3][1]}" for case in LOWERS],
)
def test_kernel_lowers_with_smalto_layouts(fn, args, arch, smalto_calls: list) -> None:
    lowering = assert_lowers(fn, *args, arch=arch)
    assert smalto_calls == [arch]
    assert lowering.inferred_by == "smalto"
    assert not smalto.jax.is_installed()


@pytest.mark.slow
def test_jax_cannot_infer_a_row_softmax_over_an_untransformed_smem_tile() -> None:
    """The premise of the next test: JAX's pass finds no assignment for the row softmax
    (about 17 s of its search failing, hence ``slow``; in CI, the cases of
    ``tests/beyond_jax/test_beyond_jax.py::test_jax_cannot_infer`` fail the same way
    through ``smalto.jax.lower(..., by="jax")`` in a fraction of a second each)."""
    with pytest.raises(KernelLoweringError) as by_jax:
        smalto.jax.lower(row_softmax, f32(128, 128), arch=HOPPER, by="jax")
    assert by_jax.value.stage == "inference"
    assert str(by_jax.value.__cause__).startswith(smalto.FAILURE_PREFIX)


def test_lowers_through_smalto_where_jax_cannot_infer() -> None:
    """A row softmax over an SMEM tile without user transforms, which JAX's pass cannot
    infer (the test above): smalto tiles the SMEM ref and JAX's lowering accepts that."""
    lowering = assert_lowers(row_softmax, f32(128, 128), arch=HOPPER)
    assert "#mosaic_gpu.tile<" in (lowering.kernels[0].inferred_text or "")


def _walk(operation: ir.Operation):
    for region in operation.regions:
        for block in region:
            for op in block:
                yield op
                yield from _walk(op.operation)


def test_lowering_rejects_wrong_layouts(monkeypatch: pytest.MonkeyPatch) -> None:
    """``lower`` is a real check: JAX's dialect lowering consumes the layouts the
    pass wrote, so a pass that writes a wrong one is caught, after inference."""
    real = smalto.infer_layout

    def wrong_add_layout(module, **kwargs):
        real(module, **kwargs)
        (add,) = [op for op in _walk(module.operation) if op.name == "arith.addf"]
        with module.context:
            vector_1 = ir.Attribute.parse("#mosaic_gpu.WGStridedFragLayout<[128, 128], 1>")
            vector_2 = ir.Attribute.parse("#mosaic_gpu.WGStridedFragLayout<[128, 128], 2>")
            current = ir.ArrayAttr(add.attributes["out_layouts"])[0]
            wrong = vector_2 if current == vector_1 else vector_1
            add.attributes["out_layouts"] = ir.ArrayAttr.get([wrong])

    monkeypatch.setattr(smalto, "infer_layout", wrong_add_layout)
    with pytest.raises(KernelLoweringError) as raised:
        smalto.jax.lower(add_one, f32(128, 128), arch=HOPPER)
    assert raised.value.stage == "after inference"
    (kernel,) = raised.value.kernels
    assert kernel.ok and kernel.inferred_by == "smalto"
    assert "rejected kernel 'body' (sm_90) after layout inference by smalto" in str(raised.value)
    assert isinstance(raised.value.__cause__, ValueError)


@pytest.mark.parametrize("by", ["smalto", "jax"])
def test_lower_reports_an_inference_failure(by: str) -> None:
    with pytest.raises(KernelLoweringError) as raised:
        smalto.jax.lower(_contradictory_cast_kernel, f16(64, 64), arch=HOPPER, by=by)
    error = raised.value
    assert error.stage == "inference" and error.inferred_by == by
    (kernel,) = error.kernels
    assert kernel.error is error.__cause__ and kernel.inferred_by == by
    assert isinstance(error.__cause__, smalto.InferenceError if by == "smalto" else ValueError)
    assert f"{by}'s layout inference failed on kernel 'body' (sm_90)" in str(error)


def _raises_while_tracing(x: jax.Array) -> jax.Array:
    def body(x_gmem, out_gmem):
        raise ValueError("not this kernel")

    return plgpu.kernel(body, out_type=x, compiler_params=WARPGROUP)(x)


def _lane_semantics_kernel(x: jax.Array) -> jax.Array:
    def body(x_gmem, out_gmem):
        out_gmem[...] = x_gmem[...]

    lane = plgpu.CompilerParams(lowering_semantics=plgpu.LoweringSemantics.Lane)
    return plgpu.kernel(body, out_type=x, compiler_params=lane)(x)


@pytest.mark.parametrize(
    ("fn", "stage"),
    [
        (_raises_while_tracing, "before inference"),
        (_lane_semantics_kernel, "no kernel"),
        (lambda x: x + 1, "no kernel"),
    ],
)
def test_lower_reports_where_nothing_was_inferred(fn, stage: str) -> None:
    with pytest.raises(KernelLoweringError) as raised:
        smalto.jax.lower(fn, f32(128, 128), arch=HOPPER)
    assert raised.value.stage == stage and raised.value.kernels == ()


def test_lower_leaves_the_pass_in_force_as_it_was() -> None:
    with smalto.jax.enabled():
        lowering = smalto.jax.lower(add_one, f32(128, 128), by="jax")
        assert [k.inferred_by for k in lowering.kernels] == ["jax"]
        assert smalto.jax.is_installed()
    lowering = smalto.jax.lower(add_one, f32(128, 128))
    assert [k.inferred_by for k in lowering.kernels] == ["smalto"]
    assert not smalto.jax.is_installed()
    assert mgpu.infer_layout is smalto.jax.jax_infer_layout()
    assert MOSAIC_GPU_CALL in lowering.lowered.as_text()


# --- Pallas' layout rules (explicitly laid-out arrays) -----------------------


def test_pallas_layout_rules_infer_with_smalto(smalto_calls: list) -> None:
    """Pallas' layout rule for an op on a WGMMA-laid-out array infers a probe
    module with ``mgpu.infer_layout``: with smalto installed, smalto's answer."""
    tile = jax_core.ShapedArray((128, 128), jnp.float32)
    laid_out = tile.update(layout=GPUTiledLayout.for_array(tile, plgpu.Layout.WGMMA))
    rows = jax_core.ShapedArray((128,), jnp.float32)

    def row_sum_layout():
        return mgpu_layout_rule(
            lax.reduce_sum_p, (laid_out,), (rows,), axes=(1,), out_sharding=None
        )

    recorder = Recorder()
    with observing(recorder):
        by_jax = row_sum_layout()
        with smalto.jax.enabled():
            by_smalto = row_sum_layout()
    assert smalto_calls == [HOPPER]
    assert [(c.name, c.inferred_by) for c in recorder.captured] == [
        ("mgpu_layout_rule", "jax"),
        ("mgpu_layout_rule", "smalto"),
    ]
    assert by_smalto == by_jax != laid_out.layout
    assert by_smalto.tiling.tiles[0] == (64,)  # a row layout of the WGMMA tile
