"""A reduction over the wrong axis, said as the kernel author thinks of it.

``m = s.max(axis=0)`` gives one value per column of the tile; ``s - m[:, None]``
lays those values down the rows, one per row. On a square tile the shapes
agree, so JAX traces the kernel, and only the layouts disagree: the column
layout of the reduction (``WGMMA_COL``) is not the row layout the broadcast
needs (``WGMMA_ROW``), and no relayout joins them. The requirements say so in
layouts; the author wrote axes. This module finds that shape in a conflict (a
``vector.multi_reduction`` of a 2-D tile whose result reaches a broadcast back
to the tile along the axis it reduced, through elementwise ops, a keep-dims
expansion or a reshape) and says it in the author's words, with the reduction
over the other axis in the author's spelling (``m = s.max(axis=1)``).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from jax._src.lib.mlir import ir

from smalto.basics.records import value_class
from smalto.constraints.language import Element
from smalto.diagnose.edits import AXIS, BROADCAST, Edit
from smalto.program.view import Op, Program
from smalto.rules.attributes import ints
from smalto.source.files import Sources
from smalto.source.locations import file_position, location_name, op_text

if TYPE_CHECKING:
    from smalto.source.pallas_edits import StatementEdit

REDUCTION = "vector.multi_reduction"
_BROADCAST = "mosaic_gpu.broadcast_in_dim"
_RESHAPES = ("vector.shape_cast", "vector.broadcast")
# Ops that keep a value's shape and its layout, element by element.
_ELEMENTWISE = ("arith.", "math.")
_DEPTH = 12  # ops followed from the reduction to the broadcast, at most
_WHAT = {0: "one value per row", 1: "one value per column"}  # by the axis the values run
_ALONG = {0: "along rows", 1: "along columns"}
_SUFFIX = {0: "ROW", 1: "COL"}


@value_class(frozen=True)
class AxisClue:
    """A reduction whose result is broadcast back along the axis it reduced."""

    text: str  # the clue, in the author's words
    edit: Edit  # the reduction over the other axis (``AXIS``), as a module edit
    fix: str  # the change in words: "reduce over axis 1 at k.py:3:8: `m = s.max(axis=1)`"
    # The author's statement edited, and its file (where the source was read).
    statement: StatementEdit | None
    file: str | None
    # Whether the module edit is the source edit (no keep-dims expansion or reshape
    # between: those change shape with the axis, the module edit would not).
    exact: bool
    # The other change the author may have meant: the broadcast along the other axis
    # (``BROADCAST``, ``m[:, None]`` for ``m[None, :]``), where the broadcast is one op of
    # the module and the source writes it as an indexing; its words and statement.
    broadcast: Edit | None = None
    broadcast_fix: str = ""
    broadcast_statement: StatementEdit | None = None


def axis_clue(program: Program, core: list[Element], sources: Sources) -> AxisClue | None:
    """The clue for the first reduction of the core that is broadcast back along the axis
    it reduced, else None."""
    reductions = dict.fromkeys(e.origin for e in core if program.ops[e.origin].name == REDUCTION)
    for op_id in reductions:
        clue = _clue(program, program.ops[op_id], sources)
        if clue is not None:
            return clue
    return None


def _clue(program: Program, reduction: Op, sources: Sources) -> AxisClue | None:
    operation = reduction.operation
    found = _broadcast_of(operation)
    if found is None:
        return None
    axis, (expander, placed, exact) = found
    kept = 1 - axis
    if placed == kept:
        return None
    family = _tile_family(operation)
    reduced = _quoted(_words(reduction, sources)) or op_text(reduction)
    expanded = _quoted(_expansion(expander, sources)) or f"the broadcast {op_text(expander)}"
    wanted_axis = 1 - placed
    now = _layout(family, kept)
    needed = _layout(family, placed, wanted_axis)
    text = (
        f"{reduced} gives {_WHAT[kept]}{now}; {expanded} broadcasts it {_ALONG[placed]}, "
        f"which needs {_WHAT[placed]}{needed}"
    )
    statement, file = _axis_statement(reduction, wanted_axis, sources)
    where = _where(reduction)
    code = f": `{statement.text}`" if statement is not None else ""
    fix = f"reduce over axis {wanted_axis} at {where}{code}"
    edit = Edit(AXIS, (reduction.id,), attribute="reduction_dims", position=wanted_axis)
    broadcast, broadcast_fix, broadcast_statement = _broadcast_candidate(
        program, expander, kept, sources
    )
    return AxisClue(
        text, edit, fix, statement, file, exact, broadcast, broadcast_fix, broadcast_statement
    )


def _broadcast_candidate(
    program: Program, expander: ir.Operation, kept: int, sources: Sources
) -> tuple[Edit | None, str, StatementEdit | None]:
    """The broadcast that lays the reduction's values down along the axis they run
    (``kept``), as a module edit and in the author's words; none where the op that lays
    them down is no ``broadcast_in_dim`` of a vector (a reshape, a keep-dims expansion)."""
    if expander.name != _BROADCAST or len(_shape(expander.operands[0].type)) != 1:
        return None, "", None
    op = next((o for o in program.ops if o.operation == expander), None)
    if op is None:
        return None, "", None
    edit = Edit(BROADCAST, (op.id,), attribute="broadcast_dimensions", position=kept)
    statement = _expansion_statement(op, sources)
    code = f": `{statement.text}`" if statement is not None else ""
    return edit, f"broadcast {_ALONG[kept]} at {_where(op)}{code}", statement


def _expansion_statement(op: Op, sources: Sources) -> StatementEdit | None:
    position = file_position(op.location)
    if position is None:
        return None
    lines = sources.lines(position.file)
    if lines is None:
        return None
    # (The Pallas source edits are loaded only where a user's line was read.)
    from smalto.source.pallas_edits import with_expansion

    return with_expansion(lines, position.line, position.column)


def _broadcast_of(operation: ir.Operation) -> tuple[int, tuple[ir.Operation, int, bool]] | None:
    """The axis a reduction of a square 2-D tile reduces, and where its values are broadcast
    back to a tile (``_broadcast_back``); None for any other reduction or none broadcast."""
    shape = _shape(operation.operands[0].type)
    if len(shape) != 2 or shape[0] != shape[1]:
        return None  # only a square tile keeps its shapes when the axis changes
    (axis,) = ints(operation.attributes["reduction_dims"]) or (None,)
    if axis not in (0, 1):
        return None
    found = _broadcast_back(operation.results[0], 1 - axis)
    return None if found is None else (axis, found)


def _broadcast_back(value: ir.Value, position: int) -> tuple[ir.Operation, int, bool] | None:
    """From the reduction's result (its values running along ``position`` of the tile), the
    op that broadcasts them back to a full tile, where they run there, and whether the
    way there kept shapes (no keep-dims expansion or reshape)."""
    frontier: list[tuple[ir.Value, int | None, bool, ir.Operation | None]] = [
        (value, None, True, None)
    ]
    seen = 0
    while frontier and seen < _DEPTH:
        current, axis, exact, placer = frontier.pop(0)
        for use in current.uses:
            seen += 1
            owner = use.owner
            user = owner if isinstance(owner, ir.Operation) else owner.operation
            name = user.name
            if len(user.results) != 1:
                continue
            result = user.results[0]
            shape = _shape(result.type)
            if name.startswith(_ELEMENTWISE):
                frontier.append((result, axis, exact, placer))
            elif name == _BROADCAST:
                dims = ints(user.attributes["broadcast_dimensions"])
                at = dims[axis if axis is not None else 0]
                if len(shape) == 2 and 1 not in shape:
                    return placer or user, at, exact
                frontier.append((result, at, False, None))
            elif name in _RESHAPES and len(shape) == 2:
                long = [i for i, n in enumerate(shape) if n != 1]
                if len(long) != 1:
                    if name == "vector.broadcast" and axis is not None and 1 not in shape:
                        return placer or user, axis, exact
                    continue
                moved = long[0] != axis
                frontier.append((result, long[0], False, user if moved else placer))
    return None


def _quoted(code: str | None) -> str | None:
    return f"`{code}`" if code else None


def _shape(ty: ir.Type) -> tuple[int, ...]:
    try:
        return tuple(ir.ShapedType(ty).shape)
    except (ValueError, TypeError):
        return ()


def _tile_family(reduction: ir.Operation) -> str | None:
    """``WGMMA`` or ``TCGEN05``: the layout family of the tile reduced, where its producer
    (through elementwise ops) says it."""
    value = reduction.operands[0]
    for _ in range(_DEPTH):
        owner = value.owner
        if not isinstance(owner, ir.Operation):
            owner = getattr(owner, "operation", None)
        if not isinstance(owner, ir.Operation):
            return None
        if owner.name == "mosaic_gpu.wgmma":
            return "WGMMA"
        if owner.name == "mosaic_gpu.async_load_tmem":
            return "TCGEN05"
        if owner.name.startswith(_ELEMENTWISE) and len(owner.operands) >= 1:
            value = owner.operands[0]
            continue
        return None
    return None


def _layout(family: str | None, values_along: int, axis: int | None = None) -> str:
    """`` (WGMMA_ROW)``, `` (WGMMA_ROW, a reduction over axis 1)``: the layout of a vector of
    one value per row (``values_along`` 0) or per column of a ``family`` tile."""
    parts = [f"{family}_{_SUFFIX[values_along]}"] if family else []
    if axis is not None:
        parts.append(f"a reduction over axis {axis}")
    return f" ({', '.join(parts)})" if parts else ""


def _where(op: Op) -> str:
    position = file_position(op.location)
    return str(position) if position is not None else op.name


def _line(location: ir.Location, sources: Sources) -> tuple[str, int] | None:
    """The source line at ``location`` and the column in it, where the file is found."""
    position = file_position(location)
    if position is None:
        return None
    line = sources.line(position.file, position.line)
    return None if line is None else (line, position.column)


def _words(op: Op, sources: Sources) -> str | None:
    """The author's expression that makes the op's value (``s.max(axis=0)``)."""
    found = _line(op.location, sources)
    if found is None:
        return None
    from smalto.source.pallas_edits import expression_at

    return expression_at(*found, location_name(op.location))


def _expansion(op: ir.Operation, sources: Sources) -> str | None:
    """The author's expression that lays the values down (``m[:, None]``)."""
    found = _line(op.location, sources)
    if found is None:
        return None
    from smalto.source.pallas_edits import expansion_at

    return expansion_at(*found)


def _axis_statement(op: Op, axis: int, sources: Sources) -> tuple[StatementEdit | None, str | None]:
    position = file_position(op.location)
    if position is None:
        return None, None
    lines = sources.lines(position.file)
    if lines is None:
        return None, None
    from smalto.source.pallas_edits import with_axis

    found = with_axis(lines, position.line, position.column, axis, location_name(op.location))
    return found, position.file if found is not None else None


def wrong_axis_reduction(program: Program) -> int | None:
    """The first reduction of the program broadcast back along the axis it reduced (by its
    op id), without reading any source: where a refusal's traceback should end."""
    for op in program.ops:
        if op.name != REDUCTION:
            continue
        found = _broadcast_of(op.operation)
        if found is not None and found[1][1] == found[0]:
            return op.id
    return None


__all__ = ["AxisClue", "axis_clue", "wrong_axis_reduction"]
