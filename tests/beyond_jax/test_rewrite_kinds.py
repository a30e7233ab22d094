"""The unit-dim rewrite on keep-dims statistics of every combining kind and on
``scf.while``/``scf.index_switch`` webs, checked by the evaluator's trials
(``equivalence.assert_equivalent``: NaN, infinities, -0.0, integer extremes,
every branch run).

The modules are written the way Pallas emits ``jnp.max(x, axis=-1,
keepdims=True)`` and friends: a ``vector.multi_reduction`` with an ``acc``
broadcast from a scalar (Pallas's identity, and other values a hand-written
module may use), a ``broadcast_in_dim`` to (N, 1), elementwise ops on the
statistic, a broadcast back against the tile; the statistic also stored and
reduced whole (which the rewrite narrows). Loops and switches read their trip
count and selector from a ref, as a kernel does. Last, a Pallas kernel on
integers lowered for real, with smalto inferring.
"""

from __future__ import annotations

import warnings

import jax
import jax.numpy as jnp
import pytest
from equivalence import assert_equivalent
from jax import lax
from jax._src.lib.mlir import ir
from jax.experimental.pallas import mosaic_gpu as plgpu
from mlir_snippets import func_module, parse

import smalto
import smalto.jax
from smalto.rewrite import rewrite_unit_dims

WARPGROUP = plgpu.CompilerParams(lowering_semantics=plgpu.LoweringSemantics.Warpgroup)

BID = "mosaic_gpu.broadcast_in_dim"
LOAD = "mosaic_gpu.vector_load"
STORE = "mosaic_gpu.vector_store"

# kind -> (the elementwise op of the same kind, Pallas's acc or the identity)
INTEGER_KINDS = {
    "add": ("arith.addi", "0"),
    "mul": ("arith.muli", "1"),
    "and": ("arith.andi", "-1"),
    "or": ("arith.ori", "0"),
    "xor": ("arith.xori", "0"),
    "maxsi": ("arith.maxsi", "MIN"),
    "minsi": ("arith.minsi", "MAX"),
    "maxui": ("arith.maxui", "0"),
    "minui": ("arith.minui", "-1"),
}
FLOAT_KINDS = {
    "add": ("arith.addf", "0.0"),
    "mul": ("arith.mulf", "1.0"),
    "maximumf": ("arith.maximumf", "0xFF800000"),
    "minimumf": ("arith.minimumf", "0x7F800000"),
    "maxnumf": ("arith.maxnumf", "0xFF800000"),
    "minnumf": ("arith.minnumf", "0x7F800000"),
}
_INT_LIMITS = {"i8": (-128, 127), "i16": (-(2**15), 2**15 - 1), "i32": (-(2**31), 2**31 - 1)}
_FLOAT_SPECIALS = {  # hex spellings per type
    "f32": {"0xFF800000": "0xFF800000", "0x7F800000": "0x7F800000", "nan": "0x7FC00000"},
    "bf16": {"0xFF800000": "0xFF80", "0x7F800000": "0x7F80", "nan": "0x7FC0"},
}


def _statistic_module(kind: str, op: str, acc: str, element: str) -> str:
    """``y = x - op(reduce(x, keepdims), c)`` stored with the statistic and its reduction."""
    tile, row, stat = (f"vector<8x16x{element}>", f"vector<8x{element}>", f"vector<8x1x{element}>")
    constant = "3" if element.startswith("i") else "1.5"
    subtract = "arith.subi" if element.startswith("i") else "arith.subf"
    body = f"""
%x = "{LOAD}"(%x_ref) : (memref<8x16x{element}>) -> {tile}
%a = arith.constant {acc} : {element}
%acc = vector.broadcast %a : {element} to {row}
%r = vector.multi_reduction <{kind}>, %x, %acc [1] : {tile} to {row}
%keep = {BID}(%r : {row}) <broadcast_dimensions = [0]> -> {stat}
%c = arith.constant dense<{constant}> : {stat}
%s = {op} %keep, %c : {stat}
%wide = {BID}(%s : {stat}) <broadcast_dimensions = [0, 1]> -> {tile}
%y = {subtract} %x, %wide : {tile}
"{STORE}"(%y, %out) : ({tile}, memref<8x16x{element}>) -> ()
"{STORE}"(%s, %stat) : ({stat}, memref<8x1x{element}>) -> ()
%t = vector.multi_reduction <{kind}>, %s, %a [0, 1] : {stat} to {element}
%c0 = arith.constant 0 : index
memref.store %t, %total[%c0] : memref<1x{element}>
"""
    args = [
        ("x_ref", f"memref<8x16x{element}>"),
        ("out", f"memref<8x16x{element}>"),
        ("stat", f"memref<8x1x{element}>"),
        ("total", f"memref<1x{element}>"),
    ]
    return func_module(body, args)


def _rewritten_and_checked(text: str) -> list[tuple[str, str]]:
    """Rewrites ``text``; asserts it verifies and computes what it did. Returns
    (op, first word of the change) per rewritten op."""
    before = parse(text)
    after = parse(text, before.context)
    with after.context, ir.Location.unknown():
        records = rewrite_unit_dims(after)
    assert after.operation.verify()
    assert_equivalent(before, after)
    return [(r.op, r.change.split()[0]) for r in records]


def _integer_acc(acc: str, element: str) -> str:
    low, high = _INT_LIMITS[element]
    return {"MIN": str(low), "MAX": str(high)}.get(acc, acc)


INTEGER_CASES = [
    pytest.param(kind, acc, element, id=f"{kind}-{element}-acc{acc}")
    for kind, (_, identity) in INTEGER_KINDS.items()
    for element in ("i32", "i8")
    for acc in (identity, "5")
    if element == "i32" or acc != "5"
]


@pytest.mark.parametrize(("kind", "acc", "element"), INTEGER_CASES)
def test_integer_statistics(kind: str, acc: str, element: str) -> None:
    op = INTEGER_KINDS[kind][0]
    text = _statistic_module(kind, op, _integer_acc(acc, element), element)
    changes = _rewritten_and_checked(text)
    assert (op, "now") in changes and ("vector.multi_reduction", "now") in changes
    assert (BID, "now") in changes and (STORE, "takes") in changes


FLOAT_CASES = [
    pytest.param(kind, acc, element, id=f"{kind}-{element}-acc{acc}")
    for kind, (_, identity) in FLOAT_KINDS.items()
    for element in ("f32", "bf16")
    for acc in (identity, "0.5", "-0.0", "nan")
    if element == "f32" or acc == identity
]


@pytest.mark.parametrize(("kind", "acc", "element"), FLOAT_CASES)
def test_float_statistics(kind: str, acc: str, element: str) -> None:
    op = FLOAT_KINDS[kind][0]
    spelled = _FLOAT_SPECIALS[element].get(acc, acc)
    changes = _rewritten_and_checked(_statistic_module(kind, op, spelled, element))
    assert (op, "now") in changes and ("vector.multi_reduction", "now") in changes


# ``lax.while_loop`` and ``lax.switch`` on statistics, as Pallas emits them: the trip
# count and the selector read from a ref, the selector clamped to the cases.
def _while_and_switch(e: str, identity: str, top: str, step: str, ops: tuple[str, ...]) -> str:
    """The row sum carried through a while loop that combines it with the row ``top``
    (``step``) each trip, then chosen by a switch: ``ops`` are add, sub, mul."""
    add, sub, mul = ops
    stat, row, tile = f"vector<8x1x{e}>", f"vector<8x{e}>", f"vector<8x16x{e}>"
    body = f"""
%x = "{LOAD}"(%x_ref) : (memref<8x16x{e}>) -> {tile}
%a = arith.constant {identity} : {e}
%acc = vector.broadcast %a : {e} to {row}
%m = vector.multi_reduction <{top}>, %x, %acc [1] : {tile} to {row}
%km = {BID}(%m : {row}) <broadcast_dimensions = [0]> -> {stat}
%s = vector.multi_reduction <add>, %x, %acc [1] : {tile} to {row}
%ks = {BID}(%s : {row}) <broadcast_dimensions = [0]> -> {stat}
%c0 = arith.constant 0 : index
%c0_i32 = arith.constant 0 : i32
%c1_i32 = arith.constant 1 : i32
%c2_i32 = arith.constant 2 : i32
%n = memref.load %n_ref[%c0] : memref<1xi32>
%w:2 = scf.while (%i = %c0_i32, %v = %ks) : (i32, {stat}) -> (i32, {stat}) {{
  %go = arith.cmpi slt, %i, %n : i32
  scf.condition(%go) %i, %v : i32, {stat}
}} do {{
^bb0(%j: i32, %u: {stat}):
  %k = arith.addi %j, %c1_i32 : i32
  %next = {step} %u, %km : {stat}
  scf.yield %k, %next : i32, {stat}
}}
%low = arith.maxsi %n, %c0_i32 : i32
%clamped = arith.minsi %low, %c2_i32 : i32
%which = arith.index_cast %clamped : i32 to index
%p = scf.index_switch %which -> {stat}
case 0 {{
  %b0 = {add} %w#1, %km : {stat}
  scf.yield %b0 : {stat}
}}
case 1 {{
  %b1 = {sub} %w#1, %km : {stat}
  scf.yield %b1 : {stat}
}}
default {{
  %b2 = {mul} %w#1, %km : {stat}
  scf.yield %b2 : {stat}
}}
%wide = {BID}(%p : {stat}) <broadcast_dimensions = [0, 1]> -> {tile}
%y = {sub} %x, %wide : {tile}
"{STORE}"(%y, %out) : ({tile}, memref<8x16x{e}>) -> ()
"""
    args = [
        ("x_ref", f"memref<8x16x{e}>"),
        ("n_ref", "memref<1xi32>"),
        ("out", f"memref<8x16x{e}>"),
    ]
    return func_module(body, args)


FLOAT_OPS = ("arith.addf", "arith.subf", "arith.mulf")
INTEGER_OPS = ("arith.addi", "arith.subi", "arith.muli")


@pytest.mark.parametrize(
    "text",
    [
        _while_and_switch("f32", "0.0", "maximumf", "arith.maximumf", FLOAT_OPS),
        _while_and_switch("i32", "0", "maxui", "arith.xori", INTEGER_OPS),
    ],
    ids=["f32", "u32"],
)
def test_while_and_switch_webs(text: str) -> None:
    """The statistic carried through a ``while_loop`` and chosen by a ``switch``
    (every case and both loop exits run over the trials)."""
    changes = _rewritten_and_checked(text)
    assert ("scf.while", "now") in changes and ("scf.index_switch", "now") in changes
    assert changes.count((BID, "removed:")) == 2


def test_an_if_on_a_loaded_flag_carries_the_statistic() -> None:
    """``lax.cond(flag_ref[0] > 0, ...)`` on a (8, 1) statistic."""
    body = f"""
%x = "{LOAD}"(%x_ref) : (memref<8x16xf32>) -> vector<8x16xf32>
%a = arith.constant 0xFF800000 : f32
%acc = vector.broadcast %a : f32 to vector<8xf32>
%m = vector.multi_reduction <maximumf>, %x, %acc [1] : vector<8x16xf32> to vector<8xf32>
%km = {BID}(%m : vector<8xf32>) <broadcast_dimensions = [0]> -> vector<8x1xf32>
%c0 = arith.constant 0 : index
%c0_i32 = arith.constant 0 : i32
%f = memref.load %flag_ref[%c0] : memref<1xi32>
%flag = arith.cmpi sgt, %f, %c0_i32 : i32
%p = scf.if %flag -> (vector<8x1xf32>) {{
  %n = arith.negf %km : vector<8x1xf32>
  scf.yield %n : vector<8x1xf32>
}} else {{
  %e = math.exp %km : vector<8x1xf32>
  scf.yield %e : vector<8x1xf32>
}}
%wide = {BID}(%p : vector<8x1xf32>) <broadcast_dimensions = [0, 1]> -> vector<8x16xf32>
%y = arith.addf %x, %wide : vector<8x16xf32>
"{STORE}"(%y, %out) : (vector<8x16xf32>, memref<8x16xf32>) -> ()
"""
    args = [
        ("x_ref", "memref<8x16xf32>"),
        ("flag_ref", "memref<1xi32>"),
        ("out", "memref<8x16xf32>"),
    ]
    changes = _rewritten_and_checked(func_module(body, args))
    assert ("scf.if", "now") in changes


def _integer_kernel(x: jax.Array, n: jax.Array) -> jax.Array:
    """Integer keepdims statistics through ``lax.while_loop`` and ``lax.switch``, as a
    Pallas user writes them (the trip count and the selector read from ``n``)."""

    def body(x_gmem, n_gmem, o_gmem):
        x = x_gmem[...]
        top = jnp.max(x, axis=-1, keepdims=True)
        total = jnp.sum(x, axis=-1, keepdims=True)
        trips = n_gmem[0]

        def step(carry):
            i, acc = carry
            return i + 1, acc ^ top

        _, acc = lax.while_loop(lambda c: c[0] < trips, step, (jnp.int32(0), total))
        picked = lax.switch(trips, [lambda: acc + top, lambda: acc - top, lambda: acc * 2])
        o_gmem[...] = x - picked

    out = jax.ShapeDtypeStruct(x.shape, x.dtype)
    return plgpu.kernel(body, out_type=out, compiler_params=WARPGROUP)(x, n)


@pytest.mark.parametrize("dtype", [jnp.uint32, jnp.int32], ids=["u32", "i32"])
def test_a_pallas_integer_kernel_with_while_and_switch(dtype) -> None:
    """Lowered by Pallas with smalto inferring: the module as written has no layouts,
    the rewritten one does and stores the same (maxui for uint32, maxsi for int32)."""
    args = (jax.ShapeDtypeStruct((128, 64), dtype), jax.ShapeDtypeStruct((1,), jnp.int32))
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        (kernel,) = smalto.jax.lower(_integer_kernel, *args, arch=(9, 0)).kernels
    assert any(isinstance(w.message, smalto.UnitDimRewriteWarning) for w in caught)
    written, rewritten = kernel.module(), kernel.module(inferred=True)
    kind = "maxui" if dtype == jnp.uint32 else "maxsi"
    assert f"<{kind}>" in str(written) and "vector<128x1xi32>" not in str(rewritten)
    assert_equivalent(written, rewritten, min_trials=3)
