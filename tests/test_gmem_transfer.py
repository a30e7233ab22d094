"""``GmemTransfer``: an optimized vector_load/store with a GMEM ref must coalesce.

JAX's constraints leave this lowering requirement out and JAX's own answers
break it (a 16-bit WGMMA row moves 16 bytes, half a sector), so the search in
JAX's order ignores it, keeping JAX's answer; smalto's complete search, which
runs only where that one finds nothing, enforces it (and offers ``wide_rows``).
"""

from __future__ import annotations

from rule_kit import (
    WGMMA,
    gmem,
    in_layouts,
    jax_fails,
    kernel,
    layout_cast,
    op,
    out_layouts,
    parse,
    run_jax,
    run_smalto,
    vec,
    vector_load,
    vector_store,
)

from smalto.check import check
from smalto.constraints import GmemTransfer, Var
from smalto.hw import layouts as hl
from smalto.hw.values import Reg
from smalto.infer import in_context
from smalto.program import read_program
from smalto.rules import derive_system
from smalto.solve.evaluate import FAILS, HOLDS, OPEN, judge
from smalto.solve.search import Solver

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
            vector_load("x", "arg0", gmem((128, 128), BF16), x),
            layout_cast("y", "x", x, WGMMA),
            vector_store("y", x, "arg1", gmem((128, 128), BF16)),
        ],
        [gmem((128, 128), BF16), gmem((128, 128), BF16)],
    )


def _solver(text: str) -> tuple[Solver, object]:
    module = parse(text)
    with in_context(module):
        program = read_program(module)
        system = derive_system(program, HOPPER)
    return Solver(system, program, HOPPER, fuel=10_000), module


def test_the_rules_state_it_for_optimized_gmem_transfers_only() -> None:
    solver, _ = _solver(_wgmma_roundtrip())
    transfers = [c for c in solver.constraints if isinstance(c, GmemTransfer)]
    assert [(c.shape, c.bitwidth) for c in transfers] == [((128, 128), 16)] * 2
    x = vec((128, 128), BF16)
    unoptimized = kernel(
        [vector_load("x", "arg0", gmem((128, 128), BF16), x, optimized=False)],
        [gmem((128, 128), BF16)],
    )
    solver, _ = _solver(unoptimized)
    assert not any(isinstance(c, GmemTransfer) for c in solver.constraints)


def test_jax_order_keeps_jaxs_answer_the_complete_search_rejects_it() -> None:
    """A bf16 WGMMA store: JAX's answer (its lowering rejects it, the checker
    flags it) is smalto's too; the complete search alone finds no layout."""
    text = _wgmma_roundtrip()
    ours, theirs = run_smalto(text), run_jax(text)
    assert in_layouts(op(ours, "mosaic_gpu.vector_store")) == [WGMMA]
    assert in_layouts(op(theirs, "mosaic_gpu.vector_store")) == [WGMMA]
    assert any(v.op == "mosaic_gpu.vector_store" for v in check(ours, HOPPER))
    solver, module = _solver(text)
    with in_context(module):  # type: ignore[arg-type]
        assert solver.solve()
        solver, module = _solver(text)
        assert not solver.solve(guided=False)


def test_the_complete_search_finds_wide_rows_for_16bit_gmem_transfers() -> None:
    """Concatenating two bf16 halves: JAX finds nothing; WGMMA satisfies JAX's
    constraints but its GMEM transfers do not coalesce; the answer's do."""
    half, full = vec((64, 128), BF16), vec((128, 128), BF16)
    text = kernel(
        [
            vector_load("a", "arg0", gmem((64, 128), BF16), half),
            vector_load("b", "arg1", gmem((64, 128), BF16), half),
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
