# ruff: noqa: E501  (MLIR op lines read best whole)
"""Minimal kernels per op with a rule, each pinning the op to one layout (``rule_agreement``).

``GENERATORS`` maps every op name smalto has a rule for to a function that
derives, for that op, kernels in each layout its rule may take (and a few it
may not), at a size where the layouts fit. The op under test is at
``loc("op")``; pinned values are made by ops at ``loc("p0")``, ``loc("p1")``...
Register values start as splat constants, cast (not strictly) to the pinned
layout, which every tiled layout that tiles the shape and every strided one
can take; a pin on a result is a ``strict`` cast after it. SMEM refs come from
``slice_smem`` with the pinned transforms (``with_transforms``); TMEM refs from
``tmem_alloc`` with a ``tmem_layout_cast``.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

from jax.experimental.mosaic.gpu import fragmented_array as fa
from rule_agreement import Candidate, Cases, Pin, tag
from rule_kit import HOPPER, kernel, layout_attr_text

from smalto.elementwise import ELEMENTWISE
from smalto.hw import layouts as hl

BLACKWELL = (10, 0)
Generator = Callable[[str], Cases]
GENERATORS: dict[str, Generator] = {}


def generator(*names: str) -> Callable[[Generator], Generator]:
    def register(fn: Generator) -> Generator:
        for name in names:
            GENERATORS[name] = fn
        return fn

    return register


# --- building blocks ---------------------------------------------------------------------


def vec(shape: Sequence[int], dtype: str) -> str:
    return f"vector<{'x'.join(map(str, shape))}x{dtype}>"


def splat_constant(name: str, ty: str) -> str:
    element = ty.rsplit("x", 1)[1].rstrip(">")
    value = "true" if element == "i1" else ("1" if element.startswith("i") else "1.000000e+00")
    return f'%{name} = "arith.constant"() <{{value = dense<{value}> : {ty}}}> : () -> {ty}'


def cast(name: str, value: str, ty: str, layout: str, at: str, strict: bool = False) -> str:
    extra = ", strict = true" if strict else ""
    return tag(
        f'%{name} = "mosaic_gpu.layout_cast"(%{value}) <{{new_layout = {layout}{extra}}}> '
        f": ({ty}) -> {ty}",
        at,
    )


def is_splat(layout: str) -> bool:
    return layout.startswith("#mosaic_gpu.WGSplatFragLayout")


def carrier(ty: str, layout: str) -> str:
    """What a cast pinning ``layout`` casts to: the layout, or for a splat (no cast
    takes one) a strided layout, into which a splat converts even strictly."""
    if not is_splat(layout):
        return layout
    shape = tuple(int(d) for d in ty.removeprefix("vector<").split("x")[:-1])
    return text_of(fa.WGStridedFragLayout(shape, 1))


def pinned_operand(name: str, ty: str, layout: str, at: str) -> list[str]:
    """``%name`` of type ``ty`` in ``layout``, made at ``loc(at)``: a splat constant
    cast to it; or for a splat, the constant itself, still cast (unused) so that every
    candidate has the same ops."""
    if is_splat(layout):
        return [
            tag(splat_constant(name, ty), at),
            cast(f"{name}_unused", name, ty, carrier(ty, layout), f"{at}_unused"),
        ]
    return [splat_constant(f"{name}_c", ty), cast(name, f"{name}_c", ty, layout, at)]


def pinned_result(name: str, value: str, ty: str, layout: str) -> str:
    """A strict cast of ``%value`` that keeps it in ``layout`` (a splat: converted after)."""
    return cast(name, value, ty, carrier(ty, layout), f"{name}_pin", strict=True)


def text_of(layout: fa.FragmentedLayout) -> str:
    return layout_attr_text(layout)


def register_layouts(shape: tuple[int, ...], bitwidth: int) -> dict[str, str]:
    """The register layouts a value of ``shape`` may be in: splat, strided and the tiled
    layouts whose tile fits, by name."""
    found = {"splat": text_of(fa.WGSplatFragLayout(shape))}
    strided = hl.default_strided(shape, bitwidth)
    if strided is not None:
        found["strided"] = text_of(strided.layout)
    tiled = {
        "WGMMA": hl.WGMMA,
        "WGMMA_8BIT": hl.WGMMA_8BIT,
        "WGMMA_TRANSPOSED": hl.WGMMA_TRANSPOSED,
        "TCGEN05": hl.TCGEN05,
        "WGMMA_ROW": hl.WGMMA_ROW,
        "WGMMA_COL": hl.WGMMA_COL,
        "TCGEN05_ROW": hl.TCGEN05_ROW,
    }
    from smalto.hw.values import Reg

    for name, layout in tiled.items():
        if hl.fits(Reg(layout), shape):
            found[name] = text_of(layout)
    return found


# --- elementwise ops ---------------------------------------------------------------------------

_F, _I = "f32", "i32"
_FLOAT_BINARY = (
    "arith.addf arith.subf arith.mulf arith.divf arith.remf arith.maximumf arith.maxnumf "
    "arith.minimumf arith.minnumf math.atan2 math.copysign math.powf"
).split()
_FLOAT_UNARY = (
    "arith.negf math.absf math.cos math.erf math.exp math.exp2 math.log math.log1p "
    "math.log2 math.round math.roundeven math.rsqrt math.sin math.sqrt math.tanh"
).split()
_INT_BINARY = (
    "arith.addi arith.subi arith.muli arith.andi arith.ori arith.xori arith.divsi arith.divui "
    "arith.ceildivsi arith.ceildivui arith.floordivsi arith.maxsi arith.maxui arith.minsi "
    "arith.minui arith.remsi arith.remui arith.shli arith.shrsi arith.shrui"
).split()
_INT_UNARY = ("math.absi", "math.ctlz")
# (operand element types, result element type, properties) of the other elementwise ops.
_SIGNATURES: dict[str, tuple[tuple[str, ...], str, str]] = {
    "arith.cmpf": ((_F, _F), "i1", "predicate = 1 : i64"),
    "arith.cmpi": ((_I, _I), "i1", "predicate = 0 : i64"),
    "arith.select": (("i1", _F, _F), _F, ""),
    "arith.extf": (("f16",), _F, ""),
    "arith.truncf": ((_F,), "f16", ""),
    "arith.extsi": (("i16",), _I, ""),
    "arith.extui": (("i16",), _I, ""),
    "arith.trunci": ((_I,), "i16", ""),
    "arith.sitofp": ((_I,), _F, ""),
    "arith.uitofp": ((_I,), _F, ""),
    "arith.fptosi": ((_F,), _I, ""),
    "arith.fptoui": ((_F,), _I, ""),
    "arith.bitcast": ((_F,), _I, ""),
}
for _name in _FLOAT_BINARY:
    _SIGNATURES[_name] = ((_F, _F), _F, "")
for _name in _FLOAT_UNARY:
    _SIGNATURES[_name] = ((_F,), _F, "")
for _name in _INT_BINARY:
    _SIGNATURES[_name] = ((_I, _I), _I, "")
for _name in _INT_UNARY:
    _SIGNATURES[_name] = ((_I,), _I, "")

ELEMENTWISE_SHAPE = (128, 64)


@generator(*ELEMENTWISE)
def elementwise(name: str) -> Cases:
    """Operands pinned to one layout, the result pinned (strictly) to it or to another.

    Every layout that fits is taken; operands and result in two tiled layouts are not.
    """
    operand_types, result_type, properties = _SIGNATURES[name]
    shape = ELEMENTWISE_SHAPE
    result_ty = vec(shape, result_type)
    layouts = register_layouts(shape, 32)
    del layouts["WGMMA_8BIT"]  # 32-bit values: WGMMA is their tiling

    def candidate(label: str, operands: str, result: str) -> Candidate:
        lines: list[str] = []
        names = []
        for i, element in enumerate(operand_types):
            ty = vec(shape, element)
            lines += pinned_operand(f"x{i}", ty, operands, f"p{i}")
            names.append(f"%x{i}")
        types = ", ".join(vec(shape, e) for e in operand_types)
        props = f" <{{{properties}}}>" if properties else ""
        lines.append(tag(f'%r = "{name}"({", ".join(names)}){props} : ({types}) -> {result_ty}'))
        lines.append(pinned_result("q", "r", result_ty, result))
        pins = tuple(Pin(f"p{i}", 0, operands) for i in range(len(operand_types)))
        return Candidate(label, kernel(lines), (*pins, Pin(OP, 0, result)))

    candidates = [candidate(label, layout, layout) for label, layout in layouts.items()]
    candidates.append(candidate("WGMMA->strided", layouts["WGMMA"], layouts["strided"]))
    candidates.append(candidate("TCGEN05->WGMMA", layouts["TCGEN05"], layouts["WGMMA"]))
    return Cases(name, tuple(candidates))


OP = "op"


# --- one register operand, pinned; the op under test's line given ---------------------------


def _register_cases(
    name: str,
    operand_ty: str,
    layouts: dict[str, str],
    op_line: Callable[[str], str],
    result_ty: str | None = None,
    result_layouts: dict[str, str] | None = None,
    restricted: bool = True,
    arch: tuple[int, int] = HOPPER,
    stricter: dict[str, str] | None = None,
) -> Cases:
    """Per entry of ``layouts``: the operand ``%x`` pinned to it, the op written by
    ``op_line("x")``; with ``result_ty``, its result ``%r`` pinned (strictly) to the
    entry of ``result_layouts`` of the same name (default: the operand's)."""
    candidates = []
    for label, layout in layouts.items():
        lines = [*pinned_operand("x", operand_ty, layout, "p0"), tag(op_line("x"))]
        pins = [Pin("p0", 0, layout)]
        if result_ty is not None:
            result = (result_layouts or layouts)[label]
            lines.append(pinned_result("q", "r", result_ty, result))
            pins.append(Pin(OP, 0, result))
        reason = (stricter or {}).get(label, "")
        candidates.append(Candidate(label, kernel(lines), tuple(pins), arch, reason))
    return Cases(name, tuple(candidates), restricted)


F32_2D = vec(ELEMENTWISE_SHAPE, "f32")


@generator("arith.constant")
def constant(name: str) -> Cases:
    """A splat constant is a splat; a dense one is laid out in registers (not a splat)."""
    ty = F32_2D
    dense = (
        "dense<["
        + ", ".join("[" + ", ".join(str(float(i + j)) for j in range(64)) + "]" for i in range(128))
        + "]>"
    )
    layouts = register_layouts(ELEMENTWISE_SHAPE, 32)
    candidates = []
    for kind, value in (("splat constant", "dense<1.000000e+00>"), ("dense constant", dense)):
        for label in ("splat", "strided", "WGMMA"):
            lines = [
                tag(f'%r = "arith.constant"() <{{value = {value} : {ty}}}> : () -> {ty}'),
                pinned_result("q", "r", ty, layouts[label]),
            ]
            candidates.append(
                Candidate(f"{kind} {label}", kernel(lines), (Pin(OP, 0, layouts[label]),))
            )
    return Cases(name, tuple(candidates))


@generator("vector.broadcast")
def broadcast(name: str) -> Cases:
    """A scalar broadcast is a splat, and nothing else."""
    ty = F32_2D
    layouts = register_layouts(ELEMENTWISE_SHAPE, 32)
    candidates = []
    for label in ("splat", "strided", "WGMMA"):
        lines = [
            '%s = "arith.constant"() <{value = 1.000000e+00 : f32}> : () -> f32',
            tag(f'%r = "vector.broadcast"(%s) : (f32) -> {ty}'),
            pinned_result("q", "r", ty, layouts[label]),
        ]
        candidates.append(Candidate(label, kernel(lines), (Pin(OP, 0, layouts[label]),)))
    return Cases(name, tuple(candidates))


def _some(layouts: dict[str, str], *names: str) -> dict[str, str]:
    return {n: layouts[n] for n in names if n in layouts}


@generator("vector.reduction")
def reduction(name: str) -> Cases:
    """A full reduction takes any layout."""
    layouts = register_layouts((128,), 32)
    rows = vec((128,), "f32")
    return _register_cases(
        name,
        rows,
        layouts,
        lambda x: f'%r = "vector.reduction"(%{x}) <{{kind = #vector.kind<add>}}> : ({rows}) -> f32',
        restricted=False,
    )


@generator("vector.multi_reduction")
def multi_reduction(name: str) -> Cases:
    """A reduction over the columns takes a tiled source, not a splat or strided one."""
    layouts = _some(
        register_layouts(ELEMENTWISE_SHAPE, 32),
        "splat",
        "strided",
        "WGMMA",
        "WGMMA_TRANSPOSED",
        "TCGEN05",
    )
    rows = vec((128,), "f32")

    def line(x: str) -> str:
        return (
            f'%r = "vector.multi_reduction"(%{x}, %acc) <{{kind = #vector.kind<add>, '
            f"reduction_dims = array<i64: 1>}}> : ({F32_2D}, {rows}) -> {rows}"
        )

    cases = _register_cases(name, F32_2D, layouts, lambda x: line(x))
    # The accumulator: a splat constant before the op.
    acc = splat_constant("acc", rows)
    return Cases(
        name,
        tuple(
            Candidate(
                c.label,
                c.text.replace(
                    "  func.func @kernel() {\n", f"  func.func @kernel() {{\n    {acc}\n", 1
                ),
                c.pins,
                c.arch,
                c.stricter,
            )
            for c in cases.candidates
        ),
    )


@generator("vector.shape_cast")
def shape_cast(name: str) -> Cases:
    """A reshape keeps the layout where no element moves."""
    layouts = _some(register_layouts(ELEMENTWISE_SHAPE, 32), "splat", "strided", "WGMMA", "TCGEN05")
    out = vec((2, 64, 64), "f32")
    return _register_cases(
        name,
        F32_2D,
        layouts,
        lambda x: f'%r = "vector.shape_cast"(%{x}) : ({F32_2D}) -> {out}',
    )


@generator("vector.extract_strided_slice")
def extract_strided_slice(name: str) -> Cases:
    """A slice of a tiled value at tile boundaries keeps its layout."""
    layouts = _some(register_layouts(ELEMENTWISE_SHAPE, 32), "splat", "strided", "WGMMA", "TCGEN05")
    out = vec((64, 64), "f32")
    return _register_cases(
        name,
        F32_2D,
        layouts,
        lambda x: (
            f'%r = "vector.extract_strided_slice"(%{x}) <{{offsets = [64, 0], sizes = [64, 64], '
            f"strides = [1, 1]}}> : ({F32_2D}) -> {out}"
        ),
    )


@generator("vector.extract")
def extract(name: str) -> Cases:
    """A scalar comes out of a splat only."""
    layouts = _some(register_layouts(ELEMENTWISE_SHAPE, 32), "splat", "strided", "WGMMA")
    return _register_cases(
        name,
        F32_2D,
        layouts,
        lambda x: (
            f'%r = "vector.extract"(%{x}) <{{static_position = array<i64: 0, 0>}}> '
            f": ({F32_2D}) -> f32"
        ),
    )


@generator("vector.insert_strided_slice")
def insert_strided_slice(name: str) -> Cases:
    """A slice inserted at tile boundaries: slice, destination and result share a tiled layout."""
    small = vec((64, 64), "f32")
    layouts = _some(register_layouts((64, 64), 32), "strided", "WGMMA", "TCGEN05")
    big_layouts = register_layouts(ELEMENTWISE_SHAPE, 32)
    candidates = []
    for label in ("splat", "strided", "WGMMA", "TCGEN05"):
        small_layout = layouts.get(label, text_of(fa.WGSplatFragLayout((64, 64))))
        big = big_layouts[label]
        lines = [
            *pinned_operand("s", small, small_layout, "p0"),
            *pinned_operand("d", F32_2D, big, "p1"),
            tag(
                f'%r = "vector.insert_strided_slice"(%s, %d) <{{offsets = [64, 0], '
                f"strides = [1, 1]}}> : ({small}, {F32_2D}) -> {F32_2D}"
            ),
        ]
        if label == "TCGEN05":
            small_layout = layouts["TCGEN05"] if "TCGEN05" in layouts else small_layout
        candidates.append(
            Candidate(label, kernel(lines), (Pin("p0", 0, small_layout), Pin("p1", 0, big)))
        )
    return Cases(name, tuple(candidates))


# --- mosaic_gpu: MMAs ------------------------------------------------------------------------


def _wgmma_candidates(
    a_element: str, acc_element: str, b_lines: list[str], b_ty: str
) -> list[Candidate]:
    acc_ty, a_ty = vec((64, 128), acc_element), vec((64, 64), a_element)
    acc_layouts = register_layouts((64, 128), 32)
    a_layouts = register_layouts((64, 64), 16)
    pairs = [
        ("WGMMA", "WGMMA"),
        ("WGMMA", "WGMMA_8BIT"),
        ("WGMMA", "WGMMA_TRANSPOSED"),
        ("WGMMA", "strided"),
        ("WGMMA", "splat"),
        ("strided", "WGMMA"),
        ("WGMMA_TRANSPOSED", "WGMMA"),
        ("splat", "WGMMA"),
    ]
    candidates = []
    for acc_label, a_label in pairs:
        acc, a = acc_layouts[acc_label], a_layouts[a_label]
        lines = [
            *pinned_operand("acc", acc_ty, acc, "p0"),
            *pinned_operand("a", a_ty, a, "p1"),
            *b_lines,
            tag(f'%r = "mosaic_gpu.wgmma"(%acc, %a, %b) : ({acc_ty}, {a_ty}, {b_ty}) -> {acc_ty}'),
        ]
        candidates.append(
            Candidate(
                f"{a_element} acc {acc_label}, A {a_label}",
                kernel(lines),
                (Pin("p0", 0, acc), Pin("p1", 0, a)),
            )
        )
    return candidates


@generator("mosaic_gpu.wgmma")
def wgmma(name: str) -> Cases:
    """The accumulator in WGMMA; A in registers in WGMMA, or WGMMA_8BIT for 8-bit A."""
    b16 = "memref<64x128xbf16, #gpu.address_space<workgroup>>"
    b8 = "memref<128x64xi8, #gpu.address_space<workgroup>>"
    b8_t = "memref<64x128xi8, strided<[1, 64]>, #gpu.address_space<workgroup>>"
    bf16 = _wgmma_candidates(
        "bf16",
        "f32",
        [f'%b = "mosaic_gpu.slice_smem"() <{{offset = 65536 : i32}}> : () -> {b16}'],
        b16,
    )
    i8 = _wgmma_candidates(
        "i8",
        "i32",
        [
            f'%b0 = "mosaic_gpu.slice_smem"() <{{offset = 65536 : i32}}> : () -> {b8}',
            f"%b = memref.transpose %b0 (i, j) -> (j, i) : {b8} to {b8_t}",
        ],
        b8_t,
    )
    return Cases(name, (*bf16, *i8))


@generator("mosaic_gpu.mma")
def mma(name: str) -> Cases:
    """A warp-level MMA: A and B in the MMA layouts of the element type, nothing else."""
    from jax._src.lib.mlir import ir
    from jax.experimental.mosaic.gpu.mma import MMALayouts
    from rule_kit import shared_context

    with shared_context():
        layouts = MMALayouts.for_shape(ir.BF16Type.get(), 64, 64)
    acc_ty, a_ty, b_ty = vec((64, 64), "f32"), vec((64, 32), "bf16"), vec((32, 64), "bf16")
    acc, b = text_of(layouts.acc), text_of(layouts.rhs)
    options = {
        "A in the MMA layout": text_of(layouts.lhs),
        "A in WGMMA": text_of(hl.WGMMA),
        "A strided": text_of(fa.WGStridedFragLayout((64, 32), 4)),
    }
    candidates = []
    for label, a in options.items():
        lines = [
            *pinned_operand("acc", acc_ty, acc, "p0"),
            *pinned_operand("a", a_ty, a, "p1"),
            *pinned_operand("b", b_ty, b, "p2"),
            tag(f'%r = "mosaic_gpu.mma"(%acc, %a, %b) : ({acc_ty}, {a_ty}, {b_ty}) -> {acc_ty}'),
        ]
        pins = (Pin("p0", 0, acc), Pin("p1", 0, a), Pin("p2", 0, b))
        candidates.append(Candidate(label, kernel(lines), pins))
    return Cases(name, tuple(candidates))


# --- mosaic_gpu: register ops ------------------------------------------------------------------


@generator("mosaic_gpu.layout_cast")
def layout_cast(name: str) -> Cases:
    """A cast converts where the lowering relayouts (a strict one: only from a splat)."""
    ty = F32_2D
    layouts = register_layouts(ELEMENTWISE_SHAPE, 32)
    pairs = [
        ("splat", "WGMMA", False),
        ("WGMMA", "WGMMA_TRANSPOSED", False),
        ("WGMMA", "WGMMA", True),
        ("WGMMA", "strided", False),
        ("strided", "WGMMA", False),
        ("WGMMA", "WGMMA_TRANSPOSED", True),
        ("TCGEN05", "WGMMA", False),
    ]
    candidates = []
    for source, target, strict in pairs:
        lines = [
            *pinned_operand("x", ty, layouts[source], "p0"),
            cast("r", "x", ty, layouts[target], OP, strict=strict),
        ]
        label = f"{source}->{target}{' strict' if strict else ''}"
        pins = (Pin("p0", 0, layouts[source]), Pin(OP, 0, layouts[target]))
        candidates.append(Candidate(label, kernel(lines), pins))
    return Cases(name, tuple(candidates))


@generator("mosaic_gpu.optimization_barrier")
def optimization_barrier(name: str) -> Cases:
    """Any layout passes, in registers of whole 32-bit words."""
    ty = vec(ELEMENTWISE_SHAPE, "f16")
    layouts = _some(register_layouts(ELEMENTWISE_SHAPE, 16), "splat", "strided", "WGMMA", "TCGEN05")
    layouts["strided x1"] = text_of(fa.WGStridedFragLayout(ELEMENTWISE_SHAPE, 1))
    return _register_cases(
        name,
        ty,
        layouts,
        lambda x: f'%r = "mosaic_gpu.optimization_barrier"(%{x}) : ({ty}) -> {ty}',
        result_ty=ty,
    )


@generator("mosaic_gpu.debug_print")
def debug_print(name: str) -> Cases:
    """Printing takes any layout."""
    layouts = _some(register_layouts(ELEMENTWISE_SHAPE, 32), "splat", "strided", "WGMMA", "TCGEN05")
    return _register_cases(
        name,
        F32_2D,
        layouts,
        lambda x: f'"mosaic_gpu.debug_print"(%{x}) <{{format = "v: "}}> : ({F32_2D}) -> ()',
        restricted=False,
    )


@generator("mosaic_gpu.print_layout")
def print_layout(name: str) -> Cases:
    """Printing a layout takes any."""
    layouts = _some(register_layouts(ELEMENTWISE_SHAPE, 32), "splat", "strided", "WGMMA", "TCGEN05")
    return _register_cases(
        name,
        F32_2D,
        layouts,
        lambda x: f'"mosaic_gpu.print_layout"(%{x}) <{{format = "{{}}"}}> : ({F32_2D}) -> ()',
        restricted=False,
    )


def _result_cases(
    name: str, op_line: str, ty: str, labels: Sequence[str], shape, bitwidth
) -> Cases:
    layouts = register_layouts(shape, bitwidth)
    candidates = []
    for label in labels:
        lines = [tag(op_line), pinned_result("q", "r", ty, layouts[label])]
        candidates.append(Candidate(label, kernel(lines), (Pin(OP, 0, layouts[label]),)))
    return Cases(name, tuple(candidates))


@generator("mosaic_gpu.broadcasted_iota")
def broadcasted_iota(name: str) -> Cases:
    """An iota differs per element: any layout but a splat."""
    ty = vec(ELEMENTWISE_SHAPE, "i32")
    line = f'%r = "mosaic_gpu.broadcasted_iota"() <{{dimension = 0 : i32}}> : () -> {ty}'
    return _result_cases(name, line, ty, ("splat", "strided", "WGMMA"), ELEMENTWISE_SHAPE, 32)


@generator("mosaic_gpu.multimem_load_reduce")
def multimem_load_reduce(name: str) -> Cases:
    """A multimem load differs per element: not a splat."""
    shape = (1, 1, 2048)
    ref = "memref<1x1x2048xbf16, strided<[16777216, 4096, 1]>>"
    ty = vec(shape, "bf16")
    line = (
        f'%r = "mosaic_gpu.multimem_load_reduce"(%arg0) <{{reduction_type = 0 : i32}}> '
        f": ({ref}) -> {ty}"
    )
    layouts = register_layouts(shape, 16)
    candidates = []
    for label in ("splat", "strided"):
        lines = [tag(line), pinned_result("q", "r", ty, layouts[label])]
        text = kernel(lines, [ref])
        candidates.append(Candidate(label, text, (Pin(OP, 0, layouts[label]),)))
    return Cases(name, tuple(candidates))


@generator("mosaic_gpu.broadcast_in_dim")
def broadcast_in_dim(name: str) -> Cases:
    """The source is the result reduced over the broadcast dims (WGMMA from WGMMA_ROW)."""
    rows, ty = vec((128,), "f32"), F32_2D
    row_layouts = register_layouts((128,), 32)
    layouts = register_layouts(ELEMENTWISE_SHAPE, 32)
    pairs = [
        ("WGMMA_ROW", "WGMMA"),
        ("TCGEN05_ROW", "TCGEN05"),
        ("WGMMA_COL", "WGMMA"),
        ("WGMMA_ROW", "TCGEN05"),
        ("strided", "WGMMA"),
        ("splat", "splat"),
    ]
    candidates = []
    for source, result in pairs:
        lines = [
            *pinned_operand("x", rows, row_layouts[source], "p0"),
            tag(
                f'%r = "mosaic_gpu.broadcast_in_dim"(%x) <{{broadcast_dimensions = array<i64: 0>}}> '
                f": ({rows}) -> {ty}"
            ),
            pinned_result("q", "r", ty, layouts[result]),
        ]
        pins = (Pin("p0", 0, row_layouts[source]), Pin(OP, 0, layouts[result]))
        candidates.append(Candidate(f"{source}->{result}", kernel(lines), pins))
    return Cases(name, tuple(candidates))


@generator("mosaic_gpu.vector_concat")
def vector_concat(name: str) -> Cases:
    """Operands and result share one tiled layout."""
    part, ty = vec((64, 64), "f32"), F32_2D
    parts = register_layouts((64, 64), 32)
    whole = register_layouts(ELEMENTWISE_SHAPE, 32)
    stricter = (
        "JAX's inference concatenates tiled values only; its lowering also joins strided "
        "values along dim 0"
    )
    candidates = []
    for label in ("WGMMA", "strided", "splat"):
        lines = [
            *pinned_operand("a", part, parts[label], "p0"),
            *pinned_operand("b", part, parts[label], "p1"),
            tag(
                f'%r = "mosaic_gpu.vector_concat"(%a, %b) <{{dimension = 0 : i32}}> '
                f": ({part}, {part}) -> {ty}"
            ),
            pinned_result("q", "r", ty, whole[label]),
        ]
        pins = (Pin("p0", 0, parts[label]), Pin("p1", 0, parts[label]), Pin(OP, 0, whole[label]))
        reason = stricter if label == "strided" else ""
        candidates.append(Candidate(label, kernel(lines), pins, HOPPER, reason))
    return Cases(name, tuple(candidates))


@generator("llvm.mlir.undef", "ub.poison")
def undefined(name: str) -> Cases:
    """An undefined vector takes any layout."""
    ty = vec((4096,), "f32")
    line = f'%r = "{name}"() : () -> {ty}'
    # (Not a splat: a free value pinned only by a cast after it need not be one.)
    labels = ("strided", "WGMMA_ROW")
    return Cases(name, _result_cases(name, line, ty, labels, (4096,), 32).candidates, False)


# --- scf -----------------------------------------------------------------------------------


def _region_cases(name: str, body: Callable[[str, str], list[str]], restricted: bool) -> Cases:
    """A carried value: an init in one layout, the yielded value in another (or the same)."""
    ty = F32_2D
    layouts = register_layouts(ELEMENTWISE_SHAPE, 32)
    pairs = [("strided", "strided"), ("WGMMA", "WGMMA"), ("splat", "splat"), ("WGMMA", "strided")]
    candidates = []
    for init, carried in pairs:
        lines = [
            *pinned_operand("x", ty, layouts[init], "p0"),
            *pinned_operand("y", ty, layouts[carried], "p1"),
            *body(ty, "op"),
        ]
        pins = (Pin("p0", 0, layouts[init]), Pin("p1", 0, layouts[carried]))
        candidates.append(Candidate(f"{init} then {carried}", kernel(lines), pins))
    return Cases(name, tuple(candidates), restricted)


@generator("scf.for")
def for_loop(name: str) -> Cases:
    """The init, the iteration argument, the yielded value and the result agree."""

    def body(ty: str, at: str) -> list[str]:
        return [
            '%lb = "arith.constant"() <{value = 0 : index}> : () -> index',
            '%ub = "arith.constant"() <{value = 4 : index}> : () -> index',
            '%st = "arith.constant"() <{value = 1 : index}> : () -> index',
            '%r = "scf.for"(%lb, %ub, %st, %x) ({',
            f"^bb0(%i: index, %c: {ty}):",
            f'  "scf.yield"(%y) : ({ty}) -> () loc("{at}")',
            f'}}) : (index, index, index, {ty}) -> {ty} loc("{at}")',
        ]

    return _region_cases(name, body, restricted=True)


@generator("scf.while")
def while_loop(name: str) -> Cases:
    """The operand, the `before` argument and the yielded value agree."""

    def body(ty: str, at: str) -> list[str]:
        return [
            '%f = "arith.constant"() <{value = false}> : () -> i1',
            '%r = "scf.while"(%x) ({',
            f"^bb0(%c: {ty}):",
            f'  "scf.condition"(%f, %c) : (i1, {ty}) -> () loc("{at}")',
            "}, {",
            f"^bb0(%d: {ty}):",
            f'  "scf.yield"(%y) : ({ty}) -> () loc("{at}")',
            f'}}) : ({ty}) -> {ty} loc("{at}")',
        ]

    return _region_cases(name, body, restricted=True)


@generator("scf.index_switch")
def index_switch(name: str) -> Cases:
    """Each result agrees with the value every case yields for it."""

    def body(ty: str, at: str) -> list[str]:
        return [
            '%k = "arith.constant"() <{value = 0 : index}> : () -> index',
            '%r = "scf.index_switch"(%k) <{cases = array<i64: 0>}> ({',
            f'  "scf.yield"(%x) : ({ty}) -> () loc("{at}")',
            "}, {",
            f'  "scf.yield"(%y) : ({ty}) -> () loc("{at}")',
            f'}}) : (index) -> {ty} loc("{at}")',
        ]

    return _region_cases(name, body, restricted=True)


# --- SMEM refs: transforms pinned by with_transforms ------------------------------------------

WORKGROUP = "#gpu.address_space<workgroup>"


def smem(shape_and_element: str, layout: str = "") -> str:
    return f"memref<{shape_and_element}{', ' + layout if layout else ''}, {WORKGROUP}>"


def transforms(tile: Sequence[int] | None, swizzle: int | None) -> str:
    parts = []
    if tile is not None:
        parts.append(f"#mosaic_gpu.tile<[{', '.join(map(str, tile))}]>")
    if swizzle is not None:
        parts.append(f"#mosaic_gpu.swizzle<{swizzle} : i32>")
    return f"[{', '.join(parts)}]"


def pinned_ref(name: str, ty: str, given: str, at: str, offset: int = 0) -> list[str]:
    """``%name``, an SMEM ref of type ``ty`` with transforms ``given``, made at ``loc(at)``."""
    return [
        f'%{name}_s = "mosaic_gpu.slice_smem"() <{{offset = {offset} : i32}}> : () -> {ty}',
        tag(
            f'%{name} = "mosaic_gpu.with_transforms"(%{name}_s) <{{transforms = {given}}}> '
            f": ({ty}) -> {ty}",
            at,
        ),
    ]


def _smem_cases(
    name: str,
    ref_ty: str,
    options: dict[str, str],
    op_lines: Callable[[str], list[str]],
    restricted: bool = True,
    arch: tuple[int, int] = HOPPER,
    args: Sequence[str] = (),
) -> Cases:
    """Per option: the ref ``%t`` pinned to those transforms, then ``op_lines("t")``."""
    candidates = []
    for label, given in options.items():
        lines = [*pinned_ref("t", ref_ty, given, "p0"), *op_lines("t")]
        candidates.append(Candidate(label, kernel(lines, args), (Pin("p0", 0, given),), arch))
    return Cases(name, tuple(candidates), restricted)


BF16_REF = smem("128x64xbf16")
_BF16_OPTIONS = {
    "tile 64x64 swizzle 128": transforms((64, 64), 128),
    "tile 8x64 swizzle 128": transforms((8, 64), 128),
    "tile 128x64 swizzle 128": transforms((128, 64), 128),
    "untiled": transforms(None, None),
}


@generator("memref.subview")
def subview(name: str) -> Cases:
    """A window keeps the tiling, which must divide its sizes and offsets."""
    window = smem("64x64xbf16", "strided<[64, 1], offset: 4096>")
    return _smem_cases(
        name,
        BF16_REF,
        _BF16_OPTIONS,
        lambda t: [
            tag(f"%v = memref.subview %{t}[64, 0] [64, 64] [1, 1] : {BF16_REF} to {window}")
        ],
    )


@generator("memref.cast")
def memref_cast(name: str) -> Cases:
    """A cast is the same ref: any transforms."""
    other = smem("128x64xbf16", "strided<[64, 1]>")
    return _smem_cases(
        name,
        BF16_REF,
        _BF16_OPTIONS,
        lambda t: [tag(f"%v = memref.cast %{t} : {BF16_REF} to {other}")],
        restricted=False,
    )


@generator("memref.transpose")
def memref_transpose(name: str) -> Cases:
    """A transposed view: the tiling permuted."""
    view = smem("64x128xbf16", "strided<[1, 64]>")
    return _smem_cases(
        name,
        BF16_REF,
        _BF16_OPTIONS,
        lambda t: [tag(f"%v = memref.transpose %{t} (i, j) -> (j, i) : {BF16_REF} to {view}")],
        restricted=False,
    )


@generator("memref.expand_shape")
def expand_shape(name: str) -> Cases:
    """Splitting the major dim keeps the tiling of the minor one."""
    out = smem("2x64x64xbf16")
    return _smem_cases(
        name,
        BF16_REF,
        _BF16_OPTIONS,
        lambda t: [
            tag(
                f"%v = memref.expand_shape %{t} [[0, 1], [2]] output_shape [2, 64, 64] "
                f": {BF16_REF} into {out}"
            )
        ],
        restricted=False,
    )


@generator("memref.collapse_shape")
def collapse_shape(name: str) -> Cases:
    """Merging the major dims: the tiling must survive."""
    source = smem("2x64x64xbf16")
    options = {
        "tile 64x64 swizzle 128": transforms((64, 64), 128),
        "tile 32x64 swizzle 128": transforms((32, 64), 128),
        "untiled": transforms(None, None),
    }
    return _smem_cases(
        name,
        source,
        options,
        lambda t: [
            tag(f"%v = memref.collapse_shape %{t} [[0, 1], [2]] : {source} into {BF16_REF}")
        ],
        restricted=False,
    )


_SCALAR_REF = smem("1xi32")
_SCALAR_OPTIONS = {"untiled": transforms(None, None), "tile 1": transforms((1,), None)}


@generator("memref.load")
def memref_load(name: str) -> Cases:
    """A scalar load reads an untiled ref."""
    return _smem_cases(
        name,
        _SCALAR_REF,
        _SCALAR_OPTIONS,
        lambda t: [
            '%i = "arith.constant"() <{value = 0 : index}> : () -> index',
            tag(f'%v = "memref.load"(%{t}, %i) : ({_SCALAR_REF}, index) -> i32'),
        ],
    )


@generator("memref.store")
def memref_store(name: str) -> Cases:
    """A scalar store writes an untiled ref."""
    return _smem_cases(
        name,
        _SCALAR_REF,
        _SCALAR_OPTIONS,
        lambda t: [
            '%i = "arith.constant"() <{value = 0 : index}> : () -> index',
            '%c = "arith.constant"() <{value = 1 : i32}> : () -> i32',
            tag(f'"memref.store"(%c, %{t}, %i) : (i32, {_SCALAR_REF}, index) -> ()'),
        ],
    )


@generator("mosaic_gpu.with_transforms")
def with_transforms(name: str) -> Cases:
    """The ref takes the given transforms, where they are valid for it."""
    options = {
        "tile 64x64 swizzle 128": transforms((64, 64), 128),
        "tile 64x32 swizzle 64": transforms((64, 32), 64),
        "untiled": transforms(None, None),
        "tile 64x8 swizzle 128": transforms((64, 8), 128),
        "tile 48x64": transforms((48, 64), None),
    }
    candidates = []
    for label, given in options.items():
        lines = [
            f'%s = "mosaic_gpu.slice_smem"() <{{offset = 0 : i32}}> : () -> {BF16_REF}',
            tag(
                f'%t = "mosaic_gpu.with_transforms"(%s) <{{transforms = {given}}}> '
                f": ({BF16_REF}) -> {BF16_REF}"
            ),
        ]
        candidates.append(Candidate(label, kernel(lines), (Pin(OP, 0, given),)))
    return Cases(name, tuple(candidates))


@generator("mosaic_gpu.slice_smem")
def slice_smem(name: str) -> Cases:
    """A new ref: any transforms."""
    candidates = []
    for label, given in _BF16_OPTIONS.items():
        lines = [
            tag(f'%s = "mosaic_gpu.slice_smem"() <{{offset = 0 : i32}}> : () -> {BF16_REF}'),
            f'%t = "mosaic_gpu.with_transforms"(%s) <{{transforms = {given}}}> '
            f": ({BF16_REF}) -> {BF16_REF}",
        ]
        candidates.append(Candidate(label, kernel(lines), (Pin(OP, 0, given),)))
    return Cases(name, tuple(candidates), restricted=False)


def _transfer_cases(name: str, store: bool) -> Cases:
    """Registers <-> SMEM: the pair (register layout, transforms) needs a transfer plan."""
    ty = vec((128, 64), "bf16")
    layouts = register_layouts((128, 64), 16)
    pairs = [
        ("WGMMA", "tile 8x64 swizzle 128"),
        ("WGMMA", "untiled"),
        ("strided", "untiled"),
        ("strided", "tile 8x64 swizzle 128"),
        ("WGMMA_TRANSPOSED", "tile 8x64 swizzle 128"),
        ("TCGEN05", "tile 8x64 swizzle 128"),
    ]
    if not store:
        pairs.append(("splat", "untiled"))
    candidates = []
    for layout, given_label in pairs:
        given = _BF16_OPTIONS[given_label]
        reg = layouts[layout]
        lines = pinned_ref("t", BF16_REF, given, "p0")
        if store and name == "mosaic_gpu.async_store_smem":
            barrier = smem("!mosaic_gpu.barrier")
            lines += [
                *pinned_operand("x", ty, reg, "p1"),
                f'%b = "mosaic_gpu.slice_smem"() <{{offset = 65536 : i32}}> : () -> {barrier}',
                '%z = "arith.constant"() <{value = 0 : i32}> : () -> i32',
                tag(
                    f'"{name}"(%x, %t, %b, %z) <{{cluster_dim = 0 : i32, optimized = true}}> '
                    f": ({ty}, {BF16_REF}, {barrier}, i32) -> ()"
                ),
            ]
            pins = (Pin("p0", 0, given), Pin("p1", 0, reg))
        elif store:
            lines += [
                *pinned_operand("x", ty, reg, "p1"),
                tag(f'"{name}"(%x, %t) : ({ty}, {BF16_REF}) -> ()'),
            ]
            pins = (Pin("p0", 0, given), Pin("p1", 0, reg))
        else:
            lines += [
                tag(f'%r = "{name}"(%t) : ({BF16_REF}) -> {ty}'),
                pinned_result("q", "r", ty, reg),
            ]
            pins = (Pin("p0", 0, given), Pin(OP, 0, reg))
        candidates.append(Candidate(f"{layout}, {given_label}", kernel(lines), pins))
    return Cases(name, tuple(candidates))


@generator("mosaic_gpu.vector_load")
def vector_load(name: str) -> Cases:
    return _transfer_cases(name, store=False)


@generator("mosaic_gpu.vector_store", "mosaic_gpu.async_store_smem")
def vector_store(name: str) -> Cases:
    return _transfer_cases(name, store=True)


# --- kernels of the op families' own tests, solved and checked whole -----------------------------
# (No layout pinned: the solver must solve them and the checker take its answer.)


def _whole(name: str, *kernels: tuple[str, str, tuple[int, int]]) -> Cases:
    return Cases(
        name,
        tuple(Candidate(label, text, (), arch) for label, text, arch in kernels),
        restricted=False,
    )


@generator("mosaic_gpu.async_load", "mosaic_gpu.async_store")
def async_copy(name: str) -> Cases:
    """TMA copies into refs with given transforms (the tiling divides the slice)."""
    from test_rules_async_copy import _gather_kernel, _swizzled_copy

    load = _swizzled_copy((8, 32), 128, transposed=False)
    if name == "mosaic_gpu.async_store":
        load = _tma_store_kernel()
    return _whole(
        name, ("swizzled copy", load, HOPPER), ("gather", _gather_kernel(16, True), HOPPER)
    )


def _tma_store_kernel() -> str:
    ref, gmem = smem("64x64xbf16"), "memref<64x64xbf16>"
    return kernel(
        [
            f'%r = "mosaic_gpu.slice_smem"() <{{offset = 0 : i32}}> : () -> {ref}',
            '%z = "arith.constant"() <{value = 0 : i32}> : () -> i32',
            '"mosaic_gpu.async_store"(%r, %arg0, %z, %z) <{'
            "operandSegmentSizes = array<i32: 1, 1, 2, 0, 0>, slice_lengths = array<i64: 64, 64>}> "
            f": ({ref}, {gmem}, i32, i32) -> ()",
        ],
        [gmem],
    )


@generator("mosaic_gpu.async_prefetch")
def async_prefetch(name: str) -> Cases:
    """Prefetch indices in a TMA index layout."""
    gmem_ty, idx = "memref<256x64xbf16>", vec((16,), "i32")
    text = kernel(
        [
            '%z = "arith.constant"() <{value = 0 : i32}> : () -> i32',
            f'%idx = "mosaic_gpu.vector_load"(%arg1) <{{optimized = false}}> : (memref<16xi32>) -> {idx}',
            '"mosaic_gpu.async_prefetch"(%arg0, %idx, %z) <{collective = [], '
            "operandSegmentSizes = array<i32: 1, 2, 0>, slice_lengths = array<i64: 16, 64>}> "
            f": ({gmem_ty}, {idx}, i32) -> ()",
        ],
        [gmem_ty, "memref<16xi32>"],
    )
    return _whole(name, ("gather indices", text, HOPPER))


@generator("mosaic_gpu.warp_map")
def warp_map(name: str) -> Cases:
    """Refs keep their transforms inside the body."""
    from test_rules_mosaic_gpu import _warp_map_loading

    return _whole(
        name, ("TMA load in a warp_map", _warp_map_loading(8, barrier_as_ref=True), HOPPER)
    )


@generator("mosaic_gpu.custom_primitive")
def custom_primitive(name: str) -> Cases:
    """The primitive's own layouts (a Pallas inline_mgpu kernel)."""
    import reference

    path = (
        reference.BUNDLED_ROOT
        / "pallas_tests"
        / "PallasCallWGTest.test_inline_mgpu_layout_args2.mlir"
    )
    return _whole(name, ("inline_mgpu", path.read_text(), HOPPER))


@generator("mosaic_gpu.get_cluster_ref")
def get_cluster_ref(name: str) -> Cases:
    """The cluster view is the same ref."""
    ref, cluster, v = (
        smem("64x64xbf16"),
        "memref<64x64xbf16, #mosaic_gpu.smem_cluster>",
        vec((64, 64), "bf16"),
    )
    text = kernel(
        [
            f'%r = "mosaic_gpu.slice_smem"() <{{offset = 0 : i32}}> : () -> {ref}',
            '%c1 = "arith.constant"() <{value = 1 : i32}> : () -> i32',
            '%g = "mosaic_gpu.get_cluster_ref"(%r, %c1) <{operandSegmentSizes = array<i32: 1, 1, 0, 0>}> '
            f": ({ref}, i32) -> {cluster}",
            f'%v = "mosaic_gpu.vector_load"(%g) : ({cluster}) -> {v}',
        ]
    )
    return _whole(name, ("a loaded cluster ref", text, HOPPER))


@generator("mosaic_gpu.try_cluster_cancel", "mosaic_gpu.query_cluster_cancel")
def cluster_cancel(name: str) -> Cases:
    """The response buffer is untiled."""
    ref, barrier = smem("16xi8"), smem("!mosaic_gpu.barrier")
    options = {"untiled": transforms(None, None), "tile 16": transforms((16,), None)}
    candidates = []
    for label, given in options.items():
        lines = [
            *pinned_ref("r", ref, given, "p0"),
            f'%bar = "mosaic_gpu.slice_smem"() <{{offset = 1024 : i32}}> : () -> {barrier}',
            '%t = "arith.constant"() <{value = true}> : () -> i1',
        ]
        try_line = f'"mosaic_gpu.try_cluster_cancel"(%r, %bar, %t) : ({ref}, {barrier}, i1) -> ()'
        query_line = (
            f'%q:4 = "mosaic_gpu.query_cluster_cancel"(%r) : ({ref}) -> (i32, i32, i32, i1)'
        )
        if name.endswith("try_cluster_cancel"):
            lines += [tag(try_line), query_line]
        else:
            lines += [try_line, tag(query_line)]
        candidates.append(Candidate(label, kernel(lines), (Pin("p0", 0, given),)))
    return Cases(name, tuple(candidates))


# --- TMEM (Blackwell) ---------------------------------------------------------------------------


@generator(
    "mosaic_gpu.tcgen05_mma",
    "mosaic_gpu.tmem_alloc",
    "mosaic_gpu.tmem_dealloc",
    "mosaic_gpu.async_load_tmem",
    "mosaic_gpu.async_store_tmem",
    "mosaic_gpu.slice_tmem",
    "mosaic_gpu.tmem_layout_cast",
)
def tmem(name: str) -> Cases:
    """An MMA into a TMEM accumulator, loaded to registers, stored back, then freed;
    and the same with the accumulator cast to another TMEM layout (refused: the MMA
    fixes its accumulator's)."""
    from test_blackwell_rules import mma_kernel

    base = mma_kernel("128x128xf32", "128x64xf16", "64x128xf16")
    tail = [
        '%acc_s = "mosaic_gpu.slice_tmem"(%acc) <{offset = 0 : i32}> : '
        "(memref<128x128xf32, #mosaic_gpu.tmem>) -> memref<128x64xf32, #mosaic_gpu.tmem>",
        '%v = "mosaic_gpu.async_load_tmem"(%acc_s) : (memref<128x64xf32, #mosaic_gpu.tmem>) -> vector<128x64xf32>',
        '"mosaic_gpu.async_store_tmem"(%v, %acc_s) : (vector<128x64xf32>, memref<128x64xf32, #mosaic_gpu.tmem>) -> ()',
        '"mosaic_gpu.tmem_dealloc"(%acc) : (memref<128x128xf32, #mosaic_gpu.tmem>) -> ()',
    ]
    text = base.replace("  return\n", "".join(f"  {line}\n" for line in tail) + "  return\n", 1)
    return _whole(name, ("MMA, load, store, free", text, BLACKWELL))


@generator(
    "mosaic_gpu.async_store_smem_to_tmem",
    "mosaic_gpu.async_store_sparse_metadata_smem_to_tmem",
    "mosaic_gpu.async_store_scales_smem_to_tmem",
)
def smem_to_tmem(name: str) -> Cases:
    """SMEM -> TMEM copies: MMA tilings or untiled sources, the TMEM layouts they fill."""
    from mlir_snippets import SmemSlicer, func_module, smem_type
    from test_blackwell_rules import ADDR, alloc, copy_to_tmem

    source, dest = {
        "mosaic_gpu.async_store_smem_to_tmem": ("128x64xf16", "128x64xf16"),
        "mosaic_gpu.async_store_sparse_metadata_smem_to_tmem": ("1x2x128x64xi2", "128x128xi2"),
        "mosaic_gpu.async_store_scales_smem_to_tmem": ("1x2x32x16xf8E8M0FNU", "128x8xf8E8M0FNU"),
    }[name]
    source_ty = smem_type(source)
    packing = 2 if name == "mosaic_gpu.async_store_smem_to_tmem" else 1
    text = func_module(
        [
            alloc("t", dest, packing=packing),
            SmemSlicer()("s", source_ty),
            copy_to_tmem(name.removeprefix("mosaic_gpu."), "s", source_ty, "t", dest),
        ],
        [ADDR],
    )
    return _whole(name, ("copy", text, BLACKWELL))
