"""The unit-dim rewrite patterns, one function each.

Every pattern rewrites one op of a web (see ``webs``) from the shape ``S`` to
``Q``, ``S`` without the web's dropped unit dims. Why each is exact: a vector
of shape ``S`` and the vector of shape ``Q`` with the same elements in the
same row-major order are the same data, since a size-1 dim has one index, 0;
the patterns only ever replace one by the other. Each docstring says why the
op computes the same elements at ``Q``.

The patterns change ops in place (a result or block argument's type, an
attribute) where they can, so the ops keep their identity and location, and
create an op only to expand a value back for a user that needs ``S``.
"""

from __future__ import annotations

from dataclasses import dataclass

from jax._src.lib.mlir import ir

from smalto.rewrite import ops as names
from smalto.rewrite.webs import Web, i64_array, iota_dimension, vector_shape
from smalto.source.locations import FilePosition, place


@dataclass(frozen=True)
class RewrittenOp:
    """One op the rewrite changed, created or removed, for the user to see."""

    op: str  # the op's name, e.g. "arith.addf"
    location: str  # the user's file:line:col, else what the location says
    primitive: str | None  # the name JAX's location gives it (e.g. "add"), if any
    change: str  # what happened to it, in words
    position: FilePosition | None = None  # the user's source position, if it has one

    def __str__(self) -> str:
        primitive = self.primitive
        named = f" (`{primitive}`)" if primitive and primitive not in self.op else ""
        return f"{self.location}: `{self.op}`{named} {self.change}"


def _record(op: ir.Operation, change: str) -> RewrittenOp:
    where = place(op.location)
    return RewrittenOp(op.name, where.text, where.name, change, where.position)


def _squeezed_type(value: ir.Value, web: Web) -> ir.VectorType:
    return ir.VectorType.get(list(web.squeezed), ir.VectorType(value.type).element_type)


def _type_text(shape: tuple[int, ...]) -> str:
    return "(" + ", ".join(map(str, shape)) + ("," if len(shape) == 1 else "") + ")"


def _i64_array(values: tuple[int, ...]) -> ir.DenseI64ArrayAttr:
    return ir.DenseI64ArrayAttr.get(list(values))


def squeeze_values(op: ir.Operation, values: list[ir.Value], web: Web) -> RewrittenOp:
    """An elementwise op, or a loop or branch carrying the web's values: the values
    are retyped to ``Q``.

    Elementwise: each result element is a function of the operand elements at
    the same index, and every operand and result is squeezed the same way, so
    each index of ``Q`` names the same elements before and after. Loops and
    branches: a carried value is only passed on (init, block argument, yield,
    result), never looked into, so passing the same data at ``Q`` everywhere
    is the same loop. An optimization barrier returns its operands as they are.
    """
    for value in values:
        value.set_type(_squeezed_type(value, web))
    return _record(
        op, f"now computes on {_type_text(web.squeezed)} values (was {_type_text(web.shape)})"
    )


def squeeze_constant(op: ir.Operation, web: Web) -> RewrittenOp:
    """A splat constant has one value at every index, whatever its shape."""
    result = op.results[0]
    splat = ir.DenseElementsAttr(op.attributes["value"]).get_splat_value()
    squeezed = _squeezed_type(result, web)
    op.attributes["value"] = ir.DenseElementsAttr.get_splat(squeezed, splat)
    result.set_type(squeezed)
    return _record(op, f"now a {_type_text(web.squeezed)} splat (was {_type_text(web.shape)})")


def squeeze_splat_broadcast(op: ir.Operation, web: Web) -> RewrittenOp:
    """A scalar broadcast to a vector is a splat: one value at every index."""
    result = op.results[0]
    result.set_type(_squeezed_type(result, web))
    return _record(
        op, f"now broadcasts to {_type_text(web.squeezed)} (was {_type_text(web.shape)})"
    )


def squeeze_iota(op: ir.Operation, web: Web) -> RewrittenOp:
    """An iota along dim ``d`` holds, at each index, its ``d``-th coordinate; dropping
    other dims of size 1 (each with the one coordinate 0) keeps every element's
    ``d``-th coordinate, now at position ``kept.index(d)``."""
    result = op.results[0]
    dimension = web.kept.index(iota_dimension(op))
    op.attributes["dimension"] = ir.IntegerAttr.get(ir.IntegerType.get_signless(32), dimension)
    result.set_type(_squeezed_type(result, web))
    return _record(op, f"now an iota of shape {_type_text(web.squeezed)} along dim {dimension}")


def fold_broadcast(op: ir.Operation, web: Web) -> RewrittenOp:
    """``broadcast_in_dim(v, dims)`` of an ``S`` value: operand dim ``i`` goes to
    result dim ``dims[i]``, and a size-1 operand dim is broadcast along it. A
    dropped dim has size 1, so it only ever broadcasts; leaving it out of the
    operand leaves its result dim unmapped, which broadcasts the same way. The
    same broadcast of the ``Q`` value maps the kept dims: ``dims[k]`` for each
    kept ``k``."""
    dims = i64_array(op.attributes["broadcast_dimensions"])
    folded = tuple(dims[k] for k in web.kept)
    op.attributes["broadcast_dimensions"] = _i64_array(folded)
    result = vector_shape(op.results[0])
    assert result is not None
    return _record(
        op,
        f"now broadcasts the {_type_text(web.squeezed)} value to {_type_text(result)} "
        f"(broadcast_dimensions {list(folded)}, was {list(dims)})",
    )


def fold_squeeze(op: ir.Operation, web: Web) -> RewrittenOp:
    """A ``shape_cast`` of an ``S`` value to ``Q`` is the ``Q`` value itself (a
    shape_cast keeps the row-major order): its users take that value."""
    op.results[0].replace_all_uses_with(op.operands[0])
    return _record(op, f"removed: its users take the {_type_text(web.squeezed)} value")


def narrow_reduction(op: ir.Operation, web: Web) -> RewrittenOp:
    """A ``multi_reduction`` over every dropped dim and some kept ones: a dropped
    dim holds one element, so reducing over it adds nothing; the same
    reduction of the ``Q`` value reduces over the kept dims it reduced."""
    reduced = set(i64_array(op.attributes["reduction_dims"]))
    narrowed = tuple(i for i, d in enumerate(web.kept) if d in reduced)
    op.attributes["reduction_dims"] = _i64_array(narrowed)
    return _record(
        op, f"now reduces the {_type_text(web.squeezed)} value over dims {list(narrowed)}"
    )


def expand_for_use(user: ir.Operation, number: int, web: Web) -> RewrittenOp:
    """A user that needs the value at ``S`` (a store, a layout cast, an op the
    rewrite does not know) gets it expanded back right before it: a
    ``broadcast_in_dim`` from ``Q`` to ``S`` along the kept dims only inserts
    the unit dims, so it holds the same elements as the value as written."""
    value = user.operands[number]
    full = ir.VectorType.get(list(web.shape), ir.VectorType(value.type).element_type)
    expansion = ir.Operation.create(
        names.BROADCAST_IN_DIM,
        results=[full],
        operands=[value],
        attributes={"broadcast_dimensions": _i64_array(web.kept)},
        loc=user.location,
        ip=ir.InsertionPoint(user),
    )
    user.operands[number] = expansion.results[0]
    return _record(
        user,
        f"takes operand #{number} expanded back to {_type_text(web.shape)} right before it "
        f"(a new `{names.BROADCAST_IN_DIM}`)",
    )


def drop_expansion(op: ir.Operation, web: Web) -> RewrittenOp:
    """An op that only inserts unit dims into its ``Q`` operand (a
    ``broadcast_in_dim`` along increasing dims, a ``shape_cast``) holds the
    operand's elements in the operand's order: its users take the operand."""
    record = _record(op, f"removed: its users take the {_type_text(web.squeezed)} operand")
    op.results[0].replace_all_uses_with(op.operands[0])
    return record
