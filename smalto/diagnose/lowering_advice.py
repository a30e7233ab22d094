"""What the lowering says of a conflict, in Pallas terms, where no layout lowers for a
reason of the lowering.

- A GMEM transfer: JAX's lowering moves a register value to or from a GMEM
  ref only if each thread moves at least 4 bytes and each warp whole 32-byte
  sectors (an optimized ``vector_load``/``vector_store``;
  ``plan_gmem_transfer``). Values that come from TMEM (one row a lane) or
  from a row reduction of one (one element a lane) often have no layout
  that does, in 16-bit types none at all; nor does a column of a GMEM table
  (``w_ref[:, j]``: neighbours 8-16 bytes apart). ``Advice.why`` says why
  the lowering refuses the layout JAX's pass would have chosen (its own
  words); the fix (the transfer made unoptimized at the user's line) is an
  edit the diagnosis verifies; ``Advice.faster`` is the fast alternative,
  staging through SMEM with a TMA copy (with transforms checked against the
  lowering for that layout; never for a strided GMEM view, which a TMA copy
  cannot take). Nothing here changes what the kernel computes or returns.
- A computed (N, 1) value broadcast to (N, M): JAX 0.12's lowering
  broadcasts a size-1 dim of a tiled value only where that value is itself
  a broadcast; a keep-dims reduction, an elementwise op on an expanded
  value, or a load keeping the unit dim leaves it unbroadcastable. The
  remedy (``Advice.remedy``): compute, or load, without the unit dim and
  expand it where it is broadcast.
"""

from __future__ import annotations

from jax._src.lib.mlir import ir

from smalto.basics.records import value_class
from smalto.check.transfers import gmem_transfer_problem
from smalto.constraints.language import Constraint, GmemTransfer
from smalto.hw import layouts as hl
from smalto.hw.names import describe_value
from smalto.hw.strides import row_major
from smalto.hw.transfers import Transfer, smem_transfer_supported
from smalto.hw.values import Const, Reg
from smalto.program.view import Program

STORE = "mosaic_gpu.vector_store"
LOAD = "mosaic_gpu.vector_load"
BROADCAST = "mosaic_gpu.broadcast_in_dim"
# The option that makes the verified unoptimized edit for the user (``allow_unoptimized``).
OPTION = (
    "compile the kernel as written, with smalto making them unoptimized: "
    "`smalto.jax.install(allow_unoptimized=True)` (or `SMALTO_JAX_ALLOW_UNOPTIMIZED=1`, "
    "`smalto infer --allow-unoptimized`)"
)


def none_keeps_it_fast(tried: int) -> str:
    """Said where the only fixes of a transfer with no plan make it unoptimized
    (``tried``: the candidate edits looked at, the unoptimized transfer included)."""
    others = tried - 1
    if others <= 0:
        return (
            "no layout annotation of the kernel is involved, so no edit of one keeps this "
            "transfer optimized"
        )
    return (
        f"no single edit of the layout annotations keeps this transfer optimized (smalto "
        f"tried {others}: other targets for each cast and other transforms for each SMEM ref)"
    )


@value_class(frozen=True)
class Advice:
    """What the lowering says of a conflict, and what else to write."""

    why: str | None = None  # JAX's layout and the lowering's words against it
    faster: str | None = None  # the fast alternative to an unoptimized transfer (SMEM)
    remedy: str | None = None  # where no edit of an annotation helps (keep-dims code)


def advice(
    program: Program,
    core: list[object],
    jax_answer_breaks: list[tuple[Constraint, Const]],
    arch: tuple[int, int],
    name: dict[int, str],
) -> Advice:
    """What to say of the conflict's GMEM transfer, else of its broadcast of a computed
    unit dim (an empty ``Advice`` where it has neither).

    ``jax_answer_breaks``: the requirements the answer in JAX's order broke,
    with the layout it gave (``NoLayouts.jax_answer_breaks``); ``name`` names
    the values of the core's transfers (by constraint origin op).
    """
    transfers = [e for e in core if isinstance(e, GmemTransfer)]
    if not transfers:
        return Advice(remedy=_unit_dim_broadcast(program, core))
    chosen = {c.origin: value for c, value in jax_answer_breaks if isinstance(c, GmemTransfer)}
    for c in transfers:
        value = chosen.get(c.origin)
        if isinstance(value, Reg):
            who = name.get(c.origin, "the value")
            return Advice(_why(c, value, arch, who), _staging(program, c, value, who))
    c = transfers[0]
    return Advice(faster=_staging(program, c, None, name.get(c.origin, "the value")))


def _why(c: GmemTransfer, value: Reg, arch: tuple[int, int], who: str) -> str:
    reason = gmem_transfer_problem(
        value.layout,
        c.shape,
        c.strides,
        c.bitwidth,
        optimized=c.mode is Transfer.OPTIMIZED,
        arch=arch,
    )
    said = f" ({reason})" if reason else ""
    view = "" if c.strides == row_major(c.shape) else f" through a view of strides {c.strides}"
    return (
        f"JAX's pass would give {who} {describe_value(value)}, which its lowering rejects"
        f"{said}{view}; no layout of it coalesces"
    )


def _staging(program: Program, c: GmemTransfer, value: Reg | None, who: str) -> str | None:
    """The fast alternative: the value through SMEM and a TMA copy (none for a GMEM view
    a TMA copy cannot take: it needs a contiguous last dimension and 16-byte strides)."""
    if not _tma_takes(c):
        return None
    if program.ops[c.origin].name == STORE:
        return (
            "store it into an SMEM scratch ref (`o_smem[...] = "
            f"{_pallas_name(who)}`{_transforms(value, c)}), then `plgpu.commit_smem()` and "
            "`plgpu.copy_smem_to_gmem(o_smem, o_ref)` (a TMA copy): every transfer stays "
            "optimized (`smalto fix` writes it)"
        )
    return (
        "copy it into SMEM first (`plgpu.copy_gmem_to_smem(x_ref, "
        f"x_smem, barrier)`, then `plgpu.barrier_wait(barrier)`{_transforms(value, c)}) and "
        "load it from there: every transfer stays optimized (`smalto fix` writes it)"
    )


def _tma_takes(c: GmemTransfer) -> bool:
    """Whether a TMA copy takes the GMEM view: its last dimension contiguous and every
    other stride a multiple of 16 bytes (a ``pl.ds`` block of columns, a row of a 3-D
    ref), not a column of a table."""
    if not c.strides or c.strides[-1] != 1 or c.shape[-1] * c.bitwidth < 128:
        return False
    return all((s * c.bitwidth) % 128 == 0 for s in c.strides[:-1])


def _transforms(value: Reg | None, c: GmemTransfer) -> str:
    """The SMEM transforms under which the lowering moves ``value`` (", with ..."), if any."""
    if value is None or len(c.shape) < 2:
        return ""
    contiguous = row_major(c.shape)
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


def _pallas_name(who: str) -> str:
    """The user's name in ``who`` (`` `s` (%53)`` -> ``s``), else ``x``."""
    if who.startswith("`") and "`" in who[1:]:
        return who[1 : who.index("`", 1)]
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
        made_by = program.ops[producer.op].name if producer is not None else None
        shape = "x".join(map(str, source.shape))
        if grown and made_by == LOAD:
            # Statistics read back keeping their unit dim: the value is loaded, not computed.
            return (
                f"a {shape} value loaded with its size-1 dim is broadcast along it, which "
                "JAX 0.12's lowering does in no tiled layout; load it without the unit dim "
                "and expand it where it is broadcast: e.g. `m = m_ref[:, 0]` then "
                "`s - m[:, None]`, instead of `s - m_ref[...]`"
            )
        if grown and made_by != BROADCAST:
            return (
                f"a computed {shape} value (a keep-dims reduction, or arithmetic on an "
                "expanded value) is broadcast along its size-1 dim, which JAX 0.12's lowering "
                "does in no tiled layout; compute it without the unit dim and expand it where "
                "it is broadcast: e.g. `m = jnp.max(s, axis=-1)` then `s - m[:, None]` instead "
                "of `keepdims=True`, and cast before expanding (`g.astype(jnp.float32)[:, None, "
                ":]`, not `g[:, None, :].astype(jnp.float32)`)"
            )
    return None
