"""Row statistics kept as ``(N,)`` values in the source: the edit that mirrors smalto's
unit-dim rewrite, so that JAX's own pass lays the kernel out.

A kernel that computes on a reduction kept with its unit dim
(``jnp.mean(x, axis=-1, keepdims=True)``, ``jnp.max(x, axis=-1)[:, None]``,
``jnp.sum(x, axis=1).reshape(m, 1)``) has no layouts JAX 0.12.0.1's lowering
takes: it cannot compute on an ``(N, 1)`` value in a tiled layout. smalto's
unit-dim rewrite computes such statistics as ``(N,)`` values and broadcasts them
once, where they meet the full tile; this module writes the same in the source:

- the reduction without its unit dim (``keepdims=True`` removed, the ``[:, None]``
  or ``.reshape(m, 1)`` after it removed);
- the statistic computed on as it is (with numbers, with other statistics of the
  same axis, through elementwise functions: ``rsqrt(var + eps)``);
- at each place where it meets the tile (an arithmetic operator, a comparison,
  ``jnp.maximum``..., or ``jnp.broadcast_to(mu, x.shape)``), the unit dim put back
  right there (``mu[..., None]``), so that the broadcast is JAX's usual one.

Why it computes the same: an elementwise function of a broadcast value is the
broadcast of the function of the value, element for element; the edit only
moves the broadcast from the reduction to the use. What this module cannot follow
(a statistic stored, returned, passed to a function it does not know, captured
by a nested function, carried through a loop) leaves no edit. The edit is
verified by its callers (JAX's own pass lowers it; both kernels run in JAX's
interpreter give bit-equal outputs): this module reads the syntax alone.
"""

from __future__ import annotations

import ast
import bisect
from collections.abc import Iterable
from dataclasses import dataclass

from smalto.source.fix_edits import Part, Span
from smalto.source.lines import python_lines

_REDUCTIONS = frozenset(
    {"sum", "mean", "max", "min", "prod", "amax", "amin", "var", "std", "logsumexp"}
)
# Functions applied element by element (a statistic stays one through them).
_ELEMENTWISE = frozenset(
    {
        "exp", "exp2", "log", "log1p", "expm1", "sqrt", "rsqrt", "tanh", "abs", "square",
        "reciprocal", "sigmoid", "maximum", "minimum", "where", "negative", "sin", "cos",
        "logistic", "erf", "pow", "power", "clip", "float32", "bfloat16", "float16",
    }
)  # fmt: skip


@dataclass(frozen=True)
class Cause:
    """A reduction whose unit dim JAX's lowering cannot compute on."""

    line: int
    column: int  # 1-based, in characters
    text: str  # as written: ``jnp.mean(x, axis=-1, keepdims=True)``
    form: str  # ``keepdims=True``, ``[:, None]``, ``.reshape(m, 1)``


@dataclass(frozen=True)
class KeepdimsEdit:
    """The edit, in parts, and what it did in words."""

    parts: tuple[Part, ...]
    causes: tuple[Cause, ...]

    @property
    def words(self) -> str:
        kept = ", ".join(f"`{c.text}` (line {c.line})" for c in self.causes)
        return (
            f"compute the statistics without their unit dim and broadcast them where they "
            f"meet the tile, as smalto's unit-dim rewrite does: {kept}"
        )


class _Unfollowed(Exception):
    """A use of a statistic this module cannot follow: where (the node, or the statement
    it is in) and, where it says more than the line does, why."""

    def __init__(self, why: str = "", node: ast.AST | None = None) -> None:
        super().__init__(why)
        self.why, self.node = why, node


@dataclass(frozen=True)
class NotFollowed:
    """Where the edit stops following a statistic: the line, its text, and why."""

    line: int
    text: str  # the line's code, stripped
    why: str  # empty where the line says it


@dataclass(frozen=True)
class _Stat:
    expand: str  # how its unit dim is put back: ``[..., None]``


_SCALAR = "scalar"
_TILE = "tile"
_Kind = _Stat | str


def keepdims_causes(text: str, lines: range | None = None) -> list[Cause]:
    """The reductions kept with a unit dim in ``text`` (within ``lines``)."""
    tree = _parse(text)
    if tree is None:
        return []
    source = _Source(text)
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.expr) and (lines is None or node.lineno in lines):
            made = _producer(node)
            if made is not None:
                found.append(source.cause(node, made[1]))
    return sorted(found, key=lambda c: (c.line, c.column))


def keepdims_edit(text: str, file: str, lines: range | None = None) -> KeepdimsEdit | None:
    """The edit of every function (within ``lines``) that computes on reductions kept with
    a unit dim; None where there is none, or a statistic is used in a way not followed."""
    tree = _parse(text)
    if tree is None:
        return None
    source = _Source(text)
    parts: list[Part] = []
    causes: list[Cause] = []
    for function in ast.walk(tree):
        if not isinstance(function, ast.FunctionDef | ast.AsyncFunctionDef):
            continue
        if lines is not None and function.lineno not in lines:
            continue
        walker = _Function(source, file, function)
        try:
            walker.walk()
        except _Unfollowed:
            return None
        parts += walker.parts
        causes += walker.causes
    if not parts:
        return None
    return KeepdimsEdit(tuple(parts), tuple(causes))


def keepdims_not_followed(text: str, lines: range | None = None) -> NotFollowed | None:
    """Where ``keepdims_edit`` stops following a statistic (within ``lines``): the first
    use it cannot follow, so that a refusal names its line. None where it follows all."""
    tree = _parse(text)
    if tree is None:
        return None
    source = _Source(text)
    for function in ast.walk(tree):
        if not isinstance(function, ast.FunctionDef | ast.AsyncFunctionDef):
            continue
        if lines is not None and function.lineno not in lines:
            continue
        try:
            _Function(source, "", function).walk()
        except _Unfollowed as unfollowed:
            node = unfollowed.node
            if not isinstance(node, ast.expr | ast.stmt):
                continue
            line = source.lines[node.lineno - 1].strip() if node.lineno <= len(source.lines) else ""
            return NotFollowed(node.lineno, line, unfollowed.why)
    return None


def _parse(text: str) -> ast.Module | None:
    try:
        return ast.parse(text.removeprefix("\ufeff"))
    except SyntaxError:
        return None


def _called(node: ast.expr) -> str:
    if isinstance(node, ast.Call):
        func = node.func
        if isinstance(func, ast.Attribute):
            return func.attr
        if isinstance(func, ast.Name):
            return func.id
    return ""


def _axis(call: ast.Call) -> int | None:
    """The one axis ``call`` reduces over: ``axis=a``, ``axis=(a,)``, or the second
    argument of a function (``jnp.max(x, -1)``)."""
    for keyword in call.keywords:
        if keyword.arg == "axis":
            return _one_int(keyword.value)
    return _one_int(call.args[1]) if len(call.args) > 1 else None


def _one_int(node: ast.expr) -> int | None:
    """An integer, or a tuple of one (``(-1,)``: one axis, as JAX reads it)."""
    if isinstance(node, ast.Tuple) and len(node.elts) == 1:
        return _int(node.elts[0])
    return _int(node)


def _int(node: ast.expr) -> int | None:
    if isinstance(node, ast.Constant) and isinstance(node.value, int):
        return node.value
    if (
        isinstance(node, ast.UnaryOp)
        and isinstance(node.op, ast.USub)
        and isinstance(node.operand, ast.Constant)
        and isinstance(node.operand.value, int)
    ):
        return -node.operand.value
    return None


def _expansion(axis: int) -> str:
    """The index that puts a unit dim back at ``axis`` (``[..., None]`` for the last)."""
    if axis < 0:
        return "[" + "..., None" + ", :" * (-axis - 1) + "]"
    return "[" + ":, " * axis + "None]"


def _producer(node: ast.expr) -> tuple[ast.Call, str, str] | None:
    """Where ``node`` is a reduction kept with its unit dim: the reduction, the form
    (``keepdims=True``, ``[:, None]``, ``.reshape(m, 1)``) and its expansion index."""
    if isinstance(node, ast.Call) and _called(node) in _REDUCTIONS:
        return _kept_by_keyword(node)
    if isinstance(node, ast.Subscript) and _plain_reduction(node.value):
        return _kept_by_none_index(node)
    if (
        isinstance(node, ast.Call)
        and isinstance(node.func, ast.Attribute)
        and node.func.attr == "reshape"
        and _plain_reduction(node.func.value)
    ):
        return _kept_by_reshape(node)
    return None


def _kept_by_keyword(node: ast.Call) -> tuple[ast.Call, str, str] | None:
    """``jnp.mean(x, axis=-1, keepdims=True)``."""
    kept = [k for k in node.keywords if k.arg == "keepdims"]
    if kept and isinstance(kept[0].value, ast.Constant) and kept[0].value.value is True:
        axis = _axis(node)
        if axis is not None:
            return node, "keepdims=True", _expansion(axis)
    return None


def _kept_by_none_index(node: ast.Subscript) -> tuple[ast.Call, str, str] | None:
    """``jnp.mean(x, axis=-1)[:, None]`` (one ``None``, the rest whole slices or ``...``)."""
    index = node.slice
    items = index.elts if isinstance(index, ast.Tuple) else [index]
    nones = sum(isinstance(i, ast.Constant) and i.value is None for i in items)
    if nones != 1 or not all(_none_or_whole(i) for i in items):
        return None
    assert isinstance(node.value, ast.Call)
    written = "[" + ", ".join(ast.unparse(i) for i in items) + "]"
    return node.value, written, written


def _none_or_whole(item: ast.expr) -> bool:
    if isinstance(item, ast.Constant):
        return item.value in (None, Ellipsis)
    return isinstance(item, ast.Slice) and item.lower is item.upper is item.step is None


def _kept_by_reshape(node: ast.Call) -> tuple[ast.Call, str, str] | None:
    """``jnp.sum(x, axis=1).reshape(m, 1)`` (or ``.reshape((m, 1))``)."""
    assert isinstance(node.func, ast.Attribute)
    sizes = (
        node.args[0].elts
        if len(node.args) == 1 and isinstance(node.args[0], ast.Tuple)
        else node.args
    )
    assert isinstance(node.func.value, ast.Call)
    if len(sizes) == 2 and isinstance(sizes[1], ast.Constant) and sizes[1].value == 1:
        return node.func.value, ".reshape(m, 1)", "[:, None]"
    # (A column statistic as a row: ``jnp.max(x, axis=0).reshape(1, n)`` is ``[None, :]``.)
    if len(sizes) == 2 and isinstance(sizes[0], ast.Constant) and sizes[0].value == 1:
        return node.func.value, ".reshape(1, n)", "[None, :]"
    return None


def _plain_reduction(node: ast.expr) -> bool:
    """A reduction over one axis, without its unit dim."""
    return (
        isinstance(node, ast.Call)
        and _called(node) in _REDUCTIONS
        and not any(k.arg == "keepdims" for k in node.keywords)
        and _axis(node) is not None
    )


class _Source:
    """The text, and spans and segments of its nodes in characters."""

    def __init__(self, text: str) -> None:
        self.bom = 1 if text.startswith("\ufeff") else 0
        self.body = text.removeprefix("\ufeff")
        self.lines = python_lines(self.body, keepends=True)
        self.starts = [0]
        for line in self.lines:
            self.starts.append(self.starts[-1] + len(line))

    def offset(self, line: int, byte_column: int) -> int:
        text = self.lines[line - 1] if 0 < line <= len(self.lines) else ""
        return self.starts[line - 1] + len(
            text.encode("utf-8")[:byte_column].decode("utf-8", "ignore")
        )

    def range(self, node: ast.expr) -> tuple[int, int]:
        assert node.end_lineno is not None and node.end_col_offset is not None
        return self.offset(node.lineno, node.col_offset), self.offset(
            node.end_lineno, node.end_col_offset
        )

    def segment(self, node: ast.expr) -> str:
        start, end = self.range(node)
        return self.body[start:end]

    def span(self, file: str, node: ast.expr) -> Span:
        start, end = self.range(node)
        return Span(file, *self.position(start), *self.position(end))

    def position(self, offset: int) -> tuple[int, int]:
        line = min(
            max(bisect.bisect_right(self.starts, offset) - 1, 0), max(len(self.lines) - 1, 0)
        )
        column = offset - self.starts[line] + 1 + (self.bom if line == 0 else 0)
        return line + 1, column

    def cause(self, node: ast.expr, form: str) -> Cause:
        line, column = self.position(self.range(node)[0])
        return Cause(line, column, self.segment(node), form)


class _Function:
    """One function's statements, followed in order: its statistics and their uses."""

    def __init__(
        self, source: _Source, file: str, function: ast.FunctionDef | ast.AsyncFunctionDef
    ) -> None:
        self.source, self.file, self.function = source, file, function
        self.kinds: dict[str, _Kind] = {}
        self.parts: list[Part] = []
        self.causes: list[Cause] = []
        arguments = function.args
        defaults = arguments.defaults + [d for d in arguments.kw_defaults if d is not None]
        numeric = [
            d for d in defaults if isinstance(d, ast.Constant) and isinstance(d.value, int | float)
        ]
        positional = arguments.args[len(arguments.args) - len(arguments.defaults) :]
        for argument, default in zip(positional, arguments.defaults, strict=False):
            if default in numeric:
                self.kinds[argument.arg] = _SCALAR
        for argument, kw_default in zip(arguments.kwonlyargs, arguments.kw_defaults, strict=False):
            if kw_default is not None and kw_default in numeric:
                self.kinds[argument.arg] = _SCALAR

    def walk(self) -> None:
        for statement in self._statements(self.function.body):
            try:
                self._statement(statement)
            except _Unfollowed as unfollowed:
                if unfollowed.node is None:
                    unfollowed.node = statement
                raise

    def _statements(self, body: Iterable[ast.stmt]) -> Iterable[ast.stmt]:
        for statement in body:
            if isinstance(statement, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
                used = {n.id for n in ast.walk(statement) if isinstance(n, ast.Name)}
                if any(isinstance(self.kinds.get(name), _Stat) for name in used):
                    raise _Unfollowed("a statistic captured by a nested function", statement)
                continue  # (walked as a function of its own)
            yield statement

    def _statement(self, statement: ast.stmt) -> None:
        if isinstance(statement, ast.Assign) and len(statement.targets) == 1:
            target = statement.targets[0]
            kind, text = self._expression(statement.value)
            if isinstance(target, ast.Name):
                self.kinds[target.id] = kind
            elif isinstance(kind, _Stat):
                raise _Unfollowed  # a statistic stored, or unpacked
            else:
                self._uses_no_statistic(target)
            self._replace(statement.value, text)
            return
        for node in ast.walk(statement):
            if isinstance(node, ast.expr) and _producer(node) is not None:
                raise _Unfollowed  # a statistic made where this does not follow it
        self._uses_no_statistic(statement)
        if isinstance(statement, ast.Assign | ast.AugAssign | ast.AnnAssign):
            for target in (
                statement.targets if isinstance(statement, ast.Assign) else [statement.target]
            ):
                for name in ast.walk(target):
                    if isinstance(name, ast.Name):
                        self.kinds[name.id] = _TILE

    def _uses_no_statistic(self, node: ast.AST) -> None:
        for name in ast.walk(node):
            if isinstance(name, ast.Name) and isinstance(self.kinds.get(name.id), _Stat):
                raise _Unfollowed

    def _replace(self, node: ast.expr, text: str) -> None:
        if text != self.source.segment(node):
            self.parts.append(
                Part(self.source.span(self.file, node), self.source.segment(node), text)
            )

    def _expression(self, node: ast.expr) -> tuple[_Kind, str]:
        """The kind of ``node``'s value and its text as edited."""
        made = _producer(node)
        if made is not None:
            reduction, form, expand = made
            self.causes.append(self.source.cause(node, form))
            return _Stat(expand), self._without_unit_dim(node, reduction)
        if isinstance(node, ast.Constant) and isinstance(node.value, int | float):
            return _SCALAR, self.source.segment(node)
        if isinstance(node, ast.Name):
            return self.kinds.get(node.id, _TILE), node.id
        if isinstance(node, ast.UnaryOp):
            kind, text = self._expression(node.operand)
            return kind, self._spliced(node, [(node.operand, text)])
        if isinstance(node, ast.BinOp):
            return self._combined(node, [node.left, node.right])
        if isinstance(node, ast.Compare) and len(node.comparators) == 1:
            return self._combined(node, [node.left, node.comparators[0]])
        if isinstance(node, ast.Call) and _called(node) in _ELEMENTWISE and not node.keywords:
            return self._combined(node, list(node.args))
        if isinstance(node, ast.Call) and _called(node) == "broadcast_to" and node.args:
            return self._broadcast_to(node)
        if (
            isinstance(node, ast.Call)
            and isinstance(node.func, ast.Attribute)
            and node.func.attr == "astype"
        ):
            kind, text = self._expression(node.func.value)
            self._uses_no_statistic(ast.Tuple(elts=list(node.args), ctx=ast.Load()))
            return kind, self._spliced(node, [(node.func.value, text)])
        if (
            isinstance(node, ast.Subscript)
            and isinstance(node.value, ast.Attribute)
            and node.value.attr == "shape"
        ):
            return _SCALAR, self.source.segment(node)
        self._uses_no_statistic(node)
        for inner in ast.walk(node):
            if inner is not node and isinstance(inner, ast.expr) and _producer(inner) is not None:
                raise _Unfollowed
        return _TILE, self.source.segment(node)

    def _combined(self, node: ast.expr, operands: list[ast.expr]) -> tuple[_Kind, str]:
        """An elementwise combination: a statistic with numbers or statistics of its axis
        stays one; one that meets the tile has its unit dim put back there."""
        results = [self._expression(operand) for operand in operands]
        stats = {kind.expand for kind, _ in results if isinstance(kind, _Stat)}
        if len(stats) > 1:
            raise _Unfollowed  # statistics of two axes meet: a tile of their own
        if not stats:
            tile = any(kind == _TILE for kind, _ in results)
            return (_TILE if tile else _SCALAR), self._spliced(
                node, list(zip(operands, [t for _, t in results], strict=True))
            )
        (expand,) = stats
        meets = any(kind == _TILE for kind, _ in results)
        texts = []
        for operand, (kind, text) in zip(operands, results, strict=True):
            if meets and isinstance(kind, _Stat):
                simple = isinstance(operand, ast.Name | ast.Call | ast.Subscript | ast.Attribute)
                text = f"{text}{expand}" if simple else f"({text}){expand}"
            texts.append((operand, text))
        return (_TILE if meets else _Stat(expand)), self._spliced(node, texts)

    def _broadcast_to(self, node: ast.Call) -> tuple[_Kind, str]:
        """``jnp.broadcast_to(s, x.shape)``: where the statistic meets the tile, so its unit
        dim is put back in the argument (``s[..., None]``), the broadcast left to
        ``broadcast_to`` as written. Never the (N,) value alone: ``broadcast_to`` lines
        it up with the last dim, which, on a square tile, is the wrong axis, silently."""
        operand, *rest = node.args
        shape = [*rest, *(keyword.value for keyword in node.keywords)]
        try:
            self._uses_no_statistic(ast.Tuple(elts=shape, ctx=ast.Load()))
        except _Unfollowed:
            made = True
        else:
            made = any(
                isinstance(inner, ast.expr) and _producer(inner) is not None
                for argument in shape
                for inner in ast.walk(argument)
            )
        if made:
            # (Its unit dim is part of the shape it names: without it, another shape.)
            raise _Unfollowed(
                "`broadcast_to`'s shape is read from a statistic kept with its unit dim",
                node,
            )
        kind, text = self._expression(operand)
        if isinstance(kind, _Stat):
            simple = isinstance(operand, ast.Name | ast.Call | ast.Subscript | ast.Attribute)
            text = f"{text}{kind.expand}" if simple else f"({text}){kind.expand}"
        return _TILE, self._spliced(node, [(operand, text)])

    def _without_unit_dim(self, node: ast.expr, reduction: ast.Call) -> str:
        if node is not reduction:  # ``R(...)[:, None]``, ``R(...).reshape(m, 1)``
            return self.source.segment(reduction)
        # ``R(x, axis=a, keepdims=True)``: the keyword and the comma before it removed
        keyword = next(k for k in reduction.keywords if k.arg == "keepdims")
        before: list[ast.expr | ast.keyword] = [
            *reduction.args,
            *(k for k in reduction.keywords if k is not keyword),
        ]
        start_node, end = self.source.range(reduction)
        keyword_start = self.source.offset(keyword.lineno, keyword.col_offset)
        keyword_end = self.source.offset(
            keyword.value.end_lineno or 0, keyword.value.end_col_offset or 0
        )
        ends = [self._end(n) for n in before if self._end(n) <= keyword_start]
        cut_from = max(ends, default=keyword_start)
        body = self.source.body
        return body[start_node:cut_from] + body[keyword_end:end]

    def _end(self, node: ast.expr | ast.keyword) -> int:
        value = node.value if isinstance(node, ast.keyword) else node
        return self.source.range(value)[1]

    def _spliced(self, node: ast.expr, children: list[tuple[ast.expr, str]]) -> str:
        """``node``'s text with each child's text replaced by its edited one."""
        start, end = self.source.range(node)
        body = self.source.body
        out, at = [], start
        for child, text in sorted(children, key=lambda c: self.source.range(c[0])[0]):
            child_start, child_end = self.source.range(child)
            out += [body[at:child_start], text]
            at = child_end
        out.append(body[at:end])
        return "".join(out)


__all__ = [
    "Cause",
    "KeepdimsEdit",
    "NotFollowed",
    "keepdims_causes",
    "keepdims_edit",
    "keepdims_not_followed",
]
