"""The constraint system in words: names of the values behind variables and sites
(``Namer``), and a sentence for each requirement (``describe_element``), with
the op that imposed it and where. The dump of the system (``smalto.pipeline.dump``) and
the diagnosis of a conflict (``smalto.diagnose``) say requirements this way.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from jax._src.lib.mlir import ir

from smalto.constraints.language import (
    Broadcast,
    Divides,
    Element,
    Equal,
    FullyTiled,
    GmemTransfer,
    MinorTileDivisible,
    NotOfKind,
    Reduce,
    RegisterBits,
    Relayout,
    Reshape,
    Role,
    Site,
    SmemTransfer,
    StoreRegisters,
    System,
    TmaRows,
    TmemTransfer,
    Var,
    Variable,
    allowed_layouts,
    value_at,
)
from smalto.hw.names import describe_value
from smalto.hw.transfers import Transfer
from smalto.hw.values import Const
from smalto.program.view import Program
from smalto.rules.attributes import strict_cast
from smalto.source.files import Sources
from smalto.source.locations import file_position, location_name, op_text


class Namer:
    """SSA names and types of the values behind variables and sites.

    With ``sources`` (the user's Python files, ``smalto.source.files``), a variable is
    also named as the user's source line names its value where the line can be
    read: `` `s` (%53)`` for ``s = jnp.sum(x, axis=1)``; one name per variable,
    wherever the conflict mentions it.
    """

    def __init__(
        self, program: Program, system: System | None, sources: Sources | None = None
    ) -> None:
        self.program = program
        self.system = system
        self.sources = sources
        self._state: ir.AsmState | None = None
        self._var_names: dict[int, str] = {}
        self._user_names: dict[str, int] = {}  # a user's name -> the value (id) it names
        # Explanations already given in this message: the second time, a short form.
        self.explained: set[str] = set()

    def _ir_value(self, site: Site) -> ir.Value:
        view = self.program.ops[site.op].view
        if site.role == Role.OPERAND:
            return view.operands[site.index]
        if site.role == Role.RESULT:
            return view.results[site.index]
        assert site.region is not None
        return view.regions[site.region].blocks[0].arguments[site.index]

    def site(self, site: Site) -> str:
        return self._name(self._ir_value(site))

    def _name(self, value: ir.Value | None) -> str:
        try:
            if value is None:
                return "<value>"
            if self._state is None:
                top = self.program.ops[self.program.top_level[0]].operation
                parent = top.parent if top.parent is not None else top
                self._state = ir.AsmState(parent)
            name = value.get_name(self._state)
        except Exception:  # naming is best-effort: never hide the real error
            name = "<value>"
        return name

    def value(self, vid: int) -> str:
        """The SSA name of a value, by its id."""
        producer = self.program.values[vid].producer
        if producer is None:  # a free value: named at a use
            for op in self.program.ops:
                if vid in op.operands:
                    return self._name(op.operation.operands[op.operands.index(vid)])
            return "<value>"
        view = self.program.ops[producer.op].operation
        if producer.region is None:
            return self._name(view.results[producer.index])
        return self._name(view.regions[producer.region].blocks[0].arguments[producer.index])

    def site_text(self, site: Site) -> str:
        """``%3 (result #0 of `arith.addf` at kernel.py:12:8)``."""
        role = {Role.OPERAND: "operand", Role.RESULT: "result", Role.ARGUMENT: "argument"}
        op = op_text(self.program.ops[site.op])
        return f"{self.site(site)} ({role[site.role]} #{site.index} of {op})"

    def var(self, var: int) -> str:
        name = self._var_names.get(var)
        if name is None:
            variable = self._variable(var)
            # Prefer a result (the value as defined) over an operand use.
            sites = sorted(variable.sites, key=lambda s: (s.role != Role.RESULT, s.role))
            name = self.site(sites[0]) if sites else f"v{var}"
            if sites and self.sources is not None:
                vid = value_at(self.program, sites[0])
                user = self._user_name(vid)
                # One line may define several values (a ref and its transposed view,
                # both ``acc_smem.T``): the user's name goes to the first, so that
                # distinct values never share a name (a value keeps it wherever it is).
                if user is not None and self._user_names.setdefault(user, vid) == vid:
                    name = f"`{user}` ({name})"
            self._var_names[var] = name
        return name

    def _variable(self, var: int) -> Variable:
        # A Namer made without a system names sites and values only (the edit
        # words of smalto.diagnose.suggest); naming a variable needs the system.
        assert self.system is not None, "naming a variable needs the constraint system"
        return self.system.variables[var]

    def user_name(self, vid: int) -> str | None:
        """The user's name for a value (``s``), where its source line can be read."""
        return self._user_name(vid) if self.sources is not None else None

    def _user_name(self, vid: int) -> str | None:
        """The user's name for a value, from the source line of the op that defines it."""
        assert self.sources is not None
        producer = self.program.values[vid].producer
        if producer is None or producer.region is not None:
            return None
        op = self.program.ops[producer.op]
        position = file_position(op.location)
        if position is None:
            return None
        line = self.sources.line(position.file, position.line)
        if line is None:
            return None
        # (The Pallas source reader is loaded only where a user's line was read.)
        from smalto.source.pallas_edits import source_name

        return source_name(
            line,
            position.column,
            load=op.name == "mosaic_gpu.vector_load",
            primitive=location_name(op.location),
        )

    def producer(self, var: int) -> str:
        """ " (from `op` at file:line)" for the op that defines the variable's value."""
        for site in self._variable(var).sites:
            if site.role == Role.RESULT:
                op = self.program.ops[site.op]
                return f" (from {op_text(op)})"
        return ""

    def expr(self, expr: object, default: str) -> str:
        """The name of the variable inside an expression, or ``default``."""
        var = expr_var(expr)
        return self.var(var) if var is not None else default

    def typed(self, var: int) -> str:
        variable = self._variable(var)
        return f"{self.var(var)} : {self.program.values[variable.key_value].type}"


def expr_var(expr: object) -> int | None:
    """The variable inside an expression (through reductions, reshapes...), if any."""
    while not isinstance(expr, Var) and hasattr(expr, "expr"):
        expr = expr.expr
    return expr.id if isinstance(expr, Var) else None


def describe_allowed(layouts: Sequence[Const]) -> str:
    """The layouts a requirement allows, in words: the one, or "one of A; B" (semicolons:
    an SMEM layout's name has commas)."""
    if len(layouts) == 1:
        return describe_value(layouts[0])
    return "one of " + "; ".join(describe_value(layout) for layout in layouts)


def describe_element(element: Element, program: Program, namer: Namer) -> str:
    """A requirement in words, naming its values (``namer``) and its op: the words of its
    kind (``_DESCRIBERS``), else "requirement of OP"."""
    at = op_text(program.ops[element.origin])
    allows = allowed_layouts(element)
    if allows is not None:
        # The layouts an op allows a value: one is what the op fixes, however the rule
        # states it (a fixed layout, or one option).
        if len(allows.layouts) == 1:
            return (
                f"{namer.typed(allows.var)} must be {describe_value(allows.layouts[0])}: "
                f"it is {allows.what} of {at}"
            )
        options = "; ".join(describe_value(layout) for layout in allows.layouts)
        return f"{namer.var(allows.var)} at {at} must be one of: {options}"
    describe = _DESCRIBERS.get(type(element))
    said = describe(element, at, program, namer) if describe is not None else None
    return said if said is not None else f"requirement of {at}"


# The words of each kind of requirement: (the element, its op's text, the program, the
# namer) -> the words, or None where they have none for it ("requirement of OP").
type _Describer = Callable[[Any, str, Program, Namer], str | None]


def _relayout(element: Relayout, at: str, program: Program, namer: Namer) -> str | None:
    s = expr_var(element.source)
    if not element.strict:
        name = namer.var(s) if s is not None else "the operand"
        return f"{name} must be convertible by the layout cast {at} (a supported relayout)"
    if s is None:
        return None
    if strict_cast(program, element.origin):
        return (
            f"{namer.var(s)}{namer.producer(s)} is used by {at}: a strict layout "
            "cast converts only a splat"
        )
    used = f"{namer.var(s)}{namer.producer(s)} is used by {at}"
    if "relayout" in namer.explained:
        return f"{used}: it keeps its layout there (as above)"
    namer.explained.add("relayout")
    return (
        f"{used}: a value keeps its layout from producer to consumer, but where "
        "the lowering converts it (from a splat, a transpose, an upcast layout)"
    )


def _smem_transfer(element: SmemTransfer, at: str, program: Program, namer: Namer) -> str:
    s, r = expr_var(element.smem), expr_var(element.reg)
    return (
        f"{at} moves {namer.var(r) if r is not None else 'a value'} between registers "
        f"and the SMEM ref {namer.var(s) if s is not None else ''}: the register "
        f"layout and the ref's tiling and swizzle need a supported ({element.mode.value}) "
        "transfer"
    )


def _tmem_transfer(element: TmemTransfer, at: str, program: Program, namer: Namer) -> str:
    t, r = expr_var(element.tmem), expr_var(element.reg)
    return (
        f"{at} moves {namer.var(r) if r is not None else 'a value'} between registers "
        f"and TMEM {namer.var(t) if t is not None else ''}: the two layouts need a "
        "supported TMEM transfer"
    )


def _divides(element: Divides, at: str, program: Program, namer: Namer) -> str:
    v = expr_var(element.expr)
    return (
        f"the tiling of {namer.var(v) if v is not None else 'the value'} must divide "
        f"{element.multiple} (the sizes and known offsets used by {at})"
    )


def _minor_tile(element: MinorTileDivisible, at: str, program: Program, namer: Namer) -> str:
    ref = namer.expr(element.expr, "the ref")
    return f"the minor tile of {ref} must be a multiple of {element.divisor} ({at})"


def _tma_rows(element: TmaRows, at: str, program: Program, namer: Namer) -> str:
    ref = namer.expr(element.expr, "the ref")
    text = (
        f"the rows {at} copies of {ref} (its minor tile, or minor dim, of "
        f"{element.bitwidth}-bit elements) must be whole 16-byte rows, and exactly as wide as "
        "its swizzle where swizzled"
    )
    if element.cp_async:
        text += "; without a barrier (cp.async) it swizzles only a tiled ref"
    return text


def _not_of_kind(element: NotOfKind, at: str, program: Program, namer: Namer) -> str:
    v = expr_var(element.expr)
    value = namer.var(v) if v is not None else "the value"
    return f"{value} cannot be {element.kind.value} ({at})"


def _equal(element: Equal, at: str, program: Program, namer: Namer) -> str:
    lhs, rhs = element.lhs, element.rhs
    if isinstance(rhs, Reduce) or isinstance(lhs, Reduce):
        source = lhs if isinstance(rhs, Reduce) else rhs
        return f"{namer.var(expr_var(source) or 0)} must be the reduced layout of its input ({at})"
    if isinstance(rhs, Reshape):
        result = namer.expr(lhs, "the result")
        return f"{result} must be a layout that reshaping its input keeps ({at})"
    a, b = expr_var(lhs), expr_var(rhs)
    if a is not None and b is not None and namer.var(a) == namer.var(b):
        return f"{namer.var(a)} is one ref wherever {at} uses it: one set of transforms"
    if a is not None and b is not None and a != b:
        return f"{namer.var(a)} and {namer.var(b)} must have the same layout ({at})"
    return f"two layouts must agree ({at})"


def _broadcast(element: Broadcast, at: str, program: Program, namer: Namer) -> str:
    return f"the broadcast {at} must be supported for its source and result layouts"


def _fully_tiled(element: FullyTiled, at: str, program: Program, namer: Namer) -> str:
    value, rank = namer.expr(element.expr, "the value"), element.rank
    if element.reduced is None:
        return (
            f"{value} must be tiled over all {rank} of its dims "
            f"if tiled at all: {at} cannot take a row or column tile"
        )
    return (
        f"{value} must be tiled over all {rank} of its dims, "
        f"or leave the reduced dims {element.reduced} untiled ({at})"
    )


def _register_bits(element: RegisterBits, at: str, program: Program, namer: Namer) -> str:
    # 32-bit words for an optimization barrier, whole bytes for a conversion.
    multiple = element.multiple
    how = f"passes {at} as 32-bit words:" if multiple == 32 else f"is converted by {at}:"
    return (
        f"{namer.expr(element.expr, 'the value')} {how} {element.bitwidth}-bit elements need "
        f"vector registers of a multiple of {multiple} bits"
    )


def _gmem_transfer(element: GmemTransfer, at: str, program: Program, namer: Namer) -> str:
    value = namer.expr(element.reg, "the value")
    if element.mode == Transfer.OPTIMIZED:
        return (
            f"{value} moves to or from GMEM by {at}: an optimized "
            f"transfer of {element.bitwidth}-bit elements must coalesce (at least 4 bytes a "
            "thread, whole 32-byte sectors)"
        )
    return (
        f"{value} moves to or from GMEM by {at}: its "
        "vectors must run along a contiguous dim of the ref"
    )


def _store_registers(element: StoreRegisters, at: str, program: Program, namer: Namer) -> str:
    return (
        f"{namer.expr(element.expr, 'the value')} is stored by {at} one register at a time: "
        "registers of 32 or 64 bits, each element held by one thread"
    )


_DESCRIBERS: dict[type, _Describer] = {
    Relayout: _relayout,
    SmemTransfer: _smem_transfer,
    TmemTransfer: _tmem_transfer,
    Divides: _divides,
    MinorTileDivisible: _minor_tile,
    TmaRows: _tma_rows,
    NotOfKind: _not_of_kind,
    Equal: _equal,
    Broadcast: _broadcast,
    FullyTiled: _fully_tiled,
    RegisterBits: _register_bits,
    GmemTransfer: _gmem_transfer,
    StoreRegisters: _store_registers,
}
