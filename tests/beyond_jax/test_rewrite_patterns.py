"""Each pattern of the unit-dim rewrite (``smalto.rewrite``), on small modules.

Every case rewrites a module, checks what changed (and that the result
verifies), and runs the module before and after through the reference
evaluator (``tests/helpers/evaluator.py``) on random inputs: the stored bits must be
the same. The cases the rewrite must leave alone come after.
"""

from __future__ import annotations

import re

import pytest
from equivalence import assert_equivalent
from jax._src.lib.mlir import ir
from mlir_snippets import func_module, parse

from smalto.rewrite import RewrittenOp, rewritable_webs, rewrite_unit_dims

BID = "mosaic_gpu.broadcast_in_dim"
STORE = "mosaic_gpu.vector_store"


def _text(module: ir.Module) -> str:
    return module.operation.get_asm(enable_debug_info=True)


def rewrite_checked(body: str, args: list[tuple[str, str]]) -> tuple[str, list[RewrittenOp]]:
    """Rewrites the module; asserts it verifies and computes what it did before.
    Returns its text after, and what changed."""
    text = func_module(body, args)
    before = parse(text)
    after = parse(text, before.context)
    with after.context, ir.Location.unknown():
        records = list(rewrite_unit_dims(after))
    assert after.operation.verify()
    assert_equivalent(before, after)
    return str(after), records


def untouched(body: str, args: list[tuple[str, str]]) -> None:
    """Asserts the rewrite leaves the module exactly as it is."""
    module = parse(func_module(body, args))
    before = _text(module)
    with module.context, ir.Location.unknown():
        assert rewritable_webs(module) == []
        assert rewrite_unit_dims(module) == ()
    assert _text(module) == before


def changed(records: list[RewrittenOp]) -> list[tuple[str, str]]:
    """(op, the first word of what happened) per record."""
    return [(r.op, r.change.split()[0]) for r in records]


def _store(value: str, shape: str) -> str:
    return f'"{STORE}"(%{value}, %out) : (vector<{shape}>, memref<{shape}>) -> ()'


OUT = ("out", "memref<128x64xf32>")
STRIDED = "#mosaic_gpu.WGStridedFragLayout<[128, 1], 1>"
ROW = ("r", "vector<128xf32>")


def test_an_elementwise_chain_is_computed_without_the_unit_dim() -> None:
    """RMS norm's shape: expand, compute, broadcast."""
    body = f"""
%e = {BID}(%r : vector<128xf32>) <broadcast_dimensions = [0]> -> vector<128x1xf32>
%a = arith.addf %e, %e : vector<128x1xf32>
%s = math.rsqrt %a : vector<128x1xf32>
%b = {BID}(%s : vector<128x1xf32>) <broadcast_dimensions = [0, 1]> -> vector<128x64xf32>
{_store("b", "128x64xf32")}
"""
    text, records = rewrite_checked(body, [ROW, OUT])
    assert changed(records) == [
        (BID, "removed:"),
        ("arith.addf", "now"),
        ("math.rsqrt", "now"),
        (BID, "now"),
    ]
    assert "vector<128x1xf32>" not in text
    assert re.search(r"math.rsqrt %\w+ : vector<128xf32>", text)
    assert "<broadcast_dimensions = [0]> -> vector<128x64xf32>" in text


def test_splats_constants_and_iotas_take_the_kept_shape() -> None:
    body = f"""
%e = {BID}(%r : vector<128xf32>) <broadcast_dimensions = [0]> -> vector<128x1xf32>
%c = arith.constant dense<2.5> : vector<128x1xf32>
%s = vector.broadcast %f : f32 to vector<128x1xf32>
%i = "mosaic_gpu.broadcasted_iota"() <{{dimension = 0 : i32}}> : () -> vector<128x1xi32>
%fi = arith.sitofp %i : vector<128x1xi32> to vector<128x1xf32>
%a = arith.mulf %e, %c : vector<128x1xf32>
%b = arith.addf %a, %s : vector<128x1xf32>
%d = arith.addf %b, %fi : vector<128x1xf32>
%o = {BID}(%d : vector<128x1xf32>) <broadcast_dimensions = [0, 1]> -> vector<128x64xf32>
{_store("o", "128x64xf32")}
"""
    text, records = rewrite_checked(body, [ROW, ("f", "f32"), OUT])
    ops = [r.op for r in records]
    assert {"arith.constant", "vector.broadcast", "mosaic_gpu.broadcasted_iota"} <= set(ops)
    assert "dense<2.500000e+00> : vector<128xf32>" in text
    assert "f32 to vector<128xf32>" in text
    assert "dimension = 0 : i32}> : () -> vector<128xi32>" in text


def test_keepdims_on_the_leading_axis() -> None:
    """(1, N) statistics: the kept dim is 1, the fold broadcasts along it."""
    body = f"""
%e = {BID}(%c : vector<64xf32>) <broadcast_dimensions = [1]> -> vector<1x64xf32>
%x = math.exp %e : vector<1x64xf32>
%b = {BID}(%x : vector<1x64xf32>) <broadcast_dimensions = [0, 1]> -> vector<128x64xf32>
{_store("b", "128x64xf32")}
"""
    text, _ = rewrite_checked(body, [("c", "vector<64xf32>"), OUT])
    assert "math.exp %arg0 : vector<64xf32>" in text
    assert "<broadcast_dimensions = [1]> -> vector<128x64xf32>" in text


def test_rank_3_statistics() -> None:
    body = f"""
%e = {BID}(%r : vector<2x64xf32>) <broadcast_dimensions = [0, 1]> -> vector<2x64x1xf32>
%x = math.log %e : vector<2x64x1xf32>
%b = {BID}(%x : vector<2x64x1xf32>) <broadcast_dimensions = [0, 1, 2]> -> vector<2x64x32xf32>
"{STORE}"(%b, %out) : (vector<2x64x32xf32>, memref<2x64x32xf32>) -> ()
"""
    text, _ = rewrite_checked(body, [("r", "vector<2x64xf32>"), ("out", "memref<2x64x32xf32>")])
    assert "<broadcast_dimensions = [0, 1]> -> vector<2x64x32xf32>" in text


def test_a_broadcast_into_a_higher_rank_keeps_its_mapping() -> None:
    """(N, 1) broadcast to (N, 4, 7) along dims [0, 2]: the unit dim went to dim 2,
    which the folded broadcast leaves unmapped (broadcast)."""
    body = f"""
%e = {BID}(%r : vector<128xf32>) <broadcast_dimensions = [0]> -> vector<128x1xf32>
%x = arith.negf %e : vector<128x1xf32>
%b = {BID}(%x : vector<128x1xf32>) <broadcast_dimensions = [0, 2]> -> vector<128x4x7xf32>
"{STORE}"(%b, %out) : (vector<128x4x7xf32>, memref<128x4x7xf32>) -> ()
"""
    text, _ = rewrite_checked(body, [ROW, ("out", "memref<128x4x7xf32>")])
    assert "<broadcast_dimensions = [0]> -> vector<128x4x7xf32>" in text


def test_comparisons_selects_and_casts() -> None:
    """A (N, 1) mask from a comparison, ``where`` on (N, 1) values, bf16 round trips."""
    body = f"""
%e = {BID}(%r : vector<128xf32>) <broadcast_dimensions = [0]> -> vector<128x1xf32>
%z = arith.constant dense<0.0> : vector<128x1xf32>
%m = arith.cmpf ogt, %e, %z : vector<128x1xf32>
%t = arith.truncf %e : vector<128x1xf32> to vector<128x1xbf16>
%u = arith.extf %t : vector<128x1xbf16> to vector<128x1xf32>
%w = arith.select %m, %u, %z : vector<128x1xi1>, vector<128x1xf32>
%mx = arith.maximumf %w, %e : vector<128x1xf32>
%b = {BID}(%mx : vector<128x1xf32>) <broadcast_dimensions = [0, 1]> -> vector<128x64xf32>
{_store("b", "128x64xf32")}
"""
    text, records = rewrite_checked(body, [ROW, OUT])
    assert {"arith.cmpf", "arith.truncf", "arith.extf", "arith.select"} <= {r.op for r in records}
    assert "vector<128xi1>" in text and "vector<128xbf16>" in text


def test_two_statistics_meet() -> None:
    """``maximum(m, max(s, keepdims=True))``: two expansions in one web."""
    body = f"""
%e1 = {BID}(%r : vector<128xf32>) <broadcast_dimensions = [0]> -> vector<128x1xf32>
%e2 = {BID}(%q : vector<128xf32>) <broadcast_dimensions = [0]> -> vector<128x1xf32>
%m = arith.maximumf %e1, %e2 : vector<128x1xf32>
%d = arith.subf %e1, %m : vector<128x1xf32>
%b = {BID}(%d : vector<128x1xf32>) <broadcast_dimensions = [0, 1]> -> vector<128x64xf32>
{_store("b", "128x64xf32")}
"""
    _, records = rewrite_checked(body, [ROW, ("q", "vector<128xf32>"), OUT])
    assert changed(records).count((BID, "removed:")) == 2


def test_expansions_that_insert_the_unit_dim_at_different_places() -> None:
    """(1, N) -> (1, 1, N) along dims [0, 2] and along [1, 2]: the same data, so one web;
    the rewrite keeps the first one's dims and the broadcast folds along them."""
    body = f"""
%e1 = {BID}(%p : vector<1x8xf32>) <broadcast_dimensions = [0, 2]> -> vector<1x1x8xf32>
%e2 = {BID}(%q : vector<1x8xf32>) <broadcast_dimensions = [1, 2]> -> vector<1x1x8xf32>
%s = arith.subf %e1, %e2 : vector<1x1x8xf32>
%b = {BID}(%s : vector<1x1x8xf32>) <broadcast_dimensions = [0, 1, 2]> -> vector<2x4x8xf32>
"{STORE}"(%b, %out) : (vector<2x4x8xf32>, memref<2x4x8xf32>) -> ()
"""
    args = [("p", "vector<1x8xf32>"), ("q", "vector<1x8xf32>"), ("out", "memref<2x4x8xf32>")]
    text, records = rewrite_checked(body, args)
    assert changed(records).count((BID, "removed:")) == 2
    assert "<broadcast_dimensions = [0, 2]> -> vector<2x4x8xf32>" in text


def test_a_reshape_expands_and_a_reshape_squeezes() -> None:
    """``x.reshape(N, 1)`` is an expansion; ``m[:, 0]`` (a shape_cast back) folds away."""
    body = f"""
%e = vector.shape_cast %r : vector<128xf32> to vector<128x1xf32>
%x = math.tanh %e : vector<128x1xf32>
%b = {BID}(%x : vector<128x1xf32>) <broadcast_dimensions = [0, 1]> -> vector<128x64xf32>
{_store("b", "128x64xf32")}
%s = vector.shape_cast %x : vector<128x1xf32> to vector<128xf32>
"{STORE}"(%s, %row) : (vector<128xf32>, memref<128xf32>) -> ()
"""
    text, records = rewrite_checked(body, [ROW, OUT, ("row", "memref<128xf32>")])
    assert changed(records).count(("vector.shape_cast", "removed:")) == 2
    assert "shape_cast" not in text


def test_a_store_of_the_statistic_gets_it_expanded_back_right_before_it() -> None:
    """Layer norm's stored mean: the (N, 1) value is materialized for the store only."""
    body = f"""
%e = {BID}(%r : vector<128xf32>) <broadcast_dimensions = [0]> -> vector<128x1xf32>
%c = arith.constant dense<0.5> : vector<128x1xf32>
%m = arith.mulf %e, %c : vector<128x1xf32>
%b = {BID}(%m : vector<128x1xf32>) <broadcast_dimensions = [0, 1]> -> vector<128x64xf32>
{_store("b", "128x64xf32")}
"{STORE}"(%m, %stat) : (vector<128x1xf32>, memref<128x1xf32>) -> ()
%cast = "mosaic_gpu.layout_cast"(%m) <{{new_layout = {STRIDED}}}>
  : (vector<128x1xf32>) -> vector<128x1xf32>
"{STORE}"(%cast, %stat2) : (vector<128x1xf32>, memref<128x1xf32>) -> ()
"""
    args = [ROW, OUT, ("stat", "memref<128x1xf32>"), ("stat2", "memref<128x1xf32>")]
    text, records = rewrite_checked(body, args)
    assert changed(records).count((STORE, "takes")) == 1
    assert changed(records).count(("mosaic_gpu.layout_cast", "takes")) == 1
    # Each expansion sits right before its user.
    lines = [line.strip() for line in text.splitlines()]
    users = [i for i, line in enumerate(lines) if "layout_cast" in line or "%arg2)" in line]
    assert len(users) == 2
    for at in users:
        assert lines[at - 1].startswith("%") and BID in lines[at - 1]
        assert lines[at - 1].endswith("-> vector<128x1xf32>")


def test_a_reduction_of_the_statistic_reduces_the_kept_dims() -> None:
    body = f"""
%e = {BID}(%r : vector<128xf32>) <broadcast_dimensions = [0]> -> vector<128x1xf32>
%x = math.exp %e : vector<128x1xf32>
%b = {BID}(%x : vector<128x1xf32>) <broadcast_dimensions = [0, 1]> -> vector<128x64xf32>
{_store("b", "128x64xf32")}
%zero = arith.constant 0.0 : f32
%t = vector.multi_reduction <add>, %x, %zero [0, 1] : vector<128x1xf32> to f32
%i = arith.constant 0 : index
memref.store %t, %total[%i] : memref<1xf32>
"""
    text, records = rewrite_checked(body, [ROW, OUT, ("total", "memref<1xf32>")])
    assert ("vector.multi_reduction", "now") in changed(records)
    assert "[0] : vector<128xf32> to f32" in text


_LOOP = f"""
%c0 = arith.constant 0 : index
%c1 = arith.constant 1 : index
%c3 = arith.constant 3 : index
%init = arith.constant dense<0xFF800000> : vector<128x1xf32>
%m:2 = scf.for %i = %c0 to %c3 step %c1 iter_args(%acc = %init, %tile = %x)
    -> (vector<128x1xf32>, vector<128x64xf32>) {{
  %rows = vector.multi_reduction <maximumf>, %tile, %r [1] : vector<128x64xf32> to vector<128xf32>
  %e = {BID}(%rows : vector<128xf32>) <broadcast_dimensions = [0]> -> vector<128x1xf32>
  %n = arith.maximumf %acc, %e : vector<128x1xf32>
  %nb = {BID}(%n : vector<128x1xf32>) <broadcast_dimensions = [0, 1]> -> vector<128x64xf32>
  %next = arith.subf %tile, %nb : vector<128x64xf32>
  scf.yield %n, %next : vector<128x1xf32>, vector<128x64xf32>
}}
%b = {BID}(%m#0 : vector<128x1xf32>) <broadcast_dimensions = [0, 1]> -> vector<128x64xf32>
%o = arith.addf %b, %m#1 : vector<128x64xf32>
{_store("o", "128x64xf32")}
"""


def test_a_loop_carries_the_statistic_without_the_unit_dim() -> None:
    """Online softmax's running maximum through ``lax.fori_loop``."""
    text, records = rewrite_checked(_LOOP, [ROW, ("x", "vector<128x64xf32>"), OUT])
    assert ("scf.for", "now") in changed(records)
    assert "-> (vector<128xf32>, vector<128x64xf32>)" in text


def test_a_while_loop_carries_it_too() -> None:
    body = f"""
%c0 = arith.constant 0 : i32
%c1 = arith.constant 1 : i32
%c3 = arith.constant 3 : i32
%e = {BID}(%r : vector<128xf32>) <broadcast_dimensions = [0]> -> vector<128x1xf32>
%w:2 = scf.while (%i = %c0, %v = %e) : (i32, vector<128x1xf32>) -> (i32, vector<128x1xf32>) {{
  %go = arith.cmpi slt, %i, %c3 : i32
  scf.condition(%go) %i, %v : i32, vector<128x1xf32>
}} do {{
^bb0(%j: i32, %u: vector<128x1xf32>):
  %k = arith.addi %j, %c1 : i32
  %d = arith.addf %u, %u : vector<128x1xf32>
  scf.yield %k, %d : i32, vector<128x1xf32>
}}
%b = {BID}(%w#1 : vector<128x1xf32>) <broadcast_dimensions = [0, 1]> -> vector<128x64xf32>
{_store("b", "128x64xf32")}
"""
    text, records = rewrite_checked(body, [ROW, OUT])
    assert ("scf.while", "now") in changed(records)
    assert "vector<128x1xf32>" not in text


@pytest.mark.parametrize("branch", ["scf.if", "scf.index_switch"])
def test_a_branch_result_is_computed_without_it(branch: str) -> None:
    if branch == "scf.if":
        head = "%p = scf.if %flag -> (vector<128x1xf32>) {"
        middle = "} else {"
        tail = "}"
        args = [ROW, OUT, ("flag", "i1")]
    else:
        head = "%p = scf.index_switch %which -> vector<128x1xf32>\ncase 1 {"
        middle = "}\ndefault {"
        tail = "}"
        args = [ROW, OUT, ("which", "index")]
    body = f"""
%e = {BID}(%r : vector<128xf32>) <broadcast_dimensions = [0]> -> vector<128x1xf32>
{head}
  %a = math.exp %e : vector<128x1xf32>
  scf.yield %a : vector<128x1xf32>
{middle}
  %c = arith.constant dense<1.0> : vector<128x1xf32>
  scf.yield %c : vector<128x1xf32>
{tail}
%b = {BID}(%p : vector<128x1xf32>) <broadcast_dimensions = [0, 1]> -> vector<128x64xf32>
{_store("b", "128x64xf32")}
"""
    text, records = rewrite_checked(body, args)
    assert (branch, "now") in changed(records)
    assert "vector<128x1xf32>" not in text


def test_an_optimization_barrier_passes_the_statistic_on() -> None:
    """``lax.optimization_barrier((acc, m, l))``, as JAX's own attention kernel writes it."""
    body = f"""
%e = {BID}(%r : vector<128xf32>) <broadcast_dimensions = [0]> -> vector<128x1xf32>
%m = math.exp %e : vector<128x1xf32>
%b:2 = "mosaic_gpu.optimization_barrier"(%x, %m)
  : (vector<128x64xf32>, vector<128x1xf32>) -> (vector<128x64xf32>, vector<128x1xf32>)
%w = {BID}(%b#1 : vector<128x1xf32>) <broadcast_dimensions = [0, 1]> -> vector<128x64xf32>
%o = arith.mulf %b#0, %w : vector<128x64xf32>
{_store("o", "128x64xf32")}
"""
    text, records = rewrite_checked(body, [ROW, ("x", "vector<128x64xf32>"), OUT])
    assert ("mosaic_gpu.optimization_barrier", "now") in changed(records)
    assert "-> (vector<128x64xf32>, vector<128xf32>)" in text


# --- What the rewrite leaves alone ------------------------------------------------


def test_a_statistic_loaded_from_memory_is_left_alone() -> None:
    """A (N, 1) value read from a ref exists only with its unit dim."""
    untouched(
        f"""
%l = "mosaic_gpu.vector_load"(%stat) : (memref<128x1xf32>) -> vector<128x1xf32>
%e = {BID}(%r : vector<128xf32>) <broadcast_dimensions = [0]> -> vector<128x1xf32>
%a = arith.addf %l, %e : vector<128x1xf32>
%b = {BID}(%a : vector<128x1xf32>) <broadcast_dimensions = [0, 1]> -> vector<128x64xf32>
{_store("b", "128x64xf32")}
""",
        [ROW, OUT, ("stat", "memref<128x1xf32>")],
    )


def test_a_function_argument_is_left_alone() -> None:
    untouched(
        f"""
%a = math.exp %v : vector<128x1xf32>
%b = {BID}(%a : vector<128x1xf32>) <broadcast_dimensions = [0, 1]> -> vector<128x64xf32>
{_store("b", "128x64xf32")}
""",
        [("v", "vector<128x1xf32>"), OUT],
    )


def test_a_statistic_only_stored_is_left_alone() -> None:
    """Nothing broadcasts it: computing it without the unit dim gains nothing."""
    untouched(
        f"""
%e = {BID}(%r : vector<128xf32>) <broadcast_dimensions = [0]> -> vector<128x1xf32>
%a = math.exp %e : vector<128x1xf32>
"{STORE}"(%a, %stat) : (vector<128x1xf32>, memref<128x1xf32>) -> ()
""",
        [ROW, ("stat", "memref<128x1xf32>")],
    )


def test_expansions_from_different_shapes_are_left_alone() -> None:
    untouched(
        f"""
%e1 = {BID}(%p : vector<1x64xf32>) <broadcast_dimensions = [0, 2]> -> vector<1x1x64xf32>
%e2 = vector.shape_cast %q : vector<64xf32> to vector<1x1x64xf32>
%a = arith.addf %e1, %e2 : vector<1x1x64xf32>
%b = {BID}(%a : vector<1x1x64xf32>) <broadcast_dimensions = [0, 1, 2]> -> vector<2x4x64xf32>
"{STORE}"(%b, %out) : (vector<2x4x64xf32>, memref<2x4x64xf32>) -> ()
""",
        [("p", "vector<1x64xf32>"), ("q", "vector<64xf32>"), ("out", "memref<2x4x64xf32>")],
    )


def test_an_iota_along_the_unit_dim_is_left_alone() -> None:
    untouched(
        f"""
%e = {BID}(%r : vector<128xi32>) <broadcast_dimensions = [0]> -> vector<128x1xi32>
%i = "mosaic_gpu.broadcasted_iota"() <{{dimension = 1 : i32}}> : () -> vector<128x1xi32>
%a = arith.addi %e, %i : vector<128x1xi32>
%b = {BID}(%a : vector<128x1xi32>) <broadcast_dimensions = [0, 1]> -> vector<128x64xi32>
"{STORE}"(%b, %out) : (vector<128x64xi32>, memref<128x64xi32>) -> ()
""",
        [("r", "vector<128xi32>"), ("out", "memref<128x64xi32>")],
    )


def test_a_broadcast_that_is_not_an_expansion_is_left_alone() -> None:
    """(1,) -> (128, 1) repeats an element: not the same data at another shape."""
    untouched(
        f"""
%e = {BID}(%r : vector<1xf32>) <broadcast_dimensions = [1]> -> vector<128x1xf32>
%a = math.exp %e : vector<128x1xf32>
%b = {BID}(%a : vector<128x1xf32>) <broadcast_dimensions = [0, 1]> -> vector<128x64xf32>
{_store("b", "128x64xf32")}
""",
        [("r", "vector<1xf32>"), OUT],
    )


def test_an_expansion_of_a_rewritten_value_stays() -> None:
    """(N,) -> (N, 1) -> (N, 1, 1): the inner web is rewritten, the outer one kept,
    so that no value is asked for at two shapes."""
    body = f"""
%e = {BID}(%r : vector<128xf32>) <broadcast_dimensions = [0]> -> vector<128x1xf32>
%a = math.exp %e : vector<128x1xf32>
%b = {BID}(%a : vector<128x1xf32>) <broadcast_dimensions = [0, 1]> -> vector<128x64xf32>
{_store("b", "128x64xf32")}
%e3 = {BID}(%a : vector<128x1xf32>) <broadcast_dimensions = [0, 1]> -> vector<128x1x1xf32>
%c = math.exp %e3 : vector<128x1x1xf32>
%d = {BID}(%c : vector<128x1x1xf32>) <broadcast_dimensions = [0, 1, 2]> -> vector<128x2x4xf32>
"{STORE}"(%d, %out3) : (vector<128x2x4xf32>, memref<128x2x4xf32>) -> ()
"""
    text, _ = rewrite_checked(body, [ROW, OUT, ("out3", "memref<128x2x4xf32>")])
    assert "math.exp %arg0 : vector<128xf32>" in text
    assert "vector<128x1x1xf32>" in text  # the outer web as written
