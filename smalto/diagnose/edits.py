"""Single edits of a kernel's layout annotations, made on a copy of its module.

An edit is what an author changes in one place of their source: the target
of one ``plgpu.layout_cast``, the layout of one TMEM ref, the transforms of
one SMEM ref (which Pallas states at each use of the ref, so one edit may
touch several ``with_transforms`` ops), one layout an ``inline_mgpu`` states
for an argument or result; or it removes one cast, or adds one
``layout_cast`` on a value; or it makes transfers unoptimized (``optimized =
False`` on the ``plgpu.load``/``plgpu.store`` lines whose optimized transfer
has no plan in any layout: the fewest that do). Edits name ops by their ids in the program view,
which are their pre-order positions: the same in a clone of the module.
"""

from __future__ import annotations

from dataclasses import field, fields

from jax._src.lib import mosaic_gpu_dialect as mgpu
from jax._src.lib.mlir import ir

from smalto.basics.records import value_class
from smalto.hw.encode import AttributeCache
from smalto.hw.values import Const, Reg, Smem, Tmem
from smalto.program.view import ops_in_order

RETARGET, DROP, ADD_CAST, UNOPTIMIZE = "retarget", "drop", "add_cast", "unoptimize"
# A reduction over the other axis of a square tile (``s.max(axis=1)`` for ``axis=0``): the
# same types, so the same module but for the op's ``reduction_dims`` (``position``).
AXIS = "axis"
# A broadcast of a reduction's values along the other axis (``m[:, None]`` for
# ``m[None, :]``): the same types, the same module but for the op's
# ``broadcast_dimensions`` (``position``).
BROADCAST = "broadcast"


@value_class(frozen=True)
class Edit:
    """One change an author makes in one place of the kernel's source."""

    kind: str  # RETARGET, DROP, ADD_CAST or UNOPTIMIZE
    # The ops changed (RETARGET, DROP, UNOPTIMIZE: the transfers); for ADD_CAST the op
    # the new cast goes after (the value's producer) or, with ``use``, before (the consumer).
    ops: tuple[int, ...]
    old: Const | None = None  # the layout stated now (RETARGET, DROP)
    new: Const | None = None  # the layout stated after the edit (RETARGET, ADD_CAST)
    # RETARGET of an array attribute (``inline_mgpu``'s layouts): its name and the entry.
    attribute: str | None = None
    position: int | None = None  # (ADD_CAST after its producer: the result index)
    argument: int | None = None  # the operand (or result) index the entry is for
    value: int | None = None  # ADD_CAST: the value cast
    use: tuple[int, int] | None = None  # ADD_CAST: only this (op, operand) use; None: every use
    # The hash, made once: an edit keys the caches of its words and its trial, asked
    # several times per edit (a dataclass hashes a tuple of every field each time).
    _hash: int = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "_hash", hash(tuple(getattr(self, n) for n in _COMPARED)))

    def __hash__(self) -> int:
        return self._hash


# The fields an edit is compared by (all but its hash): what its hash is made of.
_COMPARED = tuple(f.name for f in fields(Edit) if f.compare)


def attribute_of(value: Const, cache: AttributeCache) -> ir.Attribute:
    """The attribute that states ``value`` (a layout, or a transforms array)."""
    if isinstance(value, Smem):
        return cache.transforms(value)
    assert isinstance(value, Reg | Tmem)
    return cache.layout(value)


def apply(edit: Edit, ops: list[ir.Operation]) -> None:
    """Makes ``edit`` on the module whose ops ``ops`` lists (see ``ops_in_order``).

    Must run in the module's context, with a location.
    """
    context = ir.Context.current
    assert context is not None, "an edit is made in the module's context"
    cache = AttributeCache(context)
    if edit.kind == RETARGET:
        assert edit.new is not None
        new = attribute_of(edit.new, cache)
        for op_id in edit.ops:
            attrs = ops[op_id].attributes
            if edit.attribute is None:
                name = "transforms" if isinstance(edit.new, Smem) else "new_layout"
                attrs[name] = new
            else:
                assert edit.position is not None
                entries = list(ir.ArrayAttr(attrs[edit.attribute]))
                entries[edit.position] = new
                attrs[edit.attribute] = ir.ArrayAttr.get(entries)
    elif edit.kind == DROP:
        for op_id in edit.ops:
            op = ops[op_id]
            op.results[0].replace_all_uses_with(op.operands[0])
            op.erase()
    elif edit.kind == ADD_CAST:
        assert isinstance(edit.new, Reg)
        _add_cast(edit, ops, cache.layout(edit.new))
    elif edit.kind == UNOPTIMIZE:
        for op_id in edit.ops:
            ops[op_id].attributes["optimized"] = ir.BoolAttr.get(False)
    elif edit.kind == AXIS:
        assert edit.position is not None
        for op_id in edit.ops:
            ops[op_id].attributes["reduction_dims"] = ir.DenseI64ArrayAttr.get([edit.position])
    elif edit.kind == BROADCAST:
        assert edit.position is not None
        for op_id in edit.ops:
            dims = ir.DenseI64ArrayAttr.get([edit.position])
            ops[op_id].attributes["broadcast_dimensions"] = dims
    else:
        raise ValueError(f"unknown edit {edit.kind!r}")


def _add_cast(edit: Edit, ops: list[ir.Operation], layout: ir.Attribute) -> None:
    anchor = ops[edit.ops[0]]
    if edit.use is not None:
        consumer, operand = edit.use
        consumer_op = ops[consumer]
        with ir.InsertionPoint(consumer_op), consumer_op.location:
            cast = mgpu.layout_cast(consumer_op.operands[operand], layout)
        consumer_op.operands[operand] = cast
        return
    value = _result_of(anchor, edit)
    with ir.InsertionPoint.after(anchor), anchor.location:
        cast = mgpu.layout_cast(value, layout)
    value.replace_all_uses_except(cast, cast.owner.operation)


def _result_of(anchor: ir.Operation, edit: Edit) -> ir.Value:
    """The value ``edit`` casts: the anchor's result that is it (by the index recorded)."""
    assert edit.position is not None
    return anchor.results[edit.position]


__all__ = [
    "ADD_CAST",
    "AXIS",
    "BROADCAST",
    "DROP",
    "RETARGET",
    "UNOPTIMIZE",
    "Edit",
    "apply",
    "attribute_of",
    "ops_in_order",
]
