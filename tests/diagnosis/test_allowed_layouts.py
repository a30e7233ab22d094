"""An op's requirement on one value is read as the layouts it allows (issue #35, part 2).

A rule may state what an op needs of a value as a fixed layout (``Fixed``) or as the
layouts it allows (``OneOf``); the diagnosis, its hints, its code and the pictures read
both through ``allowed_layouts``, so a fixed layout is the case of one option:

- a rule that allows an 8-bit wgmma A operand in registers WGMMA as well as WGMMA_8BIT
  (a ``OneOf`` where the real rule fixes WGMMA_8BIT) leaves a failing kernel its core,
  its hint and its picture, each now naming both options;
- a ``OneOf`` of one option gives exactly the diagnosis a ``Fixed`` gives.

JAX's own sentence is the one place the two differ: JAX states a fixed layout as an
assignment, known before its propagation starts, and options as a constraint, so the
sentence it picks depends on which (``smalto.diagnose.jax_phrases``).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from jax.experimental.mosaic.gpu import fragmented_array as fa
from rule_kit import WGMMA, WGMMA_8BIT, kernel, layout_attr_text, parse, shared_context

import smalto
from smalto.constraints.language import Fixed, OneOf, Var, allowed_layouts
from smalto.errors import FAILURE_PREFIX
from smalto.hw.values import Const, Reg
from smalto.program.reader import read_program
from smalto.report.conflict_layouts import Clash, conflict_clashes
from smalto.rules import consumers
from smalto.rules.context import RuleContext

HOPPER, BLACKWELL = (9, 0), (10, 0)
UNSAT = Path(__file__).parents[1] / "unsat"
# Ops whose fixed layouts are the user's own annotations (what an edit retargets), not an
# op's requirement: they stay fixed in the tests below.
ANNOTATIONS = frozenset(
    {
        "mosaic_gpu.layout_cast",
        "mosaic_gpu.tmem_layout_cast",
        "mosaic_gpu.with_transforms",
        "mosaic_gpu.custom_primitive",
    }
)


def _state_as_options(
    monkeypatch: pytest.MonkeyPatch,
    options: Callable[[Fixed], tuple[Const, ...]] | None = None,
    what: str | None = None,
) -> None:
    """Rules state what ops fix as a ``OneOf``: of ``options(fixed)`` where given, else of
    the fixed layout alone; only for the operand ``what`` where given, and never for an
    annotation."""
    fix = RuleContext.fix

    def stated_as_options(
        self: RuleContext, var: int, value: Const, op: Any, *args: Any, **kw: Any
    ) -> None:
        fix(self, var, value, op, *args, **kw)  # its checks (a value that cannot fit) as they are
        fixed = self.system.fixed[-1]
        if op.name in ANNOTATIONS or (what is not None and fixed.what != what):
            return
        self.system.fixed.pop()
        allowed = options(fixed) if options is not None else (fixed.value,)
        self.require(OneOf(Var(fixed.var), allowed, fixed.origin, fixed.what))

    monkeypatch.setattr(RuleContext, "fix", stated_as_options)


def _failure(text: str, arch: tuple[int, int]) -> tuple[smalto.InferenceError, list[Clash]]:
    """The error of a module smalto cannot lay out, and the pictures of its first problem."""
    with shared_context():
        module = parse(text)
        with pytest.raises(smalto.InferenceError) as failed:
            smalto.infer_layout(module, arch=arch)
        error = failed.value
        str(error)  # the diagnosis, made while the module lives
        conflict = error.conflict
        program = read_program(module, consumers())
        clashes = conflict_clashes(program, list(conflict.core), arch)  # type: ignore[union-attr]
    return error, clashes


# --- the example: an 8-bit A operand allowed WGMMA as well -------------------------

A_OPERAND = "the register operand A"


def _cast(name: str, value: str, ty: str, layout: str) -> str:
    return (
        f'%{name} = "mosaic_gpu.layout_cast"(%{value}) {{new_layout = {layout}}} : ({ty}) -> {ty}'
    )


def _i8_wgmma(a_layout: str) -> str:
    """An i8 wgmma whose A operand in registers is cast to ``a_layout`` first."""
    acc_ty, a_ty = "vector<64x128xi32>", "vector<64x64xi8>"
    b8 = "memref<128x64xi8, #gpu.address_space<workgroup>>"
    b8_t = "memref<64x128xi8, strided<[1, 64]>, #gpu.address_space<workgroup>>"
    wgmma = layout_attr_text(WGMMA)
    return kernel(
        [
            f"%acc_c = arith.constant dense<0> : {acc_ty}",
            _cast("acc", "acc_c", acc_ty, wgmma),
            f"%a_c = arith.constant dense<1> : {a_ty}",
            _cast("a", "a_c", a_ty, a_layout),
            f'%b0 = "mosaic_gpu.slice_smem"() <{{offset = 65536 : i32}}> : () -> {b8}',
            f"%b = memref.transpose %b0 (i, j) -> (j, i) : {b8} to {b8_t}",
            f'%r = "mosaic_gpu.wgmma"(%acc, %a, %b) : ({acc_ty}, {a_ty}, {b8_t}) -> {acc_ty}',
        ]
    )


def _also_wgmma(fixed: Fixed) -> tuple[Const, ...]:
    return (fixed.value, Reg(WGMMA)) if fixed.value == Reg(WGMMA_8BIT) else (fixed.value,)


def _a_transposed() -> str:
    return _i8_wgmma(layout_attr_text(fa.WGMMA_TRANSPOSED_LAYOUT))


def _hint(error: smalto.InferenceError) -> list[str]:
    return [line for line in str(error).splitlines() if line.startswith(("note:", "suggestion:"))]


def test_an_operand_allowed_two_layouts_keeps_its_hint_core_and_picture(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    fixed, fixed_clashes = _failure(_a_transposed(), HOPPER)
    assert "must be WGMMA_8BIT: it is the register operand A of `mosaic_gpu.wgmma`" in str(fixed)
    assert _hint(fixed) == [
        "note: %1 is WGMMA_TRANSPOSED but `mosaic_gpu.wgmma` needs WGMMA_8BIT, and no "
        "relayout between them is supported: change one of the layout casts or the op that "
        "fixes one of them"
    ]
    assert [c.title for c in fixed_clashes] == [
        "{0} cannot be both WGMMA_TRANSPOSED and WGMMA_8BIT"
    ]

    _state_as_options(monkeypatch, _also_wgmma, A_OPERAND)
    options, options_clashes = _failure(_a_transposed(), HOPPER)
    # The same core: the same ops, the same requirement on A (now its two options).
    core = options.conflict.core  # type: ignore[union-attr]
    assert [e.origin for e in core] == [e.origin for e in fixed.conflict.core]  # type: ignore[union-attr]
    (stated,) = [e for e in core if isinstance(e, OneOf)]
    assert stated.allowed == (Reg(WGMMA_8BIT), Reg(WGMMA)) and stated.what == A_OPERAND
    # The hint kept, naming both options.
    assert _hint(options) == [
        "note: %1 is WGMMA_TRANSPOSED but `mosaic_gpu.wgmma` needs one of WGMMA_8BIT; "
        "WGMMA, and no relayout to any of them is supported: change one of the layout "
        "casts or the op that fixes one of them"
    ]
    # The picture: the same two sides, titled with both options (not "needs WGMMA_8BIT").
    assert [c.title for c in options_clashes] == [
        "{0} cannot be both WGMMA_TRANSPOSED and one of WGMMA_8BIT; WGMMA"
    ]
    sides = [[(s.value, s.layout, s.wanted_by) for s in c.sides] for c in options_clashes]
    assert sides == [[(s.value, s.layout, s.wanted_by) for s in c.sides] for c in fixed_clashes]
    # The code: a value required to have two layouts, either way.
    assert options.conflict.code == fixed.conflict.code == "SM001"  # type: ignore[union-attr]
    # JAX's sentence differs, as JAX's would: with A's layout an assignment JAX's
    # propagation starts from it and names the equality that fails; with A's options a
    # constraint, the round that fails began without A's layout.
    assert str(fixed).startswith(
        f"{FAILURE_PREFIX}: expected register layouts WGMMA_TRANSPOSED and WGMMA_8BIT"
    )
    assert str(options).startswith(f"{FAILURE_PREFIX}. This should only happen")


# --- one option is a fixed layout -------------------------------------------------------------

# Kernels whose core holds a layout an op (not a cast) fixes: a TMEM accumulator's layout,
# a wgmma accumulator.
ONE_OPTION_KERNELS = {
    "pallas_tmem_acc_declared_collective": BLACKWELL,
    "pallas_tmem_acc_m64_layout_not_collective": BLACKWELL,
    "pallas_tmem_acc_m64_layout_on_128_rows": BLACKWELL,
    "pallas_epilogue_to_unswizzled_smem": HOPPER,
    "pallas_wgmma_then_strided": HOPPER,
}


def _after_jax_sentence(error: smalto.InferenceError) -> str:
    """The message after JAX's sentence (which follows how JAX states a layout: above)."""
    return str(error).split("\n", 1)[1]


def _said(error: smalto.InferenceError, clashes: list[Clash]) -> Iterator[object]:
    conflict = error.conflict
    yield _after_jax_sentence(error)
    yield conflict.message(verbose=True)  # type: ignore[union-attr]
    yield conflict.code  # type: ignore[union-attr]
    yield [(c.title, [(s.value, s.layout, s.wanted_by) for s in c.sides]) for c in clashes]


@pytest.mark.parametrize("name", sorted(ONE_OPTION_KERNELS))
def test_one_option_reads_exactly_as_a_fixed_layout(
    name: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    text, arch = (UNSAT / f"{name}.mlir").read_text(), ONE_OPTION_KERNELS[name]
    fixed = list(_said(*_failure(text, arch)))
    _state_as_options(monkeypatch)
    error, clashes = _failure(text, arch)
    # The rule stated an op's layout as one option, and the core holds it.
    assert any(
        isinstance(e, OneOf) and len(e.allowed) == 1
        for e in error.conflict.core  # type: ignore[union-attr]
    )
    assert list(_said(error, clashes)) == fixed


def test_the_requirement_reads_the_same_in_words() -> None:
    """``allowed_layouts``: a fixed layout is its one option; options in their order."""
    layout = Reg(WGMMA)
    fixed = Fixed(3, layout, 7, "the accumulator")
    one = OneOf(Var(3), (layout,), 7, "the accumulator")
    assert allowed_layouts(fixed) == allowed_layouts(one)
    assert allowed_layouts(fixed).only == layout  # type: ignore[union-attr]
    two = OneOf(Var(3), (Reg(WGMMA_8BIT), layout), 7)
    assert allowed_layouts(two).layouts == (Reg(WGMMA_8BIT), layout)  # type: ignore[union-attr]
    assert allowed_layouts(two).only is None  # type: ignore[union-attr]
    assert allowed_layouts(two).what == "the value"  # type: ignore[union-attr]
