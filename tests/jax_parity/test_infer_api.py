"""``smalto.infer_layout`` as an API: errors, fuel, determinism, contexts, in-memory modules.

- An op smalto has no rule for raises ``NotImplementedError`` naming the op.
- A kernel no assignment satisfies raises ``InferenceError`` (a ``ValueError``)
  whose message starts with "Failed to infer a possible set of layouts".
- Running out of fuel raises ``InferenceError`` saying so.
- On any error the module is left exactly as it came in.
- The same module gives the same attributes every run.
- The module's own context is used, whatever context the caller is in.
- Modules built in memory with the jaxlib builders, which need not verify
  (``llvm.mlir.undef`` producing a vector), are annotated as they are.
"""

from __future__ import annotations

from pathlib import Path

import pytest
import reference
from jax._src.lib import mosaic_gpu_dialect as mgpu
from jax._src.lib.mlir import ir
from jax._src.lib.mlir.dialects import arith, func, llvm
from jax.experimental.mosaic.gpu import fragmented_array as fa
from jax.experimental.mosaic.gpu import layouts as layouts_lib
from rule_kit import (
    WGMMA,
    WGMMA_TRANSPOSED,
    gmem,
    in_layouts,
    kernel,
    layout_cast,
    op,
    out_layouts,
    parse,
    run_smalto,
    slice_smem,
    smem,
    strided,
    vec,
    vector_load,
    vector_store,
)

import smalto

F32 = "f32"
SHAPE = (64, 128)
V = vec(SHAPE, F32)
G = gmem(SHAPE, F32)

# A kernel with a real choice to make: the reduced input must be tiled, and
# nothing says which tiled layout.
NEEDS_SEARCH = kernel(
    [
        vector_load("x", "arg0", G, V),
        f"%acc = arith.constant dense<0.0> : {vec((64,), F32)}",
        f"%r = vector.multi_reduction <add>, %x, %acc [1] : {V} to {vec((64,), F32)}",
        f"%e = math.exp %x : {V}",
        vector_store("e", V, "arg0", G),
    ],
    [G],
)

UNSATISFIABLE = {
    # One loaded value cast both to WGMMA and to a strided layout: no relayout
    # from strided to WGMMA or back exists.
    "two-casts": kernel(
        [
            vector_load("x", "arg0", G, V),
            layout_cast("a", "x", V, WGMMA),
            layout_cast("b", "x", V, strided(SHAPE, 2)),
        ],
        [G],
    ),
    # A wgmma accumulator (WGMMA) read as a scalar (which needs a splat).
    "wgmma-extract": kernel(
        [
            f"%acc = arith.constant dense<0.0> : {V}",
            slice_smem("a", smem((64, 64), "bf16")),
            slice_smem("b", smem((64, 128), "bf16"), offset=16384),
            f'%r = "mosaic_gpu.wgmma"(%acc, %a, %b) : ({V}, {smem((64, 64), "bf16")}, '
            f"{smem((64, 128), 'bf16')}) -> {V}",
            f"%e = vector.extract %r[0, 0] : f32 from {V}",
        ]
    ),
    # Two values of different layouts added together (8-bit: no relayout
    # between them, not even where the lowering converts operands).
    "strict-use": kernel(
        [
            vector_load("x", "arg0", gmem(SHAPE, "i8"), vec(SHAPE, "i8")),
            layout_cast("w", "x", vec(SHAPE, "i8"), WGMMA),
            layout_cast("t", "x", vec(SHAPE, "i8"), WGMMA_TRANSPOSED),
            f"%r = arith.addi %w, %t : {vec(SHAPE, 'i8')}",
        ],
        [gmem(SHAPE, "i8")],
    ),
}

NO_RULE = {
    "vector.fma": kernel(
        [vector_load("x", "arg0", G, V), f"%f = vector.fma %x, %x, %x : {V}"], [G]
    ),
    "vector.transpose": kernel(
        [
            vector_load("x", "arg0", G, V),
            f"%t = vector.transpose %x, [1, 0] : {V} to {vec((128, 64), F32)}",
        ],
        [G],
    ),
    "scf.if": kernel(
        [
            vector_load("x", "arg0", G, V),
            f"%r = scf.if %arg1 -> ({V}) {{",
            f"  scf.yield %x : {V}",
            "} else {",
            f"  scf.yield %x : {V}",
            "}",
        ],
        [G, "i1"],
    ),
}


def _texts(module: ir.Module) -> tuple[str, str]:
    """Pretty and generic text, with locations: every byte of the module."""
    return (
        module.operation.get_asm(enable_debug_info=True),
        module.operation.get_asm(print_generic_op_form=True, enable_debug_info=True),
    )


# --- errors ------------------------------------------------------------------------------------


@pytest.mark.parametrize("name", list(NO_RULE))
def test_an_op_without_a_rule_raises_not_implemented_naming_it(name: str):
    module = parse(NO_RULE[name])
    before = _texts(module)
    with pytest.raises(NotImplementedError, match=f"`?{name}`?"):
        smalto.infer_layout(module)
    assert _texts(module) == before


@pytest.mark.parametrize("name", list(UNSATISFIABLE))
def test_an_unsatisfiable_kernel_raises_inference_error_and_leaves_the_module(name: str):
    module = parse(UNSATISFIABLE[name])
    before = _texts(module)
    with pytest.raises(smalto.InferenceError) as error:
        smalto.infer_layout(module)
    message = str(error.value)
    assert message.startswith("Failed to infer a possible set of layouts")
    assert message.startswith(smalto.FAILURE_PREFIX)
    # The one change a failed search leaves, as JAX's pass does: the module's dump name.
    assert reference.pop_dump_name(module) is not None
    assert _texts(module) == before
    assert not reference.layout_attributes(module)


@pytest.mark.parametrize("name", list(UNSATISFIABLE))
def test_jax_rejects_the_unsatisfiable_kernels_too(name: str):
    from rule_kit import run_jax

    with pytest.raises(ValueError, match="^Failed to infer a possible set of layouts"):
        run_jax(UNSATISFIABLE[name])


def test_inference_error_is_a_value_error():
    assert issubclass(smalto.InferenceError, ValueError)
    with pytest.raises(ValueError):
        smalto.infer_layout(parse(UNSATISFIABLE["two-casts"]))


def test_a_failure_does_not_touch_another_module_of_the_same_context():
    module = parse(UNSATISFIABLE["two-casts"])
    good = parse(kernel([vector_load("x", "arg0", G, V), layout_cast("a", "x", V, WGMMA)], [G]))
    smalto.infer_layout(good)
    annotated = _texts(good)
    with pytest.raises(smalto.InferenceError):
        smalto.infer_layout(module)
    assert _texts(good) == annotated


def test_bad_arguments_are_value_errors():
    module = parse(NEEDS_SEARCH)
    before = _texts(module)
    with pytest.raises(ValueError):
        smalto.infer_layout(module, fuel=0)
    with pytest.raises(ValueError):
        smalto.infer_layout(module, arch=(8, 0))
    assert _texts(module) == before


# --- fuel ----------------------------------------------------------------------------------------


@pytest.mark.parametrize("fuel", [1, 2])
def test_little_fuel_succeeds_or_says_it_ran_out(fuel: int):
    module = parse(NEEDS_SEARCH)
    before = _texts(module)
    try:
        smalto.infer_layout(module, fuel=fuel)
    except smalto.InferenceError as error:
        message = str(error)
        assert message.startswith(smalto.FAILURE_PREFIX)
        assert "fuel" in message
        assert reference.pop_dump_name(module) is not None
        assert _texts(module) == before
    else:
        assert reference.layout_attributes(module)


def test_enough_fuel_solves_the_kernel_that_needs_search():
    module = run_smalto(NEEDS_SEARCH, fuel=1000)
    (source, _) = in_layouts(op(module, "vector.multi_reduction"))
    assert out_layouts(op(module, "mosaic_gpu.vector_load")) == [source]
    assert in_layouts(op(module, "math.exp")) == [source]


def test_little_fuel_on_a_real_kernel():
    path = _corpus_kernel("kernels/flash_attn_fwd_wg_hd128_b64x128")
    module = reference.parse(path, reference.shared_context())
    before = _texts(module)
    try:
        smalto.infer_layout(module, fuel=1)
    except smalto.InferenceError as error:
        assert "fuel" in str(error)
        # The corpus kernel has its dump name already: the pass keeps it.
        assert _texts(module) == before


# --- determinism ---------------------------------------------------------------------------------


def test_two_runs_give_identical_text():
    first, second = run_smalto(NEEDS_SEARCH), run_smalto(NEEDS_SEARCH)
    # Each run names its module with the next number of a process-wide count, as JAX's does.
    assert reference.pop_dump_name(first) != reference.pop_dump_name(second)
    assert _texts(first) == _texts(second)


def test_two_runs_in_two_contexts_give_identical_text_on_a_real_kernel():
    path = _corpus_kernel("kernels/hopper_matmul_t128x128x64_s2_wgM_cf32")
    texts = []
    for _ in range(2):
        module = reference.parse(path, reference.make_context())
        smalto.infer_layout(module)
        texts.append(_texts(module))
    assert texts[0] == texts[1]


# --- contexts ------------------------------------------------------------------------------------

SIMPLE = kernel([vector_load("x", "arg0", G, V), layout_cast("a", "x", V, WGMMA)], [G])


def _expected_attributes():
    return reference.layout_attributes(run_smalto(SIMPLE))


def test_works_outside_any_context():
    module = parse(SIMPLE)
    smalto.infer_layout(module)
    assert reference.layout_attributes(module) == _expected_attributes()


def test_works_inside_the_modules_context_and_location():
    module = parse(SIMPLE)
    with module.context, ir.Location.unknown(module.context):
        smalto.infer_layout(module)
    assert reference.layout_attributes(module) == _expected_attributes()


def test_works_inside_another_context():
    module = parse(SIMPLE)
    other = reference.make_context()
    with other, ir.Location.unknown(other):
        smalto.infer_layout(module)
        # The attributes belong to the module's context, not the caller's.
        attr = op(module, "mosaic_gpu.layout_cast").attributes["out_layouts"]
        assert attr.context == module.context
    assert reference.layout_attributes(module) == _expected_attributes()


def test_returns_none():
    assert smalto.infer_layout(parse(SIMPLE)) is None


# --- modules built in memory, which need not verify -----------------------------------------------


def _undef_module(ctx: ir.Context) -> ir.Module:
    """``llvm.mlir.undef`` of a 2D vector (not an LLVM type: the module does not
    verify) added to a WGMMA value and stored, built with the jaxlib builders."""
    with ctx, ir.Location.unknown():
        module = ir.Module.create()
        f32 = ir.F32Type.get()
        vector_type = ir.VectorType.get(list(SHAPE), f32)
        ref_type = ir.MemRefType.get(list(SHAPE), f32)
        with ir.InsertionPoint(module.body):
            function = func.FuncOp("kernel", ir.FunctionType.get([ref_type], []))
            block = function.add_entry_block()
            with ir.InsertionPoint(block):
                undef = llvm.UndefOp(vector_type)
                loaded = mgpu.VectorLoadOp(block.arguments[0], results=[vector_type])
                cast = mgpu.LayoutCastOp(loaded.result, layouts_lib.to_layout_attr(WGMMA))
                total = arith.AddFOp(undef.result, cast.result)
                mgpu.VectorStoreOp(total.result, block.arguments[0])
                func.ReturnOp([])
    return module


def test_undef_vector_in_a_module_that_does_not_verify(monkeypatch: pytest.MonkeyPatch):
    ctx = reference.make_context()
    module = _undef_module(ctx)
    with ctx, pytest.raises(ir.MLIRError):
        module.operation.verify()

    def refuse(self: object) -> None:
        raise AssertionError("smalto must not verify the module")

    monkeypatch.setattr(ir.Operation, "verify", refuse)
    smalto.infer_layout(module)
    monkeypatch.undo()

    undef = op(module, "llvm.mlir.undef")
    # A free value: it takes the layout its user needs.
    assert out_layouts(undef) == [WGMMA]
    assert in_layouts(op(module, "arith.addf")) == [WGMMA, WGMMA]
    assert in_layouts(op(module, "mosaic_gpu.vector_store")) == [WGMMA]


def test_undef_vector_alone_gets_a_layout():
    ctx = reference.make_context()
    with ctx, ir.Location.unknown():
        module = ir.Module.create()
        vector_type = ir.VectorType.get(list(SHAPE), ir.F32Type.get())
        with ir.InsertionPoint(module.body):
            function = func.FuncOp("kernel", ir.FunctionType.get([], []))
            with ir.InsertionPoint(function.add_entry_block()):
                llvm.UndefOp(vector_type)
                func.ReturnOp([])
    smalto.infer_layout(module)
    (layout,) = out_layouts(op(module, "llvm.mlir.undef"))
    # Nothing constrains it: it gets a default, a strided layout of its shape.
    assert isinstance(layout, type(strided(SHAPE, 1))) and layout.shape == SHAPE


def test_failed_inference_on_an_in_memory_module_leaves_it_unchanged():
    ctx = reference.make_context()
    module = _undef_module(ctx)
    # Make it unsatisfiable: cast the (tiled) sum strictly to a strided layout.
    with ctx, ir.Location.unknown():
        block = op(module, "func.func").regions[0].blocks[0]
        total = op(module, "arith.addf").result
        with ir.InsertionPoint.at_block_terminator(block):
            strided = layouts_lib.to_layout_attr(fa.WGStridedFragLayout(SHAPE, 2))
            other = mgpu.LayoutCastOp(total, strided, strict=True)
            arith.AddFOp(total, other.result)
    before = _texts(module)
    with pytest.raises(smalto.InferenceError):
        smalto.infer_layout(module)
    assert reference.pop_dump_name(module) is not None  # the search ran, as in JAX's pass
    assert _texts(module) == before


# --- helpers -------------------------------------------------------------------------------------


def _corpus_kernel(key: str) -> Path:
    root = reference.corpus_root()
    entries = {
        e.key: e for e in (reference.load_entries(root) if root else reference.bundled_entries())
    }
    if key not in entries:
        pytest.skip(f"{key} is not in the available corpus")
    return entries[key].path
