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
from smalto.diagnose.edits import ADD_CAST, DROP, Edit, apply, ops_in_order

# Ops that carry their operand unchanged, with a layout or transforms stated on it.
_IDENTITIES = frozenset(
    {"mosaic_gpu.layout_cast", "mosaic_gpu.tmem_layout_cast", "mosaic_gpu.with_transforms"}
)
_SET_ASIDE_WORDS = ("layout", "transform")
_SET_ASIDE = frozenset({"optimized"})


def changes_meaning(module: ir.Operation, edits: tuple[Edit, ...]) -> bool:
    """Whether making ``edits`` on a copy of ``module`` (its ``builtin.module`` op) changes
    what the kernel computes, layouts, transforms and the optimized flag set aside: whether
    the copy's ``computation`` differs from the original's.

    An edit changes the attributes of the ops it names, or removes the op it names, or
    adds one op (a cast): the two computations can differ only there, so only there are
    they compared (reading the whole module twice would cost each message a few
    milliseconds an edit). An op removed or added keeps the computation where it is an
    identity (a cast: its result is its operand); an op whose attributes changed keeps
    it where its attributes, those set aside aside, are the same."""
    with module.context, ir.Location.unknown(module.context):
        clone = clone_module(module)
        before = ops_in_order(module)
        after = ops_in_order(clone.operation)
        changed = [i for e in edits if e.kind not in (DROP, ADD_CAST) for i in e.ops]
        forms = [_attributes(before[i]) for i in changed]
        # (Edits that remove ops go last: the others name ops by position.)
        for edit in sorted(edits, key=lambda e: e.kind == DROP):
            apply(edit, after)
        if any(_attributes(after[i]) != form for i, form in zip(changed, forms, strict=True)):
            return True
    removed = [before[i].name for e in edits if e.kind == DROP for i in e.ops]
    # (A new cast is a ``layout_cast``: ``smalto.diagnose.edits`` adds no other op.)
    return any(name not in _IDENTITIES for name in removed)


def _attributes(op: ir.Operation) -> tuple[tuple[str, str], ...]:
    """An op's attributes as the computation reads them (layouts, transforms and the
    optimized flag set aside)."""
    stated = op.attributes
    return tuple(
        sorted(
            (key, str(stated[key]))
            for key in stated
            if key not in _SET_ASIDE and not any(word in key for word in _SET_ASIDE_WORDS)
        )
    )


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
        attributes = _attributes(op)
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
