"""Rules for `arith` and `math` (Hopper): pointwise ops and constants.

What the ops require: every vector operand and result of an elementwise op
has one layout (the lowering works register by register), whatever the
element types; a splat constant starts as a splat and is relaid out at each
use; a dense (non-splat) constant is data in registers, so never a splat.

Where JAX 0.12.0.1 has a rule for every op of the module, smalto's attributes
must be JAX's. JAX has none for some pointwise ops (``JAX_LACKS``); smalto
goes beyond it there, and the layouts must follow the same requirement: the
operands' layout.
"""

from __future__ import annotations

from dataclasses import dataclass

import pytest
from fuzz.property import try_jax_lowering
from jax.experimental.mosaic.gpu import layout_inference
from rule_kit import (
    HOPPER,
    WGMMA,
    gmem,
    in_layouts,
    infer_like_jax,
    is_tiled,
    kernel,
    layout_cast,
    op,
    ops,
    out_layouts,
    rejected_like_jax,
    run_jax,
    run_smalto,
    splat,
    vec,
    vector_load,
    vector_store,
)

from smalto.check import check

SHAPE = (64, 128)


@dataclass(frozen=True)
class Pointwise:
    """One op: its element types and how to write it.

    ``operands`` are the element types of the vector operands in the order the
    template names them (``a`` is loaded from memory, the rest are splat
    constants); ``template`` uses ``{r}``, ``{a}``, ``{b}``, ``{c}``, ``{T}``
    (the result type) and ``{Ta}``, ``{Tb}`` (operand types).
    """

    name: str
    operands: tuple[str, ...]
    result: str
    template: str


def _binary(name: str, dtype: str) -> Pointwise:
    return Pointwise(name, (dtype, dtype), dtype, f"{{r}} = {name} {{a}}, {{b}} : {{T}}")


def _unary(name: str, dtype: str) -> Pointwise:
    return Pointwise(name, (dtype,), dtype, f"{{r}} = {name} {{a}} : {{T}}")


def _cast(name: str, source: str, target: str) -> Pointwise:
    return Pointwise(name, (source,), target, f"{{r}} = {name} {{a}} : {{Ta}} to {{T}}")


POINTWISE = [
    *(
        _binary(n, "f32")
        for n in (
            "arith.addf",
            "arith.subf",
            "arith.mulf",
            "arith.divf",
            "arith.remf",
            "arith.maximumf",
            "arith.minimumf",
            "arith.maxnumf",
            "arith.minnumf",
            "math.copysign",
            "math.powf",
            "math.atan2",
        )
    ),
    *(
        _binary(n, "i32")
        for n in (
            "arith.addi",
            "arith.subi",
            "arith.muli",
            "arith.divsi",
            "arith.divui",
            "arith.remsi",
            "arith.remui",
            "arith.floordivsi",
            "arith.ceildivsi",
            "arith.ceildivui",
            "arith.andi",
            "arith.ori",
            "arith.xori",
            "arith.shli",
            "arith.shrui",
            "arith.shrsi",
            "arith.maxsi",
            "arith.maxui",
            "arith.minsi",
            "arith.minui",
        )
    ),
    *(
        _unary(n, "f32")
        for n in (
            "math.exp",
            "math.exp2",
            "math.log",
            "math.log2",
            "math.log1p",
            "math.sin",
            "math.cos",
            "math.tanh",
            "math.sqrt",
            "math.rsqrt",
            "math.absf",
            "math.round",
            "math.roundeven",
            "math.erf",
            "arith.negf",
        )
    ),
    _unary("math.absi", "i32"),
    _unary("math.ctlz", "i32"),
    Pointwise("arith.cmpi", ("i32", "i32"), "i1", "{r} = arith.cmpi slt, {a}, {b} : {Ta}"),
    Pointwise("arith.cmpf", ("f32", "f32"), "i1", "{r} = arith.cmpf olt, {a}, {b} : {Ta}"),
    # The condition is a (splat) constant: the loaded value is the true branch.
    Pointwise(
        "arith.select", ("f32", "i1", "f32"), "f32", "{r} = arith.select {b}, {a}, {c} : {Tb}, {T}"
    ),
    _cast("arith.bitcast", "f32", "i32"),
    _cast("arith.extf", "bf16", "f32"),
    _cast("arith.truncf", "f32", "bf16"),
    _cast("arith.extsi", "i8", "i32"),
    _cast("arith.extui", "i16", "i32"),
    _cast("arith.trunci", "i32", "i8"),
    _cast("arith.fptosi", "f32", "i32"),
    _cast("arith.fptoui", "f32", "i32"),
    _cast("arith.sitofp", "i32", "f32"),
    _cast("arith.uitofp", "i32", "f32"),
]

# Pointwise ops JAX 0.12.0.1's pass has no rule for (it raises NotImplementedError);
# 0.12 added arith.negf, math.log2 and math.sqrt, which 0.10.2 lacked too.
JAX_LACKS = frozenset(
    {
        "arith.maxnumf",
        "arith.minnumf",
        "arith.ceildivsi",
        "arith.ceildivui",
        "math.log1p",
        "math.erf",
        "math.powf",
        "math.atan2",
    }
)


def _splat_value(dtype: str) -> str:
    if dtype == "i1":
        return "true"
    return "1.0" if dtype.startswith(("f", "bf")) else "3"


def pointwise_kernel(p: Pointwise, cast: object | None) -> str:
    """``a`` loaded from GMEM (optionally cast to a layout), the other operands splat
    constants ``%c0``, ``%c1``, then the op, whose result is ``%r``."""
    a_type = vec(SHAPE, p.operands[0])
    body = [vector_load("x", "arg0", gmem(SHAPE, p.operands[0]), a_type)]
    names = ["%x"]
    if cast is not None:
        body.append(layout_cast("y", "x", a_type, cast))
        names = ["%y"]
    for i, dtype in enumerate(p.operands[1:]):
        body.append(f"%c{i} = arith.constant dense<{_splat_value(dtype)}> : {vec(SHAPE, dtype)}")
        names.append(f"%c{i}")
    names += [""] * (3 - len(names))
    types = [vec(SHAPE, t) for t in p.operands] + [""] * (3 - len(p.operands))
    body.append(
        p.template.format(
            r="%r",
            a=names[0],
            b=names[1],
            c=names[2],
            T=vec(SHAPE, p.result),
            Ta=types[0],
            Tb=types[1],
        )
    )
    return kernel(body, [gmem(SHAPE, p.operands[0])])


def _infer(p: Pointwise, text: str):
    return run_smalto(text) if p.name in JAX_LACKS else infer_like_jax(text)


def test_jax_lacks_exactly_the_listed_rules():
    """The split between differential and smalto-only checks is JAX's, not a guess."""
    jax_rules = set(layout_inference._constraint_system_derivation_rules)
    names = {p.name for p in POINTWISE}
    assert names - jax_rules == JAX_LACKS


@pytest.mark.parametrize("p", POINTWISE, ids=lambda p: p.name)
def test_operands_and_results_share_the_cast_layout(p: Pointwise):
    module = _infer(p, pointwise_kernel(p, WGMMA))
    target = op(module, p.name)
    assert in_layouts(target) == [WGMMA] * len(p.operands)
    assert out_layouts(target) == [WGMMA]
    # Each splat constant stays a splat; it is relaid out to WGMMA where it is used.
    constants = ops(module, "arith.constant")
    assert len(constants) == len(p.operands) - 1
    for constant in constants:
        assert out_layouts(constant) == [splat(*SHAPE)]


@pytest.mark.parametrize("p", POINTWISE, ids=lambda p: p.name)
def test_splat_operands_take_the_loaded_strided_layout(p: Pointwise):
    """Without a cast the loaded value is strided; the op's constant operands read it too."""
    module = _infer(p, pointwise_kernel(p, None))
    loaded = out_layouts(op(module, "mosaic_gpu.vector_load"))
    assert len(loaded) == 1 and not is_tiled(loaded[0]) and loaded[0] != splat(*SHAPE)
    target = op(module, p.name)
    layouts = in_layouts(target) + out_layouts(target)
    assert len(set(layouts)) == 1, layouts
    assert layouts[0] == loaded[0]


@pytest.mark.parametrize(
    "name", ["arith.addf", "arith.maximumf", "math.exp", "arith.negf", "math.sqrt"]
)
def test_pointwise_of_splats_stays_splat(name: str):
    unary = name.startswith("math.") or name == "arith.negf"
    v = vec(SHAPE, "f32")
    body = [f"%a = arith.constant dense<2.0> : {v}", f"%b = arith.constant dense<3.0> : {v}"]
    body.append(f"%r = {name} %a : {v}" if unary else f"%r = {name} %a, %b : {v}")
    text = kernel(body)
    module = run_smalto(text) if name in JAX_LACKS else infer_like_jax(text)
    target = op(module, name)
    assert set(in_layouts(target) + out_layouts(target)) == {splat(*SHAPE)}


def test_a_chain_of_ops_new_in_jax_0_12_follows_its_operand():
    """negf, sqrt and log2 (rules new in JAX 0.12) between a WGMMA value and a store keep
    WGMMA all the way, as in JAX's pass."""
    v = vec(SHAPE, "f32")
    text = kernel(
        [
            vector_load("x", "arg0", gmem(SHAPE, "f32"), v),
            layout_cast("y", "x", v, WGMMA),
            f"%n = arith.negf %y : {v}",
            f"%s = math.sqrt %n : {v}",
            f"%l = math.log2 %s : {v}",
            vector_store("l", v, "arg0", gmem(SHAPE, "f32")),
        ],
        [gmem(SHAPE, "f32")],
    )
    module = infer_like_jax(text)
    for name in ("arith.negf", "math.sqrt", "math.log2"):
        target = op(module, name)
        assert in_layouts(target) == [WGMMA] and out_layouts(target) == [WGMMA], name
    assert in_layouts(op(module, "mosaic_gpu.vector_store")) == [WGMMA]


def test_a_chain_of_ops_jax_lacks_follows_its_operand():
    """maxnumf, log1p, erf and atan2 (no JAX rule): smalto keeps the cast WGMMA layout."""
    v = vec(SHAPE, "f32")
    module = run_smalto(
        kernel(
            [
                vector_load("x", "arg0", gmem(SHAPE, "f32"), v),
                layout_cast("y", "x", v, WGMMA),
                f"%c = arith.constant dense<1.0> : {v}",
                f"%m = arith.maxnumf %y, %c : {v}",
                f"%p = math.log1p %m : {v}",
                f"%e = math.erf %p : {v}",
                f"%a = math.atan2 %e, %y : {v}",
                vector_store("a", v, "arg0", gmem(SHAPE, "f32")),
            ],
            [gmem(SHAPE, "f32")],
        )
    )
    for name in ("arith.maxnumf", "math.log1p", "math.erf", "math.atan2"):
        target = op(module, name)
        assert set(in_layouts(target) + out_layouts(target)) == {WGMMA}, name
    assert in_layouts(op(module, "mosaic_gpu.vector_store")) == [WGMMA]


def test_mixed_bitwidth_operands_keep_one_layout():
    """extf from bf16 then mulf with an f32 WGMMA value: the bf16 load becomes WGMMA too."""
    b, f = vec(SHAPE, "bf16"), vec(SHAPE, "f32")
    text = kernel(
        [
            vector_load("h", "arg0", gmem(SHAPE, "bf16"), b),
            vector_load("x", "arg1", gmem(SHAPE, "f32"), f),
            layout_cast("y", "x", f, WGMMA),
            f"%e = arith.extf %h : {b} to {f}",
            f"%m = arith.mulf %e, %y : {f}",
        ],
        [gmem(SHAPE, "bf16"), gmem(SHAPE, "f32")],
    )
    module = infer_like_jax(text)
    assert out_layouts(op(module, "mosaic_gpu.vector_load", 0)) == [WGMMA]
    assert in_layouts(op(module, "arith.extf")) == [WGMMA]
    assert in_layouts(op(module, "arith.mulf")) == [WGMMA, WGMMA]


def _transposed_operands(dtype: str, add: str) -> str:
    from rule_kit import WGMMA_TRANSPOSED

    v = vec(SHAPE, dtype)
    return kernel(
        [
            vector_load("x", "arg0", gmem(SHAPE, dtype), v),
            vector_load("z", "arg1", gmem(SHAPE, dtype), v),
            layout_cast("a", "x", v, WGMMA),
            layout_cast("b", "z", v, WGMMA_TRANSPOSED),
            f"%r = {add} %a, %b : {v}",
        ],
        [gmem(SHAPE, dtype), gmem(SHAPE, dtype)],
    )


def test_operands_in_transposed_layouts_meet_where_the_lowering_converts_one():
    """addf of a WGMMA value and a WGMMA_TRANSPOSED one: JAX's rules let no value
    change layout between ops, so no single layout exists for it; JAX's lowering
    converts each operand to the layout its consumer takes it in (a transpose,
    for 32-bit values), and smalto uses that."""
    from rule_kit import WGMMA_TRANSPOSED, lowers_beyond_jax

    module = lowers_beyond_jax(_transposed_operands("f32", "arith.addf"))
    (layout,) = out_layouts(op(module, "arith.addf"))
    assert in_layouts(op(module, "arith.addf")) == [layout, layout]
    assert layout in (WGMMA, WGMMA_TRANSPOSED)


def test_two_incompatible_operands_are_rejected():
    """The same with 8-bit values, which the lowering does not transpose."""
    rejected_like_jax(_transposed_operands("i8", "arith.addi"))


# --- arith.constant ----------------------------------------------------------------------


def _dense_values(count: int, float_: bool = False) -> str:
    suffix = ".0" if float_ else ""
    return ", ".join(f"{i % 7}{suffix}" for i in range(count))


def test_splat_constant_is_a_splat():
    v = vec(SHAPE, "f32")
    module = infer_like_jax(
        kernel(
            [
                f"%c = arith.constant dense<1.5> : {v}",
                vector_store("c", v, "arg0", gmem(SHAPE, "f32")),
            ],
            [gmem(SHAPE, "f32")],
        )
    )
    assert out_layouts(op(module, "arith.constant")) == [splat(*SHAPE)]
    assert in_layouts(op(module, "mosaic_gpu.vector_store")) == [splat(*SHAPE)]


def test_dense_constant_is_never_a_splat():
    v = vec((128,), "i32")
    module = infer_like_jax(
        kernel(
            [
                f"%c = arith.constant dense<[{_dense_values(128)}]> : {v}",
                vector_store("c", v, "arg0", gmem((128,), "i32")),
            ],
            [gmem((128,), "i32")],
        )
    )
    (layout,) = out_layouts(op(module, "arith.constant"))
    assert layout != splat(128)
    assert in_layouts(op(module, "mosaic_gpu.vector_store")) == [layout]


def test_dense_constant_takes_the_layout_of_its_user():
    """A dense constant cannot be relaid out from a splat: it must be WGMMA itself."""
    shape = (64, 8)
    v = vec(shape, "f32")
    rows = ", ".join(f"[{_dense_values(8, float_=True)}]" for _ in range(64))
    module = infer_like_jax(
        kernel(
            [
                vector_load("x", "arg0", gmem(shape, "f32"), v),
                layout_cast("y", "x", v, WGMMA),
                f"%c = arith.constant dense<[{rows}]> : {v}",
                f"%r = arith.addf %y, %c : {v}",
            ],
            [gmem(shape, "f32")],
        )
    )
    assert out_layouts(op(module, "arith.constant")) == [WGMMA]
    assert in_layouts(op(module, "arith.addf")) == [WGMMA, WGMMA]


def test_splat_constant_used_by_a_wgmma_value_stays_splat():
    """The splat constant's own layout stays a splat; its use is WGMMA."""
    v = vec(SHAPE, "f32")
    module = infer_like_jax(
        kernel(
            [
                vector_load("x", "arg0", gmem(SHAPE, "f32"), v),
                layout_cast("y", "x", v, WGMMA),
                f"%c = arith.constant dense<0.0> : {v}",
                f"%r = arith.addf %c, %y : {v}",
            ],
            [gmem(SHAPE, "f32")],
        )
    )
    assert out_layouts(op(module, "arith.constant")) == [splat(*SHAPE)]
    assert in_layouts(op(module, "arith.addf")) == [WGMMA, WGMMA]


def test_scalar_constants_get_no_layout():
    module = infer_like_jax(
        kernel(["%c = arith.constant 1.0 : f32", "%i = arith.constant 3 : i32"])
    )
    for constant in (op(module, "arith.constant", 0), op(module, "arith.constant", 1)):
        assert "out_layouts" not in constant.attributes


# --- conversions into sub-byte types ----------------------------------------------------


def _convert_splat(op_name: str, source: str, target: str) -> str:
    v, w = vec(SHAPE, source), vec(SHAPE, target)
    value = "2.0" if source.startswith(("f", "bf")) else "2"
    return kernel([f"%a = arith.constant dense<{value}> : {v}", f"%r = {op_name} %a : {v} to {w}"])


@pytest.mark.parametrize(
    "op_name, source, target",
    [("arith.trunci", "i32", "i4"), ("arith.trunci", "i8", "i4"), ("arith.fptosi", "f32", "i4")],
)
def test_a_conversion_into_a_sub_byte_type_needs_whole_bytes_per_register(
    op_name: str, source: str, target: str
):
    """JAX's pass keeps the splat, whose single scalar register its lowering cannot convert
    into 4 bits; smalto picks a layout with vector registers of whole bytes, which lowers."""
    text = _convert_splat(op_name, source, target)
    jax_answer = run_jax(text)
    assert out_layouts(op(jax_answer, op_name)) == [splat(*SHAPE)]
    assert any("whole bytes" in v.message for v in check(jax_answer))
    assert "must be divisible by 8" in (try_jax_lowering(jax_answer, HOPPER) or "")
    module = run_smalto(text)
    assert out_layouts(op(module, op_name)) != [splat(*SHAPE)]
    assert check(module) == []
    assert try_jax_lowering(module, HOPPER) is None


@pytest.mark.parametrize("op_name, source, target", [("arith.trunci", "i32", "i8")])
def test_a_conversion_into_bytes_keeps_the_splat(op_name: str, source: str, target: str):
    module = infer_like_jax(_convert_splat(op_name, source, target))
    assert out_layouts(op(module, op_name)) == [splat(*SHAPE)]
    assert try_jax_lowering(module, HOPPER) is None


@pytest.mark.parametrize(
    ("op_name", "result"), [("arith.extsi", "i8"), ("arith.sitofp", "f8E4M3FN")]
)
def test_a_splat_of_4_bit_integers_converts_in_vector_registers(op_name: str, result: str):
    """``FragmentedArray.astype`` packs i4 registers into words to convert them to
    i8 or f8E4M3FN, which a splat (scalar registers) does not have: JAX's answer
    converts the splat and its lowering raises ("Cannot concatenate non-vector
    values"); smalto converts the splat to a layout of vectors at the use.
    (Found by the fuzzer.)"""
    from rule_kit import lower_in_launch

    shape = (128, 256)
    v4, out = vec(shape, "i4"), vec(shape, result)
    text = kernel(
        [
            "%s = arith.constant 2 : i4",
            f"%x = vector.broadcast %s : i4 to {v4}",
            f"%y = {op_name} %x : {v4} to {out}",
            vector_store("y", out, "arg0", gmem(shape, result)),
        ],
        [gmem(shape, result)],
    )
    theirs = run_jax(text)
    assert any("packs vector registers" in v.message for v in check(theirs, HOPPER))
    with pytest.raises(ValueError, match="Cannot concatenate non-vector values"):
        lower_in_launch(theirs)
    ours = run_smalto(text)
    assert not out_layouts(op(ours, op_name))[0] == splat(*shape)
    assert check(ours, HOPPER) == []
    lower_in_launch(ours)
