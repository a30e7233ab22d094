"""Edits at a Pallas user's source line, in Pallas' own words.

A ``vector_load``/``vector_store`` op comes from ``x_ref[idx]`` or
``o_ref[idx] = value`` at the position its location names (JAX gives the
column of the subscript, 0-based). Unoptimized, the same line reads
``plgpu.load(x_ref.at[idx], optimized=False)`` or ``plgpu.store(o_ref.at[idx],
value, optimized=False)`` (``plgpu.load``/``plgpu.store``: "if True, a
compilation error will be raised if no optimized implementation is
available"). The line is parsed, never run.
"""

from __future__ import annotations

import ast
import textwrap
from dataclasses import dataclass


@dataclass(frozen=True)
class LineEdit:
    """One source line, before and after the edit (both without their indentation)."""

    before: str
    after: str


def unoptimized_transfer(line: str, column: int, *, store: bool) -> LineEdit | None:
    """``line`` with the load (``store=False``) or store whose subscript starts at
    ``column`` made unoptimized; None where the line says something else there (an
    augmented assignment, a statement spread over lines...)."""
    parsed = _parsed(line, column)
    if parsed is None:
        return None
    code, tree, at = parsed
    if store:
        for node in ast.walk(tree):
            if isinstance(node, ast.Assign) and len(node.targets) == 1:
                target = node.targets[0]
                if isinstance(target, ast.Subscript) and target.col_offset == at:
                    value = ast.get_source_segment(code, node.value)
                    if value is None:
                        return None
                    call = f"plgpu.store({_ref_at(code, target)}, {value}, optimized=False)"
                    return LineEdit(code, _replace(code, node, call))
        return None
    # The ref's own subscript: the innermost one starting there (``w_ref[:, 1][:, None]``
    # indexes the loaded value too, from the same column).
    loads = [
        node
        for node in ast.walk(tree)
        if isinstance(node, ast.Subscript)
        and isinstance(node.ctx, ast.Load)
        and node.col_offset == at
    ]
    if not loads:
        return None
    node = min(loads, key=lambda n: n.end_col_offset or 0)
    call = f"plgpu.load({_ref_at(code, node)}, optimized=False)"
    return LineEdit(code, _replace(code, node, call))


def _parsed(line: str, column: int) -> tuple[str, ast.Module, int] | None:
    """The line without its indentation, parsed, and the column in it; None where the line
    is not Python alone (a statement spread over lines)."""
    indent = len(line) - len(line.lstrip())
    code = textwrap.dedent(line).rstrip()
    try:
        tree = ast.parse(code)
    except SyntaxError:
        return None
    return code, tree, column - indent


def _ref_at(code: str, subscript: ast.Subscript) -> str:
    """``x_ref`` for ``x_ref[...]``, else ``x_ref.at[idx]``."""
    ref = ast.get_source_segment(code, subscript.value) or ""
    index = subscript.slice
    if isinstance(index, ast.Constant) and index.value is Ellipsis:
        return ref
    return f"{ref}.at[{ast.get_source_segment(code, index)}]"


def _replace(code: str, node: ast.expr | ast.stmt, text: str) -> str:
    start, end = node.col_offset, node.end_col_offset  # one line: offsets in it
    assert end is not None
    return code[:start] + text + code[end:]


# JAX primitives by the name of the call that makes them, where the two differ.
_CALLS = {"convert_element_type": "astype", "dot_general": "dot"}


def source_name(
    line: str, column: int, *, load: bool = False, primitive: str | None = None
) -> str | None:
    """What the user calls the value an op at ``column`` of ``line`` makes: the name it is
    assigned to (``s = jnp.sum(x, axis=1)`` -> ``s``), else the expression there
    (``jnp.sum(x, axis=1)``; a long call as ``plgpu.layout_cast(...)``); for a ``load``,
    the ref's own subscript (``w_ref[:, 1]`` in ``w_ref[:, 1][:, None]``); where
    several expressions start there, the call of the ``primitive`` JAX names the op
    after (``reduce_sum``: ``jnp.sum(acc, axis=1)`` in ``jnp.sum(acc, axis=1).astype(t)``).
    None where the line says nothing there (no expression starts at the column, or it
    is not Python alone)."""
    parsed = _parsed(line, column)
    if parsed is None:
        return None
    code, tree, at = parsed
    starting = _starting(tree, at)
    if not starting:
        return None
    named = [n for n in starting if isinstance(n, ast.Call) and _calls(n, primitive)]
    node: ast.expr
    if load and (refs := [n for n in starting if isinstance(n, ast.Subscript)]):
        node = min(refs, key=lambda n: n.end_col_offset or 0)
    elif named:
        node = min(named, key=lambda n: n.end_col_offset or 0)
    else:
        node = max(starting, key=lambda n: n.end_col_offset or 0)
    for statement in ast.walk(tree):
        if (
            isinstance(statement, ast.Assign)
            and statement.value is node
            and len(statement.targets) == 1
            and isinstance(statement.targets[0], ast.Name)
        ):
            return statement.targets[0].id
    text = ast.get_source_segment(code, node) or ""
    if len(text) > 40 and isinstance(node, ast.Call):
        text = f"{ast.get_source_segment(code, node.func)}(...)"
    return text if 0 < len(text) <= 40 else None


def _starting(tree: ast.AST, at: int) -> list[ast.expr]:
    """The expressions of ``tree`` read (not assigned to) that start at column ``at``."""
    return [
        node
        for node in ast.walk(tree)
        if isinstance(node, ast.expr)
        and node.col_offset == at
        and not isinstance(getattr(node, "ctx", None), ast.Store)
    ]


def _calls(call: ast.Call, primitive: str | None) -> bool:
    """Whether ``call`` is the one making JAX's ``primitive`` (``reduce_max``: ``max``)."""
    if not primitive:
        return False
    func = call.func
    name = func.attr if isinstance(func, ast.Attribute) else getattr(func, "id", "")
    wanted = _CALLS.get(primitive, primitive)
    return name == wanted or wanted.endswith(f"_{name}") or name.endswith(f"_{wanted}")


# --- the layout a line states: ``plgpu.layout_cast(x, L)`` or ``...(..., layout=L)`` ------


@dataclass(frozen=True)
class SourceChange:
    """An edit of the user's file as a tool applies it: lines ``line`` to ``line + n - 1``
    of ``file`` (as the location names it), which read ``old`` (``n`` lines joined by
    newlines, indentation kept), become ``new``."""

    file: str
    line: int
    old: str
    new: str


@dataclass(frozen=True)
class StatementEdit:
    """A statement of the user's file, as written and as edited: ``before``/``after`` are its
    whole lines, indentation kept (a statement may span lines: ``after`` may have fewer)."""

    first_line: int  # 1-based, in the file
    before: tuple[str, ...]
    after: tuple[str, ...]
    call: str = ""  # the call whose layout changed, as written (``plgpu.load``)

    @property
    def last_line(self) -> int:
        return self.first_line + len(self.before) - 1

    @property
    def text(self) -> str:
        """The edited statement on one line, as it can be pasted (``bias = plgpu.load(...)``)."""
        return _one_line(self.after)

    @property
    def written(self) -> str:
        """The statement as written, on one line."""
        return _one_line(self.before)

    def change(self, file: str) -> SourceChange:
        """The edit as a tool applies it to ``file``."""
        return SourceChange(file, self.first_line, "\n".join(self.before), "\n".join(self.after))


# How far a statement may run on from the line JAX locates it at.
_MAX_STATEMENT_LINES = 12


def stated_layout(
    lines: list[str], line: int, column: int, layout: str | None
) -> StatementEdit | None:
    """The statement at ``line`` (1-based) of ``lines`` with the layout stated by the call
    starting at ``column`` made ``layout`` (``None``: the layout is no longer stated):
    the second argument of ``plgpu.layout_cast(x, L)`` (dropped: ``x`` alone) or the
    ``layout=`` keyword of any other call (``plgpu.load``, ``plgpu.broadcasted_iota``,
    ``plgpu.async_load_tmem``...; dropped: the keyword removed). None where no such
    call starts there, or the statement is not Python alone."""
    found = _statement(lines, line)
    if found is None:
        return None
    code, tree, indent, count = found
    at = column - indent
    calls = [
        node
        for node in ast.walk(tree)
        if isinstance(node, ast.Call)
        and node.lineno == 1
        and node.col_offset == at
        and _layout_argument(node) is not None
    ]
    if not calls:
        return None
    call = min(calls, key=lambda n: (n.end_lineno or 0, n.end_col_offset or 0))
    argument = _layout_argument(call)
    assert argument is not None
    starts = _line_starts(code)

    def offset(lineno: int | None, col: int | None) -> int:
        assert lineno is not None and col is not None
        return starts[lineno - 1] + col

    if layout is not None:
        stated = argument.value if isinstance(argument, ast.keyword) else argument
        start = offset(stated.lineno, stated.col_offset)
        end = offset(stated.end_lineno, stated.end_col_offset)
        edited = code[:start] + layout + code[end:]
    elif isinstance(argument, ast.keyword):
        # From the end of what comes before the keyword (its comma too) to its own end.
        before: list[ast.expr | ast.keyword] = [
            *call.args,
            *(k for k in call.keywords if k is not argument),
        ]
        previous = [
            n
            for n in before
            if (n.end_lineno, n.end_col_offset) <= (argument.lineno, argument.col_offset)
        ]
        if not previous:
            return None
        last = max(previous, key=lambda n: (n.end_lineno or 0, n.end_col_offset or 0))
        start = offset(last.end_lineno, last.end_col_offset)
        end = offset(argument.end_lineno, argument.end_col_offset)
        edited = code[:start] + code[end:]
    else:  # ``plgpu.layout_cast(x, L)``: ``x``
        value = call.args[0] if call.args else None
        text = ast.get_source_segment(code, value) if value is not None else None
        if text is None:
            return None
        if "\n" in text or isinstance(value, ast.NamedExpr):
            text = f"({text})"
        start = offset(call.lineno, call.col_offset)
        end = offset(call.end_lineno, call.end_col_offset)
        edited = code[:start] + text + code[end:]
    called = ast.get_source_segment(code, call.func) or ""
    return _edited(lines, line, count, indent, edited, called)


def cast_where_defined(
    lines: list[str], line: int, column: int, layout: str
) -> StatementEdit | None:
    """``name = expr`` at ``line`` made ``name = plgpu.layout_cast(expr, layout)``, where the
    expression assigned starts at ``column``; None where the statement says otherwise."""
    found = _statement(lines, line)
    if found is None:
        return None
    code, tree, indent, count = found
    statement = tree.body[0] if len(tree.body) == 1 else None
    if not (
        isinstance(statement, ast.Assign)
        and len(statement.targets) == 1
        and isinstance(statement.targets[0], ast.Name)
        and statement.value.lineno == 1
        and statement.value.col_offset == column - indent
    ):
        return None
    value = ast.get_source_segment(code, statement.value)
    if value is None:
        return None
    edited = f"{statement.targets[0].id} = plgpu.layout_cast({value}, {layout})"
    return _edited(lines, line, count, indent, edited)


def _layout_argument(call: ast.Call) -> ast.expr | ast.keyword | None:
    """The argument of ``call`` that states a layout: ``layout_cast``'s second, else a
    ``layout=`` keyword."""
    func = call.func
    name = func.attr if isinstance(func, ast.Attribute) else getattr(func, "id", "")
    for keyword in call.keywords:
        if keyword.arg == "layout" or (name == "layout_cast" and keyword.arg == "new_layout"):
            return keyword
    if name == "layout_cast" and len(call.args) == 2:
        return call.args[1]
    return None


def _statement(lines: list[str], line: int) -> tuple[str, ast.Module, int, int] | None:
    """The statement starting at ``line`` (1-based): its code without the first line's
    indentation, parsed, that indentation, and how many lines it spans."""
    if not 0 < line <= len(lines):
        return None
    first = lines[line - 1]
    indent = len(first) - len(first.lstrip())
    for count in range(1, _MAX_STATEMENT_LINES + 1):
        chunk = lines[line - 1 : line - 1 + count]
        if len(chunk) < count:
            return None
        if any(part.strip() and len(part) - len(part.lstrip()) < indent for part in chunk[1:]):
            return None  # the block ended before the statement did
        code = "\n".join(part[indent:] for part in chunk).rstrip()
        try:
            tree = ast.parse(code)
        except SyntaxError:
            continue
        return (code, tree, indent, count) if len(tree.body) == 1 else None
    return None


def _edited(
    lines: list[str], line: int, count: int, indent: int, edited: str, call: str = ""
) -> StatementEdit:
    """The ``count`` lines of the statement at ``line`` and its ``edited`` code (without
    the first line's indentation), indented back."""
    pad = " " * indent
    after = tuple(pad + part if part.strip() else part for part in edited.split("\n"))
    return StatementEdit(line, tuple(lines[line - 1 : line - 1 + count]), after, call)


def _line_starts(code: str) -> list[int]:
    starts, total = [], 0
    for part in code.split("\n"):
        starts.append(total)
        total += len(part) + 1
    return starts


def _one_line(lines: tuple[str, ...]) -> str:
    """Lines of one statement joined as one line (a call's arguments spread over lines)."""
    text = ""
    for part in (p.strip() for p in lines):
        if not part:
            continue
        if text and not text.endswith(("(", "[", "{")) and not part.startswith((")", "]", "}")):
            text += " "
        text += part
    return text


# --- a reduction's axis ----------------------------------------------------------------------


def expression_at(line: str, column: int, primitive: str | None = None) -> str | None:
    """The expression the user wrote at ``column`` of ``line``, as written
    (``s.max(axis=0)``; where several start there, the call of JAX's ``primitive``)."""
    parsed = _parsed(line, column)
    if parsed is None:
        return None
    code, tree, at = parsed
    starting = _starting(tree, at)
    named = [n for n in starting if isinstance(n, ast.Call) and _calls(n, primitive)]
    if not (named or starting):
        return None
    node = min(named, key=lambda n: n.end_col_offset or 0) if named else starting[0]
    return ast.get_source_segment(code, node)


def expansion_at(line: str, column: int) -> str | None:
    """Where a value gets its new axis on ``line``, from ``column`` on: ``m[:, None]``,
    ``m.reshape(-1, 1)``, ``jnp.expand_dims(m, 1)``; None where the line shows none."""
    parsed = _parsed(line, column)
    if parsed is None:
        return None
    code, tree, at = parsed
    found: list[ast.expr] = []
    for node in ast.walk(tree):
        if not isinstance(node, ast.expr) or node.col_offset < at:
            continue
        if isinstance(node, ast.Subscript) and _has_none(node.slice):
            found.append(node)
        elif isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute):
            if node.func.attr in ("reshape", "expand_dims", "broadcast_to"):
                found.append(node)
    if not found:
        return None
    node = min(found, key=lambda n: n.col_offset)
    return ast.get_source_segment(code, node)


def _has_none(index: ast.expr) -> bool:
    parts = index.elts if isinstance(index, ast.Tuple) else [index]
    return any(isinstance(p, ast.Constant) and p.value is None for p in parts)


def with_expansion(lines: list[str], line: int, column: int) -> StatementEdit | None:
    """The statement at ``line`` with the new axis of the first indexing at ``column`` or
    after it on the other side (``m[None, :]`` <-> ``m[:, None]``): the values broadcast
    along the other axis; None where the statement adds no axis that way."""
    found = _statement(lines, line)
    if found is None:
        return None
    code, tree, indent, count = found
    at = column - indent
    subscripts = [
        node
        for node in ast.walk(tree)
        if isinstance(node, ast.Subscript)
        and node.lineno == 1
        and node.col_offset >= at
        and _swappable(node.slice)
    ]
    if not subscripts:
        return None
    node = min(subscripts, key=lambda n: n.col_offset)
    index = node.slice
    assert isinstance(index, ast.Tuple)
    first, second = (ast.get_source_segment(code, e) or "" for e in index.elts)
    starts = _line_starts(code)
    assert index.end_lineno is not None and index.end_col_offset is not None
    start = starts[index.lineno - 1] + index.col_offset
    end = starts[index.end_lineno - 1] + index.end_col_offset
    edited = code[:start] + f"{second}, {first}" + code[end:]
    return _edited(lines, line, count, indent, edited)


def _swappable(index: ast.expr) -> bool:
    """``None, :`` or ``:, None``: a vector's one axis and a new one."""
    if not isinstance(index, ast.Tuple) or len(index.elts) != 2:
        return False
    kinds = [
        "none"
        if isinstance(e, ast.Constant) and e.value is None
        else "all"
        if isinstance(e, ast.Slice) and e.lower is e.upper is e.step is None
        else ""
        for e in index.elts
    ]
    return sorted(kinds) == ["all", "none"]


def with_axis(
    lines: list[str], line: int, column: int, axis: int, primitive: str | None = None
) -> StatementEdit | None:
    """The statement at ``line`` with the reduction called at ``column`` (``s.max(axis=0)``,
    ``jnp.sum(s, 0)``) made over ``axis``; None where its axis is not written there."""
    found = _statement(lines, line)
    if found is None:
        return None
    code, tree, indent, count = found
    at = column - indent
    calls = [
        node
        for node in ast.walk(tree)
        if isinstance(node, ast.Call) and node.lineno == 1 and node.col_offset == at
    ]
    named = [c for c in calls if _calls(c, primitive)] or calls
    if not named:
        return None
    call = min(named, key=lambda n: (n.end_lineno or 0, n.end_col_offset or 0))
    stated: ast.expr | None = next((k.value for k in call.keywords if k.arg == "axis"), None)
    if stated is None and isinstance(call.func, ast.Attribute) and call.args:
        # ``s.max(0)``: the method's first argument; ``jnp.max(s, 0)``: the function's second.
        module_call = isinstance(call.func.value, ast.Name) and call.func.value.id in (
            "jnp",
            "np",
            "lax",
        )
        position = 1 if module_call else 0
        stated = call.args[position] if len(call.args) > position else None
    if stated is None:
        return None
    starts = _line_starts(code)
    assert stated.end_lineno is not None and stated.end_col_offset is not None
    start = starts[stated.lineno - 1] + stated.col_offset
    end = starts[stated.end_lineno - 1] + stated.end_col_offset
    edited = code[:start] + str(axis) + code[end:]
    called = ast.get_source_segment(code, call.func) or ""
    return _edited(lines, line, count, indent, edited, called)
