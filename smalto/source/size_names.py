"""The kernel's own name for a size a fix writes: ``TCGEN05_M64_COLLECTIVE(n)``, not
``(128)``, where the number is provably what the kernel's ``n`` holds.

A register layout of Pallas with a size parameter (``plgpu.Layout.TCGEN05_M64_COLLECTIVE(
columns)``, and its ``_NATIVE`` form) counts the columns of the value it lays out. Where
that value is a whole TMEM ref loaded (``plgpu.async_load_tmem(acc_tmem, ...)``), its
columns are the last dimension of the ref's declared shape (``plgpu.TMEM((block_m, n),
...)``): the expression written there, read where the layout goes, holds the same number
when each name in it is bound once (a parameter, or a plain assignment at the top of its
scope, run once) and no function between the two binds it again. Anything else (a size
computed by a call, a name bound twice, a shadowing parameter) is not proved the same,
and the literal stays. Whichever the
spelling, ``smalto fix`` lowers the edited script before it writes it."""

from __future__ import annotations

import ast
from collections.abc import Mapping

# Pallas' register layouts whose one positional argument counts the value's columns.
_BY_COLUMNS = frozenset({"TCGEN05_M64_COLLECTIVE", "TCGEN05_M64_COLLECTIVE_NATIVE"})
# What a size expression may be made of: names, their attributes and indices, arithmetic.
_PLAIN = (
    ast.Name,
    ast.Attribute,
    ast.Subscript,
    ast.Constant,
    ast.BinOp,
    ast.UnaryOp,
    ast.Load,
    ast.operator,
    ast.unaryop,
    ast.Slice,
    ast.Tuple,
)
type _Scope = ast.Module | ast.FunctionDef | ast.AsyncFunctionDef | ast.Lambda


def with_columns(text: str, columns: str) -> str:
    """``text``, a layout expression, with the whole-number argument of each layout sized by
    the value's columns written ``columns`` (``TCGEN05_M64_COLLECTIVE(n)``); as given where
    it has none (or does not parse)."""
    try:
        tree = ast.parse(text, mode="eval")
    except SyntaxError:
        return text
    changed = False
    for node in ast.walk(tree):
        if not isinstance(node, ast.Call) or _name(node.func) not in _BY_COLUMNS:
            continue
        if len(node.args) == 1 and not node.keywords:
            (argument,) = node.args
            if isinstance(argument, ast.Constant) and type(argument.value) is int:
                node.args = [ast.parse(columns, mode="eval").body]
                changed = True
    return ast.unparse(tree) if changed else text


def _name(func: ast.expr) -> str:
    if isinstance(func, ast.Attribute):
        return func.attr
    return func.id if isinstance(func, ast.Name) else ""


def same_value_at(
    tree: ast.Module, parents: Mapping[ast.AST, ast.AST], size: ast.expr, use: ast.AST
) -> bool:
    """Whether ``size`` (an expression of the file ``tree``) holds the same value written at
    ``use`` as where it is written: made of names, attributes, indices and arithmetic only,
    each name bound once (at the top of the scope that binds it, or as its parameter), in
    a scope around both places, and by no function around ``use`` inside that scope."""
    if not all(isinstance(node, _PLAIN) for node in ast.walk(size)):
        return False
    if any(isinstance(node, ast.Global | ast.Nonlocal) for node in ast.walk(tree)):
        return False
    if _in_class(size, parents) or _in_class(use, parents):
        return False  # (a class body's names are not seen by the functions in it)
    at_size = _scopes(size, parents, tree)
    at_use = _scopes(use, parents, tree)
    for name in {n.id for n in ast.walk(size) if isinstance(n, ast.Name)}:
        binding = next((s for s in at_size if _bindings(s, name)), None)
        if binding is None or binding not in at_use or not _bound_once_on_top(binding, name):
            return False
        # No function between the binding scope and the use binds the name again.
        if any(_bindings(s, name) for s in at_use[: at_use.index(binding)]):
            return False
    return True


def _in_class(node: ast.AST, parents: Mapping[ast.AST, ast.AST]) -> bool:
    current = parents.get(node)
    while current is not None:
        if isinstance(current, ast.ClassDef):
            return True
        current = parents.get(current)
    return False


def _scopes(node: ast.AST, parents: Mapping[ast.AST, ast.AST], tree: ast.Module) -> list[_Scope]:
    """The scopes around ``node``, innermost first, the module last."""
    found: list[_Scope] = []
    current = parents.get(node)
    while current is not None:
        if isinstance(current, ast.FunctionDef | ast.AsyncFunctionDef | ast.Lambda):
            found.append(current)
        current = parents.get(current)
    return [*found, tree]


def _own_nodes(scope: _Scope) -> list[ast.AST]:
    """The nodes of ``scope`` outside the functions, lambdas and classes it defines."""
    found: list[ast.AST] = []
    stack: list[ast.AST] = list(scope.body) if isinstance(scope.body, list) else [scope.body]
    while stack:
        node = stack.pop()
        found.append(node)
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef | ast.Lambda):
            continue  # (its name is bound here; its insides are another scope)
        stack.extend(ast.iter_child_nodes(node))
    return found


def _bindings(scope: _Scope, name: str) -> int:
    """How many times ``scope`` binds ``name``: parameters, assignments, loop and ``with``
    targets, imports, definitions, walrus, ``except ... as``."""
    count = 0
    if not isinstance(scope, ast.Module):
        arguments = scope.args
        every = [*arguments.posonlyargs, *arguments.args, *arguments.kwonlyargs]
        every += [a for a in (arguments.vararg, arguments.kwarg) if a is not None]
        count += sum(a.arg == name for a in every)
    for node in _own_nodes(scope):
        if isinstance(node, ast.Name) and node.id == name and not isinstance(node.ctx, ast.Load):
            count += 1
        elif isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
            count += node.name == name
        elif isinstance(node, ast.Import | ast.ImportFrom):
            count += sum((a.asname or a.name.split(".")[0]) == name for a in node.names)
        elif isinstance(node, ast.ExceptHandler):
            count += node.name == name
        elif isinstance(node, ast.MatchAs | ast.MatchStar):
            count += node.name == name
    return count


def _bound_once_on_top(scope: _Scope, name: str) -> bool:
    """``name`` bound once in ``scope``: as a parameter, or by a plain assignment that is a
    statement of its body itself (run once, not in a loop or a branch)."""
    if _bindings(scope, name) != 1:
        return False
    if not isinstance(scope, ast.Module):
        arguments = scope.args
        every = [*arguments.posonlyargs, *arguments.args, *arguments.kwonlyargs]
        if any(a.arg == name for a in every):
            return True
    body = scope.body if isinstance(scope.body, list) else []
    return any(
        any(
            isinstance(n, ast.Name) and n.id == name and isinstance(n.ctx, ast.Store)
            for target in targets
            for n in ast.walk(target)
        )
        for statement in body
        if (targets := _assigned(statement))
    )


def _assigned(statement: ast.stmt) -> list[ast.expr]:
    """The targets of a plain assignment (``n = ...``, ``n: int = ...``); none otherwise."""
    if isinstance(statement, ast.Assign):
        return statement.targets
    if isinstance(statement, ast.AnnAssign) and statement.value is not None:
        return [statement.target]
    return []
