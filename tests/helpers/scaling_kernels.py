"""Synthetic Mosaic GPU kernels of growing size, for the scaling benchmark.

``attention_kernel(n)`` builds the MLIR text (generic op form, as JAX hands
modules to its layout-inference pass) of a Hopper kernel made of ``n``
attention-like blocks, one after another inside a ``gpu.launch``. Each block
is a flash-attention inner loop over key/value tiles held in shared memory:

- an ``scf.for`` carrying the output accumulator, the running row maximum and
  the running row sum (loop-carried register values, as in the real kernel);
- ``S = Q Kᵀ`` by ``mosaic_gpu.wgmma`` with both operands in SMEM (``Kᵀ``
  through ``memref.transpose``);
- a bias tile read from SMEM with ``mosaic_gpu.vector_load`` and added;
- the online softmax: ``vector.multi_reduction`` over dim 1 (max and sum),
  ``mosaic_gpu.broadcast_in_dim`` back to the tile, ``subf``/``mulf``/``math.exp``;
- ``O += P V`` by a second ``wgmma`` with ``P`` (truncated to f16) in registers;

and after the loop the normalization ``O / l``, a ``truncf`` and a
``mosaic_gpu.vector_store`` to SMEM. Constants are shared by all blocks at
the top of the launch body, as JAX's lowering hoists them.

Every block reads and writes its own SMEM tiles, so the kernel grows linearly
in ops while staying one connected module (the shared constants tie the
blocks' layouts together, as hoisted constants do in real kernels).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable

# Tile sizes: a 64-row query block, 64-key tiles, head dimension 64 (f16:
# 128-byte rows, so JAX picks 128-byte swizzles).
ROWS = 64
KEYS = 64
HEAD = 64
KV_STEPS = 4

_SMEM = "#gpu.address_space<workgroup>"
_F32_TILE = f"vector<{ROWS}x{KEYS}xf32>"
_F16_TILE = f"vector<{ROWS}x{KEYS}xf16>"
_F32_OUT = f"vector<{ROWS}x{HEAD}xf32>"
_F16_OUT = f"vector<{ROWS}x{HEAD}xf16>"
_F32_ROW = f"vector<{ROWS}xf32>"
_FASTMATH = "<{fastmath = #arith.fastmath<none>}>"
# The WGMMA register layout, as a `layout_cast` names it.
WGMMA_ATTR = (
    "#mosaic_gpu.TiledLayout<[[64, 8], [16, 8], [8, 8], [2]], warp_dims = [-7], "
    "lane_dims = [-3, -2], vector_dim = -1>"
)


def _smem(shape: tuple[int, ...], dtype: str, strides: tuple[int, ...] | None = None) -> str:
    dims = "x".join(str(d) for d in shape)
    layout = "" if strides is None else f", strided<[{', '.join(str(s) for s in strides)}]>"
    return f"memref<{dims}x{dtype}{layout}, {_SMEM}>"


@dataclasses.dataclass
class _Writer:
    """Emits generic-form ops with fresh SSA names."""

    lines: list[str] = dataclasses.field(default_factory=list)
    counter: int = 0
    indent: int = 0

    def fresh(self) -> str:
        name = f"%v{self.counter}"
        self.counter += 1
        return name

    def line(self, text: str) -> None:
        self.lines.append("  " * self.indent + text)

    def op(self, text: str, result: bool = True) -> str:
        if not result:
            self.line(text)
            return ""
        name = self.fresh()
        self.line(f"{name} = {text}")
        return name


@dataclasses.dataclass(frozen=True)
class _Constants:
    zero_i32: str
    one_i32: str
    steps_i32: str
    zero_tile: str  # f32 accumulator for S
    zero_out: str  # f32 accumulator for O
    neg_inf_row: str
    zero_row: str
    scale_tile: str


def _constants(w: _Writer) -> _Constants:
    def const(value: str, ty: str) -> str:
        return w.op(f'"arith.constant"() <{{value = {value}}}> : () -> {ty}')

    return _Constants(
        zero_i32=const("0 : i32", "i32"),
        one_i32=const("1 : i32", "i32"),
        steps_i32=const(f"{KV_STEPS} : i32", "i32"),
        zero_tile=const(f"dense<0.000000e+00> : {_F32_TILE}", _F32_TILE),
        zero_out=const(f"dense<0.000000e+00> : {_F32_OUT}", _F32_OUT),
        neg_inf_row=const(f"dense<0xFF800000> : {_F32_ROW}", _F32_ROW),
        zero_row=const(f"dense<0.000000e+00> : {_F32_ROW}", _F32_ROW),
        scale_tile=const(f"dense<1.250000e-01> : {_F32_TILE}", _F32_TILE),
    )


def _binary(w: _Writer, name: str, lhs: str, rhs: str, ty: str) -> str:
    return w.op(f'"arith.{name}"({lhs}, {rhs}) {_FASTMATH} : ({ty}, {ty}) -> {ty}')


def _unary_math(w: _Writer, name: str, x: str, ty: str) -> str:
    return w.op(f'"math.{name}"({x}) <{{fastmath = #arith.fastmath<afn>}}> : ({ty}) -> {ty}')


def _row_reduce(w: _Writer, kind: str, x: str, init: str) -> str:
    return w.op(
        f'"vector.multi_reduction"({x}, {init}) <{{kind = #vector.kind<{kind}>, '
        f"reduction_dims = array<i64: 1>}}> : ({_F32_TILE}, {_F32_ROW}) -> {_F32_ROW}"
    )


def _broadcast_rows(w: _Writer, row: str, tile: str) -> str:
    return w.op(
        f'"mosaic_gpu.broadcast_in_dim"({row}) <{{broadcast_dimensions = array<i64: 0>}}> '
        f": ({_F32_ROW}) -> {tile}"
    )


def _slice_smem(w: _Writer, offset: int, ty: str) -> str:
    return w.op(f'"mosaic_gpu.slice_smem"() <{{offset = {offset} : i32}}> : () -> {ty}')


def _block(w: _Writer, c: _Constants, index: int) -> None:
    # Each block owns a disjoint SMEM region: Q, K, V, bias, O.
    q_bytes = ROWS * HEAD * 2
    kv_bytes = KEYS * HEAD * 2
    bias_bytes = ROWS * KEYS * 4
    base = index * (q_bytes + 2 * kv_bytes + bias_bytes + q_bytes)
    q_ty = _smem((ROWS, HEAD), "f16")
    k_ty = _smem((KEYS, HEAD), "f16")
    kt_ty = _smem((HEAD, KEYS), "f16", strides=(1, HEAD))
    v_ty = _smem((KEYS, HEAD), "f16")
    bias_ty = _smem((ROWS, KEYS), "f32")
    o_ty = _smem((ROWS, HEAD), "f16")

    q = _slice_smem(w, base, q_ty)
    k = _slice_smem(w, base + q_bytes, k_ty)
    v = _slice_smem(w, base + q_bytes + kv_bytes, v_ty)
    bias = _slice_smem(w, base + q_bytes + 2 * kv_bytes, bias_ty)
    out = _slice_smem(w, base + q_bytes + 2 * kv_bytes + bias_bytes, o_ty)

    loop = w.fresh()
    step, acc, m, row_sum_in = (f"%b{index}_{name}" for name in ("step", "acc", "m", "l"))
    w.line(
        f'{loop}:3 = "scf.for"({c.zero_i32}, {c.steps_i32}, {c.one_i32}, '
        f"{c.zero_out}, {c.neg_inf_row}, {c.zero_row}) ({{"
    )
    w.line(f"^bb0({step}: i32, {acc}: {_F32_OUT}, {m}: {_F32_ROW}, {row_sum_in}: {_F32_ROW}):")
    w.indent += 1
    kt = w.op(f'"memref.transpose"({k}) <{{permutation = #transpose}}> : ({k_ty}) -> {kt_ty}')
    s = w.op(
        f'"mosaic_gpu.wgmma"({c.zero_tile}, {q}, {kt}) : '
        f"({_F32_TILE}, {q_ty}, {kt_ty}) -> {_F32_TILE}"
    )
    b = w.op(
        f'"mosaic_gpu.vector_load"({bias}) <{{optimized = true}}> : ({bias_ty}) -> {_F32_TILE}'
    )
    s = _binary(w, "addf", s, b, _F32_TILE)
    s = _binary(w, "mulf", s, c.scale_tile, _F32_TILE)
    row_max = _row_reduce(w, "maximumf", s, c.neg_inf_row)
    m_new = _binary(w, "maximumf", m, row_max, _F32_ROW)
    alpha = _unary_math(w, "exp", _binary(w, "subf", m, m_new, _F32_ROW), _F32_ROW)
    shifted = _binary(w, "subf", s, _broadcast_rows(w, m_new, _F32_TILE), _F32_TILE)
    p = _unary_math(w, "exp", shifted, _F32_TILE)
    row_sum = _row_reduce(w, "add", p, c.zero_row)
    l_new = _binary(w, "addf", _binary(w, "mulf", row_sum_in, alpha, _F32_ROW), row_sum, _F32_ROW)
    acc_scaled = _binary(w, "mulf", acc, _broadcast_rows(w, alpha, _F32_OUT), _F32_OUT)
    p16 = w.op(f'"arith.truncf"({p}) : ({_F32_TILE}) -> {_F16_TILE}')
    acc_new = w.op(
        f'"mosaic_gpu.wgmma"({acc_scaled}, {p16}, {v}) : '
        f"({_F32_OUT}, {_F16_TILE}, {v_ty}) -> {_F32_OUT}"
    )
    w.op(
        f'"scf.yield"({acc_new}, {m_new}, {l_new}) : ({_F32_OUT}, {_F32_ROW}, {_F32_ROW}) -> ()',
        result=False,
    )
    w.indent -= 1
    w.line(
        f"}}) : (i32, i32, i32, {_F32_OUT}, {_F32_ROW}, {_F32_ROW}) -> "
        f"({_F32_OUT}, {_F32_ROW}, {_F32_ROW})"
    )
    o = _binary(w, "divf", f"{loop}#0", _broadcast_rows(w, f"{loop}#2", _F32_OUT), _F32_OUT)
    o16 = w.op(f'"arith.truncf"({o}) : ({_F32_OUT}) -> {_F16_OUT}')
    w.op(
        f'"mosaic_gpu.vector_store"({o16}, {out}) <{{multimem = false}}> : '
        f"({_F16_OUT}, {o_ty}) -> ()",
        result=False,
    )


def _barrier(w: _Writer, x: str, ty: str) -> str:
    return w.op(f'"mosaic_gpu.optimization_barrier"({x}) : ({ty}) -> {ty}')


def _store(w: _Writer, x: str, ref: str, x_ty: str, ref_ty: str) -> None:
    w.op(
        f'"mosaic_gpu.vector_store"({x}, {ref}) <{{multimem = false}}> : ({x_ty}, {ref_ty}) -> ()',
        result=False,
    )


def _unrolled_block(w: _Writer, c: _Constants, index: int) -> None:
    """One key/value step of attention, unrolled (no loop), as Pallas emits an unrolled
    ``fori_loop``: each wgmma's zero accumulator passes an ``optimization_barrier``."""
    q_bytes = ROWS * HEAD * 2
    kv_bytes = KEYS * HEAD * 2
    bias_bytes = ROWS * KEYS * 4
    base = index * (q_bytes + 2 * kv_bytes + bias_bytes + q_bytes)
    q_ty = _smem((ROWS, HEAD), "f16")
    k_ty = _smem((KEYS, HEAD), "f16")
    kt_ty = _smem((HEAD, KEYS), "f16", strides=(1, HEAD))
    v_ty = _smem((KEYS, HEAD), "f16")
    bias_ty = _smem((ROWS, KEYS), "f32")
    o_ty = _smem((ROWS, HEAD), "f16")
    q = _slice_smem(w, base, q_ty)
    k = _slice_smem(w, base + q_bytes, k_ty)
    v = _slice_smem(w, base + q_bytes + kv_bytes, v_ty)
    bias = _slice_smem(w, base + q_bytes + 2 * kv_bytes, bias_ty)
    out = _slice_smem(w, base + q_bytes + 2 * kv_bytes + bias_bytes, o_ty)
    kt = w.op(f'"memref.transpose"({k}) <{{permutation = #transpose}}> : ({k_ty}) -> {kt_ty}')
    s = w.op(
        f'"mosaic_gpu.wgmma"({_barrier(w, c.zero_tile, _F32_TILE)}, {q}, {kt}) : '
        f"({_F32_TILE}, {q_ty}, {kt_ty}) -> {_F32_TILE}"
    )
    b = w.op(
        f'"mosaic_gpu.vector_load"({bias}) <{{optimized = true}}> : ({bias_ty}) -> {_F32_TILE}'
    )
    s = _binary(w, "mulf", _binary(w, "addf", s, b, _F32_TILE), c.scale_tile, _F32_TILE)
    row_max = _row_reduce(w, "maximumf", s, c.neg_inf_row)
    p = _unary_math(
        w,
        "exp",
        _binary(w, "subf", s, _broadcast_rows(w, row_max, _F32_TILE), _F32_TILE),
        _F32_TILE,
    )
    row_sum = _row_reduce(w, "add", p, c.zero_row)
    p16 = w.op(f'"arith.truncf"({p}) : ({_F32_TILE}) -> {_F16_TILE}')
    o = w.op(
        f'"mosaic_gpu.wgmma"({_barrier(w, c.zero_out, _F32_OUT)}, {p16}, {v}) : '
        f"({_F32_OUT}, {_F16_TILE}, {v_ty}) -> {_F32_OUT}"
    )
    o = _binary(w, "divf", o, _broadcast_rows(w, row_sum, _F32_OUT), _F32_OUT)
    o16 = w.op(f'"arith.truncf"({o}) : ({_F32_OUT}) -> {_F16_OUT}')
    _store(w, o16, out, _F16_OUT, o_ty)


def _ewred_block(w: _Writer, c: _Constants, index: int) -> None:
    """Elementwise ops and reductions on a tile from SMEM (a softmax over rows, then the
    columns' maxima subtracted), with the layout hint Pallas kernels put on such a tile."""
    tile_bytes = ROWS * KEYS * 2
    in_ty = _smem((ROWS, KEYS), "f16")
    x_ref = _slice_smem(w, 2 * index * tile_bytes, in_ty)
    out_ref = _slice_smem(w, (2 * index + 1) * tile_bytes, in_ty)
    x = w.op(f'"mosaic_gpu.vector_load"({x_ref}) <{{optimized = true}}> : ({in_ty}) -> {_F16_TILE}')
    x = w.op(f'"arith.extf"({x}) : ({_F16_TILE}) -> {_F32_TILE}')
    x = w.op(
        f'"mosaic_gpu.layout_cast"({x}) <{{new_layout = {WGMMA_ATTR}}}> : '
        f"({_F32_TILE}) -> {_F32_TILE}"
    )
    row_max = _row_reduce(w, "maximumf", x, c.neg_inf_row)
    e = _unary_math(
        w,
        "exp",
        _binary(w, "subf", x, _broadcast_rows(w, row_max, _F32_TILE), _F32_TILE),
        _F32_TILE,
    )
    row_sum = _row_reduce(w, "add", e, c.zero_row)
    r = _binary(w, "divf", e, _broadcast_rows(w, row_sum, _F32_TILE), _F32_TILE)
    col_max = w.op(
        f'"vector.multi_reduction"({r}, {c.neg_inf_row}) <{{kind = #vector.kind<maximumf>, '
        f"reduction_dims = array<i64: 0>}}> : ({_F32_TILE}, {_F32_ROW}) -> {_F32_ROW}"
    )
    cols = w.op(
        f'"mosaic_gpu.broadcast_in_dim"({col_max}) <{{broadcast_dimensions = array<i64: 1>}}> '
        f": ({_F32_ROW}) -> {_F32_TILE}"
    )
    r = _binary(w, "mulf", _binary(w, "subf", r, cols, _F32_TILE), c.scale_tile, _F32_TILE)
    y = w.op(f'"arith.truncf"({r}) : ({_F32_TILE}) -> {_F16_TILE}')
    _store(w, y, out_ref, _F16_TILE, in_ty)


def _loops_block(w: _Writer, c: _Constants, index: int) -> None:
    """Nested ``scf.for`` loops carrying a register tile: loads accumulated from SMEM,
    scaled in an inner loop; the result stored after the loops."""
    tile_bytes = ROWS * KEYS * 4
    ty = _smem((ROWS, KEYS), "f32")
    x_ref = _slice_smem(w, 2 * index * tile_bytes, ty)
    out_ref = _slice_smem(w, (2 * index + 1) * tile_bytes, ty)
    outer, acc = w.fresh(), f"%o{index}_acc"
    w.line(f'{outer} = "scf.for"({c.zero_i32}, {c.steps_i32}, {c.one_i32}, {c.zero_tile}) ({{')
    w.line(f"^bb0(%o{index}_i: i32, {acc}: {_F32_TILE}):")
    w.indent += 1
    t = w.op(f'"mosaic_gpu.vector_load"({x_ref}) <{{optimized = true}}> : ({ty}) -> {_F32_TILE}')
    a = _binary(w, "addf", acc, t, _F32_TILE)
    inner, b = w.fresh(), f"%i{index}_b"
    w.line(f'{inner} = "scf.for"({c.zero_i32}, {c.steps_i32}, {c.one_i32}, {a}) ({{')
    w.line(f"^bb0(%i{index}_j: i32, {b}: {_F32_TILE}):")
    w.indent += 1
    scaled = _binary(w, "mulf", b, c.scale_tile, _F32_TILE)
    w.op(f'"scf.yield"({scaled}) : ({_F32_TILE}) -> ()', result=False)
    w.indent -= 1
    w.line(f"}}) : (i32, i32, i32, {_F32_TILE}) -> {_F32_TILE}")
    w.op(f'"scf.yield"({inner}) : ({_F32_TILE}) -> ()', result=False)
    w.indent -= 1
    w.line(f"}}) : (i32, i32, i32, {_F32_TILE}) -> {_F32_TILE}")
    r = _unary_math(w, "exp", outer, _F32_TILE)
    _store(w, r, out_ref, _F32_TILE, ty)


def _module(name: str, n: int, block: Callable[[_Writer, _Constants, int], None]) -> str:
    """A Hopper module whose ``gpu.launch`` body is the shared constants, then ``n`` blocks."""
    if n < 1:
        raise ValueError(f"need at least one block, got {n}")
    w = _Writer()
    w.line("#transpose = affine_map<(d0, d1) -> (d1, d0)>")
    w.line(f'"builtin.module"() <{{sym_name = "{name}_blocks"}}> ({{')
    w.indent += 1
    w.line(f'"func.func"() <{{function_type = () -> (), sym_name = "{name}_{n}_blocks"}}> ({{')
    w.indent += 1
    one = w.op('"arith.constant"() <{value = 1 : index}> : () -> index')
    threads = w.op('"arith.constant"() <{value = 128 : index}> : () -> index')
    smem_size = w.op('"arith.constant"() <{value = 0 : i32}> : () -> i32')
    w.line(
        f'"gpu.launch"({one}, {one}, {one}, {threads}, {one}, {one}, {smem_size}) '
        "<{operandSegmentSizes = array<i32: 0, 1, 1, 1, 1, 1, 1, 0, 0, 0, 1, 0>}> ({"
    )
    w.line("^bb0(" + ", ".join(f"%launch{i}: index" for i in range(12)) + "):")
    w.indent += 1
    constants = _constants(w)
    for index in range(n):
        block(w, constants, index)
    w.op('"gpu.terminator"() : () -> ()', result=False)
    w.indent -= 1
    w.line("}) : (index, index, index, index, index, index, i32) -> ()")
    w.op('"func.return"() : () -> ()', result=False)
    w.indent -= 1
    w.line("}) : () -> ()")
    w.indent -= 1
    w.line("}) {mosaic_gpu.arch_major = 9 : i32, mosaic_gpu.arch_minor = 0 : i32} : () -> ()")
    return "\n".join(w.lines) + "\n"


def attention_kernel(n: int) -> str:
    """MLIR text of a Hopper kernel with ``n`` attention-like blocks (``n >= 1``)."""
    return _module("attention", n, _block)


def unrolled_attention_kernel(n: int) -> str:
    """``n`` unrolled attention steps (``_unrolled_block``)."""
    return _module("unrolled_attention", n, _unrolled_block)


def ewred_kernel(n: int) -> str:
    """``n`` elementwise-and-reduction blocks (``_ewred_block``)."""
    return _module("ewred", n, _ewred_block)


def loops_kernel(n: int) -> str:
    """``n`` blocks of nested loops (``_loops_block``)."""
    return _module("loops", n, _loops_block)


# The scaling benchmark's kernel families, by name.
FAMILIES: dict[str, Callable[[int], str]] = {
    "attention": attention_kernel,
    "unrolled_attention": unrolled_attention_kernel,
    "ewred": ewred_kernel,
    "loops": loops_kernel,
}
