"""The checker's state and the requirements every op rule states.

A ``Checker`` holds the program, the layout the attributes give each site
(``sites``) and the violations found; the per-dialect modules register one
rule per op (``rule``) that reads those sites and reports what does not hold.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence

from jax._src.lib.mlir import ir
from jax.experimental.mosaic.gpu import utils as mgpu_utils

from smalto.basics import percontext
from smalto.basics.records import value_class
from smalto.check.names import describe, describe_apart
from smalto.check.semantics import Layout, tile_of
from smalto.check.smem import UNTRANSFORMED, Transforms
from smalto.hw.numbers import prime_factors
from smalto.hw.values import Reg, Tmem
from smalto.program.view import Kind, Op, Program, Value
from smalto.source.locations import file_position, location_text

IN, OUT = 0, 1
PREFIX = {IN: "in", OUT: "out"}
ROLE = {IN: "operand", OUT: "result"}
# Ops whose regions hold already-lowered code: nothing inside carries layouts.
OPAQUE = frozenset({"mosaic_gpu.custom_primitive"})
TERMINATORS = frozenset({"scf.yield", "scf.condition"})
FOR_BOUNDS = 3  # scf.for: lower bound, upper bound, step come first


@value_class(frozen=True, slots=True)
class Violation:
    """One requirement an annotated op does not meet."""

    location: str  # ``FILE:LINE:COL`` where known, else MLIR's text for the location
    op: str  # the op's name, e.g. ``mosaic_gpu.wgmma``
    message: str
    op_index: int  # the op's pre-order index in the module

    def __str__(self) -> str:
        return f"{self.location}: {self.op}: {self.message}"

    @property
    def not_annotated(self) -> bool:
        """The one violation of a module with no layout attributes at all."""
        return self.op_index == NOT_ANNOTATED


# The op index of the violation of a whole module that carries no layouts.
NOT_ANNOTATED = -1


# --- site layouts ------------------------------------------------------------------


# Compared and hashed by identity (three instances): the checker keys dictionaries by
# family for every annotated op, and a dataclass's own hash is a Python call.
@value_class(frozen=True, slots=True, eq=False)
class Family:
    suffix: str  # attribute name after ``in_``/``out_``
    what: str  # how messages call the values


LAYOUTS = Family("layouts", "vector")
TMEM = Family("tmem_layouts", "TMEM ref")
TRANSFORMS = Family("transforms", "transformable SMEM ref")


def family_of(value: Value) -> Family | None:
    if value.kind == Kind.VECTOR:
        return LAYOUTS
    if value.kind == Kind.TMEM:
        return TMEM
    if value.kind == Kind.SMEM and value.transformable:
        return TRANSFORMS
    return None


def smem_positions(program: Program, ids: Sequence[int]) -> list[int]:
    return [i for i, v in enumerate(ids) if program.values[v].kind == Kind.SMEM]


class Checker:
    """The program, the layout of each annotated site, and the violations found."""

    def __init__(self, program: Program, arch: tuple[int, int], source_name: str | None) -> None:
        self.program = program
        self.arch = arch
        self.source_name = source_name
        self.violations: list[Violation] = []
        # (op id, IN/OUT, operand/result index) -> the layout the attributes give it.
        self.sites: dict[tuple[int, int, int], Layout] = {}
        self.annotated: list[Op] = []
        # The ops with a value that needs a layout (the only ones that may state some).
        self.layout_ops = frozenset(program.layout_ops)
        # What each layout attribute entry reads as, by (its hash, family suffix): kept
        # with the context (attributes are unique in it), for every check run in it.
        self.decoded: dict[tuple[int, str], Layout] = percontext.cache(
            program.context, "checker: decoded entries"
        )

    def report(self, op: Op, message: str) -> None:
        self.violations.append(Violation(self.location(op), op.name, message, op.id))

    def location(self, op: Op) -> str:
        """Where ``op`` is, as ``smalto infer`` says it (``kernel.py:88:12``: the user's
        line inside JAX's name and call-site locations), with the source name in place of
        the parser's ``-``."""
        position = file_position(op.location)
        if position is None:
            return location_text(op.location)
        file = position.file
        if file == "-" and self.source_name is not None:
            file = self.source_name
        return f"{file}:{position.line}:{position.column}"

    # --- access -----------------------------------------------------------------------

    def value(self, op: Op, role: int, index: int) -> Value:
        ids = op.operands if role == IN else op.results
        return self.program.values[ids[index]]

    def get(self, op: Op, role: int, index: int) -> Layout | None:
        return self.sites.get((op.id, role, index))

    def reg(self, op: Op, role: int, index: int) -> Reg | None:
        layout = self.get(op, role, index)
        return layout if isinstance(layout, Reg) else None

    def smem(self, op: Op, role: int, index: int) -> Transforms | None:
        layout = self.get(op, role, index)
        return layout if isinstance(layout, Transforms) else None

    def tmem(self, op: Op, role: int, index: int) -> Tmem | None:
        layout = self.get(op, role, index)
        return layout if isinstance(layout, Tmem) else None

    def vector_sites(self, op: Op) -> list[tuple[int, int]]:
        values = self.program.values
        sites = [(IN, i) for i, v in enumerate(op.operands) if values[v].kind == Kind.VECTOR]
        sites += [(OUT, i) for i, v in enumerate(op.results) if values[v].kind == Kind.VECTOR]
        return sites

    # --- common requirements ----------------------------------------------------------------

    def expect(self, op: Op, role: int, index: int, wanted: Layout, why: str) -> None:
        got = self.get(op, role, index)
        if got is not None and got != wanted:
            got_name, wanted_name = describe_apart(got, wanted)
            self.report(op, f"{ROLE[role]} #{index} is {got_name} but {why} must be {wanted_name}")

    def same(self, op: Op, sites: Sequence[tuple[int, int]], why: str) -> None:
        """All of ``sites`` (role, index) that have a layout have the same one."""
        known = [(site, self.get(op, *site)) for site in sites]
        known = [(site, layout) for site, layout in known if layout is not None]
        if not known:
            return
        (first_site, first), *rest = known
        for site, layout in rest:
            if layout != first:
                name, first_name = describe_apart(layout, first)
                self.report(
                    op,
                    f"{ROLE[site[0]]} #{site[1]} is {name} but "
                    f"{ROLE[first_site[0]]} #{first_site[1]} is {first_name}; {why}",
                )

    def not_kinds(self, op: Op, role: int, index: int, *, splat: bool, strided: bool) -> None:
        layout = self.reg(op, role, index)
        if layout is None:
            return
        if splat and layout.is_splat:
            self.report(op, f"{ROLE[role]} #{index} cannot be a splat ({describe(layout)})")
        if strided and layout.is_strided:
            self.report(op, f"{ROLE[role]} #{index} cannot be strided ({describe(layout)})")

    def divides(self, op: Op, role: int, index: int, multiple: Sequence[int], what: str) -> None:
        """The tile of a site divides ``multiple`` (aligned on the trailing dims)."""
        layout = self.get(op, role, index)
        tile = tile_of(layout)
        if tile is None:
            return
        if len(tile) > len(multiple) or any(
            m % t for t, m in zip(reversed(tile), reversed(tuple(multiple)), strict=False)
        ):
            self.report(
                op,
                f"the tile {tile} of {ROLE[role]} #{index} does not divide {what} "
                f"{tuple(multiple)}",
            )


def known_divisor(size: int, operand: int, op: Op) -> int:
    """The largest divisor of ``size`` known to divide a dynamic index operand."""
    value = op.operation.operands[operand]
    if isinstance(value.type, ir.VectorType):
        return 1  # gather indices: nothing is known of the elements
    owner = value.owner
    if isinstance(owner, ir.OpView) and owner.operation.name == "arith.constant":
        attr = owner.operation.attributes["value"]
        if isinstance(attr, ir.IntegerAttr):
            return math.gcd(size, ir.IntegerAttr(attr).value)
    known = 1
    for factor in prime_factors(size):
        if mgpu_utils.is_known_divisible(value, known * factor):
            known *= factor
    return known


def bool_attr(op: Op, name: str) -> bool | None:
    attributes = op.operation.attributes
    if name not in attributes:
        return None
    return bool(ir.BoolAttr(attributes[name]).value)


def ints(attr: ir.Attribute) -> tuple[int, ...]:
    if isinstance(attr, ir.DenseI64ArrayAttr):
        return tuple(attr)
    if isinstance(attr, ir.DenseI32ArrayAttr):
        return tuple(attr)
    return tuple(ir.IntegerAttr(a).value for a in ir.ArrayAttr(attr))


# --- per-op requirements -------------------------------------------------------------------

Rule = Callable[[Checker, Op], None]
RULES: dict[str, Rule] = {}


def rule(*names: str) -> Callable[[Rule], Rule]:
    def register(fn: Rule) -> Rule:
        for name in names:
            RULES[name] = fn
        return fn

    return register


def untiled(c: Checker, op: Op, index: int, what: str) -> None:
    c.expect(op, IN, index, UNTRANSFORMED, what)
