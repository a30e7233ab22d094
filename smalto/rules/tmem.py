"""Rules for tensor memory (Blackwell, sm_100): allocations, slices, tcgen05 MMA, transfers.

Restated by the checker in ``smalto.check.tmem`` (policy: docs/rules_and_checks.md).
"""

from __future__ import annotations

from typing import cast

from jax._src.lib import mosaic_gpu_dialect as mgpu
from jax._src.lib.mlir import ir
from jax.experimental.mosaic.gpu import tcgen05

from smalto.basics.codes import MIXED_COLLECTIVE, code_line
from smalto.constraints.language import Divides, Equal, LayoutKind, Reduce, TmemTransfer, Var
from smalto.errors import InferenceError
from smalto.hw import layouts as hl
from smalto.hw.values import Reg, Tmem
from smalto.program.view import Kind, Op, Program
from smalto.rules.context import RuleContext, rule
from smalto.rules.mosaic_gpu import _is_transposed, mma_operand
from smalto.source.locations import op_text
from smalto.source.tracebacks import with_op_traceback

_SWIZZLE_MODES = (16, 32, 64, 128)


def _tmem_layout(
    ctx: RuleContext, op: Op, shape: tuple[int, ...], collective: bool, packing: int, what: str
) -> Tmem:
    try:
        return hl.tmem_for_shape(shape, collective, packing)
    except ValueError as e:
        raise InferenceError(
            f"Cannot assign TMEM layout to {what} of {ctx.describe_op(op)}: no TMEM layout "
            f"fits its shape {shape}: {e}"
        ) from None


@rule("mosaic_gpu.tmem_layout_cast")
def tmem_layout_cast(ctx: RuleContext, op: Op) -> None:
    """The cast's TMEM layout is the ref's."""
    var = ctx.ref(op, 0)
    layout = ctx.decode(op, op.operation.attributes["new_layout"], tmem=True)
    ctx.fix(var, layout, op, "the TMEM ref")
    ctx.add_sites(var, ctx.operand(op, 0), ctx.result(op, 0))


@rule("mosaic_gpu.tmem_alloc")
def tmem_alloc(ctx: RuleContext, op: Op) -> None:
    """A new TMEM ref; the SMEM word receiving its address is untiled."""
    ctx.new_var(ctx.result(op, 0))
    address = ctx.new_var(ctx.operand(op, 0))
    ctx.fix(address, hl.UNTILED, op, "the address ref")


@rule("mosaic_gpu.tmem_dealloc")
def tmem_dealloc(ctx: RuleContext, op: Op) -> None:
    ctx.add_sites(ctx.ref(op, 0), ctx.operand(op, 0))


def _collective(op: Op) -> bool:
    attrs = op.operation.attributes
    return "collective" in attrs and bool(ir.BoolAttr(attrs["collective"]).value)


@rule("mosaic_gpu.tcgen05_mma")
def tcgen05_mma(ctx: RuleContext, op: Op) -> None:
    """Accumulator (and A) in the MMA's TMEM layout; SMEM operands tiled for the MMA."""
    view = cast(mgpu.TcGen05MMAOp, op.view)  # the bindings' view of this op's name
    values = ctx.program.values
    collective = _collective(op)
    acc_value = values[op.operands[0]]
    acc = ctx.ref(op, 0)
    ctx.fix(
        acc,
        _tmem_layout(ctx, op, acc_value.shape, collective, 1, "the accumulator"),
        op,
        "the accumulator",
    )
    ctx.add_sites(acc, ctx.operand(op, 0))

    b_value = values[op.operands[2]]
    bitwidth = b_value.bitwidth or 0
    b = ctx.ref(op, 2)
    ctx.add_sites(b, ctx.operand(op, 2))
    b_transposed = _is_transposed(ctx, op.operands[2])
    mma_operand(ctx, op, b)

    m = acc_value.shape[0]
    if m == 64 and not collective:
        # N splits into two lane groups; the B tile must not straddle them.
        n = b_value.shape[1]
        fitting = [8 * s // bitwidth for s in _SWIZZLE_MODES if 8 * s // bitwidth <= n // 2]
        if not fitting:
            smallest = 8 * _SWIZZLE_MODES[0] // bitwidth
            raise InferenceError(
                f"{ctx.describe_op(op)}: with M = 64, N = {n} splits into two lane groups of "
                f"{n // 2} columns, narrower than the smallest tile of {bitwidth}-bit elements "
                f"({smallest}); use N >= {2 * smallest}"
            )
        widest = max(fitting)
        tile = (widest, 8) if b_transposed else (8, widest)
        ctx.require(Divides(Var(b), tile, op.id))

    a_value = values[op.operands[1]]
    a = ctx.ref(op, 1)
    ctx.add_sites(a, ctx.operand(op, 1))
    if a_value.kind == Kind.TMEM:
        packing = 32 // (a_value.bitwidth or 32)
        ctx.fix(
            a,
            _tmem_layout(ctx, op, a_value.shape, collective, packing, "operand A"),
            op,
            "operand A",
        )
    else:
        mma_operand(ctx, op, a)  # with A's own element width

    operand_index = {v: i for i, v in reversed(list(enumerate(op.operands)))}
    if view.a_sparse_metadata is not None:
        index = _operand_index(op, view.a_sparse_metadata)
        meta = ctx.ref(op, index)
        ctx.fix(meta, Tmem(tcgen05.sparse_meta_layout()), op, "the sparsity metadata")
        ctx.add_sites(meta, ctx.operand(op, index))
    del operand_index
    a_scale, b_scale = view.a_scale, view.b_scale
    if (a_scale is None) != (b_scale is None):
        raise InferenceError(f"{ctx.describe_op(op)} has one scale operand without the other")
    if a_scale is not None and b_scale is not None:
        for scale, is_b in ((a_scale, False), (b_scale, True)):
            index = _operand_index(op, scale)
            var = ctx.ref(op, index)
            if collective and is_b and m == 64:
                layout = tcgen05.b_scales_m64_collective_layout()
            else:
                layout = tcgen05.scales_layout()
            ctx.fix(var, Tmem(layout), op, "the B scales" if is_b else "the A scales")
            ctx.add_sites(var, ctx.operand(op, index))


def _operand_index(op: Op, value: ir.Value) -> int:
    return list(op.view.operands).index(value)


@rule("mosaic_gpu.async_load_tmem")
def async_load_tmem(ctx: RuleContext, op: Op) -> None:
    """TMEM to registers: the pair of layouts must be a supported transfer.

    With ``reduce``, a second result holds each row's reduction of the loaded
    value: the loaded layout reduced over the columns. The lowering fuses the
    reduction only into a load in the TMEM-native layout, so that layout is
    required (JAX's constraints leave it open and its search picks TCGEN05,
    which its own lowering then rejects).
    """
    source = ctx.ref(op, 0)
    ctx.add_sites(source, ctx.operand(op, 0))
    dest = ctx.new_var(ctx.result(op, 0))
    value = ctx.program.values[op.operands[0]]
    ctx.require(
        TmemTransfer(Var(source), Var(dest), value.shape, value.bitwidth or 32, op.id, load=True)
    )
    # No TMEM transfer lands in a splat or strided layout: said outright, the
    # search need not try them.
    ctx.not_of_kind(dest, op, LayoutKind.SPLAT, LayoutKind.STRIDED)
    if "reduce" in op.operation.attributes:
        if len(value.shape) != 2:
            raise NotImplementedError(
                f"`{op.name}` at {op.where}: a reducing load of a rank-{len(value.shape)} ref"
            )
        ctx.fix(dest, Reg(hl.TMEM_NATIVE), op, "the loaded value of a reducing load")
        reduced = ctx.new_var(ctx.result(op, 1))
        ctx.require(Equal(Var(reduced), Reduce(Var(dest), (1,), 2), op.id))


@rule("mosaic_gpu.async_store_tmem")
def async_store_tmem(ctx: RuleContext, op: Op) -> None:
    """Registers to TMEM: the pair of layouts must be a supported transfer."""
    source = ctx.new_var(ctx.operand(op, 0))
    dest = ctx.ref(op, 1)
    ctx.add_sites(dest, ctx.operand(op, 1))
    value = ctx.program.values[op.operands[0]]
    ctx.require(TmemTransfer(Var(dest), Var(source), value.shape, value.bitwidth or 32, op.id))


@rule("mosaic_gpu.async_store_smem_to_tmem")
def async_store_smem_to_tmem(ctx: RuleContext, op: Op) -> None:
    """SMEM to TMEM copies need an MMA-style SMEM tiling and the default TMEM layout."""
    source = ctx.ref(op, 0)
    ctx.add_sites(source, ctx.operand(op, 0))
    dest = ctx.ref(op, 1)
    ctx.add_sites(dest, ctx.operand(op, 1))
    bitwidth = ctx.program.values[op.operands[1]].bitwidth or 32
    ctx.fix(dest, hl.tmem_default(32 // bitwidth), op, "the TMEM destination")
    mma_operand(ctx, op, source, allow_unswizzled=True)


@rule("mosaic_gpu.async_store_sparse_metadata_smem_to_tmem")
def async_store_sparse_metadata(ctx: RuleContext, op: Op) -> None:
    source = ctx.ref(op, 0)
    ctx.add_sites(source, ctx.operand(op, 0))
    dest = ctx.ref(op, 1)
    ctx.add_sites(dest, ctx.operand(op, 1))
    ctx.fix(dest, Tmem(tcgen05.sparse_meta_layout()), op, "the TMEM destination")
    ctx.fix(source, hl.UNTILED, op, "the SMEM source")


@rule("mosaic_gpu.async_store_scales_smem_to_tmem")
def async_store_scales(ctx: RuleContext, op: Op) -> None:
    source = ctx.ref(op, 0)
    ctx.add_sites(source, ctx.operand(op, 0))
    dest = ctx.ref(op, 1)
    ctx.add_sites(dest, ctx.operand(op, 1))
    ctx.fix(source, hl.UNTILED, op, "the SMEM source")
    source_shape = ctx.program.values[op.operands[0]].shape
    k_tiles = ctx.program.values[op.operands[1]].shape[1] // 4
    if source_shape == (1, k_tiles, 64, 16):
        layout = tcgen05.b_scales_m64_collective_layout()
    else:
        layout = tcgen05.scales_layout()
    ctx.fix(dest, Tmem(layout), op, "the TMEM destination")


@rule("mosaic_gpu.slice_tmem")
def slice_tmem(ctx: RuleContext, op: Op) -> None:
    """A TMEM slice is its own ref, shared by slices with the same alias id (any offsets)."""
    source = ctx.ref(op, 0)
    ctx.add_sites(source, ctx.operand(op, 0))
    ctx.aliased_var("tmem", op, ctx.result(op, 0))


# The ops JAX's lowering asks to agree on their ``collective`` attribute
# (``LoweringContext.check_collective``): all collective, or all 1-CTA, in one kernel.
COLLECTIVE_OPS = frozenset(
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
# JAX's lowering's words for it.
_INCONSISTENT = "Collective attributes are inconsistent across operations in the kernel."


def mixed_collective_ops(program: Program) -> tuple[Op, Op, bool] | None:
    """Where the kernel mixes collective and 1-CTA tensor-core ops (which no layout makes
    JAX's lowering take): the first op, the first of the other kind, and whether that one
    is collective; None where they agree."""
    first: Op | None = None
    names = program.op_names
    # (Found by name first: a few ops of the kernel's hundreds, in one comprehension.)
    for op_id in [i for i, name in enumerate(names) if name in COLLECTIVE_OPS]:
        op = program.ops[op_id]
        attributes = op.operation.attributes
        flag = attributes["collective"] if "collective" in attributes else None
        if not isinstance(flag, ir.BoolAttr):
            continue  # (the verifier's to refuse)
        collective = bool(flag.value)
        if first is None:
            first, first_collective = op, collective
        elif collective != first_collective:
            return first, op, collective
    return None


def mixed_collective(program: Program) -> InferenceError | None:
    """The refusal of a kernel that mixes collective and 1-CTA tensor-core ops, its
    traceback at the first op of the other kind; None where they agree."""
    found = mixed_collective_ops(program)
    if found is None:
        return None
    first, op, collective = found
    error = InferenceError(_mixed_words(first, op, collective), code=MIXED_COLLECTIVE)
    return cast(InferenceError, with_op_traceback(error, op.operation, op.name))


def _mixed_words(first: Op, other: Op, collective: bool) -> str:
    def kind(is_collective: bool) -> str:
        return "collective (2-CTA)" if is_collective else "1-CTA (not collective)"

    return (
        f"{_INCONSISTENT} {op_text(other)} is {kind(collective)}, but {op_text(first)} is "
        f"{kind(not collective)}: JAX's lowering sets up tensor memory once for the whole "
        "kernel and refuses to mix the two, whatever the layouts"
        "\nsuggestion: give every `plgpu.tcgen05_mma` on a collective TMEM ref "
        "`collective_axis=` (the cluster axis it is shared over), or declare the TMEM refs "
        "without `collective=True` and run every MMA 1-CTA"
        f"\n{_no_fix_note(other, collective)}"
        f"\n{code_line(MIXED_COLLECTIVE)}"
    )


def _no_fix_note(other: Op, collective: bool) -> str:
    """Why no verified fix is written at the op's line: either edit changes what an MMA
    computes, and what it would compute instead cannot be checked."""
    made = "1-CTA" if collective else "collective"
    return (
        f"note: no fix is offered at {op_text(other)}: making it {made} (or the kernel's "
        "other tensor-core ops the other kind) changes what the MMAs compute, since a "
        "collective MMA splits its operands and its accumulator between the cluster's two "
        "CTAs, and smalto cannot verify such an edit (its evaluator runs one CTA): which "
        "one the kernel means is its author's to say"
    )
