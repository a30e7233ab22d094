"""A layout an op imposes reads the same whether a rule fixes it or allows it alone
(issue #35, part 2), on every kernel of ``tests/unsat``.

The experiment: the rules' fixing helper (``RuleContext.fix``) states each layout an op
fixes as a ``OneOf`` of that one layout instead of a ``Fixed``. The solver judges one
option as the equality it is (``evaluate._judge_one_of`` forces it), the search for a
core starts from it as from a fixed layout (``core._in_order``, ``subsystem``), and the
diagnosis, its edits, its codes and its pictures read it through ``fixed_layout`` /
``allowed_layouts``; so every kernel gets the same core, the same hints, the same code,
the same pictures and the same message, word for word.

JAX's own sentence included: JAX states what an op fixes as an assignment, known before
its propagation's first round, and one option as an equality settled during that round
(``diagnose/jax_phrases``). On these kernels the round that fails, and so the sentence,
is the same either way.

The user's annotations (a ``layout_cast``, a ref's transforms, an ``inline_mgpu``'s
layouts) stay fixed: they are what the edits retarget or remove (``diagnose/verify``
edits the system's fixed layouts), not an op's requirement.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
import reference
from rule_kit import parse, shared_context

import smalto
from smalto.constraints.language import Fixed, OneOf, Var, allowed_layouts
from smalto.hw.values import Const
from smalto.program.reader import read_program
from smalto.report.conflict_layouts import conflict_clashes
from smalto.rules import consumers
from smalto.rules.context import RuleContext

UNSAT = Path(__file__).parents[1] / "unsat"
KERNELS = sorted(path.stem for path in UNSAT.glob("*.mlir"))
ANNOTATIONS = frozenset(
    {
        "mosaic_gpu.layout_cast",
        "mosaic_gpu.tmem_layout_cast",
        "mosaic_gpu.with_transforms",
        "mosaic_gpu.custom_primitive",
    }
)


@dataclass(frozen=True)
class Said:
    """Everything a failure tells the reader."""

    message: str
    verbose: str | None = None
    code: str | None = None
    core_ops: tuple[int, ...] = ()
    # How each requirement of the core states its layouts: "fixed", "one option", or
    # the kind of constraint.
    core_forms: tuple[str, ...] = ()
    hints: tuple[str, ...] = ()
    picture_titles: tuple[str, ...] = ()
    pictures: tuple[object, ...] = ()


def _form(element: Any) -> str:
    if isinstance(element, Fixed):
        return "fixed"
    allowed = allowed_layouts(element)
    if allowed is not None and allowed.only is not None:
        return "one option"
    return type(element).__name__


def _said(name: str) -> Said:
    text = (UNSAT / f"{name}.mlir").read_text()
    arch = reference.text_arch(text)
    with shared_context():
        module = parse(text)
        try:
            smalto.infer_layout(module, arch=arch)
        except smalto.InferenceError as error:
            message = str(error)
            conflict = error.conflict
            if conflict is None:
                return Said(message)
            program = read_program(module, consumers())
            clashes = conflict_clashes(program, list(conflict.core), arch)
            return Said(
                message,
                conflict.message(verbose=True),
                conflict.code,
                tuple(e.origin for e in conflict.core),
                tuple(_form(e) for e in conflict.core),
                tuple(
                    line
                    for line in message.splitlines()
                    if line.startswith(("note:", "suggestion:"))
                ),
                tuple(c.title for c in clashes),
                tuple(
                    (c.title, tuple((s.value, s.layout, tuple(s.wanted_by)) for s in c.sides))
                    for c in clashes
                ),
            )
        except (NotImplementedError, ValueError) as error:  # a rule refuses the module
            return Said(f"{type(error).__name__}: {error}")
    pytest.fail(f"{name} inferred")


def _state_as_one_option(monkeypatch: pytest.MonkeyPatch) -> None:
    """The rules state what an op (not an annotation) fixes as a one-option ``OneOf``."""
    fix = RuleContext.fix

    def as_one_option(
        self: RuleContext, var: int, value: Const, op: Any, *args: Any, **kw: Any
    ) -> None:
        fix(self, var, value, op, *args, **kw)  # its checks (a value that cannot fit) as they are
        if op.name in ANNOTATIONS:
            return
        fixed = self.system.fixed.pop()
        self.require(OneOf(Var(fixed.var), (fixed.value,), fixed.origin, fixed.what))

    monkeypatch.setattr(RuleContext, "fix", as_one_option)


@pytest.mark.parametrize("name", KERNELS)
def test_an_op_layout_stated_as_one_option_reads_as_fixed(
    name: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    fixed = _said(name)
    _state_as_one_option(monkeypatch)
    one_option = _said(name)

    assert one_option.core_ops == fixed.core_ops
    assert one_option.hints == fixed.hints
    assert one_option.code == fixed.code
    assert one_option.picture_titles == fixed.picture_titles
    assert one_option.pictures == fixed.pictures
    assert one_option.verbose == fixed.verbose
    assert one_option.message == fixed.message  # JAX's sentence included
    # Each layout an op fixed in the core is now its one option, and nothing else moved.
    for before, after in zip(fixed.core_forms, one_option.core_forms, strict=True):
        assert after == before or (before, after) == ("fixed", "one option")


# The kernels whose core holds a layout an op fixes (a wgmma or TMEM accumulator...).
CORES_WITH_AN_OP_LAYOUT = (
    "pallas_epilogue_to_unswizzled_smem",
    "pallas_tmem_acc_declared_collective",
    "pallas_tmem_acc_m64_layout_not_collective",
    "pallas_tmem_acc_m64_layout_on_128_rows",
    "pallas_wgmma_then_strided",
    "words_bias_loaded_as_rows",
    "words_iota_in_row_layout",
)


@pytest.mark.parametrize("name", CORES_WITH_AN_OP_LAYOUT)
def test_the_core_holds_the_one_option(name: str, monkeypatch: pytest.MonkeyPatch) -> None:
    """Not a vacuous comparison: the core compared above holds the requirement restated."""
    assert "fixed" in _said(name).core_forms
    _state_as_one_option(monkeypatch)
    assert "one option" in _said(name).core_forms
