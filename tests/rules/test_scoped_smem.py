"""Scoped SMEM (new in jax 0.12.0.1's dialect): ``alloc_smem`` and ``run_scoped``.

JAX 0.12.0.1's pass has no rule for either: it raises NotImplementedError on
an ``alloc_smem`` result and a bare ``KeyError`` on any user of a
``run_scoped`` buffer. Its dialect lowering has no rule for them either, so no
layouts smalto could write would lower: smalto refuses both with a
NotImplementedError that names the op (and leaves the module unchanged).
"""

from __future__ import annotations

import pytest
import reference
from jax._src.lib.mlir import ir
from jax.experimental.mosaic.gpu import dialect_lowering
from jax.experimental.mosaic.gpu import layout_inference as jax_layout_inference

import smalto

REF = "memref<128x128xf16, #gpu.address_space<workgroup>>"
HEADER = "module attributes {mosaic_gpu.arch_major = 9 : i32, mosaic_gpu.arch_minor = 0 : i32}"

RUN_SCOPED = f"""{HEADER} {{
  func.func @kernel() {{
    "mosaic_gpu.run_scoped"() <{{buffer_attrs = [#mosaic_gpu.smem_alloc]}}> ({{
    ^bb0(%buf: {REF}):
      %v = "mosaic_gpu.vector_load"(%buf) : ({REF}) -> vector<128x128xf16>
      %w = arith.addf %v, %v : vector<128x128xf16>
      "mosaic_gpu.vector_store"(%w, %buf) : (vector<128x128xf16>, {REF}) -> ()
      "mosaic_gpu.return"() : () -> ()
    }}) : () -> ()
    return
  }}
}}
"""

ALLOC_SMEM = f"""{HEADER} {{
  func.func @kernel() {{
    "mosaic_gpu.alloca_scope"() ({{
      %buf = "mosaic_gpu.alloc_smem"() : () -> {REF}
      %v = "mosaic_gpu.vector_load"(%buf) : ({REF}) -> vector<128x128xf16>
      "mosaic_gpu.alloca_scope.return"() : () -> ()
    }}) : () -> ()
    return
  }}
}}
"""

# A run_scoped whose buffer no layout op uses: nothing to infer, both passes succeed.
UNUSED_BUFFER = f"""{HEADER} {{
  func.func @kernel() {{
    "mosaic_gpu.run_scoped"() <{{buffer_attrs = [#mosaic_gpu.smem_alloc]}}> ({{
    ^bb0(%buf: {REF}):
      "mosaic_gpu.return"() : () -> ()
    }}) : () -> ()
    %c = arith.constant dense<1.0> : vector<128xf32>
    %d = arith.addf %c, %c : vector<128xf32>
    return
  }}
}}
"""


def _jax_error(text: str) -> BaseException:
    module = reference.parse(text, reference.shared_context())
    with module.context, ir.Location.unknown():
        with pytest.raises(Exception) as failure:
            jax_layout_inference.infer_layout(module)
    return failure.value


@pytest.mark.parametrize(
    ("text", "op_name", "jax_error"),
    [
        (RUN_SCOPED, "mosaic_gpu.run_scoped", KeyError),
        (ALLOC_SMEM, "mosaic_gpu.alloc_smem", NotImplementedError),
    ],
    ids=["run_scoped", "alloc_smem"],
)
def test_refused_naming_the_op(text: str, op_name: str, jax_error: type) -> None:
    assert isinstance(_jax_error(text), jax_error)
    module = reference.parse(text, reference.make_context())
    before = str(module)
    with pytest.raises(NotImplementedError, match="No layout inference rule defined for") as e:
        smalto.infer_layout(module)
    assert op_name in str(e.value)
    assert str(module) == before


@pytest.mark.parametrize("op_name", ["mosaic_gpu.run_scoped", "mosaic_gpu.alloc_smem"])
def test_jax_lowering_has_no_rule_for_the_op(op_name: str) -> None:
    """Why smalto does not infer them: no layouts would lower (the lowering raises
    "Missing lowering rule" for every mosaic_gpu op it has no rule for)."""
    assert op_name not in dialect_lowering._lowerings


def test_an_unused_scoped_buffer_is_no_obstacle() -> None:
    module = reference.parse(UNUSED_BUFFER, reference.make_context())
    smalto.infer_layout(module)
    jax_module = reference.parse(UNUSED_BUFFER, reference.make_context())
    with jax_module.context, ir.Location.unknown():
        jax_layout_inference.infer_layout(jax_module)
    assert reference.layout_attributes(module) == reference.layout_attributes(jax_module)
