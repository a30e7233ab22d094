"""A compact, binding-free view of a Mosaic GPU module.

One walk over the module gives every op, value and block argument a small
integer id and records what the rules and the solver need: memory kind, shape,
element bitwidth, strides, producer and uses. The MLIR bindings are slow to
call; after this walk the solver only touches these plain objects. Everything
is keyed by ids, never by ``ir.OpView``/``ir.Value`` objects, whose hashes are
not stable once attributes change.
"""

from __future__ import annotations

import enum
from dataclasses import dataclass, field

from jax._src.lib import mosaic_gpu_dialect as mgpu
from jax._src.lib.mlir import ir


class Kind(enum.IntEnum):
    """Where a value lives, as far as layout inference is concerned."""

    OTHER = 0  # scalars, GMEM refs, tokens, pointers: no layout
    VECTOR = 1  # registers: a register layout
    SMEM = 2  # shared memory (also cluster SMEM): a tiling and swizzle
    TMEM = 3  # tensor memory: a TMEM layout


@dataclass(slots=True)
class Producer:
    """Where a value comes from: an op result, or a block argument of an op's region."""

    op: int
    index: int  # result index, or argument index within the region's entry block
    region: int | None = None  # set for block arguments

    @property
    def is_argument(self) -> bool:
        return self.region is not None


@dataclass(slots=True)
class Value:
    id: int
    kind: Kind
    shape: tuple[int, ...]
    bitwidth: int | None  # element bitwidth; None where it is not a power of two
    strides: tuple[int, ...] | None  # memrefs only
    transformable: bool  # an SMEM ref that takes transforms (barriers do not)
    producer: Producer | None  # None: a value no op of the module defines (free)
    type: ir.Type
    # (op id, operand index) of each use, in the order the bindings list them.
    uses: list[tuple[int, int]] = field(default_factory=list)


@dataclass(slots=True)
class Op:
    id: int
    name: str
    operands: tuple[int, ...]
    results: tuple[int, ...]
    # regions[r] is the list of blocks; each block is (argument ids, op ids).
    regions: list[list[tuple[tuple[int, ...], list[int]]]]
    parent: int | None
    view: ir.OpView

    @property
    def location(self) -> ir.Location:
        # Read on demand: only error messages need it.
        return self.view.location

    def has_kind(self, kind: Kind, program: Program) -> bool:
        values = program.values
        return any(values[v].kind == kind for v in self.operands) or any(
            values[v].kind == kind for v in self.results
        )


@dataclass(slots=True)
class Program:
    """All ops (pre-order) and values of a module, by integer id."""

    ops: list[Op]
    values: list[Value]
    top_level: list[int]  # ids of the module body's ops

    def walk(self) -> list[Op]:
        """Ops in pre-order (the order ids were given in)."""
        return self.ops


_SMEM = None
_TMEM = None
_SMEM_CLUSTER = None


def _memory_spaces() -> tuple[ir.Attribute, ir.Attribute, ir.Attribute]:
    # Attributes belong to a context; parse them in the current one.
    return (
        ir.Attribute.parse("#gpu.address_space<workgroup>"),
        ir.Attribute.parse("#mosaic_gpu.tmem"),
        ir.Attribute.parse("#mosaic_gpu.smem_cluster"),
    )


def _element_bitwidth(element_type: ir.Type) -> int | None:
    if isinstance(element_type, ir.FloatTF32Type):
        return 32
    if isinstance(element_type, ir.IntegerType):
        width = ir.IntegerType(element_type).width
    elif isinstance(element_type, ir.FloatType):
        width = ir.FloatType(element_type).width
    else:
        return None
    return width if width > 0 and width.bit_count() == 1 else None


class _Reader:
    def __init__(self) -> None:
        self.ops: list[Op] = []
        self.values: list[Value] = []
        self.value_ids: dict[ir.Value, int] = {}
        self.op_ids: dict[ir.Operation, int] = {}
        self.smem, self.tmem, self.smem_cluster = _memory_spaces()
        self.type_cache: dict[ir.Type, tuple] = {}

    def classify(self, ty: ir.Type) -> tuple:
        cached = self.type_cache.get(ty)
        if cached is not None:
            return cached
        kind, shape, bitwidth, strides, transformable = Kind.OTHER, (), None, None, False
        if isinstance(ty, ir.VectorType):
            vty = ir.VectorType(ty)
            kind, shape = Kind.VECTOR, tuple(vty.shape)
            bitwidth = _element_bitwidth(vty.element_type)
        elif isinstance(ty, ir.MemRefType):
            mty = ir.MemRefType(ty)
            space = mty.memory_space
            if space is not None and (space == self.smem or space == self.smem_cluster):
                kind = Kind.SMEM
                transformable = not isinstance(mty.element_type, mgpu.BarrierType)
            elif space is not None and space == self.tmem:
                kind = Kind.TMEM
            shape = tuple(mty.shape)
            bitwidth = _element_bitwidth(mty.element_type)
            try:
                strides = tuple(mty.get_strides_and_offset()[0])
            except ValueError:
                strides = None
        result = (kind, shape, bitwidth, strides, transformable)
        self.type_cache[ty] = result
        return result

    def new_value(self, v: ir.Value, producer: Producer | None) -> int:
        ty = v.type
        kind, shape, bitwidth, strides, transformable = self.classify(ty)
        vid = len(self.values)
        self.values.append(Value(vid, kind, shape, bitwidth, strides, transformable, producer, ty))
        self.value_ids[v] = vid
        return vid

    def value_id(self, v: ir.Value) -> int:
        vid = self.value_ids.get(v)
        if vid is None:  # defined outside what we walk: a free value
            vid = self.new_value(v, None)
        return vid

    def read_op(self, view: ir.OpView, parent: int | None) -> int:
        operation = view.operation
        oid = len(self.ops)
        self.op_ids[operation] = oid
        operands = tuple(self.value_id(v) for v in operation.operands)
        results = tuple(
            self.new_value(r, Producer(oid, i)) for i, r in enumerate(operation.results)
        )
        op = Op(oid, operation.name, operands, results, [], parent, view)
        self.ops.append(op)
        for r_index, region in enumerate(operation.regions):
            blocks = []
            for block in region.blocks:
                args = tuple(
                    self.new_value(a, Producer(oid, i, r_index))
                    for i, a in enumerate(block.arguments)
                )
                body: list[int] = []
                blocks.append((args, body))
                for inner in block.operations:
                    body.append(self.read_op(inner, oid))
            op.regions.append(blocks)
        return oid

    def read_uses(self) -> None:
        # Only register values need their users: relayouts happen between a
        # producer's register value and each consumer operand.
        op_ids = self.op_ids
        value_ids = self.value_ids
        for v, vid in value_ids.items():
            info = self.values[vid]
            if info.kind != Kind.VECTOR:
                continue
            for use in v.uses:
                owner = use.owner
                oid = op_ids.get(owner.operation if hasattr(owner, "operation") else owner)
                if oid is not None:
                    info.uses.append((oid, use.operand_number))


def read_program(module: ir.Module) -> Program:
    """Reads ``module`` into a ``Program``; must run inside the module's context."""
    reader = _Reader()
    top = [reader.read_op(op, None) for op in module.body.operations]
    reader.read_uses()
    return Program(reader.ops, reader.values, top)
