"""Whether an edit of a kernel's module keeps what the kernel computes.

The diagnosis verifies edits on the kernel's MLIR module, where no Python is at
hand. There, the check ``smalto fix`` makes on JAX's trace of the edited
function (``smalto.jax.meaning``) reads the module instead: the edited module
must equal the original once what no value depends on is set aside:

- a ``mosaic_gpu.layout_cast`` (and a TMEM ref's ``tmem_layout_cast``, an SMEM
  ref's ``with_transforms``) is the identity on what it carries: its result is
  its operand, so adding, retargeting or removing one changes nothing;
- every attribute that states a layout or transforms (``new_layout``,
  ``in_layouts``, ``out_transforms``...) and the ``optimized`` flag are set aside.

Everything else counts: every op, its attributes (an axis: ``reduction_dims``;
a broadcast: ``broadcast_dimensions``), its result types, which value goes to
which operand (values numbered by where they are made). An edit the check
finds changing the module (another axis, another broadcast) changes what the
kernel computes: it is offered as a choice, never as a fix a tool makes.
"""

from __future__ import annotations

from typing import Any

from jax._src.lib.mlir import ir

from smalto.basics.mlir import clone_module
from smalto.diagnose.edits import Edit, apply, ops_in_order

# Ops that carry their operand unchanged, with a layout or transforms stated on it.
_IDENTITIES = frozenset(
    {"mosaic_gpu.layout_cast", "mosaic_gpu.tmem_layout_cast", "mosaic_gpu.with_transforms"}
)
_SET_ASIDE_WORDS = ("layout", "transform")
_SET_ASIDE = frozenset({"optimized"})


def changes_meaning(
    module: ir.Operation, edits: tuple[Edit, ...], original: tuple[Any, ...] | None = None
) -> bool:
    """Whether making ``edits`` on a copy of ``module`` (its ``builtin.module`` op) changes
    what the kernel computes, layouts, transforms and the optimized flag set aside
    (``original``: the module's ``computation``, where the caller has it)."""
    with module.context, ir.Location.unknown(module.context):
        clone = clone_module(module)
        ops = ops_in_order(clone.operation)
        # (Edits that remove ops go last: the others name ops by position.)
        for edit in sorted(edits, key=lambda e: e.kind == "drop"):
            apply(edit, ops)
    before = original if original is not None else computation(module)
    return before != computation(clone.operation)


def computation(module: ir.Operation) -> tuple[Any, ...]:
    """The module as what it computes: each op's name, attributes (layouts, transforms
    and the optimized flag set aside), operands (by where each value is made) and result
    types, in order, its regions within it; a layout cast is its operand."""
    return _Computation().regions(module)


class _Computation:
    """One reading of a module (a class, not closures: nothing left for the collector)."""

    def __init__(self) -> None:
        self.numbers: dict[ir.Value, Any] = {}
        self.made = 0  # values numbered so far

    def regions(self, op: ir.Operation) -> tuple[Any, ...]:
        return tuple(self.region(r) for r in op.regions)

    def value(self, v: ir.Value) -> Any:
        return self.numbers.get(v, ("unknown", str(v.type)))

    def define(self, v: ir.Value) -> None:
        self.numbers[v] = self.made
        self.made += 1

    def op(self, op: ir.Operation) -> Any:
        name = op.name
        if name in _IDENTITIES and len(op.operands) == 1 and len(op.results) == 1:
            self.numbers[op.results[0]] = self.value(op.operands[0])
            return None
        stated = op.attributes
        attributes = tuple(
            sorted(
                (key, str(stated[key]))
                for key in stated
                if key not in _SET_ASIDE and not any(word in key for word in _SET_ASIDE_WORDS)
            )
        )
        operands = tuple(self.value(v) for v in op.operands)
        regions = self.regions(op)
        for result in op.results:
            self.define(result)
        return (name, attributes, operands, tuple(str(r.type) for r in op.results), regions)

    def region(self, region: ir.Region) -> Any:
        blocks = []
        for block in region.blocks:
            for argument in block.arguments:
                self.define(argument)
            arguments = tuple(str(a.type) for a in block.arguments)
            forms = (self.op(o.operation) for o in block.operations)
            blocks.append((arguments, tuple(f for f in forms if f is not None)))
        return tuple(blocks)


__all__ = ["changes_meaning", "computation"]
