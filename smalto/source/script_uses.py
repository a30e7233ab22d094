"""Which other functions of a script use what an edit changes.

``smalto fix`` fixes one function (``SCRIPT.py:FUNCTION``), but a fix may land
outside it: in a helper at the top of the file, or a layout constant, that
other functions of the file use too. Read from the script's syntax alone: each
top-level definition (a function, a class, an assignment) and the top-level
names it mentions; the edited definition's other users are the top-level
functions that reach it without going through FUNCTION, and that FUNCTION does
not reach itself (those are its own helpers: lowering FUNCTION checks them).
"""

from __future__ import annotations

import ast
from collections.abc import Iterable
from dataclasses import dataclass


@dataclass(frozen=True)
class SharedDefinition:
    """A top-level definition an edit changes, and the script's other functions using it."""

    name: str
    users: tuple[str, ...]


def shared_definitions(text: str, lines: Iterable[int], function: str) -> list[SharedDefinition]:
    """The top-level definitions holding ``lines`` (1-based) of the script ``text`` that
    other top-level functions use besides ``function``, each with those functions (in the
    file's order). None where the edit is inside ``function``'s own definition or in
    helpers only it uses. Raises ``SyntaxError`` where the text is no Python."""
    module = ast.parse(text.removeprefix("\ufeff"))
    statements = [s for s in module.body if _defines(s)]
    mentions: dict[str, set[str]] = {}
    for statement in statements:
        used = {n.id for n in ast.walk(statement) if isinstance(n, ast.Name)}
        for name in _defines(statement):
            mentions.setdefault(name, set()).update(used - {name})
    own = _reached(mentions, function, avoiding=None)
    functions = [
        s.name
        for s in statements
        if isinstance(s, ast.FunctionDef | ast.AsyncFunctionDef)
        and s.name != function
        and s.name not in own
    ]
    shared: list[SharedDefinition] = []
    for statement in _holding(statements, lines):
        names = _defines(statement)
        if function in names:
            continue  # the function being fixed itself
        users = tuple(
            dict.fromkeys(
                g
                for g in functions
                if g not in names and names & _reached(mentions, g, avoiding=function)
            )
        )
        if users:
            shared.append(SharedDefinition(", ".join(sorted(names)), users))
    return shared


def _defines(statement: ast.stmt) -> set[str]:
    """The top-level names a statement defines (none for imports and other statements)."""
    if isinstance(statement, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
        return {statement.name}
    targets: list[ast.expr] = []
    if isinstance(statement, ast.Assign):
        targets = statement.targets
    elif isinstance(statement, ast.AnnAssign | ast.AugAssign):
        targets = [statement.target]
    return {n.id for t in targets for n in ast.walk(t) if isinstance(n, ast.Name)}


def _reached(mentions: dict[str, set[str]], start: str, *, avoiding: str | None) -> set[str]:
    """The top-level names ``start`` uses, directly or through others (not through
    ``avoiding``: what it reaches only by calling that function is that function's)."""
    seen: set[str] = set()
    todo = [start]
    while todo:
        for name in mentions.get(todo.pop(), ()):
            if name not in seen and name != avoiding and name in mentions:
                seen.add(name)
                todo.append(name)
    return seen


def _holding(statements: list[ast.stmt], lines: Iterable[int]) -> list[ast.stmt]:
    """The statements (decorators included) holding any of ``lines``, in order."""
    wanted = set(lines)
    held = []
    for statement in statements:
        decorators = getattr(statement, "decorator_list", [])
        first = min([statement.lineno, *(d.lineno for d in decorators)])
        last = statement.end_lineno or statement.lineno
        if any(first <= line <= last for line in wanted):
            held.append(statement)
    return held
