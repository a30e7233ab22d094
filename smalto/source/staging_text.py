"""The staged epilogue's text: a GMEM store (or load) of a Pallas kernel's source rewritten
to go through an SMEM scratch with a TMA copy, built so that no name changes binding.

At a store ``REF[INDEX] = EXPR`` (``REF`` a ref or a view of one: ``o_ref``,
``o_ref.at[i]``; ``INDEX`` anything, ``...`` for all), in the file's own names
for Pallas and its Mosaic GPU module::

    def _store_o_ref_through_smem(o_ref_smem):
        o_ref_smem[...] = EXPR
        plgpu.commit_smem()
        plgpu.copy_smem_to_gmem(o_ref_smem, o_ref.at[INDEX])
        plgpu.wait_smem_to_gmem(0)

    pl.run_scoped(
        _store_o_ref_through_smem,
        plgpu.SMEM(o_ref.at[INDEX].shape, o_ref.dtype, transforms=(...)),
    )

Why it computes the same: the same expression, on the same values, is stored
whole into a scratch of the destination's shape and dtype and copied whole to
the same destination; ``wait_smem_to_gmem(0)`` waits for the copy before the
scratch is released. The expression moves into a nested function, which is
the one thing that could change what a name means. So the construction holds
only where no name changes binding (``binding_problem``):

- a name the expression binds (a walrus, ``(s := acc + 1.0).astype(...)``)
  would be bound in the nested function, and the kernel's later ``s`` would
  read the old value: the expression is then evaluated where it was written,
  into a fresh name, and only that name moves (``o_ref_value = EXPR``);
- a ``yield``/``await`` or a bare ``super()`` cannot move at all: not written;
- a statement in a class body (whose names a nested function does not see), or
  at the top of a module, is not a kernel's: not written.

A comprehension or a lambda inside the expression moves whole, with its own
names. Every fresh name (the function, the scratch, the value) is one the
file does not use anywhere.

The load's mirror takes ``REF[INDEX]`` out of its statement: a TMA copy into a
scratch, waited for, the load from it, and the statement reads the loaded
value. The load is then evaluated before the rest of its statement, so it is
written only where that changes nothing: not inside a comprehension, generator
or lambda (their names would become the kernel's: ``bias_ref[j] for j in ...``),
not on one branch of a conditional expression or of ``and``/``or``, and not in
a statement that binds a name with a walrus. Where a construction does not
hold, ``Staging.refusal`` says why in one line.
"""

from __future__ import annotations

import ast
from dataclasses import dataclass

from smalto.source.lines import python_lines
from smalto.source.text_style import indent_step

_PALLAS = "jax.experimental.pallas"
# The statements a load can be taken out of: evaluated once, where written.
_SIMPLE = (ast.Assign, ast.AugAssign, ast.AnnAssign, ast.Expr, ast.Return)
# Where a part of an expression has names of its own.
_SCOPES = (ast.Lambda, ast.GeneratorExp, ast.ListComp, ast.SetComp, ast.DictComp)


@dataclass(frozen=True)
class Staged:
    """The staged form of a statement: the lines it spans and their replacement."""

    first: int  # 1-based, the statement's first line
    last: int  # its last line
    original: str  # the text of those lines (no line end after the last)
    replacement: str
    store: bool


@dataclass(frozen=True)
class Refused:
    """Why a transfer is not staged, in one line."""

    line: int
    reason: str


class Staging:
    """One Python file, parsed, with what staging a transfer in it needs: its names for
    Pallas and its Mosaic GPU module, every name it uses, each node's parent."""

    def __init__(self, text: str) -> None:
        self.text = text
        self.lines = python_lines(text)
        self.tree = ast.parse(text.removeprefix("\ufeff"))
        self.parents: dict[ast.AST, ast.AST] = {}
        for node in ast.walk(self.tree):
            for child in ast.iter_child_nodes(node):
                self.parents[child] = node
        self.plgpu, self.pallas = _aliases(self.tree)
        self.step = indent_step(text)  # the file's own step of indentation (2 spaces, 4...)
        self._imports = True
        self.names = {n.id for n in ast.walk(self.tree) if isinstance(n, ast.Name)}
        self.names |= {
            n.name
            for n in ast.walk(self.tree)
            if isinstance(n, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef)
        }
        self.names |= {a.arg for a in ast.walk(self.tree) if isinstance(a, ast.arg)}

    def staged(
        self, line: int, column: int, store: bool, transforms: str, *, imports: bool = True
    ) -> Staged | Refused:
        """The transfer written at ``line``:``column`` (a store, or a load) staged through
        a scratch with ``transforms`` (Python text, empty for none). ``imports``: where the
        file has no name for Pallas, the block imports it (not where an earlier block of
        the same function already does)."""
        self._imports = imports
        if self.plgpu is None:
            return Refused(line, "the file imports no `jax.experimental.pallas.mosaic_gpu`")
        statement = self._statement_at(line)
        if statement is None:
            return Refused(line, "no statement of its own starts on this line")
        scope = self._scope_of(statement)
        if not isinstance(scope, ast.FunctionDef | ast.AsyncFunctionDef):
            return Refused(line, "the transfer is not written in a function")
        if store:
            return self._store(statement, transforms)
        return self._load(statement, line, column, transforms)

    def _store(self, statement: ast.stmt, transforms: str) -> Staged | Refused:
        line = statement.lineno
        if not (
            isinstance(statement, ast.Assign)
            and len(statement.targets) == 1
            and isinstance(statement.targets[0], ast.Subscript)
        ):
            return Refused(line, "the store is not written `REF[INDEX] = VALUE`")
        target = statement.targets[0]
        base = _base_ref(target.value)
        if base is None:
            return Refused(line, "the stored ref is not a name or a `.at[...]` view of one")
        value, ref, index = (
            self._segment(statement.value),
            self._segment(target.value),
            self._segment(target.slice),
        )
        cannot = _cannot_move(statement.value) or _cannot_move(target)
        if cannot:
            return Refused(line, f"the store {cannot}: it cannot move into a nested function")
        if _binds(target):
            return Refused(line, "the store's index binds a name (a walrus)")
        plgpu, indent, end = self.plgpu, self._indent(line), self._ending(_end_line(statement))
        step = self.step
        assert plgpu is not None
        head, pl = self._pallas_import(indent)
        function = self._fresh(f"_store_{base}_through_smem")
        scratch = self._fresh(f"{base}_smem")
        destination = ref if index == "..." else f"{ref}.at[{index}]"
        comment = self._comment(statement)
        lines = [*head]
        if _binds(statement.value):
            # The walrus binds its name where it is written: the value is evaluated there,
            # and only a fresh name holding it moves into the nested function.
            held = self._fresh(f"{base}_value")
            lines += [f"{indent}{held} = {value}", ""]
            value = held
        keyword = f", transforms={transforms}" if transforms else ""
        lines += [
            f"{indent}def {function}({scratch}):",
            f"{indent}{step}{scratch}[...] = {value}{comment}",
            f"{indent}{step}{plgpu}.commit_smem()",
            f"{indent}{step}{plgpu}.copy_smem_to_gmem({scratch}, {destination})",
            f"{indent}{step}{plgpu}.wait_smem_to_gmem(0)",
            "",
            f"{indent}{pl}.run_scoped(",
            f"{indent}{step}{function},",
            f"{indent}{step}{plgpu}.SMEM({destination}.shape, {base}.dtype{keyword}),",
            f"{indent})",
        ]
        return self._made(statement, lines, end, store=True)

    def _load(
        self, statement: ast.stmt, line: int, column: int, transforms: str
    ) -> Staged | Refused:
        if not isinstance(statement, _SIMPLE):
            return Refused(line, "the load is not in a simple statement (evaluated once)")
        found = self._subscript_at(statement, line, column)
        if found is None:
            return Refused(line, "no load `REF[INDEX]` starts where the transfer is written")
        reason = self._hoisting_problem(statement, found)
        if reason:
            return Refused(line, f"the load {reason}")
        base = _base_ref(found.value)
        if base is None:
            return Refused(line, "the loaded ref is not a name or a `.at[...]` view of one")
        plgpu, indent, end = self.plgpu, self._indent(statement.lineno), self._ending(line)
        step = self.step
        assert plgpu is not None
        head, pl = self._pallas_import(indent)
        ref, index = self._segment(found.value), self._segment(found.slice)
        function = self._fresh(f"_load_{base}_through_smem")
        scratch = self._fresh(f"{base}_smem")
        barrier = self._fresh(f"{base}_copied")
        loaded = self._fresh(f"{base}_loaded")
        source = ref if index == "..." else f"{ref}.at[{index}]"
        keyword = f", transforms={transforms}" if transforms else ""
        written = self._statement_text(statement)
        start = self._offset_in(statement, found.lineno, found.col_offset)
        stop = self._offset_in(statement, _end_line(found), _end_column(found))
        lines = [
            *head,
            f"{indent}def {function}({scratch}, {barrier}):",
            f"{indent}{step}{plgpu}.copy_gmem_to_smem({source}, {scratch}, {barrier})",
            f"{indent}{step}{plgpu}.barrier_wait({barrier})",
            f"{indent}{step}return {scratch}[...]",
            "",
            f"{indent}{loaded} = {pl}.run_scoped(",
            f"{indent}{step}{function},",
            f"{indent}{step}{plgpu}.SMEM({source}.shape, {base}.dtype{keyword}),",
            f"{indent}{step}{plgpu}.Barrier(),",
            f"{indent})",
            f"{written[:start]}{loaded}{written[stop:]}",
        ]
        return self._made(statement, lines, end, store=False)

    def _hoisting_problem(self, statement: ast.stmt, load: ast.Subscript) -> str | None:
        """Why ``load`` cannot be evaluated before the rest of ``statement``, or None."""
        if _binds(statement):
            return "is in a statement that binds a name with a walrus"
        cannot = _cannot_move(statement)
        if cannot:
            return cannot
        node: ast.AST = load
        while node is not statement:
            parent = self.parents[node]
            if isinstance(parent, _SCOPES):
                kind = type(parent).__name__
                said = {"GeneratorExp": "a generator expression", "Lambda": "a lambda"}
                return (
                    f"is read inside {said.get(kind, 'a comprehension')}, whose own names it "
                    "may use: taken out of it, they would be the kernel's"
                )
            if isinstance(parent, ast.IfExp) and node is not parent.test:
                return "is read on one branch of a conditional expression only"
            if isinstance(parent, ast.BoolOp) and node is not parent.values[0]:
                return "is read only when an `and`/`or` does not stop first"
            node = parent
        return None

    def _made(
        self, statement: ast.stmt, lines: list[str], end: str, *, store: bool
    ) -> Staged | Refused:
        first, last = statement.lineno, _end_line(statement)
        kept = python_lines(self.text, keepends=True)[first - 1 : last]
        kept[-1] = self.lines[last - 1]  # (the span ends before the last line's end)
        tail = self.lines[last - 1][_end_column(statement) :].strip()
        if tail and not tail.startswith("#"):
            return Refused(first, "another statement follows on the same line")
        return Staged(first, last, "".join(kept), end.join(lines), store)

    def _statement_at(self, line: int) -> ast.stmt | None:
        """The innermost simple statement that spans ``line`` and starts its own line."""
        found: ast.stmt | None = None
        for node in ast.walk(self.tree):
            if (
                isinstance(node, ast.stmt)
                and not isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef)
                and not hasattr(node, "body")
                and node.lineno <= line <= _end_line(node)
            ):
                found = node
        if found is None:
            return None
        written = self.lines[found.lineno - 1]
        if found.col_offset != len(written) - len(written.lstrip()):
            return None  # (after a `;` or a compound statement's colon)
        return found

    def function_at(self, line: int) -> ast.AST | None:
        """The function the statement at ``line`` is written in."""
        statement = self._statement_at(line)
        return None if statement is None else self._scope_of(statement)

    def _scope_of(self, node: ast.AST) -> ast.AST | None:
        while node in self.parents:
            node = self.parents[node]
            if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
                return node
        return None

    def _subscript_at(self, statement: ast.stmt, line: int, column: int) -> ast.Subscript | None:
        """The innermost load ``REF[INDEX]`` starting at ``line``:``column`` (in
        ``ref[...].astype(f32)[None, :]`` the ref's, not the value's)."""
        found = None
        for node in ast.walk(statement):
            if (
                isinstance(node, ast.Subscript)
                and isinstance(node.ctx, ast.Load)
                and node.lineno == line
                and node.col_offset == column
                and _base_ref(node.value) is not None
            ):
                found = node
        return found

    def _segment(self, node: ast.AST) -> str:
        segment = ast.get_source_segment(self.text.removeprefix("\ufeff"), node)
        assert segment is not None
        return segment

    def _statement_text(self, statement: ast.stmt) -> str:
        """The statement's lines, from its first line's start to its end."""
        first, last = statement.lineno, _end_line(statement)
        lines = self.lines[first - 1 : last]
        lines[-1] = lines[-1][: _end_column(statement)]
        return self._ending(first).join(lines) + self._comment(statement)

    def _offset_in(self, statement: ast.stmt, line: int, column: int) -> int:
        """The offset of ``line``:``column`` in ``_statement_text(statement)``."""
        ending = self._ending(statement.lineno)
        before = self.lines[statement.lineno - 1 : line - 1]
        return sum(len(b) + len(ending) for b in before) + column

    def _comment(self, statement: ast.stmt) -> str:
        """The comment after the statement on its last line (with the space before it)."""
        written = self.lines[_end_line(statement) - 1]
        tail = written[_end_column(statement) :]
        return tail.rstrip() if tail.strip().startswith("#") else ""

    def _indent(self, line: int) -> str:
        written = self.lines[line - 1]
        return written[: len(written) - len(written.lstrip())]

    def _ending(self, line: int) -> str:
        """The line end the file uses at ``line``."""
        kept = python_lines(self.text, keepends=True)
        for candidate in (kept[line - 1] if line - 1 < len(kept) else "", *kept):
            for ending in ("\r\n", "\n", "\r"):
                if candidate.endswith(ending):
                    return ending
        return "\n"

    def _pallas_import(self, indent: str) -> tuple[list[str], str]:
        """Where the file has no name for Pallas, the block imports it first."""
        if self.pallas is not None:
            return [], self.pallas
        pl = self._fresh("pl")
        return (
            [f"{indent}from jax.experimental import pallas as {pl}"] if self._imports else []
        ), pl

    def _fresh(self, name: str) -> str:
        fresh, number = name, 1
        while fresh in self.names:
            number += 1
            fresh = f"{name}_{number}"
        return fresh


def _base_ref(node: ast.expr) -> str | None:
    """The name of the ref ``node`` views (``o_ref``, ``o_ref.at[i]``, ``o_ref.at[i].at[j]``)."""
    while isinstance(node, ast.Subscript):
        inner = node.value
        if not (isinstance(inner, ast.Attribute) and inner.attr == "at"):
            return None
        node = inner.value
    return node.id if isinstance(node, ast.Name) else None


def _binds(node: ast.AST) -> bool:
    """Whether ``node`` binds a name of the scope it is in (a walrus, also within a
    comprehension, where it binds the enclosing scope's name)."""
    return any(isinstance(n, ast.NamedExpr) for n in ast.walk(node))


def _cannot_move(node: ast.AST) -> str | None:
    """Why ``node`` cannot be evaluated in another function than its own, or None."""
    for n in ast.walk(node):
        if isinstance(n, ast.Yield | ast.YieldFrom):
            return "yields"
        if isinstance(n, ast.Await):
            return "awaits"
        if isinstance(n, ast.Name) and n.id == "__class__":
            return "reads `__class__`"
        if (
            isinstance(n, ast.Call)
            and isinstance(n.func, ast.Name)
            and n.func.id == "super"
            and not n.args
        ):
            return "calls `super()` with no arguments"
    return None


def _end_line(node: ast.AST) -> int:
    end = getattr(node, "end_lineno", None)
    assert end is not None
    return int(end)


def _end_column(node: ast.AST) -> int:
    end = getattr(node, "end_col_offset", None)
    assert end is not None
    return int(end)


def _aliases(tree: ast.Module) -> tuple[str | None, str | None]:
    """The file's names for Pallas' Mosaic GPU module and for Pallas (None where not
    imported)."""
    plgpu = pallas = None
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and node.module == _PALLAS:
            for name in node.names:
                if name.name == "mosaic_gpu":
                    plgpu = name.asname or name.name
        elif isinstance(node, ast.ImportFrom) and node.module == "jax.experimental":
            for name in node.names:
                if name.name == "pallas":
                    pallas = name.asname or name.name
        elif isinstance(node, ast.Import):
            for name in node.names:
                if name.name == f"{_PALLAS}.mosaic_gpu" and name.asname:
                    plgpu = name.asname
                elif name.name == _PALLAS and name.asname:
                    pallas = name.asname
    return plgpu, pallas
