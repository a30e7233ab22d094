"""The evaluator's arithmetic against independent definitions: integer ops and
reductions of every width and signedness against Python's integers, float
min/max against IEEE 754's rules case by case and against ``jnp``, the new
vector rules against numpy and ``jnp``.

Inputs are the evaluator's own (trials 1 and 2 hold integer extremes, NaN,
infinities and -0.0), read back from the module's arguments.
"""

from __future__ import annotations

import functools
import math

import jax.numpy as jnp
import numpy as np
import pytest
from evaluator import Evaluator, run
from evaluator_arith import MAXIMUMF, MAXNUMF, MINIMUMF, MINNUMF
from mlir_snippets import func_module, parse

WIDTHS = {"i1": 1, "i8": 8, "i16": 16, "i32": 32, "i64": 64}


def _arguments(module: object, seed: int) -> list[np.ndarray]:
    """The values the evaluator gives ``module``'s arguments in trial ``seed``."""
    ev = Evaluator(module, seed)  # type: ignore[arg-type]
    with module.context:  # type: ignore[attr-defined]
        func = next(iter(module.body.operations)).operation  # type: ignore[attr-defined]
        block = next(iter(func.regions[0].blocks))
        return [ev._argument(i, a) for i, a in enumerate(block.arguments)]


def _run(body: str, args: list[tuple[str, str]], outs: list[str], seed: int) -> tuple:
    """Runs ``body`` storing each of ``outs`` (``(name, type)``); returns the inputs and
    the stored values."""
    stores = []
    out_args = []
    for i, (name, ty) in enumerate(outs):
        shape = ty.removeprefix("vector<").removesuffix(">")
        stores.append(f'"mosaic_gpu.vector_store"(%{name}, %o{i}) : ({ty}, memref<{shape}>) -> ()')
        out_args.append((f"o{i}", f"memref<{shape}>"))
    module = parse(func_module([*body.splitlines(), *stores], [*args, *out_args]))
    inputs = _arguments(module, seed)[: len(args)]
    return inputs, run(module, seed)


def _signed(v: int, bits: int) -> int:
    v &= (1 << bits) - 1
    return v - (1 << bits) if v >> (bits - 1) else v


def _unsigned(v: int, bits: int) -> int:
    return v & ((1 << bits) - 1)


def _bits(x: np.ndarray, bits: int) -> list[int]:
    """The elements' N-bit patterns as Python integers (an ``i1`` true is 1)."""
    return [_unsigned(int(v), bits) for v in np.asarray(x).reshape(-1)]


def _trunc_div(a: int, b: int) -> int:
    q = abs(a) // abs(b)
    return q if (a < 0) == (b < 0) else -q


# (a, b, bits) -> result, or None where MLIR leaves it undefined.
INTEGER_OPS = {
    "arith.addi": lambda a, b, n: a + b,
    "arith.subi": lambda a, b, n: a - b,
    "arith.muli": lambda a, b, n: a * b,
    "arith.andi": lambda a, b, n: a & b,
    "arith.ori": lambda a, b, n: a | b,
    "arith.xori": lambda a, b, n: a ^ b,
    "arith.divsi": lambda a, b, n: (
        None
        if _signed(b, n) == 0 or (_signed(a, n) == -(2 ** (n - 1)) and _signed(b, n) == -1)
        else _trunc_div(_signed(a, n), _signed(b, n))
    ),
    "arith.remsi": lambda a, b, n: (
        None
        if _signed(b, n) == 0 or (_signed(a, n) == -(2 ** (n - 1)) and _signed(b, n) == -1)
        else _signed(a, n) - _trunc_div(_signed(a, n), _signed(b, n)) * _signed(b, n)
    ),
    "arith.floordivsi": lambda a, b, n: (
        None
        if _signed(b, n) == 0 or (_signed(a, n) == -(2 ** (n - 1)) and _signed(b, n) == -1)
        else _signed(a, n) // _signed(b, n)
    ),
    "arith.divui": lambda a, b, n: None if b == 0 else a // b,
    "arith.remui": lambda a, b, n: None if b == 0 else a % b,
    "arith.ceildivui": lambda a, b, n: None if b == 0 else -(-a // b),
    "arith.maxsi": lambda a, b, n: max(_signed(a, n), _signed(b, n)),
    "arith.minsi": lambda a, b, n: min(_signed(a, n), _signed(b, n)),
    "arith.maxui": lambda a, b, n: max(a, b),
    "arith.minui": lambda a, b, n: min(a, b),
    "arith.shli": lambda a, b, n: None if b >= n else a << b,
    "arith.shrui": lambda a, b, n: None if b >= n else a >> b,
    "arith.shrsi": lambda a, b, n: None if b >= n else _signed(a, n) >> b,
}


@pytest.mark.parametrize("element", ["i1", "i8", "i32", "i64"])
@pytest.mark.parametrize("name", sorted(INTEGER_OPS))
def test_integer_ops_match_python_integers(name: str, element: str) -> None:
    bits = WIDTHS[element]
    if bits == 1 and name in ("arith.divsi", "arith.remsi", "arith.floordivsi"):
        pytest.skip("true / true overflows on i1: every defined case divides by -1")
    ty = f"vector<4x16x{element}>"
    body = f"%r = {name} %a, %b : {ty}"
    for seed in (1, 2):  # small and wide integers, with the extremes
        (a, b), (out,) = _run(body, [("a", ty), ("b", ty)], [("r", ty)], seed)
        for x, y, got in zip(_bits(a, bits), _bits(b, bits), _bits(out, bits), strict=True):
            expected = INTEGER_OPS[name](x, y, bits)
            if expected is not None:
                assert got == _unsigned(expected, bits), (name, element, x, y, got)


CMPI = {
    "eq": lambda a, b: a == b,
    "ne": lambda a, b: a != b,
    "slt": lambda a, b: a < b,
    "sle": lambda a, b: a <= b,
    "sgt": lambda a, b: a > b,
    "sge": lambda a, b: a >= b,
    "ult": lambda a, b: a < b,
    "ule": lambda a, b: a <= b,
    "ugt": lambda a, b: a > b,
    "uge": lambda a, b: a >= b,
}


@pytest.mark.parametrize("element", ["i1", "i8", "i32"])
def test_integer_comparisons_read_the_bits_as_the_predicate_says(element: str) -> None:
    bits = WIDTHS[element]
    ty = f"vector<64x{element}>"
    mask = "vector<64xi1>"
    body = "\n".join(f"%{p} = arith.cmpi {p}, %a, %b : {ty}" for p in CMPI)
    (a, b), outs = _run(body, [("a", ty), ("b", ty)], [(p, mask) for p in CMPI], 2)
    for predicate, out in zip(CMPI, outs, strict=True):
        read = _unsigned if predicate[0] == "u" else _signed
        for x, y, got in zip(_bits(a, bits), _bits(b, bits), out.tolist(), strict=True):
            assert got == CMPI[predicate](read(x, bits), read(y, bits)), (predicate, x, y)


KINDS = {
    "add": lambda a, b, n: a + b,
    "mul": lambda a, b, n: a * b,
    "and": lambda a, b, n: a & b,
    "or": lambda a, b, n: a | b,
    "xor": lambda a, b, n: a ^ b,
    "maxsi": lambda a, b, n: max(_signed(a, n), _signed(b, n)),
    "minsi": lambda a, b, n: min(_signed(a, n), _signed(b, n)),
    "maxui": lambda a, b, n: max(a, b),
    "minui": lambda a, b, n: min(a, b),
}


@pytest.mark.parametrize("element", ["i1", "i8", "i16", "i32", "i64"])
@pytest.mark.parametrize("kind", sorted(KINDS))
def test_integer_reductions_match_python_integers(kind: str, element: str) -> None:
    """``multi_reduction`` over the rows, then ``vector.reduction`` of the result, each
    with an acc."""
    bits = WIDTHS[element]
    body = (
        f"%r = vector.multi_reduction <{kind}>, %x, %acc [1] "
        f": vector<4x16x{element}> to vector<4x{element}>\n"
        f"%t = vector.reduction <{kind}>, %r, %s : vector<4x{element}> into {element}\n"
        f"%tv = vector.broadcast %t : {element} to vector<1x{element}>"
    )
    args = [("x", f"vector<4x16x{element}>"), ("acc", f"vector<4x{element}>"), ("s", element)]
    outs = [("r", f"vector<4x{element}>"), ("tv", f"vector<1x{element}>")]
    for seed in (1, 2):
        (x, acc, s), (rows, total) = _run(body, args, outs, seed)

        def fold(values: list[int]) -> int:
            return functools.reduce(lambda p, q: _unsigned(KINDS[kind](p, q, bits), bits), values)

        expected = [fold([_bits(acc, bits)[i], *_bits(x[i], bits)]) for i in range(x.shape[0])]
        assert _bits(rows, bits) == expected, (kind, element, seed)
        assert _bits(total, bits) == [fold([_bits(s, bits)[0], *expected])]


@pytest.mark.parametrize(
    ("name", "source", "target", "reference"),
    [
        ("arith.extsi", "i8", "i32", lambda v: _signed(v, 8)),
        ("arith.extui", "i8", "i32", lambda v: v),
        ("arith.extsi", "i1", "i8", lambda v: -v),
        ("arith.extui", "i1", "i8", lambda v: v),
        ("arith.trunci", "i32", "i8", lambda v: v),
        ("arith.trunci", "i32", "i1", lambda v: v),
        ("arith.index_cast", "i16", "index", lambda v: _signed(v, 16)),
        ("arith.index_castui", "i16", "index", lambda v: v),
        ("arith.index_cast", "index", "i8", lambda v: v),
    ],
)
def test_integer_casts_extend_as_their_definition_says(name, source, target, reference) -> None:
    bits = {**WIDTHS, "index": 64}
    src, dst = f"vector<64x{source}>", f"vector<64x{target}>"
    (x,), (out,) = _run(f"%r = {name} %x : {src} to {dst}", [("x", src)], [("r", dst)], 1)
    for v, got in zip(_bits(x, bits[source]), _bits(out, bits[target]), strict=True):
        assert got == _unsigned(reference(v), bits[target]), (name, v, got)


@pytest.mark.parametrize(("name", "read"), [("arith.sitofp", _signed), ("arith.uitofp", None)])
def test_integers_to_floats_read_signed_or_unsigned(name: str, read) -> None:
    ty, fty = "vector<64xi32>", "vector<64xf32>"
    (x,), (out,) = _run(f"%r = {name} %x : {ty} to {fty}", [("x", ty)], [("r", fty)], 1)
    for v, got in zip(_bits(x, 32), out.tolist(), strict=True):
        value = read(v, 32) if read else v
        assert got == float(np.float32(value)), (name, v, got)


NAN = math.nan

# (a, b) -> maximumf, minimumf, maxnumf, minnumf (IEEE 754-2019 maximum/minimum
# and maximumNumber/minimumNumber).
FLOAT_CASES = [
    ((1.0, 2.0), (2.0, 1.0, 2.0, 1.0)),
    ((-0.0, 0.0), (0.0, -0.0, 0.0, -0.0)),
    ((0.0, -0.0), (0.0, -0.0, 0.0, -0.0)),
    ((-0.0, -0.0), (-0.0, -0.0, -0.0, -0.0)),
    ((NAN, 1.0), (NAN, NAN, 1.0, 1.0)),
    ((1.0, NAN), (NAN, NAN, 1.0, 1.0)),
    ((NAN, NAN), (NAN, NAN, NAN, NAN)),
    ((-math.inf, NAN), (NAN, NAN, -math.inf, -math.inf)),
    ((math.inf, -math.inf), (math.inf, -math.inf, math.inf, -math.inf)),
]


@pytest.mark.parametrize(("operands", "expected"), FLOAT_CASES)
def test_float_min_and_max_follow_ieee(operands, expected) -> None:
    a, b = (np.asarray(v, np.float32) for v in operands)
    for fn, want in zip((MAXIMUMF, MINIMUMF, MAXNUMF, MINNUMF), expected, strict=True):
        got = fn(a, b)
        if math.isnan(want):
            assert np.isnan(got)
        else:
            assert got == want and bool(np.signbit(got)) == (math.copysign(1.0, want) < 0)


@pytest.mark.parametrize(
    ("kind", "reference"),
    [
        ("maximumf", lambda x: jnp.max(x, axis=1)),
        ("minimumf", lambda x: jnp.min(x, axis=1)),
        ("maxnumf", lambda x: jnp.nanmax(x, axis=1)),
        ("minnumf", lambda x: jnp.nanmin(x, axis=1)),
        ("add", lambda x: jnp.sum(x, axis=1)),
    ],
)
def test_float_reductions_on_special_values_match_jnp(kind: str, reference) -> None:
    """NaN rows: NaN for maximumf/minimumf, ignored by maxnumf/minnumf; infinities."""
    ty = "vector<16x32xf32>"
    body = (
        "%acc = arith.constant dense<0xFF800000> : vector<16xf32>\n"
        if "max" in kind
        else "%acc = arith.constant dense<0x7F800000> : vector<16xf32>\n"
        if "min" in kind
        else "%acc = arith.constant dense<-0.0> : vector<16xf32>\n"
    ) + f"%r = vector.multi_reduction <{kind}>, %x, %acc [1] : {ty} to vector<16xf32>"
    for seed in (1, 2):
        (x,), (out,) = _run(body, [("x", ty)], [("r", "vector<16xf32>")], seed)
        assert np.isnan(x).any() or np.isinf(x).any()
        expected = np.asarray(reference(jnp.asarray(x)))
        np.testing.assert_allclose(out, expected, rtol=1e-5)


def test_a_row_of_negative_zeros_sums_to_negative_zero_unless_the_acc_is_positive() -> None:
    x = np.full((2, 8), -0.0, np.float32)
    from evaluator_arith import combine, reduce

    row = reduce("add", x, (1,))
    assert np.signbit(row).all()
    assert not np.signbit(combine("add", np.zeros(2, np.float32), row)).any()


def test_vector_transpose_and_insert_match_jnp() -> None:
    ty = "vector<2x3x4xf32>"
    body = (
        '%t = "vector.transpose"(%x) <{permutation = array<i64: 2, 0, 1>}> '
        ": (vector<2x3x4xf32>) -> vector<4x2x3xf32>\n"
        "%row = vector.extract %x[1, 2] : vector<4xf32> from vector<2x3x4xf32>\n"
        "%i = vector.insert %row, %x[0, 1] : vector<4xf32> into vector<2x3x4xf32>\n"
        "%s = vector.extract %x[1, 0, 3] : f32 from vector<2x3x4xf32>\n"
        "%j = vector.insert %s, %i[%k, 2, 0] : f32 into vector<2x3x4xf32>"
    )
    args = [("x", ty), ("k", "index")]
    for seed in (0, 1):
        (x, k), (t, i, j) = _run(
            body, args, [("t", "vector<4x2x3xf32>"), ("i", ty), ("j", ty)], seed
        )
        np.testing.assert_array_equal(t, np.asarray(jnp.transpose(jnp.asarray(x), (2, 0, 1))))
        inserted = jnp.asarray(x).at[0, 1].set(x[1, 2])
        np.testing.assert_array_equal(i, np.asarray(inserted))
        np.testing.assert_array_equal(j, np.asarray(inserted.at[int(k) % 2, 2, 0].set(x[1, 0, 3])))


def test_vector_shuffle_and_interleave() -> None:
    body = (
        '%s = "vector.shuffle"(%a, %b) <{mask = array<i64: 0, 5, 2, 7>}> '
        ": (vector<4xf32>, vector<4xf32>) -> vector<4xf32>\n"
        '%i = "vector.interleave"(%a, %b) : (vector<4xf32>, vector<4xf32>) -> vector<8xf32>'
    )
    args = [("a", "vector<4xf32>"), ("b", "vector<4xf32>")]
    (a, b), (s, i) = _run(body, args, [("s", "vector<4xf32>"), ("i", "vector<8xf32>")], 0)
    np.testing.assert_array_equal(s, [a[0], b[1], a[2], b[3]])
    np.testing.assert_array_equal(i, [a[0], b[0], a[1], b[1], a[2], b[2], a[3], b[3]])
