"""Evaluating expressions and constraints under a partial assignment.

``simplify`` rewrites an expression as far as the known values allow: to a
value, to an unknown variable, or to an expression over one. ``judge`` says
what a constraint tells us now: it holds, it fails, it forces a variable, or
nothing yet.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from jax.experimental.mosaic.gpu import fragmented_array as fa

from smalto.constraints import (
    Broadcast,
    Collapse,
    Constraint,
    Divides,
    Equal,
    Expr,
    LayoutKind,
    MinorTileDivisible,
    MmaTiling,
    NotOfKind,
    Reduce,
    Relayout,
    Reshape,
    SmemTransfer,
    TmemTransfer,
    Transpose,
    Var,
)
from smalto.hw import layouts as hl
from smalto.hw.transfers import smem_transfer_supported, tmem_transfer_supported
from smalto.hw.values import Const, Reg, Smem, Tmem


class Contradiction:
    """An expression with no possible value (e.g. a tiling a transpose breaks)."""


CONTRADICTION = Contradiction()

# What a variable currently is: its value, or None while unknown.
Lookup = Callable[[int], Const | None]


def simplify(expr: Expr, lookup: Lookup) -> Expr | Contradiction:
    match expr:
        case Var(id=v):
            value = lookup(v)
            return expr if value is None else value
        case Reg() | Smem() | Tmem():
            return expr
        case Reduce(expr=inner):
            return _simplify_reduce(expr, simplify(inner, lookup))
        case Reshape(expr=inner):
            return _simplify_reshape(expr, simplify(inner, lookup))
        case Transpose(expr=inner):
            return _simplify_transpose(expr, simplify(inner, lookup))
        case Collapse(expr=inner):
            return _simplify_collapse(expr, simplify(inner, lookup))
    raise TypeError(expr)


def _simplify_reduce(expr: Reduce, inner: Expr | Contradiction) -> Expr | Contradiction:
    if isinstance(inner, Contradiction):
        return inner
    if isinstance(inner, Reg):
        out = hl.reduced_layout(inner, expr.axes, expr.rank, expr.keep_dims)
        if not isinstance(out, hl.Stuck):
            return out
    return Reduce(inner, expr.axes, expr.rank, expr.keep_dims)


def _simplify_reshape(expr: Reshape, inner: Expr | Contradiction) -> Expr | Contradiction:
    if isinstance(inner, Contradiction):
        return inner
    if isinstance(inner, Reg):
        out = hl.reshaped_layout(inner, expr.source_shape, expr.target_shape)
        if not isinstance(out, hl.Stuck):
            return out
    return Reshape(inner, expr.source_shape, expr.target_shape)


def _simplify_transpose(expr: Transpose, inner: Expr | Contradiction) -> Expr | Contradiction:
    if isinstance(inner, Contradiction):
        return inner
    if isinstance(inner, Smem):
        if inner.tiling is None:
            return inner
        tiling = hl.transposed_tiling(inner.tiling, expr.permutation)
        return CONTRADICTION if tiling is None else Smem(tiling)
    return Transpose(inner, expr.permutation)


def _simplify_collapse(expr: Collapse, inner: Expr | Contradiction) -> Expr | Contradiction:
    if isinstance(inner, Contradiction):
        return inner
    if isinstance(inner, Smem):
        if inner.tiling is None:
            return inner
        tiling = hl.collapsed_tiling(inner.tiling, expr.source_shape, expr.reassociation)
        return CONTRADICTION if tiling is None else Smem(tiling)
    if isinstance(inner, (Reg, Tmem)):
        return CONTRADICTION  # collapsing only applies to SMEM refs
    return Collapse(inner, expr.source_shape, expr.reassociation)


def is_value(expr: object) -> bool:
    return isinstance(expr, (Reg, Smem, Tmem))


# --- judging constraints ---------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Forces:
    """The constraint holds exactly when ``var`` takes ``value``."""

    var: int
    value: Const


HOLDS = True
FAILS = False
OPEN = None  # nothing to conclude yet
Verdict = bool | None | Forces


def judge(c: Constraint, lookup: Lookup) -> Verdict:
    match c:
        case Equal(lhs=lhs, rhs=rhs):
            a, b = simplify(lhs, lookup), simplify(rhs, lookup)
            if isinstance(a, Contradiction) or isinstance(b, Contradiction):
                return FAILS
            if a == b:
                return HOLDS
            return _equal(a, b)
        case Relayout(source=source, target=target, bitwidth=bitwidth, strict=strict):
            a, b = simplify(source, lookup), simplify(target, lookup)
            if isinstance(a, Contradiction) or isinstance(b, Contradiction):
                return FAILS
            if a == b:
                return HOLDS
            if strict and isinstance(a, Reg) and not a.is_splat:
                # Only splats change layout between producer and consumer.
                return _equal(a, b)
            if isinstance(a, Reg) and isinstance(b, Reg):
                return hl.relayout_allowed(a, b, bitwidth, strict)
            return OPEN
        case NotOfKind(expr=expr, kind=kind):
            value = simplify(expr, lookup)
            if isinstance(value, Contradiction):
                return FAILS
            if isinstance(value, Reg):
                return not (value.is_splat if kind is LayoutKind.SPLAT else value.is_strided)
            return HOLDS if is_value(value) else OPEN
        case SmemTransfer(smem=smem, reg=reg):
            s, r = simplify(smem, lookup), simplify(reg, lookup)
            if isinstance(s, Contradiction) or isinstance(r, Contradiction):
                return FAILS
            if isinstance(s, Smem) and isinstance(r, Reg):
                return smem_transfer_supported(
                    s.tiling, r.layout, c.shape, c.strides, c.bitwidth, c.mode
                )
            return OPEN
        case TmemTransfer(tmem=tmem, reg=reg):
            t, r = simplify(tmem, lookup), simplify(reg, lookup)
            if isinstance(t, Contradiction) or isinstance(r, Contradiction):
                return FAILS
            if isinstance(t, Tmem) and isinstance(r, Reg):
                return tmem_transfer_supported(t.layout, r.layout, c.shape, c.bitwidth)
            return OPEN
        case MmaTiling(expr=expr, bitwidth=bitwidth, allow_unswizzled=unswizzled):
            value = simplify(expr, lookup)
            if isinstance(value, Contradiction):
                return FAILS
            if isinstance(value, Smem):
                return value.tiling in hl.mma_tilings(bitwidth, unswizzled)
            return OPEN
        case Divides(expr=expr, multiple=multiple):
            value = simplify(expr, lookup)
            if isinstance(value, Contradiction):
                return FAILS
            tile = _tile_of(value)
            if tile is None:
                return OPEN if not is_value(value) else HOLDS
            return hl.tiling_divides(tile, multiple)
        case MinorTileDivisible(expr=expr, divisor=divisor):
            value = simplify(expr, lookup)
            if isinstance(value, Contradiction):
                return FAILS
            if isinstance(value, Smem):
                return not value.tiling or value.tiling[-1] % divisor == 0
            return OPEN
        case Broadcast(src=src, dst=dst, dims=dims):
            a, b = simplify(src, lookup), simplify(dst, lookup)
            if isinstance(a, Contradiction) or isinstance(b, Contradiction):
                return FAILS
            if isinstance(a, Reg) and isinstance(b, Reg):
                if a.is_strided and b.is_strided:
                    return fa.is_supported_strided_layout_broadcast(a.layout, b.layout, dims)
                # The Equal(src, reduce(dst)) beside it carries the real requirement.
                return type(a.layout) is type(b.layout)
            return OPEN
    raise TypeError(c)


def _equal(a: Expr, b: Expr) -> Verdict:
    if isinstance(a, Var) and is_value(b):
        return Forces(a.id, b)  # type: ignore[arg-type]
    if isinstance(b, Var) and is_value(a):
        return Forces(b.id, a)  # type: ignore[arg-type]
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
