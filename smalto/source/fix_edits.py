"""A verified fix as an edit any tool can apply: spans of the user's Python source and the
text that replaces each, with how safely a tool may apply it (rustc's applicability).

The diagnosis verifies an edit on the kernel's MLIR module (``SuggestedEdit``:
retarget a layout cast, drop it, change an SMEM ref's transforms, declare a TMEM
ref otherwise, make transfers unoptimized). A person applies it at a line of
their kernel; this module finds that place in the Python source, by parsing it
(never running it), and says what text goes there:

- a ``plgpu.layout_cast(x, L)`` at the cast's location: its layout argument
  (retarget), or the whole call replaced by ``x`` (drop); a ``layout=``
  argument (``plgpu.async_load_tmem(ref, layout=L)``): its value, or the
  argument removed;
- an SMEM ref's transforms: the ``transforms=`` of its ``plgpu.SMEM(...)`` in
  the ``scratch_types``/``scratch_shapes`` of the call that is given the kernel
  body, found from the ref's name at the line that uses it and its position
  among the body's parameters;
- a TMEM ref's layout: its ``plgpu.TMEM(...)``, where the file declares one;
- an unoptimized transfer: the store or load line as ``pallas_edits`` words it.

The new text is written in the kernel's own words: its name for Pallas' module,
its names for layouts and transforms (an alias, an imported name), its names for
sizes (``n`` where its declaration's shape says ``(m, n)``). An edit the diagnosis
found changing what the kernel computes (``changes_meaning``: an axis, a
broadcast) is at most ``MaybeIncorrect``; whether an edit keeps what the kernel
computes is proved elsewhere, on JAX's trace (``smalto.jax.meaning``) or on the
module (``smalto.diagnose.meaning``), never guessed from this text.
"""

from __future__ import annotations

import ast
import functools
import re
from collections import Counter
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field, replace
from typing import Protocol

from smalto.source.lines import python_lines
from smalto.source.pallas_edits import SourceChange, unoptimized_transfer
from smalto.source.size_names import same_value_at, with_columns
from smalto.source.text_style import line_end, with_line_end

# rustc's applicability levels (rustc_lint_defs::Applicability), as in its JSON output.
MACHINE_APPLICABLE = "MachineApplicable"  # the fix is exact: apply it as is
MAYBE_INCORRECT = "MaybeIncorrect"  # right for the kernel, but a person should look at it
HAS_PLACEHOLDERS = "HasPlaceholders"  # the text has parts a person must fill in
UNSPECIFIED = "Unspecified"  # no place in the source found: words only

_LOCATION = re.compile(r"^(.+):(\d+):(\d+)$")
_CAST = "mosaic_gpu.layout_cast"
_TRANSFORMS = "mosaic_gpu.with_transforms"
_TMEM_CAST = "mosaic_gpu.tmem_layout_cast"
_STORES = {"mosaic_gpu.vector_store", "vector.store"}
_LOADS = {"mosaic_gpu.vector_load", "vector.load"}
_PALLAS_GPU = "jax.experimental.pallas.mosaic_gpu"
_BOM = "\ufeff"


@dataclass(frozen=True)
class Span:
    """A stretch of a file: 1-based lines, 1-based columns in characters, the end column
    exclusive (as rustc's JSON gives them); an empty span is an insertion point."""

    file: str
    line: int
    column: int
    end_line: int
    end_column: int

    def as_json(self) -> dict[str, object]:
        return {
            "file": self.file,
            "line": self.line,
            "column": self.column,
            "end_line": self.end_line,
            "end_column": self.end_column,
        }


@dataclass(frozen=True)
class Part:
    """One replacement: the text at ``span`` becomes ``replacement``."""

    span: Span
    original: str
    replacement: str

    def as_json(self) -> dict[str, object]:
        return {**self.span.as_json(), "original": self.original, "replacement": self.replacement}


@dataclass(frozen=True)
class SourceEdit:
    """A verified fix in the user's source: its parts (several for several transfers made
    unoptimized; none where no place was found), its applicability, its words."""

    kind: str  # the diagnosis edit's kind: retarget, drop, add_cast, unoptimize
    text: str  # the fix in words
    applicability: str
    parts: tuple[Part, ...] = ()
    code: str | None = None  # the failure's code (SM001...), where known
    problem: int = 0  # which problem of the kernel it fixes (0: the first)
    why: str = ""  # why no place was found, where none was
    # JAX's own pass still rejects the kernel with this edit: it compiles with smalto only.
    needs_smalto: bool = False
    # It changes what the kernel computes (an axis, a broadcast): a person chooses it, and
    # ``smalto fix`` never makes it.
    changes_meaning: bool = False

    @property
    def applicable(self) -> bool:
        """Whether a tool may make it without a person filling anything in."""
        return bool(self.parts) and self.applicability in (MACHINE_APPLICABLE, MAYBE_INCORRECT)

    def as_json(self) -> dict[str, object]:
        first = self.parts[0] if self.parts else None
        return {
            "applicability": self.applicability,
            "needs_smalto": self.needs_smalto,
            "changes_meaning": self.changes_meaning,
            "span": first.span.as_json() if first else None,
            "replacement": first.replacement if first else None,
            "parts": [part.as_json() for part in self.parts],
        }


# The parsed nodes that carry a position in the file (typeshed gives ``ast.AST`` none).
type _Located = ast.expr | ast.stmt | ast.keyword


def _start(node: _Located) -> tuple[int, int]:
    return node.lineno, node.col_offset


def _end(node: _Located) -> tuple[int, int]:
    # The end is None only on nodes built by hand; smalto's come from ``ast.parse``.
    assert node.end_lineno is not None and node.end_col_offset is not None
    return node.end_lineno, node.end_col_offset


@dataclass
class _Source:
    """One Python file, parsed, with each node's parent."""

    file: str
    text: str
    tree: ast.Module
    lines: list[str] = field(default_factory=list)
    parents: dict[ast.AST, ast.AST] = field(default_factory=dict)

    # A UTF-8 byte order mark the file starts with: Python skips it, so the parse does
    # (the first line's columns count it, as an editor's do).
    bom: int = 0

    @classmethod
    def parse(cls, file: str, text: str) -> _Source | None:
        bom = 1 if text.startswith(_BOM) else 0
        text = text[bom:]
        try:
            tree = ast.parse(text)
        except (SyntaxError, ValueError):
            return None
        source = cls(file, text, tree, python_lines(text, keepends=True), bom=bom)
        for node in ast.walk(tree):
            for child in ast.iter_child_nodes(node):
                source.parents[child] = node
        return source

    def segment(self, node: ast.AST) -> str:
        return ast.get_source_segment(self.text, node) or ""

    def span(self, start: tuple[int, int], end: tuple[int, int]) -> Span:
        """A span from AST positions (1-based lines, UTF-8 byte columns)."""
        return Span(
            self.file,
            start[0],
            self._chars(start[0], start[1]) + 1,
            end[0],
            self._chars(end[0], end[1]) + 1,
        )

    def node_span(self, node: _Located) -> Span:
        return self.span(_start(node), _end(node))

    def _chars(self, line: int, byte_column: int) -> int:
        text = self.lines[line - 1] if 0 < line <= len(self.lines) else ""
        before = len(text.encode("utf-8")[:byte_column].decode("utf-8", errors="ignore"))
        return before + (self.bom if line == 1 else 0)

    def starting_at(self, line: int, byte_column: int) -> list[ast.expr]:
        """Every expression that starts at the position (outermost first)."""
        return [
            node
            for node in ast.walk(self.tree)
            if isinstance(node, ast.expr) and node.lineno == line and node.col_offset == byte_column
        ]

    def own_names(self, line: int | None = None) -> list[tuple[str, str]]:
        """The kernel's names for Pallas' Mosaic GPU things, as ``(what it names, the
        name)``, what it names spelled ``plgpu.X``, longest first: names imported from
        the module (``from jax.experimental.pallas.mosaic_gpu import Layout``), and names
        bound once to an expression of it (``WGMMA = plgpu.Layout.WGMMA``), at the top
        of the file or, before ``line``, in a function around it."""
        alias = self.alias() or "plgpu"
        found: dict[str, str] = {}
        # (Each name's meaning in ``plgpu.X`` words, so that a name bound through another,
        # ``ROW = WGMMA.reduce(1)`` after ``WGMMA = plgpu.Layout.WGMMA``, is known too.)
        meanings: dict[str, str] = {}
        for node in self.tree.body:
            if isinstance(node, ast.ImportFrom) and node.module == _PALLAS_GPU:
                for imported in node.names:
                    own = imported.asname or imported.name
                    found[f"plgpu.{imported.name}"] = own
                    meanings[own] = f"plgpu.{imported.name}"
        scopes: list[list[ast.stmt]] = [self.tree.body]
        if line is not None:
            scopes += [
                f.body
                for f in ast.walk(self.tree)
                if isinstance(f, ast.FunctionDef) and f.lineno <= line <= (f.end_lineno or f.lineno)
            ]
        for body in scopes:
            bound = [
                (s.targets[0].id, s.value)
                for s in body
                if isinstance(s, ast.Assign)
                and len(s.targets) == 1
                and isinstance(s.targets[0], ast.Name)
                and (line is None or body is self.tree.body or s.lineno < line)
            ]
            counts = Counter(name for name, _ in bound)
            for name, value in bound:
                text = re.sub(rf"\b{re.escape(alias)}\.", "plgpu.", ast.unparse(value))
                for known, meaning in meanings.items():
                    text = re.sub(rf"(?<![\w.]){re.escape(known)}(?![\w])", meaning, text)
                if counts[name] == 1 and "plgpu." in text and text not in found:
                    found[text] = name
                    meanings[name] = text
        return sorted(found.items(), key=lambda item: -len(item[0]))

    def alias(self) -> str | None:
        """The name the file imports Pallas' Mosaic GPU module under (``plgpu``)."""
        return pallas_gpu_alias(self.tree)


def pallas_gpu_alias(tree: ast.Module) -> str | None:
    """The name a script imports Pallas' Mosaic GPU module under (``plgpu``); None where it
    does not import it by a name of its own."""
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and node.module == "jax.experimental.pallas":
            for name in node.names:
                if name.name == "mosaic_gpu":
                    return name.asname or name.name
        if isinstance(node, ast.Import):
            for name in node.names:
                if name.name == _PALLAS_GPU and name.asname:
                    return name.asname
    return None


class DiagnosedEdit(Protocol):
    """What this module reads of a verified edit of the diagnosis
    (``smalto.diagnose.suggest.SuggestedEdit``)."""

    @property
    def kind(self) -> str: ...  # retarget, drop, add_cast, unoptimize, axis, broadcast
    @property
    def text(self) -> str: ...  # the fix in words
    @property
    def pallas(self) -> str | None: ...  # the edited statement or expression, in Pallas
    @property
    def ops(self) -> Sequence[tuple[str, str]]: ...  # (op name, location) of the ops changed
    @property
    def changes(self) -> Sequence[SourceChange]: ...  # its own edit of whole lines
    @property
    def needs_smalto(self) -> bool: ...  # JAX's own pass still rejects the edited kernel
    @property
    def uses(self) -> Sequence[tuple[str, str]]: ...  # (a TMEM ref's) located uses
    @property
    def changes_meaning(self) -> bool: ...  # it changes what the kernel computes


def source_edit(
    edit: DiagnosedEdit,
    read: Callable[[str], str | None],
    *,
    code: str | None = None,
    problem: int = 0,
    home: str | None = None,
) -> SourceEdit:
    """The verified ``edit`` as an edit of the Python source ``read`` gives for a file
    name; ``home``: the kernel's own file, where an op located at no line (a scratch ref
    Pallas declares) is looked for. An edit that changes what the kernel computes (the
    diagnosis checked it on the module: ``changes_meaning``) is at most ``MaybeIncorrect``,
    wherever it goes: a person chooses it."""
    made = SourceEdit(
        edit.kind,
        edit.text,
        UNSPECIFIED,
        code=code,
        problem=problem,
        needs_smalto=edit.needs_smalto,
        changes_meaning=edit.changes_meaning,
    )
    try:
        parts, applicability, why = _parts(edit, read, home)
        if not parts:  # the diagnosis' own edit of whole lines, where it made one
            parts, applicability = _whole_lines(edit.changes, read), MACHINE_APPLICABLE
    except (SyntaxError, ValueError, IndexError, AttributeError) as error:  # odd source
        return replace(made, why=f"the source could not be read as Python: {error}")
    if not parts:
        return replace(made, why=why)
    if edit.changes_meaning and applicability == MACHINE_APPLICABLE:
        applicability = MAYBE_INCORRECT
    return replace(made, applicability=applicability, parts=tuple(parts), why="")


def _whole_lines(changes: Sequence[SourceChange], read: Callable[[str], str | None]) -> list[Part]:
    """The diagnosis' edit of whole lines (``file``, ``line``, ``old``, ``new``), as parts,
    where the file still reads ``old`` there."""
    parts: list[Part] = []
    for change in changes:
        file, line, old, new = change.file, change.line, change.old, change.new
        text = read(file)
        lines = python_lines(text) if text is not None else []
        count = len(python_lines(old)) or 1
        if not 0 < line <= len(lines) - count + 1:
            return []
        if "\n".join(lines[line - 1 : line - 1 + count]) != old:
            return []
        last = lines[line - 2 + count]
        span = Span(file, line, 1, line + count - 1, len(last) + 1)
        parts.append(Part(span, old, new))
    return parts


def _parts(
    edit: DiagnosedEdit, read: Callable[[str], str | None], home: str | None
) -> tuple[list[Part], str, str]:
    ops, kind = edit.ops, edit.kind
    if not ops:
        return [], UNSPECIFIED, "the edit names no op"
    if kind == "unoptimize":
        return _unoptimize(ops, read)
    name, location = ops[0]
    pallas = edit.pallas or ""
    if kind == "add_cast":
        return [], UNSPECIFIED, "a new cast: where it goes in the source is left to you"
    if name == _CAST:
        return _cast(kind, location, pallas, read)
    if name == _TRANSFORMS:
        return _transforms(kind, [loc for _, loc in ops], pallas, read)
    if name == _TMEM_CAST and kind == "retarget":
        return _tmem(ops, pallas, read, home, edit.uses)
    return [], UNSPECIFIED, f"no source form known for an edit of `{name}`"


def _position(location: str) -> tuple[str, int, int] | None:
    match = _LOCATION.match(location)
    return (match[1], int(match[2]), int(match[3])) if match else None


def _open(file: str, read: Callable[[str], str | None]) -> _Source | None:
    text = read(file)
    return None if text is None else _Source.parse(file, text)


# --- layout casts ---------------------------------------------------------------------------


def _cast(
    kind: str, location: str, pallas: str, read: Callable[[str], str | None]
) -> tuple[list[Part], str, str]:
    where = _position(location)
    source = _open(where[0], read) if where else None
    if where is None or source is None:
        return [], UNSPECIFIED, f"the cast's source ({location}) was not found"
    calls = [n for n in source.starting_at(where[1], where[2]) if isinstance(n, ast.Call)]
    for call in calls:
        if _called(call) == "layout_cast" and len(call.args) == 2 and not call.keywords:
            if kind == "drop":
                value = source.segment(call.args[0])
                return [Part(source.node_span(call), source.segment(call), value)], *_EXACT
            stated = call.args[1]
        else:
            keyword = next((k for k in call.keywords if k.arg == "layout"), None)
            if keyword is None:
                continue
            if kind == "drop":
                return [_remove_keyword(source, call, keyword)], *_EXACT
            stated = keyword.value
        new = _new_layout(pallas, source, where[1], where[2])
        if new is None:
            return [], UNSPECIFIED, "the new layout has no Pallas name"
        return [Part(source.node_span(stated), source.segment(stated), new)], *_EXACT
    return [], UNSPECIFIED, f"no `layout_cast(...)` or `layout=` found at {location}"


_EXACT = (MACHINE_APPLICABLE, "")


def _called(call: ast.Call) -> str:
    func = call.func
    if isinstance(func, ast.Attribute):
        return func.attr
    return func.id if isinstance(func, ast.Name) else ""


def _new_layout(pallas: str, source: _Source, line: int, column: int) -> str | None:
    """The layout expression of the diagnosis' Pallas text (the cast's target in
    ``plgpu.layout_cast(x, L)``, the ``layout=`` of a call, or a bare layout, alone or in
    the edited statement), in the file's own names, for the call at ``line``, ``column``."""
    tree = _parsed(pallas)
    if tree is None:
        return None
    found: ast.expr | None = None
    for node in ast.walk(tree):
        if isinstance(node, ast.Call) and _called(node) == "layout_cast" and len(node.args) == 2:
            found = node.args[1]
            break
        if isinstance(node, ast.keyword) and node.arg == "layout":
            found = node.value
            break
    bare = found is None
    if found is None and isinstance(tree, ast.Expression):
        found = tree.body
    text = ast.get_source_segment(pallas, found) if found is not None else None
    if not text or (bare and "Layout" not in text):  # (a bare expression: a layout's)
        return None
    return _in_own_words(text, source, line, column)


def _parsed(code: str) -> ast.AST | None:
    """``code`` parsed as an expression, else as statements; None where it is neither."""
    for mode in ("eval", "exec"):
        try:
            return ast.parse(code, mode=mode)
        except SyntaxError:
            continue
    return None


def _keyword_in(code: str, name: str) -> str | None:
    """The text of keyword ``name``'s value in ``code`` (``transforms=(...)`` alone, or in
    a call or statement)."""
    tree = _parsed(code)
    wrapped = code
    if tree is None:
        wrapped = f"f({code})"
        tree = _parsed(wrapped)
    if tree is None:
        return None
    for node in ast.walk(tree):
        if isinstance(node, ast.keyword) and node.arg == name:
            return ast.get_source_segment(wrapped, node.value)
        # (``transforms=(...)`` alone reads as an assignment.)
        if isinstance(node, ast.Assign) and [
            t.id for t in node.targets if isinstance(t, ast.Name)
        ] == [name]:
            return ast.get_source_segment(wrapped, node.value)
    return None


def in_kernel_words(lines: Sequence[str], text: str, line: int, column: int | None = None) -> str:
    """``text``, a Pallas expression (``plgpu.Layout.WGMMA.reduce(1)``), as the file whose
    ``lines`` these are would write it at ``line``: its names for layouts, transforms and
    Pallas' module (``WGMMA.reduce(1)`` where it has ``WGMMA = plgpu.Layout.WGMMA``), and,
    for the layout of the op at ``column`` of the line, its names for sizes
    (``TCGEN05_M64_COLLECTIVE(n)``); as given where the file does not parse."""
    source = _parsed_file("\n".join(lines))
    return text if source is None else _in_own_words(text, source, line, column)


@functools.lru_cache(maxsize=8)
def _parsed_file(text: str) -> _Source | None:
    """A file parsed once for the several edits a message words (never changed after)."""
    return _Source.parse("", text)


def _in_own_words(
    text: str, source: _Source, line: int | None = None, column: int | None = None
) -> str:
    """``plgpu.X`` as the kernel writes it: its own names for layouts and transforms (an
    alias ``WGMMA = plgpu.Layout.WGMMA``, ``from ... import Layout``, a tuple of transforms
    it named), then its name for Pallas' Mosaic GPU module (``import ... as mgpu``).
    ``line``: where the text goes (the names of the functions around it count too);
    ``column``: where on it the op starts whose layout it is (the kernel's name for the
    columns of a TMEM ref it loads, ``TCGEN05_M64_COLLECTIVE(n)``)."""
    try:
        text = ast.unparse(ast.parse(text, mode="eval"))
    except SyntaxError:
        pass
    own_names = source.own_names(line)
    # (A name the kernel gives this very layout, ``ACC = plgpu.Layout.X(128)``, is its
    # own spelling already.)
    if line is not None and column is not None and all(text != full for full, _ in own_names):
        columns = _loaded_columns(source, line, column)
        if columns is not None:
            text = with_columns(text, columns)
    for full, name in own_names:
        text = re.sub(rf"(?<![\w.]){re.escape(full)}(?![\w])", name, text)
    alias = source.alias()
    if alias is None or alias == "plgpu":
        return text
    return re.sub(r"\bplgpu\.", f"{alias}.", text)


def _loaded_columns(source: _Source, line: int, column: int) -> str | None:
    """The kernel's expression for the columns of the TMEM ref loaded whole at the
    position (``plgpu.async_load_tmem(acc_tmem, ...)``, or cast there: the ``n`` of its
    ``plgpu.TMEM((m, n), ...)``), where it provably holds them there; None otherwise."""
    for call in source.starting_at(line, column):
        if not isinstance(call, ast.Call):
            continue
        load = call
        if _called(call) == "layout_cast" and call.args and isinstance(call.args[0], ast.Call):
            load = call.args[0]
        if _called(load) != "async_load_tmem" or not load.args:
            continue
        if not isinstance(load.args[0], ast.Name):
            return None  # (a slice of the ref: its columns are not the declaration's)
        declared = _scratch_of_use(source, load.lineno, load.col_offset, "TMEM")
        shape = declared.args[0] if declared is not None and declared.args else None
        if not isinstance(shape, ast.Tuple) or not shape.elts:
            return None
        size = shape.elts[-1]
        written = source.segment(size)
        if isinstance(size, ast.Constant) or not written or "\n" in written:
            return None
        return written if same_value_at(source.tree, source.parents, size, load) else None
    return None


def _remove_keyword(source: _Source, call: ast.Call, keyword: ast.keyword) -> Part:
    """``f(a, layout=L)`` -> ``f(a)``: the keyword and the comma before it."""
    before: list[_Located] = [*call.args, *(k for k in call.keywords if k is not keyword)]
    earlier = [_end(n) for n in before if _end(n) <= _start(keyword)]
    start = max(earlier) if earlier else _start(keyword)
    span = source.span(start, _end(keyword.value))
    return Part(span, _text_of(source, span), "")


def _text_of(source: _Source, span: Span) -> str:
    lines = source.lines[span.line - 1 : span.end_line]
    if not lines:
        return ""
    start = span.column - 1 - (source.bom if span.line == 1 else 0)
    end = span.end_column - 1 - (source.bom if span.end_line == 1 else 0)
    if span.line == span.end_line:
        return lines[0][start:end]
    return lines[0][start:] + "".join(lines[1:-1]) + lines[-1][:end]


# --- SMEM transforms ------------------------------------------------------------------------


def _transforms(
    kind: str, locations: list[str], pallas: str, read: Callable[[str], str | None]
) -> tuple[list[Part], str, str]:
    declarations: dict[tuple[int, int], tuple[_Source, ast.Call]] = {}
    for location in locations:
        where = _position(location)
        source = _open(where[0], read) if where else None
        if where is None or source is None:
            continue
        found = _scratch_of_use(source, where[1], where[2], "SMEM")
        if found is not None:
            declarations[(found.lineno, found.col_offset)] = (source, found)
    if len(declarations) != 1:
        why = "its `plgpu.SMEM(...)` declaration was not found" if not declarations else ""
        return [], UNSPECIFIED, why or "the uses point at several declarations"
    source, call = next(iter(declarations.values()))
    keyword = next((k for k in call.keywords if k.arg == "transforms"), None)
    if kind == "drop":
        if keyword is None:
            return [], UNSPECIFIED, "its declaration states no transforms"
        return [_remove_keyword(source, call, keyword)], *_EXACT
    new = _keyword_in(pallas, "transforms")
    if not new:
        return [], UNSPECIFIED, "the new transforms have no Pallas form"
    new = _in_own_words(new, source, call.lineno)
    if keyword is not None:
        value = keyword.value
        return [Part(source.node_span(value), source.segment(value), new)], *_EXACT
    last = call.keywords[-1] if call.keywords else call.args[-1] if call.args else None
    if last is None:
        return [], UNSPECIFIED, "its declaration has no arguments to add transforms to"
    end = _end(last)
    span = source.span(end, end)
    return [Part(span, "", f", transforms={new}")], *_EXACT


def _scratch_of_use(source: _Source, line: int, column: int, kind: str) -> ast.Call | None:
    """The ``plgpu.SMEM(...)``/``plgpu.TMEM(...)`` scratch entry of the ref used at the
    position: the ref's name there is a parameter of the kernel body, and the body's last
    parameters are its scratch refs, in the order of the ``scratch_types`` list of the
    call the body is given to."""
    names = _refs_at(source, line, column)
    found = {
        (entry.lineno, entry.col_offset): entry
        for name in names
        if (entry := _scratch_entry(source, name, line)) is not None and _called(entry) == kind
    }
    return next(iter(found.values())) if len(found) == 1 else None


def _refs_at(source: _Source, line: int, column: int) -> list[str]:
    """The names of refs an op at the position uses: ``o_smem`` in ``o_smem[...] = x``,
    the name arguments of a call there."""
    names: list[str] = []
    for node in source.starting_at(line, column):
        if isinstance(node, ast.Subscript):
            base = node.value
            while isinstance(base, ast.Subscript | ast.Attribute):
                base = base.value
            if isinstance(base, ast.Name):
                names.append(base.id)
        elif isinstance(node, ast.Call):
            names += [a.id for a in node.args if isinstance(a, ast.Name)]
        elif isinstance(node, ast.Name):
            names.append(node.id)
    return list(dict.fromkeys(names))


def _scratch_entry(source: _Source, name: str, line: int) -> ast.Call | None:
    body = _function_around(source, line)
    if body is None:
        return None
    arguments = body.args
    if arguments.vararg is not None or arguments.posonlyargs:
        return None  # ``*scratch``: which entry is which is not written down
    params = [a.arg for a in arguments.args]
    if name not in params:
        return None
    scope = source.parents.get(body)
    for call in ast.walk(scope if scope is not None else source.tree):
        if not isinstance(call, ast.Call):
            continue
        if not any(isinstance(a, ast.Name) and a.id == body.name for a in call.args):
            continue
        for keyword in call.keywords:
            if keyword.arg in ("scratch_types", "scratch_shapes") and isinstance(
                keyword.value, ast.List | ast.Tuple
            ):
                entries = keyword.value.elts
                index = params.index(name) - (len(params) - len(entries))
                entry = entries[index] if 0 <= index < len(entries) else None
                if isinstance(entry, ast.Call):
                    return entry
    return None


def _function_around(source: _Source, line: int) -> ast.FunctionDef | None:
    """The innermost function whose body holds ``line``."""
    around = [
        node
        for node in ast.walk(source.tree)
        if isinstance(node, ast.FunctionDef)
        and node.lineno <= line <= (node.end_lineno or node.lineno)
    ]
    return max(around, key=lambda n: n.lineno) if around else None


# --- TMEM refs ------------------------------------------------------------------------------


def _tmem(
    ops: Sequence[tuple[str, str]],
    pallas: str,
    read: Callable[[str], str | None],
    home: str | None,
    uses: Sequence[tuple[str, str]] = (),
) -> tuple[list[Part], str, str]:
    """A TMEM ref declared otherwise. Pallas states scratch refs at no line of the kernel,
    so the declaration is found from the ops that use the ref (``uses``), as an SMEM
    ref's is: its ``plgpu.TMEM(...)`` entry of the ``scratch_types`` list; else it is the
    kernel file's one ``plgpu.TMEM(...)``, the likeliest, and where a file has several,
    which one is meant is not known and no place is given."""
    files = [where[0] for _, loc in ops if (where := _position(loc))] or ([home] if home else [])
    tree = _parsed(pallas)
    wanted = (
        next((n for n in ast.walk(tree) if isinstance(n, ast.Call) and _called(n) == "TMEM"), None)
        if tree is not None
        else None
    )
    if wanted is None or not (files or uses):
        return [], UNSPECIFIED, "Pallas states the TMEM ref at no line of the kernel"
    used = _declaration_used(uses, read, "TMEM")
    if used is not None:
        return [_tmem_part(*used, pallas, wanted)], *_EXACT
    source = _open(files[0], read) if files else None
    if source is None:
        return [], UNSPECIFIED, "the kernel's source was not found"
    declared = [
        n for n in ast.walk(source.tree) if isinstance(n, ast.Call) and _called(n) == "TMEM"
    ]
    if len(declared) != 1:
        return [], UNSPECIFIED, f"the file declares {len(declared)} TMEM refs"
    # The one declaration of the file is the likeliest, not a certainty.
    return [_tmem_part(source, declared[0], pallas, wanted)], MAYBE_INCORRECT, ""


def _declaration_used(
    uses: Sequence[tuple[str, str]], read: Callable[[str], str | None], kind: str
) -> tuple[_Source, ast.Call] | None:
    """The one ``plgpu.SMEM(...)``/``plgpu.TMEM(...)`` scratch entry of the ref the ops at
    ``uses`` use; None where they lead to none or to several."""
    found: dict[tuple[str, int, int], tuple[_Source, ast.Call]] = {}
    for _, location in uses:
        where = _position(location)
        source = _open(where[0], read) if where else None
        if where is None or source is None:
            continue
        call = _scratch_of_use(source, where[1], where[2], kind)
        if call is not None:
            found[(where[0], call.lineno, call.col_offset)] = (source, call)
    return next(iter(found.values())) if len(found) == 1 else None


def _tmem_part(source: _Source, call: ast.Call, pallas: str, wanted: ast.Call) -> Part:
    """``call`` (a ``plgpu.TMEM(...)``) with its shape, dtype and other arguments, and the
    layout arguments of ``wanted`` (the new declaration, in ``pallas``)."""
    layout_words = {"layout", "collective", "packed"}
    arguments = [source.segment(a) for a in call.args]
    arguments += [source.segment(k) for k in call.keywords if k.arg not in layout_words]
    sizes = _size_names(source, call, wanted)
    for keyword in wanted.keywords:
        if keyword.arg in layout_words:
            value = _with_sizes(keyword.value, sizes)
            text = _in_own_words(ast.unparse(value), source, call.lineno)
            arguments.append(f"{keyword.arg}={text}")
    new = f"{source.segment(call.func)}({', '.join(arguments)})"
    return Part(source.node_span(call), source.segment(call), new)


def _size_names(source: _Source, call: ast.Call, wanted: ast.Call) -> dict[int, str]:
    """The kernel's names for the sizes of a declaration: where its shape is written with
    names (``plgpu.TMEM((m, n), ...)``) and the new declaration's with numbers
    (``(128, 128)``), each number by the name at its place (the last dimension first: a
    TMEM layout's parameter counts columns)."""
    written = call.args[0] if call.args else None
    numbers = wanted.args[0] if wanted.args else None
    if not isinstance(written, ast.Tuple) or not isinstance(numbers, ast.Tuple):
        return {}
    if len(written.elts) != len(numbers.elts):
        return {}
    names: dict[int, str] = {}
    for name, number in reversed(list(zip(written.elts, numbers.elts, strict=True))):
        if isinstance(number, ast.Constant) and type(number.value) is int:
            text = source.segment(name)
            if text and not isinstance(name, ast.Constant):
                names.setdefault(number.value, text)
    return names


def _with_sizes(value: ast.expr, sizes: dict[int, str]) -> ast.expr:
    """``value`` with each whole-number argument of a call that is a size the kernel names
    written by that name (``M64_COLLECTIVE_LAYOUT(n)``, not ``(128)``)."""

    class Named(ast.NodeTransformer):
        def visit_Call(self, node: ast.Call) -> ast.Call:
            self.generic_visit(node)
            node.args = [
                ast.Name(sizes[a.value])
                if isinstance(a, ast.Constant) and type(a.value) is int and a.value in sizes
                else a
                for a in node.args
            ]
            return node

    return Named().visit(ast.parse(ast.unparse(value), mode="eval").body)


# --- unoptimized transfers ------------------------------------------------------------------


def _unoptimize(
    ops: Sequence[tuple[str, str]], read: Callable[[str], str | None]
) -> tuple[list[Part], str, str]:
    parts: list[Part] = []
    for name, location in ops:
        where = _position(location)
        text = read(where[0]) if where else None
        if where is None or text is None or name not in _STORES | _LOADS:
            return [], UNSPECIFIED, f"the transfer at {location} was not found"
        file, line, column = where
        lines = python_lines(text)
        if not 0 < line <= len(lines):
            return [], UNSPECIFIED, f"{file} has no line {line}"
        written = lines[line - 1]
        made = unoptimized_transfer(written, column, store=name in _STORES)
        if made is None:
            return [], UNSPECIFIED, f"the line at {location} says more than the transfer"
        indent = len(written) - len(written.lstrip())
        start = len(written.encode("utf-8")[:indent].decode("utf-8")) + 1
        span = Span(file, line, start, line, start + len(made.before))
        source = _Source.parse(file, text)
        alias = source.alias() if source is not None else None
        after = made.after
        if alias is not None and alias != "plgpu":  # the file's own name for the module
            after = re.sub(r"\bplgpu\.(store|load)\(", rf"{alias}.\1(", after)
        parts.append(Part(span, made.before, after))
    # Exact in what it computes; slower, where staging through SMEM would not be.
    return parts, MAYBE_INCORRECT, ""


# --- applying -------------------------------------------------------------------------------


def apply_parts(text: str, parts: Iterable[Part]) -> str:
    """``text`` with every part's span replaced (spans must not overlap)."""
    lines = python_lines(text, keepends=True)
    starts = [0]
    for line in lines:
        starts.append(starts[-1] + len(line))

    def offset(line: int, column: int) -> int:
        return starts[line - 1] + column - 1

    edited = text
    ordered = sorted(parts, key=lambda p: (p.span.line, p.span.column), reverse=True)
    for part in ordered:
        start = offset(part.span.line, part.span.column)
        end = offset(part.span.end_line, part.span.end_column)
        if edited[start:end] != part.original:
            raise ValueError(f"the source at {part.span.file}:{part.span.line} changed")
        # (Lines it adds end as the file's line there does: CRLF stays CRLF.)
        replacement = with_line_end(part.replacement, line_end(text, part.span.line))
        edited = edited[:start] + replacement + edited[end:]
    return edited


def overlaps(a: Part, b: Part) -> bool:
    if a.span.file != b.span.file:
        return False
    a0, a1 = (a.span.line, a.span.column), (a.span.end_line, a.span.end_column)
    b0, b1 = (b.span.line, b.span.column), (b.span.end_line, b.span.end_column)
    return a0 < b1 and b0 < a1 or a0 == b0


__all__ = [
    "HAS_PLACEHOLDERS",
    "DiagnosedEdit",
    "MACHINE_APPLICABLE",
    "MAYBE_INCORRECT",
    "UNSPECIFIED",
    "Part",
    "SourceEdit",
    "Span",
    "apply_parts",
    "in_kernel_words",
    "overlaps",
    "pallas_gpu_alias",
    "source_edit",
]
