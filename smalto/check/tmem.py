"""Requirements of the tensor-memory (Blackwell) ops.

The solver's statement: ``smalto.rules.tmem`` (policy: docs/rules_and_checks.md).
"""

from __future__ import annotations

from jax._src.lib import mosaic_gpu_dialect as mgpu
from jax._src.lib.mlir import ir
from jax.experimental.mosaic.gpu import tcgen05

from smalto.check.core import (
    IN,
    OUT,
    TMEM,
    Checker,
    bool_attr,
    rule,
    untiled,
)
from smalto.check.decode import attribute_value
from smalto.check.mma import mma_operand
from smalto.check.names import describe
from smalto.check.semantics import reduce_layout, transposed
from smalto.hw import layouts as hl
from smalto.hw.transfers import tmem_transfer_supported
from smalto.hw.values import Reg, Tmem
from smalto.program.view import Kind, Op


def _tmem_for(shape: tuple[int, ...], collective: bool, packing: int) -> Tmem | None:
    try:
        return hl.tmem_for_shape(shape, collective, packing)
    except ValueError:
        return None


@rule("mosaic_gpu.tmem_alloc")
def _tmem_alloc(c: Checker, op: Op) -> None:
    untiled(c, op, 0, "the SMEM word receiving a TMEM address")


@rule("mosaic_gpu.tmem_layout_cast")
def _tmem_layout_cast(c: Checker, op: Op) -> None:
    wanted = attribute_value(c, op.operation.attributes["new_layout"], TMEM)
    for role in (IN, OUT):
        c.expect(op, role, 0, wanted, "a ref cast to a TMEM layout")


@rule("mosaic_gpu.tcgen05_mma")
def _tcgen05_mma(c: Checker, op: Op) -> None:
    view = op.view
    assert isinstance(view, mgpu.TcGen05MMAOp)
    collective = bool(bool_attr(op, "collective"))
    acc = c.value(op, IN, 0)
    wanted = _tmem_for(acc.shape, collective, 1)
    if wanted is None:
        c.report(op, f"no TMEM layout exists for an accumulator of shape {acc.shape}")
    else:
        c.expect(op, IN, 0, wanted, "the accumulator")
    b = c.value(op, IN, 2)
    bitwidth = b.bitwidth or 0
    mma_operand(c, op, 2, bitwidth, unswizzled=False, operand="B")
    if acc.shape[0] == 64 and not collective:
        # N is split in two lane groups; B's tiles must not straddle them.
        n = b.shape[1]
        widest = next(
            (8 * s // bitwidth for s in (128, 64, 32, 16) if 8 * s // bitwidth <= n // 2), None
        )
        if widest is None:
            c.report(op, f"B of {n} columns cannot be split in two lane groups")
        else:
            tile = (widest, 8) if transposed(b) else (8, widest)
            c.divides(op, IN, 2, tile, "the half-N lane group tile")
    a = c.value(op, IN, 1)
    if a.kind == Kind.TMEM:
        wanted_a = _tmem_for(a.shape, collective, 32 // (a.bitwidth or 32))
        if wanted_a is None:
            c.report(op, f"no TMEM layout exists for an A operand of shape {a.shape}")
        else:
            c.expect(op, IN, 1, wanted_a, "a TMEM A operand")
    else:
        # A's tiles follow A's own element width (jax 0.12.0.1).
        mma_operand(c, op, 1, a.bitwidth or 0, unswizzled=False, operand="A")
    operands = list(view.operation.operands)
    if view.a_sparse_metadata is not None:
        index = operands.index(view.a_sparse_metadata)
        c.expect(op, IN, index, Tmem(tcgen05.sparse_meta_layout()), "the sparsity metadata")
    if (view.a_scale is None) != (view.b_scale is None):
        c.report(op, "has one scale operand without the other")
    elif view.a_scale is not None:
        m = acc.shape[0]
        for scale, is_b in ((view.a_scale, False), (view.b_scale, True)):
            index = operands.index(scale)
            if collective and is_b and m == 64:
                layout = tcgen05.b_scales_m64_collective_layout()
            else:
                layout = tcgen05.scales_layout()
            c.expect(op, IN, index, Tmem(layout), "the B scales" if is_b else "the A scales")


def _tmem_transfer(
    c: Checker, op: Op, tmem: tuple[int, int], reg: tuple[int, int], *, load: bool = False
) -> None:
    memory, registers = c.tmem(op, *tmem), c.reg(op, *reg)
    if memory is None or registers is None:
        return
    value = c.value(op, *reg)
    if not tmem_transfer_supported(
        memory.layout, registers.layout, value.shape, value.bitwidth or 32, load
    ):
        c.report(
            op,
            f"no transfer between TMEM in {describe(memory)} and registers in "
            f"{describe(registers)}",
        )


@rule("mosaic_gpu.async_load_tmem")
def _async_load_tmem(c: Checker, op: Op) -> None:
    _tmem_transfer(c, op, (IN, 0), (OUT, 0), load=True)
    if "reduce" in op.operation.attributes:
        _fused_reduce(c, op)


# What ``TMEMRef.load`` reduces on the fly: min/max of i32 (abs: unsigned), all four of f32.
_REDUCIBLE = {"i32": ("min", "max", "absmin", "absmax"), "f32": ("min", "max", "absmin", "absmax")}


def _fused_reduce(c: Checker, op: Op) -> None:
    """A load that also reduces each row: only from the default TMEM layout into TMEM_NATIVE."""
    kind = str(mgpu.TMEMLoadReduction(ir.IntegerAttr(op.operation.attributes["reduce"]).value))
    element = str(ir.MemRefType(c.value(op, IN, 0).type).element_type)
    if kind not in _REDUCIBLE.get(element, ()):
        c.report(op, f"the lowering does not fuse a {kind} reduction of {element} into a TMEM load")
    c.expect(op, IN, 0, hl.tmem_default(1), "the TMEM of a load that reduces")
    c.expect(op, OUT, 0, Reg(hl.TMEM_NATIVE), "a load that reduces")
    loaded = c.reg(op, OUT, 0)
    if loaded is None or len(op.results) < 2:
        return
    rank = len(c.value(op, OUT, 0).shape)
    reduced = reduce_layout(loaded, (rank - 1,), rank, keep=False)
    if reduced is not None:
        c.expect(op, OUT, 1, reduced, f"the row reduction of {describe(loaded)}")


@rule("mosaic_gpu.async_store_tmem")
def _async_store_tmem(c: Checker, op: Op) -> None:
    _tmem_transfer(c, op, (IN, 1), (IN, 0))


@rule("mosaic_gpu.async_store_smem_to_tmem")
def _smem_to_tmem(c: Checker, op: Op) -> None:
    bitwidth = c.value(op, IN, 1).bitwidth or 32
    c.expect(op, IN, 1, hl.tmem_default(32 // bitwidth), "a TMEM copy destination")
    # The copy also reads the unswizzled 16-byte tile.
    source_bits = c.value(op, IN, 0).bitwidth or bitwidth
    mma_operand(c, op, 0, source_bits, unswizzled=True, operand="the SMEM source")


@rule("mosaic_gpu.async_store_sparse_metadata_smem_to_tmem")
def _sparse_metadata_to_tmem(c: Checker, op: Op) -> None:
    untiled(c, op, 0, "the sparsity metadata in SMEM")
    c.expect(op, IN, 1, Tmem(tcgen05.sparse_meta_layout()), "the sparsity metadata in TMEM")


@rule("mosaic_gpu.async_store_scales_smem_to_tmem")
def _scales_to_tmem(c: Checker, op: Op) -> None:
    untiled(c, op, 0, "the scales in SMEM")
    source_shape = c.value(op, IN, 0).shape
    k_tiles = c.value(op, IN, 1).shape[1] // 4
    if source_shape == (1, k_tiles, 64, 16):
        layout = tcgen05.b_scales_m64_collective_layout()
    else:
        layout = tcgen05.scales_layout()
    c.expect(op, IN, 1, Tmem(layout), "the scales in TMEM")


# The ops whose ``collective`` attributes JAX's lowering compares (``check_collective``).
_COLLECTIVE_OPS = frozenset(
    {
        "mosaic_gpu.tmem_alloc",
        "mosaic_gpu.tmem_relinquish_alloc_permit",
        "mosaic_gpu.tcgen05_mma",
        "mosaic_gpu.tcgen05_commit_arrive",
        "mosaic_gpu.async_store_smem_to_tmem",
        "mosaic_gpu.async_store_scales_smem_to_tmem",
        "mosaic_gpu.async_store_sparse_metadata_smem_to_tmem",
    }
)


def check_collective(c: Checker) -> None:
    """A kernel's tensor-memory ops are all collective (2-CTA) or all 1-CTA: JAX's
    lowering sets tensor memory up once per kernel, and refuses the first op of the other
    kind, whatever the layouts."""
    first: tuple[Op, bool] | None = None
    for op in c.annotated:
        if op.name not in _COLLECTIVE_OPS:
            continue
        attributes = op.operation.attributes
        flag = attributes["collective"] if "collective" in attributes else None
        if not isinstance(flag, ir.BoolAttr):
            continue
        collective = bool(flag.value)
        if first is None:
            first = (op, collective)
        elif collective != first[1]:
            kinds = {True: "collective", False: "1-CTA"}
            c.report(
                op,
                f"is {kinds[collective]} but `{first[0].name}` at {c.location(first[0])} is "
                f"{kinds[first[1]]}: JAX's lowering does not mix collective and 1-CTA "
                "tensor-core ops in one kernel",
            )
            return
