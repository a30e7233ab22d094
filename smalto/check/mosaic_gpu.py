"""Requirements of `mosaic_gpu` ops on registers and SMEM: transfers, casts, MMAs.

The solver's statement: ``smalto.rules.mosaic_gpu`` (``vector_concat``:
``smalto.rules.concat``; policy: docs/rules_and_checks.md).
"""

from __future__ import annotations

from typing import cast

from jax._src.lib.mlir import ir
from jax.experimental.mosaic.gpu import fragmented_array as fa
from jax.experimental.mosaic.gpu.mma import MMALayouts

from smalto.check.core import IN, LAYOUTS, OUT, TRANSFORMS, Checker, bool_attr, ints, rule, untiled
from smalto.check.decode import attribute_value, transforms_valid
from smalto.check.mma import mma_operand
from smalto.check.names import describe, describe_apart
from smalto.check.relayouts import relayout_allowed
from smalto.check.semantics import reduce_layout, swap, transposed
from smalto.check.smem import Transforms
from smalto.check.transfers import gmem_transfer_problem, smem_transfer_problem
from smalto.hw import layouts as hl
from smalto.hw.values import Reg
from smalto.program.view import Kind, Op


def _optimized(op: Op) -> bool:
    """jax 0.12.0.1: a transfer that does not say is optimized (no fallback)."""
    return bool_attr(op, "optimized") is not False


def _smem_transfer(
    c: Checker, op: Op, smem: int, reg: tuple[int, int], *, txmatrix: bool, store: bool
) -> None:
    ref = c.value(op, IN, smem)
    if ref.kind != Kind.SMEM:
        return
    transforms, registers = c.smem(op, IN, smem), c.reg(op, *reg)
    if transforms is None or registers is None or ref.strides is None or ref.bitwidth is None:
        return
    optimized = _optimized(op)
    problem = smem_transfer_problem(
        transforms,
        registers.layout,
        ref.shape,
        ref.strides,
        ref.bitwidth,
        optimized=optimized,
        txmatrix=txmatrix,
        arch=c.arch,
        store=store,
    )
    if problem is not None:
        c.report(
            op,
            f"no {'optimized' if optimized else 'unoptimized'} transfer between registers in "
            f"{describe(registers)} and the SMEM ref {ref.type} {describe(transforms)} "
            f"({problem})",
        )


def _gmem_transfer(c: Checker, op: Op, gmem: int, reg: tuple[int, int], *, store: bool) -> None:
    ref = c.value(op, IN, gmem)
    if ref.kind != Kind.OTHER or ref.strides is None or ref.bitwidth is None:
        return
    if not isinstance(ref.type, ir.MemRefType) or ir.MemRefType(ref.type).memory_space is not None:
        return
    registers = c.reg(op, *reg)
    if registers is None:
        return
    optimized = _optimized(op)
    problem = gmem_transfer_problem(
        registers.layout,
        ref.shape,
        ref.strides,
        ref.bitwidth,
        optimized=optimized,
        arch=c.arch,
        store=store,
    )
    if problem is not None:
        c.report(
            op,
            f"no {'optimized' if optimized else 'unoptimized'} transfer between registers in "
            f"{describe(registers)} and the "
            f"GMEM ref {ref.type} ({problem})",
        )


@rule("mosaic_gpu.vector_load")
def _vector_load(c: Checker, op: Op) -> None:
    c.not_kinds(op, OUT, 0, splat=True, strided=False)
    _smem_transfer(c, op, smem=0, reg=(OUT, 0), txmatrix=True, store=False)
    _gmem_transfer(c, op, gmem=0, reg=(OUT, 0), store=False)


@rule("mosaic_gpu.vector_store")
def _vector_store(c: Checker, op: Op) -> None:
    _smem_transfer(c, op, smem=1, reg=(IN, 0), txmatrix=True, store=True)
    _gmem_transfer(c, op, gmem=1, reg=(IN, 0), store=True)


@rule("mosaic_gpu.async_store_smem")
def _async_store_smem(c: Checker, op: Op) -> None:
    c.not_kinds(op, IN, 0, splat=True, strided=True)
    transforms = c.smem(op, IN, 1)
    if transforms is not None and (transforms.tiling is None or transforms.swizzle is None):
        # store_tiled_async takes one tile transform, and hands its schedule
        # no swizzle for an unswizzled ref ("Only swizzled transfers supported").
        c.report(
            op,
            "the lowering stores asynchronously only into tiled and swizzled refs, not "
            f"{describe(transforms)}",
        )
    # Plain st.async stores only: no stmatrix path.
    _smem_transfer(c, op, smem=1, reg=(IN, 0), txmatrix=False, store=True)
    value = c.reg(op, IN, 0)
    if value is None or not isinstance(value.layout, fa.TiledLayout):
        return
    # The lowering stores each register with one st.async of 32 or 64 bits,
    # from threads that each own distinct elements.
    layout = value.layout
    if any(isinstance(d, fa.Replicated) for d in (*layout.warp_dims, *layout.lane_dims)):
        c.report(op, f"the lowering cannot store {describe(value)}: it replicates elements")
    bits = layout.vector_length * (c.value(op, IN, 0).bitwidth or 0)
    if bits not in (32, 64):
        c.report(
            op,
            f"the lowering stores 32- or 64-bit registers; {describe(value)} has {bits}-bit ones",
        )


@rule("mosaic_gpu.multimem_load_reduce", "mosaic_gpu.broadcasted_iota")
def _not_splat_result(c: Checker, op: Op) -> None:
    c.not_kinds(op, OUT, 0, splat=True, strided=False)


@rule("mosaic_gpu.optimization_barrier")
def _optimization_barrier(c: Checker, op: Op) -> None:
    for i, vid in enumerate(op.operands):
        value = c.program.values[vid]
        if value.kind != Kind.VECTOR:
            continue
        c.same(op, [(IN, i), (OUT, i)], "a value passes an optimization barrier unchanged")
        layout = c.reg(op, IN, i)
        bitwidth = value.bitwidth or 32
        if layout is not None and not hl.registers_hold_bits(layout, bitwidth, 32):
            # fa.optimization_barrier hands registers to inline asm as 32-bit words.
            c.report(
                op,
                f"operand #{i} is {describe(layout)}: the barrier passes {bitwidth}-bit "
                "elements only in vector registers of a multiple of 32 bits",
            )


@rule("mosaic_gpu.layout_cast")
def _layout_cast(c: Checker, op: Op) -> None:
    wanted = attribute_value(c, op.operation.attributes["new_layout"], LAYOUTS)
    c.expect(op, OUT, 0, wanted, "the result of the cast")
    source, result = c.reg(op, IN, 0), c.reg(op, OUT, 0)
    if source is None or result is None:
        return
    bitwidth = c.value(op, IN, 0).bitwidth or 0
    strict = bool(bool_attr(op, "strict"))
    if not relayout_allowed(source, result, bitwidth, strict=strict):
        why = " (a strict cast changes only a splat's layout)" if strict else ""
        source_name, result_name = describe_apart(source, result)
        c.report(op, f"cannot relayout {source_name} to {result_name}{why}")


@rule("mosaic_gpu.vector_concat")
def _vector_concat(c: Checker, op: Op) -> None:
    """``fa.concatenate``: tiled operands share the result's layout; strided ones join on dim 0."""
    sites = c.vector_sites(op)
    layouts = [c.reg(op, *site) for site in sites]
    known = [layout for layout in layouts if layout is not None]
    if len(known) != len(sites):
        return
    if any(layout.is_splat for layout in known):
        c.report(op, "the lowering does not concatenate splats")
        return
    first = known[0].layout
    if isinstance(first, fa.TiledLayout):
        c.same(op, sites, "concatenated values share one tiled layout")
        return
    assert isinstance(first, fa.WGStridedFragLayout)  # not a splat (refused above)
    # Strided: each value keeps the vector size, along the major dim only.
    dimension = ir.IntegerAttr(op.operation.attributes["dimension"]).value
    if dimension != 0:
        c.report(op, f"strided values are concatenated only along dim 0, not {dimension}")
        return
    vec_size = first.vec_size
    for role, index in sites:
        wanted = hl.strided(c.value(op, role, index).shape, vec_size)
        c.expect(op, role, index, wanted, f"a strided concatenation (vector size {vec_size})")


@rule("mosaic_gpu.wgmma")
def _wgmma(c: Checker, op: Op) -> None:
    for role in (IN, OUT):
        c.expect(op, role, 0, Reg(hl.WGMMA), "the accumulator")
    b = c.value(op, IN, 2)
    mma_operand(c, op, 2, b.bitwidth or 0, unswizzled=False, operand="B")
    a = c.value(op, IN, 1)
    if a.kind == Kind.VECTOR:
        wanted = hl.WGMMA_8BIT if a.bitwidth == 8 else hl.WGMMA
        c.expect(op, IN, 1, Reg(wanted), "a register A operand")
        return
    a_tiles, b_tiles = c.smem(op, IN, 1), c.smem(op, IN, 2)
    if a_tiles is None or b_tiles is None:
        return
    # Both operands are read with the same physical tiles and the same swizzle.
    tiling = b_tiles.tiling if transposed(a) == transposed(b) else swap(b_tiles.tiling)
    expected = Transforms(tiling, b_tiles.swizzle)
    if a_tiles != expected:
        c.report(
            op,
            f"A is {describe(a_tiles)} but B is {describe(b_tiles)}; A must be "
            f"{describe(expected)} to match B",
        )


@rule("mosaic_gpu.mma")
def _mma(c: Checker, op: Op) -> None:
    m, n = c.value(op, IN, 0).shape
    try:
        element_type = ir.ShapedType(c.value(op, IN, 1).type).element_type
        layouts = MMALayouts.for_shape(element_type, m, n)
    except ValueError as error:
        c.report(op, f"no warp-level MMA layouts for this shape: {error}")
        return
    c.expect(op, IN, 0, Reg(layouts.acc), "the accumulator")
    c.expect(op, OUT, 0, Reg(layouts.acc), "the accumulator")
    c.expect(op, IN, 1, Reg(layouts.lhs), "operand A")
    c.expect(op, IN, 2, Reg(layouts.rhs), "operand B")


@rule("mosaic_gpu.broadcast_in_dim")
def _broadcast_in_dim(c: Checker, op: Op) -> None:
    source, result = c.reg(op, IN, 0), c.reg(op, OUT, 0)
    if source is None or result is None:
        return
    src_shape, dst_shape = c.value(op, IN, 0).shape, c.value(op, OUT, 0).shape
    dims = ints(op.operation.attributes["broadcast_dimensions"])
    origin = {d: s for s, d in enumerate(dims)}
    grown = [
        d for d in range(len(dst_shape)) if d in origin and src_shape[origin[d]] == 1 < dst_shape[d]
    ]
    added = [d for d in range(len(dst_shape)) if d not in origin]
    # The source must be the result with the broadcast dims reduced away.
    expected: Reg | None = result
    if grown:
        expected = reduce_layout(result, grown, len(dst_shape), keep=True)
    if expected is not None and added:
        expected = reduce_layout(expected, added, len(dst_shape), keep=False)
    if expected is None:
        c.report(op, f"cannot broadcast into {describe(result)} along dims {tuple(grown + added)}")
    elif expected != source:
        c.report(
            op,
            "broadcasting into {} needs the source in {}, not {}".format(
                describe(result), *describe_apart(expected, source)
            ),
        )
    into, out_of = result.layout, source.layout
    if isinstance(into, fa.TiledLayout) and len(into.base_tile_shape) != len(dst_shape):
        c.report(
            op,
            f"the result is {describe(result)}, a tiling of "
            f"{len(into.base_tile_shape)} of its {len(dst_shape)} dims; the lowering "
            "broadcasts only into fully tiled layouts",
        )
    if isinstance(out_of, fa.WGStridedFragLayout) and isinstance(into, fa.WGStridedFragLayout):
        if not fa.is_supported_strided_layout_broadcast(out_of, into, dims):
            c.report(op, f"unsupported strided broadcast {describe(source)} -> {describe(result)}")
    elif type(source.layout) is not type(result.layout):
        c.report(op, f"cannot broadcast {describe(source)} into {describe(result)}")


@rule("mosaic_gpu.try_cluster_cancel", "mosaic_gpu.query_cluster_cancel")
def _cluster_cancel(c: Checker, op: Op) -> None:
    untiled(c, op, 0, "the cancellation response")


@rule("mosaic_gpu.with_transforms")
def _with_transforms(c: Checker, op: Op) -> None:
    """The ref takes the transforms as given (jax 0.12.0.1), if it can."""
    given = cast(Transforms, attribute_value(c, op.operation.attributes["transforms"], TRANSFORMS))
    transforms_valid(c, op, "the transforms attribute", c.value(op, IN, 0), given)
    for role in (IN, OUT):
        c.expect(op, role, 0, given, "the ref given transforms")
