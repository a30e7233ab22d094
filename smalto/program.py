"""A compact, binding-free view of a Mosaic GPU module.

One walk over the module gives every op, value and block argument a small
integer id and records what the rules and the solver need: memory kind, shape,
element bitwidth, strides, producer and uses. The MLIR bindings are slow to
call; after this walk the solver only touches these plain objects. Everything
is keyed by ids, never by ``ir.OpView``/``ir.Value`` objects, whose hashes are
not stable once attributes change.

The walk is the one part of inference whose cost grows with every op of the
kernel, most of which (index arithmetic, barriers, GMEM refs) carry no
layout; so it makes as few binding calls per op as it can: one ``.type`` per
result and block argument, one hash lookup per operand, and per distinct type
one classification.
"""

from __future__ import annotations

import enum
from collections.abc import Callable
from dataclasses import dataclass

from jax._src.lib import mosaic_gpu_dialect as mgpu
from jax._src.lib.mlir import ir

from smalto.locations import location_text


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


# What a value's type tells: (kind, shape, element bitwidth, strides, transformable).
TypeInfo = tuple[Kind, tuple[int, ...], "int | None", "tuple[int, ...] | None", bool]
_NO_LAYOUT: TypeInfo = (Kind.OTHER, (), None, None, False)
# Only these types can carry a layout; every other type is classified without a
# hash lookup (hashing an ir.Type is a binding call as dear as reading it).
_SHAPED = (ir.VectorType, ir.MemRefType)


class Value:
    """One SSA value: what its type says, where it comes from, and (registers) who uses it."""

    __slots__ = (
        "id",
        "kind",
        "shape",
        "bitwidth",
        "strides",
        "transformable",
        "producer",
        "type",
        "uses",
        "info",
    )

    def __init__(self, vid: int, info: TypeInfo, producer: Producer | None, ty: ir.Type) -> None:
        self.id = vid
        # The facts of its type: one tuple per distinct type text, shared by
        # all values of that type (so its identity stands for the type).
        self.info: TypeInfo | None = info
        self.kind: Kind = info[0]
        self.shape: tuple[int, ...] = info[1]
        self.bitwidth: int | None = info[2]  # element bitwidth; None where not a power of two
        self.strides: tuple[int, ...] | None = info[3]  # memrefs only
        self.transformable: bool = info[4]  # an SMEM ref that takes transforms (barriers do not)
        self.producer = producer  # None: a value no op of the module defines (free)
        self.type = ty
        # (op id, operand index) of each use, in the order the bindings list them;
        # recorded for register values only (relayouts happen between a
        # producer's register value and each consumer operand).
        self.uses: list[tuple[int, int]] = []

    def __repr__(self) -> str:
        return f"Value(id={self.id}, kind={self.kind.name}, shape={self.shape}, type={self.type})"


class _Unshaped(Value):
    """A value of a type that is neither a vector nor a memref (scalars, tokens, pointers).

    Most values of a kernel are such; their fields are the class's, so that
    making one sets three slots instead of nine.
    """

    __slots__ = ()
    kind = Kind.OTHER  # type: ignore[assignment]
    shape = ()  # type: ignore[assignment]
    bitwidth = None
    strides = None
    transformable = False  # type: ignore[assignment]
    uses = ()  # type: ignore[assignment]
    info = None

    def __init__(self, vid: int, producer: Producer | None, ty: ir.Type) -> None:
        self.id = vid
        self.producer = producer
        self.type = ty


class _UnshapedResult(_Unshaped):
    """An op result of such a type: its producer is made when asked for.

    Few are ever asked (the divisibility of slice offsets, messages), and
    most values of a kernel are such results.
    """

    __slots__ = ("_op", "_index")

    def __init__(self, vid: int, op: int, index: int, ty: ir.Type) -> None:
        self.id = vid
        self._op = op
        self._index = index
        self.type = ty

    @property  # type: ignore[override]
    def producer(self) -> Producer:
        return Producer(self._op, self._index)


class Op:
    """One operation: its name, operand/result value ids, regions and parent, by id."""

    __slots__ = ("id", "name", "operands", "results", "regions", "parent", "operation", "_view")

    def __init__(
        self,
        oid: int,
        name: str,
        operands: tuple[int, ...],
        results: tuple[int, ...],
        parent: int | None,
        operation: ir.Operation,
    ) -> None:
        self.id = oid
        self.name = name
        self.operands = operands
        self.results = results
        # regions[r] is the list of blocks; each block is (argument ids, op ids).
        self.regions: list[list[tuple[tuple[int, ...], list[int]]]] = []
        self.parent = parent
        self.operation = operation
        self._view: ir.OpView | None = None

    @property
    def view(self) -> ir.OpView:
        """The op's class view (named accessors); made on first use, as few ops need one."""
        if self._view is None:
            self._view = self.operation.opview
        return self._view

    @property
    def location(self) -> ir.Location:
        # Read on demand: only error messages need it.
        return self.operation.location

    @property
    def where(self) -> str:
        """The op's source position for messages, ``kernel.py:75:20`` (see ``locations``)."""
        return location_text(self.operation.location)

    def has_kind(self, kind: Kind, program: Program) -> bool:
        values = program.values
        return any(values[v].kind == kind for v in self.operands) or any(
            values[v].kind == kind for v in self.results
        )

    def __repr__(self) -> str:
        return f"Op(id={self.id}, name={self.name!r})"


class Program:
    """All ops (pre-order) and values of a module, by integer id."""

    __slots__ = ("ops", "values", "top_level", "layout_ops")

    def __init__(
        self, ops: list[Op], values: list[Value], top_level: list[int], layout_ops: list[int]
    ) -> None:
        self.ops = ops
        self.values = values
        self.top_level = top_level  # ids of the module body's ops
        # Ids (pre-order) of the ops with a vector, a TMEM ref or a
        # transformable SMEM ref among their operands or results: the only
        # ops inference gives attributes. Most ops of a kernel have none.
        self.layout_ops = layout_ops

    def walk(self) -> list[Op]:
        """Ops in pre-order (the order ids were given in)."""
        return self.ops


def within(program: Program, op: Op, names: frozenset[str], memo: dict[int, bool]) -> bool:
    """Whether an ancestor of ``op`` is named in ``names``.

    ``memo`` holds the answers per parent id, so that asking for every op of a
    program costs one step per op.
    """
    parent = op.parent
    if parent is None:
        return False
    inside = memo.get(parent)
    if inside is None:
        owner = program.ops[parent]
        inside = owner.name in names or within(program, owner, names, memo)
        memo[parent] = inside
    return inside


def _op_class_may_have_regions(cls: type) -> bool:
    """Whether ops of an OpView class can have regions.

    The class generated for a registered op declares its regions
    (``_ODS_REGIONS``: how many, and whether that count is exact); the
    verifier holds every op to its declaration. The generic ``OpView`` of an
    unregistered op says nothing (True).
    """
    if not isinstance(getattr(cls, "OPERATION_NAME", None), str):
        return True
    regions = getattr(cls, "_ODS_REGIONS", None)
    return not (isinstance(regions, tuple) and regions[0] == 0 and regions[1] is True)


# What each vector or memref type tells, by its text (an immutable key; the
# values are tuples). Bounded, lest a long session grow it.
_INFO_LIMIT = 4096
_info_by_text: dict[str, TypeInfo] = {}


def _memory_spaces() -> tuple[ir.Attribute, ir.Attribute, ir.Attribute]:
    # Attributes belong to a context; parse them in the current one.
    return (
        ir.Attribute.parse("#gpu.address_space<workgroup>"),
        ir.Attribute.parse("#mosaic_gpu.tmem"),
        ir.Attribute.parse("#mosaic_gpu.smem_cluster"),
    )


def _element_bitwidth(element_type: ir.Type) -> int | None:
    """The element's width in bits, as JAX's lowering counts it; None where it has none.

    Only powers of two are widths the lowering supports. The packed 6-bit
    types count whole: 16 values in 128 bits (``b6x16_p32``), one in a byte
    (``p2b6``).
    """
    if isinstance(element_type, ir.FloatTF32Type):
        return 32
    if isinstance(element_type, ir.IntegerType):
        width = ir.IntegerType(element_type).width
    elif isinstance(element_type, ir.FloatType):
        width = ir.FloatType(element_type).width
    elif isinstance(element_type, mgpu.B6x16P32Type):
        width = 128
    elif isinstance(element_type, mgpu.P2B6Type):
        width = 8
    else:
        return None
    return width if width > 0 and width.bit_count() == 1 else None


class _HashCollision(Exception):
    """Two distinct values of one module share a hash (never seen; handled anyway)."""


class _Frame:
    """Where the pre-order walk is inside an op with regions.

    The walk visits an op's region ops right after the op, block after block,
    and says nothing about where a block ends; each block's op count (read
    once, when the op is entered) tells which op belongs to which block.
    """

    __slots__ = ("parent", "blocks", "counts", "block", "body", "left")

    def __init__(self, parent: int | None, blocks: list[list[int]], counts: list[int]) -> None:
        self.parent = parent
        self.blocks = blocks  # op ids per block, all regions' blocks in order
        self.counts = counts  # ops per block
        self.block = 0  # the block being walked
        self.body = blocks[0]  # its op ids
        self.left = counts[0]  # how many of its ops the walk has still to visit


class _Reader:
    """One pre-order walk over a module (``ir.Operation.walk``: one callback per op).

    Values are keyed by their hash (an int: a dictionary hit then costs no
    binding call to compare values); two values with one hash would be
    detected where the second is defined, and the module then read again
    keyed by the values themselves.
    """

    def __init__(self, *, by_hash: bool) -> None:
        self.by_hash = by_hash
        self.ops: list[Op] = []
        self.values: list[Value] = []
        # Ids of the values that need a layout (vectors, TMEM refs,
        # transformable SMEM refs); decides which ops go in ``layout_ops``.
        self.relevant: set[int] = set()
        self.layout_ops: list[int] = []
        self.value_ids: dict[object, int] = {}
        # The bindings' objects of register values, to read their use order.
        self.vectors: dict[int, ir.Value] = {}
        self.spaces: tuple[ir.Attribute, ir.Attribute, ir.Attribute] | None = None
        self.type_cache: dict[int, TypeInfo] = {}
        # Per Python class of ir.Type: whether it is a vector or memref type.
        # The bindings hand out types already cast to their class, so most
        # values are classified by this one dictionary lookup.
        self.shaped_classes: dict[type, bool] = {}
        self.stack: list[_Frame] = []
        # Set when two values share a key; the walk then stops (an exception
        # raised in its callback would come out as a RuntimeError).
        self.collided = False

    def is_shaped(self, ty: ir.Type) -> bool:
        cls = ty.__class__
        shaped = self.shaped_classes.get(cls)
        if shaped is None:
            shaped = self.shaped_classes[cls] = issubclass(cls, _SHAPED)
        return shaped

    def classify(self, ty: ir.Type) -> TypeInfo:
        """What a vector or memref type tells; computed once per distinct type.

        Keyed by the type's hash: types are unique in their context, so the
        hash is the hash of one pointer, and an int key spares the binding
        call that compares two types on every hit.
        """
        key = hash(ty)
        cached = self.type_cache.get(key)
        if cached is None:
            # Across modules (and contexts), by the type's text: printing a
            # type costs a fraction of asking the bindings for its parts.
            text = str(ty)
            cached = _info_by_text.get(text)
            if cached is None:
                cached = self._classify_shaped(ty)
                if len(_info_by_text) >= _INFO_LIMIT:
                    _info_by_text.clear()
                _info_by_text[text] = cached
            self.type_cache[key] = cached
        return cached

    def _classify_shaped(self, ty: ir.Type) -> TypeInfo:
        if isinstance(ty, ir.VectorType):
            vty = ir.VectorType(ty)
            return (Kind.VECTOR, tuple(vty.shape), _element_bitwidth(vty.element_type), None, False)
        if self.spaces is None:
            self.spaces = _memory_spaces()
        smem, tmem, smem_cluster = self.spaces
        mty = ir.MemRefType(ty)
        kind, transformable = Kind.OTHER, False
        space = mty.memory_space
        if space is not None and (space == smem or space == smem_cluster):
            kind = Kind.SMEM
            transformable = not isinstance(mty.element_type, mgpu.BarrierType)
        elif space is not None and space == tmem:
            kind = Kind.TMEM
        try:
            strides: tuple[int, ...] | None = tuple(mty.get_strides_and_offset()[0])
        except (ValueError, RuntimeError):  # the bindings raise either for a non-strided map
            strides = None
        return (kind, tuple(mty.shape), _element_bitwidth(mty.element_type), strides, transformable)

    def new_value(self, v: ir.Value, producer: Producer | None) -> int:
        """Registers ``v`` (its type read once, here) and returns its id."""
        ty = v.type
        vid = len(self.values)
        if self.value_ids.setdefault(hash(v) if self.by_hash else v, vid) != vid:
            self.collided = True
        if self.is_shaped(ty):
            self.add_shaped(v, vid, producer, ty)
        else:
            self.values.append(_Unshaped(vid, producer, ty))
        return vid

    def add_shaped(self, v: ir.Value, vid: int, producer: Producer | None, ty: ir.Type) -> bool:
        """Adds the value of a vector or memref type; whether it needs a layout."""
        info = self.classify(ty)
        self.values.append(Value(vid, info, producer, ty))
        kind = info[0]
        if kind is Kind.VECTOR:
            self.vectors[vid] = v
        elif kind is not Kind.TMEM and not info[4]:
            return False
        self.relevant.add(vid)
        return True

    def read(self, module: ir.Module) -> list[int]:
        """Reads the module body (ids of its ops returned); fills ``ops`` and ``values``."""
        top: list[int] = []
        self.stack.append(_Frame(None, [top], [len(module.body.operations)]))
        visit = self.visitor()
        for view in module.body.operations:
            view.operation.walk(visit, ir.WalkOrder.PRE_ORDER)
            if self.collided:
                raise _HashCollision
        return top

    def visitor(self) -> Callable[[ir.Operation], ir.WalkResult]:
        """The walk's callback; the one piece of Python that runs for every op."""
        ops, values, relevant, vectors = self.ops, self.values, self.relevant, self.vectors
        value_ids, stack, add_shaped = self.value_ids, self.stack, self.add_shaped
        get, define = value_ids.get, value_ids.setdefault
        shaped_classes, layout_ops = self.shaped_classes, self.layout_ops
        by_hash, advance = self.by_hash, ir.WalkResult.ADVANCE
        interrupt = ir.WalkResult.INTERRUPT
        regions_by_name = _regions_by_name

        def visit(operation: ir.Operation) -> ir.WalkResult:
            frame = stack[-1]
            if not frame.left:
                frame = self.next_block()
            frame.left -= 1
            oid = len(ops)
            frame.body.append(oid)
            # map, not a comprehension: in Python 3.11 each comprehension
            # makes a function and a frame, and this runs for every op.
            raw = operation.operands
            operands = tuple(map(get, map(hash, raw) if by_hash else raw))
            if None in operands:  # defined outside what we walk: free values
                operands = self.free_operands(operands, raw)
            layout = not relevant.isdisjoint(operands) if operands else False
            results = operation.results
            if results:
                result_ids = []
                for index, r in enumerate(results):
                    ty = r.type
                    vid = len(values)
                    if define(hash(r) if by_hash else r, vid) != vid:
                        return self.collision()
                    shaped = shaped_classes.get(ty.__class__)
                    if shaped is None:
                        shaped = self.is_shaped(ty)
                    if not shaped:
                        # Most results are scalars: registered here, inline.
                        values.append(_UnshapedResult(vid, oid, index, ty))
                    elif add_shaped(r, vid, Producer(oid, index), ty):
                        layout = True
                    result_ids.append(vid)
                op = Op(oid, operation.name, operands, tuple(result_ids), frame.parent, operation)
            else:
                op = Op(oid, operation.name, operands, (), frame.parent, operation)
            ops.append(op)
            if layout:
                layout_ops.append(oid)
                for index, vid in enumerate(operands):
                    if vid in vectors:
                        values[vid].uses.append((oid, index))
            name = op.name
            may_have_regions = regions_by_name.get(name)
            if may_have_regions is None:
                may_have_regions = regions_by_name[name] = _op_class_may_have_regions(
                    operation.opview.__class__
                )
            if may_have_regions:
                self.enter(op, operation)
            return interrupt if self.collided else advance

        return visit

    def collision(self) -> ir.WalkResult:
        self.collided = True
        return ir.WalkResult.INTERRUPT

    def next_block(self) -> _Frame:
        """The frame of the next op: past blocks (and ops) whose ops were all visited."""
        stack = self.stack
        frame = stack[-1]
        while not frame.left:
            frame.block += 1
            if frame.block < len(frame.counts):
                frame.body = frame.blocks[frame.block]
                frame.left = frame.counts[frame.block]
            else:
                stack.pop()
                frame = stack[-1]
        return frame

    def free_operands(
        self, operands: tuple[int | None, ...], raw: ir.OpOperandList
    ) -> tuple[int, ...]:
        """Operand ids, with a new (free) value for each operand defined outside the walk."""
        return tuple(
            [
                self.new_value(v, None) if vid is None else vid
                for vid, v in zip(operands, raw, strict=True)
            ]
        )

    def enter(self, op: Op, operation: ir.Operation) -> None:
        """Records an op's regions: their blocks' arguments now, their ops as the walk goes."""
        blocks: list[list[int]] = []
        counts: list[int] = []
        for r_index, region in enumerate(operation.regions):
            region_blocks = []
            for inner in region.blocks:
                args = tuple(
                    [
                        self.new_value(a, Producer(op.id, i, r_index))
                        for i, a in enumerate(inner.arguments)
                    ]
                )
                body: list[int] = []
                region_blocks.append((args, body))
                blocks.append(body)
                counts.append(len(inner.operations))
            op.regions.append(region_blocks)
        if blocks:
            self.stack.append(_Frame(op.id, blocks, counts))

    def order_uses(self) -> None:
        """Puts the uses of register values with several users in the bindings' order.

        The order decides the order of relayout constraints, hence which of
        several equally good answers the search finds first; the bindings'
        order is not always the reverse of the walk's (nor the walk's).
        """
        values, ops = self.values, self.ops
        for vid, v in self.vectors.items():
            info = values[vid]
            if len(info.uses) < 2:
                continue
            # The walk found the same uses; the bindings' list is read for its
            # order. A use's operand position alone names it where only one
            # user has the value at that position; otherwise its owner is
            # compared with those users (reading an owner costs a dozen times
            # more than a position, and hashing one as much again).
            users_at: dict[int, list[int]] = {}
            # Where many users share a position (a constant feeding every
            # block), their operations by hash, built on first need.
            by_position: dict[int, dict[ir.Operation, int]] = {}
            for oid, index in info.uses:
                users_at.setdefault(index, []).append(oid)
            uses: list[tuple[int, int]] = []
            for use in v.uses:
                index = use.operand_number
                users = users_at.get(index)
                if not users:
                    continue  # a user outside what we walked
                if len(users) == 1:
                    uses.append((users[0], index))
                    continue
                owner = use.owner
                operation = owner.operation if hasattr(owner, "operation") else owner
                if len(users) <= _FEW_USERS:
                    for oid in users:
                        if ops[oid].operation == operation:
                            uses.append((oid, index))
                            break
                    continue
                by_operation = by_position.get(index)
                if by_operation is None:
                    by_operation = by_position[index] = {ops[u].operation: u for u in users}
                oid = by_operation.get(operation)
                if oid is not None:
                    uses.append((oid, index))
            info.uses = uses


# Up to this many users at one operand position, a use's owner is compared
# with each; past it, looked up by hash (each comparison or hash is a binding call).
_FEW_USERS = 4

# Per op name: whether ops of that name can have regions (the first op's class says).
_regions_by_name: dict[str, bool] = {}


def read_program(module: ir.Module) -> Program:
    """Reads ``module`` into a ``Program``; must run inside the module's context."""
    reader = _Reader(by_hash=True)
    try:
        top = reader.read(module)
    except _HashCollision:
        reader = _Reader(by_hash=False)
        top = reader.read(module)
    reader.order_uses()
    return Program(reader.ops, reader.values, top, reader.layout_ops)
