"""The staged epilogue as a fix of the kernel's source: a GMEM store with no coalesced plan
written through an SMEM scratch and a TMA copy, for ``smalto fix``.

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
line, ``REF[INDEX] = EXPR``, to a row-major GMEM view (a TMA copy takes no
other), and only where it is the kernel's only problem (JAX's own pass must
lower the whole kernel to verify it). Where the file has no name for Pallas
itself, the block begins by importing it (one place of the file changes).
"""

from __future__ import annotations

import ast
import re
from collections.abc import Callable

from smalto.constraints.language import GmemTransfer
from smalto.hw.strides import row_major
from smalto.source.fix_edits import MACHINE_APPLICABLE, Part, SourceEdit, Span

STAGE = "stage"  # the kind of the edit (a ``SourceEdit.kind``)
_CODE = "SM005"  # a GMEM transfer that cannot be coalesced
_LOCATION = re.compile(r"^(.+):(\d+):(\d+)$")
_NOTED_TRANSFORMS = re.compile(r"transforms=(\([^`]*\))` on the scratch ref")
_PALLAS = "jax.experimental.pallas"
_SWIZZLES = (128, 64, 32)


def staged_epilogue(
    report: object, text: str, file: str, verify: Callable[[str], bool]
) -> SourceEdit | None:
    """The staged epilogue for ``report``'s GMEM store (a problem of the kernel in ``file``,
    whose text is ``text``), if one verifies (``verify``: whether JAX's own pass lowers
    the kernel as edited); else None."""
    if getattr(report, "code", None) != _CODE or getattr(report, "others", None):
        return None
    stores = [
        e
        for e in getattr(report, "core", [])
        if isinstance(e, GmemTransfer) and e.store and e.strides == row_major(e.shape)
    ]
    if len(stores) != 1:
        return None
    (store,) = stores
    line = _line_of(report, store, file)
    if line is None:
        return None
    written = text.splitlines()[line - 1]
    statement = _store_statement(written)
    tree = _parsed(text)
    if statement is None or tree is None:
        return None
    ref, index, expression = statement
    plgpu, pallas = _aliases(tree)
    if plgpu is None:
        return None
    names = {node.id for node in ast.walk(tree) if isinstance(node, ast.Name)}
    function, scratch = _fresh(f"_store_{ref}_through_smem", names), _fresh(f"{ref}_smem", names)
    indent = written[: len(written) - len(written.lstrip())]
    destination = ref if index == "..." else f"{ref}.at[{index}]"
    # (Where the file has no name for Pallas, the block imports it: one place changes.)
    head = [] if pallas is not None else [f"{indent}from jax.experimental import pallas as pl"]
    pl = pallas or "pl"
    for transforms in _candidates(report, store, plgpu):
        keyword = f", transforms={transforms}" if transforms else ""
        block = [
            *head,
            f"{indent}def {function}({scratch}):",
            f"{indent}    {scratch}[...] = {expression}",
            f"{indent}    {plgpu}.commit_smem()",
            f"{indent}    {plgpu}.copy_smem_to_gmem({scratch}, {destination})",
            f"{indent}    {plgpu}.wait_smem_to_gmem(0)",
            "",
            f"{indent}{pl}.run_scoped(",
            f"{indent}    {function},",
            f"{indent}    {plgpu}.SMEM({destination}.shape, {ref}.dtype{keyword}),",
            f"{indent})",
        ]
        replacement = "\n".join(block)
        span = Span(file, line, 1, line, len(written) + 1)
        part = Part(span, written, replacement)
        edited = _replaced(text, line, replacement)
        if verify(edited):
            return SourceEdit(
                STAGE,
                f"store it through an SMEM scratch with a TMA copy (`{plgpu}.copy_smem_to_gmem`)"
                " where written: every transfer stays optimized, and JAX's own pass lowers it",
                MACHINE_APPLICABLE,
                (part,),
                code=_CODE,
            )
    return None


def _line_of(report: object, store: GmemTransfer, file: str) -> int | None:
    """The line of ``file`` where the store is written (its requirement's location)."""
    for requirement in getattr(report, "requirements", []):
        if getattr(requirement, "element", None) is store:
            match = _LOCATION.match(str(getattr(requirement, "location", "")))
            if match and match[1] == file:
                return int(match[2])
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


def _candidates(report: object, store: GmemTransfer, plgpu: str) -> list[str]:
    """The scratch's transforms to try, best first: those the diagnosis found conflict-free
    for the value's layout, then each swizzle with its tile, then none."""
    found: list[str] = []
    for note in getattr(report, "notes", []):
        match = _NOTED_TRANSFORMS.search(str(note))
        if match:
            found.append(re.sub(r"\bplgpu\.", f"{plgpu}.", match[1]))
    if len(store.shape) >= 2:
        for swizzle in _SWIZZLES:
            if store.shape[-1] * store.bitwidth // 8 >= swizzle:
                tile = (8, 8 * swizzle // store.bitwidth)
                found.append(
                    f"({plgpu}.TilingTransform({tile}), {plgpu}.SwizzleTransform({swizzle}))"
                )
    found.append("")
    return list(dict.fromkeys(found))


def _replaced(text: str, line: int, replacement: str) -> str:
    lines = text.splitlines(keepends=True)
    ending = "\n" if lines[line - 1].endswith("\n") else ""
    lines[line - 1] = replacement + ending
    return "".join(lines)
