"""The trials of ``equivalence.assert_equivalent``: random scalars that drive every
branch and loop, special values in the inputs, coverage that is insisted on,
and the NaN-aware bit-exact comparison."""

from __future__ import annotations

import numpy as np
import pytest
from equivalence import assert_equivalent, same_bits
from evaluator import MAX_ITERATIONS, run
from evaluator_inputs import random_array
from mlir_snippets import func_module, parse

BID = "mosaic_gpu.broadcast_in_dim"
VEC = "vector<4x8xf32>"
STORE = '"mosaic_gpu.vector_store"(%{value}, %out) : (vector<4x8xf32>, memref<4x8xf32>) -> ()'
OUT = ("out", "memref<4x8xf32>")


def _self_check(body: str, args: list[tuple[str, str]], **kwargs: int):
    """A module compared with itself: what the trials ran."""
    module = parse(func_module(body, [*args, OUT]))
    return module, assert_equivalent(module, module, **kwargs)


def test_an_if_on_an_argument_runs_both_ways() -> None:
    body = f"""
%y = scf.if %flag -> ({VEC}) {{
  %e = math.exp %x : {VEC}
  scf.yield %e : {VEC}
}} else {{
  scf.yield %x : {VEC}
}}
{STORE.format(value="y")}
"""
    _, verdict = _self_check(body, [("x", VEC), ("flag", "i1")])
    assert verdict.coverage == {(0, 0), (0, 1)}


def test_an_if_on_a_made_up_scalar_runs_both_ways() -> None:
    """An op the evaluator does not model (here ``nvvm.elect.sync``) gives random scalars."""
    body = f"""
%elected = nvvm.elect.sync -> i1
scf.if %elected {{
  {STORE.format(value="x")}
}}
"""
    _, verdict = _self_check(body, [("x", VEC)])
    assert (0, 0) in verdict.coverage


def test_every_case_of_a_switch_on_an_argument_runs() -> None:
    body = f"""
%y = scf.index_switch %which -> {VEC}
case 0 {{
  %a = math.exp %x : {VEC}
  scf.yield %a : {VEC}
}}
case 3 {{
  %b = arith.negf %x : {VEC}
  scf.yield %b : {VEC}
}}
default {{
  scf.yield %x : {VEC}
}}
{STORE.format(value="y")}
"""
    _, verdict = _self_check(body, [("x", VEC), ("which", "index")])
    assert verdict.coverage == {(0, 0), (0, 1), (0, 2)}


def test_a_loop_bounded_by_an_argument_runs_with_several_trip_counts() -> None:
    body = f"""
%c0 = arith.constant 0 : index
%c1 = arith.constant 1 : index
%y = scf.for %i = %c0 to %n step %c1 iter_args(%t = %x) -> ({VEC}) {{
  %d = arith.addf %t, %t : {VEC}
  scf.yield %d : {VEC}
}}
{STORE.format(value="y")}
"""
    _, verdict = _self_check(body, [("x", VEC), ("n", "index")])
    (counts,) = verdict.trip_counts.values()
    assert len(counts) >= 2


def test_a_branch_that_never_runs_fails_the_check() -> None:
    """Coverage is insisted on: a branch on vectors that no trial takes is an error,
    not a pass."""
    body = f"""
%false = arith.constant false
%y = scf.if %false -> ({VEC}) {{
  %e = math.exp %x : {VEC}
  scf.yield %e : {VEC}
}} else {{
  scf.yield %x : {VEC}
}}
{STORE.format(value="y")}
"""
    with pytest.raises(AssertionError, match=r"region 0 of scf.if .* never ran"):
        _self_check(body, [("x", VEC)], max_trials=8)


def test_a_loop_with_a_constant_bound_need_not_vary() -> None:
    body = f"""
%c0 = arith.constant 0 : index
%c1 = arith.constant 1 : index
%c2 = arith.constant 2 : index
%y = scf.for %i = %c0 to %c2 step %c1 iter_args(%t = %x) -> ({VEC}) {{
  %d = arith.addf %t, %t : {VEC}
  scf.yield %d : {VEC}
}}
{STORE.format(value="y")}
"""
    _, verdict = _self_check(body, [("x", VEC)])
    assert verdict.trials == 6 and verdict.trip_counts == {0: {2}}


def test_a_loop_that_does_not_end_is_an_error() -> None:
    body = """
%t = arith.constant true
scf.while : () -> () {
  scf.condition(%t)
} do {
  scf.yield
}
"""
    module = parse(func_module(body))
    with pytest.raises(NotImplementedError, match=f"more than {MAX_ITERATIONS}"):
        run(module)


@pytest.mark.parametrize("dtype", [np.float32, np.float16])
def test_the_trials_feed_special_values(dtype) -> None:
    def draw(trial: int) -> np.ndarray:
        return random_array(np.random.default_rng(trial), (16, 32), dtype, trial=trial)

    plain, few, many = draw(0), draw(1), draw(2)
    assert np.isfinite(plain).all() and not (plain == 0).any()
    assert np.isnan(few).any()
    for values in (few, many):  # one line of -0.0 or +0.0 along each dim
        zero = values == 0
        assert zero.all(axis=0).any() and zero.all(axis=1).any()
    assert np.isnan(many).any() and np.isposinf(many).any() and np.isneginf(many).any()
    assert (np.signbit(many) & (many == 0)).any()
    assert (np.abs(many) == np.finfo(dtype).max).any()
    assert np.isfinite(draw(1)[~np.isnan(draw(1))]).sum() > 0.9 * few.size


def test_the_trials_alternate_small_and_wide_integers_with_extremes() -> None:
    small = random_array(np.random.default_rng(0), (64,), np.int32, trial=0)
    wide = random_array(np.random.default_rng(1), (64,), np.int32, trial=1)
    assert small.min() >= -2 and small.max() < 6
    assert wide.max() > 100 and {-(2**31), 2**31 - 1} & set(wide.tolist())


def test_same_bits_is_exact_but_for_nan_payloads() -> None:
    a = np.array([np.nan, 0.0, 1.0, -0.0], np.float32)
    b = a.copy()
    b.view(np.uint32)[0] = 0xFFC00001  # another NaN, sign and payload
    assert same_bits(a, b).tolist() == [True, True, True, True]
    b[3] = 0.0
    assert same_bits(a, b).tolist() == [True, True, True, False]
    assert not same_bits(np.array([1], np.int8), np.array([-1], np.int8)).any()


def test_a_difference_is_reported_with_its_trial_and_place() -> None:
    body = f"{STORE.format(value='x')}"
    module = parse(func_module(body, [("x", VEC), OUT]))
    other = parse(
        func_module(f"%y = arith.negf %x : {VEC}\n{STORE.format(value='y')}", [("x", VEC), OUT]),
        module.context,
    )
    with pytest.raises(AssertionError, match=r"trial 0: buffer 0 .* differs at 32 elements"):
        assert_equivalent(module, other)
