"""Finding what the unit-dim rewrite may change: webs of values with unit dims.

A *web* is a set of vector values of one shape ``S`` with a size-1 dim that
the module computes as one: the operands and results of an elementwise op,
and everything a loop or branch carries from one place to another (an
``scf.for`` init, iteration argument, yielded value and result; the same for
``scf.while``, ``scf.if`` and ``scf.index_switch``; an operand of
``mosaic_gpu.optimization_barrier`` and its result). Either every value of a
web is rewritten or none is.

A web is rewritten (computed on the shape ``Q``, ``S`` without some of its
unit dims) only when each of its values has a definition that exists at shape
``Q``:

- an *expansion*: a ``broadcast_in_dim`` or ``shape_cast`` whose operand,
  of shape ``Q``, only gains unit dims (every expansion of the web from the
  same ``Q``);
- a splat ``arith.constant`` or a ``vector.broadcast`` of a scalar;
- a ``broadcasted_iota`` along a dim the rewrite keeps;
- an elementwise op, a loop or branch result or a loop's block argument
  (whose operands are in the web);

and when some user of the web wants its values without the unit dims (a
``broadcast_in_dim`` the expansion then folds into, or a ``shape_cast`` that
drops them again). Any other definition (a load, a function argument, an
op this module does not know) keeps the web as written: when in doubt, no
rewrite. Users that need the value as written get it expanded right before
them.
"""

from __future__ import annotations

from dataclasses import field

from jax._src.lib.mlir import ir

from smalto.basics.records import value_class
from smalto.program.view import Kind, Program, ops_in_order
from smalto.rewrite import ops as names

Shape = tuple[int, ...]


def vector_shape(value: ir.Value) -> Shape | None:
    """The shape of a vector value; ``None`` for anything else."""
    ty = value.type
    if isinstance(ty, ir.VectorType):
        return tuple(ir.VectorType(ty).shape)
    return None


def _with_unit_dim(value: ir.Value) -> Shape | None:
    """The shape of a vector value of rank 2 or more with a size-1 dim (a web member)."""
    shape = vector_shape(value)
    return shape if shape is not None and _web_shape(shape) else None


def _web_shape(shape: Shape) -> bool:
    return len(shape) >= 2 and 1 in shape


def may_have_webs(program: Program) -> bool:
    """Whether the module read into ``program`` has a vector type a web member could have
    (rank 2 or more, a size-1 dim): without one, ``find_webs`` finds nothing, and the
    walk over the bindings it takes is spared."""
    return any(
        value.kind is Kind.VECTOR and _web_shape(value.shape) for value in program.layout_types
    )


def i64_array(attribute: ir.Attribute) -> tuple[int, ...]:
    return tuple(ir.DenseI64ArrayAttr(attribute))


def expansion_kept(
    source: Shape, result: Shape, dims: tuple[int, ...] | None
) -> tuple[int, ...] | None:
    """The result dims an expansion keeps from its operand, if it only inserts unit dims.

    ``dims`` are a ``broadcast_in_dim``'s ``broadcast_dimensions`` (``None``
    for a ``shape_cast``, which keeps the row-major order: its operand dims
    are matched from the left, every result dim left over must be 1).
    """
    if len(result) <= len(source):
        return None
    if dims is not None:
        if len(dims) != len(source) or list(dims) != sorted(set(dims)):
            return None
        if any(result[d] != n for d, n in zip(dims, source, strict=True)):
            return None
        if any(result[d] != 1 for d in range(len(result)) if d not in dims):
            return None
        return dims
    kept: list[int] = []
    for d, n in enumerate(result):
        if len(kept) < len(source) and n == source[len(kept)]:
            kept.append(d)
        elif n != 1:
            return None
    return tuple(kept) if len(kept) == len(source) else None


@value_class()
class Web:
    """Values of one shape computed as one, with what defines and uses them."""

    shape: Shape
    members: list[ir.Value] = field(default_factory=list)
    # Definitions, by kind (ops, in program order).
    expansions: list[ir.Operation] = field(default_factory=list)
    constants: list[ir.Operation] = field(default_factory=list)
    splats: list[ir.Operation] = field(default_factory=list)
    iotas: list[ir.Operation] = field(default_factory=list)
    computed: list[ir.Operation] = field(default_factory=list)  # elementwise ops
    carriers: list[ir.Operation] = field(default_factory=list)  # scf ops
    # Uses outside the web, by what the rewrite does to them.
    folds: list[ir.Operation] = field(default_factory=list)  # broadcast_in_dim
    squeezes: list[ir.Operation] = field(default_factory=list)  # shape_cast to ``squeezed``
    reductions: list[ir.Operation] = field(default_factory=list)  # multi_reduction over kept+unit
    expand_for: list[tuple[ir.Operation, int]] = field(default_factory=list)  # (user, operand)
    # The shape without the dropped unit dims, and which dims of ``shape`` it keeps.
    squeezed: Shape = ()
    kept: tuple[int, ...] = ()
    # Why the web stays as written (``None``: it is rewritten).
    blocked: str | None = None

    @property
    def dropped(self) -> tuple[int, ...]:
        return tuple(d for d in range(len(self.shape)) if d not in self.kept)


class _Members:
    """Union-find over the web members (values with a unit dim), in order of discovery."""

    def __init__(self) -> None:
        self.parent: dict[ir.Value, ir.Value] = {}
        self.order: list[ir.Value] = []

    def add(self, value: ir.Value) -> bool:
        if _with_unit_dim(value) is None:
            return False
        if value not in self.parent:
            self.parent[value] = value
            self.order.append(value)
        return True

    def find(self, value: ir.Value) -> ir.Value:
        root = value
        while self.parent[root] != root:
            root = self.parent[root]
        while self.parent[value] != root:
            self.parent[value], value = root, self.parent[value]
        return root

    def union(self, values: list[ir.Value]) -> bool:
        """Joins ``values`` (all vectors with a unit dim, of one shape); False if they are not."""
        shapes = {_with_unit_dim(v) for v in values}
        if len(shapes) != 1 or None in shapes:
            return False
        for v in values:
            self.add(v)
        first = self.find(values[0])
        for v in values[1:]:
            root = self.find(v)
            if root != first:
                self.parent[root] = first
        return True


def _terminator(region: ir.Region) -> ir.Operation | None:
    blocks = list(region.blocks)
    if len(blocks) != 1:
        return None
    operations = list(blocks[0].operations)
    return operations[-1].operation if operations else None


def _carried_groups(op: ir.Operation) -> list[list[ir.Value]] | None:
    """The groups of values an ``scf`` op carries as one (one group per carried position).

    ``None`` when the op is not one the rewrite knows, or its regions are not
    the single-block form these ops have.
    """
    name = op.name
    if name == names.FOR:
        body = list(op.regions[0].blocks)
        yield_op = _terminator(op.regions[0])
        if len(body) != 1 or yield_op is None:
            return None
        arguments = list(body[0].arguments)[1:]
        inits = list(op.operands)[3:]
        return [
            [init, argument, result, yielded]
            for init, argument, result, yielded in zip(
                inits, arguments, op.results, yield_op.operands, strict=True
            )
        ]
    if name == names.WHILE:
        before, after = op.regions[0], op.regions[1]
        condition, yield_op = _terminator(before), _terminator(after)
        if condition is None or yield_op is None:
            return None
        before_args = list(list(before.blocks)[0].arguments)
        after_args = list(list(after.blocks)[0].arguments)
        entering = [
            list(group) for group in zip(op.operands, before_args, yield_op.operands, strict=True)
        ]
        leaving = [
            list(group)
            for group in zip(list(condition.operands)[1:], op.results, after_args, strict=True)
        ]
        return entering + leaving
    if name == names.OPTIMIZATION_BARRIER:
        return [[operand, result] for operand, result in zip(op.operands, op.results, strict=True)]
    if name in (names.IF, names.INDEX_SWITCH):
        yields = [_terminator(region) for region in op.regions]
        if any(y is None for y in yields):
            return None
        return [
            [result, *(y.operands[i] for y in yields if y is not None)]
            for i, result in enumerate(op.results)
        ]
    return None


def _link(op: ir.Operation, members: _Members, linked: set[ir.Operation]) -> None:
    """Unions the values ``op`` computes as one; remembers the ops whose operands it
    linked (the users a web keeps inside)."""
    name = op.name
    if name in names.ELEMENTWISE:
        values = [v for v in (*op.operands, *op.results) if vector_shape(v) is not None]
        if values and all(_with_unit_dim(v) is not None for v in values):
            if members.union(values):
                linked.add(op)
        return
    groups = _carried_groups(op)
    if groups is None:
        return
    with_unit_dims = [g for g in groups if any(_with_unit_dim(v) is not None for v in g)]
    if all(members.union(g) for g in with_unit_dims):
        linked.add(op)
        for terminator in (_terminator(region) for region in op.regions):
            if terminator is not None:
                linked.add(terminator)


def find_webs(module: ir.Module) -> list[Web]:
    """Every web of the module, in program order, each either ready to rewrite or
    ``blocked`` with the reason."""
    members = _Members()
    linked: set[ir.Operation] = set()
    ops = ops_in_order(module.operation)
    for op in ops:
        for result in op.results:
            members.add(result)
        for region in op.regions:
            for block in region.blocks:
                for argument in block.arguments:
                    members.add(argument)
        _link(op, members, linked)
    groups: dict[ir.Value, Web] = {}
    for value in members.order:
        root = members.find(value)
        if root not in groups:
            shape = _with_unit_dim(value)
            assert shape is not None
            groups[root] = Web(shape)
        groups[root].members.append(value)
    webs = list(groups.values())
    for web in webs:
        _classify_definitions(web, linked)
        if web.blocked is None:
            _choose_squeezed_shape(web)
        if web.blocked is None:
            _classify_uses(web, linked)
    _block_nested(webs)
    return webs


def _owner(value: ir.Value) -> ir.Operation | ir.Block:
    owner = value.owner
    return owner if isinstance(owner, ir.Block) else owner.operation


def _classify_definitions(web: Web, linked: set[ir.Operation]) -> None:
    seen: set[ir.Operation] = set()
    for value in web.members:
        owner = _owner(value)
        if isinstance(owner, ir.Block):
            parent = owner.owner.operation
            if parent in linked and parent.name in (names.FOR, names.WHILE):
                _add_once(web.carriers, parent, seen)
                continue
            web.blocked = f"a block argument of {parent.name}"
            return
        op = owner
        name = op.name
        if op in linked:
            _add_once(web.computed if name in names.ELEMENTWISE else web.carriers, op, seen)
        elif name in (names.BROADCAST_IN_DIM, names.SHAPE_CAST) and _expansion(op) is not None:
            _add_once(web.expansions, op, seen)
        elif name == names.CONSTANT and _is_splat(op):
            _add_once(web.constants, op, seen)
        elif name == names.SPLAT_BROADCAST and vector_shape(op.operands[0]) is None:
            _add_once(web.splats, op, seen)
        elif name == names.IOTA:
            _add_once(web.iotas, op, seen)
        else:
            web.blocked = f"defined by {name}"
            return


def _add_once(into: list[ir.Operation], op: ir.Operation, seen: set[ir.Operation]) -> None:
    if op not in seen:
        seen.add(op)
        into.append(op)


def _expansion(op: ir.Operation) -> tuple[Shape, tuple[int, ...]] | None:
    """(operand shape, kept dims) of an op that only inserts unit dims into its operand."""
    source, result = vector_shape(op.operands[0]), vector_shape(op.results[0])
    if source is None or result is None or not source:
        return None
    dims = None
    if op.name == names.BROADCAST_IN_DIM:
        dims = i64_array(op.attributes["broadcast_dimensions"])
    kept = expansion_kept(source, result, dims)
    return None if kept is None else (source, kept)


def _expansion_of(op: ir.Operation) -> tuple[Shape, tuple[int, ...]]:
    found = _expansion(op)
    assert found is not None  # a web's expansions are the ops that have one
    return found


def _is_splat(op: ir.Operation) -> bool:
    value = op.attributes["value"]
    return isinstance(value, ir.DenseElementsAttr) and ir.DenseElementsAttr(value).is_splat


def iota_dimension(op: ir.Operation) -> int:
    return ir.IntegerAttr(op.attributes["dimension"]).value


def _choose_squeezed_shape(web: Web) -> None:
    expansions = [_expansion_of(op) for op in web.expansions]
    if expansions:
        shapes = {shape for shape, _ in expansions}
        if len(shapes) != 1:
            web.blocked = "expanded from different shapes"
            return
        # Prefer a broadcast_in_dim's own choice of dims; any choice with the
        # same kept shape gives the same values (unit dims hold one element).
        by_broadcast = [
            e
            for op, e in zip(web.expansions, expansions, strict=True)
            if op.name == names.BROADCAST_IN_DIM
        ]
        web.squeezed, web.kept = (by_broadcast or expansions)[0]
    elif web.iotas:
        web.kept = tuple(d for d, n in enumerate(web.shape) if n != 1)
        web.squeezed = tuple(web.shape[d] for d in web.kept)
    else:
        web.blocked = "no value of the web exists without its unit dims"
        return
    if not web.squeezed:
        web.blocked = "it would drop every dim"
        return
    if any(iota_dimension(op) not in web.kept for op in web.iotas):
        web.blocked = "an iota along a dropped dim"


def _classify_uses(web: Web, linked: set[ir.Operation]) -> None:
    seen: set[tuple[ir.Operation, int]] = set()
    for value in web.members:
        for use in value.uses:
            user = use.owner.operation
            number = use.operand_number
            if user in linked:
                continue
            if (user, number) in seen:
                continue
            seen.add((user, number))
            name = user.name
            if name == names.BROADCAST_IN_DIM:
                web.folds.append(user)
            elif name == names.SHAPE_CAST and vector_shape(user.results[0]) == web.squeezed:
                web.squeezes.append(user)
            elif name == names.MULTI_REDUCTION and number == 0 and _narrows(web, user):
                web.reductions.append(user)
            else:
                web.expand_for.append((user, number))
    if not web.folds and not web.squeezes:
        web.blocked = "no user broadcasts it or drops its unit dims"


def _narrows(web: Web, op: ir.Operation) -> bool:
    """A reduction over every dropped dim and at least one kept one."""
    reduced = set(i64_array(op.attributes["reduction_dims"]))
    return set(web.dropped) <= reduced and bool(reduced - set(web.dropped))


def _block_nested(webs: list[Web]) -> None:
    """Keeps a web as written when one of its expansions expands a value of another
    web that is rewritten: the two would disagree on that value's shape."""
    rewritten = {v for web in webs if web.blocked is None for v in web.members}
    for web in webs:
        if web.blocked is None and any(op.operands[0] in rewritten for op in web.expansions):
            web.blocked = "it expands a value another web rewrites"
