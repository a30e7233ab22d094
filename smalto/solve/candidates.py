"""Which values to try for an open variable, best first.

Candidates come from the open constraints, read in the order they were
stated, relayouts first: first the values that would make a relayout the
identity (so no data moves), then the tilings and register layouts that make
each SMEM/TMEM transfer, MMA operand, reduction and broadcast work. Tiled
register layouts come before splat and strided ones, which rarely lead far.
Last, each open variable's default: its widest strided layout, no SMEM tiling,
or the TMEM layout of its allocation. This is the order JAX's pass tries, so
both pick the same answer where several exist.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from functools import lru_cache
from typing import cast

from jax.experimental.mosaic.gpu import fragmented_array as fa

from smalto.constraints.language import (
    Broadcast,
    Constraint,
    Equal,
    OneOf,
    Reduce,
    Relayout,
    SmemTransfer,
    TmemTransfer,
    Var,
    Variable,
)
from smalto.hw import layouts as hl
from smalto.hw.transfers import tmem_transfer_supported
from smalto.hw.values import Const, Reg, Smem, Tmem
from smalto.solve.evaluate import Contradiction, is_value, simplify

Candidate = tuple[int, Const]  # (variable, value)


def is_candidate_source(c: Constraint) -> bool:
    return isinstance(c, (Relayout, SmemTransfer, TmemTransfer, Equal, OneOf, Broadcast))


def from_constraint(
    c: Constraint,
    lookup: Callable[[int], Const | None],
    variables: list[Variable],
    divides: Callable[[int], tuple[int, ...] | None],
    arch: tuple[int, int],
) -> Iterator[Candidate]:
    match c:
        case Relayout(source=source, target=target):
            a, b = simplify(source, lookup), simplify(target, lookup)
            if isinstance(a, Var) and isinstance(b, Reg):
                yield a.id, b
            elif isinstance(b, Var) and isinstance(a, Reg):
                yield b.id, a
        case SmemTransfer(smem=smem, reg=reg):
            s, r = simplify(smem, lookup), simplify(reg, lookup)
            if isinstance(s, Var) and isinstance(r, Reg):
                yield from _tilings_for_transfer(variables[s.id], r, divides(s.id))
            elif isinstance(r, Var) and isinstance(s, Smem):
                yield from _registers_for_transfer(variables[r.id], s, arch)
        case TmemTransfer(tmem=tmem, reg=reg):
            t, r = simplify(tmem, lookup), simplify(reg, lookup)
            if isinstance(r, Var) and isinstance(t, Tmem):
                yield from _registers_for_tmem(r.id, t, c)
            elif isinstance(t, Var) and isinstance(r, Reg):
                yield from _tmem_for_registers(t.id, r, c)
        case Equal(lhs=lhs, rhs=rhs):
            a, b = simplify(lhs, lookup), simplify(rhs, lookup)
            if isinstance(b, Reg) and isinstance(a, Reduce) and isinstance(a.expr, Var):
                a, b = b, a
            if isinstance(a, Reg) and isinstance(b, Reduce) and isinstance(b.expr, Var):
                large = variables[b.expr.id]
                for layout in _inputs_of_reduction(a, large.shape, b.axes, b.keep_dims):
                    yield large.id, layout
        case OneOf(expr=expr, allowed=allowed):
            var = simplify(expr, lookup)
            if isinstance(var, Var):
                for value in allowed:
                    yield var.id, value
        case Broadcast(src=src, dst=dst, dims=dims):
            a, b = simplify(src, lookup), simplify(dst, lookup)
            if isinstance(a, Reg) and isinstance(b, Var):
                yield from _broadcast_targets(a, variables[b.id], dims)


def _tilings_for_transfer(
    ref: Variable, reg: Reg, multiple: tuple[int, ...] | None
) -> Iterator[Candidate]:
    """SMEM transforms (widest swizzle first) for a ref a tiled register value moves through.

    Each tile (8, 8·s/bitwidth) comes with its swizzle s. Where the ref's
    views need the tiling to divide ``multiple``, the tile is cut down to it
    and the swizzle follows the cut tile's minor width; a cut tile narrower
    than 32 bytes is not offered (no swizzle fits it).
    """
    if not reg.is_tiled or len(ref.shape) < 2 or ref.bitwidth is None:
        return
    seen: set[Smem] = set()
    bitwidth = ref.bitwidth
    for tiling, swizzle, transposed in _swizzled_tilings(ref):
        if multiple is not None:
            tiling = hl.merge_multiples(multiple, tiling)
            minor_index = 0 if transposed else 1
            if len(tiling) <= minor_index:
                continue  # no minor tile left to swizzle
            swizzle = tiling[minor_index] * bitwidth // 8
            if swizzle not in hl.SWIZZLES:
                continue
        value = Smem(tiling, swizzle)
        if value not in seen:
            seen.add(value)
            yield ref.id, value


def _swizzled_tilings(ref: Variable) -> Iterator[tuple[tuple[int, ...], int, bool]]:
    """(tile, swizzle, whether the ref is transposed) for each swizzle that fits the ref."""
    strides = ref.strides
    if strides is None or ref.bitwidth is None:
        return
    rank = len(strides)
    order = sorted(range(rank), key=lambda d: (strides[d], d))
    # Only the two minor-most dimensions are tiled.
    if {order[0], order[1]} != {rank - 1, rank - 2}:
        return
    minor, second = ref.shape[order[0]], ref.shape[order[1]]
    if second % 8:
        return
    transposed = order[0] != rank - 1
    for swizzle in hl.SWIZZLES:
        elems = 8 * swizzle // ref.bitwidth
        if minor % elems == 0:
            yield ((elems, 8) if transposed else (8, elems)), swizzle, transposed


def _registers_for_transfer(
    reg: Variable, smem: Smem, arch: tuple[int, int]
) -> Iterator[Candidate]:
    if smem.tiling is None:
        layout = hl.default_strided(reg.shape, reg.bitwidth)
        if layout is not None:
            yield reg.id, layout
        return
    if arch != (9, 0):  # Blackwell: the larger TCGEN05 tiles first
        yield reg.id, Reg(hl.TCGEN05)
        yield reg.id, Reg(hl.TCGEN05_TRANSPOSED)
    yield reg.id, Reg(hl.WGMMA)
    yield reg.id, Reg(hl.WGMMA_TRANSPOSED)


def _registers_for_tmem(var: int, tmem: Tmem, c: TmemTransfer) -> Iterator[Candidate]:
    for value in _tmem_register_values(tmem, c.shape, c.bitwidth):
        yield var, value


@lru_cache(maxsize=1024)
def _tmem_register_values(tmem: Tmem, shape: tuple[int, ...], bitwidth: int) -> tuple[Reg, ...]:
    """The register layouts a TMEM ref in ``tmem`` loads into or stores from, in order.

    Made once per ref type: the search asks at every decision while the
    registers are open, and each question would build JAX layouts afresh.
    """
    columns = shape[1]
    layouts = [hl.TCGEN05, hl.tmem_as_tiled(tmem.layout), hl.TMEM_NATIVE, hl.WGMMA]
    if columns % 16 == 0:
        layouts.append(hl.m64_collective(columns))
    return tuple(
        Reg(layout)
        for layout in layouts
        if tmem_transfer_supported(tmem.layout, layout, shape, bitwidth)
    )


def _tmem_for_registers(var: int, reg: Reg, c: TmemTransfer) -> Iterator[Candidate]:
    if not reg.is_tiled:
        return
    columns = c.shape[1]
    for packing in dict.fromkeys([32 // c.bitwidth, 1]):
        layouts = [hl.tmem_default(packing).layout]
        if columns % 16 == 0 and packing <= columns // 2:
            layouts.append(hl.tmem_half_lane(columns, packing))
        if columns % 16 == 0 and packing <= 8:
            layouts.append(hl.tmem_m64_collective(columns, packing))
        for layout in layouts:
            if tmem_transfer_supported(layout, reg.layout, c.shape, c.bitwidth):
                yield var, Tmem(layout)


def _inputs_of_reduction(
    small: Reg, shape: tuple[int, ...], axes: tuple[int, ...], keep_dims: bool
) -> Iterator[Reg]:
    """Layouts of the input whose reduction over ``axes`` is ``small``."""
    layout = small.layout
    if isinstance(layout, fa.WGSplatFragLayout):
        yield hl.splat(shape)
        return
    if isinstance(layout, fa.WGStridedFragLayout):
        yield hl.strided(shape, layout.vec_size)
        return
    if keep_dims:
        return
    options = [hl.WGMMA, hl.WGMMA_TRANSPOSED, hl.TCGEN05, hl.TCGEN05_TRANSPOSED, hl.TMEM_NATIVE]
    if shape[-1] % 16 == 0:
        options.append(hl.m64_collective(shape[-1]))
    # The reduced layout itself fits when only untiled dims are reduced; it
    # comes last since the named layouts are the likelier answers.
    options.append(layout)
    for option in options:
        tile_rank = len(option.base_tile_shape)
        if tile_rank > len(shape):
            continue
        untiled = len(shape) - tile_rank
        if hl.reduce_tiled(option, tuple([a - untiled for a in axes if a >= untiled])) == layout:
            yield Reg(option)


def _broadcast_targets(src: Reg, dst: Variable, dims: tuple[int, ...]) -> Iterator[Candidate]:
    layout = src.layout
    if isinstance(layout, fa.WGSplatFragLayout):
        yield dst.id, hl.splat(dst.shape)
    elif isinstance(layout, fa.WGStridedFragLayout):
        target = hl.strided(dst.shape, layout.vec_size)
        strided = cast(fa.WGStridedFragLayout, target.layout)  # what ``hl.strided`` makes
        if fa.is_supported_strided_layout_broadcast(layout, strided, dims):
            yield dst.id, target


def default_value(variable: Variable, tmem_default: Tmem | None) -> Const | None:
    """What an otherwise unconstrained variable becomes."""
    from smalto.program.view import Kind

    if variable.kind == Kind.VECTOR:
        return hl.default_strided(variable.shape, variable.bitwidth)
    if variable.kind == Kind.SMEM:
        return hl.UNTILED
    return tmem_default


def is_preferred(value: Const) -> bool:
    """Splat and strided register layouts are tried after everything else."""
    return not isinstance(value, Reg) or value.is_tiled


__all__ = [
    "Candidate",
    "Contradiction",
    "default_value",
    "from_constraint",
    "is_candidate_source",
    "is_preferred",
    "is_value",
]
