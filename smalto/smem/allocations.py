"""Every SMEM allocation of a kernel, read off the module JAX hands to layout inference.

A Mosaic GPU kernel's SMEM is one dynamic block: the ``dynamic_shared_memory_size``
of its ``gpu.launch``. JAX 0.12.0.1 carves it at static offsets, and its dialect
lowering slices it at exactly those (``dialect_lowering._slice_smem``: the slice's
bytes from its type, ``offset + bytes`` within the launch's size):

- ``mosaic_gpu.slice_smem`` ops with an ``alias_id``: Pallas' stack allocator
  (``ModuleContext.scratch_view``) for a ``run_scoped`` scope, the kernel's
  ``scratch_shapes`` and the pipeline's buffers (one row per stage, the leading
  dimension); every one takes its bytes rounded up to 1024 (``SMEM_ALIGNMENT``),
  sequential scopes reuse the same bytes, nested ones stack;
- ``slice_smem`` ops without one: what the launch itself lays out for the whole
  kernel (``core._construct_smem_reftree``): the barriers (8 bytes each), the
  TMEM address slot (4 bytes), a Mosaic GPU kernel's own scratch buffers;
- a reduction's ``offset`` and ``scratch_size`` attributes: the region Pallas
  reserved for a cross-warp reduction (``vector.multi_reduction`` slices
  ``scratch_size`` bytes there, ``vector.reduction`` four elements);
- slices marked by staging through SMEM (``smalto.hw.memory.STAGED``).

An allocation's extent is where, in program order, its bytes are taken: from
its slice to the last use of the slice or of a view of it, widened to the
whole op of the slice's block that holds that use (a loop, a ``warp_map``):
the ops of a ``run_scoped`` body are inlined with no mark of the scope's end,
so its uses bound it; a TMA store from it holds it until the wait that
follows, an MMA reading it until the wait the liveness analysis proves ends its
reads (``smalto.program.smem_liveness``: a wgmma's ``wait_group 0``, the wait on
a tcgen05 commit's barrier, in the MMA's block; none proven: the MMA). Its
first use is kept too (a kernel's scratch is sliced at the start, used later).
What the launch lays out is taken the whole kernel long. This is where bytes
are allocated, not a liveness analysis of their data.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

from jax._src.lib.mlir import ir

from smalto.basics.launch import dynamic_smem
from smalto.hw.memory import STAGED, smem_limit
from smalto.smem.program_order import ProgramOrder, first_launch, kernel_name, walked

ALIGNMENT = 1024  # Pallas' SMEM_ALIGNMENT: every scoped allocation's bytes round up to it
BARRIER_BYTES = 8  # an mbarrier (``utils.MBARRIER_BYTES``)
_DYNAMIC = -9223372036854775808  # MLIR's dynamic offset in ``static_offsets``

# What each kind of allocation is, in the order tables list kinds.
PIPELINE = "pipeline buffer"
SCRATCH = "scratch"
REDUCTION = "reduction scratch"
STAGED_BUFFER = "staged buffer"
KERNEL_SCRATCH = "kernel scratch"
BARRIERS = "barriers"
TMEM_ADDRESS = "TMEM address"
KINDS = (PIPELINE, SCRATCH, REDUCTION, STAGED_BUFFER, KERNEL_SCRATCH, BARRIERS, TMEM_ADDRESS)
WHOLE_KERNEL_KINDS = frozenset({KERNEL_SCRATCH, BARRIERS, TMEM_ADDRESS})


def align_up(size: int, alignment: int = ALIGNMENT) -> int:
    return -(-size // alignment) * alignment


@dataclass(frozen=True)
class Allocation:
    """One region of a kernel's SMEM: ``bytes`` at ``offset``, taken from op ``start`` to op
    ``end`` (program order, both included); ``footprint`` counts the alignment padding the
    allocator leaves after it."""

    index: int  # the op that allocates it (its slice, or the reduction), in program order
    kind: str
    what: str  # its type: ``4x128x64xf16``, ``2x!mosaic_gpu.barrier``
    offset: int
    bytes: int
    footprint: int
    start: int
    end: int
    line: str | None  # ``kernel.py:42:7``: the source position of its op, where known
    stages: int | None = None  # a pipeline buffer's stages (its leading dimension)
    first_use: int | None = None  # the first op that uses it (None: from its start)

    @property
    def stop(self) -> int:
        """The byte after it, padding included."""
        return self.offset + self.footprint

    @property
    def padding(self) -> int:
        return self.footprint - self.bytes

    @property
    def stage_bytes(self) -> int | None:
        return None if not self.stages else self.bytes // self.stages

    def summary(self) -> str:
        """``131072 bytes  pipeline buffer: 4x128x128xf16, 4 stages of 32768 near k.py:34:12``."""
        stages = f", {self.stages} stages of {self.stage_bytes}" if self.stages else ""
        if self.line is None:
            where = f"at op {self.index}"
        else:
            where = self.line if self.line.startswith("near ") else f"at {self.line}"
        return f"{self.footprint:>7} bytes  {self.kind}: {self.what}{stages} {where}"

    def live_at(self, point: int) -> bool:
        return self.start <= point <= self.end

    def overlaps_in_time(self, other: Allocation) -> bool:
        return self.start <= other.end and other.start <= self.end

    @property
    def used_from(self) -> int:
        return self.start if self.first_use is None else self.first_use

    def used_with(self, other: Allocation) -> bool:
        """Whether the two are both in use at some op (from first use to last)."""
        return self.used_from <= other.end and other.used_from <= self.end

    def overlaps_in_bytes(self, other: Allocation) -> bool:
        return self.offset < other.offset + other.bytes and other.offset < self.offset + self.bytes


@dataclass(frozen=True)
class SmemMap:
    """A kernel's SMEM: its allocations, what the launch asks for, the peak and the limit."""

    kernel: str  # the launching function's name
    size: int | None  # the launch's dynamic_shared_memory_size (None: not a constant)
    limit: int  # what a block may have on the arch (232 448 bytes on sm_90 and sm_100)
    allocations: tuple[Allocation, ...]
    ops: tuple[str, ...] = field(repr=False)  # each op's name, in program order
    lines: tuple[str | None, ...] = field(repr=False)  # each op's source position

    @property
    def scoped(self) -> tuple[Allocation, ...]:
        return tuple(a for a in self.allocations if a.kind not in WHOLE_KERNEL_KINDS)

    @property
    def whole_kernel(self) -> tuple[Allocation, ...]:
        return tuple(a for a in self.allocations if a.kind in WHOLE_KERNEL_KINDS)

    @property
    def reserved(self) -> int:
        """The bytes the launch lays out for the whole kernel (barriers, the TMEM address
        slot, a kernel's own scratch): the scoped allocations may have the rest."""
        return sum(a.footprint for a in self.whole_kernel)

    @property
    def peak(self) -> tuple[int, int | None]:
        """The highest byte in use (padding included), and the op where it is reached with
        the most bytes in use (None where only the launch's own regions are: all the kernel
        long)."""
        whole = max((a.stop for a in self.whole_kernel), default=0)
        best: tuple[int, int] = (whole, -1)
        where = None
        for point in sorted({a.start for a in self.scoped}):
            live = [a for a in self.scoped if a.live_at(point)]
            # The highest byte decides the size; among the points that reach it, the one
            # with the most bytes in use is where to look.
            height = (max(whole, *(a.stop for a in live)), sum(a.footprint for a in live))
            if height > best:
                best, where = height, point
        return best[0], where

    @property
    def total(self) -> int:
        """The dynamic SMEM the kernel takes: the launch's size, else its allocations' end."""
        if self.size is not None:
            return self.size
        return max((a.offset + a.bytes for a in self.allocations), default=0)

    @property
    def unused(self) -> int:
        """The bytes of the kernel's SMEM no allocation ever takes (padding counts as taken):
        what Pallas reserved beyond its slices (its estimate counts a reduction's scratch
        where the reduction may need none)."""
        covered, reach = 0, 0
        for a in sorted(self.allocations, key=lambda a: a.offset):
            start, stop = max(a.offset, reach), min(a.stop, self.total)
            if stop > start:
                covered += stop - start
            reach = max(reach, a.stop)
        return max(0, self.total - covered)

    @property
    def over(self) -> int:
        """By how many bytes the kernel exceeds the limit (0 within it)."""
        return max(0, self.total - self.limit)

    def overlaps(self, *, in_use: bool = False) -> list[tuple[Allocation, Allocation]]:
        """Allocations whose bytes overlap while both are taken (none as JAX lays a kernel
        out); ``in_use``: while both are in use, from first use to last (none in a sound
        kernel)."""
        found = []
        for i, a in enumerate(self.allocations):
            for b in self.allocations[i + 1 :]:
                meet = a.used_with(b) if in_use else a.overlaps_in_time(b)
                if meet and a.overlaps_in_bytes(b):
                    found.append((a, b))
        return found

    def line_at(self, op: int) -> str | None:
        """Op ``op``'s source line, else (an allocation whose op names none) the nearest."""
        return self.lines[op] or next((a.line for a in self.allocations if a.index == op), None)

    def in_use_at(self, point: int | None) -> int:
        """The bytes taken at op ``point``, padding included (the launch's too)."""
        if point is None:
            return self.reserved
        return self.reserved + sum(a.footprint for a in self.scoped if a.live_at(point))

    def top_users(self, count: int = 5) -> list[Allocation]:
        """The largest allocations taken at the peak (else the largest of all), largest first."""
        _, where = self.peak
        live = [a for a in self.allocations if where is None or a.live_at(where)]
        return sorted(live, key=lambda a: (-a.footprint, a.index))[:count]


def read_smem_map(
    module: ir.Module, arch: tuple[int, int] = (9, 0), *, stages: dict[int, int] | None = None
) -> SmemMap:
    """The SMEM map of ``module``'s kernel (its first ``gpu.launch``; a bare function's ops
    where it has none). ``stages``: pipeline buffers (by op index) taken at fewer stages, as a
    change to the kernel would leave them."""
    launch = first_launch(module)
    walk = walked(module, launch)
    kernel = kernel_name(launch) if launch is not None else "module"
    allocations: list[Allocation] = []
    laid_out: set[tuple[int, str]] = set()
    for op, i in walk.allocating:
        allocation = _allocation(walk, op, i, stages or {})
        if allocation is None:
            continue
        if allocation.kind in WHOLE_KERNEL_KINDS:
            # The launch's regions are sliced again where used (the TMEM address slot by
            # the TMEM allocation): one region, however many slices.
            key = (allocation.offset, allocation.what)
            if key in laid_out:
                continue
            laid_out.add(key)
        allocations.append(allocation)
    allocations.sort(key=lambda a: (a.start, a.offset, a.index))
    return SmemMap(
        kernel=kernel,
        size=dynamic_smem(launch) if launch is not None else None,
        limit=smem_limit(arch),
        allocations=tuple(allocations),
        ops=tuple(walk.names),
        lines=tuple(walk.lines),
    )


def _allocation(
    walk: ProgramOrder, op: ir.Operation, i: int, stages: dict[int, int]
) -> Allocation | None:
    line = walk.lines[i] or _near(walk, i)
    if op.name != "mosaic_gpu.slice_smem":
        return _reduction(op, i, line)
    if "offset" not in op.attributes or not op.results:
        return None
    offset = int(ir.IntegerAttr(op.attributes["offset"]).value)
    ref = ir.MemRefType(op.results[0].type)
    what = str(ref).removeprefix("memref<").split(", #gpu")[0].rstrip(">")
    size = _ref_bytes(ref)
    if size is None:
        return None
    element = str(ref.element_type)
    if "mosaic_gpu.barrier" in element:
        start, end = walk.whole(i)
        if i in stages:  # a pipeline's barriers, one a stage, taken at fewer stages
            size = BARRIER_BYTES * stages[i]
            what = f"{stages[i]}x" + what.split("x", 1)[1]
        return Allocation(i, BARRIERS, what, offset, size, size, start, end, line)
    if "alias_id" not in op.attributes and STAGED not in op.attributes:
        start, end = walk.whole(i)
        kind = TMEM_ADDRESS if _holds_tmem_address(op, ref) else KERNEL_SCRATCH
        return Allocation(i, kind, what, offset, size, size, start, end, line)
    first, end = walk.uses(op, i)
    line = walk.lines[i] or _near(walk, i, first)
    if STAGED in op.attributes:
        return Allocation(
            i, STAGED_BUFFER, what, offset, size, align_up(size), i, end, line, first_use=first
        )
    count = _stage_count(op, ref)
    if count is None:
        return Allocation(
            i, SCRATCH, what, offset, size, align_up(size), i, end, line, first_use=first
        )
    taken = stages.get(i, count)
    size = size // count * taken
    if taken != count:
        what = f"{taken}x" + what.split("x", 1)[1]
    return Allocation(
        i, PIPELINE, what, offset, size, align_up(size), i, end, line, taken, first_use=first
    )


def _near(walk: ProgramOrder, i: int, start: int | None = None) -> str | None:
    """Where the kernel's source is nearest op ``i``'s use: the first line from op ``start``
    (its first use; default: the op after it) on, in its region (a pipeline's buffers and a
    kernel's scratch come from Pallas' own ``run_scoped``, whose location names no line of
    the kernel's): ``near kernel.py:34:12``."""
    _, last = walk.whole(i)
    first = i + 1 if start is None or start <= i else start
    following = (line for line in walk.lines[first : last + 1] if line)
    line = next(following, None)
    return None if line is None else f"near {line}"


def _reduction(op: ir.Operation, i: int, line: str | None) -> Allocation | None:
    offset = int(ir.IntegerAttr(op.attributes["offset"]).value)
    element = ir.VectorType(op.operands[0].type).element_type
    bits = _bits(element)
    if bits is None:
        return None
    if op.name == "vector.reduction":
        size = 4 * bits // 8  # the lowering slices four elements
        reserved = size
    else:
        if "scratch_size" not in op.attributes:
            return None
        reserved = int(ir.IntegerAttr(op.attributes["scratch_size"]).value)
        size = reserved * 8 // bits * bits // 8
    what = f"{reserved // max(1, bits // 8)}x{element}"
    return Allocation(i, REDUCTION, what, offset, size, align_up(reserved), i, i, line)


def _stage_count(op: ir.Operation, ref: ir.MemRefType) -> int | None:
    """The stages of a pipeline buffer: its leading dimension, where some view of it picks
    one row by a computed index (the pipeline's slot); None for anything else."""
    shape = list(ref.shape)
    if len(shape) < 2 or shape[0] < 2:
        return None
    pending: list[ir.Value] = list(op.results)
    seen = 0
    while pending and seen < 256:
        value = pending.pop()
        for use in value.uses:
            user = use.owner.operation
            seen += 1
            if user.name == "memref.subview" and use.operand_number == 0:
                offsets = list(ir.DenseI64ArrayAttr(user.attributes["static_offsets"]))
                sizes = list(ir.DenseI64ArrayAttr(user.attributes["static_sizes"]))
                if offsets and offsets[0] == _DYNAMIC and sizes[0] == 1:
                    return shape[0]
            elif user.name in ("mosaic_gpu.with_transforms", "memref.cast"):
                pending.extend(user.results)
            else:
                pending.extend(_region_arguments(user, use.operand_number))
    return None


def _region_arguments(user: ir.Operation, operand: int) -> list[ir.Value]:
    """The block arguments a value passed as ``operand`` of ``user`` becomes inside its
    regions (a ``warp_map``'s or ``custom_primitive``'s operands, one argument each; a loop's
    carried values), where that correspondence is plain."""
    found: list[ir.Value] = []
    for region in user.regions:
        for block in region.blocks:
            arguments = list(block.arguments)
            if user.name == "scf.for":
                index = operand - 3 + 1  # (lower, upper, step, carried...) -> (iv, carried...)
            elif len(arguments) == len(user.operands):
                index = operand
            else:
                index = -1
            if 0 <= index < len(arguments):
                found.append(arguments[index])
            break  # the entry block only
    return found


def _holds_tmem_address(op: ir.Operation, ref: ir.MemRefType) -> bool:
    if ref.rank != 0 or str(ref.element_type) != "i32":
        return False
    return any("tmem_alloc" in use.owner.name for use in op.results[0].uses)


def _bits(element: ir.Type) -> int | None:
    if isinstance(element, ir.IntegerType):
        return int(ir.IntegerType(element).width)
    if isinstance(element, ir.FloatType):
        return int(ir.FloatType(element).width)
    if "mosaic_gpu.barrier" in str(element):
        return BARRIER_BYTES * 8
    return None


def _ref_bytes(ref: ir.MemRefType) -> int | None:
    """The bytes JAX's lowering slices for ``ref``: its elements times their width."""
    bits = _bits(ref.element_type)
    if bits is None or any(d < 0 for d in ref.shape):
        return None
    return math.prod(ref.shape) * bits // 8
