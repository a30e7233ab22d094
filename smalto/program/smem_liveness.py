"""Which bytes of a kernel's SMEM hold data still needed, at each point of the kernel: a
liveness analysis over the ``gpu.launch`` body that respects asynchrony.

SMEM is one dynamic block, carved by ``mosaic_gpu.slice_smem`` at static offsets;
the same bytes may be sliced many times (a scratch re-sliced at each use, two
sequential ``run_scoped`` scopes at one offset). So the analysis is over byte
ranges, not SSA values. Every SMEM memref (and every pointer or integer made from
one) is traced back to the allocation it views (``Allocation``: the slice's byte
range, its type and ``alias_id``) through views (``subview``, ``transpose``,
``with_transforms``, casts, reshapes), region arguments (``warp_map``, loop
carries that pass the same ref) and pointer arithmetic (barriers). A value traced
to no allocation is *unknown*: it may be any byte.

Each op's accesses are one of:

- ``READ``: a synchronous read (``vector_load``, ``memref.load``, ...);
- ``WRITE``: a synchronous write of part of a buffer, ``KILL`` of all of it (a
  ``vector_store`` through a view that covers the whole slice): after a kill the
  bytes hold nothing older;
- ``BULK``: a TMA copy out of SMEM (``async_store``, committed): it reads the
  bytes until a ``nvvm.cp.async.bulk.wait_group 0`` (``wait_smem_to_gmem(0)``);
  a wait for fewer than all groups completes nothing here (which group is which
  is not tracked);
- ``TRACKED``: any other access (TMA loads into SMEM, ``wgmma``, ``tcgen05_mma``
  operands, barriers, the TMEM address slot, an op inside an opaque body, a
  cross-warp reduction's scratch, an unknown op): its completion is signalled
  through an mbarrier or not at all, so the analysis takes it as never complete:
  those bytes are never proven dead,
- but for an asynchronous access whose end is proven (``Span``): the op that waits
  for it follows it in the same block, so every path from the access passes the
  wait, and nothing between can make the wait end sooner:

  - a ``wgmma``'s SMEM operands, read until the ``wgmma.wait_group 0`` after the
    ``wgmma.commit_group`` that follows it;
  - a ``tcgen05_mma``'s SMEM operands, read until the wait
    (``mbarrier.try_wait.parity``) on the barrier that the ``tcgen05_commit_arrive``
    following it arrives on, with nothing else touching that barrier between;
  - a TMA load's destination (``async_load``), written until the wait on its
    barrier, with nothing but other TMA loads and their ``arrive_expect_tx`` touching
    that barrier between.

  Such an access is a synchronous one where it is made (an MMA operand a ``READ``,
  read again at the wait; a TMA load a ``WRITE`` or ``KILL``), in flight at every
  node a path reaches from it before the wait. A wait in another block (after a
  loop, in a branch) or for fewer wgmma groups proves nothing.

Control flow is structured: blocks run in order, an ``scf.if`` or
``scf.index_switch`` runs one of its regions (or none where one is empty), and
any other op with regions (loops, ``warp_map``) runs them in any order, any number
of times (so a buffer live across a loop's back edge is live at its top). What
holds at a point holds along every path through the module's ops, which is what
a thread runs.

Threads: the analysis follows one thread's program order. Staging uses it only
where one warpgroup touches the bytes (a block of one warpgroup, or every access
under the same ``warpgroup == c`` condition: ``guard``), with a warpgroup barrier
before its first use of them and after its last, so that the other threads of the
warpgroup are ordered with it. The checker (``smalto.check``) uses it to find two
buffers whose bytes overlap while one still holds data the other overwrites.
"""

from __future__ import annotations

import enum
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass

from jax._src.lib.mlir import ir

from smalto.basics.records import value_class

_EVERYWHERE_END = 1 << 62
_BARRIER_BYTES = 8
_WARPGROUP_SHIFT = 7  # log2 of the 128 threads of a warpgroup

# Ops whose result views the bytes of their first operand (no access).
_VIEWS = frozenset(
    {
        "memref.subview",
        "memref.transpose",
        "memref.collapse_shape",
        "memref.expand_shape",
        "memref.cast",
        "memref.reinterpret_cast",
        "memref.reshape",
        "memref.view",
        "mosaic_gpu.with_transforms",
    }
)
# Views that keep every byte of their source (a store through them writes all of it).
_WHOLE_VIEWS = frozenset(
    {
        "memref.transpose",
        "memref.collapse_shape",
        "memref.expand_shape",
        "memref.cast",
        "mosaic_gpu.with_transforms",
    }
)
# Synchronous reads: the ref's operand number.
_READS = {
    "mosaic_gpu.vector_load": 0,
    "memref.load": 0,
    "vector.load": 0,
    "vector.transfer_read": 0,
    "vector.maskedload": 0,
    "vector.gather": 0,
}
# Synchronous writes: the ref's operand number.
_WRITES = {
    "mosaic_gpu.vector_store": 1,
    "memref.store": 1,
    "vector.store": 1,
    "vector.transfer_write": 1,
    "vector.maskedstore": 0,
}
_BULK_WAIT = "nvvm.cp.async.bulk.wait_group"
# Async ops whose SMEM operands the tensor cores read until an mbarrier says so.
_MMA = frozenset({"mosaic_gpu.wgmma", "mosaic_gpu.tcgen05_mma", "mosaic_gpu.mma"})
_WGMMA_COMMITS = frozenset({"nvvm.wgmma.commit.group.sync.aligned"})
_WGMMA_WAITS = frozenset({"nvvm.wgmma.wait.group.sync.aligned"})
_MBARRIER_WAIT = "nvvm.mbarrier.try_wait.parity"
_TCGEN05_COMMIT = "mosaic_gpu.tcgen05_commit_arrive"
_JOINING_A_PHASE = frozenset({"mosaic_gpu.async_load", "mosaic_gpu.arrive_expect_tx"})
# Ops a path through which may complete an asynchronous access (the checker reports a
# write over an MMA's operand only where no path from the MMA to it passes one).
_ANY_WAITS = frozenset({*_WGMMA_WAITS, _MBARRIER_WAIT, "mosaic_gpu.wait"})
_BRANCHES = frozenset({"scf.if", "scf.index_switch"})
_TERMINATORS = frozenset({"scf.yield", "scf.condition", "gpu.terminator", "gpu.yield"})
_REDUCTIONS = frozenset({"vector.multi_reduction", "vector.reduction"})


class Access(enum.IntEnum):
    READ = 0
    WRITE = 1
    KILL = 2
    BULK = 3
    TRACKED = 4  # an async or unknown access: reads and writes, end unknown
    TRACKED_READ = 5  # an async read whose end an mbarrier signals (MMA operands)
    TRACKED_WRITE = 6  # an async write whose end an mbarrier signals (TMA loads)
    TRACKED_KILL = 7  # a TRACKED_WRITE of a whole buffer


# Accesses whose end the analysis does not know.
UNENDED = frozenset(
    {Access.TRACKED, Access.TRACKED_READ, Access.TRACKED_WRITE, Access.TRACKED_KILL}
)
# An asynchronous access whose end is proven: the synchronous access it stands for.
_ENDED = {
    Access.TRACKED_READ: Access.READ,
    Access.TRACKED_WRITE: Access.WRITE,
    Access.TRACKED_KILL: Access.KILL,
}


@dataclass(frozen=True, order=True)
class Interval:
    """Bytes ``[start, end)`` of the kernel's SMEM."""

    start: int
    end: int

    def overlaps(self, other: Interval) -> bool:
        return self.start < other.end and other.start < self.end

    def covers(self, other: Interval) -> bool:
        return self.start <= other.start and other.end <= self.end

    @property
    def size(self) -> int:
        return self.end - self.start


EVERYWHERE = Interval(0, _EVERYWHERE_END)
_WRITING = frozenset({Access.WRITE, Access.KILL, Access.TRACKED_WRITE, Access.TRACKED_KILL})


@value_class(frozen=True)
class Allocation:
    """One buffer of SMEM: a slice's bytes, its type and Pallas' ``alias_id`` (the same
    scratch sliced at several places is one allocation)."""

    interval: Interval
    type: str
    alias: int | None

    @property
    def unknown(self) -> bool:
        return self.interval == EVERYWHERE


UNKNOWN = Allocation(EVERYWHERE, "?", None)


@value_class(frozen=True)
class Event:
    access: Access
    allocation: Allocation

    @property
    def interval(self) -> Interval:
        return self.allocation.interval


@value_class(frozen=True)
class Span:
    """An asynchronous access whose end is proven: made at node ``issue``, over at node
    ``end`` (the wait); ``read``: an MMA reading its operand, else a TMA load writing."""

    issue: int
    end: int
    allocation: Allocation
    read: bool


class SmemLiveness:
    """The SMEM accesses of one ``gpu.launch`` body and the paths between them."""

    def __init__(self, launch: ir.Operation) -> None:
        self.launch = launch
        self._roots: dict[ir.Value, Allocation] = {}
        self._whole: set[ir.Value] = set()
        self.ops: list[ir.Operation | None] = []  # node -> its op (None: a join)
        self.events: list[tuple[Event, ...]] = []
        self.waits: list[bool] = []  # node -> a wait for every bulk copy
        self.guards: list[frozenset[int]] = []  # node -> warpgroups it is guarded to
        self.successors: list[list[int]] = []
        self.node_of: dict[ir.Operation, int] = {}
        self.allocations: dict[Allocation, list[ir.Operation]] = {}
        self._guard: list[frozenset[int]] = [frozenset()]
        self._predecessor_lists: list[list[int]] | None = None
        # A loop carrying another buffer than it started with: what the carry views is not
        # known where it is used, so no byte is proven dead.
        self.unsound_carry = False
        self.spans: list[Span] = []
        self._flights: dict[Span, set[int]] = {}
        (region,) = launch.regions
        entry, self.exit = self._block(region.blocks[0])
        self.entry = entry

    # --- building ------------------------------------------------------------------------

    def _node(
        self, op: ir.Operation | None, events: Iterable[Event] = (), wait: bool = False
    ) -> int:
        self.ops.append(op)
        self.events.append(tuple(events))
        self.waits.append(wait)
        self.guards.append(self._guard[-1])
        self.successors.append([])
        if op is not None:
            self.node_of[op] = len(self.ops) - 1
        return len(self.ops) - 1

    def _edge(self, a: int, b: int) -> None:
        self.successors[a].append(b)

    def _block(self, block: ir.Block) -> tuple[int, int]:
        entry = current = self._node(None)
        direct: list[tuple[ir.Operation, int, int]] = []  # the block's ops, their nodes
        for child in block.operations:
            op = child.operation
            if op.name in _TERMINATORS:
                self._carry(op)
                continue
            if len(op.regions):
                first, last = self._structured(op)
            else:
                first = last = self._node(op, self._accesses(op), _is_bulk_wait(op))
            self._edge(current, first)
            current = last
            direct.append((op, first, last))
        self._end_asynchronous(direct)
        return entry, current

    # --- asynchronous accesses ended by a wait in the same block -------------------------

    def _end_asynchronous(self, direct: list[tuple[ir.Operation, int, int]]) -> None:
        """Proves the ends of the block's asynchronous accesses that a later op of the
        block waits for (the module's docstring), and makes them synchronous ones."""
        for index, (op, _, node) in enumerate(direct):
            if _collective(op):
                continue  # (another block's program issues it, or reads through it)
            if op.name == "mosaic_gpu.wgmma":
                end = self._wgmma_end(direct, index)
            elif op.name == "mosaic_gpu.tcgen05_mma":
                end = self._tcgen05_end(direct, index)
            elif op.name == "mosaic_gpu.async_load" and len(op.operands) > 2:
                end = self._barrier_wait(direct, index, op.operands[2], loads_only=True)
            else:
                continue
            if end is None:
                continue
            events = list(self.events[node])
            asynchronous = [e for e in events if e.access in _ENDED]
            if not asynchronous:
                continue
            ended = [Event(_ENDED[e.access], e.allocation) for e in asynchronous]
            self.events[node] = tuple(e for e in events if e.access not in _ENDED) + tuple(ended)
            for event in ended:
                read = event.access == Access.READ
                self.spans.append(Span(node, end, event.allocation, read))
                if read:  # (the operand is read up to the wait)
                    self.events[end] = (*self.events[end], event)

    def _wgmma_end(self, direct: list[tuple[ir.Operation, int, int]], index: int) -> int | None:
        """The node of the ``wgmma.wait_group 0`` that follows the commit of the group
        of ``direct[index]`` (a wgmma) in its block."""
        committed = False
        for op, _, node in direct[index + 1 :]:
            if _wgmma_commit(op):
                committed = True
            elif committed and _wgmma_wait(op) == 0:
                return node
        return None

    def _tcgen05_end(self, direct: list[tuple[ir.Operation, int, int]], index: int) -> int | None:
        """The node of the wait on the barrier of the first ``tcgen05_commit_arrive``
        after ``direct[index]`` (a tcgen05 MMA) in its block."""
        for later, (op, _, _) in enumerate(direct[index + 1 :], start=index + 1):
            if op.name == _TCGEN05_COMMIT and op.operands:
                return self._barrier_wait(direct, later, op.operands[0], loads_only=False)
        return None

    def _barrier_wait(
        self,
        direct: list[tuple[ir.Operation, int, int]],
        index: int,
        barrier: ir.Value,
        *,
        loads_only: bool,
    ) -> int | None:
        """The node of the first wait on ``barrier`` after ``direct[index]`` in its
        block, where no op between touches the barrier (but, with ``loads_only``, other
        TMA loads and the arrivals expecting their bytes: Pallas' copies of several
        operands on one barrier, all in the phase the wait waits for; a phase cannot
        complete while bytes expected in it are in flight)."""
        allocation = self.root(barrier)
        if allocation is None or allocation.unknown:
            return None
        key = _barrier_key(barrier)
        for op, first, node in direct[index + 1 :]:
            if (
                op.name == _MBARRIER_WAIT
                and op.operands
                and _same_barrier(self, op.operands[0], key, allocation)
            ):
                return node
            for between in range(first, node + 1):
                other = self.ops[between]
                if other is not None and _addressing(other):
                    continue  # (a barrier's address computed: no access)
                if loads_only and other is not None and other.name in _JOINING_A_PHASE:
                    continue
                if any(e.interval.overlaps(allocation.interval) for e in self.events[between]):
                    return None
        return None

    def in_flight(self, span: Span) -> set[int]:
        """The nodes at which ``span``'s access may not be over: reached from it before its
        wait (the wait's own node included: it ends there, not before)."""
        if span not in self._flights:
            self._flights[span] = _reached(self.successors, {span.issue}, frozenset({span.end}))
        return self._flights[span]

    def asynchronous_in_flight(self, node: int, interval: Interval) -> bool:
        """Whether an asynchronous access whose end is proven (an MMA reading, a TMA load
        writing a byte of ``interval``) may still be under way when ``node`` runs."""
        return any(
            span.allocation.interval.overlaps(interval) and node in self.in_flight(span)
            for span in self.spans
        )

    def _structured(self, op: ir.Operation) -> tuple[int, int]:
        entry = self._node(op, self._accesses(op))
        self._bind_region_arguments(op)
        exit_ = self._node(None)
        if op.name in _BRANCHES:
            for number, region in enumerate(op.regions):
                blocks = list(region.blocks)
                if not blocks:
                    self._edge(entry, exit_)
                    continue
                self._guard.append(self._guard[-1] | _branch_guard(op, number))
                first, last = self._block(blocks[0])
                self._guard.pop()
                self._edge(entry, first)
                self._edge(last, exit_)
            return entry, exit_
        # Loops and anything else: the regions in any order, any number of times.
        bodies = [self._block(list(r.blocks)[0]) for r in op.regions if list(r.blocks)]
        self._edge(entry, exit_)
        for first, last in bodies:
            self._edge(entry, first)
            self._edge(last, exit_)
            for other_first, _ in bodies:
                self._edge(last, other_first)
        return entry, exit_

    # --- what a value views ---------------------------------------------------------------

    def root(self, value: ir.Value) -> Allocation | None:
        """The allocation ``value`` views (``UNKNOWN``: it may be any byte); None: no SMEM."""
        if value in self._roots:
            return self._roots[value]
        if _is_smem(value.type):
            return UNKNOWN
        return None

    def _set(self, value: ir.Value, allocation: Allocation | None, whole: bool = False) -> None:
        if allocation is not None:
            self._roots[value] = allocation
            if whole:
                self._whole.add(value)

    def _accesses(self, op: ir.Operation) -> list[Event]:
        """The op's SMEM accesses; also records what its results view."""
        operands = list(op.operands)
        kind = _ACCESS_KINDS.get(op.name)
        events = kind(self, op, operands) if kind is not None else None
        return events if events is not None else self._unknown_op(op, operands)

    # Each kind of op, by ``_ACCESS_KINDS``: its accesses, or None where the op is not in
    # the form the kind knows (too few operands, no offset), so that it is analysed as an
    # unknown op.

    def _slice(self, op: ir.Operation, operands: list[ir.Value]) -> list[Event] | None:
        allocation = _slice_allocation(op)
        self.allocations.setdefault(allocation, []).append(op)
        self._set(op.results[0], allocation, whole=True)
        return []

    def _view(self, op: ir.Operation, operands: list[ir.Value]) -> list[Event] | None:
        if not operands:
            return None
        root = self.root(operands[0])
        whole = op.name in _WHOLE_VIEWS and operands[0] in self._whole
        for result in op.results:
            self._set(result, root, whole)
        return []

    def _synchronous_read(self, op: ir.Operation, operands: list[ir.Value]) -> list[Event] | None:
        position = _READS[op.name]
        if len(operands) <= position:
            return None
        root = self.root(operands[position])
        return [] if root is None else [Event(Access.READ, root)]

    def _synchronous_write(self, op: ir.Operation, operands: list[ir.Value]) -> list[Event] | None:
        position = _WRITES[op.name]
        if len(operands) <= position:
            return None
        ref = operands[position]
        root = self.root(ref)
        if root is None:
            return []
        # (Only a vector_store is known to write every byte of the ref it is given.)
        kill = op.name == "mosaic_gpu.vector_store" and ref in self._whole
        return [Event(Access.KILL if kill else Access.WRITE, root)]

    def _tma_store(self, op: ir.Operation, operands: list[ir.Value]) -> list[Event] | None:
        if not operands:
            return None
        root = self.root(operands[0])
        # (An uncommitted copy joins a group some later op commits: its wait is not known.)
        committed = "commit_group" not in op.attributes or bool(
            ir.BoolAttr(op.attributes["commit_group"]).value
        )
        events = [] if root is None else [Event(Access.BULK if committed else Access.TRACKED, root)]
        return events + self._others(op, operands[1:])

    def _reduction_scratch(self, op: ir.Operation, operands: list[ir.Value]) -> list[Event] | None:
        if "offset" not in op.attributes:
            return None
        offset = int(ir.IntegerAttr(op.attributes["offset"]).value)
        size = (
            int(ir.IntegerAttr(op.attributes["scratch_size"]).value)
            if "scratch_size" in op.attributes
            else _EVERYWHERE_END - offset
        )
        scratch = Allocation(Interval(offset, offset + size), "reduction scratch", None)
        return [Event(Access.TRACKED, scratch)]

    def _tma_load(self, op: ir.Operation, operands: list[ir.Value]) -> list[Event] | None:
        if len(operands) <= 1:
            return None
        root = self.root(operands[1])
        whole = operands[1] in self._whole
        events = (
            []
            if root is None
            else [Event(Access.TRACKED_KILL if whole else Access.TRACKED_WRITE, root)]
        )
        return events + self._others(op, [operands[0], *operands[2:]])

    def _mma_operands(self, op: ir.Operation, operands: list[ir.Value]) -> list[Event] | None:
        events = []
        for operand in operands:
            root = self.root(operand)
            if root is not None:
                # (The barrier an MMA arrives on is no operand it reads.)
                barrier = "barrier" in str(operand.type)
                events.append(Event(Access.TRACKED if barrier else Access.TRACKED_READ, root))
        return events

    def _dynamic_block(self, op: ir.Operation, operands: list[ir.Value]) -> list[Event] | None:
        return [Event(Access.TRACKED, UNKNOWN)]

    def _warp_map(self, op: ir.Operation, operands: list[ir.Value]) -> list[Event] | None:
        return []  # (its operands become its region's arguments: _bind_region_arguments)

    def _unknown_op(self, op: ir.Operation, operands: list[ir.Value]) -> list[Event]:
        events = self._others(op, operands)
        if len(op.regions) and op.name not in ("scf.for", "scf.while", *_BRANCHES):
            events += self._opaque_body(op)
        return events

    def _others(self, op: ir.Operation, operands: list[ir.Value]) -> list[Event]:
        """An op analysed no further: every SMEM it is given is touched, its completion
        unknown; what it makes of them views all of them."""
        roots = [r for r in (self.root(v) for v in operands) if r is not None]
        if op.name in ("scf.for", "scf.while", *_BRANCHES):
            return []  # (carries and yields: _bind_region_arguments, _carry)
        hull = _hull(roots)
        for result in op.results:
            if hull is not None or _is_smem(result.type):
                self._set(result, hull if hull is not None else UNKNOWN)
        return [Event(Access.TRACKED, r) for r in roots]

    def _opaque_body(self, op: ir.Operation) -> list[Event]:
        """An op whose regions the analysis does not enter: SMEM it reaches by itself
        (the dynamic block) means any byte."""
        for inner in _walk(op):
            if inner.name == "gpu.dynamic_shared_memory":
                return [Event(Access.TRACKED, UNKNOWN)]
        return []

    def _bind_region_arguments(self, op: ir.Operation) -> None:
        """What the block arguments of a region op view: ``warp_map``'s are its operands;
        ``scf.for``'s carries are their initial values (``_carry`` checks the yields)."""
        if op.name == "mosaic_gpu.warp_map":
            (region,) = op.regions
            arguments = list(region.blocks[0].arguments)
            for argument, operand in zip(arguments, op.operands, strict=False):
                self._set(argument, self.root(operand), operand in self._whole)
            return
        if op.name == "scf.for":
            body = op.regions[0].blocks[0]
            carried = list(body.arguments)[1:]
            for argument, initial, result in zip(
                carried, list(op.operands)[3:], op.results, strict=False
            ):
                root = self.root(initial)
                self._set(argument, root)
                self._set(result, root)
            return
        for region in op.regions:
            for block in region.blocks:
                for argument in block.arguments:
                    if _is_smem(argument.type):
                        self._set(argument, UNKNOWN)
        for result in op.results:
            if _is_smem(result.type):
                self._set(result, UNKNOWN)

    def _carry(self, terminator: ir.Operation) -> None:
        """A yield that carries another buffer than the loop started with (the carry was
        taken to view the first: ``unsound_carry`` says the analysis proves nothing)."""
        parent = terminator.parent
        if parent is None or parent.name != "scf.for" or terminator.name != "scf.yield":
            return
        body = parent.regions[0].blocks[0]
        for argument, yielded in zip(list(body.arguments)[1:], terminator.operands, strict=False):
            if self.root(argument) != self.root(yielded):
                self.unsound_carry = True

    # --- queries ---------------------------------------------------------------------------

    def touches(self, node: int, interval: Interval) -> Iterator[Event]:
        for event in self.events[node]:
            if event.interval.overlaps(interval):
                yield event

    def read_before_kill(self, start_nodes: Iterable[int], interval: Interval) -> bool:
        """Whether some path from any of ``start_nodes`` (each included) reads a byte of
        ``interval`` (or touches it otherwise than by a plain write) before a write that
        covers all of it."""
        seen: set[int] = set()
        stack = list(start_nodes)
        while stack:
            node = stack.pop()
            if node in seen:
                continue
            seen.add(node)
            killed = False
            for event in self.touches(node, interval):
                if event.access in (Access.READ, Access.BULK) or event.access in UNENDED:
                    return True
                if event.access == Access.KILL and event.interval.covers(interval):
                    killed = True
            if not killed:
                stack.extend(self.successors[node])
        return False

    def bulk_in_flight(self, node: int, interval: Interval) -> bool:
        """Whether a TMA copy out of a byte of ``interval`` may still be reading it when
        ``node`` runs: a path from such a copy to ``node`` with no wait for every group."""
        return self._reached_from(
            node,
            lambda current: any(e.access == Access.BULK for e in self.touches(current, interval)),
            through=lambda current: not self.waits[current],
        )

    def tracked(self, interval: Interval) -> bool:
        """Whether an access whose end is unknown (``TRACKED``) touches ``interval``."""
        return any(
            e.access in UNENDED and e.interval.overlaps(interval)
            for events in self.events
            for e in events
        )

    def guarded_to(self, interval: Interval, warpgroup: int) -> bool:
        """Whether every access to a byte of ``interval`` runs under ``warpgroup == c``."""
        return all(
            warpgroup in self.guards[node]
            for node, events in enumerate(self.events)
            if any(e.interval.overlaps(interval) for e in events)
        )

    def written_before(self, node: int, allocation: Allocation) -> bool:
        """Whether some path reaches ``node`` from a write of ``allocation`` (a value of it
        may be held there)."""
        return self._reached_from(
            node,
            lambda current: any(
                e.allocation == allocation and e.access in _WRITING for e in self.events[current]
            ),
            through=lambda current: True,
        )

    def _reached_from(
        self, node: int, found: Callable[[int], bool], *, through: Callable[[int], bool]
    ) -> bool:
        """Whether a path of ops leads to ``node`` from an op that is ``found``, passing
        only ops it may go ``through`` (searched backwards from ``node``)."""
        predecessors = self._predecessors()
        seen: set[int] = set()
        stack = list(predecessors[node])
        while stack:
            current = stack.pop()
            if current in seen:
                continue
            seen.add(current)
            if found(current):
                return True
            if through(current):
                stack.extend(predecessors[current])
        return False

    def _predecessors(self) -> list[list[int]]:
        if self._predecessor_lists is None:
            lists: list[list[int]] = [[] for _ in self.ops]
            for node, successors in enumerate(self.successors):
                for successor in successors:
                    lists[successor].append(node)
            self._predecessor_lists = lists
        return self._predecessor_lists

    # --- the checker's question ------------------------------------------------------------

    def clobbers(self) -> list[Clobber]:
        """Every op that writes bytes of one buffer while another buffer over those bytes
        still holds data (written before, read after with no write of it between), or
        while a TMA copy out of the other, or an MMA reading it (before the wait proven
        to end it, or with no wait of any kind between), may still be reading them; and
        every TMA load that may land over another buffer's data before it is read (up
        to the load's proven wait). Other accesses whose end is unknown count where they
        are made (a report is a certain overlap)."""
        if self.unsound_carry:
            return []
        accesses: dict[Allocation, list[tuple[int, Access]]] = {}
        for node, events in enumerate(self.events):
            for event in events:
                accesses.setdefault(event.allocation, []).append((node, event.access))
        known = [a for a in self.allocations if not a.unknown]
        waits = frozenset(n for n, wait in enumerate(self.waits) if wait)
        any_waits = frozenset(n for n, op in enumerate(self.ops) if _is_any_wait(op))
        found: list[Clobber] = []
        for held in known:
            others = [a for a in known if a != held and a.interval.overlaps(held.interval)]
            writing, landing = self._writes_over(others, accesses)
            if writing:
                held_accesses = accesses.get(held, [])
                found += self._clobbers_of(held, held_accesses, writing, landing, waits, any_waits)
        return sorted(found, key=lambda clobber: clobber.node)

    def _writes_over(
        self, others: list[Allocation], accesses: dict[Allocation, list[tuple[int, Access]]]
    ) -> tuple[list[tuple[int, Allocation]], dict[tuple[int, Allocation], int]]:
        """The writes of ``others`` (the buffers over a held one's bytes), as (node, buffer):
        their writes and accesses of unknown end where made, then each node a TMA load into
        one may land at (``landing``: the node to the load that lands there)."""
        writing = [
            (node, other)
            for other in others
            for node, access in accesses.get(other, [])
            if access in _WRITING or access == Access.TRACKED
        ]
        # A TMA load into another buffer writes until its wait (reported at the load).
        landing: dict[tuple[int, Allocation], int] = {}
        for span in self.spans:
            if not span.read and span.allocation in others:
                for node in self.in_flight(span):
                    landing.setdefault((node, span.allocation), span.issue)
        writing += list(landing)
        return writing, landing

    def _clobbers_of(
        self,
        held: Allocation,
        held_accesses: list[tuple[int, Access]],
        writing: list[tuple[int, Allocation]],
        landing: dict[tuple[int, Allocation], int],
        waits: frozenset[int],
        any_waits: frozenset[int],
    ) -> list[Clobber]:
        """The first write (in node order) of each other buffer that clobbers ``held``."""
        live, written, in_flight = self._holding(held_accesses, waits)
        reading = set().union(
            *(self.in_flight(s) for s in self.spans if s.read and s.allocation == held)
        )
        # An MMA reading the buffer with no wait for it proven: a write with no wait of
        # any kind on some path from the MMA to it is certainly made while it may read.
        unwaited = _reached(
            self.successors,
            {n for n, access in held_accesses if access == Access.TRACKED_READ},
            stop=any_waits,
        )
        found: list[Clobber] = []
        reported: set[Allocation] = set()
        for node, other in sorted(writing, key=lambda write: write[0]):
            if other in reported:
                continue
            if node in in_flight:
                why = "a TMA copy out of it may still be reading those bytes"
            elif node in reading:
                why = "an MMA may still be reading those bytes (before the wait for it)"
            elif node in unwaited and node not in any_waits:
                why = "an MMA may still be reading those bytes (no wait for it comes first)"
            elif node in written and any(s in live for s in self.successors[node]):
                why = "its data there is read later"
                if (node, other) in landing and not self._writes(node, other):
                    why = "a TMA load into it may land there before its data is read"
                    node = landing[(node, other)]
            else:
                continue
            reported.add(other)
            found.append(Clobber(node, other, held, why))
        return found

    def _writes(self, node: int, allocation: Allocation) -> bool:
        return any(e.allocation == allocation and e.access in _WRITING for e in self.events[node])

    def _holding(
        self, accesses: list[tuple[int, Access]], waits: frozenset[int]
    ) -> tuple[set[int], set[int], set[int]]:
        """For one buffer (its accesses): the nodes from which a read of it comes before a
        write of it; the nodes a write of it reaches; the nodes a TMA copy out of it may
        be in flight at."""
        reads: set[int] = set()
        writes: set[int] = set()
        bulks: set[int] = set()
        for node, access in accesses:
            if access in (Access.READ, Access.BULK, Access.TRACKED_READ):
                reads.add(node)
            if access in _WRITING:
                # (Any write of the buffer counts as new data: a pipeline fills its stages
                # a part at a time, through views the analysis cannot tell apart, so that
                # what is reported is certain.)
                writes.add(node)
            if access == Access.BULK:
                bulks.add(node)
        predecessors = self._predecessors()
        live: set[int] = set()
        stack = list(reads)
        while stack:
            node = stack.pop()
            if node in live:
                continue
            live.add(node)
            stack.extend(p for p in predecessors[node] if p not in writes or p in reads)
        written = _reached(self.successors, writes, stop=frozenset())
        in_flight = _reached(self.successors, bulks, stop=waits)
        return live, written, in_flight

    # --- staging's question ---------------------------------------------------------------

    def dead_around(self, op: ir.Operation, interval: Interval, *, after: bool) -> bool:
        """Whether ``interval`` may hold a buffer used only just before ``op`` (``after``:
        just after it), by the warpgroup that runs it: nothing touches those bytes by an
        access whose end is unknown, no TMA copy out of them, no MMA reading them and no
        TMA load into them is in flight there, and no path from there reads them before
        writing all of them."""
        if self.unsound_carry or self.tracked(interval):
            return False
        node = self.node_of[op]
        starts = list(self.successors[node]) if after else [node]
        in_flight = any(
            self.bulk_in_flight(s, interval) or self.asynchronous_in_flight(s, interval)
            for s in starts
        )
        return not in_flight and not self.read_before_kill(starts, interval)

    def guard_of(self, op: ir.Operation) -> frozenset[int]:
        """The warpgroups ``op`` is guarded to (empty: any)."""
        return self.guards[self.node_of[op]]


# Each op name the analysis knows, to the method that reads its accesses. An op is of one
# kind only: a name given two kinds would have its accesses read by whichever came last,
# so ``_by_name`` refuses it (at import).
_AccessKind = Callable[[SmemLiveness, ir.Operation, list[ir.Value]], "list[Event] | None"]


def _by_name(*kinds: tuple[Iterable[str], _AccessKind]) -> dict[str, _AccessKind]:
    table: dict[str, _AccessKind] = {}
    for names, kind in kinds:
        for name in names:
            if name in table:
                raise ValueError(f"{name} is given two kinds of SMEM access")
            table[name] = kind
    return table


_ACCESS_KINDS = _by_name(
    (["mosaic_gpu.slice_smem"], SmemLiveness._slice),
    (_VIEWS, SmemLiveness._view),
    (_READS, SmemLiveness._synchronous_read),
    (_WRITES, SmemLiveness._synchronous_write),
    (["mosaic_gpu.async_store"], SmemLiveness._tma_store),
    (_REDUCTIONS, SmemLiveness._reduction_scratch),
    (["mosaic_gpu.async_load"], SmemLiveness._tma_load),
    (_MMA, SmemLiveness._mma_operands),
    (["gpu.dynamic_shared_memory"], SmemLiveness._dynamic_block),
    (["mosaic_gpu.warp_map"], SmemLiveness._warp_map),
)


@value_class(frozen=True)
class Clobber:
    """An op (``node``) that writes bytes of ``writer`` that ``holder`` still needs."""

    node: int
    writer: Allocation
    holder: Allocation
    why: str


def _reached(successors: list[list[int]], sources: set[int], stop: frozenset[int]) -> set[int]:
    """The nodes some path reaches from a node of ``sources`` (after it), through no node
    of ``stop`` (a stop node is reached, not passed)."""
    reached: set[int] = set()
    stack = [s for source in sources for s in successors[source]]
    while stack:
        node = stack.pop()
        if node in reached:
            continue
        reached.add(node)
        if node not in stop:
            stack.extend(successors[node])
    return reached


# --- facts of ops ---------------------------------------------------------------------------


def _is_smem(ty: ir.Type) -> bool:
    if isinstance(ty, ir.MemRefType):
        space = ir.MemRefType(ty).memory_space
        return space is not None and "workgroup" in str(space)
    return str(ty) == "!llvm.ptr<3>"


def _wgmma_commit(op: ir.Operation) -> bool:
    """``wgmma.commit_group`` (the NVVM op, or Pallas' inline assembly of it)."""
    return op.name in _WGMMA_COMMITS or _asm(op) == "wgmma.commit_group.sync.aligned;"


def _wgmma_wait(op: ir.Operation) -> int | None:
    """The groups a ``wgmma.wait_group N`` leaves in flight (N); None: no such wait."""
    if op.name in _WGMMA_WAITS and "group" in op.attributes:
        return int(ir.IntegerAttr(op.attributes["group"]).value)
    text = _asm(op)
    prefix = "wgmma.wait_group.sync.aligned "
    if text is not None and text.startswith(prefix) and text.endswith(";"):
        number = text[len(prefix) : -1].strip()
        return int(number) if number.isdigit() else None
    return None


# Ops that compute an address from a ref or pointer, touching no memory.
_ADDRESSING = frozenset(
    {
        "builtin.unrealized_conversion_cast",
        "llvm.extractvalue",
        "llvm.insertvalue",
        "llvm.ptrtoint",
        "llvm.inttoptr",
        "llvm.getelementptr",
        "llvm.add",
        "llvm.mul",
        "memref.extract_aligned_pointer_as_index",
        "memref.extract_strided_metadata",
    }
)


def _addressing(op: ir.Operation) -> bool:
    return op.name in _ADDRESSING or op.name in _VIEWS or op.name.startswith("arith.")


def _collective(op: ir.Operation) -> bool:
    """A copy or MMA shared with the cluster's other blocks (``collective`` set)."""
    if "collective" not in op.attributes:
        return False
    attribute = op.attributes["collective"]
    if isinstance(attribute, ir.BoolAttr):
        return bool(ir.BoolAttr(attribute).value)
    if isinstance(attribute, ir.ArrayAttr):
        return len(ir.ArrayAttr(attribute)) > 0
    return True


def _is_any_wait(op: ir.Operation | None) -> bool:
    return op is not None and (op.name in _ANY_WAITS or _wgmma_wait(op) is not None)


def _asm(op: ir.Operation) -> str | None:
    if op.name != "llvm.inline_asm" or "asm_string" not in op.attributes:
        return None
    return ir.StringAttr(op.attributes["asm_string"]).value.strip()


def _barrier_key(value: ir.Value) -> ir.Value:
    """A barrier's value through the casts between its pointer and its memref."""
    return _through(value, ("builtin.unrealized_conversion_cast",))


def _same_barrier(
    liveness: SmemLiveness, value: ir.Value, key: ir.Value, allocation: Allocation
) -> bool:
    """Whether ``value`` is the barrier ``key`` (of ``allocation``): the same value through
    casts, or the same allocation where it holds one barrier only."""
    if _barrier_key(value) == key:
        return True
    return liveness.root(value) == allocation and allocation.interval.size == _BARRIER_BYTES


def _is_bulk_wait(op: ir.Operation) -> bool:
    if op.name != _BULK_WAIT or "group" not in op.attributes:
        return False
    return int(ir.IntegerAttr(op.attributes["group"]).value) == 0


def slice_bytes(ref: ir.MemRefType) -> int:
    """The bytes a slice of this type spans (a barrier is 8)."""
    element = ref.element_type
    count = 1
    for dim in ref.shape:
        count *= dim
    if isinstance(element, ir.IntegerType):
        bits = ir.IntegerType(element).width
    elif isinstance(element, ir.FloatType):
        bits = ir.FloatType(element).width
    else:
        bits = _BARRIER_BYTES * 8  # barriers (and anything else: counted as 8 bytes)
    return -(-count * bits // 8)


def _slice_allocation(op: ir.Operation) -> Allocation:
    ref = ir.MemRefType(op.results[0].type)
    if "offset" not in op.attributes or any(d < 0 for d in ref.shape):
        return UNKNOWN
    offset = int(ir.IntegerAttr(op.attributes["offset"]).value)
    alias = (
        int(ir.IntegerAttr(op.attributes["alias_id"]).value)
        if "alias_id" in op.attributes
        else None
    )
    return Allocation(Interval(offset, offset + slice_bytes(ref)), str(ref), alias)


def _hull(roots: list[Allocation]) -> Allocation | None:
    if not roots:
        return None
    if len(set(roots)) == 1:
        return roots[0]
    if any(r.unknown for r in roots):
        return UNKNOWN
    start = min(r.interval.start for r in roots)
    end = max(r.interval.end for r in roots)
    return Allocation(Interval(start, end), "pointer arithmetic", None)


def _walk(op: ir.Operation) -> Iterator[ir.Operation]:
    for region in op.regions:
        for block in region.blocks:
            for inner in block.operations:
                yield inner.operation
                yield from _walk(inner.operation)


# --- warpgroup conditions ----------------------------------------------------------------------


def _branch_guard(op: ir.Operation, region: int) -> frozenset[int]:
    """The warpgroup the region of a branch runs for, where its condition is
    ``warpgroup == c`` (an ``scf.if``'s then region; an ``scf.index_switch`` on the
    condition as an index, whose default region is the true case)."""
    condition = op.operands[0]
    if op.name == "scf.index_switch":
        cases = [int(c) for c in ir.DenseI64ArrayAttr(op.attributes["cases"])]
        if cases != [0] or region != 0:
            return frozenset()
        condition = _through(condition, ("arith.index_cast", "arith.index_castui", "arith.extui"))
    elif region != 0:
        return frozenset()
    compared = _defining(condition)
    if compared is None or compared.name != "arith.cmpi":
        return frozenset()
    if int(ir.IntegerAttr(compared.attributes["predicate"]).value) != 0:  # eq
        return frozenset()
    left, right = compared.operands
    for index, constant in ((left, right), (right, left)):
        value = _constant(constant)
        if value is not None and _is_warpgroup_index(index):
            return frozenset({value})
    return frozenset()


def _defining(value: ir.Value) -> ir.Operation | None:
    owner = value.owner
    if isinstance(owner, ir.Block):
        return None
    return owner.operation


def _through(value: ir.Value, names: tuple[str, ...]) -> ir.Value:
    op = _defining(value)
    while op is not None and op.name in names:
        value = op.operands[0]
        op = _defining(value)
    return value


def _constant(value: ir.Value) -> int | None:
    op = _defining(value)
    if op is None or op.name != "arith.constant":
        return None
    attribute = op.attributes["value"]
    return int(ir.IntegerAttr(attribute).value) if isinstance(attribute, ir.IntegerAttr) else None


def _is_warpgroup_index(value: ir.Value) -> bool:
    """``linear thread index >> 7`` (as Pallas computes ``warpgroup_idx``), possibly
    broadcast from lane 0 of the warp (``nvvm.shfl.sync idx`` of it, lane 0)."""
    op = _defining(value)
    if op is not None and op.name == "nvvm.shfl.sync":
        kind = str(op.attributes["kind"]) if "kind" in op.attributes else ""
        if "idx" not in kind or _constant(op.operands[2]) != 0:
            return False
        value = op.operands[1]
        op = _defining(value)
    if op is None or op.name != "arith.shrui":
        return False
    if _constant(op.operands[1]) != _WARPGROUP_SHIFT:
        return False
    return _is_linear_thread_index(op.operands[0])


def _is_linear_thread_index(value: ir.Value) -> bool:
    """``thread_id.x`` (as i32), or ``x + y * dx + z * dx * dy`` where the block's y and z
    are 1 (staging checks the block is a row of warpgroups): x then."""
    value = _through(value, ("arith.index_cast", "arith.index_castui"))
    op = _defining(value)
    if op is None:
        return False
    if op.name == "gpu.thread_id":
        return "x" in str(op.attributes["dimension"])
    if op.name == "arith.addi":
        left, right = op.operands
        return (_is_linear_thread_index(left) and _is_y_or_z_term(right)) or (
            _is_linear_thread_index(right) and _is_y_or_z_term(left)
        )
    return False


def _is_y_or_z_term(value: ir.Value) -> bool:
    """``thread_id.y`` or ``.z`` times anything: 0 in a block whose y and z are 1."""
    op = _defining(value)
    if op is None or op.name != "arith.muli":
        return False
    for factor in op.operands:
        inner = _defining(_through(factor, ("arith.index_cast", "arith.index_castui")))
        if inner is not None and inner.name == "gpu.thread_id":
            dimension = str(inner.attributes["dimension"])
            if "y" in dimension or "z" in dimension:
                return True
    return False
