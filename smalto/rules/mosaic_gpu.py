"""Rules for `mosaic_gpu` ops that touch registers and SMEM (sm_90 and later).

Restated by the checker in ``smalto.check.mosaic_gpu`` (registers, casts, MMAs),
``smalto.check.copies`` (TMA copies) and ``smalto.check.mma`` (SMEM MMA operands)
(policy: docs/rules_and_checks.md).
"""

from __future__ import annotations

from functools import partial
from typing import cast

from jax._src.lib import mosaic_gpu_dialect as mgpu
from jax._src.lib.mlir import ir

from smalto.basics.codes import TMA_GATHER, code_line
from smalto.constraints.language import (
    Broadcast,
    Divides,
    Equal,
    Expr,
    Fixed,
    FullyTiled,
    GmemTransfer,
    LayoutKind,
    MinorTileDivisible,
    Reduce,
    RegisterBits,
    Relayout,
    Role,
    Site,
    SmemTransfer,
    StoreRegisters,
    TmaRows,
    Transpose,
    Var,
    one_of,
)
from smalto.errors import FAILURE_PREFIX, InferenceError
from smalto.hw import layouts as hl
from smalto.hw.transfers import Transfer
from smalto.hw.values import Reg, Smem
from smalto.program.view import Kind, Op
from smalto.rules.context import RuleContext, rule
from smalto.source.locations import op_text

# The register layouts the WGMMA rule fixes, made once (making a Reg hashes its layout).
_WGMMA = Reg(hl.WGMMA)
_WGMMA_8BIT = Reg(hl.WGMMA_8BIT)


def _optional_bool(op: Op, name: str) -> bool | None:
    attrs = op.operation.attributes
    if name not in attrs:
        return None
    return bool(ir.BoolAttr(attrs[name]).value)


def _smem_transfer(
    ctx: RuleContext,
    op: Op,
    ref_operand: int,
    reg_var: int,
    mode: Transfer,
    txmatrix: bool = True,
    *,
    store: bool,
) -> int:
    ref = ctx.program.values[op.operands[ref_operand]]
    smem_var = ctx.ref(op, ref_operand)
    ctx.add_sites(smem_var, ctx.operand(op, ref_operand))
    if ref.strides is None or ref.bitwidth is None:
        raise NotImplementedError(f"SMEM ref of type {ref.type} in `{op.name}` at {op.where}")
    ctx.require(
        SmemTransfer(
            Var(smem_var),
            Var(reg_var),
            ref.shape,
            ref.strides,
            ref.bitwidth,
            mode,
            op.id,
            txmatrix,
            store,
        )
    )
    return smem_var


@rule("mosaic_gpu.vector_load")
def vector_load(ctx: RuleContext, op: Op) -> None:
    """A load into registers: not a splat; from SMEM, a transfer plan must exist."""
    dest = ctx.new_var(ctx.result(op, 0))
    ctx.not_of_kind(dest, op, LayoutKind.SPLAT)
    if ctx.program.values[op.operands[0]].kind == Kind.SMEM:
        _smem_transfer(ctx, op, 0, dest, _transfer_mode(op), store=False)
    else:
        _gmem_transfer(ctx, op, 0, dest, store=False)


def _gmem_transfer(
    ctx: RuleContext, op: Op, ref_operand: int, reg_var: int, *, store: bool
) -> None:
    """A transfer with a dense GMEM ref needs a schedule, and must coalesce if optimized."""
    ref = ctx.program.values[op.operands[ref_operand]]
    if ref.strides is None or not ref.bitwidth:
        return
    if not isinstance(ref.type, ir.MemRefType) or ir.MemRefType(ref.type).memory_space is not None:
        return
    ctx.require(
        GmemTransfer(
            Var(reg_var), ref.shape, ref.strides, ref.bitwidth, op.id, _transfer_mode(op), store
        )
    )


def _where(op: Op) -> str:
    """The op (with the primitive's name where it says more) and its source location."""
    return op_text(op)


def _transfer_mode(op: Op) -> Transfer:
    """Optimized unless the op asks for ``optimized = false`` (loads and stores alike)."""
    return Transfer.UNOPTIMIZED if _optional_bool(op, "optimized") is False else Transfer.OPTIMIZED


@rule("mosaic_gpu.vector_store")
def vector_store(ctx: RuleContext, op: Op, txmatrix: bool = True) -> None:
    """A store from registers; to SMEM, a transfer plan must exist."""
    value = ctx.new_var(ctx.operand(op, 0))
    if ctx.program.values[op.operands[1]].kind == Kind.SMEM:
        _smem_transfer(ctx, op, 1, value, _transfer_mode(op), txmatrix, store=True)
    elif txmatrix:
        _gmem_transfer(ctx, op, 1, value, store=True)


@rule("mosaic_gpu.async_store_smem")
def async_store_smem(ctx: RuleContext, op: Op) -> None:
    """An asynchronous store to SMEM needs a tiled register layout (and a tiled ref)."""
    vector_store(ctx, op, txmatrix=False)
    value = ctx.system.var_of_site[ctx.operand(op, 0)]
    ctx.not_of_kind(value, op, LayoutKind.STRIDED, LayoutKind.SPLAT)
    bitwidth = ctx.program.values[op.operands[0]].bitwidth or 0
    ctx.require(StoreRegisters(Var(value), bitwidth, op.id))


@rule("mosaic_gpu.multimem_load_reduce", "mosaic_gpu.broadcasted_iota")
def not_splat_result(ctx: RuleContext, op: Op) -> None:
    """Values that differ per element cannot be splats."""
    ctx.not_of_kind(ctx.new_var(ctx.result(op, 0)), op, LayoutKind.SPLAT)


@rule("mosaic_gpu.debug_print")
def debug_print(ctx: RuleContext, op: Op) -> None:
    """Printing accepts any layout."""
    ctx.new_var(ctx.operand(op, 0))


@rule("mosaic_gpu.print_layout")
def print_layout(ctx: RuleContext, op: Op) -> None:
    """Printing a layout accepts any; for a ref, the ref's own."""
    site = ctx.operand(op, 0)
    if ctx.value(site).kind == Kind.VECTOR:
        ctx.new_var(site)
    else:
        ctx.add_sites(ctx.ref(op, 0), site)


@rule("mosaic_gpu.optimization_barrier")
def optimization_barrier(ctx: RuleContext, op: Op) -> None:
    """Each vector passes through with its layout, in registers of whole 32-bit words."""
    for i, v in enumerate(op.operands):
        value = ctx.program.values[v]
        if value.kind == Kind.VECTOR:
            var = ctx.new_var(ctx.operand(op, i), ctx.result(op, i))
            if value.bitwidth is not None and value.bitwidth < 32:
                ctx.require(RegisterBits(Var(var), value.bitwidth, 32, op.id))


@rule("mosaic_gpu.layout_cast")
def layout_cast(ctx: RuleContext, op: Op) -> None:
    """The result has the cast's layout; the operand must be convertible to it.

    A ``strict`` cast converts only from a splat: any other operand must
    already be in the cast layout.
    """
    operand = ctx.new_var(ctx.operand(op, 0))
    result = ctx.new_var(ctx.result(op, 0))
    layout = ctx.decode(op, op.operation.attributes["new_layout"])
    shape = ctx.program.values[op.operands[0]].shape

    def jax_text() -> str:
        # JAX's words (sic), for code written against its pass, but for the layout: by
        # name, as smalto names it, where JAX prints its repr (hundreds of characters).
        from smalto.hw.jax_text import layout_text  # (words: only where a cast does not fit)

        return (
            f"Cannot cast to layout {layout_text(layout)}: the layout is notcompatible "
            f"with the operand shape {shape} in {op.operation}."
        )

    ctx.fix(result, layout, op, "the cast result", jax_text)
    bitwidth = ctx.program.values[op.operands[0]].bitwidth or 0
    strict = bool(_optional_bool(op, "strict"))
    ctx.require(Relayout(Var(operand), Var(result), bitwidth, strict, op.id))


def _is_transposed(ctx: RuleContext, value_id: int) -> bool:
    strides = ctx.program.values[value_id].strides
    return strides is not None and hl.is_transposed(strides)


def mma_operand(ctx: RuleContext, op: Op, var: int, allow_unswizzled: bool = False) -> None:
    """An SMEM MMA operand takes one of the MMA (tiling, swizzle) pairs that tile it.

    The tile is (8, 8·s/bitwidth) for swizzle s = 128, 64, 32 (transposed on a
    transposed ref), with the operand's own element width; ``allow_unswizzled``
    adds the 16-byte tile without swizzle. None fitting is an error right away.
    """
    ref = ctx.system.variables[var]
    transposed = ref.strides is not None and hl.is_transposed(ref.strides)
    options, last = hl.mma_smem_options(ref.shape, ref.bitwidth or 8, transposed, allow_unswizzled)
    if not options:
        raise InferenceError(
            f"No valid tiling found for SMEM reference. {ref.shape} not divisible by "
            f"candidate tiling {last} ({_where(op)}: no MMA tile of "
            f"{ref.bitwidth}-bit elements fits the operand)"
        )
    ctx.require(one_of(Var(var), options, op.id))


@rule("mosaic_gpu.wgmma")
def wgmma(ctx: RuleContext, op: Op) -> None:
    """Accumulator in WGMMA layout; B (and A from SMEM) tiled and swizzled for the MMA, alike."""
    acc = ctx.new_var(ctx.operand(op, 0), ctx.result(op, 0), key=ctx.result(op, 0))
    ctx.fix(acc, _WGMMA, op, "the accumulator")
    b = ctx.ref(op, 2)
    mma_operand(ctx, op, b)
    ctx.add_sites(b, ctx.operand(op, 2))
    b_transposed = _is_transposed(ctx, op.operands[2])
    a_value = ctx.program.values[op.operands[1]]
    if a_value.kind == Kind.SMEM:
        a = ctx.ref(op, 1)
        # Tilings are logical: when exactly one operand is transposed, the
        # same physical tiling reads transposed on the other (the swizzle,
        # physical, is shared as is).
        same = _is_transposed(ctx, op.operands[1]) == b_transposed
        ctx.require(Equal(Var(a), Var(b) if same else Transpose(Var(b), (1, 0)), op.id))
        ctx.add_sites(a, ctx.operand(op, 1))
    else:
        a = ctx.new_var(ctx.operand(op, 1))
        ctx.fix(a, _WGMMA_8BIT if a_value.bitwidth == 8 else _WGMMA, op, "the register operand A")


@rule("mosaic_gpu.mma")
def mma(ctx: RuleContext, op: Op) -> None:
    """A warp-level MMA: accumulator, A and B in the MMA layouts of the element type.

    The accumulator's shape decides how the warps split between M and N.
    """
    m, n = ctx.program.values[op.operands[0]].shape
    try:
        view = cast(mgpu.MMAOp, op.view)  # the bindings' view of this op's name
        layouts = hl.mma_layouts(view.a.type.element_type, m, n)
    except ValueError as e:
        # JAX's words first, then where.
        raise InferenceError(f"{e} (`{op.name}` at {op.where})") from None
    acc = ctx.new_var(ctx.operand(op, 0), ctx.result(op, 0), key=ctx.result(op, 0))
    a, b = ctx.new_var(ctx.operand(op, 1)), ctx.new_var(ctx.operand(op, 2))
    for var, layout, what, jax_what in (
        (acc, layouts.acc, "the accumulator", "the accumulator of an mma op"),
        (a, layouts.lhs, "operand A", "the 'a' operand of MMAOp"),
        (b, layouts.rhs, "operand B", "the 'b' operand of MMAOp"),
    ):
        shape, kind = ctx.system.variables[var].shape, "accumulator" if var == acc else "operand"
        value = Reg(layout)
        ctx.fix(var, value, op, what, partial(_mma_jax_text, value, jax_what, kind, shape))


def _mma_jax_text(layout: Reg, jax_what: str, kind: str, shape: tuple[int, ...]) -> str:
    """JAX's words for an mma layout that does not fit, for code written against its pass
    (the layout by name, as JAX's other messages print it: never its long repr)."""
    from smalto.hw.jax_text import layout_text  # (words: where an mma's layout does not fit)

    return (
        f"Cannot assign layout {layout_text(layout)} to {jax_what}: the layout is "
        f"not compatible with the {kind} shape {shape}."
    )


def _user_transforms(ctx: RuleContext, op: Op, attr: ir.Attribute) -> Smem:
    """The transforms an op states for a ref, as given (a tile alone: unswizzled)."""
    try:
        return ctx.decode_transforms(attr)
    except ValueError as e:  # a swizzle JAX does not accept
        raise InferenceError(f"{ctx.describe_op(op)} has invalid transforms {attr}: {e}") from None


@rule("mosaic_gpu.with_transforms")
def with_transforms(ctx: RuleContext, op: Op) -> None:
    """The user's transforms are the ref's; they must be valid for it."""
    var = ctx.ref(op, 0)
    value = _user_transforms(ctx, op, op.operation.attributes["transforms"])
    ref = ctx.system.variables[var]
    if not hl.smem_valid(value, ref.shape, ref.strides, ref.bitwidth):
        tiling = (
            f"tiling {hl.tile_transform_text(value.tiling)}"
            if value.tiling is not None
            else "empty tiling"
        )
        swizzle = f"{value.swizzle} swizzle" if value.swizzle else "no swizzle"
        shape = ctx.program.values[op.operands[0]].shape
        from smalto.hw.names import describe_value  # (words: only where it refuses)

        # JAX's words first (its phrase), then which op, in smalto's.
        phrase = (
            f"{FAILURE_PREFIX}: Cannot apply {tiling} with {swizzle} to memref with shape {shape}."
        )
        text = (
            f"{ctx.describe_op(op)} gives a ref of shape {shape} the transforms "
            f"{describe_value(value)}: the tiling must tile the ref, and a swizzle must fit "
            "in its minor tile dimension"
        )
        raise ctx.unfit(Fixed(var, value, op.id, "the ref"), op, text, phrase)
    ctx.fix(var, value, op, "the ref")
    ctx.add_sites(var, ctx.operand(op, 0), ctx.result(op, 0))


@rule("mosaic_gpu.slice_smem")
def slice_smem(ctx: RuleContext, op: Op) -> None:
    """A new SMEM ref; slices with the same alias id are one ref, whatever their offsets."""
    ctx.aliased_var("smem", op, ctx.result(op, 0))


@rule("mosaic_gpu.get_cluster_ref")
def same_ref(ctx: RuleContext, op: Op) -> None:
    """The result is the operand ref, seen differently: same transforms."""
    ctx.add_sites(ctx.ref(op, 0), ctx.operand(op, 0), ctx.result(op, 0))


@rule("mosaic_gpu.try_cluster_cancel", "mosaic_gpu.query_cluster_cancel")
def cluster_cancel(ctx: RuleContext, op: Op) -> None:
    """The cancellation response buffer is untiled."""
    var = ctx.ref(op, 0)
    ctx.fix(var, hl.UNTILED, op, "the response ref")
    ctx.add_sites(var, ctx.operand(op, 0))


@rule("mosaic_gpu.custom_primitive")
def custom_primitive(ctx: RuleContext, op: Op) -> None:
    """The primitive declares its operands' and results' layouts and transforms."""
    in_layouts = iter(ir.ArrayAttr(op.operation.attributes["in_layouts"]))
    in_transforms = iter(ir.ArrayAttr(op.operation.attributes["in_transforms"]))
    values = ctx.program.values
    for i, v in enumerate(op.operands):
        kind = values[v].kind
        if kind == Kind.VECTOR:
            var = ctx.new_var(ctx.operand(op, i))
            ctx.fix(var, ctx.decode(op, next(in_layouts)), op, f"operand #{i}")
        elif kind == Kind.SMEM:
            # A fresh variable, equal to the ref: the same ref passed twice with
            # different transforms must conflict, not overwrite.
            source = ctx.ref(op, i)
            var = ctx.new_var(ctx.operand(op, i))
            ctx.require(Equal(Var(source), Var(var), op.id))
            # Checked for the ref when the equality carries it over, as for
            # any assignment: an invalid one makes the system unsatisfiable.
            value = _user_transforms(ctx, op, next(in_transforms))
            ctx.fix(var, value, op, f"operand #{i}", check=False)
    out_layouts = iter(ir.ArrayAttr(op.operation.attributes["out_layouts"]))
    for i, v in enumerate(op.results):
        if values[v].kind == Kind.VECTOR:
            var = ctx.new_var(ctx.result(op, i))
            ctx.fix(var, ctx.decode(op, next(out_layouts)), op, f"result #{i}")


@rule("mosaic_gpu.broadcast_in_dim")
def broadcast_in_dim(ctx: RuleContext, op: Op) -> None:
    """The source's layout is the destination's reduced over the broadcast dims."""
    src = ctx.new_var(ctx.operand(op, 0))
    dst = ctx.new_var(ctx.result(op, 0))
    src_shape = ctx.program.values[op.operands[0]].shape
    dst_shape = ctx.program.values[op.results[0]].shape
    dims = ctx.ints(op.operation.attributes["broadcast_dimensions"])
    source_of = {d: s for s, d in enumerate(dims)}
    expanded = [
        d
        for d in range(len(dst_shape))
        if d in source_of and src_shape[source_of[d]] == 1 and dst_shape[d] > 1
    ]
    added = [d for d in range(len(dst_shape)) if d not in source_of]
    expr: Expr = Var(dst)
    # Size-1 dims grown by the broadcast reduce with keep_dims first (keeping
    # the rank, so the indices of the added dims stay valid), then added dims go.
    if expanded:
        expr = Reduce(expr, tuple(expanded), len(dst_shape), keep_dims=True)
    if added:
        expr = Reduce(expr, tuple(added), len(dst_shape), keep_dims=False)
    ctx.require(Equal(Var(src), expr, op.id), Broadcast(Var(src), Var(dst), dims, op.id))
    ctx.require(FullyTiled(Var(dst), len(dst_shape), op.id))


# The operand segment of a TMA op's indices. The segments before it are the
# refs and, for async_load, an optional barrier: read the segment sizes, as
# the position of the first index depends on which are present.
_INDEX_SEGMENT = {
    "mosaic_gpu.async_load": 3,
    "mosaic_gpu.async_store": 2,
    "mosaic_gpu.async_prefetch": 1,
}


def _index_operands(ctx: RuleContext, op: Op) -> range:
    """The operand positions of a TMA op's indices (one attribute read)."""
    return ctx.segment(op, _INDEX_SEGMENT[op.name])


def _gather_index_layouts(ctx: RuleContext, op: Op, indices: range | None = None) -> None:
    """Vector indices (TMA gather/scatter) take one of the TMA index layouts.

    TMA_INDICES (16 rows per step) where the rows allow it, else (or
    failing that) TMA_INDICES_4. ``indices``: the index operands' positions,
    where the caller has them.
    """
    for i in _index_operands(ctx, op) if indices is None else indices:
        value = ctx.program.values[op.operands[i]]
        if value.kind != Kind.VECTOR:
            continue
        allowed: list[Reg] = []
        if value.shape[0] % 16 == 0:
            allowed.append(Reg(hl.TMA_INDICES))
        if value.shape[0] % 4 == 0:
            allowed.append(Reg(hl.TMA_INDICES_4))
        if not allowed:
            raise InferenceError(
                f"Unsupported TMA index shape {value.shape}: `{op.name}` at {op.where} "
                "gathers or scatters a number of rows that is not a multiple of 4"
            )
        var = ctx.new_var(ctx.operand(op, i))
        ctx.require(one_of(Var(var), tuple(allowed), op.id))


@rule("mosaic_gpu.async_load", "mosaic_gpu.async_store")
def async_copy(ctx: RuleContext, op: Op) -> None:
    """A TMA copy: the SMEM tiling must divide the slice, given what is known of its offsets."""
    is_load = op.name == "mosaic_gpu.async_load"
    smem_operand = 1 if is_load else 0
    gmem = ctx.program.values[op.operands[0 if is_load else 1]]
    multiple: list[int] = []
    has_gather = False
    indices = _index_operands(ctx, op)
    first_index = indices.start
    slice_lengths = ctx.ints(op.operation.attributes["slice_lengths"])
    for i, size in enumerate(slice_lengths):
        if size == -1:
            continue  # squeezed: not a dimension of the SMEM ref
        index = op.operands[first_index + i]
        if ctx.program.values[index].kind == Kind.VECTOR:
            has_gather = True
            if i != 0:
                raise NotImplementedError(
                    f"Only leading gather dimensions allowed. `{op.name}` at {op.where} "
                    f"gathers along dim {i}"
                )
            if len(gmem.shape) != 2:
                raise NotImplementedError(
                    "Only 2D gathers/scatters for async load/store are supported. "
                    f"`{op.name}` at {op.where} gathers from a {len(gmem.shape)}D ref"
                )
            multiple.append(size)
            continue
        multiple.append(ctx.divisibility.known_divisor(size, index))
    var = ctx.ref(op, smem_operand)
    expr = Var(var)  # shared by the constraints below: records are never changed
    ctx.require(Divides(expr, tuple(multiple), op.id))
    ref = ctx.program.values[op.operands[smem_operand]]
    if ref.shape and ref.bitwidth and ref.strides:
        cp_async = is_load and not ctx.segment(op, 2)  # no barrier: cp.async, not TMA
        ctx.require(TmaRows(expr, ref.shape, ref.strides, ref.bitwidth, op.id, cp_async))
    if has_gather:
        # Each of the 4 rows a gather writes at once must be 256-bit aligned.
        divisor = (1024 // 4) // (ctx.program.values[op.operands[smem_operand]].bitwidth or 1)
        lengths = [s for s in slice_lengths if s != -1]
        if lengths and lengths[-1] % divisor:
            raise InferenceError(
                "Cannot assign layout to async load with gather indices since minor "
                f"dim={lengths[-1]} is not divisible by {divisor=} bits. `{op.name}` at "
                f"{op.where}: each row a gather writes must be a multiple of {divisor} elements"
                f"\nsuggestion: gather rows of {-(-lengths[-1] // divisor) * divisor} elements "
                f"instead of {lengths[-1]} (widen the slice of the minor dim, padding the "
                "GMEM array if needed, and use the part you need), or copy the rows without "
                f"gather indices\n{code_line(TMA_GATHER)}",
                code=TMA_GATHER,
            )
        ctx.require(MinorTileDivisible(expr, divisor, op.id))
    ctx.add_sites(var, Site(op.id, Role.OPERAND, smem_operand))
    _gather_index_layouts(ctx, op, indices)


@rule("mosaic_gpu.async_prefetch")
def async_prefetch(ctx: RuleContext, op: Op) -> None:
    """A prefetch has no SMEM side; only its vector indices need layouts."""
    _gather_index_layouts(ctx, op)


@rule("mosaic_gpu.warp_map")
def warp_map(ctx: RuleContext, op: Op) -> None:
    """Refs passed into a warp_map body keep their layout inside (barriers have none)."""
    values = ctx.program.values
    for i, v in enumerate(op.operands):
        if values[v].kind == Kind.TMEM or values[v].transformable:
            ctx.add_sites(ctx.ref(op, i), ctx.operand(op, i), ctx.argument(op, 0, i))
