"""The constraint language: variables, expressions, constraints, and the system.

A *site* is one role of a value at one op: an operand, a result, or a block
argument of a region. A *variable* is a set of sites that share one layout (the
rules decide which: a pointwise op's operands and results, an SMEM ref and all
its views that keep the layout). Constraints relate variables through a few
expression forms; every constraint remembers the op that imposed it, so that a
conflict can be traced back to the kernel's source.
"""

from __future__ import annotations

import enum
from collections.abc import Callable, Sequence
from dataclasses import field
from operator import attrgetter
from typing import Any, NamedTuple, cast

from smalto.basics.records import record, value_class
from smalto.hw.transfers import Transfer
from smalto.hw.values import Const
from smalto.program.view import Kind, Program


class Role(enum.IntEnum):
    OPERAND = 0
    RESULT = 1
    ARGUMENT = 2


class Site(NamedTuple):
    """One role of a value at one op.

    A named tuple, not a dataclass: derivation makes and hashes one per
    operand and result of every layout op, and a tuple's are done in C.
    """

    op: int
    role: Role
    # The name hides tuple.index, which no one calls on a Site; every rule reads site.index.
    index: int  # type: ignore[assignment]
    region: int | None = None  # for block arguments: the region of the op


def value_at(program: Program, site: Site) -> int:
    """The id of the value a site refers to."""
    op_id, role, index, region = site
    op = program.ops[op_id]
    if role is _OPERAND:
        return op.operands[index]
    if role is _RESULT:
        return op.results[index]
    assert region is not None
    return op.regions[region][0][0][index]


_OPERAND, _RESULT = Role.OPERAND, Role.RESULT


# --- expressions ---------------------------------------------------------------


@record
class Var:
    id: int


@record
class Reduce:
    """The layout of a reduction of ``expr`` over ``axes`` (of a rank-``rank`` value)."""

    expr: Expr
    axes: tuple[int, ...]
    rank: int
    keep_dims: bool = False


@record
class Reshape:
    expr: Expr
    source_shape: tuple[int, ...]
    target_shape: tuple[int, ...]


@record
class Transpose:
    """The SMEM tiling of a transposed ref."""

    expr: Expr
    permutation: tuple[int, ...]


@record
class Collapse:
    """The SMEM tiling of a ref whose dims are collapsed by ``reassociation`` group sizes."""

    expr: Expr
    source_shape: tuple[int, ...]
    reassociation: tuple[int, ...]


Expr = Var | Const | Reduce | Reshape | Transpose | Collapse


def variables_of(expr: Expr) -> tuple[int, ...]:
    # By exact type: these classes are final, and a type test is a fraction of
    # a class pattern's cost (the solver's set-up asks for every constraint).
    while type(expr) in _WRAPPERS:
        expr = cast(_Wrapper, expr).expr  # the test above, which mypy does not read
    if type(expr) is Var:
        return (expr.id,)
    return ()


# Expressions that wrap one other expression.
_Wrapper = Reduce | Reshape | Transpose | Collapse
_WRAPPERS = frozenset({Reduce, Reshape, Transpose, Collapse})

# --- constraints ---------------------------------------------------------------


class LayoutKind(enum.Enum):
    SPLAT = "splat"
    STRIDED = "strided"


@record
class Equal:
    lhs: Expr
    rhs: Expr
    origin: int


@record
class Relayout:
    """``source`` can be converted to ``target`` (registers)."""

    source: Expr
    target: Expr
    bitwidth: int
    strict: bool  # between producer and consumer: only from splat
    origin: int


@record
class NotOfKind:
    expr: Expr
    kind: LayoutKind
    origin: int


@record
class SmemTransfer:
    """Registers in ``reg`` move to/from an SMEM ref with transforms ``smem``."""

    smem: Expr
    reg: Expr
    shape: tuple[int, ...]
    strides: tuple[int, ...]
    bitwidth: int
    mode: Transfer
    origin: int
    # False for async_store_smem: its lowering stores through plain stores
    # only (no stmatrix), into a tiled and swizzled ref only; JAX's
    # constraints judge it like a vector_store, so its search can pick what
    # the lowering rejects.
    txmatrix: bool = True
    # A store (a splat is stored only in whole vectors of whole bytes); False
    # for a load, whose result is never a splat anyway.
    store: bool = True


@record
class TmemTransfer:
    """Registers in ``reg`` move to/from a TMEM ref in ``tmem``."""

    tmem: Expr
    reg: Expr
    shape: tuple[int, ...]
    bitwidth: int
    origin: int
    load: bool = False  # TMEM to registers (``async_load_tmem``)


@record
class GmemTransfer:
    """Registers in ``reg`` move to/from a dense GMEM ref by a vector_load/store.

    The lowering needs a schedule for it (vectors along a contiguous dim), and
    an optimized transfer must coalesce (``gmem_transfer_supported``). JAX's
    constraints leave this out, and JAX's own answers break it on many
    kernels: the search in JAX's order judges it as holding (to walk JAX's
    path), then keeps its answer only if it holds; the complete searches
    enforce it throughout (see ``evaluate.judge``, ``search.decide``).
    """

    reg: Expr
    shape: tuple[int, ...]
    strides: tuple[int, ...]
    bitwidth: int
    origin: int
    mode: Transfer = Transfer.OPTIMIZED
    store: bool = True  # as ``SmemTransfer.store``


@record
class OneOf:
    """``expr`` is one of ``allowed`` (tried in that order).

    MMA operands take one of a few exact (tiling, swizzle) pairs; TMA gather
    indices one of the two index layouts. Build it with ``one_of``, which
    states a single option as the equality it is. The diagnosis reads it, as it
    reads a ``Fixed``, through ``allowed_layouts``.
    """

    expr: Expr
    allowed: tuple[Const, ...]
    origin: int
    what: str = "the value"  # as ``Fixed.what``: which operand/result of the op, in words


def one_of(expr: Expr, allowed: tuple[Const, ...], origin: int) -> OneOf | Equal:
    """``OneOf`` without repeated options; a single option is an ``Equal``.

    The equality is then settled by propagation, as a forced value, instead
    of being a choice the search pays for.
    """
    options = tuple(dict.fromkeys(allowed))
    if len(options) == 1:
        return Equal(expr, options[0], origin)
    return OneOf(expr, options, origin)


@record
class Divides:
    """Each trailing tile size divides the matching entry of ``multiple``."""

    expr: Expr
    multiple: tuple[int, ...]
    origin: int


@record
class MinorTileDivisible:
    """The minor tile size of an SMEM tiling is a multiple of ``divisor``."""

    expr: Expr
    divisor: int
    origin: int


@record
class TmaRows:
    """A TMA copy moves the SMEM ref's rows whole: 16-byte rows, exactly the swizzle's
    width where swizzled.

    The copied minor dim (the tile's, or the ref's when untiled; minor in
    memory, so not the last dim of a transposed ref, of type ``shape`` and
    ``strides``) times ``bitwidth``: a multiple of 128 bits where the ref is
    tiled, and the swizzle in bits where it is swizzled. A copy without a
    barrier (``cp_async``: ``cp.async``, not TMA) swizzles only a tiled ref.
    JAX's constraints leave this out; its lowering (``launch_context``)
    rejects the copy.
    """

    expr: Expr
    shape: tuple[int, ...]
    strides: tuple[int, ...]
    bitwidth: int
    origin: int
    cp_async: bool = False


@record
class StoreRegisters:
    """Registers stored one per asynchronous SMEM store: 32 or 64 bits, no replicas.

    JAX's constraints do not say this, but its lowering of async_store_smem
    needs it; stating it keeps the wider search from choosing, say, WGMMA for
    an 8-bit value (16-bit registers).
    """

    expr: Expr
    bitwidth: int
    origin: int


@record
class RegisterBits:
    """Each register of the value holds a multiple of ``multiple`` bits.

    An optimization barrier hands registers to inline assembly as 32-bit
    words (``multiple`` 32); a conversion into a sub-byte type makes whole
    bytes of each register (``multiple`` 8). So ``bitwidth``-bit elements
    narrower than that need vector registers long enough (a splat's scalar
    register will not do). JAX's constraints leave this out; its lowering
    raises.
    """

    expr: Expr
    bitwidth: int
    multiple: int
    origin: int


@record
class FullyTiled:
    """A tiled layout of the value tiles all ``rank`` dims (not just the minor ones).

    Like ``StoreRegisters``, a requirement of JAX's lowering (of broadcasts
    and reductions) that its constraints leave out. ``reduced``: the dims a
    reduction reduces; a tiling of fewer dims is then fine if it leaves them
    all untiled (the lowering of a reduction reads the reduced dim's index in
    the tiling, so a tiled one is misread, while untiled dims reduce within
    each thread).
    """

    expr: Expr
    rank: int
    origin: int
    reduced: tuple[int, ...] | None = None


@record
class Broadcast:
    """``src`` broadcasts into ``dst`` along ``dims`` (broadcast_in_dim)."""

    src: Expr
    dst: Expr
    dims: tuple[int, ...]
    origin: int


Constraint = (
    Equal
    | Relayout
    | NotOfKind
    | SmemTransfer
    | TmemTransfer
    | GmemTransfer
    | OneOf
    | Divides
    | MinorTileDivisible
    | TmaRows
    | Broadcast
    | StoreRegisters
    | RegisterBits
    | FullyTiled
)


def expressions_of(c: Constraint) -> tuple[Expr, ...]:
    fields = _EXPRESSION_FIELDS.get(type(c))
    if fields is None:
        raise TypeError(c)
    return fields(c)


# The expressions of each kind of constraint, in order.
_EXPRESSION_FIELDS: dict[type, Callable[[Any], tuple[Expr, ...]]] = {
    Equal: attrgetter("lhs", "rhs"),
    Relayout: attrgetter("source", "target"),
    Broadcast: attrgetter("src", "dst"),
    SmemTransfer: attrgetter("smem", "reg"),
    TmemTransfer: attrgetter("tmem", "reg"),
    GmemTransfer: lambda c: (c.reg,),
    **{
        kind: lambda c: (c.expr,)
        for kind in (
            NotOfKind,
            OneOf,
            Divides,
            MinorTileDivisible,
            TmaRows,
            StoreRegisters,
            RegisterBits,
            FullyTiled,
        )
    },
}


def constraint_variables(c: Constraint) -> tuple[int, ...]:
    out: list[int] = []
    for e in expressions_of(c):
        out.extend(variables_of(e))
    return tuple(out)


# --- the system ----------------------------------------------------------------


@value_class(slots=True)
class Variable:
    id: int
    kind: Kind  # VECTOR, SMEM or TMEM
    shape: tuple[int, ...]
    bitwidth: int | None
    strides: tuple[int, ...] | None  # memrefs: the key site's strides
    key: Site  # the site it was created for (its type gives shape, strides)
    key_value: int  # the value id at the key site
    sites: list[Site] = field(default_factory=list)


@record
class Fixed:
    """A layout an op imposes outright (wgmma accumulator, layout_cast, ...)."""

    var: int
    value: Const
    origin: int
    what: str = "the value"  # which operand/result of the op, in words


# A requirement of a system: a constraint, or a layout an op imposes.
Element = Constraint | Fixed


class Allowed(NamedTuple):
    """The layouts a requirement allows for its one variable, in the order they are tried.

    A layout an op imposes outright (``Fixed``) is the case of one option; an op's
    options (``OneOf``) the case of several. What reads requirements for people (the
    diagnosis, its hints, the pictures) reads this, so that a rule may state a layout
    either way and be explained the same.
    """

    var: int
    layouts: tuple[Const, ...]
    what: str  # which operand/result of the op, in words

    @property
    def only(self) -> Const | None:
        """The one layout allowed, where there is one: what the requirement fixes."""
        return self.layouts[0] if len(self.layouts) == 1 else None


def allowed_layouts(element: Element) -> Allowed | None:
    """The layouts ``element`` allows for its variable; None for a requirement of another
    form (one that relates variables, or that restricts layouts without listing them).

    A ``OneOf`` on an expression other than a plain variable (none of the rules states
    one) lists the layouts of the expression, not of a variable: None too.
    """
    if type(element) is Fixed:
        return Allowed(element.var, (element.value,), element.what)
    if type(element) is OneOf and type(element.expr) is Var:
        return Allowed(element.expr.id, element.allowed, element.what)
    return None


def fixed_layout(element: Element) -> Fixed | None:
    """The layout ``element`` imposes outright, as a ``Fixed``: a fixed layout itself, or
    a requirement that allows one layout only (a ``OneOf`` of one option)."""
    if type(element) is Fixed:
        return element
    allowed = allowed_layouts(element)
    if allowed is None or allowed.only is None:
        return None
    return Fixed(allowed.var, allowed.only, element.origin, allowed.what)


def as_solved(elements: Sequence[Element]) -> tuple[list[Constraint], list[Fixed]]:
    """``elements`` as a system holds them: the constraints, and the layouts imposed
    outright (``fixed_layout``: a one-option requirement is one), where solving starts."""
    constraints: list[Constraint] = []
    fixed: list[Fixed] = []
    for element in elements:
        imposed = fixed_layout(element)
        if imposed is not None:
            fixed.append(imposed)
        elif not isinstance(element, Fixed):
            constraints.append(element)
    return constraints, fixed


def element_variables(element: Element) -> tuple[int, ...]:
    """The variables a requirement involves, in order (a fixed layout's one)."""
    if isinstance(element, Fixed):
        return (element.var,)
    return constraint_variables(element)


@value_class(slots=True)
class System:
    variables: list[Variable] = field(default_factory=list)
    constraints: list[Constraint] = field(default_factory=list)
    fixed: list[Fixed] = field(default_factory=list)
    var_of_site: dict[Site, int] = field(default_factory=dict)


def conflicting_fixed(system: System) -> bool:
    """Whether ops impose two layouts on one variable: JAX meets this while gathering its
    rules, before it names the module for dumps, and says the generic sentence."""
    known: dict[int, Const] = {}
    return any(known.setdefault(f.var, f.value) != f.value for f in system.fixed)
