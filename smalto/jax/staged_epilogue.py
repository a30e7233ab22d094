"""The staged epilogue as a fix of the kernel's source: each GMEM store with no coalesced
plan written through an SMEM scratch and a TMA copy, for ``smalto fix`` (and the mirror
for a GMEM load: a TMA copy into a scratch, waited for, then the load from it).

Where problems of the kernel are GMEM transfers no layout coalesces (``SM005``;
``o_ref[...] = acc.astype(jnp.bfloat16)``), the fast way out is the one kernel
authors write by hand: store the value into an SMEM scratch ref, then copy it
out with the TMA. The text is built by ``smalto.source.staging_text``, so that
no name changes binding (where it cannot be, the transfer is not staged, and
one line says why). Every shape users write is taken: a whole ref, a view
(``o_ref.at[i][...] = ...``, ``o_ref[:, pl.ds(j * bn, bn)] = ...``, slices),
in a ``lax.fori_loop`` body, a Python loop (one store unrolled several times is
one edit), a ``lax.cond`` or ``pl.when`` branch, in a helper; and every such
store of the kernel at once (each is an edit; the whole is verified). A TMA copy
takes a view whose last dimension is contiguous and whose other strides are
multiples of 16 bytes; a column of a table (``w_ref[:, j]``) is none.

Each set of candidates is verified by the caller (``verify``): JAX's own pass
lowers the edited kernel, or, where the kernel has other problems still,
smalto finds none at the staged lines. The scratch's transforms tried: those
the diagnosis found for the value's layout first, then each swizzle, then none.
What the edit computes is proven apart (the construction, and a run of both
kernels in JAX's interpreter: ``smalto.jax.interpreted``).
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace

from smalto.basics.codes import UNCOALESCED_GMEM
from smalto.constraints.language import GmemTransfer
from smalto.source.fix_edits import MACHINE_APPLICABLE, MAYBE_INCORRECT, Part, SourceEdit, Span
from smalto.source.lines import python_lines
from smalto.source.staging_text import Refused, Staged, Staging

STAGE = "stage"  # the kind of the edit (a ``SourceEdit.kind``)
_LOCATION = re.compile(r"^(.+):(\d+):(\d+)$")
_NOTED_TRANSFORMS = re.compile(r"transforms=(\([^`]*\))` on the scratch ref")
_SWIZZLES = (128, 64, 32)
_TMA_STRIDE_BYTES = 16


@dataclass(frozen=True)
class StagedEdits:
    """The staged transfers of a kernel: an edit per statement, the problems they fix,
    and, for each transfer not staged, why."""

    edits: list[SourceEdit]
    problems: set[int]  # the indices of the problems the edits fix
    refusals: list[str]  # "FILE:LINE: why", one line each


# Whether the kernel as edited (a text) lowers, the staged statements' lines (first,
# last, in the edited text) taken as fixed.
Verify = Callable[[str, list[tuple[int, int]]], bool]


def staged_epilogues(
    reports: Sequence[object], text: str, file: str, verify: Verify
) -> StagedEdits:
    """The staged epilogue (or prologue) of every GMEM transfer with no coalesced plan
    among ``reports`` (the problems of the kernel in ``file``, whose text is ``text``),
    where it can be built and one set of transforms verifies."""
    nothing = StagedEdits([], set(), [])
    wanted: dict[int, _Transfer] = {}  # by line: one store unrolled twice is one edit
    refusals: list[str] = []
    for number, report in enumerate(reports):
        if getattr(report, "code", None) != UNCOALESCED_GMEM:
            continue
        for transfer in getattr(report, "core", []):
            if not isinstance(transfer, GmemTransfer):
                continue
            where = _position_of(report, transfer, file)
            if where is None:
                continue
            if not _tma_takes(transfer):
                refusals.append(
                    f"{file}:{where[0]}: not staged: a TMA copy cannot take this view (its "
                    "last dimension is not contiguous, or a stride is no multiple of 16 bytes)"
                )
                continue
            found = wanted.setdefault(where[0], _Transfer(where[0], where[1], transfer, set()))
            found.problems.add(number)
            found.candidates.extend(_candidates(report, transfer))
    if not wanted:
        return StagedEdits([], set(), refusals)
    try:
        staging = Staging(text)
    except SyntaxError:
        return nothing
    plgpu = staging.plgpu or "plgpu"
    built: list[_Transfer] = []
    for transfer in wanted.values():
        tried = staging.staged(transfer.line, transfer.column, transfer.element.store, "")
        if isinstance(tried, Refused):
            refusals.append(f"{file}:{tried.line}: not staged: {tried.reason}")
        else:
            built.append(transfer)
    if not built:
        return StagedEdits([], set(), refusals)
    rounds = max(len(t.options(plgpu)) for t in built)
    for attempt in range(rounds):
        made: list[tuple[_Transfer, Staged]] = []
        importing: set[int] = set()  # the functions whose first block imports Pallas
        for transfer in sorted(built, key=lambda t: t.line):
            options = transfer.options(plgpu)
            transforms = options[min(attempt, len(options) - 1)]
            scope = id(staging.function_at(transfer.line))
            staged = staging.staged(
                transfer.line,
                transfer.column,
                transfer.element.store,
                transforms,
                imports=scope not in importing,
            )
            importing.add(scope)
            assert isinstance(staged, Staged)  # (it was built without transforms above)
            made.append((transfer, staged))
        edits = [
            replace(_edit(staged, file, plgpu), problem=min(transfer.problems))
            for transfer, staged in made
        ]
        edited, ranges = _applied(text, [staged for _, staged in made])
        if verify(edited, ranges):
            problems = {p for transfer, _ in made for p in transfer.problems}
            return StagedEdits(edits, problems, refusals)
    return StagedEdits(
        [],
        set(),
        [
            *refusals,
            *(
                f"{file}:{t.line}: not staged: with none of the scratch's transforms smalto "
                "tried does the staged kernel lower"
                for t in built
            ),
        ],
    )


@dataclass
class _Transfer:
    line: int
    column: int
    element: GmemTransfer
    problems: set[int]
    candidates: list[str] = field(default_factory=list)

    def options(self, plgpu: str) -> list[str]:
        """The scratch's transforms to try, best first, in the file's name for plgpu."""
        named = [re.sub(r"\bplgpu\.", f"{plgpu}.", c) for c in self.candidates]
        return list(dict.fromkeys([*named, ""]))


def _edit(staged: Staged, file: str, plgpu: str) -> SourceEdit:
    moved, copy = ("store", "copy_smem_to_gmem") if staged.store else ("load", "copy_gmem_to_smem")
    last_line = python_lines(staged.original)[-1] if staged.original else ""
    return SourceEdit(
        STAGE,
        f"{moved} it through an SMEM scratch with a TMA copy (`{plgpu}.{copy}`) where "
        "written: every transfer stays optimized, and JAX's own pass lowers it",
        MACHINE_APPLICABLE,
        (
            Part(
                Span(file, staged.first, 1, staged.last, len(last_line) + 1),
                staged.original,
                staged.replacement,
            ),
        ),
        code=UNCOALESCED_GMEM,
    )


def _applied(text: str, made: list[Staged]) -> tuple[str, list[tuple[int, int]]]:
    """``text`` with each statement replaced, and the lines each replacement holds."""
    lines = python_lines(text, keepends=True)
    ranges: list[tuple[int, int]] = []
    grown = 0
    for staged in sorted(made, key=lambda s: s.first):
        count = len(python_lines(staged.replacement))
        ranges.append((staged.first + grown, staged.first + grown + count - 1))
        grown += count - (staged.last - staged.first + 1)
    for staged in sorted(made, key=lambda s: s.first, reverse=True):
        ending = lines[staged.last - 1][len(lines[staged.last - 1].rstrip("\r\n")) :]
        lines[staged.first - 1 : staged.last] = [staged.replacement + ending]
    return "".join(lines), ranges


def _tma_takes(transfer: GmemTransfer) -> bool:
    """Whether a TMA copy can take the GMEM view: its last dimension contiguous, every
    other stride a multiple of 16 bytes (and its rows at least 16 bytes)."""
    strides, shape, bits = transfer.strides, transfer.shape, transfer.bitwidth
    if not strides or strides[-1] != 1 or shape[-1] * bits < 8 * _TMA_STRIDE_BYTES:
        return False
    return all((s * bits) % (8 * _TMA_STRIDE_BYTES) == 0 for s in strides[:-1])


def _position_of(report: object, transfer: GmemTransfer, file: str) -> tuple[int, int] | None:
    """The line and column of ``file`` where the transfer is written (its requirement's
    location)."""
    for requirement in getattr(report, "requirements", []):
        if getattr(requirement, "element", None) is transfer:
            match = _LOCATION.match(str(getattr(requirement, "location", "")))
            if match and match[1] == file:
                return int(match[2]), int(match[3])
    return None


def _candidates(report: object, transfer: GmemTransfer) -> list[str]:
    """The scratch's transforms to try, best first: those the diagnosis found conflict-free
    for the value's layout, then each swizzle with its tile (then none: ``options``)."""
    found: list[str] = []
    # (The diagnosis words the fast fix first among the fixes, or as a note.)
    said = [getattr(report, "faster", None), *getattr(report, "fixes", [])]
    for note in [*said, *getattr(report, "notes", [])]:
        match = _NOTED_TRANSFORMS.search(str(note or ""))
        if match:
            found.append(match[1])
    if len(transfer.shape) >= 2:
        for swizzle in _SWIZZLES:
            if transfer.shape[-1] * transfer.bitwidth // 8 >= swizzle:
                tile = (8, 8 * swizzle // transfer.bitwidth)
                found.append(f"(plgpu.TilingTransform({tile}), plgpu.SwizzleTransform({swizzle}))")
    return found


def offered_staging(
    report: object, read: Callable[[str], str | None]
) -> tuple[SourceEdit | None, str | None]:
    """The staged epilogue of ``report``'s transfers as an editor offers it, from the
    module alone (``smalto infer --json``): built on the source (``read`` gives a file's
    text), not lowered with JAX's pass, so ``MaybeIncorrect`` (``smalto fix`` verifies it
    and proves it by running); else None and why not, in one line (None where no
    source was found)."""
    files = []
    for requirement in getattr(report, "requirements", []):
        if isinstance(getattr(requirement, "element", None), GmemTransfer):
            match = _LOCATION.match(str(getattr(requirement, "location", "")))
            if match:
                files.append(match[1])
    for file in dict.fromkeys(files):
        text = read(file)
        if text is None:
            continue
        found = staged_epilogues([report], text, file, lambda edited, ranges: True)
        if found.edits:
            return replace(found.edits[0], applicability=MAYBE_INCORRECT), None
        return None, found.refusals[0] if found.refusals else None
    return None, None
