"""Requirements of the asynchronous GMEM <-> SMEM copies: async_load, async_store, async_prefetch.

The copy moves the slice whole tiles at a time, so the tiling divides the
slice (where the offsets are known to); TMA reads a swizzled ref row by row,
so with a swizzle the minor dim of the (tiled) ref is exactly the swizzle
width; gather and scatter indices live in one of the two TMA index layouts.

The solver's statement: ``smalto.rules.mosaic_gpu`` (``async_copy``,
``async_prefetch``; policy: docs/rules_and_checks.md).
"""

from __future__ import annotations

from jax._src.lib import mosaic_gpu_dialect as mgpu
from jax._src.lib.mlir import ir

from smalto.check.core import IN, Checker, known_divisor, rule
from smalto.check.names import describe
from smalto.check.smem import Transforms, minor_extent
from smalto.hw import layouts as hl
from smalto.hw.values import Reg
from smalto.program.view import Kind, Op

# Where each op's indices are among its operand segments (jax 0.12.0.1):
# async_load [source, destination, barrier?, indices..., predicate?, gmem_peer_id?],
# async_store [source, destination, indices..., predicate?, gmem_peer_id?],
# async_prefetch [source, indices..., predicate?].
_INDEX_SEGMENT = {
    "mosaic_gpu.async_load": 3,
    "mosaic_gpu.async_store": 2,
    "mosaic_gpu.async_prefetch": 1,
}
_TMA_INDEX_LAYOUTS = (Reg(hl.TMA_INDICES), Reg(hl.TMA_INDICES_4))


def first_index(op: Op) -> int:
    """The operand position of the op's first index."""
    segment = _INDEX_SEGMENT[op.name]
    sizes = ir.DenseI32ArrayAttr(op.operation.attributes["operandSegmentSizes"])
    return sum(list(sizes)[:segment])


def _index_layouts(c: Checker, op: Op) -> None:
    first = first_index(op)
    view = op.view
    assert isinstance(view, mgpu.AsyncLoadOp | mgpu.AsyncStoreOp | mgpu.AsyncPrefetchOp)
    for i in range(len(view.indices)):
        value = c.value(op, IN, first + i)
        if value.kind != Kind.VECTOR:
            continue
        if value.shape[0] % 4:
            c.report(op, f"gather/scatter indices of shape {value.shape} are not a multiple of 4")
            continue
        layout = c.reg(op, IN, first + i)
        if layout is not None and layout not in _TMA_INDEX_LAYOUTS:
            c.report(
                op,
                f"operand #{first + i} is {describe(layout)} but gather/scatter indices must be "
                "TMA_INDICES or TMA_INDICES_4",
            )


def _tma_rows(c: Checker, op: Op, smem: int, transforms: Transforms) -> None:
    """What ``_check_tma_strides_and_swizzle`` asks of the SMEM side of the copy."""
    ref = c.value(op, IN, smem)
    if ref.strides is None or ref.bitwidth is None:
        return
    minor = minor_extent(transforms, ref.shape, ref.strides)
    if minor is None:
        return
    if transforms.tiling is not None and minor * ref.bitwidth % 128:
        c.report(
            op,
            f"a copy moves whole 16-byte rows; the minor tile dim of {describe(transforms)} "
            f"holds {minor * ref.bitwidth} bits",
        )
    if transforms.swizzle is not None:
        width = 8 * transforms.swizzle // ref.bitwidth
        if minor != width:
            c.report(
                op,
                f"a copy with swizzle {transforms.swizzle} needs the minor "
                f"{'tile ' if transforms.tiling is not None else ''}dim to be exactly {width} "
                f"elements, not {minor} ({describe(transforms)})",
            )


@rule("mosaic_gpu.async_load", "mosaic_gpu.async_store")
def _async_copy(c: Checker, op: Op) -> None:
    view = op.view
    assert isinstance(view, mgpu.AsyncLoadOp | mgpu.AsyncStoreOp)
    is_load = isinstance(view, mgpu.AsyncLoadOp)
    smem = 1 if is_load else 0
    first = first_index(op)
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
    transforms = c.smem(op, IN, smem)
    if transforms is not None:
        _tma_rows(c, op, smem, transforms)
        if (
            isinstance(view, mgpu.AsyncLoadOp)
            and view.barrier is None
            and transforms.tiling is None
            and transforms.swizzle
        ):
            c.report(op, "a copy without a barrier (cp.async) cannot swizzle an untiled ref")
    if gather:
        bitwidth = c.value(op, IN, 0).bitwidth or 8
        divisor = 256 // bitwidth  # rows move four at a time, 1024 bits aligned
        lengths = [s for s in view.slice_lengths if s != -1]
        if lengths and lengths[-1] % divisor:
            c.report(op, f"a gather's minor dim ({lengths[-1]}) is not a multiple of {divisor}")
        if transforms is not None and transforms.tiling and transforms.tiling[-1] % divisor:
            c.report(
                op,
                f"a gather needs the minor tile of {describe(transforms)} to be a multiple of "
                f"{divisor} elements",
            )
    _index_layouts(c, op)


@rule("mosaic_gpu.async_prefetch")
def _async_prefetch(c: Checker, op: Op) -> None:
    _index_layouts(c, op)
