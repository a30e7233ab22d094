"""Making a kernel only smalto compiles compile with JAX's own pass: the edit, found and
verified.

Where smalto lays out a kernel JAX's own pass finds no layouts for, smalto's
answer asks the lowering for relayouts JAX's order never reaches (a WGMMA
accumulator stored through ``o_smem.T`` wants ``WGMMA_TRANSPOSED`` at the
store), or the kernel states a layout whose shuffles cancel out. One edit
of the source often lets JAX's pass find layouts itself:

- at a store that relayouts its value, the value cast to the layout the store
  takes: ``o_smem.T[...] = plgpu.layout_cast(acc, plgpu.Layout.WGMMA_TRANSPOSED)``;
- a ``plgpu.layout_cast(x, L)`` or a ``layout=`` of the kernel removed.

Each candidate is made on the text, must keep what the kernel computes (JAX's
trace, ``smalto.jax.meaning``) and must lower with JAX's own pass; the first that
does is the edit. Candidates are few (``MAX_CANDIDATES``): each costs a lowering.
"""

from __future__ import annotations

import ast
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from smalto.pipeline.relayouts import Relayout
from smalto.source.fix_edits import (
    MACHINE_APPLICABLE,
    Part,
    SourceEdit,
    Span,
    apply_parts,
    pallas_gpu_alias,
)

# Candidates lowered with JAX's pass at most (each is a lowering).
MAX_CANDIDATES = 6
_STORES = ("vector.store", "mosaic_gpu.vector_store")


@dataclass(frozen=True)
class Portable:
    """The edit that makes JAX's own pass accept the kernel, and the edited text."""

    edit: SourceEdit
    text: str


def portable_edit(
    text: str,
    file: str,
    relayouts: Sequence[Relayout],
    keeps: Callable[[str], bool],
    jax_lowers: Callable[[str], bool],
    function: str | None = None,
) -> Portable | None:
    """The first candidate edit of ``text`` (the script ``file``) that keeps what the
    kernel computes (``keeps``) and lowers with JAX's own pass (``jax_lowers``); None
    where none does. ``relayouts``: those smalto's answer asks for; ``function``: the
    top-level function whose lines alone are edited (where the file defines it)."""
    try:
        tree = ast.parse(text.removeprefix("\ufeff"))
    except SyntaxError:
        return None
    source = _Text(file, text, tree)
    candidates = [*source.casts_at_stores(relayouts), *source.layouts_dropped()]
    lines = _lines_of(tree, function)
    if lines is not None:
        candidates = [
            (words, parts)
            for words, parts in candidates
            if all(p.span.line in lines and p.span.end_line in lines for p in parts)
        ]
    seen: set[str] = set()
    for words, parts in candidates:
        if len(seen) >= MAX_CANDIDATES:
            break
        edited = apply_parts(text, parts)
        if edited in seen:
            continue
        seen.add(edited)
        if keeps(edited) and jax_lowers(edited):
            edit = SourceEdit(
                "portable",
                f"{words}: JAX's own pass then lays the kernel out (verified with JAX's pass)",
                MACHINE_APPLICABLE,
                parts=tuple(parts),
            )
            return Portable(edit, edited)
    return None


class _Text:
    """The script's text, parsed: where its stores and stated layouts are."""

    def __init__(self, file: str, text: str, tree: ast.Module) -> None:
        self.file, self.text, self.tree = file, text, tree
        self.bom = 1 if text.startswith("\ufeff") else 0
        self.lines = text.removeprefix("\ufeff").splitlines(keepends=True)
        self.module = pallas_gpu_alias(tree) or "plgpu"

    def casts_at_stores(self, relayouts: Sequence[Relayout]) -> list[tuple[str, list[Part]]]:
        """At each store whose value smalto's answer relayouts, the value cast to the
        layout the store takes (where Pallas names it)."""
        found: list[tuple[str, list[Part]]] = []
        for relayout in relayouts:
            where, layout = relayout.position, relayout.pallas
            if relayout.op not in _STORES or where is None or layout is None:
                continue
            if where.file != self.file:
                continue
            for node in ast.walk(self.tree):
                if (
                    isinstance(node, ast.Assign)
                    and node.lineno == where.line
                    and len(node.targets) == 1
                    and isinstance(node.targets[0], ast.Subscript)
                ):
                    value = self.segment(node.value)
                    layout = layout.replace("plgpu.", f"{self.module}.", 1)
                    new = f"{self.module}.layout_cast({value}, {layout})"
                    found.append(
                        (
                            f"cast the value stored at {where} to {relayout.target}",
                            [Part(self.span(node.value), value, new)],
                        )
                    )
        return found

    def layouts_dropped(self) -> list[tuple[str, list[Part]]]:
        """Each ``plgpu.layout_cast(x, L)`` replaced by ``x``, each ``layout=`` removed."""
        found: list[tuple[str, list[Part]]] = []
        for node in ast.walk(self.tree):
            if not isinstance(node, ast.Call):
                continue
            func = node.func
            called = func.attr if isinstance(func, ast.Attribute) else ""
            if called == "layout_cast" and len(node.args) == 2 and not node.keywords:
                value = self.segment(node.args[0])
                where = f"{self.file}:{node.lineno}"
                found.append(
                    (
                        f"remove the layout cast at {where}",
                        [Part(self.span(node), self.segment(node), value)],
                    )
                )
            for keyword in node.keywords:
                if keyword.arg == "layout" and called != "TMEM":
                    before: list[ast.expr | ast.keyword] = [*node.args, *node.keywords]
                    ends = [_end(n) for n in before if _end(n) <= _start(keyword)]
                    start = max(ends, default=_start(keyword))
                    span = self.span_of(start, _end(keyword.value))
                    found.append(
                        (
                            f"remove the `layout=` of `{called}` at {self.file}:{node.lineno}",
                            [Part(span, self.between(start, _end(keyword.value)), "")],
                        )
                    )
        return found

    def segment(self, node: ast.expr) -> str:
        return ast.get_source_segment(self.text.removeprefix("\ufeff"), node) or ""

    def span(self, node: ast.expr) -> Span:
        return self.span_of(_start(node), _end(node))

    def span_of(self, start: tuple[int, int], end: tuple[int, int]) -> Span:
        return Span(self.file, start[0], self.column(*start), end[0], self.column(*end))

    def column(self, line: int, byte_column: int) -> int:
        text = self.lines[line - 1] if 0 < line <= len(self.lines) else ""
        chars = len(text.encode("utf-8")[:byte_column].decode("utf-8", errors="ignore"))
        return chars + 1 + (self.bom if line == 1 else 0)

    def between(self, start: tuple[int, int], end: tuple[int, int]) -> str:
        body = self.text.removeprefix("\ufeff")
        offsets = [0]
        for line in self.lines:
            offsets.append(offsets[-1] + len(line.encode("utf-8")))
        data = body.encode("utf-8")
        return data[offsets[start[0] - 1] + start[1] : offsets[end[0] - 1] + end[1]].decode()


def _lines_of(tree: ast.Module, function: str | None) -> range | None:
    """The lines of the top-level function ``function``, where the file defines one."""
    for node in tree.body:
        if isinstance(node, ast.FunctionDef) and node.name == function:
            return range(node.lineno, (node.end_lineno or node.lineno) + 1)
    return None


def _start(node: ast.expr | ast.keyword) -> tuple[int, int]:
    return node.lineno, node.col_offset


def _end(node: ast.expr | ast.keyword) -> tuple[int, int]:
    assert node.end_lineno is not None and node.end_col_offset is not None
    return node.end_lineno, node.end_col_offset


__all__ = ["MAX_CANDIDATES", "Portable", "portable_edit"]
