# ruff: noqa: E501  (MLIR fixtures read best one op per line)
"""Tests of the independent checker (``smalto.check``).

JAX's own annotations of the corpus and smalto's must pass it; and for each
kind of requirement, an annotation broken by hand must be caught, on the op
that breaks it.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
import reference
from check_kit import (
    BLACKWELL,
    HOPPER,
    POINTWISE,
    SMEM,
    TMEM,
    WGMMA,
    WGMMA_COL,
    WGMMA_ROW,
    WGMMA_TRANSPOSED,
    REF_128x64,
    annotated,
    caught,
    kernel,
    ops_named,
    set_attr,
    set_entry,
    smem,
    splat,
    strided,
    tiled,
)
from corpus_lowering import jax_annotated, lower_with_jax
from jax._src.lib.mlir import ir
from jax.experimental.mosaic.gpu import tcgen05
from rule_kit import lower_in_launch

import smalto
from smalto.check import Violation, check
from smalto.cli.check import check_main
from smalto.diagnose.jax_lowering import jax_lowering_accepts
from smalto.hw import layouts as hl
from smalto.hw.encode import AttributeCache
from smalto.hw.values import Tmem

TCGEN05 = "#mosaic_gpu.TiledLayout<[[128, 8], [32, 8], [8, 8], [2]], warp_dims = [-7], lane_dims = [-3, -2], vector_dim = -1>"


# --- helpers --------------------------------------------------------------------------


# --- corpus: JAX's and smalto's annotations pass -----------------------------------------


def _sample() -> list[reference.CorpusEntry]:
    entries = [e for e in reference.bundled_entries() if e.jax_ok]
    # Every kernel, and a third of the test modules of each arch.
    kernels = [e for e in entries if e.folder == "kernels"]
    tests = [e for e in entries if e.folder != "kernels"]
    return kernels + tests[::3]


def _kernels() -> list[reference.CorpusEntry]:
    root = reference.corpus_root()
    entries = reference.load_entries(root) if root else reference.bundled_entries()
    return [e for e in entries if e.folder == "kernels"]


def _gmem_rejects_only(violations: list[Violation], entry: reference.CorpusEntry) -> None:
    """No violations, but uncoalesced GMEM transfers in JAX's own answer, which
    JAX's lowering rejects as the checker says (Pallas tests of kernels that do
    not lower: e.g. a 16-bit row stored 2 bytes a thread)."""
    gmem = [v for v in violations if "GMEM ref" in v.message]
    assert [v for v in violations if v not in gmem] == [], "\n".join(map(str, violations))
    if gmem:
        with pytest.raises(Exception, match="GMEM transfer") as rejected:
            lower_with_jax(jax_annotated(entry))
        assert type(rejected.value).__name__ == "TransferPlanDerivationError"
        assert any(str(rejected.value) in v.message for v in gmem), rejected.value
        # The diagnosis's lowering probe calls that a rejection too, not a launch it
        # could not rebuild.
        accepted, why = jax_lowering_accepts(jax_annotated(entry).operation)
        assert accepted is False and why == str(rejected.value)


@pytest.mark.parametrize("entry", _sample(), ids=lambda e: e.key)
def test_jax_annotations_pass(entry: reference.CorpusEntry) -> None:
    _gmem_rejects_only(check(jax_annotated(entry), entry.arch), entry)


def _inferred_or_rejected_with_jax(entry: reference.CorpusEntry) -> ir.Module | None:
    """smalto's answer; None where smalto finds none, which is right only where JAX's
    own answer breaks a lowering requirement (then JAX's lowering rejects it)."""
    module = reference.parse(entry.path, reference.make_context())
    try:
        smalto.infer_layout(module, arch=entry.arch)
    except smalto.InferenceError as error:
        jax_violations = check(jax_annotated(entry), entry.arch)
        assert [v for v in jax_violations if "GMEM ref" in v.message], error
        _gmem_rejects_only(jax_violations, entry)
        assert "GMEM" in str(error)
        return None
    return module


@pytest.mark.parametrize("entry", _sample(), ids=lambda e: e.key)
def test_smalto_annotations_pass(entry: reference.CorpusEntry) -> None:
    """Every answer smalto gives passes the checker; where it gives none, JAX's breaks
    a lowering requirement (smalto never keeps an answer the lowering rejects)."""
    module = _inferred_or_rejected_with_jax(entry)
    if module is not None:
        assert check(module, entry.arch) == []


def test_all_corpus_kernels_pass_both_ways() -> None:
    """Every ``kernels/`` module (the shared corpus where present), JAX's and smalto's."""
    entries = _kernels()
    assert entries
    for entry in entries:
        module = jax_annotated(entry)
        assert check(module, entry.arch) == [], entry.key
        module = reference.parse(entry.path, reference.shared_context())
        smalto.infer_layout(module, arch=entry.arch)
        assert check(module, entry.arch) == [], entry.key


# --- a second, external check: JAX's own dialect lowering ----------------------------------


@pytest.mark.parametrize("entry", _sample(), ids=lambda e: e.key)
def test_jax_lowering_accepts_smalto_annotations(entry: reference.CorpusEntry) -> None:
    """JAX's lowering takes smalto's layouts, except where it rejects JAX's own as well
    for a reason that has nothing to do with layouts (a cluster the launch lacks).

    (Some corpus modules come from Pallas tests of kernels whose JAX answer
    does not lower, e.g. an i4 GMEM load in WGMMA layout: 2 bytes a thread,
    where a GMEM transfer needs 4. There smalto answers differently, with a
    layout that lowers, or reports that none does.)
    """
    module = _inferred_or_rejected_with_jax(entry)
    if module is None:
        return
    inferred = reference.layout_attributes(module)
    try:
        lower_with_jax(module)
    except Exception as smalto_failure:  # noqa: BLE001 - compared with JAX's below
        jax_module = jax_annotated(entry)
        assert reference.diff_attributes(reference.layout_attributes(jax_module), inferred) == []
        with pytest.raises(type(smalto_failure), match=re.escape(str(smalto_failure))):
            lower_with_jax(jax_module)


def test_jax_lowering_rejects_what_the_checker_rejects() -> None:
    entry = next(e for e in _kernels() if e.key.startswith("kernels/hopper_matmul"))
    module = reference.parse(entry.path, reference.make_context())
    smalto.infer_layout(module, arch=entry.arch)
    # The accumulator of every wgmma, in a layout no wgmma produces.
    for op in ops_named(module, "mosaic_gpu.wgmma"):
        with module.context:
            shape = ir.VectorType(op.results[0].type).shape
            op.attributes["out_layouts"] = ir.Attribute.parse(f"[{strided(tuple(shape), 2)}]")
    assert any("the accumulator must be WGMMA" in v.message for v in check(module, entry.arch))
    with pytest.raises(AssertionError):  # the wgmma lowering asserts its accumulator layout
        lower_with_jax(module)


def test_check_leaves_the_module_unchanged() -> None:
    entry = _kernels()[0]
    module = jax_annotated(entry)
    before = str(module)
    check(module, entry.arch)
    assert str(module) == before


def test_an_unannotated_module_is_one_violation() -> None:
    """A module not inferred yet: one violation says so (not one per op), with how many
    ops need layouts."""
    module = reference.parse(POINTWISE, reference.shared_context())
    (violation,) = check(module, source_name="k.mlir")
    assert violation.not_annotated and violation.location == "k.mlir"
    assert violation.message.startswith(
        "the module has no layout attributes (5 ops need them): run `smalto infer` first"
    )


def test_a_partly_annotated_module_misses_each_attribute() -> None:
    module = annotated(POINTWISE)
    (addf,) = ops_named(module, "arith.addf")
    for name in ("in_layouts", "out_layouts"):
        del addf.attributes[name]
    violations = check(module)
    assert {v.op for v in violations} == {"arith.addf"}
    assert all("has no" in v.message for v in violations) and len(violations) == 2


def test_layouts_are_named_as_infer_names_them() -> None:
    """The checker's words are infer's: `strided ×4`, `splat`, `tiled 8×64 + swizzle 128`;
    a layout's own shape only where the names alone would read the same."""
    module = annotated(POINTWISE)
    set_entry(module, "arith.addf", "in_layouts", 0, splat((64, 64)))
    set_entry(module, "arith.addf", "in_layouts", 1, splat((64, 64)))
    set_entry(module, "arith.addf", "out_layouts", 0, splat((64, 64)))
    violations = check(module)
    text = "\n".join(v.message for v in violations)
    assert "splat of 64x64" in text, text
    assert not any(
        marker in text for marker in ("WGSplatFragLayout", "/vec", "splat(", "strided(")
    ), text


# --- hand-broken annotations -----------------------------------------------------------------


def test_wrong_count_of_layouts() -> None:
    module = annotated(POINTWISE)
    set_attr(module, "arith.addf", "in_layouts", f"[{WGMMA}]")
    caught(module, "arith.addf", "in_layouts has 1 entries for 2 vector(s)")


def test_missing_attribute() -> None:
    module = annotated(POINTWISE)
    del ops_named(module, "arith.addf")[0].attributes["out_layouts"]
    caught(module, "arith.addf", "has no out_layouts")


def test_layouts_on_an_op_without_vectors() -> None:
    module = annotated(POINTWISE)
    set_attr(module, "mosaic_gpu.slice_smem", "out_layouts", f"[{WGMMA}]")
    caught(module, "mosaic_gpu.slice_smem", "out_layouts has 1 entries for 0 vector(s)")


def test_layouts_on_an_op_no_value_of_which_needs_one() -> None:
    """An op the program view lists among none that carry layouts (the function's return)
    stating some anyway: the checker reads it as it reads the others."""
    module = annotated(POINTWISE)
    set_attr(module, "func.return", "in_layouts", f"[{WGMMA}]")
    caught(module, "func.return", "in_layouts has 1 entries for 0 vector(s)")
    # (An empty list states nothing wrong.)
    module = annotated(POINTWISE)
    set_attr(module, "func.return", "out_transforms", "[]")
    assert check(module, HOPPER) == []


def test_layout_that_does_not_fit_the_shape() -> None:
    module = annotated(POINTWISE)
    set_entry(module, "arith.addf", "in_layouts", 0, strided((64, 64), 1))
    caught(module, "arith.addf", "cannot be laid out as strided ×1 of 64x64")


def test_undecodable_entry() -> None:
    module = annotated(POINTWISE)
    set_entry(module, "arith.addf", "in_layouts", 0, "42 : i32")
    caught(module, "arith.addf", "cannot read the layouts entry")


def test_elementwise_layouts_differ() -> None:
    module = annotated(POINTWISE)
    set_entry(module, "arith.addf", "in_layouts", 1, WGMMA_TRANSPOSED)
    caught(module, "arith.addf", "an elementwise op keeps one layout")


def test_relayout_between_producer_and_consumer() -> None:
    module = annotated(POINTWISE)
    # Consistently change the add (all its layouts) but not the load feeding it.
    for attr in ("in_layouts", "out_layouts"):
        layouts = ", ".join([WGMMA_TRANSPOSED] * (2 if attr == "in_layouts" else 1))
        set_attr(module, "arith.addf", attr, f"[{layouts}]")
    violation = caught(module, "arith.addf", "the lowering cannot convert between them")
    assert "operand #0" in violation.message


def test_a_splat_may_change_layout() -> None:
    module = annotated(POINTWISE)
    # The constant is a splat: its consumer may take it in any layout.
    assert "WGSplat" in str(ops_named(module, "arith.constant")[0].attributes["out_layouts"])
    assert check(module) == []


def test_splat_constant_must_be_splat() -> None:
    module = annotated(POINTWISE)
    set_attr(module, "arith.constant", "out_layouts", f"[{strided((128, 64), 8)}]")
    caught(module, "arith.constant", "result #0 is strided ×8 but a splat constant must be splat")


def test_vector_load_cannot_be_splat() -> None:
    module = annotated(POINTWISE)
    set_attr(module, "mosaic_gpu.vector_load", "out_layouts", f"[{splat((128, 64))}]")
    caught(module, "mosaic_gpu.vector_load", "cannot be a splat")


def test_no_transfer_plan_for_a_load() -> None:
    module = annotated(POINTWISE)
    # Strided registers only move to and from untiled SMEM.
    set_attr(module, "mosaic_gpu.vector_load", "out_layouts", f"[{strided((128, 64), 8)}]")
    set_attr(module, "mosaic_gpu.vector_load", "in_transforms", f"[{tiled(8, 64)}]")
    caught(module, "mosaic_gpu.vector_load", "no optimized transfer")


def test_no_transfer_plan_for_a_store() -> None:
    module = annotated(POINTWISE)
    set_attr(module, "mosaic_gpu.vector_store", "in_layouts", f"[{strided((128, 64), 8)}]")
    set_attr(module, "mosaic_gpu.vector_store", "in_transforms", f"[{tiled(8, 64)}]")
    caught(module, "mosaic_gpu.vector_store", "transfer between registers")


def test_ref_used_with_other_transforms_than_defined() -> None:
    module = annotated(POINTWISE)
    set_attr(module, "mosaic_gpu.vector_store", "in_transforms", f"[{tiled(8, 64)}]")
    caught(module, "mosaic_gpu.vector_store", "but the ref was defined with")


def test_swizzle_wider_than_the_minor_tile() -> None:
    module = annotated(POINTWISE)
    # A 32-element (64-byte) minor tile of f16 cannot hold a 128-byte swizzle.
    bad = tiled(8, 32, swizzle=128)
    for op, attr in (
        ("mosaic_gpu.slice_smem", "out_transforms"),
        ("mosaic_gpu.vector_load", "in_transforms"),
        ("mosaic_gpu.vector_store", "in_transforms"),
    ):
        set_attr(module, op, attr, f"[{bad}]")
    caught(module, "mosaic_gpu.slice_smem", "do not divide the minor tile dim (32)")


def test_async_store_smem_needs_a_tiled_layout() -> None:
    barrier = smem("!mosaic_gpu.barrier")
    module = annotated(
        kernel(
            f"""
  %r = "mosaic_gpu.slice_smem"() <{{offset = 0 : i32}}> : () -> {REF_128x64}
  %b = "mosaic_gpu.slice_smem"() <{{offset = 65536 : i32}}> : () -> {barrier}
  %x = "mosaic_gpu.vector_load"(%r) : ({REF_128x64}) -> vector<128x64xf16>
  %s = "arith.constant"() <{{value = 0 : i32}}> : () -> i32
  "mosaic_gpu.async_store_smem"(%x, %r, %b, %s) <{{cluster_dim = 0 : i32, optimized = true}}> : (vector<128x64xf16>, {REF_128x64}, {barrier}, i32) -> ()
"""
        )
    )
    set_attr(module, "mosaic_gpu.async_store_smem", "in_layouts", f"[{strided((128, 64), 8)}]")
    caught(module, "mosaic_gpu.async_store_smem", "cannot be strided")


def test_async_store_smem_cannot_store_replicated_registers() -> None:
    barrier = smem("!mosaic_gpu.barrier")
    module = annotated(
        kernel(
            f"""
  %r = "mosaic_gpu.slice_smem"() <{{offset = 0 : i32}}> : () -> {REF_128x64}
  %b = "mosaic_gpu.slice_smem"() <{{offset = 65536 : i32}}> : () -> {barrier}
  %x = "mosaic_gpu.vector_load"(%r) : ({REF_128x64}) -> vector<128x64xf16>
  %s = "arith.constant"() <{{value = 0 : i32}}> : () -> i32
  "mosaic_gpu.async_store_smem"(%x, %r, %b, %s) <{{cluster_dim = 0 : i32, optimized = true}}> : (vector<128x64xf16>, {REF_128x64}, {barrier}, i32) -> ()
"""
        )
    )
    set_attr(module, "mosaic_gpu.async_store_smem", "in_layouts", f"[{WGMMA_ROW}]")
    caught(module, "mosaic_gpu.async_store_smem", "it replicates elements")
    caught(module, "mosaic_gpu.async_store_smem", "has 16-bit ones")


# wgmma: accumulator, register A, MMA tilings of B and A.

A_REF, B_REF = smem("64x64xf16"), smem("64x128xf16")


def wgmma_kernel(a_in_registers: bool) -> str:
    a_def = (
        '%a = "arith.constant"() <{value = dense<1.0> : vector<64x64xf16>}> : () -> vector<64x64xf16>'
        if a_in_registers
        else f'%a = "mosaic_gpu.slice_smem"() <{{offset = 0 : i32}}> : () -> {A_REF}'
    )
    a_type = "vector<64x64xf16>" if a_in_registers else A_REF
    return kernel(
        f"""
  {a_def}
  %b = "mosaic_gpu.slice_smem"() <{{offset = 65536 : i32}}> : () -> {B_REF}
  %acc = "arith.constant"() <{{value = dense<0.0> : vector<64x128xf32>}}> : () -> vector<64x128xf32>
  %d = "mosaic_gpu.wgmma"(%acc, %a, %b) : (vector<64x128xf32>, {a_type}, {B_REF}) -> vector<64x128xf32>
  %e = "arith.addf"(%d, %d) : (vector<64x128xf32>, vector<64x128xf32>) -> vector<64x128xf32>
"""
    )


def test_wgmma_accumulator_must_be_wgmma() -> None:
    module = annotated(wgmma_kernel(False))
    set_attr(module, "mosaic_gpu.wgmma", "out_layouts", f"[{strided((64, 128), 4)}]")
    caught(module, "mosaic_gpu.wgmma", "the accumulator must be WGMMA")


def test_wgmma_register_a_must_be_wgmma() -> None:
    module = annotated(wgmma_kernel(True))
    set_entry(module, "mosaic_gpu.wgmma", "in_layouts", 1, WGMMA_TRANSPOSED)
    caught(module, "mosaic_gpu.wgmma", "a register A operand must be WGMMA")


def test_wgmma_b_needs_an_mma_tiling() -> None:
    module = annotated(wgmma_kernel(True))
    set_attr(module, "mosaic_gpu.wgmma", "in_transforms", f"[{tiled(64, 8)}]")
    caught(
        module,
        "mosaic_gpu.wgmma",
        "an MMA reads a 16-bit operand of shape (64, 128) only as one of: "
        "tiled 8×64 + swizzle 128; tiled 8×32 + swizzle 64; tiled 8×16 + swizzle 32",
    )


def test_wgmma_a_and_b_must_be_tiled_alike() -> None:
    module = annotated(wgmma_kernel(False))
    set_entry(module, "mosaic_gpu.wgmma", "in_transforms", 0, tiled(8, 32))
    caught(module, "mosaic_gpu.wgmma", "A must be tiled 8×64 + swizzle 128 to match B")


# Reductions, broadcasts, reshapes, slices, casts.

LOAD_128x128 = smem("128x128xf32")


def register_kernel(body: str) -> str:
    """``%x``: a 128x128 f32 vector loaded from SMEM, then ``body``."""
    return kernel(
        f"""
  %r = "mosaic_gpu.slice_smem"() <{{offset = 0 : i32}}> : () -> {LOAD_128x128}
  %x0 = "mosaic_gpu.vector_load"(%r) : ({LOAD_128x128}) -> vector<128x128xf32>
  %x = "mosaic_gpu.layout_cast"(%x0) <{{new_layout = {WGMMA}}}> : (vector<128x128xf32>) -> vector<128x128xf32>
{body}"""
    )


REDUCE = register_kernel(
    """
  %z = "arith.constant"() <{value = dense<0.0> : vector<128xf32>}> : () -> vector<128xf32>
  %s = "vector.multi_reduction"(%x, %z) <{kind = #vector.kind<add>, reduction_dims = array<i64: 1>}> : (vector<128x128xf32>, vector<128xf32>) -> vector<128xf32>
  %b = "mosaic_gpu.broadcast_in_dim"(%s) <{broadcast_dimensions = array<i64: 0>}> : (vector<128xf32>) -> vector<128x128xf32>
  %d = "arith.subf"(%x, %b) : (vector<128x128xf32>, vector<128x128xf32>) -> vector<128x128xf32>
  %c = "vector.shape_cast"(%d) : (vector<128x128xf32>) -> vector<2x64x128xf32>
  %e = "vector.extract_strided_slice"(%d) <{offsets = [64, 0], sizes = [64, 128], strides = [1, 1]}> : (vector<128x128xf32>) -> vector<64x128xf32>
"""
)


def test_multi_reduction_result_is_the_reduced_source() -> None:
    module = annotated(REDUCE)
    set_attr(module, "vector.multi_reduction", "out_layouts", f"[{WGMMA_COL}]")
    set_entry(module, "vector.multi_reduction", "in_layouts", 1, WGMMA_COL)
    caught(module, "vector.multi_reduction", "gives WGMMA_ROW, not the result's WGMMA_COL")


def test_multi_reduction_accumulator_is_the_result() -> None:
    module = annotated(REDUCE)
    set_entry(module, "vector.multi_reduction", "in_layouts", 1, WGMMA_COL)
    caught(module, "vector.multi_reduction", "the accumulator and the result are one value")


def test_multi_reduction_of_a_strided_source() -> None:
    module = annotated(REDUCE)
    set_entry(module, "vector.multi_reduction", "in_layouts", 0, strided((128, 128), 4))
    caught(module, "vector.multi_reduction", "cannot be strided")


def test_multi_reduction_of_a_partially_tiled_source() -> None:
    module = annotated(REDUCE)
    set_entry(module, "vector.multi_reduction", "in_layouts", 0, WGMMA_ROW)
    caught(module, "vector.multi_reduction", "only over its untiled dims, not over (1,)")


def test_smalto_answer_for_a_fuel_exhausted_kernel_passes() -> None:
    path = reference.BUNDLED_ROOT / "fuel_exhausted" / "custom_reductions_rowcol_nohint.mlir"
    module = reference.parse(path, reference.make_context())
    smalto.infer_layout(module, arch=HOPPER)
    violations = check(module, HOPPER)
    assert violations == [], "\n".join(map(str, violations))


def test_broadcast_source_is_the_reduced_result() -> None:
    module = annotated(REDUCE)
    set_attr(module, "mosaic_gpu.broadcast_in_dim", "in_layouts", f"[{WGMMA_COL}]")
    caught(module, "mosaic_gpu.broadcast_in_dim", "needs the source in WGMMA_ROW")


def test_broadcast_into_a_partially_tiled_layout() -> None:
    module = annotated(REDUCE)
    set_attr(module, "mosaic_gpu.broadcast_in_dim", "out_layouts", f"[{WGMMA_ROW}]")
    caught(module, "mosaic_gpu.broadcast_in_dim", "broadcasts only into fully tiled layouts")


def test_shape_cast_keeps_a_tiled_layout() -> None:
    module = annotated(REDUCE)
    set_attr(module, "vector.shape_cast", "out_layouts", f"[{strided((2, 64, 128), 4)}]")
    caught(module, "vector.shape_cast", "gives WGMMA, not strided ×4")


def test_shape_cast_that_moves_elements() -> None:
    module = annotated(
        register_kernel(
            '  %c = "vector.shape_cast"(%x) : (vector<128x128xf32>) -> vector<64x256xf32>'
        ).replace(f"new_layout = {WGMMA}", f"new_layout = {strided((128, 128), 4)}")
    )
    set_attr(module, "vector.shape_cast", "in_layouts", f"[{WGMMA}]")
    set_attr(module, "vector.shape_cast", "out_layouts", f"[{WGMMA}]")
    caught(module, "vector.shape_cast", "moves elements")


def test_slice_offsets_must_fall_on_tiles() -> None:
    module = annotated(REDUCE)
    set_attr(module, "vector.extract_strided_slice", "offsets", "[32, 0]")
    caught(module, "vector.extract_strided_slice", "does not divide the slice offsets (32, 0)")


def test_slice_keeps_the_layout() -> None:
    module = annotated(REDUCE)
    set_attr(module, "vector.extract_strided_slice", "out_layouts", f"[{WGMMA_TRANSPOSED}]")
    caught(module, "vector.extract_strided_slice", "a slice keeps the source's layout")


def test_layout_cast_result_is_the_cast_layout() -> None:
    module = annotated(REDUCE)
    set_attr(module, "mosaic_gpu.layout_cast", "out_layouts", f"[{WGMMA_TRANSPOSED}]")
    caught(module, "mosaic_gpu.layout_cast", "the result of the cast must be WGMMA")


def test_layout_cast_relayout_must_exist() -> None:
    module = annotated(REDUCE)
    set_attr(module, "mosaic_gpu.layout_cast", "in_layouts", f"[{TCGEN05}]")
    caught(module, "mosaic_gpu.layout_cast", "cannot relayout TCGEN05 to WGMMA")


def test_vector_broadcast_is_a_splat() -> None:
    module = annotated(
        kernel(
            """
  %s = "arith.constant"() <{value = 2.0 : f32}> : () -> f32
  %v = "vector.broadcast"(%s) : (f32) -> vector<128xf32>
"""
        )
    )
    set_attr(module, "vector.broadcast", "out_layouts", f"[{WGMMA_ROW}]")
    caught(
        module, "vector.broadcast", "result #0 is WGMMA_ROW but a broadcast scalar must be splat"
    )


def test_optimization_barrier_keeps_layouts() -> None:
    module = annotated(
        register_kernel(
            '  %o = "mosaic_gpu.optimization_barrier"(%x) : (vector<128x128xf32>) -> vector<128x128xf32>'
        )
    )
    set_attr(module, "mosaic_gpu.optimization_barrier", "out_layouts", f"[{WGMMA_TRANSPOSED}]")
    caught(module, "mosaic_gpu.optimization_barrier", "unchanged")


# SMEM views: with_transforms, subview divisibility, transpose, aliases.


def test_with_transforms_is_the_refs_tiling() -> None:
    module = annotated(
        kernel(
            f"""
  %r0 = "mosaic_gpu.slice_smem"() <{{offset = 0 : i32}}> : () -> {REF_128x64}
  %r = "mosaic_gpu.with_transforms"(%r0) <{{transforms = {tiled(8, 64)}}}> : ({REF_128x64}) -> {REF_128x64}
  %x = "mosaic_gpu.vector_load"(%r) : ({REF_128x64}) -> vector<128x64xf16>
"""
        )
    )
    set_attr(module, "mosaic_gpu.with_transforms", "out_transforms", f"[{tiled(8, 32)}]")
    caught(
        module,
        "mosaic_gpu.with_transforms",
        "the ref given transforms must be tiled 8×64 + swizzle 128",
    )


SUBVIEW = kernel(
    f"""
  %r = "mosaic_gpu.slice_smem"() <{{offset = 0 : i32}}> : () -> {smem("128x128xf16")}
  %w = "memref.subview"(%r) <{{operandSegmentSizes = array<i32: 1, 0, 0, 0>, static_offsets = array<i64: 32, 0>, static_sizes = array<i64: 64, 128>, static_strides = array<i64: 1, 1>}}> : ({smem("128x128xf16")}) -> {smem("64x128xf16", ", strided<[128, 1], offset: 4096>")}
  %x = "mosaic_gpu.vector_load"(%w) : ({smem("64x128xf16", ", strided<[128, 1], offset: 4096>")}) -> vector<64x128xf16>
"""
)


def test_subview_offsets_must_fall_on_tiles() -> None:
    module = annotated(SUBVIEW)
    for op, attr in (
        ("mosaic_gpu.slice_smem", "out_transforms"),
        ("memref.subview", "in_transforms"),
        ("memref.subview", "out_transforms"),
        ("mosaic_gpu.vector_load", "in_transforms"),
    ):
        set_attr(module, op, attr, f"[{tiled(64, 8)}]")
    caught(module, "memref.subview", "the tile (64, 8) of operand #0 does not divide")


def test_subview_keeps_the_tiling() -> None:
    module = annotated(SUBVIEW)
    set_attr(module, "memref.subview", "out_transforms", f"[{tiled(8, 8)}]")
    caught(module, "memref.subview", "a window keeps the ref's tiling")


def test_async_load_slice_must_be_divisible_by_the_tiling() -> None:
    gmem = "memref<4096x4096xf16>"
    barrier = smem("!mosaic_gpu.barrier")
    module = annotated(
        kernel(
            f"""
  %r = "mosaic_gpu.slice_smem"() <{{offset = 0 : i32}}> : () -> {REF_128x64}
  %b = "mosaic_gpu.slice_smem"() <{{offset = 65536 : i32}}> : () -> {barrier}
  "mosaic_gpu.async_load"(%g, %r, %b, %i, %j) <{{collective = [], oob_fill_mode = 2 : i32, operandSegmentSizes = array<i32: 1, 1, 1, 2, 0, 0>, slice_lengths = array<i64: 128, 64>}}> : ({gmem}, {REF_128x64}, {barrier}, i32, i32) -> ()
""",
            f"%g: {gmem}, %i: i32, %j: i32",
        )
    )
    # Nothing is known of %i and %j: only an untiled ref takes the copy.
    for op, attr in (
        ("mosaic_gpu.slice_smem", "out_transforms"),
        ("mosaic_gpu.async_load", "in_transforms"),
    ):
        set_attr(module, op, attr, f"[{tiled(8, 64)}]")
    caught(module, "mosaic_gpu.async_load", "does not divide the copied slice")


def test_transpose_permutes_the_tiling() -> None:
    transposed = f"memref<64x128xf16, strided<[1, 64]>, {SMEM}>"
    module = annotated(
        kernel(
            f"""
  %r = "mosaic_gpu.slice_smem"() <{{offset = 0 : i32}}> : () -> {REF_128x64}
  %t = "memref.transpose"(%r) <{{permutation = affine_map<(d0, d1) -> (d1, d0)>}}> : ({REF_128x64}) -> {transposed}
  %x = "mosaic_gpu.vector_load"(%t) : ({transposed}) -> vector<64x128xf16>
"""
        )
    )
    # The ref is tiled (8, 64) with a 128-byte swizzle; its transpose must be
    # tiled (64, 8) and keep the swizzle (a physical property of the memory).
    for op, attr in (
        ("mosaic_gpu.slice_smem", "out_transforms"),
        ("memref.transpose", "in_transforms"),
    ):
        set_attr(module, op, attr, f"[{tiled(8, 64)}]")
    for wrong in (tiled(64, 8, swizzle=None), tiled(64, 8, swizzle=64)):
        set_attr(module, "memref.transpose", "out_transforms", f"[{wrong}]")
        caught(module, "memref.transpose", "gives tiled 64×8 + swizzle 128, not")
    set_attr(module, "memref.transpose", "out_transforms", f"[{tiled(64, 8, swizzle=128)}]")
    set_attr(module, "mosaic_gpu.vector_load", "in_transforms", f"[{tiled(64, 8, swizzle=128)}]")
    set_attr(module, "mosaic_gpu.vector_load", "out_layouts", f"[{WGMMA}]")
    assert [v for v in check(module) if v.op == "memref.transpose"] == []


def test_slices_with_the_same_alias_id_are_one_ref() -> None:
    module = annotated(
        kernel(
            f"""
  %r = "mosaic_gpu.slice_smem"() <{{offset = 0 : i32, alias_id = 1 : i64}}> : () -> {REF_128x64}
  %s = "mosaic_gpu.slice_smem"() <{{offset = 0 : i32, alias_id = 1 : i64}}> : () -> {REF_128x64}
  %x = "mosaic_gpu.vector_load"(%r) : ({REF_128x64}) -> vector<128x64xf16>
  %y = "mosaic_gpu.vector_load"(%s) : ({REF_128x64}) -> vector<128x64xf16>
"""
        )
    )
    for attr, nth in (("out_transforms", 1), ("in_transforms", 1)):
        op = "mosaic_gpu.slice_smem" if attr == "out_transforms" else "mosaic_gpu.vector_load"
        set_attr(module, op, attr, f"[{tiled(8, 8)}]", nth=nth)
    caught(module, "mosaic_gpu.slice_smem", "aliases the slice at")


def test_a_free_ref_has_one_layout() -> None:
    ref = REF_128x64
    module = annotated(
        kernel(
            f"""
  %x = "mosaic_gpu.vector_load"(%r) : ({ref}) -> vector<128x64xf16>
  "mosaic_gpu.vector_store"(%x, %r) : (vector<128x64xf16>, {ref}) -> ()
""",
            f"%r: {ref}",
        )
    )
    set_attr(module, "mosaic_gpu.vector_store", "in_transforms", f"[{tiled(8, 64)}]")
    caught(module, "mosaic_gpu.vector_store", "but the same ref is")


def test_scalar_access_needs_an_untiled_ref() -> None:
    ref = smem("1xi32")
    module = annotated(
        kernel(
            f"""
  %r = "mosaic_gpu.slice_smem"() <{{offset = 0 : i32}}> : () -> {ref}
  %i = "arith.constant"() <{{value = 0 : index}}> : () -> index
  %v = "memref.load"(%r, %i) : ({ref}, index) -> i32
"""
        )
    )
    set_attr(
        module,
        "memref.load",
        "in_transforms",
        "[[#mosaic_gpu.tile<[1]>, #mosaic_gpu.swizzle<16 : i32>]]",
    )
    caught(module, "memref.load", "a ref read by memref.load must be untiled")


# Control flow.

LOOP = register_kernel(
    """
  %lb = "arith.constant"() <{value = 0 : index}> : () -> index
  %ub = "arith.constant"() <{value = 4 : index}> : () -> index
  %st = "arith.constant"() <{value = 1 : index}> : () -> index
  %l = "scf.for"(%lb, %ub, %st, %x) ({
  ^bb0(%i: index, %a: vector<128x128xf32>):
    %n = "arith.addf"(%a, %a) : (vector<128x128xf32>, vector<128x128xf32>) -> vector<128x128xf32>
    "scf.yield"(%n) : (vector<128x128xf32>) -> ()
  }) : (index, index, index, vector<128x128xf32>) -> vector<128x128xf32>
  %k = "arith.constant"() <{value = 1 : index}> : () -> index
  %w = "scf.index_switch"(%k) <{cases = array<i64: 0>}> ({
    "scf.yield"(%l) : (vector<128x128xf32>) -> ()
  }, {
    "scf.yield"(%x) : (vector<128x128xf32>) -> ()
  }) : (index) -> vector<128x128xf32>
  %u = "scf.while"(%w) ({
  ^bb0(%b: vector<128x128xf32>):
    %f = "arith.constant"() <{value = false}> : () -> i1
    "scf.condition"(%f, %b) : (i1, vector<128x128xf32>) -> ()
  }, {
  ^bb0(%c: vector<128x128xf32>):
    "scf.yield"(%c) : (vector<128x128xf32>) -> ()
  }) : (vector<128x128xf32>) -> vector<128x128xf32>
"""
)


def test_for_loop_carries_one_layout() -> None:
    module = annotated(LOOP)
    set_attr(module, "scf.for", "out_layouts", f"[{WGMMA_TRANSPOSED}]")
    caught(module, "scf.for", "a loop-carried value keeps one layout")


def test_loop_body_uses_the_carried_layout() -> None:
    module = annotated(LOOP)
    other = strided((128, 128), 4)
    set_attr(module, "arith.addf", "in_layouts", f"[{other}, {other}]")
    set_attr(module, "arith.addf", "out_layouts", f"[{other}]")
    caught(module, "arith.addf", "the lowering cannot convert between them")


def test_a_consumer_may_take_a_value_in_a_layout_the_lowering_converts_to() -> None:
    """The lowering converts each operand from its producer's layout to its
    consumer's (``FragmentedArray.to_layout``), so the loop body may work on the
    carried WGMMA value transposed: the checker accepts it, as does JAX's lowering
    (JAX's rules allow only splats to change layout between ops)."""
    module = annotated(LOOP)
    set_attr(module, "arith.addf", "in_layouts", f"[{WGMMA_TRANSPOSED}, {WGMMA_TRANSPOSED}]")
    set_attr(module, "arith.addf", "out_layouts", f"[{WGMMA_TRANSPOSED}]")
    assert check(module, HOPPER) == []
    lower_in_launch(module, HOPPER)


def test_switch_cases_yield_one_layout() -> None:
    module = annotated(LOOP)
    set_attr(module, "scf.yield", "in_layouts", f"[{WGMMA_TRANSPOSED}]", nth=2)
    caught(module, "scf.yield", "every case yields the result in one layout")


def test_while_condition_passes_the_result_layout() -> None:
    module = annotated(LOOP)
    set_attr(module, "scf.condition", "in_layouts", f"[{WGMMA_TRANSPOSED}]")
    caught(module, "scf.condition", "a value leaving the loop keeps its layout")


# Tensor memory (Blackwell).

TMEM_REF = f"memref<128x128xf32, {TMEM}>"
TCGEN05_KERNEL = kernel(
    f"""
  %addr = "mosaic_gpu.slice_smem"() <{{offset = 0 : i32}}> : () -> {smem("i32")}
  %t = "mosaic_gpu.tmem_alloc"(%addr) <{{collective = false, packing = 1 : i32}}> : ({smem("i32")}) -> {TMEM_REF}
  %a = "mosaic_gpu.slice_smem"() <{{offset = 1024 : i32}}> : () -> {smem("128x64xf16")}
  %b = "mosaic_gpu.slice_smem"() <{{offset = 32768 : i32}}> : () -> {smem("64x128xf16")}
  %acc = "arith.constant"() <{{value = false}}> : () -> i1
  "mosaic_gpu.tcgen05_mma"(%t, %a, %b, %acc) <{{collective = false, operandSegmentSizes = array<i32: 1, 1, 1, 1, 0, 0, 0>}}> : ({TMEM_REF}, {smem("128x64xf16")}, {smem("64x128xf16")}, i1) -> ()
  %x = "mosaic_gpu.async_load_tmem"(%t) : ({TMEM_REF}) -> vector<128x128xf32>
"""
)


def tmem_attr(layout: object) -> str:
    with reference.shared_context() as context, ir.Location.unknown():
        return str(AttributeCache(context).layout(layout))  # type: ignore[arg-type]


def test_a_tmem_layout_packs_whole_32_bit_columns_or_nothing() -> None:
    """TMEMLayout.check_type, run by the lowering wherever it builds a TMEM ref:
    f32 in a layout with vectors of 2 (the bf16 packing) is refused."""
    module = annotated(TCGEN05_KERNEL, BLACKWELL)
    set_attr(
        module, "mosaic_gpu.tmem_alloc", "out_tmem_layouts", f"[{tmem_attr(hl.tmem_default(2))}]"
    )
    caught(module, "mosaic_gpu.tmem_alloc", "has vectors of 1 element", BLACKWELL)


def test_tcgen05_accumulator_layout() -> None:
    module = annotated(TCGEN05_KERNEL, BLACKWELL)
    # A TMEM layout f32 refs take (vectors of 1), but no accumulator's.
    other = tmem_attr(Tmem(tcgen05.tmem_half_lane_layout(128, 1)))
    for op, attr in (
        ("mosaic_gpu.tmem_alloc", "out_tmem_layouts"),
        ("mosaic_gpu.tcgen05_mma", "in_tmem_layouts"),
        ("mosaic_gpu.async_load_tmem", "in_tmem_layouts"),
    ):
        set_attr(module, op, attr, f"[{other}]")
    caught(module, "mosaic_gpu.tcgen05_mma", "the accumulator must be", BLACKWELL)


def test_tcgen05_operands_need_mma_tilings() -> None:
    module = annotated(TCGEN05_KERNEL, BLACKWELL)
    set_entry(module, "mosaic_gpu.tcgen05_mma", "in_transforms", 1, tiled(64, 8))
    caught(module, "mosaic_gpu.tcgen05_mma", "B (operand #2) is tiled 64×8, no swizzle", BLACKWELL)


def test_tmem_load_needs_a_supported_transfer() -> None:
    module = annotated(TCGEN05_KERNEL, BLACKWELL)
    set_attr(module, "mosaic_gpu.async_load_tmem", "out_layouts", f"[{strided((128, 128), 4)}]")
    caught(module, "mosaic_gpu.async_load_tmem", "no transfer between TMEM", BLACKWELL)


def test_tmem_alloc_address_is_untiled() -> None:
    module = annotated(TCGEN05_KERNEL, BLACKWELL)
    with module.context:
        op = ops_named(module, "mosaic_gpu.tmem_alloc")[0]
        assert "in_transforms" in op.attributes
    set_attr(
        module,
        "mosaic_gpu.tmem_alloc",
        "in_transforms",
        "[[#mosaic_gpu.tile<[1]>, #mosaic_gpu.swizzle<16 : i32>]]",
    )
    # The address word is a 0-D ref: no tiling fits it at all.
    caught(module, "mosaic_gpu.tmem_alloc", "a scalar ref takes no tiling or swizzle", BLACKWELL)


# --- the command line ------------------------------------------------------------------------


def write_annotated(tmp_path: Path, module: ir.Module, name: str = "k.mlir") -> Path:
    path = tmp_path / name
    path.write_text(str(module))
    return path


def test_cli_accepts_a_consistent_module(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = write_annotated(tmp_path, annotated(POINTWISE))
    assert check_main([str(path)]) == 0
    # What was checked, on one line.
    (line,) = capsys.readouterr().out.splitlines()
    assert line.startswith(f"{path}: ok: ") and "with layouts checked" in line, line


def test_cli_lists_each_violation(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    module = annotated(POINTWISE)
    set_entry(module, "arith.addf", "in_layouts", 1, WGMMA_TRANSPOSED)
    set_attr(module, "mosaic_gpu.vector_load", "out_layouts", f"[{splat((128, 64))}]")
    path = write_annotated(tmp_path, module)
    assert check_main([str(path), "--arch", "9.0"]) == 1
    *lines, checked = capsys.readouterr().out.splitlines()
    assert checked.startswith(f"{path}: {len(lines)} violations: ")
    assert len(lines) >= 2
    for line in lines:
        location, op, message = line.split(": ", 2)
        assert location.startswith(str(path)), line
        assert op in ("arith.addf", "mosaic_gpu.vector_load"), line
        assert message


@pytest.mark.parametrize(
    "args, fragment",
    [
        (["{missing}"], "cannot read"),
        (["{garbage}"], "garbage.mlir:1:1"),
        (["{ok}", "--arch", "8.0"], "unsupported architecture"),
    ],
)
def test_cli_bad_input(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], args: list[str], fragment: str
) -> None:
    files = {
        "missing": tmp_path / "missing.mlir",
        "garbage": tmp_path / "garbage.mlir",
        "ok": write_annotated(tmp_path, annotated(POINTWISE)),
    }
    files["garbage"].write_text("this is not MLIR\n")
    argv = [a.format(**{k: str(v) for k, v in files.items()}) for a in args]
    assert check_main(argv) == 2
    err = capsys.readouterr().err
    # One line; argparse puts the usage before a bad option's (``--arch``).
    assert len(err.splitlines()) == 1 + err.startswith("usage:") and fragment in err, err


def test_cli_usage_error() -> None:
    assert check_main([]) == 2


def test_cli_speaks_infer_s_words_for_a_pallas_kernel(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A captured Pallas kernel, inferred, then given a layout its store cannot take: the
    violation is placed at the kernel's Python line (as `smalto infer` places it, not
    MLIR's `loc(...)`), and names the layout as infer does."""
    from pallas_kernels import add_one, f32

    import smalto.jax

    (captured,) = smalto.jax.capture(add_one, f32(128, 128), arch=HOPPER)
    module = reference.parse(captured.text, reference.shared_context())
    smalto.infer_layout(module)
    (store,) = ops_named(module, "mosaic_gpu.vector_store")
    strided = "#mosaic_gpu.WGStridedFragLayout<[128, 64], 8>"
    with module.context:
        store.attributes["in_layouts"] = ir.Attribute.parse(f"[{strided}]")
    path = tmp_path / "add_one.mlir"
    path.write_text(module.operation.get_asm(enable_debug_info=True))
    assert check_main([str(path)]) == 1
    violation, checked = capsys.readouterr().out.splitlines()
    assert re.fullmatch(
        r".*pallas_kernels\.py:\d+:\d+: mosaic_gpu\.vector_store: operand #0 of shape "
        r"\(128, 128\) cannot be laid out as strided ×8 of 128x64",
        violation,
    ), violation
    assert "loc(" not in violation and checked.startswith(f"{path}: 1 violation: ")


def test_cli_says_once_that_a_module_has_no_layouts(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = tmp_path / "k.mlir"
    path.write_text(POINTWISE)
    assert check_main([str(path)]) == 1
    (line,) = capsys.readouterr().out.splitlines()
    assert line == (
        f"{path}: no layouts: the module has no layout attributes (5 ops need them, of 7): "
        f"run `smalto infer {path}` first, and check what it writes; arch 9.0"
    )
    assert check_main([str(path), "--json"]) == 1
    (document,) = map(json.loads, capsys.readouterr().out.splitlines())
    assert document["ok"] is False and document["annotated"] is False
    assert len(document["violations"]) == 1
