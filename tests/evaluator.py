"""A reference evaluator for the vector level of Mosaic GPU modules, in numpy.

The test oracle of the unit-dim rewrite (``smalto.rewrite``): a module and its
rewrite, run on the same random inputs, must leave the same bits in every
buffer. Each op is evaluated from its MLIR definition (arith, math, vector,
scf, memref, and the vector-level ``mosaic_gpu`` ops), at warpgroup level:
one evaluation of the kernel body, vectors as whole numpy arrays.

- Memory: every ref that an op makes out of nothing (a kernel argument, an
  SMEM slice, a TMEM allocation, an ``alloca``) is a numpy array filled with
  random values, a new one per op (``buffers``, in the order they are made; the
  rewrite never adds, removes or reorders them); views (``subview``,
  ``transpose``, ``collapse_shape``, ...) are numpy views of it, so stores
  through a view land in it.
- What is not modelled is the same in both modules and leaves no trace in
  the vectors: ops with neither vector operands nor results whose meaning is
  not needed (barriers, fences, TMA copies, ``llvm`` bookkeeping) do nothing,
  and scalars they make are 0 (``i1``: false; so an ``scf.if`` on an elected
  thread skips its body).
- An op with a vector operand or result that the evaluator does not know
  raises ``NotImplementedError``: nothing silently ignored where the rewrite
  acts.

``run(module, seed)`` returns the buffers after the kernel ran;
``assert_same_results(a, b)`` compares two runs bit for bit.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from typing import Any

import ml_dtypes
import numpy as np
import scipy.special
from jax._src.lib.mlir import ir

Array = np.ndarray

_FLOATS: dict[type, Any] = {
    ir.F64Type: np.float64,
    ir.F32Type: np.float32,
    ir.F16Type: np.float16,
    ir.BF16Type: ml_dtypes.bfloat16,
    ir.Float8E4M3FNType: ml_dtypes.float8_e4m3fn,
    ir.Float8E5M2Type: ml_dtypes.float8_e5m2,
}
_SIGNED = {1: np.bool_, 8: np.int8, 16: np.int16, 32: np.int32, 64: np.int64}
_UNSIGNED = {8: np.uint8, 16: np.uint16, 32: np.uint32, 64: np.uint64}


def numpy_dtype(ty: ir.Type) -> Any:
    """The numpy dtype holding an MLIR element type (signless integers as signed)."""
    if isinstance(ty, ir.IndexType):
        return np.int64
    if isinstance(ty, ir.IntegerType):
        width = ir.IntegerType(ty).width
        if width not in _SIGNED:
            raise NotImplementedError(f"integers of {width} bits")
        return _SIGNED[width]
    for kind, dtype in _FLOATS.items():
        if isinstance(ty, kind):
            return dtype
    raise NotImplementedError(f"element type {ty}")


def _unsigned(x: Array) -> Array:
    if x.dtype == np.bool_:
        return x
    return x.view(_UNSIGNED[x.dtype.itemsize * 8])


def _signed_like(x: Array, like: Array) -> Array:
    return x.astype(like.dtype) if x.dtype == np.bool_ else x.view(like.dtype)


def _shape_and_dtype(ty: ir.Type) -> tuple[tuple[int, ...], Any]:
    if isinstance(ty, ir.VectorType):
        vty = ir.VectorType(ty)
        return tuple(vty.shape), numpy_dtype(vty.element_type)
    if isinstance(ty, ir.MemRefType):
        mty = ir.MemRefType(ty)
        return tuple(mty.shape), numpy_dtype(mty.element_type)
    return (), numpy_dtype(ty)


def _random_array(rng: np.random.Generator, shape: tuple[int, ...], dtype: Any) -> Array:
    dtype = np.dtype(dtype)
    if dtype == np.bool_:
        return rng.integers(0, 2, shape).astype(np.bool_)
    if np.issubdtype(dtype, np.integer):
        return rng.integers(-100, 100, shape).astype(dtype)
    return rng.normal(0.0, 2.0, shape).astype(dtype)


def _ints(attribute: ir.Attribute) -> list[int]:
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

# --- Elementwise ops -------------------------------------------------------------


def _trunc_div(a: Array, b: Array) -> Array:
    with np.errstate(all="ignore"):
        safe = np.where(b == 0, 1, b)
        q = np.abs(a) // np.abs(safe)
        return np.where(b == 0, 0, np.where((a < 0) != (safe < 0), -q, q)).astype(a.dtype)


def _unsigned_binary(fn: Callable[[Array, Array], Array]) -> Callable[[Array, Array], Array]:
    def apply(a: Array, b: Array) -> Array:
        ua, ub = _unsigned(a), _unsigned(b)
        return _signed_like(np.asarray(fn(ua, ub)).astype(ua.dtype), a)

    return apply


def _udiv(a: Array, b: Array) -> Array:
    with np.errstate(all="ignore"):
        return np.where(b == 0, 0, a // np.where(b == 0, 1, b))


def _urem(a: Array, b: Array) -> Array:
    with np.errstate(all="ignore"):
        return np.where(b == 0, 0, a % np.where(b == 0, 1, b))


def _floordiv(a: Array, b: Array) -> Array:
    with np.errstate(all="ignore"):
        return np.where(b == 0, 0, a // np.where(b == 0, 1, b)).astype(a.dtype)


def _ceildiv(a: Array, b: Array) -> Array:
    with np.errstate(all="ignore"):
        return np.where(b == 0, 0, -((-a) // np.where(b == 0, 1, b))).astype(a.dtype)


def _rem(a: Array, b: Array) -> Array:
    with np.errstate(all="ignore"):
        return np.where(b == 0, 0, np.fmod(a, np.where(b == 0, 1, b))).astype(a.dtype)


def _in_f64(fn: Callable[..., Array]) -> Callable[..., Array]:
    """A math function computed in f64 and rounded once to the operand's type."""

    def apply(*xs: Array) -> Array:
        with np.errstate(all="ignore"):
            return np.asarray(fn(*(x.astype(np.float64) for x in xs))).astype(xs[0].dtype)

    return apply


def _round_half_away(x: Array) -> Array:
    return np.sign(x) * np.floor(np.abs(x) + 0.5)


def _ctlz(x: Array) -> Array:
    bits = x.dtype.itemsize * 8
    u = _unsigned(x).astype(np.uint64)
    out = np.full(u.shape, bits, np.int64)
    for i in range(bits):
        out = np.where((out == bits) & ((u >> np.uint64(bits - 1 - i)) & np.uint64(1) == 1), i, out)
    return out.astype(x.dtype)


def _shift(fn: Callable[[Array, Array], Array]) -> Callable[[Array, Array], Array]:
    def apply(a: Array, b: Array) -> Array:
        with np.errstate(all="ignore"):
            return np.asarray(fn(a, b)).astype(a.dtype)

    return apply


def _wrapping(fn: Callable[[Array, Array], Array]) -> Callable[[Array, Array], Array]:
    def apply(a: Array, b: Array) -> Array:
        with np.errstate(all="ignore"):
            return np.asarray(fn(a, b)).astype(a.dtype)

    return apply


BINARY: dict[str, Callable[[Array, Array], Array]] = {
    "arith.addf": np.add,
    "arith.subf": np.subtract,
    "arith.mulf": np.multiply,
    "arith.divf": np.divide,
    "arith.remf": np.fmod,
    "arith.maximumf": np.maximum,
    "arith.minimumf": np.minimum,
    "arith.maxnumf": np.fmax,
    "arith.minnumf": np.fmin,
    "arith.addi": _wrapping(np.add),
    "arith.subi": _wrapping(np.subtract),
    "arith.muli": _wrapping(np.multiply),
    "arith.divsi": _trunc_div,
    "arith.divui": _unsigned_binary(_udiv),
    "arith.floordivsi": _floordiv,
    "arith.ceildivsi": _ceildiv,
    "arith.ceildivui": _unsigned_binary(lambda a, b: _udiv(a + b - (b != 0), b)),
    "arith.remsi": _rem,
    "arith.remui": _unsigned_binary(_urem),
    "arith.andi": np.bitwise_and,
    "arith.ori": np.bitwise_or,
    "arith.xori": np.bitwise_xor,
    "arith.shli": _shift(np.left_shift),
    "arith.shrsi": _shift(np.right_shift),
    "arith.shrui": _unsigned_binary(np.right_shift),
    "arith.maxsi": np.maximum,
    "arith.minsi": np.minimum,
    "arith.maxui": _unsigned_binary(np.maximum),
    "arith.minui": _unsigned_binary(np.minimum),
    "math.copysign": np.copysign,
    "math.powf": _in_f64(np.power),
    "math.atan2": _in_f64(np.arctan2),
}

UNARY: dict[str, Callable[[Array], Array]] = {
    "arith.negf": np.negative,
    "math.exp": _in_f64(np.exp),
    "math.exp2": _in_f64(np.exp2),
    "math.log": _in_f64(np.log),
    "math.log2": _in_f64(np.log2),
    "math.log1p": _in_f64(np.log1p),
    "math.sin": _in_f64(np.sin),
    "math.cos": _in_f64(np.cos),
    "math.tanh": _in_f64(np.tanh),
    "math.sqrt": _in_f64(np.sqrt),
    "math.rsqrt": _in_f64(lambda x: 1.0 / np.sqrt(x)),
    "math.erf": _in_f64(scipy.special.erf),
    "math.absf": np.abs,
    "math.absi": np.abs,
    "math.round": _in_f64(_round_half_away),
    "math.roundeven": np.rint,
    "math.ctlz": _ctlz,
}

_CMPF: dict[int, Callable[[Array, Array], Array]] = {
    0: lambda a, b: np.zeros(np.broadcast(a, b).shape, np.bool_),
    1: lambda a, b: a == b,
    2: lambda a, b: a > b,
    3: lambda a, b: a >= b,
    4: lambda a, b: a < b,
    5: lambda a, b: a <= b,
    6: lambda a, b: (a != b) & ~np.isnan(a) & ~np.isnan(b),
    7: lambda a, b: ~np.isnan(a) & ~np.isnan(b),
    8: lambda a, b: (a == b) | np.isnan(a) | np.isnan(b),
    9: lambda a, b: ~(a <= b),
    10: lambda a, b: ~(a < b),
    11: lambda a, b: ~(a >= b),
    12: lambda a, b: ~(a > b),
    13: lambda a, b: a != b,
    14: lambda a, b: np.isnan(a) | np.isnan(b),
    15: lambda a, b: np.ones(np.broadcast(a, b).shape, np.bool_),
}
_CMPI: dict[int, Callable[[Array, Array], Array]] = {
    0: lambda a, b: a == b,
    1: lambda a, b: a != b,
    2: lambda a, b: a < b,
    3: lambda a, b: a <= b,
    4: lambda a, b: a > b,
    5: lambda a, b: a >= b,
    6: lambda a, b: _unsigned(a) < _unsigned(b),
    7: lambda a, b: _unsigned(a) <= _unsigned(b),
    8: lambda a, b: _unsigned(a) > _unsigned(b),
    9: lambda a, b: _unsigned(a) >= _unsigned(b),
}

CASTS = frozenset(
    {
        "arith.extf",
        "arith.truncf",
        "arith.extsi",
        "arith.extui",
        "arith.trunci",
        "arith.fptosi",
        "arith.fptoui",
        "arith.sitofp",
        "arith.uitofp",
        "arith.index_cast",
        "arith.index_castui",
        "arith.bitcast",
    }
)

# The reductions' combining kinds (vector dialect).
_REDUCE: dict[str, Callable[..., Array]] = {
    "add": np.add.reduce,
    "mul": np.multiply.reduce,
    "maximumf": np.maximum.reduce,
    "minimumf": np.minimum.reduce,
    "maxnumf": np.fmax.reduce,
    "minnumf": np.fmin.reduce,
    "maxsi": np.maximum.reduce,
    "minsi": np.minimum.reduce,
    "and": np.bitwise_and.reduce,
    "or": np.bitwise_or.reduce,
    "xor": np.bitwise_xor.reduce,
}
_COMBINE: dict[str, Callable[[Array, Array], Array]] = {
    "add": np.add,
    "mul": np.multiply,
    "maximumf": np.maximum,
    "minimumf": np.minimum,
    "maxnumf": np.fmax,
    "minnumf": np.fmin,
    "maxsi": np.maximum,
    "minsi": np.minimum,
    "and": np.bitwise_and,
    "or": np.bitwise_or,
    "xor": np.bitwise_xor,
}


def _kind(op: ir.Operation) -> str:
    match = re.search(r"<(\w+)>", str(op.attributes["kind"]))
    if match is None:
        raise NotImplementedError(f"combining kind {op.attributes['kind']}")
    return match[1]


def _cast(name: str, x: Array, dtype: Any) -> Array:
    with np.errstate(all="ignore"):
        if name == "arith.bitcast":
            return x.view(dtype)
        if name in ("arith.extui", "arith.uitofp", "arith.index_castui"):
            x = _unsigned(x)
            return x.astype(dtype)
        if name in ("arith.fptosi", "arith.fptoui"):
            info = np.iinfo(dtype) if dtype != np.bool_ else None
            y = np.trunc(np.nan_to_num(x.astype(np.float64)))
            if info is not None:
                y = np.clip(y, info.min, info.max)
            return y.astype(dtype)
        if name == "arith.trunci" and dtype == np.bool_:
            return (x & 1).astype(np.bool_)
        return x.astype(dtype)


# --- The evaluator -----------------------------------------------------------------


class _Yield(Exception):
    """Internal: a region's terminator, carrying its operand values."""


class Evaluator:
    """Runs one module; ``buffers`` holds the memory it made, in order."""

    def __init__(self, module: ir.Module, seed: int = 0) -> None:
        self.module = module
        self.seed = seed
        self.values: dict[ir.Value, Any] = {}
        self.buffers: list[Array] = []
        self._made: dict[ir.Operation | ir.Value, list[Array]] = {}

    # -- driving

    def run(self) -> list[Array]:
        for op in self.module.body.operations:
            op = op.operation
            if op.name == "func.func" and list(op.regions[0].blocks):
                block = list(op.regions[0].blocks)[0]
                for number, argument in enumerate(block.arguments):
                    self.values[argument] = self._argument(number, argument)
                self.block(block)
        return self.buffers

    def block(self, block: ir.Block) -> list[Any]:
        """Evaluates a block; returns its terminator's operand values."""
        for op in block.operations:
            op = op.operation
            if op.name in ("scf.yield", "scf.condition", "func.return", "gpu.terminator"):
                return [self.values.get(v) for v in op.operands]
            self.op(op)
        return []

    def region(self, region: ir.Region, arguments: Sequence[Any]) -> list[Any]:
        block = list(region.blocks)[0]
        for argument, value in zip(block.arguments, arguments, strict=True):
            self.values[argument] = value
        return self.block(block)

    def op(self, op: ir.Operation) -> None:
        name = op.name
        handler = _HANDLERS.get(name)
        with np.errstate(all="ignore"):  # NaNs and infinities are values like any other
            results = self._results(op, name, handler)
        for result, value in zip(op.results, results, strict=True):
            self.values[result] = value

    def _results(
        self, op: ir.Operation, name: str, handler: Callable[..., Any] | None
    ) -> list[Any]:
        if handler is not None:
            results = handler(self, op)
        elif name in BINARY:
            a, b = self.operands(op)
            results = [np.asarray(BINARY[name](a, b)).astype(self._dtype(op.results[0]))]
        elif name in UNARY:
            (x,) = self.operands(op)
            results = [np.asarray(UNARY[name](x)).astype(self._dtype(op.results[0]))]
        elif name in CASTS:
            (x,) = self.operands(op)
            results = [_cast(name, x, self._dtype(op.results[0]))]
        else:
            results = self.unknown(op)
        return results

    def operands(self, op: ir.Operation) -> list[Any]:
        return [self.values[v] for v in op.operands]

    def unknown(self, op: ir.Operation) -> list[Any]:
        """An op the evaluator does not model: only where no vector is involved."""
        involved = [*op.operands, *op.results]
        if any(isinstance(v.type, ir.VectorType) for v in involved):
            raise NotImplementedError(f"the evaluator has no rule for {op.name} on vectors")
        if op.name == "gpu.launch":
            sizes = [np.asarray(1, np.int64)] * 6
            block = list(op.regions[0].blocks)[0]
            count = len(list(block.arguments))
            arguments = ([np.asarray(0, np.int64)] * 6 + sizes)[:count]
            arguments += [np.asarray(0, np.int64)] * (count - len(arguments))
            self.region(op.regions[0], arguments)
            return [self._made_up(r.type) for r in op.results]
        if any(list(region.blocks) for region in op.regions):
            raise NotImplementedError(f"the evaluator has no rule for {op.name}, which has regions")
        return [
            self._fresh(op, r.type) if isinstance(r.type, ir.MemRefType) else self._made_up(r.type)
            for r in op.results
        ]

    # -- values

    def _dtype(self, value: ir.Value) -> Any:
        return _shape_and_dtype(value.type)[1]

    def _argument(self, number: int, argument: ir.Value) -> Any:
        """A function argument: a ref is a new buffer, a vector random input."""
        ty = argument.type
        if isinstance(ty, ir.MemRefType):
            return self._fresh(argument, ty)
        if isinstance(ty, ir.VectorType):
            shape, dtype = _shape_and_dtype(ty)
            return _random_array(
                np.random.default_rng([self.seed, 1_000_000 + number]), shape, dtype
            )
        return self._made_up(ty)

    def _made_up(self, ty: ir.Type) -> Any:
        """The value of something not modelled: 0 of a scalar type, else nothing."""
        try:
            return np.asarray(0, numpy_dtype(ty))
        except NotImplementedError:
            return None

    def _fresh(self, op: ir.Operation | ir.Value, ty: ir.Type, index: int = 0) -> Array:
        """The buffer ``op`` makes (the same each time it runs), random."""
        made = self._made.setdefault(op, [])
        if index < len(made):
            return made[index]
        try:
            shape, dtype = _shape_and_dtype(ty)
        except NotImplementedError:  # barriers and the like: not data
            made.append(np.zeros((), np.int64))
            return made[-1]
        if any(n < 0 for n in shape):
            raise NotImplementedError(f"a dynamically shaped buffer from {op.name}")
        rng = np.random.default_rng([self.seed, len(self.buffers)])
        buffer = _random_array(rng, shape, dtype)
        self.buffers.append(buffer)
        made.append(buffer)
        return buffer


_HANDLERS: dict[str, Callable[[Evaluator, ir.Operation], list[Any]]] = {}


def handles(*names: str) -> Callable[[Callable[[Evaluator, ir.Operation], list[Any]]], Any]:
    def register(fn: Callable[[Evaluator, ir.Operation], list[Any]]) -> Any:
        for name in names:
            _HANDLERS[name] = fn
        return fn

    return register


# -- arith


@handles("arith.constant")
def _constant(ev: Evaluator, op: ir.Operation) -> list[Any]:
    attribute = op.attributes["value"]
    shape, dtype = _shape_and_dtype(op.results[0].type)
    if isinstance(attribute, ir.DenseElementsAttr):
        dense = ir.DenseElementsAttr(attribute)
        if dense.is_splat:
            return [np.full(shape, _scalar(dense.get_splat_value()), dtype)]
        for kind in (ir.DenseFPElementsAttr, ir.DenseIntElementsAttr):
            if isinstance(attribute, kind):
                return [np.array(kind(attribute)).astype(dtype).reshape(shape)]
        raise NotImplementedError(f"dense constant {attribute}")
    return [np.asarray(_scalar(attribute), dtype)]


def _scalar(attribute: ir.Attribute) -> Any:
    if isinstance(attribute, ir.FloatAttr):
        return ir.FloatAttr(attribute).value
    if isinstance(attribute, ir.IntegerAttr):
        return ir.IntegerAttr(attribute).value
    if isinstance(attribute, ir.BoolAttr):
        return ir.BoolAttr(attribute).value
    raise NotImplementedError(f"constant {attribute}")


@handles("arith.cmpf", "arith.cmpi")
def _compare(ev: Evaluator, op: ir.Operation) -> list[Any]:
    a, b = ev.operands(op)
    table = _CMPF if op.name == "arith.cmpf" else _CMPI
    with np.errstate(all="ignore"):
        return [np.asarray(table[_int(op.attributes["predicate"])](a, b), np.bool_)]


@handles("arith.select")
def _select(ev: Evaluator, op: ir.Operation) -> list[Any]:
    condition, a, b = ev.operands(op)
    return [np.where(condition, a, b).astype(a.dtype)]


# -- vector


@handles("vector.broadcast")
def _vector_broadcast(ev: Evaluator, op: ir.Operation) -> list[Any]:
    (x,) = ev.operands(op)
    shape, dtype = _shape_and_dtype(op.results[0].type)
    return [np.broadcast_to(np.asarray(x, dtype), shape).copy()]


@handles("vector.shape_cast")
def _shape_cast(ev: Evaluator, op: ir.Operation) -> list[Any]:
    (x,) = ev.operands(op)
    shape, _ = _shape_and_dtype(op.results[0].type)
    return [x.reshape(shape).copy()]


@handles("vector.multi_reduction")
def _multi_reduction(ev: Evaluator, op: ir.Operation) -> list[Any]:
    source, acc = ev.operands(op)
    kind = _kind(op)
    dims = tuple(_ints(op.attributes["reduction_dims"]))
    reduced = _reduce(kind, source, dims)
    return [np.asarray(_COMBINE[kind](acc, reduced)).astype(source.dtype)]


def _reduce(kind: str, source: Array, dims: tuple[int, ...]) -> Array:
    if kind in ("maxui", "minui"):
        fn = np.maximum.reduce if kind == "maxui" else np.minimum.reduce
        return _signed_like(fn(_unsigned(source), axis=dims), source)
    with np.errstate(all="ignore"):
        return np.asarray(_REDUCE[kind](source, axis=dims)).astype(source.dtype)


@handles("vector.reduction")
def _reduction(ev: Evaluator, op: ir.Operation) -> list[Any]:
    operands = ev.operands(op)
    kind = _kind(op)
    reduced = _reduce(kind, operands[0], (0,))
    if len(operands) > 1:
        reduced = np.asarray(_COMBINE[kind](operands[1], reduced)).astype(reduced.dtype)
    return [reduced]


@handles("vector.extract")
def _extract(ev: Evaluator, op: ir.Operation) -> list[Any]:
    x, *dynamic = ev.operands(op)
    given = iter(int(d) for d in dynamic)
    position = [
        next(given) if p == _DYNAMIC else p for p in _ints(op.attributes["static_position"])
    ]
    return [np.asarray(x[tuple(position)]).copy()]


@handles("vector.extract_strided_slice")
def _extract_strided_slice(ev: Evaluator, op: ir.Operation) -> list[Any]:
    (x,) = ev.operands(op)
    offsets = _ints(op.attributes["offsets"])
    sizes = _ints(op.attributes["sizes"])
    strides = _ints(op.attributes["strides"])
    index = tuple(slice(o, o + n * s, s) for o, n, s in zip(offsets, sizes, strides, strict=True))
    return [x[index].copy()]


@handles("vector.insert_strided_slice")
def _insert_strided_slice(ev: Evaluator, op: ir.Operation) -> list[Any]:
    source, dest = ev.operands(op)
    offsets = _ints(op.attributes["offsets"])
    strides = _ints(op.attributes["strides"])
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
    shape, _ = _shape_and_dtype(op.results[0].type)
    return [broadcast_in_dim(x, _ints(op.attributes["broadcast_dimensions"]), shape)]


@handles("mosaic_gpu.broadcasted_iota")
def _iota(ev: Evaluator, op: ir.Operation) -> list[Any]:
    shape, dtype = _shape_and_dtype(op.results[0].type)
    dimension = _int(op.attributes["dimension"])
    line = np.arange(shape[dimension]).reshape(
        [-1 if d == dimension else 1 for d in range(len(shape))]
    )
    return [np.broadcast_to(line, shape).astype(dtype)]


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


@handles("mosaic_gpu.wgmma")
def _wgmma(ev: Evaluator, op: ir.Operation) -> list[Any]:
    acc, a, b = ev.operands(op)[:3]
    product = np.asarray(a, np.float32) @ np.asarray(b, np.float32)
    return [(acc.astype(np.float32) + product).astype(acc.dtype)]


@handles("mosaic_gpu.async_load_tmem")
def _load_tmem(ev: Evaluator, op: ir.Operation) -> list[Any]:
    ref = ev.values[op.operands[0]]
    return [np.array(ref, copy=True).astype(ev._dtype(op.results[0]))]


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
    return [
        ev._fresh(op, r.type, i) if isinstance(r.type, ir.MemRefType) else ev._made_up(r.type)
        for i, r in enumerate(op.results)
    ]


@handles("memref.subview")
def _subview(ev: Evaluator, op: ir.Operation) -> list[Any]:
    source, *dynamic = ev.operands(op)
    dynamic_values = iter(int(d) for d in dynamic)

    def static(name: str) -> list[int]:
        return [next(dynamic_values) if v == _DYNAMIC else v for v in _ints(op.attributes[name])]

    offsets, sizes, strides = (
        static("static_offsets"),
        static("static_sizes"),
        static("static_strides"),
    )
    view = source[
        tuple(slice(o, o + n * s, s) for o, n, s in zip(offsets, sizes, strides, strict=True))
    ]
    shape, _ = _shape_and_dtype(op.results[0].type)
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
    shape, _ = _shape_and_dtype(op.results[0].type)
    view = source.view()
    view.shape = shape  # raises rather than copy: stores must reach the buffer
    return [view]


@handles("memref.load")
def _memref_load(ev: Evaluator, op: ir.Operation) -> list[Any]:
    ref, *indices = ev.operands(op)
    return [np.asarray(ref[tuple(int(i) for i in indices)]).copy()]


@handles("memref.store")
def _memref_store(ev: Evaluator, op: ir.Operation) -> list[Any]:
    value, ref, *indices = ev.operands(op)
    ref[tuple(int(i) for i in indices)] = value
    return []


# -- scf


@handles("scf.for")
def _for(ev: Evaluator, op: ir.Operation) -> list[Any]:
    lower, upper, step, *carried = ev.operands(op)
    i = lower
    while i < upper:
        carried = ev.region(op.regions[0], [np.asarray(i, np.asarray(lower).dtype), *carried])
        i = i + step
    return carried


@handles("scf.while")
def _while(ev: Evaluator, op: ir.Operation) -> list[Any]:
    carried = ev.operands(op)
    for _ in range(1_000_000):
        condition, *passed = ev.region(op.regions[0], carried)
        if not bool(condition):
            return passed
        carried = ev.region(op.regions[1], passed)
    raise RuntimeError("scf.while ran a million times")


@handles("scf.if")
def _if(ev: Evaluator, op: ir.Operation) -> list[Any]:
    (condition,) = ev.operands(op)
    region = op.regions[0] if bool(condition) else op.regions[1]
    if not list(region.blocks):
        return []
    return ev.region(region, [])


@handles("scf.index_switch")
def _index_switch(ev: Evaluator, op: ir.Operation) -> list[Any]:
    (index,) = ev.operands(op)
    cases = _ints(op.attributes["cases"])
    regions = list(op.regions)  # the default region first, then one per case
    region = regions[1 + cases.index(int(index))] if int(index) in cases else regions[0]
    return ev.region(region, [])


# --- Comparing two runs --------------------------------------------------------------


def run(module: ir.Module, seed: int = 0) -> list[Array]:
    """The buffers ``module`` leaves after one run on random inputs drawn from ``seed``."""
    with module.context:
        return Evaluator(module, seed).run()


def assert_same_results(before: Sequence[Array], after: Sequence[Array]) -> None:
    """Asserts two runs left the same buffers, bit for bit."""
    assert len(before) == len(after), f"{len(before)} buffers before, {len(after)} after"
    for i, (a, b) in enumerate(zip(before, after, strict=True)):
        assert a.shape == b.shape and a.dtype == b.dtype, (i, a.shape, a.dtype, b.shape, b.dtype)
        same = np.ascontiguousarray(a).view(np.uint8) == np.ascontiguousarray(b).view(np.uint8)
        if not same.all():
            raise AssertionError(f"buffer {i} ({a.shape} {a.dtype}) differs:\n{a}\nvs\n{b}")
