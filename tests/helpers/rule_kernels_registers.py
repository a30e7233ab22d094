# ruff: noqa: E501  (MLIR op lines read best whole)
"""Kernels of the ops on registers: elementwise ops, `vector`, register `mosaic_gpu` ops, MMAs, `scf`."""

from __future__ import annotations

from collections.abc import Callable

from jax.experimental.mosaic.gpu import fragmented_array as fa
from rule_agreement import OP_TAG, Candidate, Cases, Pin, tag
from rule_kernel_parts import (
    ELEMENTWISE_SHAPE,
    F32_2D,
    OP,
    cast,
    generator,
    pinned_operand,
    pinned_result,
    register_cases,
    register_layouts,
    result_cases,
    some,
    splat_constant,
    text_of,
    vec,
)
from rule_kit import HOPPER, kernel

from smalto.basics.elementwise import CONVERSIONS, ELEMENTWISE
from smalto.hw import layouts as hl

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


# The narrow element type each 32-bit one is also tried in (conversions keep their own).
_NARROW = {_F: "bf16", _I: "i16", "i1": "i1"}


@generator(*ELEMENTWISE)
def elementwise(name: str) -> Cases:
    """Operands pinned to one layout, the result pinned (strictly) to it or to another.

    Every layout that fits is taken; operands and result in two tiled layouts are not.
    Also in rank 3 (a tiling of the minor dims) and, but for conversions, in 16-bit
    elements (whose registers pack two).
    """
    operand_types, result_type, properties = _SIGNATURES[name]

    def candidate(
        label: str,
        operands: str,
        result: str,
        shape: tuple[int, ...] = ELEMENTWISE_SHAPE,
        elements: tuple[tuple[str, ...], str] = (operand_types, result_type),
    ) -> Candidate:
        inputs, output = elements
        result_ty = vec(shape, output)
        lines: list[str] = []
        names = []
        for i, element in enumerate(inputs):
            ty = vec(shape, element)
            lines += pinned_operand(f"x{i}", ty, operands, f"p{i}")
            names.append(f"%x{i}")
        types = ", ".join(vec(shape, e) for e in inputs)
        props = f" <{{{properties}}}>" if properties else ""
        lines.append(tag(f'%r = "{name}"({", ".join(names)}){props} : ({types}) -> {result_ty}'))
        lines.append(pinned_result("q", "r", result_ty, result))
        pins = tuple(Pin(f"p{i}", 0, operands) for i in range(len(inputs)))
        return Candidate(label, kernel(lines), (*pins, Pin(OP, 0, result)))

    layouts = register_layouts(ELEMENTWISE_SHAPE, 32)
    del layouts["WGMMA_8BIT"]  # 32-bit values: WGMMA is their tiling
    candidates = [candidate(label, layout, layout) for label, layout in layouts.items()]
    candidates.append(candidate("WGMMA->strided", layouts["WGMMA"], layouts["strided"]))
    candidates.append(candidate("TCGEN05->WGMMA", layouts["TCGEN05"], layouts["WGMMA"]))
    rank_3 = (2, 128, 64)
    deep = some(register_layouts(rank_3, 32), "splat", "strided", "WGMMA")
    for label, layout in deep.items():
        candidates.append(candidate(f"2x128x64 {label}", layout, layout, rank_3))
    candidates.append(candidate("2x128x64 WGMMA->strided", deep["WGMMA"], deep["strided"], rank_3))
    if name not in CONVERSIONS:
        narrow = (tuple(_NARROW[e] for e in operand_types), _NARROW[result_type])
        half = some(register_layouts(ELEMENTWISE_SHAPE, 16), "splat", "strided", "WGMMA")
        for label, layout in half.items():
            candidates.append(
                candidate(f"16-bit {label}", layout, layout, ELEMENTWISE_SHAPE, narrow)
            )
    return Cases(name, (*candidates, *_sub_byte_conversions(name)))


# Conversions to or from 4-bit elements: (operand element, result element).
_SUB_BYTE: dict[str, tuple[str, str]] = {
    "arith.extsi": ("i4", "i8"),  # packs registers: never from a splat
    "arith.sitofp": ("i4", "f8E4M3FN"),  # packs registers too
    "arith.trunci": ("i8", "i4"),  # each register must hold whole bytes of i4
    "arith.extui": ("i4", "i8"),
}


def _sub_byte_conversions(name: str) -> list[Candidate]:
    """A conversion to or from 4-bit integers, operand and result in one layout: splat,
    strided one element a register (half a byte of i4) or more, WGMMA."""
    if name not in _SUB_BYTE:
        return []
    source, result = _SUB_BYTE[name]
    shape = ELEMENTWISE_SHAPE
    src_ty, dst_ty = vec(shape, source), vec(shape, result)
    options = {
        "splat": text_of(fa.WGSplatFragLayout(shape)),
        "strided x1": text_of(fa.WGStridedFragLayout(shape, 1)),
        "strided x8": text_of(fa.WGStridedFragLayout(shape, 8)),
        "WGMMA": text_of(hl.WGMMA),
    }
    candidates = []
    for label, layout in options.items():
        lines = [
            *pinned_operand("x", src_ty, layout, "p0"),
            tag(f'%r = "{name}"(%x) : ({src_ty}) -> {dst_ty}'),
            pinned_result("q", "r", dst_ty, layout),
        ]
        pins = (Pin("p0", 0, layout), Pin(OP, 0, layout))
        candidates.append(Candidate(f"{source} to {result}, {label}", kernel(lines), pins))
    return candidates


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


@generator("vector.reduction")
def reduction(name: str) -> Cases:
    """A full reduction takes any layout."""
    layouts = register_layouts((128,), 32)
    rows = vec((128,), "f32")
    return register_cases(
        name,
        rows,
        layouts,
        lambda x: f'%r = "vector.reduction"(%{x}) <{{kind = #vector.kind<add>}}> : ({rows}) -> f32',
        restricted=False,
    )


# (source shape, element type, reduction kind, reduced dims, source layouts offered)
_REDUCTIONS: tuple[tuple[tuple[int, ...], str, str, tuple[int, ...], tuple[str, ...]], ...] = (
    # Over the columns of a tile: a tiled source, not a splat or strided one.
    ((128, 64), "f32", "add", (1,), ("splat", "strided", "WGMMA", "WGMMA_TRANSPOSED", "TCGEN05")),
    # Over the rows: the tiled layouts reduce to their column layouts.
    ((128, 64), "f32", "maximumf", (0,), ("strided", "WGMMA", "TCGEN05")),
    # Over a leading dim whose trailing dims hold whole thread vectors: a strided
    # layout could reduce within each thread, but the lowering reduces tiled sources only.
    ((64, 256), "f32", "add", (0,), ("splat", "strided", "WGMMA")),
    ((64, 512), "bf16", "maxnumf", (0,), ("strided", "WGMMA")),
    ((64, 256), "i32", "maxsi", (0,), ("strided", "WGMMA")),
    # Integers over the columns.
    ((128, 64), "i32", "add", (1,), ("strided", "WGMMA")),
    # Rank 3 (a tiling of the two minor dims): over the untiled major dim, or over a
    # tiled one (which the lowering misreads), or over both minor dims.
    ((2, 128, 64), "f32", "add", (0,), ("strided", "WGMMA")),
)


@generator("vector.multi_reduction")
def multi_reduction(name: str) -> Cases:
    """A tiled source reduces over its tiled dims (not a splat or strided one), by kind,
    element type, rank and reduced dims; the accumulator is a splat constant."""
    candidates = []
    for shape, element, kind, dims, labels in _REDUCTIONS:
        bitwidth = 16 if element in ("bf16", "f16") else 32
        layouts = some(register_layouts(shape, bitwidth), *labels)
        assert len(layouts) == len(labels), f"{shape}: {sorted(layouts)} lacks one of {labels}"
        kept = tuple(d for i, d in enumerate(shape) if i not in dims)
        source, rows = vec(shape, element), vec(kept, element)
        dims_text = ", ".join(map(str, dims))
        for label, layout in layouts.items():
            lines = [
                splat_constant("acc", rows),
                *pinned_operand("x", source, layout, "p0"),
                tag(
                    f'%r = "vector.multi_reduction"(%x, %acc) <{{kind = #vector.kind<{kind}>, '
                    f"reduction_dims = array<i64: {dims_text}>}}> : ({source}, {rows}) -> {rows}"
                ),
            ]
            named = f"{'x'.join(map(str, shape))}x{element} <{kind}> over [{dims_text}], {label}"
            candidates.append(Candidate(named, kernel(lines), (Pin("p0", 0, layout),)))
            if label == "splat":
                # The refused kind asked of the op itself (``Candidate.at_op``): a splat's
                # producer relayouts it for free, so the case above never puts a splat at
                # the op; here the source reaches it a splat, and the accumulator and the
                # result are the splat reducing it gives, so that only the kind is wrong.
                reduced = text_of(fa.WGSplatFragLayout(kept))
                pins = (Pin("p0", 0, layout), Pin("acc", 0, reduced), Pin(OP_TAG, 0, reduced))
                at_op = [tag(lines[0], "acc"), *lines[1:]]
                candidates.append(
                    Candidate(f"{named} (at the op)", kernel(at_op), pins, at_op=True)
                )
    return Cases(name, tuple(candidates))


@generator("vector.shape_cast")
def shape_cast(name: str) -> Cases:
    """A reshape keeps the layout where no element moves (both ends pinned): splitting or
    merging major dims keeps a tiling of the minor ones; flattening keeps a strided one."""
    # (source shape, result shape, {label: (source layout, result layout)})
    kinds = (
        (
            ELEMENTWISE_SHAPE,
            (2, 64, 64),
            {
                "splat": ("splat", "splat"),
                "strided": ("strided", "strided"),
                "WGMMA": ("WGMMA", "WGMMA"),
                "WGMMA then strided": ("WGMMA", "strided"),
                "strided then WGMMA": ("strided", "WGMMA"),
            },
        ),
        (
            (2, 128, 64),
            (256, 64),
            {"merged, WGMMA": ("WGMMA", "WGMMA"), "merged, TCGEN05": ("TCGEN05", "TCGEN05")},
        ),
        (
            ELEMENTWISE_SHAPE,
            (8192,),
            {
                "flattened, strided": ("strided", "strided"),
                "flattened, WGMMA": ("WGMMA", "strided"),
            },
        ),
    )
    candidates = []
    for source, result, pairs in kinds:
        sources, results = register_layouts(source, 32), register_layouts(result, 32)
        in_ty, out_ty = vec(source, "f32"), vec(result, "f32")
        cases = register_cases(
            name,
            in_ty,
            {label: sources[a] for label, (a, _) in pairs.items()},
            lambda x, i=in_ty, o=out_ty: f'%r = "vector.shape_cast"(%{x}) : ({i}) -> {o}',
            result_ty=out_ty,
            result_layouts={label: results[b] for label, (_, b) in pairs.items()},
        )
        candidates += cases.candidates
    return Cases(name, tuple(candidates))


@generator("vector.extract_strided_slice")
def extract_strided_slice(name: str) -> Cases:
    """A slice of a tiled value at tile boundaries keeps its layout (both ends pinned):
    rows 64..191 of 256 are whole 64-row WGMMA tiles, not whole 128-row TCGEN05 ones;
    columns 32..63 of a 16-bit value are whole WGMMA tiles."""
    labels = ("splat", "strided", "WGMMA", "TCGEN05")
    # (element, bitwidth, source shape, offsets, sizes, labels)
    kinds = (
        ("f32", 32, (256, 64), (64, 0), (128, 64), labels),
        ("bf16", 16, (128, 64), (0, 32), (128, 32), ("strided", "WGMMA")),
    )
    candidates = []
    for element, bitwidth, shape, offsets, sizes, chosen in kinds:
        sources = some(register_layouts(shape, bitwidth), *chosen)
        results = some(register_layouts(sizes, bitwidth), *chosen)
        source, out = vec(shape, element), vec(sizes, element)
        at = ", ".join(map(str, offsets))
        cases = register_cases(
            name,
            source,
            {f"{element} at [{at}], {k}": v for k, v in sources.items()},
            lambda x, s=source, o=out, a=at, z=sizes: (
                f'%r = "vector.extract_strided_slice"(%{x}) <{{offsets = [{a}], '
                f"sizes = [{z[0]}, {z[1]}], strides = [1, 1]}}> : ({s}) -> {o}"
            ),
            result_ty=out,
            result_layouts={f"{element} at [{at}], {k}": v for k, v in results.items()},
        )
        candidates += cases.candidates
    return Cases(name, tuple(candidates))


@generator("vector.extract")
def extract(name: str) -> Cases:
    """A scalar comes out of a splat only; a sub-vector (a slice of the major dim) keeps a
    tiled layout of the source, whose tiles the result's shape divides."""
    layouts = some(register_layouts(ELEMENTWISE_SHAPE, 32), "splat", "strided", "WGMMA")
    scalars = register_cases(
        name,
        F32_2D,
        layouts,
        lambda x: (
            f'%r = "vector.extract"(%{x}) <{{static_position = array<i64: 0, 0>}}> '
            f": ({F32_2D}) -> f32"
        ),
    )
    source, out = vec((2, 128, 64), "f32"), F32_2D
    labels = ("splat", "strided", "WGMMA", "TCGEN05")
    sub_vectors = register_cases(
        name,
        source,
        {
            f"sub-vector, {k}": v
            for k, v in some(register_layouts((2, 128, 64), 32), *labels).items()
        },
        lambda x: (
            f'%r = "vector.extract"(%{x}) <{{static_position = array<i64: 1>}}> '
            f": ({source}) -> {out}"
        ),
        result_ty=out,
        result_layouts={
            f"sub-vector, {k}": v for k, v in some(register_layouts((128, 64), 32), *labels).items()
        },
    )
    return Cases(name, (*scalars.candidates, *sub_vectors.candidates))


@generator("vector.insert_strided_slice")
def insert_strided_slice(name: str) -> Cases:
    """A slice inserted at tile boundaries: slice, destination and result share a tiled layout."""
    small = vec((64, 64), "f32")
    layouts = some(register_layouts((64, 64), 32), "strided", "WGMMA", "TCGEN05")
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
    return Cases(name, (*bf16, *i8, *_wgmma_smem_a(name)))


def _wgmma_smem_a(name: str) -> list[Candidate]:
    """A from SMEM: A and B tiled and swizzled alike (the tiling read transposed where
    exactly one of them is a transposed view)."""
    from rule_kernel_parts import pinned_ref, smem, transforms

    acc_ty = vec((64, 128), "f32")
    a_ty, b_ty = smem("64x64xbf16"), smem("64x128xbf16")
    a_t = smem("64x64xbf16", "strided<[1, 64]>")
    tile_128, tile_64 = transforms((8, 64), 128), transforms((8, 32), 64)
    options = {
        "A and B swizzled 128": (tile_128, tile_128, False),
        "A swizzled 64, B 128": (tile_64, tile_128, False),
        "A transposed, both swizzled 128": (tile_128, tile_128, True),
    }
    candidates = []
    for label, (a_given, b_given, transposed) in options.items():
        lines = [
            *pinned_operand("acc", acc_ty, text_of(hl.WGMMA), "p0"),
            *pinned_ref("a0", a_ty, a_given, "p1"),
            *pinned_ref("b", b_ty, b_given, "p2", offset=65536),
        ]
        a, a_operand = a_ty, "%a0"
        if transposed:
            lines.append(f"%a = memref.transpose %a0 (i, j) -> (j, i) : {a_ty} to {a_t}")
            a, a_operand = a_t, "%a"
        lines.append(
            tag(f'%r = "{name}"(%acc, {a_operand}, %b) : ({acc_ty}, {a}, {b_ty}) -> {acc_ty}')
        )
        pins = (Pin("p0", 0, text_of(hl.WGMMA)), Pin("p1", 0, a_given), Pin("p2", 0, b_given))
        candidates.append(Candidate(f"bf16 {label}", kernel(lines), pins))
    return candidates


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
    return Cases(name, (*candidates, *_upcast_casts()))


def _upcast_casts() -> list[Candidate]:
    """Casts between WGMMA and its upcast layouts (2x, 4x), which the lowering relayouts
    for narrow elements, per element width."""
    named = {
        "WGMMA": hl.WGMMA,
        "UPCAST_2X": fa.WGMMA_LAYOUT_UPCAST_2X,
        "UPCAST_4X": fa.WGMMA_LAYOUT_UPCAST_4X,
    }
    pairs = [
        ("UPCAST_2X", "WGMMA"),
        ("WGMMA", "UPCAST_2X"),
        ("UPCAST_4X", "UPCAST_2X"),
        ("UPCAST_4X", "WGMMA"),
        ("UPCAST_2X", "UPCAST_4X"),
    ]
    candidates = []
    for element in ("i8", "bf16", "i4"):
        ty = vec(ELEMENTWISE_SHAPE, element)
        for source, target in pairs:
            a, b = text_of(named[source]), text_of(named[target])
            lines = [*pinned_operand("x", ty, a, "p0"), cast("r", "x", ty, b, OP)]
            pins = (Pin("p0", 0, a), Pin(OP, 0, b))
            candidates.append(Candidate(f"{element} {source}->{target}", kernel(lines), pins))
    return candidates


@generator("mosaic_gpu.optimization_barrier")
def optimization_barrier(name: str) -> Cases:
    """Any layout passes, in registers of whole 32-bit words."""
    ty = vec(ELEMENTWISE_SHAPE, "f16")
    layouts = some(register_layouts(ELEMENTWISE_SHAPE, 16), "splat", "strided", "WGMMA", "TCGEN05")
    layouts["strided x1"] = text_of(fa.WGStridedFragLayout(ELEMENTWISE_SHAPE, 1))
    return register_cases(
        name,
        ty,
        layouts,
        lambda x: f'%r = "mosaic_gpu.optimization_barrier"(%{x}) : ({ty}) -> {ty}',
        result_ty=ty,
    )


@generator("mosaic_gpu.debug_print")
def debug_print(name: str) -> Cases:
    """Printing takes any layout."""
    layouts = some(register_layouts(ELEMENTWISE_SHAPE, 32), "splat", "strided", "WGMMA", "TCGEN05")
    return register_cases(
        name,
        F32_2D,
        layouts,
        lambda x: f'"mosaic_gpu.debug_print"(%{x}) <{{format = "v: "}}> : ({F32_2D}) -> ()',
        restricted=False,
    )


@generator("mosaic_gpu.print_layout")
def print_layout(name: str) -> Cases:
    """Printing a layout takes any."""
    layouts = some(register_layouts(ELEMENTWISE_SHAPE, 32), "splat", "strided", "WGMMA", "TCGEN05")
    return register_cases(
        name,
        F32_2D,
        layouts,
        lambda x: f'"mosaic_gpu.print_layout"(%{x}) <{{format = "{{}}"}}> : ({F32_2D}) -> ()',
        restricted=False,
    )


@generator("mosaic_gpu.broadcasted_iota")
def broadcasted_iota(name: str) -> Cases:
    """An iota differs per element: any layout but a splat."""
    ty = vec(ELEMENTWISE_SHAPE, "i32")
    line = f'%r = "mosaic_gpu.broadcasted_iota"() <{{dimension = 0 : i32}}> : () -> {ty}'
    return result_cases(name, line, ty, ("splat", "strided", "WGMMA"), ELEMENTWISE_SHAPE, 32)


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
    return Cases(name, (*candidates, *_other_broadcasts()))


def _other_broadcasts() -> list[Candidate]:
    """A unit dim grown (keeping the rank: 128x1 -> 128x64), and a new major dim added to a
    strided value (64x256 -> 2x64x256), each from and into several layouts."""
    kinds = (
        ((128, 1), ELEMENTWISE_SHAPE, "0, 1", ("strided", "splat"), ("strided", "WGMMA", "splat")),
        ((64, 256), (2, 64, 256), "1, 2", ("strided", "WGMMA"), ("strided", "WGMMA")),
    )
    candidates = []
    for src_shape, dst_shape, dims, sources, results in kinds:
        src_ty, dst_ty = vec(src_shape, "f32"), vec(dst_shape, "f32")
        src_layouts = register_layouts(src_shape, 32)
        dst_layouts = register_layouts(dst_shape, 32)
        for source in sources:
            for result in results:
                lines = [
                    *pinned_operand("x", src_ty, src_layouts[source], "p0"),
                    tag(
                        f'%r = "mosaic_gpu.broadcast_in_dim"(%x) <{{broadcast_dimensions = '
                        f"array<i64: {dims}>}}> : ({src_ty}) -> {dst_ty}"
                    ),
                    pinned_result("q", "r", dst_ty, dst_layouts[result]),
                ]
                pins = (Pin("p0", 0, src_layouts[source]), Pin(OP, 0, dst_layouts[result]))
                label = f"{'x'.join(map(str, src_shape))} {source}->{result}"
                candidates.append(Candidate(label, kernel(lines), pins))
    return candidates


@generator("mosaic_gpu.vector_concat")
def vector_concat(name: str) -> Cases:
    """Operands and result share one tiled layout, joined along the rows or the columns."""
    part = vec((64, 64), "f32")
    parts = register_layouts((64, 64), 32)
    stricter = (
        "JAX's inference concatenates tiled values only; its lowering also joins strided "
        "values along dim 0"
    )
    candidates = []
    for dimension, whole_shape in ((0, ELEMENTWISE_SHAPE), (1, (64, 128))):
        ty = vec(whole_shape, "f32")
        whole = register_layouts(whole_shape, 32)
        for label in ("WGMMA", "strided", "splat"):
            lines = [
                *pinned_operand("a", part, parts[label], "p0"),
                *pinned_operand("b", part, parts[label], "p1"),
                tag(
                    f'%r = "mosaic_gpu.vector_concat"(%a, %b) <{{dimension = {dimension} : i32}}> '
                    f": ({part}, {part}) -> {ty}"
                ),
                pinned_result("q", "r", ty, whole[label]),
            ]
            pins = (
                Pin("p0", 0, parts[label]),
                Pin("p1", 0, parts[label]),
                Pin(OP, 0, whole[label]),
            )
            # (Along dim 1 the lowering refuses strided values too.)
            reason = stricter if label == "strided" and dimension == 0 else ""
            title = label if dimension == 0 else f"along dim 1, {label}"
            candidates.append(Candidate(title, kernel(lines), pins, HOPPER, reason))
    return Cases(name, tuple(candidates))


@generator("llvm.mlir.undef", "ub.poison")
def undefined(name: str) -> Cases:
    """An undefined vector takes any layout."""
    ty = vec((4096,), "f32")
    line = f'%r = "{name}"() : () -> {ty}'
    # (Not a splat: a free value pinned only by a cast after it need not be one.)
    labels = ("strided", "WGMMA_ROW")
    return Cases(name, result_cases(name, line, ty, labels, (4096,), 32).candidates, False)


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

    cases = _region_cases(name, body, restricted=True)
    return Cases(name, (*cases.candidates, *_carried_refs()), cases.restricted)


def _carried_refs() -> list[Candidate]:
    """An SMEM ref carried through a loop keeps its transforms, and is loaded after it."""
    from rule_kernel_parts import pinned_ref, smem, transforms

    ref, ty = smem("128x64xbf16"), vec((128, 64), "bf16")
    options = {"tile 8x64 swizzle 128": transforms((8, 64), 128), "untiled": transforms(None, None)}
    candidates = []
    for label, given in options.items():
        lines = [
            *pinned_ref("t", ref, given, "p0"),
            '%lb = "arith.constant"() <{value = 0 : index}> : () -> index',
            '%ub = "arith.constant"() <{value = 4 : index}> : () -> index',
            '%st = "arith.constant"() <{value = 1 : index}> : () -> index',
            '%r = "scf.for"(%lb, %ub, %st, %t) ({',
            f"^bb0(%i: index, %c: {ref}):",
            f'  "scf.yield"(%c) : ({ref}) -> () loc("{OP}")',
            f'}}) : (index, index, index, {ref}) -> {ref} loc("{OP}")',
            f'%v = "mosaic_gpu.vector_load"(%r) : ({ref}) -> {ty}',
        ]
        candidates.append(Candidate(f"ref {label}", kernel(lines), (Pin("p0", 0, given),)))
    return candidates


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
