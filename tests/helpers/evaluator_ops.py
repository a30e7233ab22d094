"""What each data op does, for the reference evaluator (``tests/helpers/evaluator.py``):
arith, math, vector, the vector-level ``mosaic_gpu`` ops and memref, each from
its MLIR definition, on numpy arrays (the arithmetic itself is in
``evaluator_arith``). Control flow (scf) is the evaluator's own.

A handler takes the evaluator and the op and returns the op's result values.
Refs are numpy arrays; views (``subview``, ``transpose``, ``collapse_shape``)
are numpy views of them, so stores through a view land in the buffer.
An index out of bounds is undefined in MLIR; the evaluator wraps it around
(a ``subview``'s dynamic offset is clamped so the view fits), the same in
both runs of a comparison.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any

import ml_dtypes
import numpy as np
from evaluator_arith import BINARY, CASTS, CMPF, UNARY, cast, combine, compare_integers, reduce
from jax._src.lib.mlir import ir

if TYPE_CHECKING:
    from evaluator import Evaluator

Array = np.ndarray
Handler = Callable[["Evaluator", ir.Operation], list[Any]]

_FLOATS: dict[type, Any] = {
    ir.F64Type: np.float64,
    ir.F32Type: np.float32,
    ir.F16Type: np.float16,
    ir.BF16Type: ml_dtypes.bfloat16,
    ir.Float8E4M3FNType: ml_dtypes.float8_e4m3fn,
    ir.Float8E5M2Type: ml_dtypes.float8_e5m2,
}
_SIGNLESS = {1: np.bool_, 8: np.int8, 16: np.int16, 32: np.int32, 64: np.int64}


def numpy_dtype(ty: ir.Type) -> Any:
    """The numpy dtype holding an MLIR element type (``iN`` in the signed numpy
    integer of N bits; ``evaluator_arith`` reads the bits as each op says)."""
    if isinstance(ty, ir.IndexType):
        return np.int64
    if isinstance(ty, ir.IntegerType):
        width = ir.IntegerType(ty).width
        if width not in _SIGNLESS:
            raise NotImplementedError(f"integers of {width} bits")
        return _SIGNLESS[width]
    for kind, dtype in _FLOATS.items():
        if isinstance(ty, kind):
            return dtype
    raise NotImplementedError(f"element type {ty}")


def shape_and_dtype(ty: ir.Type) -> tuple[tuple[int, ...], Any]:
    if isinstance(ty, ir.VectorType):
        vty = ir.VectorType(ty)
        return tuple(vty.shape), numpy_dtype(vty.element_type)
    if isinstance(ty, ir.MemRefType):
        mty = ir.MemRefType(ty)
        return tuple(mty.shape), numpy_dtype(mty.element_type)
    return (), numpy_dtype(ty)


def ints(attribute: ir.Attribute) -> list[int]:
    if isinstance(attribute, ir.DenseI64ArrayAttr):
        return list(ir.DenseI64ArrayAttr(attribute))
    if isinstance(attribute, ir.DenseI32ArrayAttr):
        return list(ir.DenseI32ArrayAttr(attribute))
    if isinstance(attribute, ir.ArrayAttr):
        return [ir.IntegerAttr(a).value for a in ir.ArrayAttr(attribute)]
    raise NotImplementedError(f"integer list attribute {attribute}")


def _int(attribute: ir.Attribute) -> int:
    return ir.IntegerAttr(attribute).value


_DYNAMIC = -(2**63)  # MLIR's ShapedType::kDynamic in static offset/size lists

HANDLERS: dict[str, Handler] = {}


def handles(*names: str) -> Callable[[Handler], Handler]:
    def register(fn: Handler) -> Handler:
        for name in names:
            HANDLERS[name] = fn
        return fn

    return register


def is_modelled(name: str) -> bool:
    """Whether the evaluator computes what an op of this name does."""
    return name in HANDLERS or name in BINARY or name in UNARY or name in CASTS


def elementwise(ev: Evaluator, op: ir.Operation) -> list[Any]:
    """An op of ``BINARY``, ``UNARY`` or ``CASTS``."""
    name = op.name
    dtype = shape_and_dtype(op.results[0].type)[1]
    if name in BINARY:
        a, b = ev.operands(op)
        return [np.asarray(BINARY[name](np.asarray(a), np.asarray(b))).astype(dtype)]
    if name in UNARY:
        (x,) = ev.operands(op)
        return [np.asarray(UNARY[name](np.asarray(x))).astype(dtype)]
    (x,) = ev.operands(op)
    return [cast(name, x, dtype)]


# -- arith


@handles("arith.constant")
def _constant(ev: Evaluator, op: ir.Operation) -> list[Any]:
    attribute = op.attributes["value"]
    shape, dtype = shape_and_dtype(op.results[0].type)
    if isinstance(attribute, ir.DenseElementsAttr):
        dense = ir.DenseElementsAttr(attribute)
        if dense.is_splat:
            return [np.full(shape, _scalar(dense.get_splat_value(), dtype), dtype)]
        for kind in (ir.DenseFPElementsAttr, ir.DenseIntElementsAttr):
            if isinstance(attribute, kind):
                values = np.array(kind(attribute))
                if np.dtype(dtype).kind in "iub":
                    values = _wrap_constant(values, dtype)
                return [values.astype(dtype).reshape(shape)]
        raise NotImplementedError(f"dense constant {attribute}")
    return [np.asarray(_scalar(attribute, dtype), dtype)]


def _scalar(attribute: ir.Attribute, dtype: Any) -> Any:
    if isinstance(attribute, ir.FloatAttr):
        return ir.FloatAttr(attribute).value
    if isinstance(attribute, ir.BoolAttr):
        return ir.BoolAttr(attribute).value
    if isinstance(attribute, ir.IntegerAttr):
        return _wrap_constant(np.asarray(ir.IntegerAttr(attribute).value, object), dtype)
    raise NotImplementedError(f"constant {attribute}")


def _wrap_constant(values: Array, dtype: Any) -> Array:
    """Integer constants as N bits (MLIR prints ``-1 : i32`` and ``4294967295 : i32``
    for the same bits)."""
    dtype = np.dtype(dtype)
    bits = 1 if dtype == np.bool_ else dtype.itemsize * 8
    low = [int(v) % (1 << bits) for v in np.asarray(values, object).reshape(-1)]
    if dtype == np.bool_:
        return np.array([v == 1 for v in low], np.bool_).reshape(np.shape(values))
    signed = [v - (1 << bits) if v >= 1 << (bits - 1) else v for v in low]
    return np.array(signed, dtype).reshape(np.shape(values))


@handles("arith.cmpf", "arith.cmpi")
def _compare(ev: Evaluator, op: ir.Operation) -> list[Any]:
    a, b = (np.asarray(x) for x in ev.operands(op))
    predicate = _int(op.attributes["predicate"])
    with np.errstate(all="ignore"):
        if op.name == "arith.cmpf":
            return [np.asarray(CMPF[predicate](a, b), np.bool_)]
        return [compare_integers(predicate, a, b)]


@handles("arith.select")
def _select(ev: Evaluator, op: ir.Operation) -> list[Any]:
    condition, a, b = ev.operands(op)
    return [np.where(condition, a, b).astype(np.asarray(a).dtype)]


# -- vector


@handles("vector.broadcast")
def _vector_broadcast(ev: Evaluator, op: ir.Operation) -> list[Any]:
    (x,) = ev.operands(op)
    shape, dtype = shape_and_dtype(op.results[0].type)
    return [np.broadcast_to(np.asarray(x, dtype), shape).copy()]


@handles("vector.shape_cast")
def _shape_cast(ev: Evaluator, op: ir.Operation) -> list[Any]:
    (x,) = ev.operands(op)
    shape, _ = shape_and_dtype(op.results[0].type)
    return [x.reshape(shape).copy()]


@handles("vector.transpose")
def _vector_transpose(ev: Evaluator, op: ir.Operation) -> list[Any]:
    """Result dim ``i`` is operand dim ``permutation[i]``."""
    (x,) = ev.operands(op)
    return [np.transpose(x, ints(op.attributes["permutation"])).copy()]


def kind(op: ir.Operation) -> str:
    match = re.search(r"<(\w+)>", str(op.attributes["kind"]))
    if match is None:
        raise NotImplementedError(f"combining kind {op.attributes['kind']}")
    return match[1]


@handles("vector.multi_reduction")
def _multi_reduction(ev: Evaluator, op: ir.Operation) -> list[Any]:
    source, acc = ev.operands(op)
    reduced = reduce(kind(op), source, tuple(ints(op.attributes["reduction_dims"])))
    return [combine(kind(op), np.asarray(acc), reduced)]


@handles("vector.reduction")
def _reduction(ev: Evaluator, op: ir.Operation) -> list[Any]:
    source, *acc = ev.operands(op)
    reduced = reduce(kind(op), source, (0,))
    return [combine(kind(op), np.asarray(acc[0]), reduced) if acc else reduced]


def _position(op: ir.Operation, dynamic: Sequence[Any], shape: tuple[int, ...]) -> tuple[int, ...]:
    """A ``vector.extract``/``insert`` position: static, or dynamic (wrapped)."""
    given = iter(int(d) for d in dynamic)
    position = [next(given) if p == _DYNAMIC else p for p in ints(op.attributes["static_position"])]
    return tuple(p % n for p, n in zip(position, shape, strict=False))


@handles("vector.extract")
def _extract(ev: Evaluator, op: ir.Operation) -> list[Any]:
    x, *dynamic = ev.operands(op)
    return [np.asarray(x[_position(op, dynamic, x.shape)]).copy()]


@handles("vector.insert")
def _insert(ev: Evaluator, op: ir.Operation) -> list[Any]:
    """``dest`` with the element or sub-vector at ``position`` replaced by ``source``."""
    source, dest, *dynamic = ev.operands(op)
    out = np.array(dest, copy=True)
    out[_position(op, dynamic, out.shape)] = source
    return [out]


@handles("vector.shuffle")
def _shuffle(ev: Evaluator, op: ir.Operation) -> list[Any]:
    """Rows of ``v1`` then ``v2`` (along the leading dim), picked by ``mask`` (-1,
    undefined: row 0)."""
    v1, v2 = (np.atleast_1d(np.asarray(v)) for v in ev.operands(op))
    rows = np.concatenate([v1, v2], axis=0)
    return [rows[[max(m, 0) for m in ints(op.attributes["mask"])]].copy()]


@handles("vector.interleave")
def _interleave(ev: Evaluator, op: ir.Operation) -> list[Any]:
    """``lhs`` and ``rhs`` alternating along the trailing dim, ``lhs`` first."""
    lhs, rhs = ev.operands(op)
    return [np.stack([lhs, rhs], axis=-1).reshape(*lhs.shape[:-1], 2 * lhs.shape[-1])]


@handles("vector.extract_strided_slice")
def _extract_strided_slice(ev: Evaluator, op: ir.Operation) -> list[Any]:
    (x,) = ev.operands(op)
    offsets = ints(op.attributes["offsets"])
    sizes = ints(op.attributes["sizes"])
    strides = ints(op.attributes["strides"])
    index = tuple(slice(o, o + n * s, s) for o, n, s in zip(offsets, sizes, strides, strict=True))
    return [x[index].copy()]


@handles("vector.insert_strided_slice")
def _insert_strided_slice(ev: Evaluator, op: ir.Operation) -> list[Any]:
    source, dest = ev.operands(op)
    offsets = ints(op.attributes["offsets"])
    strides = ints(op.attributes["strides"])
    out = dest.copy()
    lead = len(dest.shape) - len(source.shape)
    index = tuple(
        slice(o, o + 1)
        if d < lead
        else slice(o, o + source.shape[d - lead] * strides[d - lead], strides[d - lead])
        for d, o in enumerate(offsets)
    )
    out[index] = source.reshape(out[index].shape)
    return [out]


# -- mosaic_gpu registers


def broadcast_in_dim(x: Array, dims: Sequence[int], shape: Sequence[int]) -> Array:
    """``mosaic_gpu.broadcast_in_dim``: operand dim ``i`` goes to result dim
    ``dims[i]`` (of the same size, or broadcast from size 1); the result dims no
    operand dim maps to are broadcast."""
    order = sorted(range(len(dims)), key=lambda i: dims[i])
    moved = np.transpose(x, order) if order else x
    expanded = [1] * len(shape)
    for i in order:
        expanded[dims[i]] = x.shape[i]
    return np.broadcast_to(moved.reshape(expanded), tuple(shape)).copy()


@handles("mosaic_gpu.broadcast_in_dim")
def _broadcast_in_dim(ev: Evaluator, op: ir.Operation) -> list[Any]:
    (x,) = ev.operands(op)
    shape, _ = shape_and_dtype(op.results[0].type)
    return [broadcast_in_dim(x, ints(op.attributes["broadcast_dimensions"]), shape)]


@handles("mosaic_gpu.broadcasted_iota")
def _iota(ev: Evaluator, op: ir.Operation) -> list[Any]:
    shape, dtype = shape_and_dtype(op.results[0].type)
    dimension = _int(op.attributes["dimension"])
    line = np.arange(shape[dimension]).reshape(
        [-1 if d == dimension else 1 for d in range(len(shape))]
    )
    return [np.broadcast_to(line, shape).astype(dtype)]


@handles("mosaic_gpu.vector_concat")
def _vector_concat(ev: Evaluator, op: ir.Operation) -> list[Any]:
    """The operands joined along ``dimension``."""
    return [np.concatenate(ev.operands(op), axis=_int(op.attributes["dimension"]))]


@handles("mosaic_gpu.layout_cast", "mosaic_gpu.optimization_barrier")
def _identity(ev: Evaluator, op: ir.Operation) -> list[Any]:
    return [np.asarray(x).copy() if isinstance(x, np.ndarray) else x for x in ev.operands(op)]


@handles("mosaic_gpu.vector_load")
def _vector_load(ev: Evaluator, op: ir.Operation) -> list[Any]:
    ref = ev.values[op.operands[0]]
    return [np.array(ref, copy=True)]


@handles("mosaic_gpu.vector_store")
def _vector_store(ev: Evaluator, op: ir.Operation) -> list[Any]:
    value, ref = ev.values[op.operands[0]], ev.values[op.operands[1]]
    ref[...] = value
    return []


@handles("mosaic_gpu.wgmma", "mosaic_gpu.mma")
def _wgmma(ev: Evaluator, op: ir.Operation) -> list[Any]:
    """``acc + a @ b`` (in f32 for float operands)."""
    acc, a, b = ev.operands(op)[:3]
    product = np.asarray(a, np.float32) @ np.asarray(b, np.float32)
    return [(acc.astype(np.float32) + product).astype(acc.dtype)]


@handles("mosaic_gpu.async_load_tmem")
def _load_tmem(ev: Evaluator, op: ir.Operation) -> list[Any]:
    ref = ev.values[op.operands[0]]
    return [np.array(ref, copy=True).astype(shape_and_dtype(op.results[0].type)[1])]


@handles("mosaic_gpu.async_store_tmem")
def _store_tmem(ev: Evaluator, op: ir.Operation) -> list[Any]:
    value, ref = ev.values[op.operands[0]], ev.values[op.operands[1]]
    ref[...] = value
    return []


@handles("mosaic_gpu.tcgen05_mma")
def _tcgen05_mma(ev: Evaluator, op: ir.Operation) -> list[Any]:
    acc, a, b, accumulate = ev.operands(op)[:4]
    product = np.asarray(a, np.float32) @ np.asarray(b, np.float32)
    base = acc.astype(np.float32) if bool(accumulate) else 0.0
    acc[...] = (base + product).astype(acc.dtype)
    return []


# -- memory


@handles("mosaic_gpu.with_transforms", "mosaic_gpu.tmem_layout_cast", "memref.cast")
def _same_ref(ev: Evaluator, op: ir.Operation) -> list[Any]:
    return [ev.values[op.operands[0]]]


@handles(
    "builtin.unrealized_conversion_cast",
    "mosaic_gpu.slice_smem",
    "mosaic_gpu.slice_tmem",
    "mosaic_gpu.tmem_alloc",
    "memref.alloca",
    "memref.alloc",
    "memref.get_global",
)
def _new_ref(ev: Evaluator, op: ir.Operation) -> list[Any]:
    return [ev.result(op, r.type, i) for i, r in enumerate(op.results)]


@handles("memref.subview")
def _subview(ev: Evaluator, op: ir.Operation) -> list[Any]:
    source, *dynamic = ev.operands(op)
    dynamic_values = iter(int(d) for d in dynamic)

    def static(name: str) -> list[int]:
        return [next(dynamic_values) if v == _DYNAMIC else v for v in ints(op.attributes[name])]

    offsets, sizes, strides = (
        static("static_offsets"),
        static("static_sizes"),
        static("static_strides"),
    )
    offsets = [
        min(max(o, 0), max(n - (size - 1) * s - 1, 0))
        for o, n, size, s in zip(offsets, source.shape, sizes, strides, strict=True)
    ]
    view = source[
        tuple(slice(o, o + n * s, s) for o, n, s in zip(offsets, sizes, strides, strict=True))
    ]
    shape, _ = shape_and_dtype(op.results[0].type)
    if view.shape != shape:  # a rank-reducing subview drops size-1 dims
        view = _drop_unit_dims(view, shape)
    return [view]


def _drop_unit_dims(view: Array, shape: tuple[int, ...]) -> Array:
    axes, j = [], 0
    for d, n in enumerate(view.shape):
        if j < len(shape) and n == shape[j]:
            j += 1
        elif n == 1:
            axes.append(d)
        else:
            raise NotImplementedError(f"subview from {view.shape} to {shape}")
    return np.squeeze(view, axis=tuple(axes))


@handles("memref.transpose")
def _transpose(ev: Evaluator, op: ir.Operation) -> list[Any]:
    (source,) = ev.operands(op)
    permutation = ir.AffineMapAttr(op.attributes["permutation"]).value
    order = [ir.AffineDimExpr(e).position for e in permutation.results]
    return [np.transpose(source, order)]


@handles("memref.collapse_shape", "memref.expand_shape")
def _reshape_ref(ev: Evaluator, op: ir.Operation) -> list[Any]:
    source = ev.values[op.operands[0]]
    shape, _ = shape_and_dtype(op.results[0].type)
    view = source.view()
    view.shape = shape  # raises rather than copy: stores must reach the buffer
    return [view]


def _element(ref: Array, indices: Sequence[Any]) -> tuple[int, ...]:
    return tuple(int(i) % n for i, n in zip(indices, ref.shape, strict=True))


@handles("memref.load")
def _memref_load(ev: Evaluator, op: ir.Operation) -> list[Any]:
    ref, *indices = ev.operands(op)
    return [np.asarray(ref[_element(ref, indices)]).copy()]


@handles("memref.store")
def _memref_store(ev: Evaluator, op: ir.Operation) -> list[Any]:
    value, ref, *indices = ev.operands(op)
    ref[_element(ref, indices)] = value
    return []


@handles("vector.load")
def _vector_dialect_load(ev: Evaluator, op: ir.Operation) -> list[Any]:
    """The result's shape read from ``ref`` starting at ``indices`` (trailing dims)."""
    ref, *indices = ev.operands(op)
    return [np.array(ref[_window(ref, indices, shape_and_dtype(op.results[0].type)[0])])]


@handles("vector.store")
def _vector_dialect_store(ev: Evaluator, op: ir.Operation) -> list[Any]:
    value, ref, *indices = ev.operands(op)
    ref[_window(ref, indices, np.shape(value))] = value
    return []


def _window(ref: Array, indices: Sequence[Any], shape: tuple[int, ...]) -> tuple[Any, ...]:
    start = _element(ref, indices)
    lead = len(start) - len(shape)
    return tuple(s if d < lead else slice(s, s + shape[d - lead]) for d, s in enumerate(start))
