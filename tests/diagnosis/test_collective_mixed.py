"""Whether JAX's lowering rejects a kernel for mixing collective and 1-CTA ops: read from
the program view (the ops found by name, then their attributes), as a walk over the
module's ops would find it, on every bundled corpus module and on mixed ones."""

from __future__ import annotations

from pathlib import Path

import pytest
import reference
from jax._src.lib.mlir import ir

from smalto.diagnose.jax_lowering import collective_mixed
from smalto.program.reader import read_program
from smalto.rules.tmem import COLLECTIVE_OPS

CORPUS = Path(__file__).parents[1] / "corpus"
MODULES = sorted(CORPUS.glob("*/*.mlir"))
COLLECTIVE = CORPUS / "kernels" / "blackwell_matmul_t128x128x64_s4_collective.mlir"


def _walked(module: ir.Module) -> bool:
    """The answer of a walk over every op of the module (what the view must agree with)."""
    seen: set[bool] = set()

    def visit(op: ir.Operation) -> ir.WalkResult:
        if op.name in COLLECTIVE_OPS and "collective" in op.attributes:
            seen.add(bool(ir.BoolAttr(op.attributes["collective"]).value))
        return ir.WalkResult.ADVANCE

    module.operation.walk(visit, ir.WalkOrder.PRE_ORDER)
    return len(seen) > 1


def _both(text: str) -> tuple[bool, bool]:
    context = reference.make_context()
    module = reference.parse(text, context)
    with context, ir.Location.unknown():
        return collective_mixed(read_program(module)), _walked(module)


@pytest.mark.parametrize("path", MODULES, ids=[p.stem for p in MODULES])
def test_the_view_finds_what_a_walk_finds(path: Path) -> None:
    ours, walked = _both(path.read_text())
    assert ours == walked


def test_one_op_on_one_cta_in_a_collective_kernel_is_mixed() -> None:
    text = COLLECTIVE.read_text()
    assert _both(text) == (False, False)
    relinquish = '"mosaic_gpu.tmem_relinquish_alloc_permit"() <{collective = true}>'
    assert relinquish in text
    mixed = text.replace(relinquish, relinquish.replace("true", "false"), 1)
    assert _both(mixed) == (True, True)
