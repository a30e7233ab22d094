"""The checker's shared work finds what reading alone finds: given the pass's program view
(``check(..., program=...)``, as a verified edit's copy is checked), and with what it
read of the context's attributes before (decoded entries, transforms judged), its
violations are those of a fresh read of the same text in a fresh context.
"""

from __future__ import annotations

from collections.abc import Callable

import pytest
import reference
from check_kit import (
    HOPPER,
    POINTWISE,
    WGMMA,
    WGMMA_TRANSPOSED,
    annotated,
    ops_named,
    set_attr,
    set_entry,
    strided,
    tiled,
)
from jax._src.lib.mlir import ir

from smalto.check import Violation, check
from smalto.program.reader import read_program
from smalto.rules import consumers


def _delete(op_name: str, attr: str) -> Callable[[ir.Module], None]:
    def delete(module: ir.Module) -> None:
        del ops_named(module, op_name)[0].attributes[attr]

    return delete


# Ways to break smalto's answer, each a violation the checker reports.
BREAKS: dict[str, Callable[[ir.Module], None]] = {
    "nothing": lambda module: None,
    "wrong count": lambda m: set_attr(m, "arith.addf", "in_layouts", f"[{WGMMA}]"),
    "missing": _delete("arith.addf", "out_layouts"),
    "does not fit": lambda m: set_entry(m, "arith.addf", "in_layouts", 0, strided((64, 64), 1)),
    "undecodable": lambda m: set_entry(m, "arith.addf", "in_layouts", 0, "42 : i32"),
    "elementwise differ": lambda m: set_entry(m, "arith.addf", "in_layouts", 1, WGMMA_TRANSPOSED),
    "bad tiling": lambda m: set_entry(
        m, "mosaic_gpu.slice_smem", "out_transforms", 0, f"[{tiled(7, 7)}]"
    ),
}


def _said(violations: list[Violation]) -> list[tuple[str, str, int]]:
    """What violations say and of which op (a reparsed text has locations of its own)."""
    return [(v.op, v.message, v.op_index) for v in violations]


def _as_read_afresh(module: ir.Module) -> list[tuple[str, str, int]]:
    """What the checker says of the module's text, parsed in a context of its own."""
    return _said(check(reference.parse(str(module), reference.make_context()), HOPPER))


@pytest.mark.parametrize("name", BREAKS)
def test_with_the_pass_program_view(name: str) -> None:
    module = annotated(POINTWISE)
    BREAKS[name](module)
    with module.context, ir.Location.unknown(module.context):
        program = read_program(module, consumers())
    shared = check(module, HOPPER, program=program)
    assert shared == check(module, HOPPER)
    assert _said(shared) == _as_read_afresh(module)
    assert (name == "nothing") == (shared == [])


def test_what_the_context_remembers_never_goes_stale() -> None:
    """One module checked again and again as its attributes change (a verified edit's
    copies, one after the other): each time what a fresh read finds."""
    module = annotated(POINTWISE)
    for name, brake in BREAKS.items():
        fresh = annotated(POINTWISE)
        brake(fresh)
        for op_name in ("arith.addf", "mosaic_gpu.slice_smem"):
            target = ops_named(module, op_name)[0]
            source = ops_named(fresh, op_name)[0]
            with module.context:
                for attr in ("in_layouts", "out_layouts", "out_transforms"):
                    if attr in source.attributes:
                        target.attributes[attr] = source.attributes[attr]
                    elif attr in target.attributes:
                        del target.attributes[attr]
        assert _said(check(module, HOPPER)) == _as_read_afresh(module), name
