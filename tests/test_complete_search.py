"""The complete search (``smalto.solve.search``): what it prunes, and how soon.

A constraint whose variables all have values but that is still open (its
expression is stuck: say, a reshape that the chosen layout does not allow) can
never hold. The complete search must drop such values as soon as it sees
them; otherwise it enumerates every assignment of unrelated variables
before giving up on each, and runs out of fuel on a few-op kernel.
"""

from __future__ import annotations

from fuzz.property import try_jax_lowering
from rule_kit import HOPPER, run_jax, run_smalto

from smalto.check import check
from smalto.solve.search import GUIDED_BUDGET

# Found by the fuzzer (seed 1796154461). JAX answers with a splat for the i16
# optimization barrier, which the barrier cannot pass (whole 32-bit registers
# only), so smalto's search in JAX's order finds nothing and the complete
# search decides. There the 4096-element value reshaped to 64x64 gets a rank-1
# tiled layout that reshape cannot take, in every combination with the other
# variables' values unless the stuck reshape is seen as failed at once.
KERNEL = """
!acc = vector<64x16xf32>
!lhs = vector<64x16xf16>
!rhs = vector<16x16xf16>
!i16 = vector<128x128xi16>
func.func @kernel() {
  %v1 = arith.constant dense<1.0> : !acc
  %v2 = arith.constant dense<1.0> : !lhs
  %v3 = arith.constant dense<1.0> : !rhs
  %v4 = "mosaic_gpu.mma"(%v1, %v2, %v3) : (!acc, !lhs, !rhs) -> !acc
  %v5 = arith.constant dense<1> : !i16
  %v6 = "mosaic_gpu.optimization_barrier"(%v5) : (!i16) -> !i16
  %s8 = arith.constant 2.0 : f32
  %v7 = vector.broadcast %s8 : f32 to vector<64x64xf32>
  %v9 = vector.shape_cast %v7 : vector<64x64xf32> to vector<64x32x2xf32>
  %v10 = arith.constant dense<1.0> : vector<4096xf32>
  %v11 = vector.shape_cast %v10 : vector<4096xf32> to vector<64x64xf32>
  %v12 = "mosaic_gpu.optimization_barrier"(%v10) : (vector<4096xf32>) -> vector<4096xf32>
  %v13 = arith.addi %v6, %v5 : !i16
  %v14 = arith.addf %v9, %v9 : vector<64x32x2xf32>
  return
}
"""


def test_jax_answers_with_a_splat_the_barrier_cannot_pass() -> None:
    messages = [v.message for v in check(run_jax(KERNEL), HOPPER)]
    assert any("multiple of 32 bits" in m for m in messages), messages


def test_a_stuck_reshape_fails_at_once_in_the_complete_search() -> None:
    # A few hundred attempts beyond the search in JAX's order; enumerating
    # around the stuck reshape took over 4000.
    module = run_smalto(KERNEL, HOPPER, fuel=GUIDED_BUDGET + 500)
    assert check(module, HOPPER) == []
    assert try_jax_lowering(module, HOPPER) is None
