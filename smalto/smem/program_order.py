"""A kernel's ops in program order, for the SMEM map: every op's index, where its subtree
ends, its parent, its source line; and the ops that use a slice of SMEM (through views,
into regions), first and last."""

from __future__ import annotations

from jax._src.lib.mlir import ir

from smalto.basics.launch import LAUNCH
from smalto.program.smem_liveness import SmemLiveness
from smalto.source.locations import file_position

# Ops that carry a ref on in another type (a barrier array as LLVM's memref struct, its
# pointer): their results are the ref still.
_CARRIERS = frozenset(
    {"builtin.unrealized_conversion_cast", "llvm.extractvalue", "llvm.getelementptr"}
)
# Ops that read SMEM after they return (a TMA store to GMEM), and the waits that end it.
_ASYNC_READS = frozenset({"mosaic_gpu.async_store"})
# MMAs reading their SMEM operands after they return, until a wait the liveness analysis
# proves (``smalto.program.smem_liveness``; none proven: until the MMA only).
_MMAS = frozenset({"mosaic_gpu.wgmma", "mosaic_gpu.tcgen05_mma"})
_WAITS = frozenset({"nvvm.cp.async.bulk.wait_group"})


def operations_in_order(module: ir.Module) -> list[ir.Operation]:
    """The ops a map of ``module`` numbers, in its program order (by a map's op indices)."""
    return walked(module, first_launch(module)).operations


def walked(module: ir.Module, launch: ir.Operation | None) -> ProgramOrder:
    """The ops of ``launch``'s body (the module's, without one), in program order."""
    walk = ProgramOrder(launch)
    root = launch if launch is not None else module.operation
    for region in root.regions:
        for block in region.blocks:
            for op in block.operations:
                walk.visit(op.operation, -1)
    return walk


class ProgramOrder:
    """Program order: every op's index, the index its subtree ends at, its parent's index, its
    source line."""

    def __init__(self, launch: ir.Operation | None = None) -> None:
        self.launch = launch
        self._mma_waits: dict[ir.Operation, ir.Operation] | None = None
        self.index: dict[ir.Operation, int] = {}
        self.operations: list[ir.Operation] = []
        self.names: list[str] = []
        self.lines: list[str | None] = []
        self.parents: list[int] = []
        self.ends: list[int] = []
        self.allocating: list[tuple[ir.Operation, int]] = []

    def visit(self, op: ir.Operation, parent: int) -> None:
        """Numbers ``op`` and the ops nested in it, in program order (pre-order), under
        ``parent``. Walks with a stack of its own, not by recursion: a module nests as deep
        as ``smalto.basics.nesting`` lets it, deeper than Python's recursion limit."""
        # Entries: an op to number, under its parent; or, after its subtree, the index
        # whose end to close.
        pending: list[tuple[ir.Operation, int] | int] = [(op, parent)]
        while pending:
            entry = pending.pop()
            if isinstance(entry, int):
                self.ends[entry] = len(self.names) - 1
                continue
            current, above = entry
            i = self._number(current, above)
            pending.append(i)
            inner = [
                nested.operation
                for region in current.regions
                for block in region.blocks
                for nested in block.operations
            ]
            pending.extend((nested, i) for nested in reversed(inner))

    def _number(self, op: ir.Operation, parent: int) -> int:
        i = len(self.names)
        self.index[op] = i
        self.operations.append(op)
        self.names.append(op.name)
        position = file_position(op.location)
        self.lines.append(str(position) if position is not None else None)
        self.parents.append(parent)
        self.ends.append(i)
        if op.name == "mosaic_gpu.slice_smem" or (
            op.name in ("vector.multi_reduction", "vector.reduction") and "offset" in op.attributes
        ):
            self.allocating.append((op, i))
        return i

    def uses(self, op: ir.Operation, i: int) -> tuple[int, int]:
        """The first and the last op, in program order, that use the slice ``op`` or a view
        of it, each widened to the op of the slice's own block that holds it (its start, its
        end); an asynchronous store from it (a TMA) holds it until the wait that follows.
        ``(i, i)`` where nothing uses it."""
        first, last = None, i
        seen: set[ir.Operation] = set()
        pending: list[ir.Value] = list(op.results)
        while pending:
            value = pending.pop()
            for use in value.uses:
                user = use.owner.operation
                if user in seen:
                    continue
                seen.add(user)
                j = self.index.get(user)
                if j is None:
                    continue
                holder = self._holder(j, self.parents[i])
                first = holder if first is None else min(first, holder)
                end = self.ends[holder]
                if user.name in _ASYNC_READS:
                    end = max(end, self._wait_after(j))
                elif user.name in _MMAS:
                    wait = self.mma_waits().get(user)
                    if wait is not None and wait in self.index:
                        end = max(end, self.ends[self._holder(self.index[wait], self.parents[i])])
                last = max(last, end)
                if user.name in _CARRIERS:
                    pending.extend(user.results)
                else:
                    pending.extend(r for r in user.results if isinstance(r.type, ir.MemRefType))
        return (i if first is None else first), last

    def mma_waits(self) -> dict[ir.Operation, ir.Operation]:
        """Each MMA of the launch whose SMEM reads a later wait is proven to end, and that
        wait (the analysis made once, where a map asks)."""
        if self._mma_waits is None:
            self._mma_waits = {}
            if self.launch is not None and self.launch.name == LAUNCH:
                liveness = SmemLiveness(self.launch)
                for span in liveness.spans:
                    issue, end = liveness.ops[span.issue], liveness.ops[span.end]
                    if span.read and issue is not None and end is not None:
                        self._mma_waits[issue] = end
        return self._mma_waits

    def _holder(self, j: int, block_parent: int) -> int:
        """The op holding ``j`` among the children of ``block_parent``."""
        while self.parents[j] != block_parent and self.parents[j] != -1:
            j = self.parents[j]
        return j

    def _wait_after(self, j: int) -> int:
        """The first wait for asynchronous copies after op ``j`` in its block (the end of its
        region where none follows)."""
        parent = self.parents[j]
        stop = self.ends[parent] if parent != -1 else len(self.names) - 1
        k = self.ends[j] + 1
        while k <= stop:
            if self.names[k] in _WAITS:
                return k
            k = self.ends[k] + 1  # the next op of the block
        return stop

    def whole(self, i: int) -> tuple[int, int]:
        """The extent of the region ``i`` sits in (the whole kernel at the top)."""
        parent = self.parents[i]
        return (0, len(self.names) - 1) if parent == -1 else (parent, self.ends[parent])


def first_launch(module: ir.Module) -> ir.Operation | None:
    found: list[ir.Operation] = []

    def visit(op: ir.Operation) -> ir.WalkResult:
        if op.name == LAUNCH:
            found.append(op)
            return ir.WalkResult.INTERRUPT
        return ir.WalkResult.ADVANCE

    module.operation.walk(visit, ir.WalkOrder.PRE_ORDER)
    return found[0] if found else None


def kernel_name(launch: ir.Operation) -> str:
    parent = launch.parent
    while parent is not None and parent.name != "func.func":
        parent = parent.parent
    if parent is None or "sym_name" not in parent.attributes:
        return "kernel"
    return ir.StringAttr(parent.attributes["sym_name"]).value
