"""The staged epilogue as a fix of the kernel's source: a GMEM store with no coalesced plan
written through an SMEM scratch and a TMA copy, for ``smalto fix`` (and the mirror for a
GMEM load: a TMA copy into a scratch, waited for, then the load from it).

Where a problem of the kernel is a GMEM store no layout coalesces (``SM005``;
``o_ref[...] = acc.astype(jnp.bfloat16)``), the fast way out is the one kernel
authors write by hand: store the value into an SMEM scratch ref, then copy it
out with the TMA. At the store's line::

    o_ref[...] = acc.astype(jnp.bfloat16)

becomes, in the file's own names for Pallas and its Mosaic GPU module::

    def _store_o_ref_through_smem(o_ref_smem):
        o_ref_smem[...] = acc.astype(jnp.bfloat16)
        plgpu.commit_smem()
        plgpu.copy_smem_to_gmem(o_ref_smem, o_ref)
        plgpu.wait_smem_to_gmem(0)

    pl.run_scoped(
        _store_o_ref_through_smem,
        plgpu.SMEM(o_ref.shape, o_ref.dtype, transforms=(...)),
    )

Why it computes the same: the same expression is evaluated on the same values
(the nested function reads them from the kernel's scope), stored whole into a
scratch of the ref's shape and dtype, and copied whole to the same GMEM ref
(``o_ref.at[idx]`` for ``o_ref[idx] = ...``); ``wait_smem_to_gmem(0)`` waits
for the copy before the scratch is released. The kernel then needs no smalto:
the edit is made only where JAX's own pass lowers the edited kernel (the
caller verifies each candidate: ``verify``), trying the transforms the
diagnosis found for the value's layout first. Only a store statement of one
line, ``REF[INDEX] = EXPR``, or a load ``REF[INDEX]`` within one line, of a
row-major GMEM view (a TMA copy takes no other), and only where it is the
kernel's only problem (JAX's own pass must lower the whole kernel to verify
it). Where the file has no name for Pallas itself, the block begins by
importing it (one place of the file changes).
"""

from __future__ import annotations

import ast
import re
from collections.abc import Callable

from smalto.constraints.language import GmemTransfer
from smalto.hw.strides import row_major
from smalto.source.fix_edits import MACHINE_APPLICABLE, Part, SourceEdit, Span
from smalto.source.lines import python_lines
from smalto.source.text_style import indent_step, line_end, trailing_comment, with_line_end

STAGE = "stage"  # the kind of the edit (a ``SourceEdit.kind``)
_CODE = "SM005"  # a GMEM transfer that cannot be coalesced
_LOCATION = re.compile(r"^(.+):(\d+):(\d+)$")
_NOTED_TRANSFORMS = re.compile(r"transforms=(\([^`]*\))` on the scratch ref")
_PALLAS = "jax.experimental.pallas"
_SWIZZLES = (128, 64, 32)


def staged_epilogue(
    report: object, text: str, file: str, verify: Callable[[str], bool]
) -> SourceEdit | None:
    """The staged epilogue (or prologue) for ``report``'s GMEM transfer (a problem of the
    kernel in ``file``, whose text is ``text``), if one verifies (``verify``: whether
    JAX's own pass lowers the kernel as edited); else None."""
    if getattr(report, "code", None) != _CODE or getattr(report, "others", None):
        return None
    transfers = [
        e
        for e in getattr(report, "core", [])
        if isinstance(e, GmemTransfer) and e.strides == row_major(e.shape)
    ]
    tree = _parsed(text)
    if len(transfers) != 1 or tree is None:
        return None
    (transfer,) = transfers
    where = _position_of(report, transfer, file)
    plgpu, pallas = _aliases(tree)
    if where is None or plgpu is None:
        return None
    line, column = where
    written = python_lines(text)[line - 1]
    names = {node.id for node in ast.walk(tree) if isinstance(node, ast.Name)}
    indent = written[: len(written) - len(written.lstrip())]
    # (Where the file has no name for Pallas, the block imports it: one place changes.)
    head = [] if pallas is not None else [f"{indent}from jax.experimental import pallas as pl"]
    made = _Made(plgpu, pallas or "pl", indent, names, indent_step(text))
    for transforms in _candidates(report, transfer, plgpu):
        keyword = f", transforms={transforms}" if transforms else ""
        lines = (
            made.store(written, keyword) if transfer.store else made.load(written, column, keyword)
        )
        if lines is None:
            return None
        replacement = "\n".join([*head, *lines])
        edited = _replaced(text, line, replacement)
        if verify(edited):
            moved, copy = (
                ("store", "copy_smem_to_gmem") if transfer.store else ("load", "copy_gmem_to_smem")
            )
            return SourceEdit(
                STAGE,
                f"{moved} it through an SMEM scratch with a TMA copy (`{plgpu}.{copy}`) where "
                "written: every transfer stays optimized, and JAX's own pass lowers it",
                MACHINE_APPLICABLE,
                (Part(Span(file, line, 1, line, len(written) + 1), written, replacement),),
                code=_CODE,
            )
    return None


class _Made:
    """The staged forms of a line, in the file's own names."""

    def __init__(self, plgpu: str, pl: str, indent: str, names: set[str], step: str) -> None:
        self.plgpu, self.pl, self.indent, self.names = plgpu, pl, indent, names
        self.step = step  # the file's own step of indentation

    def store(self, written: str, keyword: str) -> list[str] | None:
        """``REF[INDEX] = EXPR`` through a scratch: store, fence, TMA copy out, wait."""
        statement = _store_statement(written)
        if statement is None:
            return None
        ref, index, expression = statement
        plgpu, pl, indent, step = self.plgpu, self.pl, self.indent, self.step
        function = _fresh(f"_store_{ref}_through_smem", self.names)
        scratch = _fresh(f"{ref}_smem", self.names)
        destination = ref if index == "..." else f"{ref}.at[{index}]"
        comment = trailing_comment(written)  # kept, at the store it spoke of
        return [
            f"{indent}def {function}({scratch}):",
            f"{indent}{step}{scratch}[...] = {expression}" + (f"  {comment}" if comment else ""),
            f"{indent}{step}{plgpu}.commit_smem()",
            f"{indent}{step}{plgpu}.copy_smem_to_gmem({scratch}, {destination})",
            f"{indent}{step}{plgpu}.wait_smem_to_gmem(0)",
            "",
            f"{indent}{pl}.run_scoped(",
            f"{indent}{step}{function},",
            f"{indent}{step}{plgpu}.SMEM({destination}.shape, {ref}.dtype{keyword}),",
            f"{indent})",
        ]

    def load(self, written: str, column: int, keyword: str) -> list[str] | None:
        """The load ``REF[INDEX]`` at ``column`` of the line, through a scratch: a TMA copy
        in, waited for, then the load from SMEM; the line reads the loaded value."""
        code = written.strip()
        offset = len(written) - len(code)
        found = _subscript_at(code, column - offset)
        if found is None:
            return None
        ref, index, start, end = found
        plgpu, pl, indent, step = self.plgpu, self.pl, self.indent, self.step
        function = _fresh(f"_load_{ref}_through_smem", self.names)
        scratch = _fresh(f"{ref}_smem", self.names)
        barrier = _fresh(f"{ref}_copied", self.names)
        loaded = _fresh(f"{ref}_loaded", self.names)
        source = ref if index == "..." else f"{ref}.at[{index}]"
        return [
            f"{indent}def {function}({scratch}, {barrier}):",
            f"{indent}{step}{plgpu}.copy_gmem_to_smem({source}, {scratch}, {barrier})",
            f"{indent}{step}{plgpu}.barrier_wait({barrier})",
            f"{indent}{step}return {scratch}[...]",
            "",
            f"{indent}{loaded} = {pl}.run_scoped(",
            f"{indent}{step}{function},",
            f"{indent}{step}{plgpu}.SMEM({source}.shape, {ref}.dtype{keyword}),",
            f"{indent}{step}{plgpu}.Barrier(),",
            f"{indent})",
            f"{indent}{code[:start]}{loaded}{code[end:]}",
        ]


def _subscript_at(code: str, column: int) -> tuple[str, str, int, int] | None:
    """The load ``REF[INDEX]`` that starts at ``column`` of the statement ``code`` (one
    line): its ref, index and span in the line; None where there is none, or the
    statement writes it."""
    try:
        module = ast.parse(code)
    except SyntaxError:
        return None
    if len(module.body) != 1:
        return None
    for node in ast.walk(module.body[0]):
        if (
            isinstance(node, ast.Subscript)
            and isinstance(node.ctx, ast.Load)
            and isinstance(node.value, ast.Name)
            and node.col_offset == column
            and node.end_lineno == node.lineno == 1
            and node.end_col_offset is not None
        ):
            index = ast.get_source_segment(code, node.slice)
            if index is None:
                return None
            return node.value.id, index, node.col_offset, node.end_col_offset
    return None


def _position_of(report: object, transfer: GmemTransfer, file: str) -> tuple[int, int] | None:
    """The line and column of ``file`` where the transfer is written (its requirement's
    location)."""
    for requirement in getattr(report, "requirements", []):
        if getattr(requirement, "element", None) is transfer:
            match = _LOCATION.match(str(getattr(requirement, "location", "")))
            if match and match[1] == file:
                return int(match[2]), int(match[3])
    return None


def _store_statement(written: str) -> tuple[str, str, str] | None:
    """``REF[INDEX] = EXPR`` on one line as its three texts (INDEX ``...`` for all)."""
    code = written.strip()
    try:
        module = ast.parse(code)
    except SyntaxError:
        return None
    if len(module.body) != 1 or not isinstance(module.body[0], ast.Assign):
        return None
    assign = module.body[0]
    if len(assign.targets) != 1 or not isinstance(assign.targets[0], ast.Subscript):
        return None
    target = assign.targets[0]
    if not isinstance(target.value, ast.Name):
        return None
    index = ast.get_source_segment(code, target.slice)
    expression = ast.get_source_segment(code, assign.value)
    if index is None or expression is None:
        return None
    return target.value.id, index, expression


def _parsed(text: str) -> ast.Module | None:
    try:
        return ast.parse(text)
    except SyntaxError:
        return None


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


def _fresh(name: str, taken: set[str]) -> str:
    fresh, number = name, 1
    while fresh in taken:
        number += 1
        fresh = f"{name}_{number}"
    return fresh


def _candidates(report: object, transfer: GmemTransfer, plgpu: str) -> list[str]:
    """The scratch's transforms to try, best first: those the diagnosis found conflict-free
    for the value's layout, then each swizzle with its tile, then none."""
    found: list[str] = []
    for note in getattr(report, "notes", []):
        match = _NOTED_TRANSFORMS.search(str(note))
        if match:
            found.append(re.sub(r"\bplgpu\.", f"{plgpu}.", match[1]))
    if len(transfer.shape) >= 2:
        for swizzle in _SWIZZLES:
            if transfer.shape[-1] * transfer.bitwidth // 8 >= swizzle:
                tile = (8, 8 * swizzle // transfer.bitwidth)
                found.append(
                    f"({plgpu}.TilingTransform({tile}), {plgpu}.SwizzleTransform({swizzle}))"
                )
    found.append("")
    return list(dict.fromkeys(found))


def _replaced(text: str, line: int, replacement: str) -> str:
    lines = python_lines(text, keepends=True)
    ending = lines[line - 1][len(python_lines(text)[line - 1]) :]  # CRLF stays CRLF
    lines[line - 1] = with_line_end(replacement, line_end(text, line)) + ending
    return "".join(lines)
