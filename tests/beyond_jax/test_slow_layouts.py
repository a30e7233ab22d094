"""Where smalto's answer costs speed, it says so at the kernel's line and names the cause
(issue #52, point 6): ``smalto.SlowLayoutsWarning``.

The kernels are FP8 cast-transposes (``cast_transpose/cast_transpose_kernels.py``): through GMEM,
JAX's answer (strided vectors of 4) is rejected by its own lowering and smalto's
makes every value strided with vectors of 1; through SMEM, JAX's pass finds no
layouts and smalto's widened search asks for relayouts and 1-byte vectors. A
kernel whose answer is JAX's says nothing.
"""

from __future__ import annotations

import sys
import warnings
from pathlib import Path

import jax
import jax.numpy as jnp
import pytest
from jax.experimental.pallas import mosaic_gpu as plgpu
from reference import make_context, parse

import smalto
import smalto.jax
from smalto.check import check
from smalto.jax.capture import lower_for_cuda
from smalto.jax.hooks import forced_arch
from smalto.pipeline.speed import speed_costs

HERE = Path(__file__).resolve().parent / "cast_transpose"
sys.path.insert(0, str(HERE))

import cast_transpose_kernels as kernels  # noqa: E402

KERNELS_FILE = str(HERE / "cast_transpose_kernels.py")


def _lowered_with_smalto(name: str) -> list[smalto.SlowLayoutsWarning]:
    fn, args, arch = kernels.KERNELS[name]
    with forced_arch(arch), warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        jax.clear_caches()
        with smalto.jax.enabled():
            lower_for_cuda(fn, args)
    return [w.message for w in caught if isinstance(w.message, smalto.SlowLayoutsWarning)]


def _line_of(text: str) -> int:
    """The line of the kernels' file that holds ``text``."""
    lines = Path(KERNELS_FILE).read_text().splitlines()
    return next(i for i, line in enumerate(lines, 1) if text in line)


def test_the_gmem_cast_transpose_says_its_vectors_are_narrow_and_why() -> None:
    # JAX's own route: its pass answers, its lowering rejects the answer.
    fn, args, arch = kernels.KERNELS["through_gmem"]
    with forced_arch(arch), pytest.raises(Exception, match="unit stride"):
        jax.clear_caches()
        lower_for_cuda(fn, args)
    (said,) = _lowered_with_smalto("through_gmem")
    text = str(said)
    cast_line = _line_of("y = x_gmem[...]")
    store_line = _line_of("out_t_gmem.T[...] = y")
    # Every value of the tile, at the line that computes it, with the vectors that fit.
    truncf = next(c for c in said.report.costs if c.op == "arith.truncf")
    assert truncf.position is not None and truncf.position.line == cast_line
    assert f"`arith.truncf` at {truncf.position}" in text
    assert "128x128xf8E4M3FN result is strided with vectors of 1, where vectors of 8 fit" in text
    assert "128x128xbf16 result is strided with vectors of 1, where vectors of 4 fit" in text
    # The cause: the transposed store, at its own line.
    cause = said.report.cause
    assert cause is not None and cause.position is not None
    assert cause.position.line == store_line
    assert f"The cause: `mosaic_gpu.vector_store` at {cause.position}" in text
    assert "minor dim has stride 128 (a transposed view)" in text
    assert len(said.report.costs) == 3  # the load, the upcast, the cast


def test_the_smem_cast_transpose_names_its_relayouts_and_its_narrow_store() -> None:
    fn, args, arch = kernels.KERNELS["through_smem"]
    with forced_arch(arch), pytest.raises(ValueError, match="Failed to infer"):
        jax.clear_caches()
        lower_for_cuda(fn, args)  # JAX's own pass: no layouts
    (said,) = _lowered_with_smalto("through_smem")
    text = str(said)
    store_line = _line_of("ot_smem.T[...] = y")
    narrow = [c for c in said.report.costs if "bank word" in c.what]
    assert [c.position.line for c in narrow if c.position is not None] == [store_line]
    assert "TMEM_NATIVE(1), vectors of 1 (1 byte each): narrower than a 4-byte bank word" in text
    assert "a relayout of its operand, TMEM_NATIVE -> TMEM_NATIVE(1)" in text
    assert "The cause:" in text


def test_the_costs_are_read_off_the_written_layouts() -> None:
    """The module as smalto wrote it passes the checker, and the report reads its layouts:
    changing them to what JAX's answer would be (vectors of 4) changes what is said."""
    context = make_context()
    module = parse(HERE / "fp8_cast_transpose_through_gmem.mlir", context)
    with context, warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        smalto.infer_layout(module, arch=(9, 0))
        assert check(module, (9, 0)) == []
        report = speed_costs(module)
        wider = parse(
            str(module).replace(
                "WGStridedFragLayout<[128, 128], 1>", "WGStridedFragLayout<[128, 128], 4>"
            ),
            context,
        )
        widened = speed_costs(wider)
    assert [c.op for c in report.costs] == ["mosaic_gpu.vector_load", "arith.extf", "arith.truncf"]
    assert [c.op for c in widened.costs] == ["arith.truncf"]  # 4 where 8 fit the FP8 value
    assert any(isinstance(w.message, smalto.SlowLayoutsWarning) for w in caught)


def test_a_kernel_whose_answer_is_jax_s_says_nothing() -> None:
    def body(x_ref, o_ref):  # type: ignore[no-untyped-def]
        o_ref[...] = (x_ref[...].astype(jnp.float32) * 2).astype(o_ref.dtype)

    def fn(x: jax.Array) -> jax.Array:
        return plgpu.kernel(body, out_type=jax.ShapeDtypeStruct(x.shape, x.dtype))(x)

    args = (jax.ShapeDtypeStruct((128, 128), jnp.bfloat16),)
    with forced_arch((9, 0)), warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        jax.clear_caches()
        with smalto.jax.enabled():
            lower_for_cuda(fn, args)
    assert not [w for w in caught if isinstance(w.message, smalto.SlowLayoutsWarning)]
