"""Two SMEM buffers over the same bytes, one overwriting what the other still holds: an
error of the module, whoever reused the bytes (a pass, Pallas, a hand edit).

Staging through SMEM reuses bytes it proves dead (``smalto.rewrite.staging``); this
check does not trust that proof. It reads the module's SMEM accesses again with the
liveness analysis of the program layer (``smalto.program.smem_liveness``) and reports
every op that writes bytes of one buffer while another buffer over them still holds
data read later (before a write of all of it), or while a TMA copy out of the other
may still be reading them (before ``wait_smem_to_gmem(0)``), or an MMA reading the other
(before the wait the analysis proves ends it, or with no wait of any kind between),
and every TMA load that may land over another buffer's data before its wait. Other
accesses ordered by an mbarrier count where they are made, so that what is reported
is a certain overlap in the thread's program order.
"""

from __future__ import annotations

from smalto.check.core import Checker
from smalto.program.smem_liveness import Allocation, SmemLiveness
from smalto.program.view import Op

_LAUNCH = "gpu.launch"


def check_smem_overlaps(c: Checker) -> None:
    ops = {hash(o.operation): o for o in c.annotated}
    for op in c.annotated:
        if op.name != _LAUNCH:
            continue
        liveness = SmemLiveness(op.operation)
        for clobber in liveness.clobbers():
            writer_op = liveness.ops[clobber.node]
            where = ops.get(hash(writer_op)) if writer_op is not None else None
            writer = _name(c, liveness, ops, clobber.writer)
            holder = _name(c, liveness, ops, clobber.holder)
            c.report(
                where if where is not None else op,
                f"writes SMEM of {writer} while {holder} over the same bytes still holds "
                f"data there: {clobber.why} (two buffers overlap while both are live)",
            )


def _name(c: Checker, liveness: SmemLiveness, ops: dict[int, Op], allocation: Allocation) -> str:
    """The buffer by its type, where it is first sliced, and its bytes."""
    slices = liveness.allocations.get(allocation, [])
    where = ops.get(hash(slices[0])) if slices else None
    sliced = f" sliced at {c.location(where)}" if where is not None else ""
    kind = allocation.type.replace(", #gpu.address_space<workgroup>", "")
    start, end = allocation.interval.start, allocation.interval.end
    return f"the buffer `{kind}`{sliced} (bytes {start}-{end})"
