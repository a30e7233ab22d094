"""Unoptimized transfers, on request: the fewest ``optimized = false`` that let a kernel infer.

Pallas emits ``optimized = true`` on every ``o_ref[...] = x`` and ``x_ref[...]``
(``vector_load``/``vector_store``, and ``async_store_smem``): the lowering must
then find a coalesced GMEM plan or a bank-conflict-free SMEM schedule, and
raises where there is none ("a compilation error will be raised if no
optimized implementation is available", ``plgpu.load``/``plgpu.store``). A
16-bit value in a TMEM-load or WGMMA layout stored straight to GMEM, or a
column of a table (``w_ref[:, j]``), has no such plan in any layout.

With ``allow_unoptimized``, and only where the module as written has no
layouts that lower, smalto looks for the fewest of those transfers which,
unoptimized, let the system be solved, and sets ``optimized = false`` on
them. The search runs on the derived system, not the module: a candidate set
relaxes the transfer requirements of its ops (``Transfer.UNOPTIMIZED``, what
the lowering then asks: any schedule) and asks the widened complete search
whether anything lowers. The module changes only once a set is found.

Fewest: no single transfer is tried before every smaller set has failed, up
to ``EXACT_SETS`` sets; past that, a set from which no transfer can be
dropped (each one stands in the way).
"""

from __future__ import annotations

import itertools
from collections.abc import Callable, Collection, Iterable, Sequence
from dataclasses import replace
from typing import TYPE_CHECKING

from jax._src.lib.mlir import ir

from smalto.basics.records import value_class
from smalto.constraints.language import Element, GmemTransfer, SmemTransfer, System
from smalto.hw.transfers import Transfer
from smalto.program.view import Program, ops_in_order
from smalto.solve.decision import Solved
from smalto.solve.options import SolveOptions
from smalto.solve.search import widest
from smalto.source.files import Sources
from smalto.source.locations import FilePosition, place

if TYPE_CHECKING:
    from smalto.source.pallas_edits import LineEdit

# The ops whose transfers Pallas asks to be optimized (they carry the flag).
TRANSFER_OPS = frozenset(
    {"mosaic_gpu.vector_load", "mosaic_gpu.vector_store", "mosaic_gpu.async_store_smem"}
)
# Candidate sets tried exhaustively by size before settling for an irreducible one.
EXACT_SETS = 64


@value_class(frozen=True)
class UnoptimizedOp:
    """One transfer smalto made unoptimized, for the user to see."""

    op: str  # e.g. "mosaic_gpu.vector_store"
    location: str  # the user's file:line:col, else what the location says
    primitive: str | None  # the name JAX's location gives it (e.g. "swap"), if any
    memory: str  # "GMEM" or "SMEM"
    position: FilePosition | None = None
    edit: LineEdit | None = None  # the user's line, made unoptimized in Pallas' words

    @property
    def store(self) -> bool:
        return self.op != "mosaic_gpu.vector_load"

    @property
    def cost(self) -> str:
        if self.memory == "GMEM":
            return "uncoalesced: each warp touches partial 32-byte sectors"
        return "may be bank-conflicted: no conflict-free SMEM schedule exists for it"

    @property
    def pallas_edit(self) -> str:
        """The change at the user's line that says the same: the line itself rewritten where
        its source was found, else the call's shape."""
        if self.edit is not None:
            return self.edit.after
        if self.store:
            return "plgpu.store(ref, value, optimized=False)"
        return "plgpu.load(ref, optimized=False)"

    @property
    def fast_alternative(self) -> str:
        """The fast way for this transfer: through SMEM with a TMA copy for a GMEM one;
        for an SMEM one (already the fast way to GMEM), transforms that fit its layout."""
        if self.memory == "SMEM":
            moved = "stored into" if self.store else "read from"
            return (
                f"give the SMEM ref transforms (`plgpu.TilingTransform`, "
                f"`plgpu.SwizzleTransform`) under which the value's layout has a "
                f"conflict-free schedule, or `plgpu.layout_cast` the value {moved} it to a "
                "layout that has one with the ref's transforms (smalto's error without "
                "allow_unoptimized lists those it verified)"
            )
        if self.store:
            return (
                "store the value into an SMEM scratch ref and copy it out with "
                "`plgpu.copy_smem_to_gmem` (a TMA copy)"
            )
        return (
            "copy the ref into SMEM with `plgpu.copy_gmem_to_smem` (a TMA copy) and load "
            "it from there"
        )

    def __str__(self) -> str:
        primitive = self.primitive
        named = f", `{primitive}`" if primitive and primitive not in self.op else ""
        kind = "store" if self.store else "load"
        return (
            f"{self.location}: this {self.memory} {kind} (`{self.op}`{named}) runs unoptimized: "
            f"{self.cost}. To say so in the kernel (and silence this): `{self.pallas_edit}`. "
            f"Faster: {self.fast_alternative}"
        )


def optimized_transfers(program: Program, elements: Iterable[Element]) -> list[int]:
    """The ops (ids, in program order) whose optimized transfer ``elements`` (a system's
    constraints, or a conflict's core) require, and which carry the flag."""
    ops = {
        e.origin
        for e in elements
        if isinstance(e, GmemTransfer | SmemTransfer) and e.mode is Transfer.OPTIMIZED
    }
    return sorted(op for op in ops if program.ops[op].name in TRANSFER_OPS)


def relax_transfers[E: Element](elements: Iterable[E], ops: Collection[int]) -> list[E]:
    """``elements`` with the transfers of ``ops`` unoptimized (the rest as they are)."""
    return [
        replace(e, mode=Transfer.UNOPTIMIZED)
        if isinstance(e, GmemTransfer | SmemTransfer) and e.origin in ops
        else e
        for e in elements
    ]


def relaxed(system: System, ops: Collection[int]) -> System:
    """``system`` with the transfers of ``ops`` unoptimized (the rest shared, not copied)."""
    constraints = relax_transfers(system.constraints, ops)
    return System(system.variables, constraints, system.fixed, system.var_of_site)


def fewest[T](
    items: Sequence[T], works: Callable[[frozenset[T]], bool], *, largest: int, limit: int
) -> list[T] | None:
    """The first subset of ``items`` of at most ``largest`` that ``works``, smallest first
    (in ``items``' order within a size); None when none of the first ``limit`` asked does."""
    asked = 0
    for size in range(1, largest + 1):
        for subset in itertools.combinations(items, size):
            if asked == limit:
                return None
            asked += 1
            if works(frozenset(subset)):
                return list(subset)
    return None


class Plan:
    """Asks, set by set, whether the system solves with those transfers unoptimized."""

    def __init__(self, program: Program, system: System, options: SolveOptions) -> None:
        self.program, self.system, self.options = program, system, options
        self.candidates = optimized_transfers(program, system.constraints)
        self.asked = 0

    def solves(self, ops: frozenset[int]) -> bool:
        self.asked += 1
        return isinstance(widest(relaxed(self.system, ops), self.program, self.options), Solved)

    def fewest(self) -> list[int] | None:
        """The fewest candidate ops to make unoptimized; None if not even all of them do."""
        everything = frozenset(self.candidates)
        if not everything or not self.solves(everything):
            return None
        smaller = len(self.candidates) - 1
        found = fewest(self.candidates, self.solves, largest=smaller, limit=EXACT_SETS)
        if found is not None:
            return found
        if 2 ** len(self.candidates) - 2 <= EXACT_SETS:
            return list(self.candidates)  # every smaller set was asked: none works
        return self._irreducible(everything)

    def _irreducible(self, found: frozenset[int]) -> list[int]:
        """A set from which no op can be dropped (tried from the last op in program order)."""
        kept = set(found)
        for op in sorted(found, reverse=True):
            if self.solves(frozenset(kept - {op})):
                kept.discard(op)
        return sorted(kept)


def unoptimize(
    module: ir.Module, op_ids: Sequence[int], sources: Sources | None = None
) -> list[UnoptimizedOp]:
    """Sets ``optimized = false`` on the ops of ``module`` at these pre-order positions (the
    ids ``read_program`` gives them); returns what it changed, in program order, each
    with the edit at the user's line (its source looked up in ``sources``)."""
    ops = ops_in_order(module.operation)
    sources = sources or Sources()
    changed = []
    for op_id in sorted(op_ids):
        operation = ops[op_id]
        assert operation.name in TRANSFER_OPS, operation.name
        operation.attributes["optimized"] = ir.BoolAttr.get(False)
        changed.append(_describe(operation, sources))
    return changed


def describe_ops(
    program: Program, op_ids: Sequence[int], sources: Sources | None = None
) -> list[UnoptimizedOp]:
    """What making these ops unoptimized would change, without changing them."""
    sources = sources or Sources()
    return [_describe(program.ops[i].operation, sources) for i in sorted(op_ids)]


def _describe(operation: ir.Operation, sources: Sources) -> UnoptimizedOp:
    """What the user is told about one transfer made unoptimized."""
    where = place(operation.location)
    position = where.position
    load = operation.name == "mosaic_gpu.vector_load"
    ref = operation.operands[0 if load else 1]
    memory = "SMEM" if ir.MemRefType(ref.type).memory_space is not None else "GMEM"
    edit = None
    if position is not None:
        line = sources.line(position.file, position.line)
        if line is not None:
            # (The Pallas source edits are loaded only where a user's line was read.)
            from smalto.source.pallas_edits import unoptimized_transfer

            edit = unoptimized_transfer(line, position.column, store=not load)
    return UnoptimizedOp(operation.name, where.text, where.name, memory, position, edit)
