"""An answer's layouts: the register layout it gives each vector operand and result, and
the relayouts they ask of the lowering (each vector a producer lays out one way and a
consumer reads another).

Where smalto answers a kernel JAX's own pass finds no layouts for (its complete or
widened search did), the relayouts of its answer are what it added to make the kernel
compile: the route names them in its warning (``smalto.SmaltoOnlyWarning``), and
``pipeline.speed`` counts them among what the answer costs.

Two sources, one question (``AnswerLayouts``): ``SolvedLayouts``, the answer as the
solver holds it (the program view, the system's variable of each site, the solution),
which ``smalto.infer`` reads as it returns the answer, with no walk over the module
through the bindings (issue #52: the first call); and ``WrittenLayouts``, the
``in_layouts``/``out_layouts`` written on a module's ops, for a module annotated
already. Both are read over the program view's ops, so that they say the same of the
same layouts. (They live here rather than in modules of their own: the first kernel
whose answer is said pays for each module it loads.)
"""

from __future__ import annotations

from typing import cast

from jax._src.lib.mlir import ir

from smalto.basics.records import record
from smalto.constraints.language import Role, System
from smalto.hw.encode import AttributeCache, decode_layout
from smalto.hw.names import pallas_layout, register_layout_name
from smalto.hw.values import Const, Reg
from smalto.program.reader import read_program
from smalto.program.view import Kind, Program
from smalto.source.locations import FilePosition, file_position

# The role of a site: an operand, or a result (the system's sites' own roles).
OPERAND, RESULT = Role.OPERAND, Role.RESULT
_ATTRIBUTES = ("in_layouts", "out_layouts")


class AnswerLayouts:
    """The register layouts of an answer for ``program``'s ops."""

    __slots__ = ("program",)

    def __init__(self, program: Program) -> None:
        self.program = program

    def layout(self, op_id: int, role: int, index: int) -> Reg | None:
        """The register layout of op ``op_id``'s operand (``role`` ``OPERAND``) or result
        (``RESULT``) ``index``; None where the answer gives it none."""
        raise NotImplementedError

    def first_vector(self, op_id: int, role: int) -> tuple[int, Reg | None] | None:
        """The index of the op's first vector operand (or result) and its layout; None
        where it has none."""
        op = self.program.ops[op_id]
        values = self.program.values
        for index, vid in enumerate(op.operands if role == OPERAND else op.results):
            if values[vid].kind is Kind.VECTOR:
                return index, self.layout(op_id, role, index)
        return None

    def text(self, value: Reg) -> str:
        """A layout as its attribute says it (for one with no name)."""
        return str(AttributeCache(self.program.context).layout(value))


class SolvedLayouts(AnswerLayouts):
    """The layouts the solver chose: ``solution``'s value of each site's variable (what
    ``pipeline.annotate`` writes)."""

    __slots__ = ("_var_of_site", "_solution")

    def __init__(self, program: Program, system: System, solution: list[Const]) -> None:
        super().__init__(program)
        # Looked up by plain tuples, each equal to the site (a named tuple) it stands for,
        # as the writer (``pipeline.annotate``) looks them up.
        self._var_of_site = cast("dict[tuple[int, int, int, None], int]", system.var_of_site)
        self._solution = solution

    def layout(self, op_id: int, role: int, index: int) -> Reg | None:
        var = self._var_of_site.get((op_id, role, index, None))
        if var is None:
            return None
        value = self._solution[var]
        return value if isinstance(value, Reg) else None


class WrittenLayouts(AnswerLayouts):
    """The layouts written on the ops of the module ``program`` views: the ``k``-th
    vector operand's is the ``k``-th of ``in_layouts`` (results: ``out_layouts``). One
    JAX's decoder does not know is None."""

    __slots__ = ("_stated",)

    def __init__(self, program: Program) -> None:
        super().__init__(program)
        self._stated: dict[tuple[int, int], list[Reg | None]] = {}

    def layout(self, op_id: int, role: int, index: int) -> Reg | None:
        op = self.program.ops[op_id]
        values = self.program.values
        ids = op.operands if role == OPERAND else op.results
        if values[ids[index]].kind is not Kind.VECTOR:
            return None
        stated = self._stated.get((op_id, role))
        if stated is None:
            stated = self._stated[(op_id, role)] = _decoded(op.operation, _ATTRIBUTES[role])
        place = sum(1 for vid in ids[:index] if values[vid].kind is Kind.VECTOR)
        return stated[place] if place < len(stated) else None


def written_layouts(module: ir.Module) -> WrittenLayouts:
    """The layouts written on ``module``'s ops, read through a program view of it (for a
    module annotated already: ``smalto fix``'s, a report's). Must run, and be read,
    inside the module's context."""
    return WrittenLayouts(read_program(module))


def _decoded(operation: ir.Operation, name: str) -> list[Reg | None]:
    if name not in operation.attributes:
        return []
    found: list[Reg | None] = []
    for attr in ir.ArrayAttr(operation.attributes[name]):
        try:
            found.append(Reg(decode_layout(attr)))
        except NotImplementedError:
            found.append(None)
    return found


@record
class Relayout:
    """A vector converted between its producer and a consumer."""

    op: str  # the consumer
    position: FilePosition | None  # the consumer's line, where located
    source: str  # the producer's layout, by name (else as its attribute says it)
    target: str  # the consumer's
    pallas: str | None = None  # the consumer's, as Pallas writes it (``plgpu.Layout.X``)

    def __str__(self) -> str:
        where = f" at {self.position}" if self.position is not None else ""
        return f"`{self.op}`{where}: {self.source} -> {self.target}"


def relayouts(layouts: AnswerLayouts) -> list[Relayout]:
    """The relayouts of the answer ``layouts`` gives, in program order (a splat is
    converted where used, in JAX's answers too: none)."""
    program = layouts.program
    values, ops = program.values, program.ops
    found: list[Relayout] = []
    for op_id in program.layout_ops:
        op = ops[op_id]
        for index, vid in enumerate(op.operands):
            value = values[vid]
            if value.kind is not Kind.VECTOR:
                continue
            wanted = layouts.layout(op_id, OPERAND, index)
            producer = value.producer
            if wanted is None or producer is None or producer.is_argument:
                continue
            made = layouts.layout(producer.op, RESULT, producer.index)
            if made is None or made == wanted or made.is_splat:
                continue
            position = file_position(op.location)
            source, target = _named(made, layouts), _named(wanted, layouts)
            found.append(Relayout(op.name, position, source, target, _pallas(wanted)))
    return found


# The transfers between registers and memory, and the side their register value is on.
_TRANSFERS = {
    "vector.load": RESULT,
    "mosaic_gpu.vector_load": RESULT,
    "vector.store": OPERAND,
    "mosaic_gpu.vector_store": OPERAND,
}


def transfer_layouts(layouts: AnswerLayouts) -> list[Relayout]:
    """The layout of each register value the answer loads or stores, where Pallas names
    it (source and target alike: no relayout), in program order: what a cast at the
    value's line would state (``plgpu.layout_cast(x_ref[...], plgpu.Layout.WGMMA)``)."""
    program = layouts.program
    found: list[Relayout] = []
    for op_id in program.layout_ops:
        op = program.ops[op_id]
        side = _TRANSFERS.get(op.name)
        moved = None if side is None else layouts.first_vector(op_id, side)
        if moved is None or moved[1] is None or moved[1].is_splat:
            continue
        pallas = _pallas(moved[1])
        if pallas is not None:
            name = _named(moved[1], layouts)
            found.append(Relayout(op.name, file_position(op.location), name, name, pallas))
    return found


def _named(value: Reg, layouts: AnswerLayouts) -> str:
    """A register layout by its name (``WGMMA``), else as its attribute says it."""
    try:
        name = register_layout_name(value.layout)
    except Exception:  # noqa: BLE001 -- a layout no name is known for: its attribute
        name = None
    return name or layouts.text(value)


def _pallas(value: Reg) -> str | None:
    try:
        return pallas_layout(value)
    except Exception:  # noqa: BLE001 -- a layout Pallas has no name for
        return None


__all__ = [
    "OPERAND",
    "RESULT",
    "AnswerLayouts",
    "Relayout",
    "SolvedLayouts",
    "WrittenLayouts",
    "relayouts",
    "transfer_layouts",
    "written_layouts",
]
