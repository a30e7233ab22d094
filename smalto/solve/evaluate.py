"""Evaluating expressions and constraints under a partial assignment.

``simplify`` rewrites an expression as far as the known values allow: to a
value, to an unknown variable, or to an expression over one. ``judge`` says
what a constraint tells us now: it holds, it fails, it forces a variable, or
nothing yet.
"""

from __future__ import annotations

import enum
from collections.abc import Callable
from typing import Any, Final, TypeGuard, cast

from jax.experimental.mosaic.gpu import fragmented_array as fa

from smalto.basics.records import record
from smalto.constraints.language import (
    Broadcast,
    Collapse,
    Constraint,
    Divides,
    Equal,
    Expr,
    FullyTiled,
    GmemTransfer,
    LayoutKind,
    MinorTileDivisible,
    NotOfKind,
    OneOf,
    Reduce,
    RegisterBits,
    Relayout,
    Reshape,
    SmemTransfer,
    StoreRegisters,
    TmaRows,
    TmemTransfer,
    Transpose,
    Var,
)
from smalto.hw import layouts as hl
from smalto.hw.transfers import (
    gmem_transfer_supported,
    smem_transfer_supported,
    tmem_transfer_supported,
)
from smalto.hw.values import Const, Reg, Smem, Tmem


class Contradiction(enum.Enum):
    """An expression with no possible value (e.g. a tiling a transpose breaks).

    An enum of one member, so that the type checker narrows on ``is CONTRADICTION``.
    """

    CONTRADICTION = 0


# The one instance: judging compares with it by identity.
CONTRADICTION: Final = Contradiction.CONTRADICTION

# What a variable currently is: its value, or None while unknown.
Lookup = Callable[[int], Const | None]


def simplify(expr: Expr, lookup: Lookup) -> Expr | Contradiction:
    # Dispatch on the exact class (expressions are final classes): this runs
    # for every constraint the search looks at, and a `match` on class
    # patterns costs several isinstance calls per expression.
    if type(expr) is Var:
        value = lookup(expr.id)
        return expr if value is None else value
    kind = type(expr)
    if kind in _VALUE_TYPES:
        return expr
    step = _STEPS.get(kind)
    if step is None:
        raise TypeError(expr)
    return step(expr, lookup)


def _simplify_reduce(expr: Reduce, lookup: Lookup) -> Expr | Contradiction:
    inner = simplify(expr.expr, lookup)
    if isinstance(inner, Contradiction):
        return inner
    if isinstance(inner, Reg):
        out = hl.reduced_layout(inner, expr.axes, expr.rank, expr.keep_dims)
        if not isinstance(out, hl.Stuck):
            return out
    return Reduce(inner, expr.axes, expr.rank, expr.keep_dims)


def _simplify_reshape(expr: Reshape, lookup: Lookup) -> Expr | Contradiction:
    inner = simplify(expr.expr, lookup)
    if isinstance(inner, Contradiction):
        return inner
    if isinstance(inner, Reg):
        out = hl.reshaped_layout(inner, expr.source_shape, expr.target_shape)
        if not isinstance(out, hl.Stuck):
            return out
    return Reshape(inner, expr.source_shape, expr.target_shape)


def _simplify_transpose(expr: Transpose, lookup: Lookup) -> Expr | Contradiction:
    inner = simplify(expr.expr, lookup)
    if isinstance(inner, Contradiction):
        return inner
    if isinstance(inner, Smem):
        if inner.tiling is None:
            return inner
        # The swizzle is physical: it stays with the memory, not the tiling.
        tiling = hl.transposed_tiling(inner.tiling, expr.permutation)
        return CONTRADICTION if tiling is None else Smem(tiling, inner.swizzle)
    return Transpose(inner, expr.permutation)


def _simplify_collapse(expr: Collapse, lookup: Lookup) -> Expr | Contradiction:
    inner = simplify(expr.expr, lookup)
    if isinstance(inner, Contradiction):
        return inner
    if isinstance(inner, Smem):
        if inner.tiling is None:
            return inner
        tiling = hl.collapsed_tiling(inner.tiling, expr.source_shape, expr.reassociation)
        return CONTRADICTION if tiling is None else Smem(tiling, inner.swizzle)
    if isinstance(inner, (Reg, Tmem)):
        return CONTRADICTION  # collapsing only applies to SMEM refs
    return Collapse(inner, expr.source_shape, expr.reassociation)


# Each simplifies its inner expression, then itself.
_STEPS: dict[type, Callable[[Any, Lookup], Expr | Contradiction]] = {
    Reduce: _simplify_reduce,
    Reshape: _simplify_reshape,
    Transpose: _simplify_transpose,
    Collapse: _simplify_collapse,
}
_VALUE_TYPES = frozenset({Reg, Smem, Tmem})


def is_value(expr: object) -> TypeGuard[Const]:
    return type(expr) in _VALUE_TYPES


# --- judging constraints ---------------------------------------------------------


@record
class Forces:
    """The constraint holds exactly when ``var`` takes ``value``."""

    var: int
    value: Const


HOLDS = True
FAILS = False
OPEN = None  # nothing to conclude yet
Verdict = bool | None | Forces


def judge(c: Constraint, lookup: Lookup, complete: bool = False) -> Verdict:
    """What ``c`` says under ``lookup``.

    ``complete``: for smalto's complete search, which also enforces the
    lowering requirements JAX's answers break (``GmemTransfer``). Everywhere
    else (the search in JAX's order, the phrasing of JAX's messages) they hold.
    """
    return judge_of(c, complete)(c, lookup)


def judge_of(c: Constraint, complete: bool = False) -> Callable[[Any, Lookup], Verdict]:
    """The judge of ``c``'s kind (``judge`` without the dispatch, for loops that judge one
    constraint under many lookups)."""
    judge_kind = (_COMPLETE_JUDGES if complete else _JUDGES).get(type(c))
    if judge_kind is None:
        raise TypeError(c)
    return judge_kind


def _judge_equal(c: Equal, lookup: Lookup) -> Verdict:
    a, b = simplify(c.lhs, lookup), simplify(c.rhs, lookup)
    if a is CONTRADICTION or b is CONTRADICTION:
        return FAILS
    if a == b:
        return HOLDS
    return _equal(a, b)


def _judge_relayout(c: Relayout, lookup: Lookup) -> Verdict:
    a, b = simplify(c.source, lookup), simplify(c.target, lookup)
    if a is CONTRADICTION or b is CONTRADICTION:
        return FAILS
    if a == b:
        return HOLDS
    if type(a) is Reg:
        if c.strict and not a.is_splat:
            # Only splats change layout between producer and consumer.
            return _equal(a, b)
        if type(b) is Reg:
            return hl.relayout_allowed(a, b, c.bitwidth, c.strict)
    return OPEN


def _judge_not_of_kind(c: NotOfKind, lookup: Lookup) -> Verdict:
    value = simplify(c.expr, lookup)
    if value is CONTRADICTION:
        return FAILS
    if type(value) is Reg:
        return not (value.is_splat if c.kind is LayoutKind.SPLAT else value.is_strided)
    return HOLDS if is_value(value) else OPEN


def _judge_store_registers(c: StoreRegisters, lookup: Lookup) -> Verdict:
    value = simplify(c.expr, lookup)
    if value is CONTRADICTION:
        return FAILS
    if type(value) is Reg:
        return hl.stores_whole_registers(value, c.bitwidth)
    return HOLDS if is_value(value) else OPEN


def _judge_register_bits(c: RegisterBits, lookup: Lookup) -> Verdict:
    value = simplify(c.expr, lookup)
    if value is CONTRADICTION:
        return FAILS
    if type(value) is Reg:
        return hl.registers_hold_bits(value, c.bitwidth, c.multiple)
    return HOLDS if is_value(value) else OPEN


def _judge_fully_tiled(c: FullyTiled, lookup: Lookup) -> Verdict:
    value = simplify(c.expr, lookup)
    if value is CONTRADICTION:
        return FAILS
    if type(value) is Reg:
        layout = value.layout
        if not isinstance(layout, fa.TiledLayout):
            return HOLDS
        tiled = len(layout.base_tile_shape)
        if tiled == c.rank:
            return HOLDS
        untiled = c.rank - tiled
        return c.reduced is not None and all(d < untiled for d in c.reduced)
    return HOLDS if is_value(value) else OPEN


def _judge_smem_transfer(c: SmemTransfer, lookup: Lookup) -> Verdict:
    s, r = simplify(c.smem, lookup), simplify(c.reg, lookup)
    if s is CONTRADICTION or r is CONTRADICTION:
        return FAILS
    if type(s) is Smem and type(r) is Reg:
        return smem_transfer_supported(
            s.tiling,
            s.swizzle,
            r.layout,
            c.shape,
            c.strides,
            c.bitwidth,
            c.mode,
            c.txmatrix,
            c.store,
        )
    return OPEN


def _judge_tmem_transfer(c: TmemTransfer, lookup: Lookup) -> Verdict:
    t, r = simplify(c.tmem, lookup), simplify(c.reg, lookup)
    if t is CONTRADICTION or r is CONTRADICTION:
        return FAILS
    if type(t) is Tmem and type(r) is Reg:
        return tmem_transfer_supported(t.layout, r.layout, c.shape, c.bitwidth, c.load)
    return OPEN


def _judge_gmem_transfer(c: GmemTransfer, lookup: Lookup) -> Verdict:
    r = simplify(c.reg, lookup)
    if r is CONTRADICTION:
        return FAILS
    if type(r) is Reg:
        return gmem_transfer_supported(
            r.layout,
            c.shape,
            c.strides,
            c.bitwidth,
            c.mode,
            c.store,
        )
    return HOLDS if is_value(r) else OPEN


def _holds(c: Constraint, lookup: Lookup) -> Verdict:
    return HOLDS


def _judge_one_of(c: OneOf, lookup: Lookup) -> Verdict:
    value = simplify(c.expr, lookup)
    if value is CONTRADICTION:
        return FAILS
    if is_value(value):
        return value in c.allowed
    if len(c.allowed) == 1:
        # One option is the layout imposed outright (``fixed_layout``): it forces the
        # variable, as an equality does, instead of waiting for the search to try it.
        return _equal(value, c.allowed[0])
    return OPEN


def _judge_divides(c: Divides, lookup: Lookup) -> Verdict:
    value = simplify(c.expr, lookup)
    if value is CONTRADICTION:
        return FAILS
    tile = _tile_of(value)
    if tile is None:
        return OPEN if not is_value(value) else HOLDS
    return hl.tiling_divides(tile, c.multiple)


def _judge_minor_tile_divisible(c: MinorTileDivisible, lookup: Lookup) -> Verdict:
    value = simplify(c.expr, lookup)
    if value is CONTRADICTION:
        return FAILS
    if type(value) is Smem:
        tiling = value.tiling
        return not tiling or tiling[-1] % c.divisor == 0
    return OPEN


def _judge_tma_rows(c: TmaRows, lookup: Lookup) -> Verdict:
    value = simplify(c.expr, lookup)
    if value is CONTRADICTION:
        return FAILS
    if type(value) is Smem:
        tiling, swizzle = value.tiling, value.swizzle
        if tiling is None and swizzle is None:
            return True
        if tiling is None and c.cp_async:
            return False  # cp.async swizzles tiles only
        minor = hl.physical_minor(tiling, c.shape, c.strides)
        if minor is None:
            return swizzle is None  # a tiling the strides cannot take: validity says so
        bits = minor * c.bitwidth
        if tiling is not None and bits % 128:
            return False  # the tile's rows are not whole 16-byte rows
        return swizzle is None or bits == swizzle * 8
    return OPEN


def _judge_broadcast(c: Broadcast, lookup: Lookup) -> Verdict:
    a, b = simplify(c.src, lookup), simplify(c.dst, lookup)
    if a is CONTRADICTION or b is CONTRADICTION:
        return FAILS
    if type(a) is Reg and type(b) is Reg:
        if a.is_strided and b.is_strided:
            # What ``is_strided`` says each is.
            a_layout = cast(fa.WGStridedFragLayout, a.layout)
            b_layout = cast(fa.WGStridedFragLayout, b.layout)
            return fa.is_supported_strided_layout_broadcast(a_layout, b_layout, c.dims)
        # The Equal(src, reduce(dst)) beside it carries the real requirement.
        return type(a.layout) is type(b.layout)
    return OPEN


_JUDGES: dict[type, Callable[[Any, Lookup], Verdict]] = {
    Equal: _judge_equal,
    Relayout: _judge_relayout,
    NotOfKind: _judge_not_of_kind,
    SmemTransfer: _judge_smem_transfer,
    TmemTransfer: _judge_tmem_transfer,
    OneOf: _judge_one_of,
    Divides: _judge_divides,
    MinorTileDivisible: _judge_minor_tile_divisible,
    TmaRows: _judge_tma_rows,
    Broadcast: _judge_broadcast,
    StoreRegisters: _judge_store_registers,
    RegisterBits: _judge_register_bits,
    FullyTiled: _judge_fully_tiled,
    # Not a requirement in JAX's order: JAX's own answers break it.
    GmemTransfer: _holds,
}
_COMPLETE_JUDGES = {**_JUDGES, GmemTransfer: _judge_gmem_transfer}


def _equal(a: Expr, b: Expr) -> Verdict:
    if isinstance(a, Var) and is_value(b):
        return Forces(a.id, b)
    if isinstance(b, Var) and is_value(a):
        return Forces(b.id, a)
    if is_value(a) and is_value(b):
        return FAILS
    return OPEN


def _tile_of(value: object) -> tuple[int, ...] | None:
    """The tile a Divides constraint checks; None for values it accepts outright."""
    match value:
        case Smem(tiling=tiling):
            return tiling
        case Reg(layout=fa.TiledLayout() as layout):
            return layout.base_tile_shape
        case Tmem(layout=layout):
            return layout.base_tile_shape
    return None
