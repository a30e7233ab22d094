"""Reading a module into the program view (``smalto.program.view``): one walk over its ops.

The walk gives every op, value and block argument its id and reads what the
rules and the solver need of it. It is the one part of inference whose cost
grows with every op of the kernel, most of which (index arithmetic, barriers,
GMEM refs) carry no layout; so it makes as few binding calls per op as it can:
one ``.type`` per result and block argument, one hash lookup per operand, and
per distinct type one classification (``smalto.program.type_facts``).

One idea, one walk: the walk's callback and the reads it leaves for later
(operands, scalar results, the count of uses that proves it missed none)
share the reader's tables, so they stay in one module.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import cast

from jax._src.lib.mlir import ir

from smalto.basics import percontext
from smalto.basics.mlir import MlirInputError
from smalto.basics.nesting import MAX_REGION_DEPTH, too_deep_message
from smalto.program.type_facts import facts_by_text
from smalto.program.view import (
    OPAQUE_REGIONS,
    Kind,
    LateScalar,
    Producer,
    Program,
    Tables,
    UnshapedValue,
    Value,
)

# Only these types can carry a layout; every other type is classified without a
# hash lookup (hashing an ir.Type is a binding call as dear as reading it).
_SHAPED = (ir.VectorType, ir.MemRefType)


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


class _HashCollision(Exception):
    """Two distinct values of one module share a hash (never seen; handled anyway)."""


class _Frame:
    """Where the pre-order walk is inside an op with regions.

    The walk visits an op's region ops right after the op, block after block,
    and says nothing about where a block ends; each block's op count (read
    once, when the op is entered) tells which op belongs to which block.
    """

    __slots__ = ("parent", "blocks", "counts", "block", "body", "left", "opaque")

    def __init__(
        self, parent: int | None, blocks: list[list[int]], counts: list[int], opaque: bool = False
    ) -> None:
        self.parent = parent
        # Inside an already lowered body (``OPAQUE_REGIONS``): ops are only counted.
        self.opaque = opaque
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

    The walk registers the values of vector and memref types (results and
    block arguments) and every block argument, and reads the operands only of
    the ops that have such a result or that may use a value needing a layout
    (``consumers``: the ops with a rule, but the elementwise ones, whose
    operands are scalars when their results are). Scalar results, and the
    operands of the other ops (scalar index arithmetic, LLVM and NVVM ops:
    most of a kernel), are read only if asked for. That no op left unread
    uses a value needing a layout is checked afterwards, by counting each
    such value's uses through the bindings (``check_uses``); if one does, the
    module is read again with every op's operands.

    The body of an op in ``OPAQUE_REGIONS`` is already lowered: no layout is
    inferred in it (JAX's pass does not enter it), yet it can be most of a
    kernel (an ``inline_mgpu`` loop over every register of a tile). The walk
    gives its ops their ids and parents and reads nothing else of them; their
    values, needing no layout, are registered (by their types) only if asked
    for. Such a body is isolated from above (the verifier holds it to its own
    arguments), so no use of a value needing a layout hides in it.
    """

    def __init__(self, *, by_hash: bool, consumers: frozenset[str] | None = None) -> None:
        self.by_hash = by_hash
        # Names of the ops whose operands the walk reads though their results
        # need no layout; None: every op's.
        self.consumers = consumers
        # What the walk does with each op name under these consumers.
        if consumers is None:
            self.roles = _roles_reading_all
        else:
            self.roles = _roles_by_consumers.setdefault(consumers, {})
        # The view's tables, filled by the walk and handed over whole.
        tables = self.tables = Tables(by_hash=by_hash, facts=facts_by_text)
        self.key, self.classify = tables.key, tables.classify
        self.operations, self.names, self.parents = tables.operations, tables.names, tables.parents
        self.operands, self.results, self.regions = tables.operands, tables.results, tables.regions
        self.values, self.value_ids = tables.values, tables.value_ids
        self.layout_ops, self.layout_types = tables.layout_ops, tables.layout_types
        self.opaque_parents, self.op_index = tables.opaque_parents, tables.op_index
        # Ids of the values that need a layout (vectors, TMEM refs,
        # transformable SMEM refs); decides which ops go in ``layout_ops``.
        self.relevant: set[int] = set()
        # The bindings' objects of the values that need a layout: their uses
        # are counted, and the order of a register value's uses read.
        self.bound: dict[int, ir.Value] = {}
        # Uses of values needing a layout found in the ops whose operands were read.
        self.found_uses = 0
        # Per Python class of ir.Type: whether it is a vector or memref type.
        # The bindings hand out types already cast to their class, so most
        # values are classified by this one dictionary lookup.
        self.shaped_classes: dict[type, bool] = {}
        self.stack: list[_Frame] = []
        self.deepest = 0  # regions inside regions, at the deepest

    def is_shaped(self, ty: ir.Type) -> bool:
        cls = ty.__class__
        shaped = self.shaped_classes.get(cls)
        if shaped is None:
            shaped = self.shaped_classes[cls] = issubclass(cls, _SHAPED)
        return shaped

    def new_value(self, v: ir.Value, producer: Producer | None) -> int:
        """Registers ``v`` (its type read once, here) and returns its id."""
        ty = v.type
        vid = len(self.values)
        if self.value_ids.setdefault(self.key(v), vid) != vid:
            self.tables.collided = True
        if self.is_shaped(ty):
            self.add_shaped(v, vid, producer, ty)
        else:
            self.values.append(UnshapedValue(vid, producer, ty))
        return vid

    def add_shaped(self, v: ir.Value, vid: int, producer: Producer | None, ty: ir.Type) -> bool:
        """Adds the value of a vector or memref type; whether it needs a layout."""
        info = self.classify(ty)
        value = Value(vid, info, producer, ty)
        self.values.append(value)
        kind = info[0]
        if kind is not Kind.VECTOR and kind is not Kind.TMEM and not info[4]:
            return False
        self.relevant.add(vid)
        self.bound[vid] = v
        self.layout_types.setdefault(id(info), value)
        return True

    def read(self, module: ir.Module) -> list[int]:
        """Reads the module body (ids of its ops returned); fills ``ops`` and ``values``."""
        top: list[int] = []
        context = module.context
        # Types are unique in their context: their facts are kept with it.
        self.tables.type_cache = percontext.cache(context, "type facts")
        # (The body's op list read once: each read is a binding call.)
        body = module.body.operations
        self.stack.append(_Frame(None, [top], [len(body)]))
        visit = self.visitor()
        for view in body:
            view.operation.walk(visit, ir.WalkOrder.PRE_ORDER)
            if self.tables.collided:
                raise _HashCollision
        if self.deepest > MAX_REGION_DEPTH:
            # Read whole (MLIR's walk is C++, off Python's stack), but too deep for
            # the walks after it: refused as input smalto cannot take.
            raise MlirInputError(too_deep_message("the module", self.deepest))
        return top

    def visitor(self) -> Callable[[ir.Operation], ir.WalkResult]:
        """The walk's callback; the one piece of Python that runs for every op.

        The block being walked is kept in the closure's own variables (its
        ops left to visit, its body, its parent op), and saved to its frame
        only where the walk enters or leaves a block: this runs for every op.
        """
        operations, names, parents = self.operations, self.names, self.parents
        operand_lists, result_lists = self.operands, self.results
        values, relevant = self.values, self.relevant
        stack = self.stack
        get = self.value_ids.get
        shaped_classes, layout_ops = self.shaped_classes, self.layout_ops
        by_hash, advance = self.by_hash, ir.WalkResult.ADVANCE
        interrupt = ir.WalkResult.INTERRUPT
        roles = self.roles
        vector = Kind.VECTOR
        add_operation, add_name, add_parent = operations.append, names.append, parents.append
        frame = stack[-1]
        left, add_to_body, parent = frame.left, frame.body.append, frame.parent
        opaque = frame.opaque
        oid = len(operations) - 1

        def visit(operation: ir.Operation) -> ir.WalkResult:
            nonlocal left, add_to_body, parent, oid, opaque
            if not left:
                stack[-1].left = 0
                frame = self.next_block()
                left, add_to_body, parent = frame.left, frame.body.append, frame.parent
                opaque = frame.opaque
            left -= 1
            oid += 1
            add_to_body(oid)
            add_operation(operation)
            add_parent(parent)
            name = operation.name
            add_name(name)
            role = roles.get(name)
            if role is None:
                role = self.role(name, operation)
            if opaque:  # already lowered: nothing of it is read now
                if role & _REGIONS:
                    stack[-1].left = left
                    self.enter(oid, operation, True)
                    if self.tables.collided:
                        return interrupt
                    frame = stack[-1]
                    left, add_to_body, parent = frame.left, frame.body.append, frame.parent
                    opaque = frame.opaque
                return advance
            layout = False
            result_ids: tuple[int, ...] | None = None
            # Types in one call; a result object only for a vector or memref.
            types = operation.results.types
            for ty in types:
                shaped = shaped_classes.get(ty.__class__)
                if shaped is None:
                    shaped = self.is_shaped(ty)
                if shaped:
                    result_ids = self.shaped_results(oid, operation.results, types)
                    if result_ids is None:
                        return interrupt
                    result_lists[oid] = result_ids
                    layout = not relevant.isdisjoint(result_ids)
                    break
            if layout or role & _READ_OPERANDS:
                raw = operation.operands
                keys = tuple(map(hash, raw)) if by_hash else tuple(raw)
                operands = tuple(map(get, keys))
                if not layout:
                    layout = not relevant.isdisjoint(operands)
                # The operands of an op with no layout are read again if asked
                # (few are): registering its scalars would cost more.
                if layout:
                    if None in operands:  # scalars the walk passed over, or free values
                        operands = self.late_operands(operands, keys, raw)
                    # Every id is known now (``late_operands`` registered the rest).
                    operands = cast("tuple[int, ...]", operands)
                    operand_lists[oid] = operands
                    if result_ids is None:
                        result_lists[oid] = self.tables.result_ids(oid) if types else ()
                    layout_ops.append(oid)
                    for index, vid in enumerate(operands):
                        if vid in relevant:
                            self.found_uses += 1
                            value = values[vid]
                            if value.kind is vector:
                                value.uses.append((oid, index))
            if role & _REGIONS:
                stack[-1].left = left
                self.enter(oid, operation, role & _OPAQUE != 0)
                if self.tables.collided:
                    return interrupt
                frame = stack[-1]
                left, add_to_body, parent = frame.left, frame.body.append, frame.parent
                opaque = frame.opaque
            return advance

        return visit

    def role(self, name: str, operation: ir.Operation) -> int:
        """What the walk does with ops of this name (``_READ_OPERANDS``, ``_REGIONS``,
        ``_OPAQUE``)."""
        consumers = self.consumers
        role = _READ_OPERANDS if consumers is None or name in consumers else 0
        if _op_class_may_have_regions(operation.opview.__class__):
            role |= _REGIONS
            if name in OPAQUE_REGIONS:
                role |= _OPAQUE
        _roles_reading_all[name] = role | _READ_OPERANDS
        self.roles[name] = role
        return role

    def shaped_results(
        self, oid: int, results: ir.OpResultList, types: list[ir.Type]
    ) -> tuple[int, ...] | None:
        """Registers every result of an op with a vector or memref result; None on a collision."""
        values, define, by_hash = self.values, self.value_ids.setdefault, self.by_hash
        ids = []
        for index, ty in enumerate(types):
            r = results[index]
            vid = len(values)
            if define(hash(r) if by_hash else r, vid) != vid:
                self.tables.collided = True
                return None
            if self.is_shaped(ty):
                self.add_shaped(r, vid, Producer(oid, index), ty)
            else:
                values.append(LateScalar(vid, r, self.op_index, Producer(oid, index), True))
            ids.append(vid)
        return tuple(ids)

    def late_operands(
        self, operands: tuple[int | None, ...], keys: tuple[object, ...], raw: ir.OpOperandList
    ) -> tuple[int, ...]:
        """Operand ids, registering each operand the walk has not (its producer found later).

        ``keys``: the operands' keys (``self.key``), in order.
        """
        get = self.value_ids.get
        ids: list[int] = []
        for index, vid in enumerate(operands):
            if vid is None:
                # The same value may come twice: registered at the first.
                vid = get(keys[index])
                if vid is None:
                    vid = self.tables.late_value(raw[index], None, False, keys[index])
            ids.append(vid)
        return tuple(ids)

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

    def enter(self, oid: int, operation: ir.Operation, opaque: bool = False) -> None:
        """Records an op's regions: their blocks' arguments now, their ops as the walk goes.

        ``opaque``: the regions are already lowered (their arguments need no layout).
        """
        register = self.tables.opaque_value if opaque else self.new_value
        if opaque:
            self.opaque_parents.add(oid)
        blocks: list[list[int]] = []
        counts: list[int] = []
        regions: list[list[tuple[tuple[int, ...], list[int]]]] = []
        for r_index, region in enumerate(operation.regions):
            region_blocks = []
            for inner in region.blocks:
                args = tuple(
                    [register(a, Producer(oid, i, r_index)) for i, a in enumerate(inner.arguments)]
                )
                body: list[int] = []
                region_blocks.append((args, body))
                blocks.append(body)
                counts.append(len(inner.operations))
            regions.append(region_blocks)
        self.regions[oid] = regions
        if blocks:
            self.stack.append(_Frame(oid, blocks, counts, opaque))
            # (The module's body is the first frame: the rest are regions.)
            self.deepest = max(self.deepest, len(self.stack) - 1)

    def check_uses(self) -> bool:
        """Whether the ops the walk read hold every use of every value needing a layout.

        Counts those uses through the bindings; meanwhile puts the uses of
        register values with several users in the bindings' order. The order
        decides the order of relayout constraints, hence which of several
        equally good answers the search finds first; the bindings' order is
        not always the reverse of the walk's (nor the walk's).
        """
        values, operations = self.values, self.operations
        total = 0
        for vid, v in self.bound.items():
            info = values[vid]
            if len(info.uses) < 2:
                for _ in v.uses:
                    total += 1
                continue
            # The walk found these uses; the bindings' list is read for its
            # order. A use's operand position alone names it where only one
            # user has the value at that position; otherwise its owner is
            # compared with those users (reading an owner costs a dozen times
            # more than a position, and hashing one as much again).
            users_at: dict[int, list[int]] = {}
            # Where many users share a position (a constant feeding every
            # block), their operations by hash, built on first need.
            by_position: dict[int, dict[ir.Operation | ir.OpView, int]] = {}
            for oid, index in info.uses:
                users_at.setdefault(index, []).append(oid)
            uses: list[tuple[int, int]] = []
            for use in v.uses:
                total += 1
                index = use.operand_number
                users = users_at.get(index)
                if not users:
                    continue  # a user the walk did not read: the count tells
                if len(users) == 1:
                    uses.append((users[0], index))
                    continue
                owner = use.owner
                operation = owner.operation if hasattr(owner, "operation") else owner
                if len(users) <= _FEW_USERS:
                    for oid in users:
                        if operations[oid] == operation:
                            uses.append((oid, index))
                            break
                    continue
                by_operation = by_position.get(index)
                if by_operation is None:
                    by_operation = by_position[index] = {operations[u]: u for u in users}
                user = by_operation.get(operation)
                if user is not None:
                    uses.append((user, index))
            info.uses = uses
        return total == self.found_uses


# Up to this many users at one operand position, a use's owner is compared
# with each; past it, looked up by hash (each comparison or hash is a binding call).
_FEW_USERS = 4

# What the walk does with an op, by name (the first op of the name says; one
# table per set of consumers the walk was given, one for the walk that reads
# every op's): read its operands, enter its regions, and whether its regions
# are already lowered (``OPAQUE_REGIONS``).
_READ_OPERANDS, _REGIONS, _OPAQUE = 1, 2, 4
_roles_by_consumers: dict[frozenset[str], dict[str, int]] = {}
_roles_reading_all: dict[str, int] = {}


def read_program(module: ir.Module, consumers: frozenset[str] | None = None) -> Program:
    """Reads ``module`` into a ``Program``; must run inside the module's context.

    ``consumers``: the ops that may use a value needing a layout though their
    results need none (the pass gives the rule layer's ``smalto.rules.consumers``):
    the walk reads only their operands and those of ops with a vector or memref
    result. None (the checker on its own): every op's operands, the same view
    found a little more slowly.
    """
    for reading in dict.fromkeys((consumers, None)):
        reader = _Reader(by_hash=True, consumers=reading)
        try:
            top = reader.read(module)
        except _HashCollision:
            reader = _Reader(by_hash=False, consumers=reading)
            top = reader.read(module)
        if reader.check_uses():
            return Program(reader.tables, top, module)
    # Reading every op's operands, each use is found.
    raise AssertionError("smalto bug: the program view misses uses of values needing layouts")
