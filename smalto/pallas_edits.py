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


def _replace(code: str, node: ast.AST, text: str) -> str:
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
    starting = [
        node
        for node in ast.walk(tree)
        if isinstance(node, ast.expr)
        and node.col_offset == at
        and not isinstance(getattr(node, "ctx", None), ast.Store)
    ]
    if not starting:
        return None
    named = [n for n in starting if isinstance(n, ast.Call) and _calls(n, primitive)]
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


def _calls(call: ast.Call, primitive: str | None) -> bool:
    """Whether ``call`` is the one making JAX's ``primitive`` (``reduce_max``: ``max``)."""
    if not primitive:
        return False
    func = call.func
    name = func.attr if isinstance(func, ast.Attribute) else getattr(func, "id", "")
    wanted = _CALLS.get(primitive, primitive)
    return name == wanted or wanted.endswith(f"_{name}") or name.endswith(f"_{wanted}")
