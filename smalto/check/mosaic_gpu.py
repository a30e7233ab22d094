"""Requirements of `mosaic_gpu` ops on registers and SMEM: transfers, casts, MMAs, copies."""

from __future__ import annotations

from jax._src.lib.mlir import ir
from jax.experimental.mosaic.gpu import fragmented_array as fa

from smalto.check.core import (
    IN,
    OUT,
    Checker,
    bool_attr,
    ints,
    known_divisor,
    rule,
    untiled,
)
from smalto.check.decode import swizzle_ok
from smalto.check.mma import mma_tiling
from smalto.check.names import describe
from smalto.check.semantics import (
    reduce_layout,
    swap,
    transposed,
)
from smalto.hw import encode
from smalto.hw import layouts as hl
from smalto.hw.transfers import Transfer, smem_transfer_supported
from smalto.hw.values import Reg, Smem
from smalto.program import Kind, Op


@rule("mosaic_gpu.vector_load")
def _vector_load(c: Checker, op: Op) -> None:
    c.not_kinds(op, OUT, 0, splat=True, strided=False)
    optimized = bool_attr(op, "optimized")
    mode = Transfer.UNOPTIMIZED if optimized is False else Transfer.OPTIMIZED
    _smem_transfer(c, op, smem=0, reg=(OUT, 0), mode=mode)


def _store_mode(op: Op) -> Transfer:
    optimized = bool_attr(op, "optimized")
    if optimized is None:
        return Transfer.DOWNGRADABLE
    return Transfer.OPTIMIZED if optimized else Transfer.UNOPTIMIZED


@rule("mosaic_gpu.vector_store")
def _vector_store(c: Checker, op: Op) -> None:
    _smem_transfer(c, op, smem=1, reg=(IN, 0), mode=_store_mode(op))


@rule("mosaic_gpu.async_store_smem")
def _async_store_smem(c: Checker, op: Op) -> None:
    _vector_store(c, op)
    c.not_kinds(op, IN, 0, splat=True, strided=True)
    value = c.reg(op, IN, 0)
    if value is None or not value.is_tiled:
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


def _smem_transfer(c: Checker, op: Op, smem: int, reg: tuple[int, int], mode: Transfer) -> None:
    ref = c.value(op, IN, smem)
    if ref.kind != Kind.SMEM:
        return
    tiles, registers = c.smem(op, IN, smem), c.reg(op, *reg)
    if tiles is None or registers is None or ref.strides is None or ref.bitwidth is None:
        return
    if not smem_transfer_supported(
        tiles.tiling, registers.layout, ref.shape, ref.strides, ref.bitwidth, mode
    ):
        c.report(
            op,
            f"no {mode.value} transfer between registers in {describe(registers)} and the SMEM "
            f"ref {ref.type} {describe(tiles)}",
        )


@rule("mosaic_gpu.multimem_load_reduce", "mosaic_gpu.broadcasted_iota")
def _not_splat_result(c: Checker, op: Op) -> None:
    c.not_kinds(op, OUT, 0, splat=True, strided=False)


@rule("mosaic_gpu.optimization_barrier")
def _optimization_barrier(c: Checker, op: Op) -> None:
    for i, vid in enumerate(op.operands):
        if c.program.values[vid].kind == Kind.VECTOR:
            c.same(op, [(IN, i), (OUT, i)], "a value passes an optimization barrier unchanged")


@rule("mosaic_gpu.layout_cast")
def _layout_cast(c: Checker, op: Op) -> None:
    wanted = Reg(encode.decode_layout(op.operation.attributes["new_layout"]))
    c.expect(op, OUT, 0, wanted, "the result of the cast")
    source, result = c.reg(op, IN, 0), c.reg(op, OUT, 0)
    if source is None or result is None:
        return
    bitwidth = c.value(op, IN, 0).bitwidth or 0
    if not hl.relayout_allowed(source, result, bitwidth, strict=False):
        c.report(op, f"cannot relayout {describe(source)} to {describe(result)}")


@rule("mosaic_gpu.wgmma")
def _wgmma(c: Checker, op: Op) -> None:
    for role in (IN, OUT):
        c.expect(op, role, 0, Reg(hl.WGMMA), "the accumulator")
    b = c.value(op, IN, 2)
    bitwidth = b.bitwidth or 0
    mma_tiling(c, op, 2, bitwidth, unswizzled=False, operand="B")
    a = c.value(op, IN, 1)
    if a.kind == Kind.VECTOR:
        wanted = hl.WGMMA_8BIT if a.bitwidth == 8 else hl.WGMMA
        c.expect(op, IN, 1, Reg(wanted), "a register A operand")
        return
    a_tiles, b_tiles = c.smem(op, IN, 1), c.smem(op, IN, 2)
    if a_tiles is None or b_tiles is None:
        return
    # Both operands are read with the same physical tiles.
    expected = b_tiles.tiling if transposed(a) == transposed(b) else swap(b_tiles.tiling)
    if a_tiles.tiling != expected:
        c.report(
            op,
            f"A is {describe(a_tiles)} but B is {describe(b_tiles)}; A must be tiled "
            f"{expected} to match B",
        )


@rule("mosaic_gpu.mma")
def _mma(c: Checker, op: Op) -> None:
    layouts = hl.mma_layouts(c.value(op, IN, 1).type.element_type)
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
            f"broadcasting into {describe(result)} needs the source in {describe(expected)}, "
            f"not {describe(source)}",
        )
    if result.is_tiled and len(result.layout.base_tile_shape) != len(dst_shape):
        c.report(
            op,
            f"the result is {describe(result)}, a tiling of "
            f"{len(result.layout.base_tile_shape)} of its {len(dst_shape)} dims; the lowering "
            "broadcasts only into fully tiled layouts",
        )
    if source.is_strided and result.is_strided:
        if not fa.is_supported_strided_layout_broadcast(source.layout, result.layout, dims):
            c.report(op, f"unsupported strided broadcast {describe(source)} -> {describe(result)}")
    elif type(source.layout) is not type(result.layout):
        c.report(op, f"cannot broadcast {describe(source)} into {describe(result)}")


@rule("mosaic_gpu.try_cluster_cancel", "mosaic_gpu.query_cluster_cancel")
def _cluster_cancel(c: Checker, op: Op) -> None:
    untiled(c, op, 0, "the cancellation response")


@rule("mosaic_gpu.with_transforms")
def _with_transforms(c: Checker, op: Op) -> None:
    attr = ir.ArrayAttr(op.operation.attributes["transforms"])
    tiling, swizzle = encode.decode_transforms(attr)
    ref = c.value(op, IN, 0)
    swizzle_ok(c, op, "the transforms attribute", ref, tiling, swizzle)
    for role in (IN, OUT):
        c.expect(op, role, 0, Smem(tiling), "the ref given transforms")


_INDEX_OPERANDS = {
    "mosaic_gpu.async_load": 3,
    "mosaic_gpu.async_store": 2,
    "mosaic_gpu.async_prefetch": 1,
}


def _index_layouts(c: Checker, op: Op) -> None:
    first = _INDEX_OPERANDS[op.name]
    for i in range(len(op.view.indices)):
        value = c.value(op, IN, first + i)
        if value.kind != Kind.VECTOR:
            continue
        if value.shape[0] % 16 == 0:
            wanted = hl.TMA_INDICES
        elif value.shape[0] % 4 == 0:
            wanted = hl.TMA_INDICES_4
        else:
            c.report(op, f"gather/scatter indices of shape {value.shape} are not a multiple of 4")
            continue
        c.expect(op, IN, first + i, Reg(wanted), "gather/scatter indices")


@rule("mosaic_gpu.async_load", "mosaic_gpu.async_store")
def _async_copy(c: Checker, op: Op) -> None:
    view = op.view
    is_load = op.name == "mosaic_gpu.async_load"
    smem = 1 if is_load else 0
    first = _INDEX_OPERANDS[op.name]
    multiple: list[int] = []
    gather = False
    for i, size in enumerate(view.slice_lengths):
        if size == -1:
            continue  # squeezed away: not a dim of the SMEM ref
        if c.value(op, IN, first + i).kind == Kind.VECTOR:
            gather = True
            multiple.append(size)
        else:
            multiple.append(known_divisor(size, first + i, op))
    c.divides(op, IN, smem, multiple, "the copied slice (sizes and known offset divisors)")
    if gather:
        bitwidth = c.value(op, IN, 0).bitwidth or 8
        divisor = 256 // bitwidth  # rows move four at a time, 1024 bits aligned
        lengths = [s for s in view.slice_lengths if s != -1]
        if lengths and lengths[-1] % divisor:
            c.report(op, f"a gather's minor dim ({lengths[-1]}) is not a multiple of {divisor}")
        tiles = c.smem(op, IN, smem)
        if tiles is not None and tiles.tiling and tiles.tiling[-1] % divisor:
            c.report(
                op,
                f"a gather needs the minor tile of {describe(tiles)} to be a multiple of "
                f"{divisor} elements",
            )
    _index_layouts(c, op)


@rule("mosaic_gpu.async_prefetch")
def _async_prefetch(c: Checker, op: Op) -> None:
    _index_layouts(c, op)
