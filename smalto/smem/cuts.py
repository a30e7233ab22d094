"""The changes that bring a kernel's SMEM under its limit, each with the bytes it saves,
each verified by computing the kernel's SMEM map again on the changed module.

Three kinds, as a kernel author would make them:

- **fewer pipeline stages**: a pipeline buffer holds one block per stage
  (``max_concurrent_steps``); each stage fewer frees one block, and what Pallas
  stacked above the buffer while it is taken moves down by as much;
- **a scratch scoped tighter**: an allocation Pallas stacked above one whose
  last use comes before it starts takes that one's bytes instead (its
  ``run_scoped`` closed before the second opens);
- **a buffer reused**: two allocations never taken at once share one region.

Each is made on a copy of the module (its slices' and reductions' offsets, the
launch's size; a pipeline buffer's stages are taken as the change would leave
them) and the map is read again from the copy: the change counts only if no
two allocations then overlap while both are taken. These changes alter how
fast a kernel runs, not what it computes: they are offered (``MaybeIncorrect``),
never made unasked.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from jax._src.lib.mlir import ir

from smalto.basics.launch import dynamic_smem_operand
from smalto.basics.mlir import clone_module
from smalto.smem.allocations import (
    BARRIER_BYTES,
    BARRIERS,
    PIPELINE,
    REDUCTION,
    SCRATCH,
    Allocation,
    SmemMap,
    align_up,
    read_smem_map,
)
from smalto.smem.program_order import operations_in_order
from smalto.source.files import Sources

FEWER_STAGES = "fewer pipeline stages"
SCOPED_TIGHTER = "a scratch scoped tighter"
REUSED = "a buffer reused"
APPLICABILITY = "MaybeIncorrect"  # faster or slower, the same result: a person decides
_STEPS = re.compile(r"max_concurrent_steps\s*=\s*([^,)\s]+)")


@dataclass(frozen=True)
class Cut:
    """One change to a kernel and what it saves, verified on ``changed`` (the map read
    again from ``module``, the changed copy)."""

    kind: str
    subject: Allocation
    text: str  # the change, in words
    saves: int
    changed: SmemMap
    module: ir.Module  # the changed copy (offsets and size rewritten)
    lowerable: bool  # whether the copy is the whole change (a stage count is not in it)
    stages: int | None = None  # the stages a pipeline is left with (fewer stages)
    # The kernel's own parameter for it: ``max_concurrent_steps=4 at kernel.py:88``.
    parameter: str | None = None
    applicability: str = APPLICABILITY

    @property
    def total(self) -> int:
        return self.changed.total

    @property
    def enough(self) -> bool:
        return self.changed.total <= self.changed.limit


def smem_cuts(
    smem: SmemMap, module: ir.Module, arch: tuple[int, int] = (9, 0), *, count: int = 6
) -> list[Cut]:
    """The verified changes that shrink ``module``'s SMEM (whose map is ``smem``), those that
    bring it under its limit first, then the most bytes saved."""
    found: list[Cut] = []
    for pipeline in pipelines(smem):
        cut = _fewer_stages(smem, module, arch, pipeline)
        if cut is not None:
            found.append(cut)
    for allocation in smem.allocations:
        if allocation.kind in (PIPELINE, SCRATCH):
            cut = _moved_down(smem, module, arch, allocation)
            if cut is not None:
                found.append(cut)
    found.sort(key=lambda c: (not c.enough, -c.saves, c.subject.index))
    return found[:count]


def pipelines(smem: SmemMap) -> list[list[Allocation]]:
    """The pipelines' buffers, a list a pipeline: one ``emit_pipeline`` (or a grid's
    pipeline) allocates a buffer per operand, with as many stages each, taken together:
    its ``max_concurrent_steps`` sets them all."""
    groups: list[list[Allocation]] = []
    for buffer in smem.allocations:
        if buffer.kind != PIPELINE or not buffer.stages or buffer.stages < 2:
            continue
        for group in groups:
            first = group[0]
            if first.stages == buffer.stages and first.end == buffer.end:
                group.append(buffer)
                break
        else:
            groups.append([buffer])
    return groups


def _fewer_stages(
    smem: SmemMap, module: ir.Module, arch: tuple[int, int], pipeline: list[Allocation]
) -> Cut | None:
    """The most stages ``pipeline`` may keep for the kernel to fit (the fewest, down to one,
    where no count fits), verified."""
    stages_now = pipeline[0].stages
    assert stages_now is not None
    best: Cut | None = None
    for stages in range(stages_now - 1, 0, -1):
        moves: dict[int, int] = {}
        # Each buffer shrinks; what was stacked above it moves down by what it freed.
        shrinks = {
            b.index: b.footprint - align_up(b.bytes // stages_now * stages) for b in pipeline
        }
        for allocation in smem.scoped:
            below = sum(
                shrink
                for index, shrink in shrinks.items()
                if index != allocation.index and _stacked_on(smem, index, allocation)
            )
            if below:
                moves[allocation.index] = allocation.offset - below
        barriers = {a.index: stages for a in _stage_barriers(smem, pipeline)}
        taken = {b.index: stages for b in pipeline} | barriers
        cut = _verified(smem, module, arch, moves, taken)
        if cut is None or cut[2] <= 0:
            return best
        changed, copy, saves = cut
        buffers = ", ".join(b.what for b in pipeline)
        stage_bytes = sum(b.bytes // stages_now for b in pipeline)
        best = Cut(
            FEWER_STAGES,
            pipeline[0],
            f"{stages_now} -> {stages} pipeline stages ({stage_bytes} bytes a stage: {buffers})",
            saves,
            changed,
            copy,
            lowerable=False,
            stages=stages,
            parameter=_steps_parameter(pipeline),
        )
        if changed.total <= changed.limit or smem.total <= smem.limit:
            return best
    return best


def _stage_barriers(smem: SmemMap, pipeline: list[Allocation]) -> list[Allocation]:
    """The pipeline's barriers, one a stage, which shrink with it: the launch's barrier
    arrays of as many barriers as it has stages, where no other pipeline has as many
    (Pallas hands a pipeline its barriers as integers, which no use of the array shows)."""
    stages = pipeline[0].stages
    if sum(1 for p in pipelines(smem) if p[0].stages == stages) != 1:
        return []
    return [
        a
        for a in smem.whole_kernel
        if a.kind == BARRIERS and a.bytes == BARRIER_BYTES * (stages or 0)
    ]


def _stacked_on(smem: SmemMap, base_index: int, allocation: Allocation) -> bool:
    base = next(a for a in smem.allocations if a.index == base_index)
    return allocation.offset >= base.stop and allocation.overlaps_in_time(base)


def _moved_down(
    smem: SmemMap, module: ir.Module, arch: tuple[int, int], subject: Allocation
) -> Cut | None:
    """``subject`` (and what is stacked on it) placed at the lowest offset free while it is
    taken, where that lowers the peak, verified."""
    region = [a for a in smem.scoped if a.kind in (PIPELINE, SCRATCH, REDUCTION)]
    candidates = sorted({a.offset for a in region if a.offset < subject.offset} | {0})
    for offset in candidates:
        delta = subject.offset - offset
        moves = {subject.index: offset, **_stacked_above(smem, subject, delta)}
        moved = [a for a in region if a.index in moves]
        if any(
            a.index not in moves
            and a.used_with(m)
            and a.offset < moves[m.index] + m.footprint
            and moves[m.index] < a.stop
            for a in region
            for m in moved
        ):
            continue
        cut = _verified(smem, module, arch, moves, {})
        if cut is None or cut[2] <= 0:
            continue
        changed, copy, saves = cut
        freed = [
            a
            for a in region
            if a.index not in moves
            and not a.used_with(subject)
            and a.offset < offset + subject.footprint
            and offset < a.stop
        ]
        return _reuse_cut(subject, freed, changed, copy, saves)
    return None


def _reuse_cut(
    subject: Allocation, freed: list[Allocation], changed: SmemMap, copy: ir.Module, saves: int
) -> Cut:
    same = [a for a in freed if a.what == subject.what]
    if same:
        text = (
            f"one buffer for {subject.what} ({_at(subject)}) and {same[0].what} "
            f"({_at(same[0])}): they are never taken at once"
        )
        return Cut(REUSED, subject, text, saves, changed, copy, lowerable=True)
    other = max(freed, key=lambda a: a.footprint) if freed else None
    if other is None:
        text = f"{subject.what} ({_at(subject)}) placed lower, in bytes free while it is taken"
        return Cut(REUSED, subject, text, saves, changed, copy, lowerable=True)
    if other.end < subject.used_from:
        scope = f"close its scope after its last use ({_end_at(changed, other)})"
    else:
        scope = (
            f"allocate it where it is used (a pl.run_scoped from {_start_at(changed, other)}), "
            "not for the whole kernel"
        )
    text = (
        f"{other.what} ({_at(other)}) is taken longer than it is used: {scope}, so that "
        f"{subject.what} ({_at(subject)}) can take its {other.footprint} bytes"
    )
    return Cut(SCOPED_TIGHTER, other, text, saves, changed, copy, lowerable=True)


def _stacked_above(smem: SmemMap, base: Allocation, delta: int) -> dict[int, int]:
    """What Pallas' stack put above ``base`` while it is open, moved down by ``delta``."""
    return {
        a.index: a.offset - delta
        for a in smem.scoped
        # Taken at the same time, above it: the stack opened it while ``base`` was open.
        if a.index != base.index and a.offset >= base.stop and a.overlaps_in_time(base)
    }


def _verified(
    smem: SmemMap,
    module: ir.Module,
    arch: tuple[int, int],
    moves: dict[int, int],
    stages: dict[int, int],
) -> tuple[SmemMap, ir.Module, int] | None:
    """The map read again from a copy of ``module`` with ``moves`` made (offsets by op
    index) and pipeline buffers at ``stages``; what lies above the scoped allocations
    moved down by what they saved, and the launch's size shrunk as much. None where the
    copy's allocations overlap while taken (more than the module's own)."""
    with module.context, ir.Location.unknown(module.context):
        copy = clone_module(module)
    operations = operations_in_order(copy)
    _set_offsets(copy, operations, moves)
    first = read_smem_map(copy, arch, stages=stages)
    saves = _high_water(smem) - _high_water(first)
    # What the launch lays out after the scoped allocations moves down by what they saved,
    # and by what the launch's own regions below it shrank (a pipeline's barriers).
    shrunk = {a.index: a.bytes for a in first.whole_kernel}
    above = {
        a.index: a.offset
        - saves
        - sum(
            b.bytes - shrunk.get(b.index, b.bytes)
            for b in smem.whole_kernel
            if _high_water(smem) <= b.offset < a.offset
        )
        for a in smem.whole_kernel
        if a.offset >= _high_water(smem)
    }
    _set_offsets(copy, operations, above)
    whole_saves = sum(a.bytes - shrunk.get(a.index, a.bytes) for a in smem.whole_kernel)
    if smem.size is not None:
        _set_launch_size(copy, smem.size - saves - whole_saves)
    changed = read_smem_map(copy, arch, stages=stages)
    if len(changed.overlaps(in_use=True)) > len(smem.overlaps(in_use=True)):
        return None
    return changed, copy, smem.total - changed.total


def _high_water(smem: SmemMap) -> int:
    return max((a.stop for a in smem.scoped), default=0)


def _set_offsets(
    module: ir.Module, operations: list[ir.Operation], offsets: dict[int, int]
) -> None:
    with module.context:
        for index, offset in offsets.items():
            operation = operations[index]
            kind = ir.IntegerAttr(operation.attributes["offset"]).type
            operation.attributes["offset"] = ir.IntegerAttr.get(kind, offset)


def _set_launch_size(module: ir.Module, size: int) -> None:
    def visit(op: ir.Operation) -> ir.WalkResult:
        if op.name != "gpu.launch":
            return ir.WalkResult.ADVANCE
        number = dynamic_smem_operand(op)
        if number is not None:
            with module.context, op.location, ir.InsertionPoint(op):
                i32 = ir.IntegerType.get_signless(32)
                constant = ir.Operation.create(
                    "arith.constant",
                    results=[i32],
                    attributes={"value": ir.IntegerAttr.get(i32, size)},
                )
            op.operands[number] = constant.result
        return ir.WalkResult.INTERRUPT

    module.operation.walk(visit, ir.WalkOrder.PRE_ORDER)


def _steps_parameter(pipeline: list[Allocation]) -> str | None:
    """Where the kernel's source sets its pipeline's stages (``max_concurrent_steps``): the
    setting nearest the pipeline's line, in its file."""
    line = next((b.line for b in pipeline if b.line), None)
    if line is None:
        return None
    file, row, _ = (line.removeprefix("near ").rsplit(":", 2) + ["0", "0"])[:3]
    lines = Sources().lines(file)
    if not lines:
        return None
    found = [
        (abs(number - int(row) if row.isdigit() else 0), number, match.group(1))
        for number, text in enumerate(lines, start=1)
        if (match := _STEPS.search(text))
    ]
    if not found:
        return None
    _, number, value = min(found)
    return f"max_concurrent_steps={value} at {file}:{number}"


def _at(allocation: Allocation) -> str:
    return allocation.line or f"op {allocation.index}"


def _start_at(smem: SmemMap, allocation: Allocation) -> str:
    return smem.lines[allocation.used_from] or f"op {allocation.used_from}"


def _end_at(smem: SmemMap, allocation: Allocation) -> str:
    line = smem.lines[allocation.end] if allocation.end < len(smem.lines) else None
    return line or f"op {allocation.end}"
