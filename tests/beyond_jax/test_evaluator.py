"""The reference evaluator (``tests/helpers/evaluator.py``) against independent definitions.

The evaluator is the oracle of the unit-dim rewrite; these tests check it
against other implementations of the same ops (``jax.lax``/``jnp`` on the
CPU, Python's integers), and that it notices a miscompile.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
import pytest
import reference
from equivalence import assert_same_results
from evaluator import CONTROL_FLOW, Evaluator, broadcast_in_dim, run, walk
from evaluator_ops import is_modelled
from jax._src.lib.mlir import ir
from mlir_snippets import func_module, parse

VEC = "vector<4x8xf32>"


def _module(body: str, args: list[tuple[str, str]]) -> object:
    return parse(func_module(body, args))


def _store_module(ops: str, result: str, result_type: str, args: list[tuple[str, str]]) -> object:
    shape = result_type.removeprefix("vector<").removesuffix(">")
    store = f'"mosaic_gpu.vector_store"(%{result}, %out) : ({result_type}, memref<{shape}>) -> ()'
    body = f"{ops}\n{store}"
    return _module(body, [*args, ("out", f"memref<{shape}>")])


def _inputs(module: object, seed: int = 0) -> list[np.ndarray]:
    """The random vector arguments the evaluator draws for ``module``."""
    ev = Evaluator(module, seed)  # type: ignore[arg-type]
    with module.context:  # type: ignore[attr-defined]
        func = next(iter(module.body.operations)).operation  # type: ignore[attr-defined]
        block = next(iter(func.regions[0].blocks))
        return [ev._argument(i, a) for i, a in enumerate(block.arguments)]


@pytest.mark.parametrize(
    ("source", "dims", "shape"),
    [
        ((4,), (0,), (4, 8)),
        ((8,), (1,), (4, 8)),
        ((4, 1), (0, 1), (4, 8)),
        ((2, 3), (2, 0), (3, 5, 2)),
    ],
)
def test_broadcast_in_dim_matches_lax(source, dims, shape) -> None:
    x = np.random.default_rng(0).normal(size=source).astype(np.float32)
    expected = np.asarray(jax.lax.broadcast_in_dim(jnp.asarray(x), shape, dims))
    np.testing.assert_array_equal(broadcast_in_dim(x, dims, shape), expected)


@pytest.mark.parametrize(
    ("kind", "reduce"),
    [("add", jnp.sum), ("maximumf", jnp.max), ("minimumf", jnp.min), ("mul", jnp.prod)],
)
def test_multi_reduction_matches_jnp(kind: str, reduce) -> None:
    ops = f"%r = vector.multi_reduction <{kind}>, %x, %acc [1] : {VEC} to vector<4xf32>"
    module = _store_module(ops, "r", "vector<4xf32>", [("x", VEC), ("acc", "vector<4xf32>")])
    x, acc, _ = _inputs(module)
    (out,) = run(module)
    combine = {"add": np.add, "maximumf": np.maximum, "minimumf": np.minimum, "mul": np.multiply}
    expected = combine[kind](acc, np.asarray(reduce(jnp.asarray(x), axis=1)))
    np.testing.assert_allclose(out, expected, rtol=1e-6)


@pytest.mark.parametrize(
    ("predicate", "number", "test"),
    [("olt", 4, np.less), ("oge", 3, np.greater_equal), ("une", 13, np.not_equal)],
)
def test_cmpf_predicates(predicate: str, number: int, test) -> None:
    ops = (
        f"%c = arith.cmpf {predicate}, %a, %b : {VEC}\n"
        f"%s = arith.select %c, %a, %b : vector<4x8xi1>, {VEC}"
    )
    module = _store_module(ops, "s", VEC, [("a", VEC), ("b", VEC)])
    a, b, _ = _inputs(module)
    (out,) = run(module)
    np.testing.assert_array_equal(out, np.where(test(a, b), a, b))
    with module.context:  # the predicate's number is what the evaluator reads
        assert f"predicate = {number}" in module.operation.get_asm(print_generic_op_form=True)


def test_signed_division_truncates_towards_zero() -> None:
    ops = "%q = arith.divsi %a, %b : vector<2x4xi32>\n%r = arith.remsi %a, %b : vector<2x4xi32>"
    body = (
        f"{ops}\n"
        '"mosaic_gpu.vector_store"(%q, %o1) : (vector<2x4xi32>, memref<2x4xi32>) -> ()\n'
        '"mosaic_gpu.vector_store"(%r, %o2) : (vector<2x4xi32>, memref<2x4xi32>) -> ()'
    )
    module = _module(
        body,
        [
            ("a", "vector<2x4xi32>"),
            ("b", "vector<2x4xi32>"),
            ("o1", "memref<2x4xi32>"),
            ("o2", "memref<2x4xi32>"),
        ],
    )
    a, b, *_ = _inputs(module)
    q, r = run(module)
    for x, y, qq, rr in zip(a.ravel(), b.ravel(), q.ravel(), r.ravel(), strict=True):
        x, y = int(x), int(y)
        if y == 0:
            continue
        expected_q = abs(x) // abs(y) * (1 if (x < 0) == (y < 0) else -1)
        assert (qq, rr) == (expected_q, x - expected_q * y)


def test_loop_carries_values() -> None:
    body = """
%c0 = arith.constant 0 : index
%c3 = arith.constant 3 : index
%c1 = arith.constant 1 : index
%r = scf.for %i = %c0 to %c3 step %c1 iter_args(%acc = %x) -> (vector<4x8xf32>) {
  %n = arith.addf %acc, %y : vector<4x8xf32>
  scf.yield %n : vector<4x8xf32>
}
"mosaic_gpu.vector_store"(%r, %out) : (vector<4x8xf32>, memref<4x8xf32>) -> ()
"""
    module = _module(body, [("x", VEC), ("y", VEC), ("out", "memref<4x8xf32>")])
    x, y, _ = _inputs(module)
    (out,) = run(module)
    np.testing.assert_array_equal(out, ((x + y) + y) + y)


def test_stores_through_a_view_reach_the_buffer() -> None:
    body = """
%v = memref.subview %out[0, 4] [4, 4] [1, 1] : memref<4x8xf32> to {VIEW}
"mosaic_gpu.vector_store"(%x, %v) : (vector<4x4xf32>, {VIEW}) -> ()
""".format(VIEW="memref<4x4xf32, strided<[8, 1], offset: 4>>")
    module = _module(body, [("x", "vector<4x4xf32>"), ("out", "memref<4x8xf32>")])
    x, before = _inputs(module)
    before = before.copy()
    (out,) = run(module)
    np.testing.assert_array_equal(out[:, 4:], x)
    np.testing.assert_array_equal(out[:, :4], before[:, :4])


def test_an_op_on_vectors_it_does_not_know_is_an_error() -> None:
    body = "%y = vector.fma %x, %x, %x : vector<4xf32>"
    with pytest.raises(NotImplementedError, match="vector.fma"):
        run(_module(body, [("x", "vector<4xf32>")]))


def test_it_notices_a_wrong_broadcast() -> None:
    """The oracle's point: the right fold of two broadcasts stores the same bits, one
    that maps the dim wrongly does not."""
    store = '"mosaic_gpu.vector_store"(%b, %out) : (vector<8x8xf32>, memref<8x8xf32>) -> ()'
    bid = "mosaic_gpu.broadcast_in_dim"
    written = f"""
%e = {bid}(%r : vector<8xf32>) <broadcast_dimensions = [0]> -> vector<8x1xf32>
%b = {bid}(%e : vector<8x1xf32>) <broadcast_dimensions = [0, 1]> -> vector<8x8xf32>
{store}
"""
    fold = f"%b = {bid}(%r : vector<8xf32>) <broadcast_dimensions = [{{}}]> -> vector<8x8xf32>"
    args = [("r", "vector<8xf32>"), ("out", "memref<8x8xf32>")]
    before = run(_module(written, args))
    assert_same_results(before, run(_module(f"{fold.format(0)}\n{store}", args)))
    with pytest.raises(AssertionError, match="differs"):
        assert_same_results(before, run(_module(f"{fold.format(1)}\n{store}", args)))


# Ops on vectors in the corpus that the evaluator does not model, and why.
NOT_MODELLED = {
    "mosaic_gpu.custom_primitive": "the user's own lane-level code (plgpu.inline_mgpu)",
    "mosaic_gpu.return": "the terminator of a custom_primitive",
    "mosaic_gpu.async_load": "a TMA gather by a vector of row indices (a copy, not a value)",
    "mosaic_gpu.async_store_smem": "a store into another block's SMEM in the cluster",
    "mosaic_gpu.multimem_load_reduce": "a reduction across devices",
}


def test_it_knows_every_op_on_vectors_of_the_corpus() -> None:
    """Every op kind with a vector operand or result in the corpus (the full one where
    present, else the bundled sample) is modelled, run by the evaluator itself
    (scf), or one of the few above."""
    _, entries = reference.selected_entries()
    context = reference.shared_context()
    unknown: dict[str, str] = {}
    for entry in entries:
        module = reference.parse(entry.path, context)
        with context:
            for op in walk(module):
                values = [*op.operands, *op.results]
                if any(isinstance(v.type, ir.VectorType) for v in values):
                    unknown.setdefault(op.name, entry.key)
    known = set(CONTROL_FLOW) | {"scf.yield", "scf.condition"} | set(NOT_MODELLED)
    missing = {name: key for name, key in unknown.items() if not is_modelled(name)}
    assert set(missing) <= known, {n: k for n, k in missing.items() if n not in known}
    assert not any(is_modelled(name) for name in NOT_MODELLED)
