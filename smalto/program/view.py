"""A compact, binding-free view of a Mosaic GPU module: ops, values and blocks by id.

Every op, value and block argument has a small integer id (ops in pre-order)
and carries what the rules and the solver need: memory kind, shape, element
bitwidth, strides, producer and uses. The MLIR bindings are slow to call;
the solver only touches these plain objects. Everything is keyed by ids,
never by ``ir.OpView``/``ir.Value`` objects, whose hashes are not stable once
attributes change. ``smalto.program.reader`` makes the view, in one walk over the
module, and hands over its tables (``Tables``); what that walk did not read is
read here, through the bindings, when first asked for.
"""

from __future__ import annotations

import enum
import sys
from collections.abc import Callable, Iterator, Sequence
from typing import overload

from jax._src.lib.mlir import ir

from smalto.basics.records import value_class
from smalto.source.locations import op_location_text

# Ops whose regions hold already-lowered code: no layout is inferred inside
# them (JAX's pass does not enter them), and the reader reads nothing of them.
# Each is isolated from above: its body uses only its own block arguments.
OPAQUE_REGIONS = frozenset({"mosaic_gpu.custom_primitive"})


class Kind(enum.IntEnum):
    """Where a value lives, as far as layout inference is concerned."""

    OTHER = 0  # scalars, GMEM refs, tokens, pointers: no layout
    VECTOR = 1  # registers: a register layout
    SMEM = 2  # shared memory (also cluster SMEM): a tiling and swizzle
    TMEM = 3  # tensor memory: a TMEM layout


@value_class(slots=True)
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


class UnshapedValue(Value):
    """A value of a type that is neither a vector nor a memref (scalars, tokens, pointers).

    Most values of a kernel are such; their fields are the class's, so that
    making one sets three slots instead of nine.
    """

    __slots__ = ()
    kind = Kind.OTHER
    shape = ()
    bitwidth = None
    strides = None
    transformable = False
    # One shared empty tuple, not a list each: nothing is appended to an unshaped value's uses
    # (so the tuple stands where Value declares a list, which mypy cannot be told).
    uses = ()  # type: ignore[assignment]
    info = None

    def __init__(self, vid: int, producer: Producer | None, ty: ir.Type) -> None:
        self.id = vid
        self.producer = producer
        self.type = ty


class LateScalar(UnshapedValue):
    """An op result of such a type (or a value from outside the module), registered late.

    The walk does not register these: only the ops that need their ids ask
    for them (a layout op's scalar operands, an op's results when asked).
    Their type, and their producer where the reader did not know it, are
    read through the bindings when asked; few are.
    """

    __slots__ = ("_value", "_ops", "_known", "_producer")

    def __init__(
        self, vid: int, value: ir.Value, ops: OpIndex, producer: Producer | None, known: bool
    ) -> None:
        self.id = vid
        self._value = value
        # Not the reader: it holds the values, and a cycle would outlive the
        # pass until the cyclic collector ran.
        self._ops = ops
        self._known = known  # whether ``producer`` is known (else resolved when asked)
        self.producer = producer

    # A slot in ``Value``, read through the bindings here (never set): mypy counts that an override.
    @property
    def type(self) -> ir.Type:  # type: ignore[override]
        return self._value.type

    @property
    def producer(self) -> Producer | None:
        if not self._known:
            self._producer = self._ops.producer_of(self._value)
            self._known = True
        return self._producer

    @producer.setter
    def producer(self, producer: Producer | None) -> None:
        self._producer = producer

    @property
    def producer_known(self) -> bool:
        """Whether the producer is known (else it is looked up when first asked for)."""
        return self._known

    def produced_by(self, producer: Producer) -> None:
        """The walk met the op that defines the value: its producer is known now."""
        self.producer = producer
        self._known = True


class OpIndex:
    """Op ids by operation, for the few values whose producer is looked up late."""

    __slots__ = ("operations", "_ids")

    def __init__(self, operations: list[ir.Operation]) -> None:
        self.operations = operations
        self._ids: dict[int, int] | None = None

    def producer_of(self, v: ir.Value) -> Producer | None:
        """Where a value the walk passed over comes from: an op result, by the bindings."""
        if not isinstance(v, ir.OpResult):
            return None  # a block argument the walk did not see: from outside the module
        if self._ids is None:
            # Hashing every op: only explanations and messages get here.
            self._ids = {hash(op): i for i, op in enumerate(self.operations)}
        result: ir.OpResult[ir.Type] = ir.OpResult(v)
        owner = result.owner
        oid = self._ids.get(hash(owner.operation if hasattr(owner, "operation") else owner))
        return None if oid is None else Producer(oid, result.result_number)


class Tables:
    """What the walk read of a module (``smalto.program.reader``), and the reads it left for later.

    The view's ops and values are these tables; what the walk passed over (the
    operands and results of most ops, scalars, the values of an already
    lowered body) is read here through the bindings when first asked for, so
    that the view never calls back into the reader that filled it.
    """

    __slots__ = (
        "by_hash",
        "operations",
        "names",
        "parents",
        "operands",
        "results",
        "regions",
        "values",
        "value_ids",
        "layout_ops",
        "layout_types",
        "opaque_parents",
        "type_cache",
        "op_index",
        "collided",
        "facts",
    )

    def __init__(self, *, by_hash: bool, facts: Callable[[ir.Type], TypeInfo]) -> None:
        # Values keyed by their hash (an int: no binding call to compare), or
        # by themselves where two values of the module share a hash.
        self.by_hash = by_hash
        self.operations: list[ir.Operation] = []
        self.names: list[str] = []
        self.parents: list[int | None] = []
        # Operand and result ids of the ops the walk read them of (others: when asked).
        self.operands: dict[int, tuple[int, ...]] = {}
        self.results: dict[int, tuple[int, ...]] = {}
        self.regions: dict[int, list[list[tuple[tuple[int, ...], list[int]]]]] = {}
        self.values: list[Value] = []
        self.value_ids: dict[object, int] = {}
        self.layout_ops: list[int] = []
        # One value of each type among those needing a layout: what validation looks at first.
        self.layout_types: dict[int, Value] = {}
        # Ids of the ops whose regions are opaque (an ``OPAQUE_REGIONS`` op, or
        # an op inside one): their ops' values are read, when asked, as opaque.
        self.opaque_parents: set[int] = set()
        # What a vector or memref type tells, by the type's hash (kept with the context).
        self.type_cache: dict[int, TypeInfo] = {}
        self.op_index = OpIndex(self.operations)
        # Set when two values share a key (the walk then reads the module again).
        self.collided = False
        # What a vector or memref type tells (``smalto.program.type_facts``, given by the reader:
        # the view stands below the facts of types).
        self.facts = facts

    def key(self, v: ir.Value) -> object:
        return hash(v) if self.by_hash else v

    def classify(self, ty: ir.Type) -> TypeInfo:
        """What a vector or memref type tells; computed once per distinct type.

        Keyed by the type's hash: types are unique in their context, so the
        hash is the hash of one pointer, and an int key spares the binding
        call that compares two types on every hit.
        """
        key = hash(ty)
        cached = self.type_cache.get(key)
        if cached is None:
            cached = self.type_cache[key] = self.facts(ty)
        return cached

    def opaque_value(self, v: ir.Value, producer: Producer | None) -> int:
        """Registers a value of an opaque body (its type read here), needing no layout."""
        ty = v.type
        vid = len(self.values)
        if self.value_ids.setdefault(self.key(v), vid) != vid:
            self.collided = True
        if isinstance(ty, (ir.VectorType, ir.MemRefType)):
            self.values.append(Value(vid, self.classify(ty), producer, ty))
        else:
            self.values.append(UnshapedValue(vid, producer, ty))
        return vid

    def late_value(
        self, v: ir.Value, producer: Producer | None, known: bool, key: object = None
    ) -> int:
        """Registers a scalar the walk passed over (or a value from outside the module).

        ``key``: ``self.key(v)``, where the caller has it already.
        """
        vid = len(self.values)
        self.value_ids[self.key(v) if key is None else key] = vid
        self.values.append(LateScalar(vid, v, self.op_index, producer, known))
        return vid

    def operand_ids(self, oid: int) -> tuple[int, ...]:
        """An op's operand ids, for an op whose operands the walk did not read."""
        get = self.value_ids.get
        opaque = self.parents[oid] in self.opaque_parents
        ids = []
        for v in self.operations[oid].operands:
            vid = get(self.key(v))
            if vid is None:
                if opaque:
                    vid = self.opaque_value(v, self.op_index.producer_of(v))
                else:
                    vid = self.late_value(v, None, False)
            ids.append(vid)
        return tuple(ids)

    def result_ids(self, oid: int) -> tuple[int, ...]:
        """An op's result ids, for an op whose results the walk did not register."""
        get, values = self.value_ids.get, self.values
        opaque = self.parents[oid] in self.opaque_parents
        ids = []
        for index, r in enumerate(self.operations[oid].results):
            vid = get(self.key(r))
            if vid is None:
                if opaque:
                    vid = self.opaque_value(r, Producer(oid, index))
                else:
                    vid = self.late_value(r, Producer(oid, index), True)
            else:
                # Met before as an operand: now its producer is known.
                scalar = values[vid]
                if isinstance(scalar, LateScalar) and not scalar.producer_known:
                    scalar.produced_by(Producer(oid, index))
            ids.append(vid)
        return tuple(ids)

    def make_op(self, oid: int) -> Op:
        return Op(
            oid,
            self.names[oid],
            self.operands.get(oid),
            self.results.get(oid),
            self.parents[oid],
            self.operations[oid],
            self.regions.get(oid, _NO_REGIONS),
            self,
        )


_NO_REGIONS: list[list[tuple[tuple[int, ...], list[int]]]] = []


class Op:
    """One operation: its name, operand/result value ids, regions and parent, by id.

    Made when first asked for (``Program.ops``); the operand and result ids of
    an op the walk did not need are read then.
    """

    __slots__ = (
        "id",
        "name",
        "_operands",
        "_results",
        "regions",
        "parent",
        "operation",
        "_view",
        "_tables",
    )

    def __init__(
        self,
        oid: int,
        name: str,
        operands: tuple[int, ...] | None,
        results: tuple[int, ...] | None,
        parent: int | None,
        operation: ir.Operation,
        regions: list[list[tuple[tuple[int, ...], list[int]]]],
        tables: Tables,
    ) -> None:
        self.id = oid
        self.name = name
        self._operands = operands
        self._results = results
        # regions[r] is the list of blocks; each block is (argument ids, op ids).
        self.regions = regions
        self.parent = parent
        self.operation = operation
        self._view: ir.OpView | None = None
        self._tables = tables

    @property
    def operands(self) -> tuple[int, ...]:
        operands = self._operands
        if operands is None:
            operands = self._operands = self._tables.operand_ids(self.id)
        return operands

    @property
    def results(self) -> tuple[int, ...]:
        results = self._results
        if results is None:
            results = self._results = self._tables.result_ids(self.id)
        return results

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
        """The op's source position for messages, ``kernel.py:75:20`` (see ``locations``;
        an op JAX made with no line of its own: the line of the op that uses it)."""
        return op_location_text(self)

    def has_kind(self, kind: Kind, program: Program) -> bool:
        values = program.values
        return any(values[v].kind == kind for v in self.operands) or any(
            values[v].kind == kind for v in self.results
        )

    def __repr__(self) -> str:
        return f"Op(id={self.id}, name={self.name!r})"


class _Ops(Sequence[Op]):
    """The ops by id, each ``Op`` made when first asked for (most never are)."""

    __slots__ = ("made", "_tables")

    def __init__(self, tables: Tables) -> None:
        self._tables = tables
        # The ops made so far (None: not yet); readers in a hurry may index it.
        self.made: list[Op | None] = [None] * len(tables.operations)

    def __len__(self) -> int:
        return len(self.made)

    @overload
    def __getitem__(self, index: int) -> Op: ...
    @overload
    def __getitem__(self, index: slice) -> list[Op]: ...
    def __getitem__(self, index: int | slice) -> Op | list[Op]:
        if isinstance(index, slice):
            return [self[i] for i in range(*index.indices(len(self.made)))]
        op = self.made[index]
        if op is None:
            op = self.made[index] = self._tables.make_op(index % len(self.made))
        return op

    def __iter__(self) -> Iterator[Op]:
        for i in range(len(self.made)):
            yield self[i]


class Program:
    """All ops (pre-order) and values of a module, by integer id."""

    __slots__ = (
        "ops",
        "values",
        "top_level",
        "layout_ops",
        "layout_types",
        "module",
        "context",
        "_tables",
    )

    def __init__(self, tables: Tables, top_level: list[int], module: ir.Module) -> None:
        self._tables = tables
        self.module = module  # the module read (its ops are the view's)
        self.context = module.context
        self.ops = _Ops(tables)
        # Grows when values the walk did not register are asked for.
        self.values = tables.values
        self.top_level = top_level  # ids of the module body's ops
        # Ids (pre-order) of the ops with a vector, a TMEM ref or a
        # transformable SMEM ref among their operands or results: the only
        # ops inference gives attributes. Most ops of a kernel have none.
        self.layout_ops = tables.layout_ops
        # One value of each distinct type among those that need a layout.
        self.layout_types = list(tables.layout_types.values())

    def unchanged(self) -> bool:
        """Whether the module still holds exactly the ops it was read with, in order (none
        erased, added or moved since).

        What reads the view after the pass (a message made when first read) asks
        first: an op erased since is freed memory, which the bindings would read
        through the view's handle (a crash, or a wrong message). A walk over the
        module, one comparison of handles per op.
        """
        expected = self._tables.operations
        count = len(expected)
        seen = 0
        advance, interrupt = ir.WalkResult.ADVANCE, ir.WalkResult.INTERRUPT

        def visit(op: ir.Operation) -> ir.WalkResult:
            nonlocal seen
            if seen >= count or op != expected[seen]:
                seen = count + 1  # (more than read: changed)
                return interrupt
            seen += 1
            return advance

        try:
            for top in self.module.body.operations:
                top.operation.walk(visit, ir.WalkOrder.PRE_ORDER)
        except RuntimeError:  # a handle the bindings invalidated: changed
            return False
        return seen == count

    def walk(self) -> list[Op]:
        """Ops in pre-order (the order ids were given in)."""
        return list(self.ops)

    @property
    def op_names(self) -> Sequence[str]:
        """Every op's name, by id (no ``Op`` made: to find the few ops of some names)."""
        return self._tables.names

    def find(self, value: ir.Value) -> int | None:
        """The id of a bindings' value, if the view has registered it."""
        return self._tables.value_ids.get(self._tables.key(value))

    def bound_value(self, vid: int) -> ir.Value | None:
        """The bindings' value of a scalar whose producer the view has not looked up, else None.

        Such a value is read through the bindings (looking its producer up
        among the ops would hash every op of the module).
        """
        value = self.values[vid]
        if isinstance(value, LateScalar) and not value._known:
            return value._value
        return None


def within(program: Program, op: Op, names: frozenset[str], memo: dict[int, bool]) -> bool:
    """Whether an ancestor of ``op`` is named in ``names``.

    ``memo`` holds the answers per parent id, so that asking for every op of a
    program costs one step per op.
    """
    # Up the parents to the first answered (or named, or the top), then the answer down
    # again: a loop, not recursion (a module may nest hundreds of regions deep).
    unanswered: list[int] = []
    parent = op.parent
    inside = False
    while parent is not None:
        known = memo.get(parent)
        if known is not None:
            inside = known
            break
        owner = program.ops[parent]
        unanswered.append(parent)
        if owner.name in names:
            inside = True
            break
        parent = owner.parent
    for oid in unanswered:
        memo[oid] = inside
    return inside


def ops_in_order(module: ir.Operation, until: int | None = None) -> list[ir.Operation]:
    """The ops of a module's body (``module``: its ``builtin.module`` op) in pre-order:
    index ``i`` is the op ``read_program`` gives id ``i``. With ``until``, the walk stops
    once it has that op (the ops past it are not listed)."""
    ops: list[ir.Operation] = []
    advance, interrupt = ir.WalkResult.ADVANCE, ir.WalkResult.INTERRUPT
    count = sys.maxsize if until is None else until + 1

    def visit(op: ir.Operation) -> ir.WalkResult:
        ops.append(op)
        return interrupt if len(ops) >= count else advance

    for top in module.regions[0].blocks[0].operations:
        top.operation.walk(visit, ir.WalkOrder.PRE_ORDER)
        if len(ops) >= count:
            break
    return ops
