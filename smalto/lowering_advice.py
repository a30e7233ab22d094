"""What to change, in Pallas terms, where no layout lowers for a reason of the lowering.

- A GMEM transfer: JAX's lowering moves a register value to or from a GMEM
  ref only if each thread moves at least 4 bytes and each warp whole 32-byte
  sectors (an optimized ``vector_load``/``vector_store``;
  ``plan_gmem_transfer``). Values that come from TMEM (one row a lane) or
  from a row reduction of one (one element a lane) often have no layout
  that does, in 16-bit types none at all. The message says why the lowering
  refuses the layout JAX's pass would have chosen (its own words), and what
  to write instead; each remedy is checked against the lowering for that
  layout first (a 32-bit store must then coalesce; an SMEM ref must take the
  layout with the transforms named).
- A computed (N, 1) value broadcast to (N, M): JAX 0.12's lowering
  broadcasts a size-1 dim of a tiled value only where that value is itself
  a broadcast; a keep-dims reduction, or an elementwise op on an expanded
  value, leaves it computed. The remedy: compute without the unit dim and
  expand it where it is broadcast.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Protocol

from jax._src.lib.mlir import ir

from smalto.check.transfers import gmem_transfer_problem
from smalto.constraints import Constraint, GmemTransfer
from smalto.hw import layouts as hl
from smalto.hw.names import describe_value
from smalto.hw.transfers import Transfer, smem_transfer_supported
from smalto.hw.values import Const, Reg
from smalto.program import Program

if TYPE_CHECKING:
    from collections.abc import Sequence

STORE = "mosaic_gpu.vector_store"
BROADCAST = "mosaic_gpu.broadcast_in_dim"
OPTION = (
    "or let smalto make them unoptimized for you: `allow_unoptimized=True` "
    "(`smalto.jax.install(allow_unoptimized=True)`, `SMALTO_JAX_ALLOW_UNOPTIMIZED=1`, "
    "`smalto infer --allow-unoptimized`)"
)


class TransferEdit(Protocol):
    """A transfer to make unoptimized (``smalto.rewrite.transfers.UnoptimizedOp``)."""

    location: str
    pallas_edit: str
    cost: str


def advice(
    program: Program,
    core: list[object],
    jax_answer_breaks: list[tuple[Constraint, Const]],
    arch: tuple[int, int],
    name: dict[int, str],
    unoptimized: Sequence[TransferEdit] = (),
) -> str | None:
    """The remedy for the conflict's GMEM transfer, else for its broadcast of a computed
    unit dim; None if it has neither.

    ``jax_answer_breaks``: the requirements the answer in JAX's order broke,
    with the layout it gave (``Solver.jax_answer_breaks``); ``name`` names
    the values of the core's transfers (by constraint origin op);
    ``unoptimized``: the fewest transfers which, unoptimized, let the kernel
    infer (none if no such set exists).
    """
    transfers = [e for e in core if isinstance(e, GmemTransfer)]
    if not transfers:
        if unoptimized:
            return _unoptimized(unoptimized)
        return _unit_dim_broadcast(program, core)
    chosen = {c.origin: value for c, value in jax_answer_breaks if isinstance(c, GmemTransfer)}
    for c in transfers:
        value = chosen.get(c.origin)
        if isinstance(value, Reg):
            return _for_layout(
                program, c, value, arch, name.get(c.origin, "the value"), unoptimized
            )
    c = transfers[0]
    return _remedies(program, c, None, name.get(c.origin, "the value"), unoptimized)


def _unoptimized(edits: Sequence[TransferEdit]) -> str:
    """Make these transfers unoptimized, at the user's lines."""
    said = "; ".join(f"`{e.pallas_edit}` at {e.location}" for e in edits)
    these = "this transfer" if len(edits) == 1 else f"these {len(edits)} transfers"
    return f"make {these} unoptimized where written: {said} ({edits[0].cost}); {OPTION}"


def _for_layout(
    program: Program,
    c: GmemTransfer,
    value: Reg,
    arch: tuple[int, int],
    who: str,
    unoptimized: Sequence[TransferEdit],
) -> str:
    reason = gmem_transfer_problem(
        value.layout,
        c.shape,
        c.strides,
        c.bitwidth,
        optimized=c.mode is Transfer.OPTIMIZED,
        arch=arch,
    )
    said = f" ({reason})" if reason else ""
    head = (
        f"JAX's pass would give {who} {describe_value(value)}, which its lowering rejects{said}; "
    )
    return head + _remedies(program, c, value, who, unoptimized)


def _remedies(
    program: Program,
    c: GmemTransfer,
    value: Reg | None,
    who: str,
    unoptimized: Sequence[TransferEdit],
) -> str:
    op = program.ops[c.origin]
    options: list[str] = [_unoptimized(unoptimized)] if unoptimized else []
    if c.strides != _row_major(c.shape):
        # A TMA copy needs a contiguous minor dim and 16-byte strides: a column is neither.
        return "; or ".join(options) if options else "no remedy keeps the kernel as it is"
    if op.name == STORE:
        options.append(
            "stage it through SMEM: store it into an SMEM scratch ref (`o_smem[...] = "
            f"{_pallas_name(who)}`{_transforms(value, c)}), then `plgpu.commit_smem()` and "
            "`plgpu.copy_smem_to_gmem(o_smem, o_ref)`"
        )
    else:
        options.append(
            "copy it into SMEM first (`plgpu.copy_gmem_to_smem(x_ref, x_smem, barrier)`, "
            f"then `plgpu.barrier_wait(barrier)`{_transforms(value, c)}) and load it from "
            "there"
        )
    return "; or ".join(options)


def _transforms(value: Reg | None, c: GmemTransfer) -> str:
    """The SMEM transforms under which the lowering moves ``value`` (", with ..."), if any."""
    if value is None or len(c.shape) < 2:
        return ""
    contiguous = _row_major(c.shape)
    for swizzle in hl.SWIZZLES:
        tile = (8, 8 * swizzle // c.bitwidth)
        if smem_transfer_supported(
            tile, swizzle, value.layout, c.shape, contiguous, c.bitwidth, c.mode, True, c.store
        ):
            return (
                f", with `transforms=(plgpu.TilingTransform({tile}), "
                f"plgpu.SwizzleTransform({swizzle}))` on the scratch ref"
            )
    return ""


def _row_major(shape: tuple[int, ...]) -> tuple[int, ...]:
    strides, size = [], 1
    for n in reversed(shape):
        strides.append(size)
        size *= n
    return tuple(reversed(strides))


def _pallas_name(who: str) -> str:
    return "x" if who.startswith("%") or who == "the value" else who


def _unit_dim_broadcast(program: Program, core: list[object]) -> str | None:
    """The remedy where the conflict broadcasts a computed size-1 dim (keep-dims code)."""
    for element in core:
        origin = getattr(element, "origin", None)
        if origin is None or program.ops[origin].name != BROADCAST:
            continue
        op = program.ops[origin]
        source = program.values[op.operands[0]]
        result = program.values[op.results[0]]
        dims = [
            int(d) for d in ir.DenseI64ArrayAttr(op.operation.attributes["broadcast_dimensions"])
        ]
        grown = [d for s, d in enumerate(dims) if source.shape[s] == 1 and result.shape[d] > 1]
        producer = source.producer
        computed = producer is None or program.ops[producer.op].name != BROADCAST
        if grown and computed:
            shape = "x".join(map(str, source.shape))
            return (
                f"a computed {shape} value (a keep-dims reduction, or arithmetic on an "
                "expanded value) is broadcast along its size-1 dim, which JAX 0.12's lowering "
                "does in no tiled layout; compute it without the unit dim and expand it where "
                "it is broadcast: e.g. `m = jnp.max(s, axis=-1)` then `s - m[:, None]` instead "
                "of `keepdims=True`, and cast before expanding (`g.astype(jnp.float32)[:, None, "
                ":]`, not `g[:, None, :].astype(jnp.float32)`)"
            )
    return None
