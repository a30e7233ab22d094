"""What is wrong, said first, where JAX's phrase says something else.

Where JAX's pass finds no specific requirement to name, it says the kernel's
"user-provided layout casts are unsatisfiable". A drop-in keeps that phrase
as its first line, but a kernel with no layout cast in its conflict (a
softmax that reduces over the wrong axis, a keep-dims reduction reshaped)
deserves the next line to say what is wrong in smalto's own words: the axis
clue where there is one (``smalto.diagnose.axes``), else which ops require
what of which values. This module words that line, and turns the verified
changes of a reduction's axis or of its broadcast into choices for the author
(each changes what the kernel computes: never a fix made unasked).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from smalto.basics.codes import CODES
from smalto.constraints.conflict_report import failure_code
from smalto.constraints.language import Element, GmemTransfer, System, element_variables
from smalto.diagnose.axes import AxisClue, wrong_axis_reduction
from smalto.diagnose.edits import Edit
from smalto.diagnose.jax_phrases import UNSATISFIABLE, unsatisfiable
from smalto.diagnose.suggest import (
    LOWERED_SHORT,
    NEEDS_SMALTO,
    VERIFIED_SHORT,
    SuggestedEdit,
)
from smalto.diagnose.verify import module_of, works_on_copy
from smalto.pipeline.describe import Namer
from smalto.program.view import Program
from smalto.solve.options import SolveOptions
from smalto.source.locations import file_position, op_location_text

if TYPE_CHECKING:
    from smalto.source.pallas_edits import SourceChange, StatementEdit

# Ops that state a layout or transforms the author chose (``plgpu.layout_cast``,
# ``layout=``, a ``plgpu.inline_mgpu``'s layouts, an SMEM ref's ``transforms=``): what
# JAX's phrase calls "user-provided layout casts".
_CASTS = (
    "mosaic_gpu.layout_cast",
    "mosaic_gpu.tmem_layout_cast",
    "mosaic_gpu.custom_primitive",
    "mosaic_gpu.with_transforms",
)
_SHOWN = 2  # values named in the line, at most


def headline(
    program: Program,
    system: System,
    core: list[Element],
    namer: Namer,
    clue: AxisClue | None,
) -> str | None:
    """The line said right after JAX's phrase where that phrase blames layout casts and
    the conflict has none; None elsewhere (JAX's phrase is to the point there)."""
    if any(program.ops[e.origin].name in _CASTS for e in core):
        return None
    if unsatisfiable(program, system).text != UNSATISFIABLE:
        return None
    if clue is not None:
        return clue.text
    # (A GMEM transfer that cannot be coalesced is the transfer's fault: it is named, not
    # the accumulator whose layout reaches it from lines above.)
    transfers = [e for e in core if isinstance(e, GmemTransfer)]
    named = transfers or core
    places = list(dict.fromkeys(op_location_text(program.ops[e.origin]) for e in named))
    variables: dict[int, None] = {}
    for e in named:
        for v in element_variables(e):
            variables.setdefault(v)
    names = list(dict.fromkeys(namer.var(v) for v in variables))
    what = ", ".join(names[:_SHOWN]) + (
        f" and {len(names) - _SHOWN} more" if len(names) > _SHOWN else ""
    )
    where = places[0] + (f" and {len(places) - 1} more lines" if len(places) > 1 else "")
    op_names = {e.origin: program.ops[e.origin].name for e in core}
    title = CODES[failure_code(core, op_names)].title
    return f"no layout cast is involved: {title} ({what}, at {where})"


def axis_choices(
    program: Program,
    clue: AxisClue,
    options: SolveOptions,
    background: tuple[Edit, ...] = (),
) -> list[tuple[SuggestedEdit, str]]:
    """The changes the author may have meant where a reduction and a broadcast disagree:
    the reduction over the other axis, and the broadcast along the axis the values run;
    each where, made on a copy of the module (with the kernel's other problems' fixes),
    smalto infers it and its checker accepts it. Each changes what the kernel computes
    (``changes_meaning``): a person chooses, no tool. The reduction is left out where the
    module edit is not the source edit (a keep-dims expansion or a reshape in between)."""
    module = module_of(program)
    found: list[tuple[SuggestedEdit, str]] = []
    candidates = [
        (clue.edit, clue.fix, clue.statement, "reduction_dims") if clue.exact else None,
        (clue.broadcast, clue.broadcast_fix, clue.broadcast_statement, "broadcast_dimensions")
        if clue.broadcast is not None
        else None,
    ]
    for candidate in candidates:
        if candidate is None:
            continue
        edit, words, statement, attribute = candidate
        # (JAX's dialect lowering of the edited copy is the dear part: as for the other
        # fixes, smalto's checker, which states its requirements, judges it; the tests
        # lower it.)
        verdict = works_on_copy(module, edit, options, background=background)
        if not verdict.ok:
            continue
        if verdict.needs_smalto:
            claim = NEEDS_SMALTO
        else:
            claim = LOWERED_SHORT if verdict.lowered else VERIFIED_SHORT
        suggested = _suggested(program, edit, words, statement, attribute, verdict.needs_smalto)
        found.append((suggested, f"{words} ({claim})"))
    return found


def _suggested(
    program: Program,
    edit: Edit,
    words: str,
    statement: StatementEdit | None,
    attribute: str,
    needs_smalto: bool,
) -> SuggestedEdit:
    op = program.ops[edit.ops[0]]
    where = op_location_text(op)
    old = str(op.operation.attributes[attribute])
    new = f"array<i64: {edit.position}>"
    snippet = None
    changes: tuple[SourceChange, ...] = ()
    position = file_position(op.location)
    if statement is not None and position is not None:
        first = statement.before[0].strip()
        snippet = f"{position.file.rsplit('/', 1)[-1]}:{statement.first_line} | {first}"
        changes = (statement.change(position.file),)
    return SuggestedEdit(
        kind=edit.kind,
        text=words,
        pallas=statement.text if statement is not None else None,
        ops=[(op.name, where)],
        old=None,
        new=None,
        attribute=attribute,
        old_attribute=old,
        new_attribute=new,
        edit=edit,
        snippet=snippet,
        changes=changes,
        needs_smalto=needs_smalto,
        changes_meaning=True,
    )


def likely_culprit(program: Program, system: System) -> int | None:
    """An op for a refusal's traceback to end at where neither JAX's phrase nor the search
    names one, found without diagnosing (raising stays as fast as JAX's pass): a
    reduction broadcast back along the axis it reduced, else the last layout the kernel
    states (a cast, a ``layout=``), else the last op that fixes a layout, else a GMEM
    transfer of a column, else the first op with a requirement, at a line of the kernel.
    (Once the message is read, the traceback ends at the line its first fix names.)"""
    found = wrong_axis_reduction(program)
    if found is not None:
        return found
    fixed = [f.origin for f in system.fixed if _located(program, f.origin)]
    cast = [op for op in fixed if program.ops[op].name in _CASTS[:2]]
    stated = [op for op in fixed if program.ops[op].name in _CASTS]
    for ops in (cast, stated, fixed):
        if ops:
            return max(ops)
    # No layout stated: a GMEM transfer whose elements are far apart (a table's column), a
    # kind no register layout coalesces; else the first requirement at a kernel line.
    located = [c for c in system.constraints if _located(program, c.origin)]
    for c in located:
        if isinstance(c, GmemTransfer) and c.strides and c.strides[-1] != 1:
            return c.origin
    return located[0].origin if located else None


def _located(program: Program, op_id: int) -> bool:
    position = file_position(program.ops[op_id].location)
    return position is not None and position.file != "-"


__all__ = ["axis_choices", "headline", "likely_culprit"]
