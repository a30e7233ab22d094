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
    in_kernel_words,
    overlaps,
    pallas_gpu_alias,
)
from smalto.source.keepdims import keepdims_edit
from smalto.source.lines import python_lines

# Candidates lowered with JAX's pass at most (each is a lowering).
MAX_CANDIDATES = 8
_STORES = ("vector.store", "mosaic_gpu.vector_store")
TRACE, RUN = "trace", "run"  # how a candidate is proven to keep what the kernel computes


@dataclass(frozen=True)
class Portable:
    """The edit that makes JAX's own pass accept the kernel, and the edited text."""

    edit: SourceEdit
    text: str
    # How it is proven to keep what the kernel computes: JAX's trace (an edit of layouts
    # alone), or both kernels run in JAX's interpreter (it changes the ops: keepdims).
    proof: str = TRACE

    @property
    def by_running(self) -> bool:
        return self.proof == RUN


def portable_edit(
    text: str,
    file: str,
    relayouts: Sequence[Relayout],
    keeps: Callable[[str], bool],
    jax_lowers: Callable[[str], bool],
    function: str | None = None,
    *,
    transfers: Sequence[Relayout] = (),
    runs_equal: Callable[[str], bool] | None = None,
) -> Portable | None:
    """The first candidate edit of ``text`` (the script ``file``) that keeps what the
    kernel computes and lowers with JAX's own pass (``jax_lowers``); None where none
    does. What it computes is proven by JAX's trace (``keeps``) for an edit of layouts
    alone, by running both kernels in JAX's interpreter (``runs_equal``) for the
    statistics kept without their unit dim (``smalto.source.keepdims``).
    ``relayouts``: those smalto's answer asks for; ``transfers``: the layouts its answer
    gives the values loaded and stored (a cast of each to it is a candidate);
    ``function``: the top-level function whose lines alone are edited (where the file
    defines it)."""
    try:
        tree = ast.parse(text.removeprefix("\ufeff"))
    except SyntaxError:
        return None
    source = _Text(file, text, tree)
    lines = _lines_of(tree, function)
    cast, cast_words = source.casts_at_transfers(transfers)
    candidates: list[tuple[str, list[Part], str]] = []
    # (Statistics kept with a unit dim first, where the function has them: what JAX's
    # lowering cannot compute on is then the likeliest cause, and each candidate JAX's
    # pass rejects costs as much as its whole failed search.)
    kept = keepdims_edit(text, file, lines) if runs_equal is not None else None
    if kept is not None:
        apart = [c for c in cast if not any(overlaps(c, k) for k in kept.parts)]
        if apart:
            words = f"{kept.words}; and {_cast_words(source, apart, transfers)}"
            candidates.append((words, [*kept.parts, *apart], RUN))
        candidates.append((kept.words, list(kept.parts), RUN))
    candidates += [
        *((w, p, TRACE) for w, p in source.casts_at_stores(relayouts)),
        *((w, p, TRACE) for w, p in source.layouts_dropped()),
    ]
    if cast:
        candidates.append((cast_words, cast, TRACE))
    if lines is not None:
        candidates = [
            (words, parts, proof)
            for words, parts, proof in candidates
            if all(p.span.line in lines and p.span.end_line in lines for p in parts)
        ]
    seen: set[str] = set()
    for words, parts, proof in candidates:
        if len(seen) >= MAX_CANDIDATES:
            break
        edited = apply_parts(text, parts)
        if edited in seen:
            continue
        seen.add(edited)
        # (JAX's pass first where the proof is a run: a run costs more than a lowering.)
        if proof == RUN and runs_equal is not None and jax_lowers(edited) and runs_equal(edited):
            how = "verified with JAX's pass, and both kernels run bit-equal in JAX's interpreter"
        elif proof == TRACE and keeps(edited) and jax_lowers(edited):
            how = "verified with JAX's pass"
        else:
            continue
        edit = SourceEdit(
            "portable",
            f"{words}: JAX's own pass then lays the kernel out ({how})",
            MACHINE_APPLICABLE,
            parts=tuple(parts),
        )
        return Portable(edit, edited, proof)
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
                    # (In the kernel's own words: its alias of the layout, where it has one.)
                    own = in_kernel_words(
                        python_lines(self.text.removeprefix("\ufeff")), layout, node.lineno
                    )
                    new = f"{self.module}.layout_cast({value}, {own})"
                    found.append(
                        (
                            f"cast the value stored at {where} to {relayout.target}",
                            [Part(self.span(node.value), value, new)],
                        )
                    )
        return found

    def casts_at_transfers(self, transfers: Sequence[Relayout]) -> tuple[list[Part], str]:
        """Each value loaded (``x_ref[...]``) or stored (``o_ref[...] = v``) where smalto's
        answer gives it a layout Pallas names, cast to that layout (not a value cast
        already); and the edit in words."""
        parts: list[Part] = []
        said: list[str] = []
        lines = python_lines(self.text.removeprefix("\ufeff"))
        # (The stored values first: a cast of a stored sum is one edit where casts of the
        # loads that make it would be two.)
        ordered = sorted(transfers, key=lambda t: t.op not in _STORES)
        for transfer in ordered:
            where, layout = transfer.position, transfer.pallas
            if where is None or layout is None or where.file != self.file:
                continue
            value = self._transferred(transfer.op in _STORES, where.line, where.column)
            if value is None or _called_name(value) == "layout_cast":
                continue
            written = self.segment(value)
            own = in_kernel_words(lines, layout, value.lineno)
            if self._cast_already(value, own):
                continue  # (``plgpu.layout_cast(x_ref[...], L)``: cast to L again is noise)
            part = Part(self.span(value), written, f"{self.module}.layout_cast({written}, {own})")
            if not any(overlaps(part, other) for other in parts):
                parts.append(part)
                said.append(f"`{written}` at {where.file}:{value.lineno} to {transfer.target}")
        words = "cast " + ", ".join(said) + " (the layouts smalto's answer gives them)"
        return parts, words

    def _cast_already(self, value: ast.expr, layout: str) -> bool:
        """Whether ``value`` is the operand of a ``layout_cast`` to ``layout`` (in the
        kernel's words) as written."""
        for node in ast.walk(self.tree):
            if (
                isinstance(node, ast.Call)
                and _called_name(node) == "layout_cast"
                and len(node.args) == 2
                and node.args[0] is value
            ):
                return self.segment(node.args[1]) == layout
        return False

    def _transferred(self, store: bool, line: int, column: int) -> ast.expr | None:
        """The value stored by the assignment at ``line``, or the load at ``line`` that
        starts at ``column`` (the only one on the line, where none starts there)."""
        loads: list[ast.expr] = []
        for node in ast.walk(self.tree):
            if store and isinstance(node, ast.Assign) and node.lineno == line:
                if len(node.targets) == 1 and isinstance(node.targets[0], ast.Subscript):
                    return node.value
            if (
                not store
                and isinstance(node, ast.Subscript)
                and isinstance(node.ctx, ast.Load)
                and isinstance(node.value, ast.Name)
                and node.lineno == line
            ):
                loads.append(node)
        exact = [n for n in loads if n.col_offset in (column, column - 1)]
        found = exact or loads
        return found[0] if len(found) == 1 else None

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


def _cast_words(source: _Text, parts: list[Part], transfers: Sequence[Relayout]) -> str:
    """The casts ``parts`` of ``source.casts_at_transfers``, in words."""
    kept = [p for p in source.casts_at_transfers(transfers)[0] if p in parts]
    places = ", ".join(f"`{p.original}` at {p.span.file}:{p.span.line}" for p in kept)
    return f"cast {places} to the layouts smalto's answer gives them"


def _called_name(node: ast.expr) -> str:
    if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute):
        return node.func.attr
    return ""


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
