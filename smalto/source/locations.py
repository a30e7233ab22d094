"""Where an op comes from, in words: ``kernel.py:75:20``, never MLIR's location syntax.

JAX wraps the user's source position in name locations (one for the
primitive, one more with a ``:`` for its lowering), and in call sites when it
keeps more than one frame, e.g.
``loc("layout_cast:"("layout_cast"("kernel.py":75:20)))``. Messages show the
innermost file position (the user's own file first, JAX's only if nothing
else is there) and, apart, the name the location carries.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Protocol, cast

from jax._src.lib.mlir import ir

from smalto.basics.records import value_class

_DEPTH = 64  # a location is a tree; nothing real nests this deep


@value_class(frozen=True)
class FilePosition:
    file: str
    line: int
    column: int

    def __str__(self) -> str:
        return f"{self.file}:{self.line}:{self.column}"


def _as[L: ir.Location](kind: type[L], location: ir.Location) -> L | None:
    """``location`` as the subclass ``kind`` (the bindings' cast), or None if it is not one.

    The bindings hand out locations already cast to their kind's class, and the
    kinds are disjoint: a class test answers (a cast that fails raises, which
    costs about 4 us); only a plain ``ir.Location`` is cast.
    """
    if isinstance(location, kind):
        return location
    if type(location) is not ir.Location:
        return None  # already cast, to another kind
    try:
        # (The subclasses' constructors are the casts; typeshed gives them Location's.)
        return cast("Callable[[ir.Location], L]", kind)(location)
    except (ValueError, TypeError):
        return None


def _inner(location: ir.Location) -> list[ir.Location] | None:
    """The locations a wrapping location holds; None for a leaf."""
    if (name := _as(ir.NameLoc, location)) is not None:
        return [name.child_loc]
    if (call := _as(ir.CallSiteLoc, location)) is not None:
        # The callee is the frame that made the op; its callers come after.
        return [call.callee, call.caller]
    if (fused := _as(ir.FusedLoc, location)) is not None:
        # The bindings type a fused location's parts as ``object``; they are locations.
        return cast(list[ir.Location], list(fused.locations))
    return None


def frames(location: ir.Location) -> list[tuple[str | None, FilePosition]]:
    """Every file position inside ``location``, innermost call first, each with the name
    of the name location directly around it (JAX: the Python function), if any."""
    if isinstance(location, ir.FileLineColLoc):  # the usual location of a parsed op: a leaf
        return [(None, FilePosition(location.filename, location.start_line, location.start_col))]
    out: list[tuple[str | None, FilePosition]] = []
    # Depth first, each location's parts in order (pushed last to first). A loop, not a
    # recursive closure: that would be a cycle (the function and its own cell) left for
    # the collector on every call.
    stack: list[tuple[ir.Location, str | None, int]] = [(location, None, 0)]
    while stack:
        loc, name, depth = stack.pop()
        if depth > _DEPTH:
            continue
        if (file := _as(ir.FileLineColLoc, loc)) is not None:
            out.append((name, FilePosition(file.filename, file.start_line, file.start_col)))
            continue
        if (named := _as(ir.NameLoc, loc)) is not None:
            stack.append((named.child_loc, named.name_str, depth + 1))
            continue
        children = _inner(loc) or ()
        stack.extend((child, None, depth + 1) for child in reversed(children))
    return out


def file_positions(location: ir.Location) -> list[FilePosition]:
    """Every file position inside ``location``, innermost call first."""
    return [position for _, position in frames(location)]


def _is_library(path: str) -> bool:
    return "site-packages" in path or "/jax/_src/" in path


def file_position(location: ir.Location) -> FilePosition | None:
    """The position to show: the innermost one in the user's files, else the innermost one."""
    positions = file_positions(location)
    for position in positions:
        if not _is_library(position.file):
            return position
    return positions[0] if positions else None


def location_name(location: ir.Location) -> str | None:
    """The name a location carries (JAX: the primitive, e.g. ``layout_cast``), if any."""
    loc, depth = _as(ir.NameLoc, location), 0
    while loc is not None and depth <= _DEPTH:
        name = loc.name_str.rstrip(":")
        if name:
            return name
        loc, depth = _as(ir.NameLoc, loc.child_loc), depth + 1
    return None


def location_text(location: ir.Location) -> str:
    """``file:line:col`` of an op's location; MLIR's own text only when it has no file."""
    position = file_position(location)
    if position is not None:
        return str(position)
    name = location_name(location)
    if name is not None:
        return name
    text = str(location)
    return text.removeprefix("loc(").removesuffix(")")


class Located(Protocol):
    """An op as messages name it: ``Op`` of the program view, or an ``ir.Operation``."""

    @property
    def name(self) -> str: ...

    @property
    def location(self) -> ir.Location: ...


@value_class(frozen=True)
class Place:
    """Where a changed op is, for the user: the location in words, the name JAX gives it,
    and the user's source position (None for parsed text without a file)."""

    text: str  # ``kernels.py:88:12``, or ``(no location)``
    name: str | None  # the primitive's name (``swap``), if the location has one
    position: FilePosition | None


def place(location: ir.Location) -> Place:
    """``location`` as ``Place`` says it (what the rewrites tell the user they changed)."""
    position = file_position(location)
    if position is not None and position.file == "-":  # parsed text without a file
        position = None
    text = location_text(location)
    return Place("(no location)" if text == "unknown" else text, location_name(location), position)


def op_text(op: Located) -> str:
    """`` `mosaic_gpu.layout_cast` at kernel.py:75:20``; with the name JAX gave the location
    (the primitive, e.g. ``swap`` for a ``vector_store``) when it says more than the op's.
    An op JAX made with no file position of its own (the implicit ``broadcast_in_dim`` of
    a ``jnp.where``) is placed at the kernel line of the op that uses it (else of the op
    that makes its operand): every op of a message is at a line of the kernel."""
    location = op.location  # (read once: each read is a binding call)
    where = _op_location_text(op, location)
    name = location_name(location)
    if name is None or name == op.name.rsplit(".", 1)[-1] or name == where:
        return f"`{op.name}` at {where}"
    return f"`{op.name}` (`{name}`) at {where}"


def op_location_text(op: Located) -> str:
    """``location_text`` of the op, or where it has no file position, of its nearest
    neighbour that has one (its users first: JAX makes such ops for the line that
    uses them)."""
    return _op_location_text(op, op.location)


def _op_location_text(op: Located, location: ir.Location) -> str:
    """``op_location_text``, ``location`` being the op's."""
    position = file_position(location)
    if position is not None:
        return str(position)  # (what ``location_text`` says of it)
    operation = getattr(op, "operation", op)
    found = _neighbour_position(operation) if isinstance(operation, ir.Operation) else None
    return str(found) if found is not None else location_text(location)


_NEIGHBOURS = 16  # ops looked at around a located-nowhere op, at most


def _neighbour_position(operation: ir.Operation) -> FilePosition | None:
    queue, seen = [operation], 0
    while queue and seen < _NEIGHBOURS:
        current = queue.pop(0)
        seen += 1
        if current is not operation and (found := file_position(current.location)):
            return found
        for result in current.results:
            for use in result.uses:
                user = use.owner
                queue.append(user if isinstance(user, ir.Operation) else user.operation)
        for operand in current.operands:
            producer = operand.owner  # an op, or the block of a block argument
            if isinstance(producer, ir.Operation):
                queue.append(producer)
            elif isinstance(producer, ir.OpView):
                queue.append(producer.operation)
    return None
