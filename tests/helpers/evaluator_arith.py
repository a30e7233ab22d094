"""What the elementwise ops and the combining kinds compute, in numpy, from MLIR's
definitions (the arith, math and vector dialects); the reference evaluator's
arithmetic (``tests/helpers/evaluator.py``).

Integers are signless in MLIR: an ``iN`` value is N bits, and the op says how
to read them. Here an ``iN`` value is held in the signed numpy integer of N
bits (``i1`` in a numpy bool, ``index`` in int64); each op reads it as signed
(``signed``: an ``i1`` true is -1) or unsigned (``unsigned``: true is 1) as its
definition says, computes exactly, and keeps the low N bits (``wrap``).

Where MLIR leaves a result undefined (poison: division by zero, a shift by N
bits or more, a float out of an integer's range), the evaluator picks one
value, the same every time, so both runs of a comparison agree.

Floats follow IEEE 754 with MLIR's choices: ``maximumf``/``minimumf`` return
NaN if either operand is NaN and order -0.0 below +0.0; ``maxnumf``/``minnumf``
return the other operand when one is NaN. (For +0.0 against -0.0 MLIR lets
``maxnumf`` return either; the evaluator orders them like ``maximumf``, in
both runs.)
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np
import scipy.special

Array = np.ndarray
Binary = Callable[[Array, Array], Array]

_UNSIGNED = {8: np.uint8, 16: np.uint16, 32: np.uint32, 64: np.uint64}


# --- Integers: N bits read as signed or unsigned --------------------------------


def width(dtype: Any) -> int:
    """The bit width of the MLIR integer a numpy dtype holds (``i1``: a bool)."""
    dtype = np.dtype(dtype)
    return 1 if dtype == np.bool_ else dtype.itemsize * 8


def signed(x: Array) -> Array:
    """The integers' signed values, in int64 (an ``i1`` true is -1)."""
    x = np.asarray(x)
    if x.dtype == np.bool_:
        return -x.astype(np.int64)
    return x.astype(np.int64)


def unsigned(x: Array) -> Array:
    """The integers' unsigned values, in uint64 (an ``i1`` true is 1)."""
    x = np.asarray(x)
    if x.dtype == np.bool_:
        return x.astype(np.uint64)
    return x.view(_UNSIGNED[x.dtype.itemsize * 8]).astype(np.uint64)


def wrap(y: Array, dtype: Any) -> Array:
    """The low bits of the integers ``y`` (any numpy integers) as an ``iN`` of ``dtype``."""
    dtype = np.dtype(dtype)
    y = np.asarray(y)
    if y.dtype.kind == "i":
        y = y.view(np.uint64) if y.dtype == np.int64 else y.astype(np.int64).view(np.uint64)
    y = y.astype(np.uint64)
    if dtype == np.bool_:
        return (y & np.uint64(1)).astype(np.bool_)
    return y.astype(_UNSIGNED[dtype.itemsize * 8]).view(dtype)


def _on_unsigned(fn: Binary) -> Binary:
    """An op on the operands' N bits read unsigned, keeping N bits (add, mul, bitwise:
    two's complement makes these the signed ops too)."""

    def apply(a: Array, b: Array) -> Array:
        with np.errstate(all="ignore"):
            return wrap(fn(unsigned(a), unsigned(b)), np.asarray(a).dtype)

    return apply


def _on_signed(fn: Binary) -> Binary:
    def apply(a: Array, b: Array) -> Array:
        with np.errstate(all="ignore"):
            return wrap(fn(signed(a), signed(b)), np.asarray(a).dtype)

    return apply


def _nonzero(b: Array) -> Array:
    return np.where(b == 0, 1, b).astype(b.dtype)


def _floor_div(a: Array, b: Array) -> Array:
    """Signed floor division (int64); 0 where ``b`` is 0 (undefined in MLIR)."""
    return np.where(b == 0, 0, a // _nonzero(b))


def _trunc_div(a: Array, b: Array) -> Array:
    q = _floor_div(a, b)
    inexact = (b != 0) & (a - q * _nonzero(b) != 0) & ((a < 0) != (b < 0))
    return np.where(inexact, q + 1, q)


def _ceil_div(a: Array, b: Array) -> Array:
    q = _floor_div(a, b)
    return np.where((b != 0) & (a - q * _nonzero(b) != 0), q + 1, q)


def _unsigned_div(a: Array, b: Array) -> Array:
    return np.where(b == 0, np.uint64(0), a // _nonzero(b))


def _unsigned_ceil_div(a: Array, b: Array) -> Array:
    q = _unsigned_div(a, b)
    return np.where((b != 0) & (a % _nonzero(b) != 0), q + np.uint64(1), q)


def _shift(kind: str) -> Binary:
    """``shli``/``shrui``/``shrsi``: the amount is read unsigned; an amount of N or
    more is undefined (the evaluator gives 0)."""

    def apply(a: Array, b: Array) -> Array:
        dtype = np.asarray(a).dtype
        bits = width(dtype)
        amount = unsigned(b)
        too_far = amount >= np.uint64(bits)
        amount = np.minimum(amount, np.uint64(bits - 1))
        with np.errstate(all="ignore"):
            if kind == "left":
                y = unsigned(a) << amount
            elif kind == "logical":
                y = unsigned(a) >> amount
            else:
                y = signed(a) >> amount.astype(np.int64)
        return wrap(np.where(too_far, 0, y), dtype)

    return apply


INTEGER_BINARY: dict[str, Binary] = {
    "arith.addi": _on_unsigned(np.add),
    "arith.subi": _on_unsigned(np.subtract),
    "arith.muli": _on_unsigned(np.multiply),
    "arith.andi": _on_unsigned(np.bitwise_and),
    "arith.ori": _on_unsigned(np.bitwise_or),
    "arith.xori": _on_unsigned(np.bitwise_xor),
    "arith.divsi": _on_signed(_trunc_div),
    "arith.remsi": _on_signed(lambda a, b: a - _trunc_div(a, b) * b),
    "arith.floordivsi": _on_signed(_floor_div),
    "arith.ceildivsi": _on_signed(_ceil_div),
    "arith.divui": _on_unsigned(_unsigned_div),
    "arith.remui": _on_unsigned(lambda a, b: np.where(b == 0, np.uint64(0), a % _nonzero(b))),
    "arith.ceildivui": _on_unsigned(_unsigned_ceil_div),
    "arith.maxsi": _on_signed(np.maximum),
    "arith.minsi": _on_signed(np.minimum),
    "arith.maxui": _on_unsigned(np.maximum),
    "arith.minui": _on_unsigned(np.minimum),
    "arith.shli": _shift("left"),
    "arith.shrui": _shift("logical"),
    "arith.shrsi": _shift("arithmetic"),
}

# ``arith.cmpi`` predicates by number: (test, whether the operands are read signed).
CMPI: dict[int, tuple[Binary, bool]] = {
    0: (np.equal, True),
    1: (np.not_equal, True),
    2: (np.less, True),
    3: (np.less_equal, True),
    4: (np.greater, True),
    5: (np.greater_equal, True),
    6: (np.less, False),
    7: (np.less_equal, False),
    8: (np.greater, False),
    9: (np.greater_equal, False),
}


def compare_integers(predicate: int, a: Array, b: Array) -> Array:
    test, as_signed = CMPI[predicate]
    read = signed if as_signed else unsigned
    return np.asarray(test(read(a), read(b)), np.bool_)


# --- Floats ---------------------------------------------------------------------


def _ordered_max(a: Array, b: Array) -> Array:
    """The larger, -0.0 below +0.0 (neither operand NaN)."""
    larger = np.where(a > b, a, b)
    return np.where((a == b) & np.signbit(b), a, larger)


def _ordered_min(a: Array, b: Array) -> Array:
    smaller = np.where(a < b, a, b)
    return np.where((a == b) & np.signbit(a), a, smaller)


def _propagating(ordered: Binary) -> Binary:
    """``maximumf``/``minimumf``: NaN if either operand is NaN."""

    def apply(a: Array, b: Array) -> Array:
        a, b = np.asarray(a), np.asarray(b)
        return np.where(np.isnan(a), a, np.where(np.isnan(b), b, ordered(a, b))).astype(a.dtype)

    return apply


def _number(ordered: Binary) -> Binary:
    """``maxnumf``/``minnumf``: a NaN operand gives way to the other."""

    def apply(a: Array, b: Array) -> Array:
        a, b = np.asarray(a), np.asarray(b)
        return np.where(np.isnan(a), b, np.where(np.isnan(b), a, ordered(a, b))).astype(a.dtype)

    return apply


MAXIMUMF, MINIMUMF = _propagating(_ordered_max), _propagating(_ordered_min)
MAXNUMF, MINNUMF = _number(_ordered_max), _number(_ordered_min)


def _in_f64(fn: Callable[..., Array]) -> Callable[..., Array]:
    """A math function computed in f64 and rounded once to the operand's type."""

    def apply(*xs: Array) -> Array:
        with np.errstate(all="ignore"):
            return np.asarray(fn(*(x.astype(np.float64) for x in xs))).astype(xs[0].dtype)

    return apply


FLOAT_BINARY: dict[str, Binary] = {
    "arith.addf": np.add,
    "arith.subf": np.subtract,
    "arith.mulf": np.multiply,
    "arith.divf": np.divide,
    "arith.remf": np.fmod,  # C's fmod: the sign of the dividend
    "arith.maximumf": MAXIMUMF,
    "arith.minimumf": MINIMUMF,
    "arith.maxnumf": MAXNUMF,
    "arith.minnumf": MINNUMF,
    "math.copysign": np.copysign,
    "math.powf": _in_f64(np.power),
    "math.atan2": _in_f64(np.arctan2),
}

BINARY: dict[str, Binary] = {**INTEGER_BINARY, **FLOAT_BINARY}


def _round_half_away(x: Array) -> Array:
    return np.sign(x) * np.floor(np.abs(x) + 0.5)


def _ctlz(x: Array) -> Array:
    bits = width(x.dtype)
    u = unsigned(x)
    out = np.full(u.shape, bits, np.int64)
    for i in range(bits):
        out = np.where((out == bits) & ((u >> np.uint64(bits - 1 - i)) & np.uint64(1) == 1), i, out)
    return wrap(out, x.dtype)


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
    "math.absi": lambda x: wrap(np.abs(signed(x)), x.dtype),
    "math.round": _in_f64(_round_half_away),
    "math.roundeven": np.rint,
    "math.ctlz": _ctlz,
}

# ``arith.cmpf`` predicates by number (``o``: ordered, false if either is NaN;
# ``u``: unordered, true if either is NaN).
CMPF: dict[int, Binary] = {
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


# --- Casts ----------------------------------------------------------------------

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


def _to_float(values: Array, dtype: Any) -> Array:
    """Integers (int64 or uint64) to a float type, rounded once."""
    if np.all(np.abs(values.astype(np.float64)) < 2.0**53):
        return values.astype(np.float64).astype(dtype)  # exact in f64, then one rounding
    return values.astype(dtype)


def _from_float(x: Array, dtype: Any, as_signed: bool) -> Array:
    """``fptosi``/``fptoui``: truncated; NaN or out of range is undefined (clamped)."""
    bits = width(dtype)
    low, high = (-(2 ** (bits - 1)), 2 ** (bits - 1) - 1) if as_signed else (0, 2**bits - 1)
    y = np.clip(np.trunc(np.nan_to_num(np.asarray(x, np.float64))), low, high)
    if as_signed:
        return wrap(np.clip(y, -(2.0**63), 2.0**63 - 1024).astype(np.int64), dtype)
    return wrap(np.clip(y, 0, 2.0**64 - 2048).astype(np.uint64), dtype)


def cast(name: str, x: Array, dtype: Any) -> Array:
    """The ``arith`` cast ``name`` of ``x`` to the numpy dtype ``dtype``."""
    x = np.asarray(x)
    dtype = np.dtype(dtype)
    with np.errstate(all="ignore"):
        if name == "arith.bitcast":
            return x.view(dtype)
        if name in ("arith.extf", "arith.truncf"):
            return x.astype(dtype)
        if name == "arith.extsi":
            return wrap(signed(x), dtype)
        if name in ("arith.extui", "arith.trunci"):
            return wrap(unsigned(x), dtype)
        if name == "arith.index_cast":  # sign-extends or truncates
            return wrap(signed(x), dtype)
        if name == "arith.index_castui":  # zero-extends or truncates
            return wrap(unsigned(x), dtype)
        if name == "arith.sitofp":
            return _to_float(signed(x), dtype)
        if name == "arith.uitofp":
            return _to_float(unsigned(x), dtype)
        if name in ("arith.fptosi", "arith.fptoui"):
            return _from_float(x, dtype, as_signed=name == "arith.fptosi")
    raise NotImplementedError(f"cast {name}")


# --- The vector dialect's combining kinds -----------------------------------------

COMBINE: dict[str, Binary] = {
    "add": lambda a, b: (INTEGER_BINARY["arith.addi"] if _is_int(a) else np.add)(a, b),
    "mul": lambda a, b: (INTEGER_BINARY["arith.muli"] if _is_int(a) else np.multiply)(a, b),
    "and": INTEGER_BINARY["arith.andi"],
    "or": INTEGER_BINARY["arith.ori"],
    "xor": INTEGER_BINARY["arith.xori"],
    "maxsi": INTEGER_BINARY["arith.maxsi"],
    "minsi": INTEGER_BINARY["arith.minsi"],
    "maxui": INTEGER_BINARY["arith.maxui"],
    "minui": INTEGER_BINARY["arith.minui"],
    "maximumf": MAXIMUMF,
    "minimumf": MINIMUMF,
    "maxnumf": MAXNUMF,
    "minnumf": MINNUMF,
}


def _is_int(x: Array) -> bool:
    return np.asarray(x).dtype.kind in "iub"


def combine(kind: str, a: Array, b: Array) -> Array:
    """``a`` combined with ``b`` by the combining kind ``kind``, in ``a``'s type."""
    if kind not in COMBINE:
        raise NotImplementedError(f"combining kind {kind}")
    dtype = np.asarray(a).dtype
    with np.errstate(all="ignore"):
        return np.asarray(COMBINE[kind](np.asarray(a), np.asarray(b, dtype))).astype(dtype)


def reduce(kind: str, x: Array, dims: tuple[int, ...]) -> Array:
    """``x`` reduced over ``dims`` by ``kind``: the reduced elements in row-major
    order, combined as a balanced tree of adjacent pairs (a fixed order, so float
    sums round the same way every run; the unit-dim rewrite keeps that order,
    as it keeps every element's place in it)."""
    x = np.asarray(x)
    kept = [d for d in range(x.ndim) if d not in dims]
    moved = np.transpose(x, kept + list(dims))
    count = int(np.prod([x.shape[d] for d in dims], dtype=np.int64))
    row = moved.reshape([x.shape[d] for d in kept] + [count])
    if count == 0:
        raise NotImplementedError("a reduction of no elements")
    while row.shape[-1] > 1:
        pairs = row.shape[-1] // 2
        combined = combine(kind, row[..., 0 : 2 * pairs : 2], row[..., 1 : 2 * pairs : 2])
        row = np.concatenate([combined, row[..., 2 * pairs :]], axis=-1)
    return row[..., 0]
