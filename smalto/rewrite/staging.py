"""Staging through SMEM, on request: a transfer with no optimized plan routed through a new
SMEM buffer, so that every transfer of the kernel stays optimized.

Where a GMEM transfer has no coalesced plan in any layout the kernel allows
(a 16-bit TMEM or WGMMA value stored straight to GMEM), the value can go
through SMEM, as kernel authors write by hand and as Triton does by itself:

- a store ``vector_store(v, ref)`` becomes ``vector_store(v, S)``, a
  warpgroup barrier, ``v' = vector_load(S)``, a warpgroup barrier, and the
  original store of ``v'`` (its attributes and location kept);
- a load ``v = vector_load(ref)`` is followed by ``vector_store(v, S)``, a
  barrier, ``v' = vector_load(S)``, a barrier, and every use of ``v`` reads
  ``v'``.

Inference gives the store into ``S`` and the load from it layouts of their own
(an SMEM round trip decouples them), and ``S`` the transforms that make both
conflict-free: the producer keeps its layout, the GMEM transfer gets one that
coalesces. The same round trip serves an SMEM transfer whose ref's transforms
no layout of the value fits: the buffer's transforms are free.

Why the values are kept: every thread of the warpgroup stores its part of
``v`` into ``S`` and, after the barrier, the warpgroup loads all of ``S``:
``v'`` holds the elements of ``v`` at the same indices (a store then a load of
the whole buffer, in any two layouts). The barrier after the load keeps the
next use of ``S`` (the next staged op, the next iteration of a loop) from
overwriting it before every thread has read it. Barriers are Pallas': the
warpgroup's ``bar.sync`` (``gpu.barrier`` is CTA-wide and would deadlock a
warp-specialized kernel); with Pallas' auto barriers the lowering adds its own
around the SMEM store as well.

Where ``S`` lives: SMEM is one dynamic block whose size is the
``dynamic_shared_memory_size`` operand of the ``gpu.launch`` (the lowering and
the runtime both read it). ``S`` is sliced past its end, 1024-aligned (a
swizzled buffer needs it), and the size grown to match. The round trips never
overlap (each ends with its barrier), so every staged op of a kernel reuses
one region: the kernel grows by the largest, not their sum. Every op staging adds
carries ``smalto.staged`` (a discardable attribute), so that the checker and the
tests know them. Where the block has several warpgroups, each gets a buffer of its
own (a leading dim of the slice, viewed at the warpgroup's index as Pallas views
``smem_ref.at[i]``), since any of them may run the op; unless every op past the end
runs under the same ``warpgroup == c`` branch (a warp-specialized kernel's store
warpgroup): one buffer then. Before any of that, a buffer takes SMEM of the
kernel's own where ``smalto.program.smem_liveness`` proves it dead around the op
(``_dead_regions``): SMEM does not grow for it. The per-block limit
(``SMEM_LIMIT``) is checked here: JAX checks it before its pass, not after.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

from jax._src.lib.mlir import ir

from smalto.basics.launch import (
    block_size,
    constant_int,
    dynamic_smem_operand,
    enclosing_launch,
)
from smalto.hw.memory import SMEM_PER_BLOCK, STAGED
from smalto.program.smem_liveness import Interval, SmemLiveness
from smalto.program.view import ops_in_order
from smalto.source.locations import FilePosition, place

# The ops staging reroutes (the synchronous transfers Pallas emits for ``ref[...]``).
STAGED_OPS = frozenset({"mosaic_gpu.vector_load", "mosaic_gpu.vector_store"})
# The ops that may use the region Pallas reserves for cross-warp reductions.
_REDUCTIONS = frozenset({"vector.multi_reduction", "vector.reduction"})
# The dynamic SMEM a block may have (227 KiB; JAX checks it before its pass, so a pass that
# grows SMEM checks it itself).
SMEM_LIMIT = SMEM_PER_BLOCK
# Where a staging buffer starts: a swizzled SMEM buffer must be 1024-aligned.
ALIGNMENT = 1024
WARPGROUP_SIZE = 128


class StagingNotPossible(Exception):
    """The module has no room or no form for staging (the message says why)."""


class OverSmemLimit(StagingNotPossible):
    """Staging would need more SMEM than a block may have."""

    def __init__(self, needed: int, limit: int = SMEM_LIMIT) -> None:
        super().__init__(
            f"staging through SMEM needs {needed} bytes of SMEM per block, over the "
            f"{limit} a block may have"
        )
        self.needed = needed
        self.limit = limit


@dataclass(frozen=True)
class StagedOp:
    """One transfer smalto routed through SMEM, for the user to see."""

    op: str  # e.g. "mosaic_gpu.vector_store"
    location: str  # the user's file:line:col, else what the location says
    primitive: str | None  # the name JAX's location gives it (e.g. "swap"), if any
    memory: str  # "GMEM" or "SMEM": where the transfer's ref lives
    buffer_bytes: int  # the size of the staging buffer it goes through
    added_bytes: int  # what the kernel's SMEM grew by, in all (the staged ops share it)
    smem_bytes: int  # the kernel's SMEM per block afterwards
    warpgroups: int = 1  # the buffers: one per warpgroup of the block
    reused: bool = False  # the buffer is the reductions' scratch: SMEM did not grow
    position: FilePosition | None = None
    # The kernel's own SMEM, dead around the op, the buffer took (bytes [start, end)).
    dead_region: tuple[int, int] | None = None

    @property
    def store(self) -> bool:
        return self.op != "mosaic_gpu.vector_load"

    def __str__(self) -> str:
        primitive = self.primitive
        named = f", `{primitive}`" if primitive and primitive not in self.op else ""
        kind = "store" if self.store else "load"
        why = (
            "no layout it may take coalesces it"
            if self.memory == "GMEM"
            else "no layout it may take has a conflict-free plan under its ref's transforms"
        )
        each = f", one for each of {self.warpgroups} warpgroups" if self.warpgroups > 1 else ""
        if self.dead_region is not None:
            start, end = self.dead_region
            cost = (
                f"it reuses SMEM the kernel does not need there (bytes {start} to {end}, "
                f"proven dead around it); SMEM grew by {self.added_bytes} bytes in all, to "
                f"{self.smem_bytes} per block"
            )
        elif self.reused:
            cost = (
                f"it reuses the reductions' SMEM scratch: SMEM did not grow ({self.smem_bytes} "
                "bytes per block)"
            )
        else:
            cost = f"SMEM grew by {self.added_bytes} bytes to {self.smem_bytes} per block"
        return (
            f"{self.location}: this {self.memory} {kind} (`{self.op}`{named}) goes through a "
            f"{self.buffer_bytes}-byte SMEM buffer{each} ({why}): {cost}"
        )


@dataclass(frozen=True)
class Launch:
    """What staging needs of the ``gpu.launch`` around the staged ops."""

    op: ir.Operation
    smem_operand: int  # the operand number of ``dynamic_shared_memory_size``
    smem_bytes: int
    warpgroups: int


def stage(module: ir.Module, op_ids: Sequence[int], limit: int = SMEM_LIMIT) -> list[StagedOp]:
    """Routes the transfers of ``module`` at these pre-order positions (the ids
    ``read_program`` gives them) through SMEM; returns what it changed, in program order.

    Raises ``StagingNotPossible`` (``OverSmemLimit`` past ``limit``) before changing
    anything where it cannot.
    """
    ops = ops_in_order(module.operation)
    staged = [ops[i] for i in sorted(op_ids)]
    for operation in staged:
        if operation.name not in STAGED_OPS:
            raise StagingNotPossible(f"{operation.name} is no transfer staging reroutes")
    launch = _launch(staged)
    sizes = [_buffer_bytes(_staged_type(operation)) for operation in staged]
    # Every decision is made on the module as it came (the analysis reads it), then applied.
    liveness = SmemLiveness(launch.op)
    dead = _dead_regions(liveness, launch, staged, sizes)
    past_the_end = [i for i in range(len(staged)) if i not in dead]
    rest = [sizes[i] for i in past_the_end]
    # One buffer per warpgroup past the end, unless one warpgroup runs every op there.
    guards = {liveness.guard_of(staged[i]) for i in past_the_end}
    one_runs_them = len(guards) == 1 and len(next(iter(guards))) == 1
    buffers = 1 if one_runs_them else launch.warpgroups
    scratch = _reduction_scratch(launch)
    reused = (
        bool(rest) and scratch is not None and launch.warpgroups == 1 and max(rest) <= scratch[1]
    )
    total = launch.smem_bytes
    offset = 0
    if scratch is not None and reused:
        offset = scratch[0]
    elif rest:
        offset = _aligned(launch.smem_bytes)
        total = offset + max(rest) * buffers
        if total > limit:
            raise OverSmemLimit(total, limit)
        _grow_smem(launch, total)
    changed = []
    for i, (operation, size) in enumerate(zip(staged, sizes, strict=True)):
        memory = "SMEM" if _ref(operation).type.memory_space is not None else "GMEM"
        region = dead.get(i)
        if region is not None:
            _round_trip(operation, region.start, 1, barrier_first=True)
        else:
            _round_trip(operation, offset, buffers, barrier_first=reused)
        where = place(operation.location)
        changed.append(
            StagedOp(
                operation.name,
                where.text,
                where.name,
                memory,
                size,
                total - launch.smem_bytes,
                total,
                1 if region is not None else buffers,
                reused and region is None,
                where.position,
                None if region is None else (region.start, region.end),
            )
        )
    return changed


def _dead_regions(
    liveness: SmemLiveness, launch: Launch, staged: Sequence[ir.Operation], sizes: Sequence[int]
) -> dict[int, Interval]:
    """For each staged op that can have one, SMEM of the kernel's own that is dead around it
    (``smalto.program.smem_liveness``): 1024-aligned, within the kernel's SMEM, touched by
    no access whose end is unknown, no TMA copy out of it in flight there, no read of it
    after the round trip before a write of all of it; and only one warpgroup touches it
    (a block of one warpgroup, or every access to it under the same ``warpgroup == c``
    as the op: then one buffer serves, not one per warpgroup). Staged ops of the same
    warpgroup may share a region (each round trip ends before the next begins, with its
    barrier); the ops with none share the region past the end."""
    starts = sorted({_aligned(a.interval.start) for a in liveness.allocations if not a.unknown})
    found: dict[int, Interval] = {}
    for i, (operation, size) in enumerate(zip(staged, sizes, strict=True)):
        guard = liveness.guard_of(operation)
        if launch.warpgroups > 1 and len(guard) != 1:
            continue
        load = operation.name == "mosaic_gpu.vector_load"
        for start in starts:
            region = Interval(start, start + size)
            if region.end > launch.smem_bytes:
                break
            if any(
                region.overlaps(taken) and liveness.guard_of(staged[j]) != guard
                for j, taken in found.items()
            ):
                continue  # (staged buffers of one warpgroup may share: never live at once)
            if launch.warpgroups > 1 and not liveness.guarded_to(region, min(guard)):
                continue
            if liveness.dead_around(operation, region, after=load):
                found[i] = region
                break
    return found


def _reduction_scratch(launch: Launch) -> tuple[int, int] | None:
    """The region Pallas reserved for cross-warp reductions (``offset``, ``scratch_size`` on
    the reductions), where staging may reuse it: one region, 1024-aligned, every
    reduction's scratch inside it, and no slice of the kernel overlapping it (it is the
    reductions' alone, and each reduction's use of it ends within its own lowering)."""
    regions: set[tuple[int, int]] = set()
    offsets: set[int] = set()
    slices: list[tuple[int, int]] = []

    def visit(op: ir.Operation) -> ir.WalkResult:
        attributes = op.attributes
        if op.name in _REDUCTIONS and "offset" in attributes:
            offset = int(ir.IntegerAttr(attributes["offset"]).value)
            offsets.add(offset)
            if "scratch_size" in attributes:
                regions.add((offset, int(ir.IntegerAttr(attributes["scratch_size"]).value)))
        elif op.name == "mosaic_gpu.slice_smem" and "offset" in attributes:
            start = int(ir.IntegerAttr(attributes["offset"]).value)
            ref = ir.MemRefType(op.results[0].type)
            try:
                slices.append((start, start + _buffer_bytes_of(ref)))
            except StagingNotPossible:  # (barriers and the like: a few bytes, counted as 8)
                slices.append((start, start + 8 * math.prod(ref.shape)))
        return ir.WalkResult.ADVANCE

    launch.op.walk(visit, ir.WalkOrder.PRE_ORDER)
    if len(regions) != 1:
        return None
    ((start, size),) = regions
    if start % ALIGNMENT or any(not start <= o < start + size for o in offsets):
        return None
    if any(a < start + size and start < b for a, b in slices):
        return None
    return start, size


def _ref(operation: ir.Operation) -> ir.Value:
    load = operation.name == "mosaic_gpu.vector_load"
    return operation.operands[0 if load else 1]


def _staged_type(operation: ir.Operation) -> ir.VectorType:
    load = operation.name == "mosaic_gpu.vector_load"
    value = operation.results[0] if load else operation.operands[0]
    return ir.VectorType(value.type)


def _buffer_bytes(vector: ir.VectorType) -> int:
    bits = math.prod(vector.shape) * _bitwidth(vector.element_type)
    return -(-bits // 8)


def _buffer_bytes_of(ref: ir.MemRefType) -> int:
    bits = math.prod(ref.shape) * _bitwidth(ref.element_type)
    return -(-bits // 8)


def _bitwidth(element: ir.Type) -> int:
    if isinstance(element, ir.IntegerType):
        return ir.IntegerType(element).width
    if isinstance(element, ir.FloatType):
        return ir.FloatType(element).width
    raise StagingNotPossible(f"no staging for elements of type {element}")


def _aligned(offset: int) -> int:
    return -(-offset // ALIGNMENT) * ALIGNMENT


def _launch(staged: Sequence[ir.Operation]) -> Launch:
    """The one ``gpu.launch`` around every staged op, with a constant SMEM size and a block
    that is a row of warpgroups (each gets a buffer of its own)."""
    launches = {enclosing_launch(operation) for operation in staged}
    if len(launches) != 1 or None in launches:
        raise StagingNotPossible("the transfers are not inside one gpu.launch")
    (launch,) = launches
    assert launch is not None
    smem_operand = dynamic_smem_operand(launch)
    if smem_operand is None:
        raise StagingNotPossible("the gpu.launch has no dynamic SMEM size to grow")
    smem_bytes = constant_int(launch.operands[smem_operand])
    if smem_bytes is None:
        raise StagingNotPossible("the gpu.launch's dynamic SMEM size is not a constant")
    threads = block_size(launch)
    if threads is None:
        raise StagingNotPossible("the gpu.launch's block size is not a constant")
    if threads[1:] != (1, 1) or threads[0] % WARPGROUP_SIZE:
        raise StagingNotPossible(f"a block of {threads} threads is no row of warpgroups")
    return Launch(launch, smem_operand, smem_bytes, threads[0] // WARPGROUP_SIZE)


def _grow_smem(launch: Launch, total: int) -> None:
    """The launch's dynamic SMEM size set to ``total`` (a constant of its own, placed before
    the launch: the old one may have other uses)."""
    old = launch.op.operands[launch.smem_operand]
    with ir.InsertionPoint(launch.op), launch.op.location:
        size = _made(
            "arith.constant",
            results=[old.type],
            attributes={"value": ir.IntegerAttr.get(old.type, total)},
        )
    launch.op.operands[launch.smem_operand] = size.result


def _round_trip(
    operation: ir.Operation, offset: int, warpgroups: int, *, barrier_first: bool
) -> None:
    """The store into a new SMEM slice at ``offset`` (a buffer per warpgroup: the
    warpgroup's own, where several run the op), the barrier, the load back, the barrier;
    the original op then moves the reloaded value (a store) or its users read it (a
    load). ``barrier_first``: a barrier before the store too (a region the kernel's own
    ops use as well: the reductions' scratch, which a warp may still be reading)."""
    vector = _staged_type(operation)
    load = operation.name == "mosaic_gpu.vector_load"
    if load:
        value = operation.results[0]
        users = [(use.owner, use.operand_number) for use in value.uses]
    else:
        value = operation.operands[0]
        users = []
    with ir.InsertionPoint(operation), operation.location:
        warpgroup = _warpgroup_index()
        first, buffer = _buffer(vector, offset, warpgroups, warpgroup)
        if barrier_first:
            _warpgroup_barrier(warpgroup)
        _made(
            "mosaic_gpu.vector_store",
            operands=[value, buffer],
            attributes={"optimized": ir.BoolAttr.get(True), "multimem": ir.BoolAttr.get(False)},
        )
        _warpgroup_barrier(warpgroup)
        reloaded = _made(
            "mosaic_gpu.vector_load",
            results=[vector],
            operands=[buffer],
            attributes={"optimized": ir.BoolAttr.get(True)},
        ).result
        _warpgroup_barrier(warpgroup)
    if load:
        operation.move_before(first)  # the round trip follows the load
        for user, number in users:
            user.operands[number] = reloaded
    else:
        operation.operands[0] = reloaded


def _buffer(
    vector: ir.VectorType, offset: int, warpgroups: int, warpgroup: ir.Value
) -> tuple[ir.Operation, ir.Value]:
    """The staging buffer of this warpgroup: the slice itself for one warpgroup; for several,
    a slice with a buffer each along a leading dim, viewed at the warpgroup's (as Pallas
    views ``smem_ref.at[i]``). Returns the first op made, and the buffer."""
    i32 = ir.IntegerType.get_signless(32)
    smem = ir.Attribute.parse("#gpu.address_space<workgroup>")
    shape = list(vector.shape)
    element = vector.element_type
    leading = [warpgroups] if warpgroups > 1 else []
    slice_op = _made(
        "mosaic_gpu.slice_smem",
        results=[ir.MemRefType.get([*leading, *shape], element, memory_space=smem)],
        attributes={
            "offset": ir.IntegerAttr.get(i32, offset),
        },
    )
    first = warpgroup.owner
    assert not isinstance(first, ir.Block)
    if warpgroups == 1:
        return first.operation, slice_op.result
    index = _made("arith.index_cast", results=[ir.IndexType.get()], operands=[warpgroup]).result
    strides = [math.prod(shape[i + 1 :]) for i in range(len(shape))]
    view = ir.Type.parse(
        f"memref<{'x'.join(map(str, shape))}x{element}, "
        f"strided<[{', '.join(map(str, strides))}], offset: ?>, #gpu.address_space<workgroup>>"
    )
    rank = len(shape) + 1
    dynamic = -(2**63)  # ``ShapedType::kDynamic``: the offset is an operand
    subview = _made(
        "memref.subview",
        results=[view],
        operands=[slice_op.result, index],
        attributes={
            "static_offsets": ir.DenseI64ArrayAttr.get([dynamic] + [0] * (rank - 1)),
            "static_sizes": ir.DenseI64ArrayAttr.get([1, *shape]),
            "static_strides": ir.DenseI64ArrayAttr.get([1] * rank),
            "operandSegmentSizes": ir.DenseI32ArrayAttr.get([1, 1, 0, 0]),
        },
    )
    return first.operation, subview.result


def _warpgroup_index() -> ir.Value:
    """The warpgroup of the running thread, as Pallas computes it (``utils.warpgroup_idx``:
    the thread index over 128; blocks are a row of warpgroups, ``_launch`` checks)."""
    i32 = ir.IntegerType.get_signless(32)
    thread = _made(
        "gpu.thread_id",
        results=[ir.IndexType.get()],
        attributes={"dimension": ir.Attribute.parse("#gpu.dim<x>")},
    ).result
    thread32 = _made("arith.index_cast", results=[i32], operands=[thread]).result
    return _made("arith.shrui", results=[i32], operands=[thread32, _i32_constant(7)]).result


def _warpgroup_barrier(warpgroup: ir.Value) -> None:
    """``bar.sync`` on the warpgroup's barrier, as Pallas emits it (``utils.warpgroup_barrier``:
    barrier 0 is ``gpu.barrier``'s, so the warpgroup index plus one)."""
    i32 = ir.IntegerType.get_signless(32)
    barrier = _made(
        "arith.addi",
        results=[i32],
        operands=[warpgroup, _i32_constant(1)],
        attributes={"overflowFlags": ir.Attribute.parse("#arith.overflow<none>")},
    ).result
    _made(
        "llvm.inline_asm",
        results=[ir.Type.parse("!llvm.void")],
        operands=[barrier],
        attributes={
            "asm_string": ir.StringAttr.get(f"bar.sync $0, {WARPGROUP_SIZE};"),
            "constraints": ir.StringAttr.get("r"),
            "has_side_effects": ir.UnitAttr.get(),
            "tail_call_kind": ir.Attribute.parse("#llvm.tailcallkind<none>"),
        },
    )


def _made(
    name: str,
    *,
    results: Sequence[ir.Type] | None = None,
    operands: Sequence[ir.Value] | None = None,
    attributes: dict[str, ir.Attribute] | None = None,
) -> ir.Operation:
    """An op staging adds, marked as such (``STAGED``), at the insertion point in force."""
    return ir.Operation.create(
        name,
        results=results,
        operands=operands,
        attributes={**(attributes or {}), STAGED: ir.UnitAttr.get()},
    )


def _i32_constant(value: int) -> ir.Value:
    i32 = ir.IntegerType.get_signless(32)
    return _made(
        "arith.constant", results=[i32], attributes={"value": ir.IntegerAttr.get(i32, value)}
    ).result
