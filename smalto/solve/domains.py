"""Finite domains: every value a variable could reasonably take.

The first search follows the order of JAX's pass, so both agree; but its
candidates come only from the constraints around each variable and it can
wander for minutes on kernels it cannot solve. The domain search that backs it
up tries, for each variable, everything in its finite domain: the layouts the
kernel names, every named hardware layout that fits, the strided and splat
layouts of its shape; for SMEM refs every swizzled tiling and none; for TMEM
refs the layouts of each packing. Over these domains it is complete: it finds
an assignment or proves there is none.

Where that search finds nothing, a widened one (``search.Widened``)
offers more of what the lowering accepts: the layouts tiling only the minor
dim (``hl.minor_only``), and every register domain closed under the
expressions that link variables (``close``): the source of a broadcast takes
the reductions of the result's layouts, a reduction's result those of its
input's, a reshape's those its input reshapes to. So a (4, 64) scale
broadcast to a (4, 64, 128) value in WGMMA lifted to rank 3 is offered that
layout reduced over dim 2.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable
from functools import cache

from jax.experimental.mosaic.gpu import fragmented_array as fa

from smalto.constraints.language import (
    Constraint,
    Equal,
    Expr,
    Fixed,
    OneOf,
    Relayout,
    Var,
    Variable,
    expressions_of,
)
from smalto.hw import layouts as hl
from smalto.hw.values import UNTILED, Const, Reg, Smem, Tmem
from smalto.program.view import Kind
from smalto.solve.evaluate import Contradiction, simplify

_NAMED_TILED = (
    hl.WGMMA,
    hl.WGMMA_TRANSPOSED,
    hl.WGMMA_ROW,
    hl.WGMMA_COL,
    hl.WGMMA_8BIT,
    fa.WGMMA_LAYOUT_UPCAST_2X,
    fa.WGMMA_LAYOUT_UPCAST_4X,
    hl.TCGEN05,
    hl.TCGEN05_TRANSPOSED,
    hl.TCGEN05_ROW,
    hl.TCGEN05_COL,
    hl.TMEM_NATIVE,
    hl.TMA_INDICES,
    hl.TMA_INDICES_4,
)


def constants_in(constraints: Iterable[Constraint], fixed: Iterable[Fixed]) -> list[Const]:
    """Every layout value the kernel itself mentions, in order of appearance."""
    seen: dict[Const, None] = {}
    for f in fixed:
        seen.setdefault(f.value)
    for c in constraints:
        if type(c) is OneOf:
            for value in c.allowed:
                seen.setdefault(value)
        for e in expressions_of(c):
            while not isinstance(e, (Reg, Smem, Tmem)) and hasattr(e, "expr"):
                e = e.expr
            if isinstance(e, (Reg, Smem, Tmem)):
                seen.setdefault(e)
    return list(seen)


def domain(
    variable: Variable,
    valid: Callable[[Const], bool],
    mentioned: list[Const],
    multiple: tuple[int, ...] | None = None,
    min_rank: int | None = None,
    extra: tuple[fa.TiledLayout, ...] = (),
    widened: bool = False,
) -> list[Const]:
    """The variable's candidate values, most preferred first, each one ``valid`` accepts.

    ``multiple`` is what the tiling of an SMEM ref must divide (offsets of its
    views): the swizzled tilings are also offered cut down to it. ``min_rank``
    is the lowest rank of the values sharing the variable's layout (a
    ``vector.extract`` gives its source and result one layout). ``extra``: more
    tiled layouts to offer like the named ones (``wide_layouts``). ``widened``:
    the layouts tiling only the minor dim too (``minor_only_layouts``).
    """
    match variable.kind:
        case Kind.VECTOR:
            values = _register_values(variable, mentioned, min_rank, extra, widened)
        case Kind.SMEM:
            values = [v for v in mentioned if type(v) is Smem and v != UNTILED]
            values += _smem_values(variable.bitwidth, len(variable.shape), multiple)
        case _:
            values = _tmem_values(variable, mentioned)
    return [v for v in dict.fromkeys(values) if valid(v)]


def minor_only_layouts(shape: tuple[int, ...], bitwidth: int | None) -> list[Reg]:
    """The layouts tiling only the minor dim (``hl.minor_only``) that fit a value of this
    shape and element width.

    From 1 element a thread up to 16 bytes, in whole bytes, where 128 threads'
    worth divides the minor dim.
    """
    if not shape or bitwidth is None:
        return []
    out: list[Reg] = []
    vec = 1
    while vec * bitwidth <= 128:
        if (vec * bitwidth) % 8 == 0 and shape[-1] % (128 * vec) == 0:
            out.append(Reg(hl.minor_only(len(shape), vec)))
        vec *= 2
    return out


def tmem_native_layouts(shape: tuple[int, ...], bitwidth: int | None) -> list[Reg]:
    """TMEM_NATIVE with each vector length that fits (``fa.tmem_native_layout``): one TMEM
    row a thread, as a TMEM load gives it, in vectors of up to 128 bits. The lowering
    converts between them, and a wider vector stores to swizzled SMEM where the default
    one has no plan (a reducing TMEM load's result stored as bf16)."""
    if len(shape) != 2 or bitwidth is None or shape[0] % hl.TMEM_ROWS:
        # A thread holds a TMEM row: none fits fewer rows than TMEM has (so none is built).
        return []
    out: list[Reg] = []
    vec = 1
    while vec * bitwidth <= 128:
        layout = Reg(hl.tmem_native(vec))
        if layout.layout != fa.TMEM_NATIVE_LAYOUT and hl.fits(layout, shape):
            out.append(layout)
        vec *= 2
    return out


def close(
    domains: dict[int, list[Const]],
    constraints: Iterable[Constraint],
    root: list[int],
    fits: Callable[[int, Const], bool],
    canonical: Callable[[Const, Const], Const] = lambda value, default: value,
) -> None:
    """Closes the register domains under the expressions between variables (in place).

    For each ``Equal(Var a, expr(Var b))`` (a broadcast's source and its
    result reduced, a reduction's result and its input reduced, a reshape)
    and each relayout between a producer and its consumer (either way), every
    tiled layout of ``b``'s domain, carried through ``expr``, joins ``a``'s
    domain if it fits, before its strided and splat layouts. Repeated until
    nothing is added: a chain of broadcasts carries a layout all along.
    ``canonical(value, value)``: the one object for a value added (``dict.setdefault``
    of the caller's table), where the caller keeps one.
    """
    links: list[tuple[int, Expr, int]] = []
    for c in constraints:
        if type(c) is Equal:
            pairs = ((c.lhs, c.rhs), (c.rhs, c.lhs))
        elif type(c) is Relayout and type(c.source) is Var and type(c.target) is Var:
            # A producer and its consumer: each may take the other's layouts.
            pairs = ((c.source, c.target), (c.target, c.source))
        else:
            continue
        for near, far in pairs:
            source = _only_var(far)
            if type(near) is Var and source is not None and root[source] != root[near.id]:
                links.append((root[near.id], far, root[source]))
    links = [link for link in links if link[0] in domains and link[2] in domains]
    if not links:
        return
    # What a link carries: a register domain's tiled layouts, which come first in it
    # (``_first_untiled``). They only grow, at their end: each link reads on from where
    # it stopped, so each value goes through each link once.
    # (Each slot once, however many links it is on.)
    ends = dict.fromkeys(slot for target, _, source in links for slot in (target, source))
    tiled: dict[int, list[Const]] = {
        slot: [v for v in domains[slot] if type(v) is Reg and v.is_tiled] for slot in ends
    }
    seen = {target: set(domains[target]) for target in dict.fromkeys(t for t, _, _ in links)}
    added: dict[int, list[Const]] = {}
    carried = [0] * len(links)
    changed = True
    while changed:
        changed = False
        for index, (target, expr, source) in enumerate(links):
            values = tiled[source]
            start = carried[index]
            if start == len(values):
                continue
            carried[index] = len(values)
            if type(expr) is Var and seen[target].issuperset(values[start:]):
                continue  # (a producer and its consumer alike: the target has them all)
            for value in values[start:]:
                if type(expr) is Var:
                    # A producer and its consumer: the layout itself.
                    out: Expr | Contradiction = value
                else:

                    def lookup(v: int, value: Const = value, source: int = source) -> Const | None:
                        return value if root[v] == source else None

                    out = simplify(expr, lookup)
                if type(out) is Reg and out not in seen[target] and fits(target, out):
                    out = canonical(out, out)
                    seen[target].add(out)
                    tiled[target].append(out)
                    added.setdefault(target, []).append(out)
                    changed = True
    for target, values in added.items():
        domain = domains[target]
        at = _first_untiled(domain)
        domain[at:at] = values


def _only_var(expr: object) -> int | None:
    """The variable an expression is built on (through its ``expr`` chain), if any."""
    while type(expr) is not Var and hasattr(expr, "expr"):
        expr = expr.expr
    return expr.id if type(expr) is Var else None


def _first_untiled(values: list[Const]) -> int:
    """Where the strided and splat layouts start in a register domain."""
    return next(
        (i for i, v in enumerate(values) if type(v) is Reg and not v.is_tiled),
        len(values),
    )


def wide_layouts(gmem_bitwidths: Iterable[int]) -> tuple[fa.TiledLayout, ...]:
    """Layouts whose optimized GMEM transfers coalesce where WGMMA's do not.

    A 16-bit row in WGMMA moves 16 bytes, half a sector; ``wide_rows`` moves
    32. Offered (with its row and column reductions) in kernels that move
    16-bit values to or from GMEM, since the complete search requires those
    transfers to coalesce (``GmemTransfer``).
    """
    out: list[fa.TiledLayout] = []
    for bitwidth in sorted(set(gmem_bitwidths)):
        if bitwidth == 16:
            wide = hl.wide_rows(bitwidth)
            out += [wide, hl.reduce_tiled(wide, (1,)), hl.reduce_tiled(wide, (0,))]
    return tuple(out)


def _register_values(
    variable: Variable,
    mentioned: list[Const],
    min_rank: int | None,
    extra: tuple[fa.TiledLayout, ...],
    widened: bool,
) -> list[Const]:
    """The kernel's own tiled layouts, the hardware's (``_hardware_register_values``), the
    kernel's own strided layouts of the variable's shape, and the splat."""
    shape = variable.shape
    values: list[Const] = [v for v in mentioned if type(v) is Reg and v.is_tiled]
    tiled, strided = _hardware_register_values(shape, variable.bitwidth, min_rank, extra, widened)
    values += tiled
    values += strided
    values += [
        v
        for v in mentioned
        if type(v) is Reg
        and isinstance(v.layout, fa.WGStridedFragLayout)
        and v.layout.shape == shape
    ]
    values.append(hl.splat(shape))
    return values


@cache
def _hardware_register_values(
    shape: tuple[int, ...],
    bitwidth: int | None,
    min_rank: int | None,
    extra: tuple[fa.TiledLayout, ...],
    widened: bool,
) -> tuple[tuple[Reg, ...], tuple[Reg, ...]]:
    """The named tiled layouts (and ``extra``) that may lay out a value of this shape and
    element width, then its strided layouts; a function of the type alone, so made once
    per type in a process (as the layouts themselves are, ``hl``)."""
    named = _NAMED_TILED + extra
    # Only named layouts whose tile covers the vector's two minor dims (all of
    # them for a 1-D vector): the lowering of reductions, broadcasts and stores
    # takes no row/column tile of a larger vector, although the constraints
    # alone would allow it. Where a lower-rank value shares the layout (an
    # extract of a leading index), its tilings are offered too.
    rank = len(shape)
    low = min(rank, 2)
    tiled = [Reg(layout) for layout in named if low <= len(layout.base_tile_shape) <= rank]
    if rank >= 2 and shape[-1] % 16 == 0:
        tiled.append(Reg(hl.m64_collective(shape[-1])))
    # Whether these move to and from GMEM is the complete search's to check
    # (``GmemTransfer``), with the value's own element type.
    if min_rank is not None and min_rank < low:
        tiled += [Reg(layout) for layout in named if min_rank <= len(layout.base_tile_shape) < low]
    tiled += _tiled_at_own_rank(shape, named)
    if widened:
        tiled += [*minor_only_layouts(shape, bitwidth), *tmem_native_layouts(shape, bitwidth)]
    strided: list[Reg] = []
    size = math.prod(shape)
    if bitwidth is not None:
        # Vectors of at most 64 bits that fill whole bytes (sub-byte elements too).
        vec = 64 // bitwidth
        while vec and (vec * bitwidth) % 8 == 0:
            if size % (vec * hl.WARPGROUP_SIZE) == 0:
                strided.append(hl.strided(shape, vec))
            vec //= 2
    return tuple(tiled), tuple(strided)


def _tiled_at_own_rank(shape: tuple[int, ...], named: tuple[fa.TiledLayout, ...]) -> list[Reg]:
    """Named layouts made to tile every dim of ``shape``: lifted to its rank, and
    with size-1 tiles along its size-1 dims.

    A broadcast result and a reduction source must be tiled at their own rank
    (``FullyTiled``): a (B, M, N) broadcast of a WGMMA tile takes WGMMA lifted
    to rank 3, and the (N, 1) result of a keep-dims reduction of a WGMMA value
    takes WGMMA with a size-1 tile along dim 1 (it reduces to WGMMA_ROW).
    """
    rank = len(shape)
    if rank < 2:
        return []
    full: list[fa.TiledLayout] = []
    values: list[Reg] = []
    for layout in named:
        if len(layout.base_tile_shape) < 2:
            continue
        lifted = hl.lifted(layout, rank)
        if lifted is not None:
            full.append(lifted)
            if lifted is not layout:  # (a layout of this rank is offered already)
                values.append(Reg(lifted))
    for axis, size in enumerate(shape):
        if size == 1:
            values += [Reg(hl.keep_dims(layout, axis)) for layout in full]
    return values


@cache
def _smem_values(
    bitwidth: int | None, rank: int, multiple: tuple[int, ...] | None
) -> tuple[Smem, ...]:
    """Each MMA-style tile with its swizzle and without (cut down to ``multiple`` too), then
    no tiling; a function of the type alone, made once per type in a process.

    Validity (applied by ``domain``) drops the pairs the ref cannot take.
    """
    values: list[Smem] = []
    if bitwidth is not None and rank >= 2:
        for width in (*hl.SWIZZLES, 16):
            elems = 8 * width // bitwidth
            swizzle = width if width in hl.SWIZZLES else None
            for tiling in ((8, elems), (elems, 8)):
                values.append(Smem(tiling, swizzle))
                values.append(Smem(tiling, None))
                merged = hl.merge_multiples(multiple, tiling) if multiple is not None else ()
                if merged:
                    for s in hl.SWIZZLES:
                        values.append(Smem(merged, s))
                    values.append(Smem(merged, None))
    values.append(UNTILED)
    return tuple(values)


def _tmem_values(variable: Variable, mentioned: list[Const]) -> list[Const]:
    values: list[Const] = [v for v in mentioned if isinstance(v, Tmem)]
    shape, bitwidth = variable.shape, variable.bitwidth or 32
    if len(shape) != 2:
        return values
    columns = shape[1]
    for packing in dict.fromkeys([32 // bitwidth, 1]):
        values.append(hl.tmem_default(packing))
        if columns % 16 == 0 and packing <= columns // 2:
            values.append(Tmem(hl.tmem_half_lane(columns, packing)))
        if columns % 16 == 0 and packing <= 8:
            values.append(Tmem(hl.tmem_m64_collective(columns, packing)))
    return values
