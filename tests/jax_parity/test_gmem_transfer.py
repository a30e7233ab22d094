"""``GmemTransfer``: an optimized vector_load/store with a GMEM ref must coalesce.

JAX's constraints leave this lowering requirement out and JAX's own answers
break it (a 16-bit WGMMA row moves 16 bytes, half a sector). The search in
JAX's order judges it as holding, so that it walks JAX's path; its answer is
then kept only if it meets the requirement (JAX's answer, where that lowers).
Otherwise the complete searches, which enforce it, decide: over JAX's rules
(with ``wide_rows`` offered), then widened (relayouts the lowering performs
between ops); they answer with layouts that lower, or prove none does.
"""

from __future__ import annotations

import pytest
from jax.experimental.mosaic.gpu import fragmented_array as fa
from rule_kit import (
    WGMMA,
    gmem,
    in_layouts,
    jax_fails,
    kernel,
    layout_cast,
    lower_in_launch,
    op,
    out_layouts,
    parse,
    run_jax,
    run_smalto,
    smem,
    vec,
    vector_load,
    vector_store,
)

import smalto
from smalto.check import check
from smalto.constraints.language import GmemTransfer, Var
from smalto.hw import layouts as hl
from smalto.hw.transfers import Transfer
from smalto.hw.values import Reg
from smalto.infer import in_context
from smalto.program.reader import read_program
from smalto.rules import derive_system
from smalto.solve.decision import NoLayouts, Solved
from smalto.solve.evaluate import FAILS, HOLDS, OPEN, judge
from smalto.solve.options import SolveOptions
from smalto.solve.propagation import Propagation
from smalto.solve.search import decide, under_jax_rules

HOPPER = (9, 0)
BF16 = "bf16"
WIDE = hl.wide_rows(16)
TRANSFER = GmemTransfer(Var(0), (128, 128), (128, 1), 16, origin=0)


def test_wide_rows_moves_a_16bit_row_as_one_sector() -> None:
    assert WIDE.base_tile_shape == (64, 16) and WIDE.vector_length == 8


def test_jax_order_judging_ignores_it_and_the_complete_search_enforces_it() -> None:
    wgmma, wide = {0: Reg(WGMMA)}.get, {0: Reg(WIDE)}.get
    assert judge(TRANSFER, wgmma) is HOLDS
    assert judge(TRANSFER, wgmma, complete=True) is FAILS
    assert judge(TRANSFER, wide, complete=True) is HOLDS
    assert judge(TRANSFER, {0: hl.splat((128, 128))}.get, complete=True) is HOLDS
    assert judge(TRANSFER, {}.get, complete=True) is OPEN


def _wgmma_roundtrip() -> str:
    x = vec((128, 128), BF16)
    return kernel(
        [
            vector_load("x", "arg0", gmem((128, 128), BF16), x, optimized=True),
            layout_cast("y", "x", x, WGMMA),
            vector_store("y", x, "arg1", gmem((128, 128), BF16)),
        ],
        [gmem((128, 128), BF16), gmem((128, 128), BF16)],
    )


def _state(text: str) -> Propagation:
    module = parse(text)
    with in_context(module):
        program = read_program(module)
        system = derive_system(program, HOPPER)
    return Propagation(system, program, HOPPER, 10_000)


def test_the_rules_state_it_for_gmem_transfers_with_their_mode() -> None:
    state = _state(_wgmma_roundtrip())
    transfers = [c for c in state.constraints if isinstance(c, GmemTransfer)]
    assert [(c.shape, c.bitwidth, c.mode) for c in transfers] == [
        ((128, 128), 16, Transfer.OPTIMIZED)
    ] * 2
    x = vec((128, 128), BF16)
    unoptimized = kernel(
        [vector_load("x", "arg0", gmem((128, 128), BF16), x, optimized=False)],
        [gmem((128, 128), BF16)],
    )
    (transfer,) = [c for c in _state(unoptimized).constraints if isinstance(c, GmemTransfer)]
    assert transfer.mode is Transfer.UNOPTIMIZED


def test_an_unoptimized_gmem_transfer_needs_a_schedule_too() -> None:
    """Unoptimized, WGMMA moves 16-bit rows (no coalescing asked); WGMMA_TRANSPOSED
    does not move through a row-major ref at all, optimized or not: its vectors
    run down the columns (the lowering raises "Tiled strides must be a multiple
    of the vector length")."""
    unoptimized = GmemTransfer(Var(0), (64, 64), (64, 1), 16, 0, Transfer.UNOPTIMIZED)
    assert judge(unoptimized, {0: Reg(WGMMA)}.get, complete=True) is HOLDS
    transposed = {0: Reg(fa.WGMMA_TRANSPOSED_LAYOUT)}.get
    assert judge(unoptimized, transposed, complete=True) is FAILS
    text = kernel(
        [
            vector_load("x", "arg0", gmem((64, 64), BF16), vec((64, 64), BF16), optimized=False),
            layout_cast("y", "x", vec((64, 64), BF16), fa.WGMMA_TRANSPOSED_LAYOUT),
        ],
        [gmem((64, 64), BF16)],
    )
    theirs = run_jax(text)
    assert out_layouts(op(theirs, "mosaic_gpu.vector_load")) == [fa.WGMMA_TRANSPOSED_LAYOUT]
    assert any("unoptimized transfer" in v.message for v in check(theirs, HOPPER))
    with pytest.raises(Exception, match="multiple of the vector length"):
        lower_in_launch(theirs, HOPPER)
    ours = run_smalto(text)
    assert out_layouts(op(ours, "mosaic_gpu.layout_cast")) == [fa.WGMMA_TRANSPOSED_LAYOUT]
    assert check(ours, HOPPER) == []
    lower_in_launch(ours, HOPPER)


def test_an_answer_in_jax_order_that_does_not_lower_is_not_kept() -> None:
    """A bf16 value cast to WGMMA between a GMEM load and a GMEM store. JAX's
    answer loads and stores it in WGMMA: the checker flags both transfers and
    JAX's lowering rejects them. The search in JAX's order finds that answer
    too, and drops it; the complete search over JAX's rules finds none; the
    widened one moves the value in WGMMA_UPCAST_2X (2 lanes of 16 bytes a row)
    and converts it at the cast and at the store, where the lowering converts
    operands: the cast still sees WGMMA, and everything lowers."""
    text = _wgmma_roundtrip()
    theirs = run_jax(text)
    assert in_layouts(op(theirs, "mosaic_gpu.vector_store")) == [WGMMA]
    assert any(v.op == "mosaic_gpu.vector_store" for v in check(theirs, HOPPER))
    with pytest.raises(Exception, match="32 byte sectors") as rejected:
        lower_in_launch(theirs, HOPPER)
    assert type(rejected.value).__name__ == "TransferPlanDerivationError"

    ours = run_smalto(text)
    upcast = fa.WGMMA_LAYOUT_UPCAST_2X
    assert out_layouts(op(ours, "mosaic_gpu.vector_load")) == [upcast]
    assert in_layouts(op(ours, "mosaic_gpu.layout_cast")) == [WGMMA]
    assert out_layouts(op(ours, "mosaic_gpu.layout_cast")) == [WGMMA]
    assert in_layouts(op(ours, "mosaic_gpu.vector_store")) == [upcast]
    assert check(ours, HOPPER) == []
    lower_in_launch(ours, HOPPER)

    module = parse(text)
    with in_context(module):
        program = read_program(module)
        system = derive_system(program, HOPPER)
        options = SolveOptions(fuel=10_000, arch=HOPPER)
        assert isinstance(under_jax_rules(system, program, options), NoLayouts)
        decided = decide(system, program, options)
    assert isinstance(decided, Solved) and decided.state.widened


def test_the_complete_search_finds_wide_rows_for_16bit_gmem_transfers() -> None:
    """Concatenating two bf16 halves: JAX finds nothing; WGMMA satisfies JAX's
    constraints but its GMEM transfers do not coalesce; the answer's do."""
    half, full = vec((64, 128), BF16), vec((128, 128), BF16)
    text = kernel(
        [
            vector_load("a", "arg0", gmem((64, 128), BF16), half, optimized=True),
            vector_load("b", "arg1", gmem((64, 128), BF16), half, optimized=True),
            f'%c = "mosaic_gpu.vector_concat"(%a, %b) <{{dimension = 0 : i32}}> '
            f": ({half}, {half}) -> {full}",
            vector_store("c", full, "arg2", gmem((128, 128), BF16)),
        ],
        [gmem((64, 128), BF16), gmem((64, 128), BF16), gmem((128, 128), BF16)],
    )
    assert jax_fails(text)
    module = run_smalto(text)
    (layout,) = out_layouts(op(module, "mosaic_gpu.vector_concat"))
    assert layout != WGMMA
    assert judge(TRANSFER, {0: Reg(layout)}.get, complete=True) is HOLDS
    assert check(module, HOPPER) == []


def test_a_strided_transfer_of_4_bit_elements_moves_whole_bytes() -> None:
    """``load_strided`` (and strided stores) refuse sub-byte vectors that are not
    whole bytes ("Vector length should be a multiple of byte size"): an i4 load
    cast to a strided layout of 1 element a thread has no layout that lowers.
    JAX's answer is that layout; the checker flags the load, JAX's lowering
    raises, smalto refuses. (Found by the fuzzer: its regression replays it.)"""
    ref, v = smem((128, 64), "i4"), vec((128, 64), "i4")
    strided = fa.WGStridedFragLayout((128, 64), 1)
    text = kernel(
        [
            f'%r = "mosaic_gpu.slice_smem"() <{{offset = 0 : i32}}> : () -> {ref}',
            vector_load("x", "r", ref, v),
            layout_cast("y", "x", v, strided),
        ]
    )
    theirs = run_jax(text)
    assert any("moves vectors of whole bytes" in v.message for v in check(theirs, HOPPER))
    with pytest.raises(NotImplementedError, match="multiple of byte size"):
        lower_in_launch(theirs, HOPPER)
    with pytest.raises(smalto.InferenceError):
        run_smalto(text)
    # Two elements a thread make a byte: that lowers.
    wide = text.replace("WGStridedFragLayout<[128, 64], 1>", "WGStridedFragLayout<[128, 64], 2>")
    ours = run_smalto(wide)
    assert check(ours, HOPPER) == []
    lower_in_launch(ours, HOPPER)
