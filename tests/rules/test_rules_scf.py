"""Rules for `scf` (Hopper): loops and switches carry layouts through their regions.

What the ops require: a loop-carried value has one layout at the loop's
operand, its block argument, the loop's result and the terminator's operand
(``scf.for``); for ``scf.while``, the operands flow into the ``before`` region
and back from the ``after`` region's ``scf.yield``, while the results come from
``scf.condition`` (after its boolean) into the ``after`` region; each
``scf.index_switch`` result agrees with what every case yields. The
attributes land on the loop op and on its terminators (``in_layouts`` /
``in_transforms`` of ``scf.yield`` and ``scf.condition``).
"""

from __future__ import annotations

from rule_kit import (
    WGMMA,
    WGMMA_ROW,
    gmem,
    has_layout_attributes,
    in_layouts,
    in_transforms,
    infer_like_jax,
    kernel,
    layout_cast,
    op,
    out_layouts,
    out_transforms,
    rejected_like_jax,
    slice_smem,
    smem,
    splat,
    vec,
    vector_load,
    with_transforms,
)

F32 = "f32"
SHAPE = (64, 128)
V = vec(SHAPE, F32)
G = gmem(SHAPE, F32)
BOUNDS = [
    "%lb = arith.constant 0 : index",
    "%ub = arith.constant 4 : index",
    "%st = arith.constant 1 : index",
]


def _wgmma_input(name: str = "y") -> list[str]:
    return [vector_load("x", "arg0", G, V), layout_cast(name, "x", V, WGMMA)]


# --- scf.for ------------------------------------------------------------------------


def test_for_carries_a_vector_layout_to_its_result_and_yield():
    module = infer_like_jax(
        kernel(
            [
                *_wgmma_input(),
                *BOUNDS,
                f"%c = arith.constant dense<0.0> : {V}",
                f"%r = scf.for %i = %lb to %ub step %st iter_args(%a = %c) -> ({V}) {{",
                f"  %s = arith.addf %a, %y : {V}",
                f"  scf.yield %s : {V}",
                "}",
            ],
            [G],
        )
    )
    loop = op(module, "scf.for")
    # Only the carried vector has a layout: the bounds are scalars.
    assert in_layouts(loop) == [WGMMA] and out_layouts(loop) == [WGMMA]
    assert in_layouts(op(module, "scf.yield")) == [WGMMA]
    assert in_layouts(op(module, "arith.addf")) == [WGMMA, WGMMA]
    # The splat initial value is relaid out to WGMMA as it enters the loop.
    assert out_layouts(op(module, "arith.constant", 3)) == [splat(*SHAPE)]


def test_for_infers_the_carried_layout_from_the_body():
    """Nothing outside the loop says WGMMA: the cast inside the body does."""
    module = infer_like_jax(
        kernel(
            [
                vector_load("x", "arg0", G, V),
                *BOUNDS,
                f"%r = scf.for %i = %lb to %ub step %st iter_args(%a = %x) -> ({V}) {{",
                layout_cast("w", "a", V, WGMMA),
                f"  scf.yield %w : {V}",
                "}",
            ],
            [G],
        )
    )
    assert out_layouts(op(module, "mosaic_gpu.vector_load")) == [WGMMA]
    assert in_layouts(op(module, "scf.for")) == [WGMMA]
    assert in_layouts(op(module, "scf.yield")) == [WGMMA]


def test_for_with_several_carried_values_of_different_kinds():
    row = vec((64,), F32)
    module = infer_like_jax(
        kernel(
            [
                *_wgmma_input(),
                vector_load("rx", "arg1", gmem((64,), F32), row),
                layout_cast("rw", "rx", row, WGMMA_ROW),
                *BOUNDS,
                "%n = arith.constant 0 : i32",
                f"%r:3 = scf.for %i = %lb to %ub step %st iter_args(%a = %y, %k = %n, %b = %rw) "
                f"-> ({V}, i32, {row}) {{",
                f"  scf.yield %a, %k, %b : {V}, i32, {row}",
                "}",
            ],
            [G, gmem((64,), F32)],
        )
    )
    loop = op(module, "scf.for")
    assert in_layouts(loop) == [WGMMA, WGMMA_ROW]
    assert out_layouts(loop) == [WGMMA, WGMMA_ROW]
    assert in_layouts(op(module, "scf.yield")) == [WGMMA, WGMMA_ROW]


def test_for_without_vectors_gets_no_attributes():
    module = infer_like_jax(
        kernel(
            [
                *BOUNDS,
                "%n = arith.constant 0 : i32",
                "%r = scf.for %i = %lb to %ub step %st iter_args(%k = %n) -> (i32) {",
                "  scf.yield %k : i32",
                "}",
            ]
        )
    )
    assert not has_layout_attributes(op(module, "scf.for"))
    assert not has_layout_attributes(op(module, "scf.yield"))


def test_for_carrying_an_smem_ref_shares_its_transforms():
    ref, v = smem((64, 64), "bf16"), vec((64, 64), "bf16")
    module = infer_like_jax(
        kernel(
            [
                slice_smem("r", ref),
                *BOUNDS,
                f"%o = scf.for %i = %lb to %ub step %st iter_args(%a = %r) -> ({ref}) {{",
                vector_load("v", "a", ref, v),
                layout_cast("c", "v", v, WGMMA),
                f"  scf.yield %a : {ref}",
                "}",
            ]
        )
    )
    swizzled = [((8, 64), 128)]
    loop = op(module, "scf.for")
    assert in_transforms(loop) == out_transforms(loop) == swizzled
    assert in_transforms(op(module, "scf.yield")) == swizzled
    assert out_transforms(op(module, "mosaic_gpu.slice_smem")) == swizzled


def _for_yielding_transposed(dtype: str) -> str:
    """The carried value is WGMMA on entry; the body yields a WGMMA_TRANSPOSED value."""
    from rule_kit import WGMMA_TRANSPOSED

    v, g = vec(SHAPE, dtype), gmem(SHAPE, dtype)
    return kernel(
        [
            vector_load("x", "arg0", g, v),
            layout_cast("y", "x", v, WGMMA),
            *BOUNDS,
            f"%r = scf.for %i = %lb to %ub step %st iter_args(%a = %y) -> ({v}) {{",
            layout_cast("t", "a", v, WGMMA_TRANSPOSED),
            f"  scf.yield %t : {v}",
            "}",
        ],
        [g],
    )


def test_for_yielding_a_conflicting_layout_is_rejected():
    """8-bit values: the lowering converts no WGMMA_TRANSPOSED value back to WGMMA."""
    rejected_like_jax(_for_yielding_transposed("i8"))


def test_for_yielding_a_transposed_value_converts_it_where_the_lowering_does():
    """32-bit values: JAX's rules let only splats change layout at the yield; JAX's
    lowering transposes the yielded value back to the carried layout."""
    from rule_kit import lowers_beyond_jax

    module = lowers_beyond_jax(_for_yielding_transposed(F32))
    assert out_layouts(op(module, "scf.for")) == [WGMMA]
    assert in_layouts(op(module, "scf.yield")) == [WGMMA]


# --- scf.while ------------------------------------------------------------------------


def test_while_annotates_the_loop_its_condition_and_its_yield():
    module = infer_like_jax(
        kernel(
            [
                *_wgmma_input(),
                f"%c = arith.constant dense<1.0> : {V}",
                f"%r = scf.while (%a = %c) : ({V}) -> {V} {{",
                f"  scf.condition(%arg1) %a : {V}",
                "} do {",
                f"^bb0(%b: {V}):",
                f"  %s = arith.addf %b, %y : {V}",
                f"  scf.yield %s : {V}",
                "}",
            ],
            [G, "i1"],
        )
    )
    loop = op(module, "scf.while")
    assert in_layouts(loop) == [WGMMA] and out_layouts(loop) == [WGMMA]
    # The condition's boolean has no layout: one entry, for the vector.
    assert in_layouts(op(module, "scf.condition")) == [WGMMA]
    assert in_layouts(op(module, "scf.yield")) == [WGMMA]


def test_while_with_scalar_and_vector_values():
    module = infer_like_jax(
        kernel(
            [
                *_wgmma_input(),
                f"%c = arith.constant dense<1.0> : {V}",
                "%z = arith.constant 0 : i32",
                f"%r:2 = scf.while (%a = %z, %q = %c) : (i32, {V}) -> (i32, {V}) {{",
                f"  scf.condition(%arg1) %a, %y : i32, {V}",
                "} do {",
                f"^bb0(%b: i32, %w: {V}):",
                f"  %s = arith.addf %w, %y : {V}",
                f"  scf.yield %b, %s : i32, {V}",
                "}",
            ],
            [G, "i1"],
        )
    )
    loop = op(module, "scf.while")
    assert in_layouts(loop) == [WGMMA] and out_layouts(loop) == [WGMMA]
    assert in_layouts(op(module, "scf.condition")) == [WGMMA]
    assert in_layouts(op(module, "scf.yield")) == [WGMMA]


def test_while_whose_before_and_after_carry_different_types():
    """Operands are 64x128 vectors, results 64-row vectors: two separate variables."""
    row = vec((64,), F32)
    module = infer_like_jax(
        kernel(
            [
                *_wgmma_input(),
                vector_load("rx", "arg2", gmem((64,), F32), row),
                layout_cast("rw", "rx", row, WGMMA_ROW),
                f"%r = scf.while (%a = %y) : ({V}) -> {row} {{",
                f"  scf.condition(%arg1) %rw : {row}",
                "} do {",
                f"^bb0(%b: {row}):",
                f"  scf.yield %y : {V}",
                "}",
            ],
            [G, "i1", gmem((64,), F32)],
        )
    )
    loop = op(module, "scf.while")
    assert in_layouts(loop) == [WGMMA]
    assert out_layouts(loop) == [WGMMA_ROW]
    assert in_layouts(op(module, "scf.condition")) == [WGMMA_ROW]
    assert in_layouts(op(module, "scf.yield")) == [WGMMA]


# --- scf.index_switch ------------------------------------------------------------------------


def test_index_switch_result_agrees_with_every_case():
    module = infer_like_jax(
        kernel(
            [
                *_wgmma_input(),
                f"%c = arith.constant dense<1.0> : {V}",
                f"%r = scf.index_switch %arg1 -> {V}",
                "case 0 {",
                f"  scf.yield %y : {V}",
                "}",
                "case 1 {",
                f"  %n = arith.addf %y, %c : {V}",
                f"  scf.yield %n : {V}",
                "}",
                "default {",
                f"  scf.yield %c : {V}",
                "}",
            ],
            [G, "index"],
        )
    )
    switch = op(module, "scf.index_switch")
    assert out_layouts(switch) == [WGMMA]
    assert "in_layouts" not in switch.attributes  # its only operand is the index
    for i in range(3):
        assert in_layouts(op(module, "scf.yield", i)) == [WGMMA]


def test_index_switch_of_splats_stays_splat():
    module = infer_like_jax(
        kernel(
            [
                f"%a = arith.constant dense<1.0> : {V}",
                f"%b = arith.constant dense<2.0> : {V}",
                f"%r = scf.index_switch %arg0 -> {V}",
                "case 0 {",
                f"  scf.yield %a : {V}",
                "}",
                "default {",
                f"  scf.yield %b : {V}",
                "}",
            ],
            ["index"],
        )
    )
    assert out_layouts(op(module, "scf.index_switch")) == [splat(*SHAPE)]
    assert in_layouts(op(module, "scf.yield", 1)) == [splat(*SHAPE)]


def _switch_yielding_transposed(dtype: str) -> str:
    from rule_kit import WGMMA_TRANSPOSED

    v, g = vec(SHAPE, dtype), gmem(SHAPE, dtype)
    return kernel(
        [
            vector_load("x", "arg0", g, v),
            layout_cast("y", "x", v, WGMMA),
            layout_cast("t", "x", v, WGMMA_TRANSPOSED),
            f"%r = scf.index_switch %arg1 -> {v}",
            "case 0 {",
            f"  scf.yield %y : {v}",
            "}",
            "default {",
            f"  scf.yield %t : {v}",
            "}",
        ],
        [g, "index"],
    )


def test_index_switch_cases_yielding_incompatible_layouts_are_rejected():
    rejected_like_jax(_switch_yielding_transposed("i8"))


def test_index_switch_cases_yielding_transposed_layouts_meet_at_a_conversion():
    """32-bit values: one case's value is converted where it is yielded."""
    from rule_kit import lowers_beyond_jax

    module = lowers_beyond_jax(_switch_yielding_transposed(F32))
    (layout,) = out_layouts(op(module, "scf.index_switch"))
    assert [in_layouts(op(module, "scf.yield", i)) for i in range(2)] == [[layout], [layout]]


def test_index_switch_yielding_smem_refs_is_not_a_layout_site():
    """Only vector results get layouts at a switch (as in JAX): the refs inside keep
    their own transforms."""
    ref = smem((64, 64), "bf16")
    module = infer_like_jax(
        kernel(
            [
                slice_smem("r", ref),
                with_transforms("w", "r", ref, (8, 64), 128),
                "scf.index_switch %arg0",
                "case 0 {",
                f'  %v = "mosaic_gpu.vector_load"(%w) : ({ref}) -> {vec((64, 64), "bf16")}',
                "  scf.yield",
                "}",
                "default {",
                "  scf.yield",
                "}",
            ],
            ["index"],
        )
    )
    assert not has_layout_attributes(op(module, "scf.index_switch"))
    assert in_transforms(op(module, "mosaic_gpu.vector_load")) == [((8, 64), 128)]
