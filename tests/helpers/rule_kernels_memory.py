# ruff: noqa: E501  (MLIR op lines read best whole)
"""Kernels of the ops on memory refs: `memref` views, SMEM transfers, TMA copies, TMEM (Blackwell)."""

from __future__ import annotations

from rule_agreement import Candidate, Cases, Pin, tag
from rule_kernel_parts import (
    BLACKWELL,
    OP,
    generator,
    pinned_operand,
    pinned_ref,
    pinned_result,
    register_layouts,
    smem,
    smem_cases,
    text_of,
    transforms,
    vec,
)
from rule_kit import HOPPER, kernel

from smalto.hw import layouts as hl

BF16_REF = smem("128x64xbf16")
BF16_OPTIONS = {
    "tile 64x64 swizzle 128": transforms((64, 64), 128),
    "tile 8x64 swizzle 128": transforms((8, 64), 128),
    "tile 128x64 swizzle 128": transforms((128, 64), 128),
    "untiled": transforms(None, None),
}


@generator("memref.subview")
def subview(name: str) -> Cases:
    """A window keeps the tiling, which must divide its sizes and offsets."""
    # At row 32: a 64-row tile fits the window but not its offset.
    window = smem("64x64xbf16", "strided<[64, 1], offset: 2048>")
    static = smem_cases(
        name,
        BF16_REF,
        BF16_OPTIONS,
        lambda t: [
            tag(f"%v = memref.subview %{t}[32, 0] [64, 64] [1, 1] : {BF16_REF} to {window}")
        ],
        view_ty=window,
    )
    return Cases(name, (*static.candidates, *_dynamic_subviews(name)))


# Row offsets of a window, computed at run time from ``%arg0`` (an i32) as kernels do:
# what each tells of the offset's divisors.
_DYNAMIC_OFFSETS = {
    "offset unknown": ["%o = arith.index_cast %arg0 : i32 to index"],
    "offset assumed a multiple of 64": [
        '%m = "mosaic_gpu.assume_multiple"(%arg0) <{multiple = 64 : i32}> : (i32) -> i32',
        "%o = arith.index_cast %m : i32 to index",
    ],
    "offset times 64": [
        "%c64 = arith.constant 64 : i32",
        "%m = arith.muli %arg0, %c64 : i32",
        "%o = arith.index_cast %m : i32 to index",
    ],
    "offset 64 plus a multiple of 128": [
        "%c64 = arith.constant 64 : i32",
        "%c128 = arith.constant 128 : i32",
        "%m = arith.muli %arg0, %c128 : i32",
        "%s = arith.addi %m, %c64 : i32",
        "%o = arith.index_cast %s : i32 to index",
    ],
    "offset 32 plus a multiple of 64": [
        "%c32 = arith.constant 32 : i32",
        "%c64 = arith.constant 64 : i32",
        "%m = arith.muli %arg0, %c64 : i32",
        "%s = arith.addi %m, %c32 : i32",
        "%o = arith.index_cast %s : i32 to index",
    ],
    "offset 0 or 64": [
        "%c0 = arith.constant 0 : index",
        "%c64 = arith.constant 64 : index",
        "%f = arith.trunci %arg0 : i32 to i1",
        "%o = arith.select %f, %c0, %c64 : index",
    ],
    "offset masked to a multiple of 64": [
        "%mask = arith.constant -64 : i32",
        "%m = arith.andi %arg0, %mask : i32",
        "%o = arith.index_cast %m : i32 to index",
    ],
    "offset truncated from a multiple of 64": [
        "%c64 = arith.constant 64 : i64",
        "%wide = arith.extsi %arg0 : i32 to i64",
        "%m = arith.muli %wide, %c64 : i64",
        "%n = arith.trunci %m : i64 to i32",
        "%o = arith.index_cast %n : i32 to index",
    ],
}


def _dynamic_subviews(name: str) -> list[Candidate]:
    """A window at a row offset known at run time: a 64-row tile only where the offset
    is known to be a multiple of 64."""
    window = smem("64x64xbf16", "strided<[64, 1], offset: ?>")
    options = {
        "tile 64x64 swizzle 128": transforms((64, 64), 128),
        "untiled": transforms(None, None),
    }
    candidates = []
    for offset_label, offset_lines in _DYNAMIC_OFFSETS.items():
        for label, given in options.items():
            lines = [
                *pinned_ref("t", BF16_REF, given, "p0"),
                *offset_lines,
                tag(f"%v = memref.subview %t[%o, 0] [64, 64] [1, 1] : {BF16_REF} to {window}"),
                tag(
                    f'%w = "mosaic_gpu.with_transforms"(%v) <{{transforms = {given}}}> '
                    f": ({window}) -> {window}",
                    "p1",
                ),
            ]
            pins = (Pin("p0", 0, given), Pin(OP, 0, given))
            candidates.append(Candidate(f"{offset_label}, {label}", kernel(lines, ["i32"]), pins))
    return candidates


@generator("memref.cast")
def memref_cast(name: str) -> Cases:
    """A cast is the same ref: any transforms."""
    other = smem("128x64xbf16", "strided<[64, 1]>")
    return smem_cases(
        name,
        BF16_REF,
        BF16_OPTIONS,
        lambda t: [tag(f"%v = memref.cast %{t} : {BF16_REF} to {other}")],
        restricted=False,
        view_ty=other,
    )


@generator("memref.transpose")
def memref_transpose(name: str) -> Cases:
    """A transposed view: the tiling permuted."""
    view = smem("64x128xbf16", "strided<[1, 64]>")
    return smem_cases(
        name,
        BF16_REF,
        BF16_OPTIONS,
        lambda t: [tag(f"%v = memref.transpose %{t} (i, j) -> (j, i) : {BF16_REF} to {view}")],
        restricted=False,
    )


@generator("memref.expand_shape")
def expand_shape(name: str) -> Cases:
    """Splitting the major dim: only the dims not split may be tiled."""
    out = smem("2x64x64xbf16")
    options = {**BF16_OPTIONS, "tile 64 swizzle 128": transforms((64,), 128)}
    return smem_cases(
        name,
        BF16_REF,
        options,
        lambda t: [
            tag(
                f"%v = memref.expand_shape %{t} [[0, 1], [2]] output_shape [2, 64, 64] "
                f": {BF16_REF} into {out}"
            )
        ],
        view_ty=out,
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
    return smem_cases(
        name,
        source,
        options,
        lambda t: [
            tag(f"%v = memref.collapse_shape %{t} [[0, 1], [2]] : {source} into {BF16_REF}")
        ],
        view_ty=BF16_REF,
    )


_SCALAR_REF = smem("1xi32")
_SCALAR_OPTIONS = {"untiled": transforms(None, None), "tile 1": transforms((1,), None)}


@generator("memref.load")
def memref_load(name: str) -> Cases:
    """A scalar load reads an untiled ref."""
    return smem_cases(
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
    return smem_cases(
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
    for label, given in BF16_OPTIONS.items():
        lines = [
            tag(f'%s = "mosaic_gpu.slice_smem"() <{{offset = 0 : i32}}> : () -> {BF16_REF}'),
            f'%t = "mosaic_gpu.with_transforms"(%s) <{{transforms = {given}}}> '
            f": ({BF16_REF}) -> {BF16_REF}",
        ]
        candidates.append(Candidate(label, kernel(lines), (Pin(OP, 0, given),)))
    return Cases(name, (*candidates, *_aliased_slices(name)), restricted=False)


def _aliased_slices(name: str) -> list[Candidate]:
    """Two slices with one alias id are one ref, whatever their offsets: one tiling."""
    options = {
        "aliased, alike": (transforms((64, 64), 128), transforms((64, 64), 128)),
        "aliased, apart": (transforms((64, 64), 128), transforms(None, None)),
    }
    candidates = []
    for label, (first, second) in options.items():
        lines = []
        for i, (given, offset) in enumerate(((first, 0), (second, 16384))):
            lines += [
                tag(
                    f'%s{i} = "{name}"() <{{alias_id = 7 : i64, offset = {offset} : i32}}> '
                    f": () -> {BF16_REF}",
                    # The second is the op under test: the checker names it.
                    OP if i == 1 else f"s{i}",
                ),
                tag(
                    f'%t{i} = "mosaic_gpu.with_transforms"(%s{i}) <{{transforms = {given}}}> '
                    f": ({BF16_REF}) -> {BF16_REF}",
                    f"p{i}",
                ),
            ]
        pins = (Pin("s0", 0, first), Pin(OP, 0, second))
        candidates.append(Candidate(label, kernel(lines), pins))
    return candidates


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
        given = BF16_OPTIONS[given_label]
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


def _gmem_cases(name: str, store: bool) -> list[Candidate]:
    """Registers <-> a GMEM ref (a kernel argument): an optimized transfer must coalesce
    (whole 32-byte sectors per warp); per layout, element type and ref shape."""
    kinds = (("128x64", "bf16", 16), ("128x64", "f32", 32), ("128x8", "f32", 32))
    labels = ("WGMMA", "strided", "splat", "strided x1")
    candidates = []
    for shape_text, element, bitwidth in kinds:
        shape = tuple(int(d) for d in shape_text.split("x"))
        ref, ty = f"memref<{shape_text}x{element}>", vec(shape, element)
        layouts = register_layouts(shape, bitwidth)
        from jax.experimental.mosaic.gpu import fragmented_array as fa

        layouts["strided x1"] = text_of(fa.WGStridedFragLayout(shape, 1))
        for label in labels:
            if label not in layouts or (label == "splat" and not store):
                continue
            reg = layouts[label]
            if store:
                lines = [
                    *pinned_operand("x", ty, reg, "p0"),
                    tag(f'"{name}"(%x, %arg0) : ({ty}, {ref}) -> ()'),
                ]
                pins = (Pin("p0", 0, reg),)
            else:
                lines = [
                    tag(f'%r = "{name}"(%arg0) : ({ref}) -> {ty}'),
                    pinned_result("q", "r", ty, reg),
                ]
                pins = (Pin(OP, 0, reg),)
            candidates.append(
                Candidate(f"GMEM {shape_text}x{element}, {label}", kernel(lines, [ref]), pins)
            )
    return candidates


@generator("mosaic_gpu.vector_load")
def vector_load(name: str) -> Cases:
    cases = _transfer_cases(name, store=False)
    return Cases(name, (*cases.candidates, *_gmem_cases(name, store=False)))


@generator("mosaic_gpu.vector_store", "mosaic_gpu.async_store_smem")
def vector_store(name: str) -> Cases:
    cases = _transfer_cases(name, store=True)
    if name == "mosaic_gpu.vector_store":
        return Cases(name, (*cases.candidates, *_gmem_cases(name, store=True)))
    return cases


# --- kernels of the op families' own tests, solved and checked whole -----------------------------
# (No layout pinned: the solver must solve them and the checker take its answer.)


def _whole(name: str, *kernels: tuple[str, str, tuple[int, int]]) -> Cases:
    return Cases(
        name,
        tuple(Candidate(label, text, (), arch) for label, text, arch in kernels),
        restricted=False,
    )


_TMA_GMEM = "memref<256x256xbf16>"
_BARRIER = smem("!mosaic_gpu.barrier")


def _tma_line(name: str, ref: str, ref_ty: str, indices: str, index_types: str, rows: int) -> str:
    """An ``async_load`` (with a barrier) or ``async_store`` of ``rows`` x 64 elements."""
    if name == "mosaic_gpu.async_load":
        operands, types, segments = (
            f"%arg0, %{ref}, %bar, {indices}",
            f"{_TMA_GMEM}, {ref_ty}, {_BARRIER}, {index_types}",
            "1, 1, 1, 2, 0, 0",
        )
    else:
        operands, types, segments = (
            f"%{ref}, %arg0, {indices}",
            f"{ref_ty}, {_TMA_GMEM}, {index_types}",
            "1, 1, 2, 0, 0",
        )
    return tag(
        f'"{name}"({operands}) <{{{"collective = [], " if "load" in name else ""}'
        f"operandSegmentSizes = array<i32: {segments}>, slice_lengths = array<i64: {rows}, 64>}}> "
        f": ({types}) -> ()"
    )


def _index_layouts() -> tuple[str, dict[str, str]]:
    """The type of 128 gather/scatter indices, and the layouts they may be in."""
    indices = register_layouts((128,), 32)
    indices["TMA_INDICES"] = text_of(hl.TMA_INDICES)
    indices["TMA_INDICES_4"] = text_of(hl.TMA_INDICES_4)
    return vec((128,), "i32"), indices


@generator("mosaic_gpu.async_load", "mosaic_gpu.async_store")
def async_copy(name: str) -> Cases:
    """A TMA copy: the tiling divides the slice where its offsets are known to, and
    gather/scatter indices take a TMA index layout."""
    ref_ty = smem("64x64xbf16")
    prelude = [
        f'%bar = "mosaic_gpu.slice_smem"() <{{offset = 65536 : i32}}> : () -> {_BARRIER}',
        '%z = "arith.constant"() <{value = 0 : i32}> : () -> i32',
    ]
    options = {
        "tile 8x64 swizzle 128": transforms((8, 64), 128),
        "tile 64x64 swizzle 128": transforms((64, 64), 128),
        "untiled": transforms(None, None),
    }
    candidates = []
    for offset_label, row in (("offset 0", "%z"), ("unknown row offset", "%arg1")):
        for label, given in options.items():
            lines = [
                *prelude,
                *pinned_ref("r", ref_ty, given, "p0"),
                _tma_line(name, "r", ref_ty, f"{row}, %z", "i32, i32", 64),
            ]
            candidates.append(
                Candidate(
                    f"{label}, {offset_label}",
                    kernel(lines, [_TMA_GMEM, "i32"]),
                    (Pin("p0", 0, given),),
                )
            )
    # Gather (load) and scatter (store) of 128 rows: indices in a TMA index layout.
    idx_ty, indices = _index_layouts()
    rows_ty = smem("128x64xbf16")
    for label in ("TMA_INDICES", "TMA_INDICES_4", "strided", "WGMMA_ROW"):
        lines = [
            *prelude,
            *pinned_ref("r", rows_ty, transforms(None, None), "p0"),
            *pinned_operand("idx", idx_ty, indices[label], "p1"),
            _tma_line(name, "r", rows_ty, "%idx, %z", f"{idx_ty}, i32", 128),
        ]
        pins = (Pin("p0", 0, transforms(None, None)), Pin("p1", 0, indices[label]))
        candidates.append(Candidate(f"indices {label}", kernel(lines, [_TMA_GMEM, "i32"]), pins))
    return Cases(name, tuple(candidates))


@generator("mosaic_gpu.async_prefetch")
def async_prefetch(name: str) -> Cases:
    """Prefetch indices take a TMA index layout."""
    idx_ty, indices = _index_layouts()
    candidates = []
    for label in ("TMA_INDICES", "TMA_INDICES_4", "strided", "WGMMA_ROW"):
        lines = [
            '%z = "arith.constant"() <{value = 0 : i32}> : () -> i32',
            *pinned_operand("idx", idx_ty, indices[label], "p0"),
            tag(
                '"mosaic_gpu.async_prefetch"(%arg0, %idx, %z) <{collective = [], '
                "operandSegmentSizes = array<i32: 1, 2, 0>, slice_lengths = array<i64: 128, 64>}> "
                f": ({_TMA_GMEM}, {idx_ty}, i32) -> ()"
            ),
        ]
        candidates.append(
            Candidate(label, kernel(lines, [_TMA_GMEM]), (Pin("p0", 0, indices[label]),))
        )
    return Cases(name, tuple(candidates))


@generator("mosaic_gpu.warp_map")
def warp_map(name: str) -> Cases:
    """A ref passed into the body keeps its transforms there (a TMA load into it)."""
    ref = smem("64x64xbf16")
    options = {
        "tile 8x64 swizzle 128": transforms((8, 64), 128),
        "untiled": transforms(None, None),
    }
    body = [
        f'%bar = "mosaic_gpu.slice_smem"() <{{offset = 65536 : i32}}> : () -> {_BARRIER}',
        '%z = "arith.constant"() <{value = 0 : i32}> : () -> i32',
    ]

    def lines(t: str) -> list[str]:
        return [
            *body,
            f'"{name}"(%{t}, %bar, %z, %arg0) ({{',
            f"^bb0(%wr: {ref}, %wb: {_BARRIER}, %wz: i32, %wg: {_TMA_GMEM}):",
            '  "mosaic_gpu.async_load"(%wg, %wr, %wb, %wz, %wz) <{collective = [], '
            "operandSegmentSizes = array<i32: 1, 1, 1, 2, 0, 0>, slice_lengths = array<i64: 64, 64>}> "
            f": ({_TMA_GMEM}, {ref}, {_BARRIER}, i32, i32) -> ()",
            f'}}) : ({ref}, {_BARRIER}, i32, {_TMA_GMEM}) -> () loc("{OP}")',
        ]

    return smem_cases(name, ref, options, lines, restricted=False, args=[_TMA_GMEM])


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
    """The cluster view is the same ref: any transforms."""
    ref = smem("64x64xbf16")
    cluster = "memref<64x64xbf16, #mosaic_gpu.smem_cluster>"
    options = {
        "tile 8x64 swizzle 128": transforms((8, 64), 128),
        "untiled": transforms(None, None),
    }
    return smem_cases(
        name,
        ref,
        options,
        lambda t: [
            '%c1 = "arith.constant"() <{value = 1 : i32}> : () -> i32',
            tag(
                f'%g = "{name}"(%{t}, %c1) <{{operandSegmentSizes = array<i32: 1, 1, 0, 0>}}> '
                f": ({ref}, i32) -> {cluster}"
            ),
        ],
        restricted=False,
    )


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


TMEM_SPACE = "#mosaic_gpu.tmem"
ADDRESS = "memref<i32, #gpu.address_space<workgroup>>"


def tmem_ref(shape_and_element: str) -> str:
    return f"memref<{shape_and_element}, {TMEM_SPACE}>"


def tmem_layouts() -> dict[str, str]:
    """TMEM layouts by name (the default for 32-bit and for packed 16-bit columns)."""
    from jax.experimental.mosaic.gpu import tcgen05

    return {
        "TMEM default": text_of(tcgen05.tmem_default_layout(1)),
        "TMEM default, packing 2": text_of(tcgen05.tmem_default_layout(2)),
        "TMEM half_lane": text_of(tcgen05.tmem_half_lane_layout(128, 1)),
    }


def tmem_alloc(name: str, ty: str, at: str | None = None) -> str:
    line = (
        f'%{name} = "mosaic_gpu.tmem_alloc"(%addr) <{{collective = false, packing = 1 : i32}}> '
        f": ({ADDRESS}) -> {tmem_ref(ty)}"
    )
    return tag(line, at) if at else line


def tmem_cast(name: str, ref: str, ty: str, layout: str, at: str) -> str:
    return tag(
        f'%{name} = "mosaic_gpu.tmem_layout_cast"(%{ref}) <{{new_layout = {layout}}}> '
        f": ({tmem_ref(ty)}) -> {tmem_ref(ty)}",
        at,
    )


def _tmem_kernel(lines: list[str]) -> str:
    return kernel(lines, [ADDRESS]).replace("%arg0", "%addr")


_ACC = "128x128xf32"


@generator("mosaic_gpu.async_load_tmem", "mosaic_gpu.async_store_tmem")
def tmem_transfer(name: str) -> Cases:
    """TMEM <-> registers: the pair (TMEM layout, register layout) must be a supported
    transfer (TCGEN05 or TMEM-native registers from the default TMEM layout)."""
    ty = vec((128, 128), "f32")
    refs = tmem_layouts()
    registers = register_layouts((128, 128), 32)
    registers["TMEM_NATIVE"] = text_of(hl.TMEM_NATIVE)
    pairs = [
        ("TMEM default", "TCGEN05"),
        ("TMEM default", "TMEM_NATIVE"),
        ("TMEM default", "WGMMA"),
        ("TMEM default", "strided"),
        ("TMEM default", "WGMMA_TRANSPOSED"),
        ("TMEM half_lane", "TCGEN05"),
    ]
    candidates = []
    for ref_label, reg_label in pairs:
        ref, reg = refs[ref_label], registers[reg_label]
        lines = [tmem_alloc("t0", _ACC), tmem_cast("t", "t0", _ACC, ref, "p0")]
        if name == "mosaic_gpu.async_load_tmem":
            lines += [
                tag(f'%r = "{name}"(%t) : ({tmem_ref(_ACC)}) -> {ty}'),
                pinned_result("q", "r", ty, reg),
            ]
            pins = (Pin("p0", 0, ref), Pin(OP, 0, reg))
        else:
            lines += [
                *pinned_operand("x", ty, reg, "p1"),
                tag(f'"{name}"(%x, %t) : ({ty}, {tmem_ref(_ACC)}) -> ()'),
            ]
            pins = (Pin("p0", 0, ref), Pin("p1", 0, reg))
        label = f"{ref_label}, {reg_label}"
        candidates.append(Candidate(label, _tmem_kernel(lines), pins, BLACKWELL))
    candidates += _packed_transfers(name, refs)
    if name == "mosaic_gpu.async_load_tmem":
        candidates += _reducing_loads(refs, registers)
    return Cases(name, tuple(candidates))


def _packed_transfers(name: str, refs: dict[str, str]) -> list[Candidate]:
    """16-bit values, two to a TMEM cell (the default layout packing 2) or one (packing 1)."""
    ty, ref_ty = vec((128, 128), "bf16"), "128x128xbf16"
    registers = register_layouts((128, 128), 16)
    registers["TMEM_NATIVE"] = text_of(hl.TMEM_NATIVE)
    pairs = [
        ("TMEM default, packing 2", "TCGEN05"),
        ("TMEM default, packing 2", "TMEM_NATIVE"),
        ("TMEM default, packing 2", "WGMMA"),
        ("TMEM default", "TCGEN05"),
    ]
    candidates = []
    for ref_label, reg_label in pairs:
        ref, reg = refs[ref_label], registers[reg_label]
        lines = [tmem_alloc("t0", ref_ty), tmem_cast("t", "t0", ref_ty, ref, "p0")]
        if name == "mosaic_gpu.async_load_tmem":
            lines += [
                tag(f'%r = "{name}"(%t) : ({tmem_ref(ref_ty)}) -> {ty}'),
                pinned_result("q", "r", ty, reg),
            ]
            pins = (Pin("p0", 0, ref), Pin(OP, 0, reg))
        else:
            lines += [
                *pinned_operand("x", ty, reg, "p1"),
                tag(f'"{name}"(%x, %t) : ({ty}, {tmem_ref(ref_ty)}) -> ()'),
            ]
            pins = (Pin("p0", 0, ref), Pin("p1", 0, reg))
        label = f"bf16, {ref_label}, {reg_label}"
        candidates.append(Candidate(label, _tmem_kernel(lines), pins, BLACKWELL))
    return candidates


# TMEMLoadReduction's values, by name.
_REDUCTIONS = {"min": 0, "max": 1, "absmin": 2, "absmax": 3}


def _reducing_loads(refs: dict[str, str], registers: dict[str, str]) -> list[Candidate]:
    """A load that also reduces each row (``reduce``): from the default TMEM layout into
    the TMEM-native registers only (the lowering fuses the reduction there alone), per
    element type and reduction kind; the loaded value pinned, or left to the solver."""
    name = "mosaic_gpu.async_load_tmem"
    kinds = (("f32", "max"), ("f32", "absmin"), ("i32", "min"), ("i32", "absmax"))
    pairs = [
        ("TMEM default", "TMEM_NATIVE"),
        ("TMEM default", "TCGEN05"),
        ("TMEM default", None),
        ("TMEM half_lane", "TMEM_NATIVE"),
    ]
    candidates = []
    for element, reduction in kinds:
        ref_ty, ty, rows = f"128x128x{element}", vec((128, 128), element), vec((128,), element)
        for ref_label, reg_label in pairs:
            ref = refs[ref_label]
            lines = [
                tmem_alloc("t0", ref_ty),
                tmem_cast("t", "t0", ref_ty, ref, "p0"),
                tag(
                    f'%r, %s = "{name}"(%t) <{{reduce = {_REDUCTIONS[reduction]} : i32}}> '
                    f": ({tmem_ref(ref_ty)}) -> ({ty}, {rows})"
                ),
            ]
            pins = [Pin("p0", 0, ref)]
            if reg_label is not None:
                lines.append(pinned_result("q", "r", ty, registers[reg_label]))
                pins.append(Pin(OP, 0, registers[reg_label]))
            label = f"reduce {reduction} of {element}, {ref_label}, {reg_label or 'registers free'}"
            candidates.append(Candidate(label, _tmem_kernel(lines), tuple(pins), BLACKWELL))
    return candidates


@generator("mosaic_gpu.tmem_layout_cast", "mosaic_gpu.tmem_alloc", "mosaic_gpu.tmem_dealloc")
def tmem_ref_ops(name: str) -> Cases:
    """A TMEM ref takes the layout a cast gives it, if the layout fits; the allocation
    and the deallocation take the ref's."""
    candidates = []
    for label, layout in tmem_layouts().items():
        if name == "mosaic_gpu.tmem_layout_cast":
            lines = [tmem_alloc("t0", _ACC), tmem_cast("t", "t0", _ACC, layout, OP)]
            pins = (Pin(OP, 0, layout),)
        elif name == "mosaic_gpu.tmem_alloc":
            lines = [tmem_alloc("t0", _ACC, OP), tmem_cast("t", "t0", _ACC, layout, "p0")]
            pins = (Pin(OP, 0, layout),)
        else:
            lines = [
                tmem_alloc("t0", _ACC),
                tmem_cast("t", "t0", _ACC, layout, "p0"),
                tag(f'"{name}"(%t) : ({tmem_ref(_ACC)}) -> ()'),
            ]
            pins = (Pin("p0", 0, layout),)
        candidates.append(Candidate(label, _tmem_kernel(lines), pins, BLACKWELL))
    return Cases(name, tuple(candidates))


@generator("mosaic_gpu.slice_tmem")
def slice_tmem(name: str) -> Cases:
    """A slice is its own ref: it takes the layout a cast gives it."""
    whole, part = "128x256xf32", _ACC
    candidates = []
    for label, layout in tmem_layouts().items():
        lines = [
            tmem_alloc("t0", whole),
            tag(
                f'%s = "{name}"(%t0) <{{offset = 128 : i32}}> : ({tmem_ref(whole)}) -> {tmem_ref(part)}'
            ),
            tmem_cast("t", "s", part, layout, "p0"),
        ]
        candidates.append(Candidate(label, _tmem_kernel(lines), (Pin(OP, 0, layout),), BLACKWELL))
    return Cases(name, tuple(candidates), restricted=False)


@generator("mosaic_gpu.tcgen05_mma")
def tcgen05_mma(name: str) -> Cases:
    """The accumulator in the MMA's TMEM layout; SMEM operands tiled for the MMA."""
    a, b = smem("128x64xf16"), smem("64x128xf16")
    options = {
        "A and B swizzled 128": (transforms((8, 64), 128), transforms((8, 64), 128)),
        "B untiled": (transforms((8, 64), 128), transforms(None, None)),
        "B swizzled 32": (transforms((8, 64), 128), transforms((8, 16), 32)),
    }
    candidates = []
    for acc_label, acc in tmem_layouts().items():
        for label, (a_given, b_given) in options.items():
            if acc_label != "TMEM default" and label != "A and B swizzled 128":
                continue
            lines = [
                '%p = "arith.constant"() <{value = true}> : () -> i1',
                tmem_alloc("acc0", _ACC),
                tmem_cast("acc", "acc0", _ACC, acc, "p0"),
                *pinned_ref("a", a, a_given, "p1"),
                *pinned_ref("b", b, b_given, "p2", offset=65536),
                tag(
                    f'"{name}"(%acc, %a, %b, %p) <{{collective = false, operandSegmentSizes = '
                    f"array<i32: 1, 1, 1, 1, 0, 0, 0>}}> : ({tmem_ref(_ACC)}, {a}, {b}, i1) -> ()"
                ),
            ]
            pins = (Pin("p0", 0, acc), Pin("p1", 0, a_given), Pin("p2", 0, b_given))
            candidates.append(
                Candidate(f"{acc_label}, {label}", _tmem_kernel(lines), pins, BLACKWELL)
            )
    return Cases(name, (*candidates, *_m64_mmas(name), *_mma_operand_kinds()))


def _m64_mmas(name: str) -> list[Candidate]:
    """M = 64 (not collective): N = 64 splits into two lane groups of 32 columns, and
    B's tile must not straddle them: at most 32 columns wide."""
    acc_ty, a, b = "64x64xf32", smem("64x64xf16"), smem("64x64xf16")
    options = {
        "M 64, B tile 8x64 swizzle 128": transforms((8, 64), 128),
        "M 64, B tile 8x32 swizzle 64": transforms((8, 32), 64),
    }
    candidates = []
    for label, b_given in options.items():
        lines = [
            '%p = "arith.constant"() <{value = true}> : () -> i1',
            tmem_alloc("acc", acc_ty),
            f'%a = "mosaic_gpu.slice_smem"() <{{offset = 0 : i32}}> : () -> {a}',
            *pinned_ref("b", b, b_given, "p0", offset=65536),
            tag(
                f'"{name}"(%acc, %a, %b, %p) <{{collective = false, operandSegmentSizes = '
                f"array<i32: 1, 1, 1, 1, 0, 0, 0>}}> : ({tmem_ref(acc_ty)}, {a}, {b}, i1) -> ()"
            ),
        ]
        candidates.append(
            Candidate(label, _tmem_kernel(lines), (Pin("p0", 0, b_given),), BLACKWELL)
        )
    return candidates


def _mma_operand_kinds() -> list[Candidate]:
    """MMAs solved and checked whole: A in TMEM (packed 16-bit), sparse A with its
    metadata in TMEM, block-scaled operands (and collective M = 64 scales of B)."""
    from blackwell_kit import alloc, mma_kernel

    meta = "128x128xi2"
    scales = ("128x8xf8E8M0FNU", "256x8xf8E8M0FNU")

    def scale_allocs(collective: bool = False) -> list[str]:
        return [
            alloc(n, t, collective=collective) for n, t in zip(("sa", "sb"), scales, strict=True)
        ]

    kernels = {
        "A in TMEM": mma_kernel("128x128xf32", "128x64xf16", "64x128xf16", a_in_tmem=True),
        "sparse A": mma_kernel(
            "128x32xi32", "128x128xi8", "256x32xi8", extra=[alloc("meta", meta)], sparse_meta=meta
        ),
        "scaled": mma_kernel(
            "128x256xf32",
            "128x256xf8E5M2",
            "256x256xf8E5M2",
            b_strides=[1, 256],
            extra=scale_allocs(),
            scales=scales,
        ),
        "scaled, collective M 64": mma_kernel(
            "64x192xf32",
            "64x256xf8E5M2",
            "256x96xf8E5M2",
            b_strides=[1, 256],
            collective=True,
            extra=scale_allocs(collective=True),
            scales=scales,
        ),
    }
    return [Candidate(label, text, (), BLACKWELL) for label, text in kernels.items()]


@generator(
    "mosaic_gpu.async_store_smem_to_tmem",
    "mosaic_gpu.async_store_sparse_metadata_smem_to_tmem",
    "mosaic_gpu.async_store_scales_smem_to_tmem",
)
def smem_to_tmem(name: str) -> Cases:
    """SMEM -> TMEM copies: an MMA tiling (or the 16-byte tile) for data, an untiled
    source for sparsity metadata and scales."""
    source, dest, options = {
        "mosaic_gpu.async_store_smem_to_tmem": (
            "128x64xf16",
            "128x64xf16",
            {
                "tile 8x64 swizzle 128": transforms((8, 64), 128),
                "tile 8x8": transforms((8, 8), None),
                "untiled": transforms(None, None),
            },
        ),
        "mosaic_gpu.async_store_sparse_metadata_smem_to_tmem": (
            "1x2x128x64xi2",
            "128x128xi2",
            {"untiled": transforms(None, None), "tile 64": transforms((64,), None)},
        ),
        "mosaic_gpu.async_store_scales_smem_to_tmem": (
            "1x2x32x16xf8E8M0FNU",
            "128x8xf8E8M0FNU",
            {"untiled": transforms(None, None), "tile 16": transforms((16,), None)},
        ),
    }[name]
    kinds = [(source, dest, "")]
    if name == "mosaic_gpu.async_store_scales_smem_to_tmem":
        # B scales of a collective M = 64 MMA: 64-row blocks, their own TMEM layout.
        kinds.append(("1x2x64x16xf8E8M0FNU", "256x8xf8E8M0FNU", "collective M 64 B scales, "))
    candidates = []
    for source, dest, prefix in kinds:
        source_ty = smem(source)
        for label, given in options.items():
            lines = [
                tmem_alloc("t", dest),
                *pinned_ref("s", source_ty, given, "p0"),
                tag(
                    f'"{name}"(%s, %t) <{{collective = false}}> '
                    f": ({source_ty}, {tmem_ref(dest)}) -> ()"
                ),
            ]
            candidates.append(
                Candidate(prefix + label, _tmem_kernel(lines), (Pin("p0", 0, given),), BLACKWELL)
            )
    return Cases(name, tuple(candidates))
