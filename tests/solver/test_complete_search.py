"""The complete search (``smalto.solve.search``): what it prunes, and how soon.

A constraint whose variables all have values but that is still open (its
expression is stuck: say, a reshape that the chosen layout does not allow) can
never hold. The complete search must drop such values as soon as it sees
them; otherwise it enumerates every assignment of unrelated variables
before giving up on each, and runs out of fuel on a few-op kernel.

Likewise, variables that no constraint links are independent: the search
solves them part by part, so that a part without a solution ends the search
instead of being retried under every combination of the others' values.
"""

from __future__ import annotations

import functools

import pytest
import reference
from fuzz.property import try_jax_lowering
from rule_kit import HOPPER, run_jax, run_smalto

import smalto
from smalto.check import check
from smalto.program.reader import read_program
from smalto.rules import consumers, derive_system
from smalto.solve import domains
from smalto.solve.complete import CompleteSearch
from smalto.solve.propagation import Propagation
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


# Found by the fuzzer (seed 20261202). The 128x256 value is loaded in one branch
# from a row-major ref and in another from a transposed one, unoptimized, and
# strictly cast to a strided layout there: no register layout moves through
# the transposed ref and is that strided layout (JAX's pass answers with the
# strided layout, which the transposed ref cannot take; without the strict
# cast, the value loaded transposed converts to WGMMA where the branch yields
# it). The row and tile values beside it are unrelated to it and have many
# layouts each.
INDEPENDENT_PARTS = """
#strided = #mosaic_gpu.WGStridedFragLayout<[128, 256], 4>
!big = vector<128x256xf32>
!ref = memref<128x256xf32, #gpu.address_space<workgroup>>
!src = memref<256x128xf32, #gpu.address_space<workgroup>>
!view = memref<128x256xf32, strided<[1, 128]>, #gpu.address_space<workgroup>>
!row = vector<128xf32>
!rowref = memref<128xf32, #gpu.address_space<workgroup>>
!tile = vector<64x64xf16>
!stack = memref<2x64x64xf16, #gpu.address_space<workgroup>>
!sub = memref<64x64xf16, strided<[64, 1], offset: ?>, #gpu.address_space<workgroup>>
func.func @kernel() {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %pair:2 = scf.index_switch %c0 -> !row, !tile
  case 0 {
    %big = scf.index_switch %c1 -> !big
    case 0 {
      %r = "mosaic_gpu.slice_smem"() <{offset = 0 : i32}> : () -> !ref
      %x = "mosaic_gpu.vector_load"(%r) <{optimized = false}> : (!ref) -> !big
      scf.yield %x : !big
    }
    case 1 {
      %s = arith.constant 2.0 : f32
      %x = vector.broadcast %s : f32 to !big
      scf.yield %x : !big
    }
    default {
      %r = "mosaic_gpu.slice_smem"() <{alias_id = 1 : i64, offset = 65536 : i32}> : () -> !src
      %t = memref.transpose %r (d0, d1) -> (d1, d0) : !src to !view
      %x = "mosaic_gpu.vector_load"(%t) <{optimized = false}> : (!view) -> !big
      %y = "mosaic_gpu.layout_cast"(%x) <{new_layout = #strided, strict = true}> : (!big) -> !big
      scf.yield %y : !big
    }
    %rr = "mosaic_gpu.slice_smem"() <{offset = 196608 : i32}> : () -> !rowref
    %row = "mosaic_gpu.vector_load"(%rr) <{optimized = false}> : (!rowref) -> !row
    %st = "mosaic_gpu.slice_smem"() <{offset = 262144 : i32}> : () -> !stack
    %sub = memref.subview %st[%c1, 0, 0] [1, 64, 64] [1, 1, 1] : !stack to !sub
    %tile = "mosaic_gpu.vector_load"(%sub) : (!sub) -> !tile
    scf.yield %row, %tile : !row, !tile
  }
  case 1 {
    %row = arith.constant dense<1.0> : !row
    %sum = arith.addf %row, %row : !row
    %tile = arith.constant dense<1.0> : !tile
    scf.yield %row, %tile : !row, !tile
  }
  default {
    %row = arith.constant dense<1.0> : !row
    %s = arith.constant 2.0 : f16
    %tile = vector.broadcast %s : f16 to !tile
    scf.yield %row, %tile : !row, !tile
  }
  return
}
"""


def test_jax_answers_independent_parts_with_a_layout_a_ref_cannot_take() -> None:
    messages = [v.message for v in check(run_jax(INDEPENDENT_PARTS), HOPPER)]
    assert any("along the minor dim, which has stride" in m for m in messages), messages


def test_an_unsatisfiable_part_ends_the_complete_search() -> None:
    # Searching all parts as one ran out of 5000 attempts before proving this.
    with pytest.raises(smalto.InferenceError) as failure:
        run_smalto(INDEPENDENT_PARTS, HOPPER, fuel=GUIDED_BUDGET + 1000)
    assert "fuel" not in str(failure.value)
    assert "the ref supports" in str(failure.value)


@pytest.mark.parametrize("widened", [False, True])
def test_slots_alike_share_a_domain_but_not_its_list(widened: bool, monkeypatch) -> None:
    """Each slot's domain is what ``domains.domain`` gives it alone (made once per kind of
    slot, then copied); before closing, so ``close`` can extend one without the others."""
    made: list[dict[int, list]] = []
    monkeypatch.setattr(
        domains, "close", lambda *args: made.append({s: list(v) for s, v in args[0].items()})
    )
    compared = 0
    for entry in reference.bundled_entries()[:40]:
        module = reference.parse(entry.path, reference.shared_context())
        with module.context:
            program = read_program(module, consumers())
            system = derive_system(program, entry.arch)
            state = Propagation(system, program, entry.arch, 1000, widened=widened)
            complete = CompleteSearch(state)
            if not state.propagate_root() or not complete._start_complete_phase():
                continue
            made.clear()
            complete._prepare_domains()
            prepared = made[0] if widened else complete.domains
            mentioned = domains.constants_in(state.constraints, system.fixed)
            extra = domains.wide_layouts(
                state.constraints[ci].bitwidth for ci in state.complete_only
            )
            for slot, values in prepared.items():
                alone = domains.domain(
                    system.variables[slot],
                    functools.partial(state.fits, slot),
                    mentioned,
                    state.divides.get(slot),
                    min(map(len, state.shapes[slot])),
                    extra,
                    widened,
                )
                assert values == alone, (entry.key, slot)
            lists = list(complete.domains.values())
            assert len({id(values) for values in lists}) == len(lists)
            compared += len(prepared)
    assert compared > 100
