"""The widened complete search and the layouts it offers (issue #17).

``search.decide`` runs JAX's order, then the complete search over JAX's rules,
and only where those find nothing that lowers a widened one: producer to
consumer relayouts the lowering performs, domains closed under the
expressions between variables (``domains.close``), tilings of the minor dim
alone (``hl.minor_only``). These tests pin each piece on small modules; the
Pallas kernels that need them are in ``test_lowering_valid.py``.
"""

from __future__ import annotations

import pytest
import reference
from jax.experimental.mosaic.gpu import fragmented_array as fa
from jax.experimental.mosaic.gpu import tcgen05
from rule_kit import (
    HOPPER,
    WGMMA,
    gmem,
    kernel,
    layout_cast,
    parse,
    smem,
    vec,
    vector_load,
    vector_store,
)

from smalto.constraints.language import GmemTransfer
from smalto.hw import layouts as hl
from smalto.hw.values import Reg, Tmem
from smalto.infer import in_context
from smalto.program.reader import read_program
from smalto.rules import consumers, derive_system
from smalto.solve import domains, search
from smalto.solve.decision import Decision, Solved
from smalto.solve.options import SolveOptions
from smalto.solve.propagation import Propagation
from smalto.solve.search import InJaxOrder, decide


def _decided(text: str, fuel: int = 10_000) -> Decision:
    module = parse(text)
    with in_context(module):
        program = read_program(module, consumers())
        return decide(derive_system(program, HOPPER), program, SolveOptions(fuel=fuel, arch=HOPPER))


def _jax_order_breaks(text: str, arch: tuple[int, int] = HOPPER) -> list:
    """What the answer in JAX's order breaks (``InJaxOrder``, which then decides nothing)."""
    module = parse(text)
    with in_context(module):
        program = read_program(module, consumers())
        in_jax_order = InJaxOrder(program)
        state = Propagation(derive_system(program, arch), program, arch, 10_000)
        assert in_jax_order.run(state) is None
    return in_jax_order.answer_breaks


# --- layouts ---------------------------------------------------------------------------------


def test_minor_only_tiles_the_minor_dim_and_reduces_over_rows_within_threads() -> None:
    """The issue's layout for 32-row chunks: tiles ((1, 128), (32,), (1,)), warps and
    lanes along the minor dim; reducing over dim 0 stays in each thread and
    leaves the rank-1 tiling of the columns."""
    chunk = hl.minor_only(2, 1)
    assert chunk.tiling.tiles == ((1, 128), (32,), (1,))
    assert chunk.warp_dims == (-3,) and chunk.lane_dims == (-2,)
    assert chunk.reduce([0]) == hl.minor_only(1, 1)
    assert hl.fits(Reg(chunk), (32, 128)) and not hl.fits(Reg(chunk), (32, 64))
    assert hl.minor_only(2, 2).base_tile_shape == (1, 256)


@pytest.mark.parametrize("shape", [(64, 256), (128, 256), (192, 64), (256, 128), (32, 32)])
@pytest.mark.parametrize("bitwidth", [4, 8, 16, 32])
def test_the_tmem_native_layouts_offered_are_those_that_fit(
    shape: tuple[int, int], bitwidth: int
) -> None:
    """``tmem_native_layouts`` builds none for fewer rows than TMEM has (a first call
    need not make JAX's layouts it would throw away), and leaves out none that fits."""
    fitting = [
        Reg(fa.tmem_native_layout(vector))
        for vector in (1, 2, 4, 8, 16, 32)
        if vector * bitwidth <= 128 and hl.fits(Reg(fa.tmem_native_layout(vector)), shape)
    ]
    offered = domains.tmem_native_layouts(shape, bitwidth)
    assert offered == [v for v in fitting if v.layout != fa.TMEM_NATIVE_LAYOUT]
    if shape[0] % 128:
        assert not fitting
    else:
        assert offered


def test_every_tmem_native_layout_has_a_tile_of_all_tmem_rows() -> None:
    """What lets ``tmem_native_layouts`` and the relayout check skip building them."""
    for vector in (1, 2, 4, 8, 16, 32, 64, 128):
        assert fa.tmem_native_layout(vector).tiling.tiles[0][0] == hl.TMEM_ROWS
    # And a relayout between two of them is still allowed, between others not.
    native = [Reg(fa.tmem_native_layout(vector)) for vector in (1, 2, 4)]
    assert hl.relayout_allowed(native[0], native[2], 16, strict=False)
    assert not hl.relayout_allowed(native[0], Reg(hl.wide_rows(16)), 16, strict=False)


def test_a_tmem_layout_takes_vectors_of_one_or_a_whole_column() -> None:
    """TMEMLayout.check_type: 1 element a vector, or 32 bits of them."""
    packed = Tmem(tcgen05.tmem_default_layout(2))
    assert hl.tmem_fits(packed, (128, 128), 16)
    assert not hl.tmem_fits(packed, (128, 128), 32)
    assert hl.tmem_fits(Tmem(tcgen05.tmem_default_layout(1)), (128, 128), 16)


def test_closing_domains_carries_a_rank3_layout_to_a_broadcast_source() -> None:
    """A (4, 64) value broadcast into (4, 64, 128): its domain gains WGMMA lifted to
    rank 3 reduced over the broadcast dim, through the producer-to-consumer
    edge as well (the load that produces it)."""
    x, s = vec((4, 64, 128), "f32"), vec((4, 64), "f32")
    text = kernel(
        [
            vector_load("s", "arg0", gmem((4, 64), "f32"), s),
            f"%b = mosaic_gpu.broadcast_in_dim(%s : {s}) <broadcast_dimensions = [0, 1]> -> {x}",
            vector_store("b", x, "arg1", gmem((4, 64, 128), "f32")),
        ],
        [gmem((4, 64), "f32"), gmem((4, 64, 128), "f32")],
    )
    module = parse(text)
    with in_context(module):
        program = read_program(module, consumers())
        system = derive_system(program, HOPPER)
    root = list(range(len(system.variables)))
    table = {
        v.id: domains.domain(v, lambda value: True, [], None, None, (), True)
        for v in system.variables
    }
    target = Reg(hl.lifted(WGMMA, 3).reduce([2]))  # type: ignore[union-attr]
    loaded = next(v.id for v in system.variables if v.shape == (4, 64))
    assert target not in table[loaded]
    domains.close(table, system.constraints, root, lambda slot, value: hl.fits(value, (4, 64)))
    small = [v.id for v in system.variables if v.shape == (4, 64)]
    assert all(target in table[v] for v in small)


# --- the phases of decide ----------------------------------------------------------------------


def test_a_kernel_jax_solves_is_decided_in_jax_order() -> None:
    x = vec((64, 128), "f32")
    text = kernel(
        [vector_load("x", "arg0", gmem((64, 128), "f32"), x, optimized=True)],
        [gmem((64, 128), "f32")],
    )
    decided = _decided(text)
    assert isinstance(decided, Solved) and decided.in_jax_order and not decided.state.widened


def test_the_requirements_jaxs_answer_breaks_are_kept_for_the_diagnosis() -> None:
    """A bf16 WGMMA value loaded from and stored to GMEM: the answer in JAX's order
    breaks both transfers (it gave them WGMMA); the widened search converts."""
    x, g = vec((128, 128), "bf16"), gmem((128, 128), "bf16")
    text = kernel(
        [
            vector_load("x", "arg0", g, x, optimized=True),
            layout_cast("y", "x", x, WGMMA),
            vector_store("y", x, "arg1", g),
        ],
        [g, g],
    )
    decided = _decided(text)
    assert isinstance(decided, Solved) and decided.state.widened and not decided.in_jax_order
    broken = _jax_order_breaks(text)
    assert [type(c) for c, _ in broken] == [GmemTransfer, GmemTransfer]
    assert {value for _, value in broken} == {Reg(WGMMA)}


def test_where_jaxs_rules_have_an_answer_that_lowers_the_widened_search_is_never_made(
    monkeypatch,
) -> None:
    """A Blackwell MMA kernel whose answer in JAX's order breaks a GMEM transfer: the
    complete search over JAX's rules finds one that lowers, and that is the answer;
    the widened search, whose wider domains ask the lowering's transfer schedule about
    more layouts, is not made at all."""
    made: list[object] = []
    widest = search.widest

    def watched(*args: object, **kwargs: object) -> object:
        made.append(args)
        return widest(*args, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr(search, "widest", watched)
    blackwell = (10, 0)
    path = (
        reference.BUNDLED_ROOT
        / "mosaic_tests"
        / "MosaicGpuDialectTCGen05Test.test_tcgen05_mma30.mlir"
    )
    text = path.read_text()
    module = parse(text)
    with in_context(module):
        program = read_program(module, consumers())
        options = SolveOptions(fuel=10_000, arch=blackwell)
        decided = search.decide(derive_system(program, blackwell), program, options)
    assert isinstance(decided, Solved) and not decided.in_jax_order
    assert not decided.state.widened and decided.state.complete
    assert [type(c) for c, _ in _jax_order_breaks(text, blackwell)] == [GmemTransfer]
    assert made == []


def test_an_smem_ref_without_transforms_is_offered_tilings_at_rank_3() -> None:
    """(The rank-3 SMEM buffer of a row-scale kernel.) The 2-D swizzled tilings
    apply to its two minor dims and move WGMMA lifted to rank 3."""
    ref = smem((4, 64, 128), "f32")
    text = kernel(
        [
            f'%r = "mosaic_gpu.slice_smem"() <{{offset = 0 : i32}}> : () -> {ref}',
            vector_load("x", "r", ref, vec((4, 64, 128), "f32")),
            layout_cast("y", "x", vec((4, 64, 128), "f32"), hl.lifted(WGMMA, 3)),  # type: ignore[arg-type]
        ]
    )
    decided = _decided(text)
    assert isinstance(decided, Solved)
    assert any(getattr(value, "tiling", None) == (8, 32) for value in decided.state.solution()), (
        decided.state.solution()
    )
