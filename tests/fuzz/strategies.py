"""Hypothesis strategies for random, well-typed Mosaic GPU modules, as MLIR text.

A module is one function whose body is a random program over register values
and SMEM refs: splat and dense constants, iotas, pointwise chains, casts and
comparisons, loads and stores through SMEM refs (sliced, windowed, transposed,
with or without explicit transforms in every form jax 0.12 reads: ``[]``,
``[tile]``, ``[tile, swizzle]``, ``[swizzle]``, valid or not for the ref),
wgmma, Ampere ``mma``, reductions, broadcasts, reshapes, slices,
concatenations, layout casts (strict or not, some contradicting each other on
purpose), TMEM loads (with or without a fused row reduction) on Blackwell, and
``scf.for`` / ``scf.while`` / ``scf.index_switch`` carrying vectors. Every
module parses and verifies with jaxlib 0.12.0.1 (ops are written in generic
form); whether its layouts can be inferred is what the fuzz tests ask.

Shapes come from a small menu so that ops can be chained, with a few odd ones
that no tiled layout fits.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

from hypothesis import strategies as st

SMEM = "#gpu.address_space<workgroup>"

FLOATS = ("f32", "f16", "bf16")
INTS = ("i32", "i16", "i8")
# Sub-byte element types: no SMEM transfer or pointwise lowering cares for
# them much, but they take the strided default (jax 0.12 gives them one).
SUB_BYTE = ("i4", "i1")
SHAPES_2D = ((64, 128), (128, 128), (128, 64), (64, 64), (256, 128), (128, 256))
SHAPES_1D = ((64,), (128,), (256,))
ODD_SHAPES = ((8, 128), (32, 32), (16,), (2, 128, 64), (1, 128))
BITS = {"f32": 32, "f16": 16, "bf16": 16, "i32": 32, "i16": 16, "i8": 8, "i4": 4, "i1": 1}

WGMMA = (
    "#mosaic_gpu.TiledLayout<[[64, 8], [16, 8], [8, 8], [2]], warp_dims = [-7], "
    "lane_dims = [-3, -2], vector_dim = -1>"
)
WGMMA_TRANSPOSED = (
    "#mosaic_gpu.TiledLayout<[[64, 8], [16, 8], [8, 8], [2, 2], [2, 1]], warp_dims = [-10], "
    "lane_dims = [-6, -3, -5], vector_dim = -2>"
)
WGMMA_ROW = (
    "#mosaic_gpu.TiledLayout<[[64], [16], [8], [1]], warp_dims = [-4], "
    "lane_dims = [-2, #mosaic_gpu.Replicated<times = 4>], vector_dim = -1>"
)
WGMMA_COL = (
    "#mosaic_gpu.TiledLayout<[[8], [2]], warp_dims = [#mosaic_gpu.Replicated<times = 4>], "
    "lane_dims = [#mosaic_gpu.Replicated<times = 8>, -2], vector_dim = -1>"
)
TCGEN05 = (
    "#mosaic_gpu.TiledLayout<[[128, 8], [32, 8], [8, 8], [2]], warp_dims = [-7], "
    "lane_dims = [-3, -2], vector_dim = -1>"
)
# The layouts of TMA gather/scatter row indices (jax 0.12: either, where the
# row count allows it).
TMA_INDICES = (
    "#mosaic_gpu.TiledLayout<[[16], [4]], warp_dims = [-2], "
    "lane_dims = [#mosaic_gpu.Replicated<times = 32>], vector_dim = -1>"
)
TMA_INDICES_4 = (
    "#mosaic_gpu.TiledLayout<[[4]], warp_dims = [#mosaic_gpu.Replicated<times = 4>], "
    "lane_dims = [#mosaic_gpu.Replicated<times = 32>], vector_dim = -1>"
)
TCGEN05_ROW = (
    "#mosaic_gpu.TiledLayout<[[128], [32], [8], [1]], warp_dims = [-4], "
    "lane_dims = [-2, #mosaic_gpu.Replicated<times = 4>], vector_dim = -1>"
)


ALLOC = "<{collective = false, packing = 1 : i32}>"
# Where a reduction across warps keeps its partial results, as Pallas sets it.
SCRATCH = "{offset = 0 : i32, scratch_size = 2048 : i32}"


@dataclass(frozen=True)
class VType:
    shape: tuple[int, ...]
    elt: str

    def __str__(self) -> str:
        return f"vector<{'x'.join(map(str, self.shape))}x{self.elt}>"

    @property
    def is_float(self) -> bool:
        return self.elt in FLOATS

    @property
    def is_int(self) -> bool:
        return self.elt in INTS or self.elt == "i4"

    @property
    def rank(self) -> int:
        return len(self.shape)


@dataclass(frozen=True)
class Ref:
    """An SMEM ref: ``type`` is its full MLIR type."""

    name: str
    shape: tuple[int, ...]
    elt: str
    type: str


@dataclass
class Scope:
    """Values visible at a point: vectors by type, refs, and the scope outside."""

    vectors: dict[VType, list[str]] = field(default_factory=dict)
    refs: list[Ref] = field(default_factory=list)
    parent: Scope | None = None

    def all_vectors(self) -> dict[VType, list[str]]:
        out = self.parent.all_vectors() if self.parent is not None else {}
        for ty, names in self.vectors.items():
            out.setdefault(ty, []).extend(names)
        return out

    def all_refs(self) -> list[Ref]:
        return (self.parent.all_refs() if self.parent is not None else []) + self.refs


@dataclass(frozen=True)
class FuzzModule:
    """A generated module: its text and the arch to infer it for."""

    text: str
    arch: tuple[int, int]

    def __repr__(self) -> str:  # shown by hypothesis on failure
        return f"FuzzModule(arch={self.arch}, text=\n{self.text})"


def smem_type(shape: tuple[int, ...], elt: str, strides: tuple[int, ...] | None = None) -> str:
    dims = "x".join(map(str, shape))
    layout = ""
    if strides is not None:
        layout = f", strided<[{', '.join(map(str, strides))}], offset: ?>"
    return f"memref<{dims}x{elt}{layout}, {SMEM}>"


def _contiguous(shape: tuple[int, ...]) -> tuple[int, ...]:
    strides, running = [], 1
    for d in reversed(shape):
        strides.append(running)
        running *= d
    return tuple(reversed(strides))


# The outermost tile of each named tiled layout: a layout fits a shape whose
# trailing dims it divides.
_FIRST_TILE = {
    WGMMA: (64, 8), WGMMA_TRANSPOSED: (64, 8), TCGEN05: (128, 8),
    WGMMA_ROW: (64,), WGMMA_COL: (8,), TCGEN05_ROW: (128,),
}  # fmt: skip


def tiled_layouts(shape: tuple[int, ...], *, fitting: bool = True) -> list[str]:
    """Tiled register layouts for a vector of this shape (casts name them).

    ``fitting``: only those whose tile divides the shape (others make JAX's
    ``layout_cast`` rule fail at once, which a few modules should test).
    """
    rank = len(shape)
    named = (
        [WGMMA, WGMMA, WGMMA_TRANSPOSED, TCGEN05]
        if rank >= 2
        else [WGMMA_ROW, WGMMA_COL, TCGEN05_ROW]
    )
    if not fitting:
        return named
    return [layout for layout in named if _tiles(_FIRST_TILE[layout], shape)]


def _tiles(tile: tuple[int, ...], shape: tuple[int, ...]) -> bool:
    """Whether ``tile`` divides the trailing dims of ``shape``."""
    if len(tile) > len(shape):
        return False
    return all(d % t == 0 for d, t in zip(shape[len(shape) - len(tile) :], tile, strict=True))


def _swizzle(bytes_: int) -> str:
    return f"#mosaic_gpu.swizzle<{bytes_} : i32>"


def _splat_literal(elt: str) -> str:
    if elt == "i1":
        return "true"
    return "1.000000e+00" if elt in FLOATS else "1"


class Builder:
    """Emits ops line by line, drawing every choice from hypothesis."""

    def __init__(self, draw: st.DrawFn, arch: tuple[int, int]) -> None:
        self.draw = draw
        self.arch = arch
        self.lines: list[str] = []
        self.counter = 0
        self.offset = 0
        self.indent = 1
        self.scope = Scope()
        self.depth = 0
        self.args: list[str] = []  # the kernel's GMEM refs, by type
        self.alias_ids: dict[int, str] = {}  # alias id -> the type of its first slice

    # --- plumbing ---------------------------------------------------------------

    def fresh(self, prefix: str = "v") -> str:
        self.counter += 1
        return f"%{prefix}{self.counter}"

    def emit(self, line: str) -> None:
        self.lines.append("  " * self.indent + line)

    def define(self, name: str, ty: VType) -> str:
        self.scope.vectors.setdefault(ty, []).append(name)
        return name

    def choose(self, options: list | tuple) -> object:
        return self.draw(st.sampled_from(list(options)))

    def flip(self, p: float = 0.5) -> bool:
        return self.draw(st.floats(0, 1)) < p

    def index(self, value: int) -> str:
        name = self.fresh("c")
        self.emit(f'{name} = "arith.constant"() <{{value = {value} : index}}> : () -> index')
        return name

    # --- picking values -------------------------------------------------------------

    def any_type(self) -> VType:
        pool = self.scope.all_vectors()
        if pool and self.flip(0.8):
            return self.choose(sorted(pool, key=str))  # type: ignore[return-value]
        return self.new_type()

    def new_type(self, shapes: tuple[tuple[int, ...], ...] | None = None) -> VType:
        if shapes is None:
            shapes = SHAPES_2D + SHAPES_1D + (ODD_SHAPES if self.flip(0.15) else ())
        shape = self.choose(shapes)
        if self.flip(0.06):
            elt = self.choose(SUB_BYTE)
        else:
            elt = self.choose(FLOATS + INTS if self.flip(0.3) else ("f32", "f16"))
        return VType(shape, elt)  # type: ignore[arg-type]

    def vector(self, ty: VType) -> str:
        """A value of type ``ty``: an existing one, or a fresh source."""
        pool = self.scope.all_vectors().get(ty, [])
        if pool and self.flip(0.75):
            return self.choose(pool)  # type: ignore[return-value]
        return self.source(ty)

    def source(self, ty: VType) -> str:
        kinds = ["splat", "splat", "broadcast", "load"]
        if ty.is_int and ty.elt == "i32":
            kinds.append("iota")
        if len(ty.shape) == 1 and math.prod(ty.shape) <= 256:
            kinds.append("dense")
        if ty.elt == "i1":
            kinds = ["splat"]
        kind = self.choose(kinds)
        name = self.fresh()
        if kind == "splat":
            literal = _splat_literal(ty.elt)
            self.emit(
                f'{name} = "arith.constant"() <{{value = dense<{literal}> : {ty}}}> : () -> {ty}'
            )
        elif kind == "dense":
            values = ", ".join(
                str(i % 7) + (".0" if ty.is_float else "") for i in range(ty.shape[0])
            )
            self.emit(
                f'{name} = "arith.constant"() <{{value = dense<[{values}]> : {ty}}}> : () -> {ty}'
            )
        elif kind == "iota":
            dim = self.draw(st.integers(0, len(ty.shape) - 1))
            self.emit(
                f'{name} = "mosaic_gpu.broadcasted_iota"() <{{dimension = {dim} : i32}}> : '
                f"() -> {ty}"
            )
        elif kind == "broadcast":
            scalar = self.fresh("s")
            literal = "2.000000e+00" if ty.is_float else "2"
            self.emit(
                f'{scalar} = "arith.constant"() <{{value = {literal} : {ty.elt}}}> : () -> {ty.elt}'
            )
            self.emit(f'{name} = "vector.broadcast"({scalar}) : ({ty.elt}) -> {ty}')
        else:
            ref = self.ref(ty.shape, ty.elt)
            self.emit(
                f'{name} = "mosaic_gpu.vector_load"({ref.name}){self.optimized()} : '
                f"({ref.type}) -> {ty}"
            )
        return self.define(name, ty)

    def optimized(self) -> str:
        choice = self.choose(["", "", " <{optimized = true}>", " <{optimized = false}>"])
        return choice  # type: ignore[return-value]

    # --- SMEM refs ----------------------------------------------------------------------

    def ref(self, shape: tuple[int, ...], elt: str, *, reuse: bool = True) -> Ref:
        existing = [r for r in self.scope.all_refs() if r.shape == shape and r.elt == elt]
        if reuse and existing and self.flip(0.3):
            return self.choose(existing)  # type: ignore[return-value]
        kind = self.choose(["slice", "slice", "window", "transforms", "transpose"])
        if kind == "window":
            base_shape = (2, *shape)
            base = self.slice(base_shape, elt)
            which = self.index(self.draw(st.integers(0, 1)))
            rank = len(base_shape)
            offsets = ", ".join(["-9223372036854775808"] + ["0"] * (rank - 1))
            sizes = ", ".join(["1", *map(str, shape)])
            ones = ", ".join(["1"] * rank)
            ty = smem_type(shape, elt, _contiguous(shape))
            name = self.fresh("r")
            self.emit(
                f'{name} = "memref.subview"({base.name}, {which}) <{{operandSegmentSizes = '
                f"array<i32: 1, 1, 0, 0>, static_offsets = array<i64: {offsets}>, "
                f"static_sizes = array<i64: {sizes}>, static_strides = array<i64: {ones}>}}> : "
                f"({base.type}, index) -> {ty}"
            )
            ref = Ref(name, shape, elt, ty)
        elif kind == "transforms":
            ref = self.slice(shape, elt)
            transforms = self.transforms(shape, elt)
            if transforms is not None:
                ref = self.with_transforms(ref, transforms)
        elif kind == "transpose" and len(shape) == 2:
            base = self.slice((shape[1], shape[0]), elt)
            ty = f"memref<{shape[0]}x{shape[1]}x{elt}, strided<[1, {shape[0]}]>, {SMEM}>"
            name = self.fresh("r")
            self.emit(
                f'{name} = "memref.transpose"({base.name}) <{{permutation = '
                f"affine_map<(d0, d1) -> (d1, d0)>}}> : ({base.type}) -> {ty}"
            )
            ref = Ref(name, shape, elt, ty)
        else:
            ref = self.slice(shape, elt)
        self.scope.refs.append(ref)
        return ref

    def slice(self, shape: tuple[int, ...], elt: str) -> Ref:
        name = self.fresh("r")
        ty = smem_type(shape, elt)
        alias = ""
        if self.flip(0.12):
            # jax 0.12 keys aliased slices by alias_id alone: slices with one id
            # share their transforms whatever the offset. They must have one
            # shape (else JAX fails at once), so an id is kept to one type.
            ids = [i for i, t in self.alias_ids.items() if t == ty]
            if not ids or self.flip(0.3):
                ids = [len(self.alias_ids) + 1]
                self.alias_ids[ids[0]] = ty
            alias = f"alias_id = {self.choose(ids)} : i64, "
        self.emit(
            f'{name} = "mosaic_gpu.slice_smem"() <{{{alias}offset = {self.offset} : i32}}> : '
            f"() -> {ty}"
        )
        self.offset += 65536
        return Ref(name, shape, elt, ty)

    def transforms(self, shape: tuple[int, ...], elt: str) -> str | None:
        """A transforms attribute for a ref (None: no ``with_transforms``).

        Every form jax 0.12 reads: ``[]``, ``[tile]`` (unswizzled),
        ``[tile, swizzle]`` with a swizzle that matches the minor tile width,
        divides it (a tile row of several swizzle widths) or does not (an
        invalid ref), ``swizzle<16>`` (read as none) and ``[swizzle]`` alone.
        """
        bits = BITS[elt]
        form = self.choose(["none", "empty", "tile", "tile+swizzle", "tile+swizzle", "swizzle"])
        if form == "none":
            return None
        if form == "empty":
            return "[]"
        if form == "swizzle":
            return f"[{_swizzle(self.choose((128, 64, 32)))}]"
        tilings: list[tuple[int, ...]] = [(shape[-1],)]
        if len(shape) >= 2:
            tilings += [(8, width * 8 // bits) for width in (128, 64, 32, 16, 256)]
            tilings.append((64, 8))
        tiling = self.choose(tilings)
        tile = f"#mosaic_gpu.tile<[{', '.join(map(str, tiling))}]>"  # type: ignore[arg-type]
        if form == "tile":
            return f"[{tile}]"
        minor_bytes = tiling[-1] * bits // 8  # type: ignore[index]
        matching = minor_bytes if minor_bytes in (32, 64, 128) else 16
        swizzle = matching if self.flip(0.6) else self.choose((16, 32, 64, 128))
        return f"[{tile}, {_swizzle(swizzle)}]"  # type: ignore[arg-type]

    def with_transforms(self, ref: Ref, transforms: str) -> Ref:
        name = self.fresh("r")
        self.emit(
            f'{name} = "mosaic_gpu.with_transforms"({ref.name}) <{{transforms = {transforms}}}> : '
            f"({ref.type}) -> {ref.type}"
        )
        return Ref(name, ref.shape, ref.elt, ref.type)

    # --- ops ------------------------------------------------------------------------------

    def op(self) -> None:
        kinds = [
            "binary", "binary", "unary", "convert", "select", "store", "reduce",
            "reduction", "bcast", "shape_cast", "slice", "layout_cast", "barrier",
            "wgmma", "source", "concat", "mma",
        ]  # fmt: skip
        if self.depth < 2:
            kinds += ["for", "while", "switch"]
        if self.arch >= (10, 0):
            kinds += ["tmem", "tmem"]
        if self.flip(0.3):
            kinds.append("tma")
        getattr(self, f"op_{self.choose(kinds)}")()

    def op_source(self) -> None:
        self.source(self.new_type())

    def op_binary(self) -> None:
        ty = self.any_type()
        if ty.elt == "i1":
            ty = VType(ty.shape, "f32")
        a, b = self.vector(ty), self.vector(ty)
        names = ["arith.addf", "arith.mulf", "arith.subf", "arith.maximumf"]
        if ty.is_int:
            names = ["arith.addi", "arith.muli", "arith.andi", "arith.maxsi"]
        name = self.fresh()
        self.emit(f'{name} = "{self.choose(names)}"({a}, {b}) : ({ty}, {ty}) -> {ty}')
        self.define(name, ty)

    def op_unary(self) -> None:
        ty = self.any_type()
        if not ty.is_float:
            ty = VType(ty.shape, "f32")
        a = self.vector(ty)
        name = self.fresh()
        unary = self.choose(
            ["math.exp", "math.tanh", "math.absf", "arith.negf", "math.log2", "math.sqrt"]
        )
        self.emit(f'{name} = "{unary}"({a}) : ({ty}) -> {ty}')
        self.define(name, ty)

    def op_convert(self) -> None:
        ty = self.any_type()
        shape = ty.shape
        pairs = [
            ("f32", "f16", "arith.truncf"), ("f32", "bf16", "arith.truncf"),
            ("f16", "f32", "arith.extf"), ("bf16", "f32", "arith.extf"),
            ("i32", "f32", "arith.sitofp"), ("f32", "i32", "arith.fptosi"),
            ("i32", "i16", "arith.trunci"), ("i16", "i32", "arith.extsi"),
            ("i8", "i32", "arith.extsi"), ("f16", "i8", "arith.fptosi"),
            ("i4", "i32", "arith.extsi"), ("i32", "i4", "arith.trunci"),
            ("i4", "i8", "arith.extsi"), ("i8", "i4", "arith.trunci"),
            ("i1", "i32", "arith.extui"), ("i1", "i8", "arith.extui"),
        ]  # fmt: skip
        src_elt, dst_elt, op = self.choose(pairs)  # type: ignore[misc]
        src, dst = VType(shape, src_elt), VType(shape, dst_elt)
        a = self.vector(src)
        name = self.fresh()
        self.emit(f'{name} = "{op}"({a}) : ({src}) -> {dst}')
        self.define(name, dst)

    def op_select(self) -> None:
        ty = self.any_type()
        if not ty.is_float:
            ty = VType(ty.shape, "f32")
        a, b = self.vector(ty), self.vector(ty)
        mask_ty = VType(ty.shape, "i1")
        mask = self.fresh()
        self.emit(
            f'{mask} = "arith.cmpf"({a}, {b}) <{{predicate = 2 : i64}}> : ({ty}, {ty}) -> {mask_ty}'
        )
        self.define(mask, mask_ty)
        name = self.fresh()
        self.emit(f'{name} = "arith.select"({mask}, {a}, {b}) : ({mask_ty}, {ty}, {ty}) -> {ty}')
        self.define(name, ty)

    def op_store(self) -> None:
        ty = self.any_type()
        if ty.elt == "i1":
            return
        value = self.vector(ty)
        ref = self.ref(ty.shape, ty.elt)
        if self.flip(0.15) and len(ty.shape) == 2:
            barrier_ty = f"memref<!mosaic_gpu.barrier, {SMEM}>"
            barrier = self.fresh("b")
            self.emit(
                f'{barrier} = "mosaic_gpu.slice_smem"() <{{offset = {self.offset} : i32}}> : '
                f"() -> {barrier_ty}"
            )
            self.offset += 65536
            slot = self.fresh("s")
            self.emit(f'{slot} = "arith.constant"() <{{value = 0 : i32}}> : () -> i32')
            # Unset means optimized since jax 0.12 (was: downgradable).
            optimized = self.choose(("", ", optimized = true", ", optimized = false"))
            self.emit(
                f'"mosaic_gpu.async_store_smem"({value}, {ref.name}, {barrier}, {slot}) '
                f"<{{cluster_dim = 0 : i32{optimized}}}> : "
                f"({ty}, {ref.type}, {barrier_ty}, i32) -> ()"
            )
            return
        self.emit(
            f'"mosaic_gpu.vector_store"({value}, {ref.name}){self.optimized()} : '
            f"({ty}, {ref.type}) -> ()"
        )

    def op_reduce(self) -> None:
        shape = self.choose(SHAPES_2D)
        ty = VType(shape, "f32")  # type: ignore[arg-type]
        source = self.vector(ty)
        dim = self.draw(st.integers(0, 1))
        out = VType((shape[1 - dim],), "f32")  # type: ignore[index]
        acc = self.vector(out)
        name = self.fresh()
        kind = self.choose(["add", "maximumf"])
        self.emit(
            f'{name} = "vector.multi_reduction"({source}, {acc}) <{{kind = #vector.kind<{kind}>, '
            f"reduction_dims = array<i64: {dim}>}}> {SCRATCH} : ({ty}, {out}) -> {out}"
        )
        self.define(name, out)

    def op_reduction(self) -> None:
        ty = VType(self.choose(SHAPES_1D), "f32")  # type: ignore[arg-type]
        source = self.vector(ty)
        scalar = self.fresh("s")
        self.emit(
            f'{scalar} = "vector.reduction"({source}) <{{kind = #vector.kind<add>}}> {SCRATCH} : '
            f"({ty}) -> f32"
        )
        if self.flip():
            out = VType(self.choose(SHAPES_2D + SHAPES_1D), "f32")  # type: ignore[arg-type]
            name = self.fresh()
            self.emit(f'{name} = "vector.broadcast"({scalar}) : (f32) -> {out}')
            self.define(name, out)

    def op_bcast(self) -> None:
        shape = self.choose(SHAPES_2D)
        dim = self.draw(st.integers(0, 2))
        if dim == 2:  # size-1 dim grown
            src, dims = VType((1, shape[1]), "f32"), "0, 1"  # type: ignore[index]
        else:
            src, dims = VType((shape[dim],), "f32"), str(dim)  # type: ignore[index]
        value = self.vector(src)
        out = VType(shape, "f32")  # type: ignore[arg-type]
        name = self.fresh()
        self.emit(
            f'{name} = "mosaic_gpu.broadcast_in_dim"({value}) <{{broadcast_dimensions = '
            f"array<i64: {dims}>}}> : ({src}) -> {out}"
        )
        self.define(name, out)

    def op_shape_cast(self) -> None:
        m, n = self.choose(SHAPES_2D)  # type: ignore[misc]
        elt = self.choose(("f32", "f16"))
        forms = [(m * n,), (2, m // 2, n), (m, n // 2, 2), (1, m, n)]
        a, b = VType((m, n), elt), VType(self.choose(forms), elt)  # type: ignore[arg-type]
        if self.flip():
            a, b = b, a
        value = self.vector(a)
        name = self.fresh()
        self.emit(f'{name} = "vector.shape_cast"({value}) : ({a}) -> {b}')
        self.define(name, b)

    def op_slice(self) -> None:
        m, n = self.choose(SHAPES_2D)  # type: ignore[misc]
        ty = VType((m, n), self.choose(("f32", "f16")))  # type: ignore[arg-type]
        value = self.vector(ty)
        if self.flip():
            sizes, offsets = (m // 2, n), (self.choose((0, m // 2)), 0)
        else:
            sizes, offsets = (m, n // 2), (0, self.choose((0, n // 2, 8)))
        if offsets[1] == 8:
            sizes = (m, 8)
        out = VType(sizes, ty.elt)  # type: ignore[arg-type]
        name = self.fresh()
        self.emit(
            f'{name} = "vector.extract_strided_slice"({value}) <{{offsets = [{offsets[0]}, '
            f"{offsets[1]}], sizes = [{sizes[0]}, {sizes[1]}], strides = [1, 1]}}> : "
            f"({ty}) -> {out}"
        )
        self.define(name, out)

    def op_layout_cast(self) -> None:
        ty = self.any_type()
        value = self.vector(ty)
        options = []  # the verifier takes no splat layout here
        for vec in (1, 2, 4):
            options.append(
                f"#mosaic_gpu.WGStridedFragLayout<[{', '.join(map(str, ty.shape))}], {vec}>"
            )
        options += tiled_layouts(ty.shape, fitting=self.flip(0.9)) * 2
        name = self.cast(value, ty, self.choose(options))  # type: ignore[arg-type]
        self.define(name, ty)

    def cast(self, value: str, ty: VType, layout: str) -> str:
        """A ``layout_cast`` of ``value`` to ``layout``: strict (jax 0.12) or not."""
        strict = self.choose(["", "", ", strict = true", ", strict = false"])
        name = self.fresh()
        self.emit(
            f'{name} = "mosaic_gpu.layout_cast"({value}) '
            f"<{{new_layout = {layout}{strict}}}> : ({ty}) -> {ty}"
        )
        return name

    def op_concat(self) -> None:
        """``vector_concat``: JAX's rule needs a tiled layout from elsewhere, so mostly a cast."""
        rank = 2 if self.flip(0.8) else 1
        shape: tuple[int, ...] = self.choose(SHAPES_2D if rank == 2 else SHAPES_1D)  # type: ignore[assignment]
        elt: str = self.choose(("f32", "f32", "f16", "bf16", "i32"))  # type: ignore[assignment]
        dim = self.draw(st.integers(0, rank - 1))
        whole = shape[dim]
        splits = [(whole // 2,) * 2, (whole // 4,) * 4, (whole // 4, 3 * whole // 4)]
        if whole >= 128:
            splits.append((whole - 8, 8))  # a piece thinner than any tile
        sizes: tuple[int, ...] = self.choose(splits)  # type: ignore[assignment]
        parts = []
        for size in sizes:
            part_ty = VType(shape[:dim] + (size,) + shape[dim + 1 :], elt)
            part = self.vector(part_ty)
            if self.flip(0.15):
                layouts = tiled_layouts(part_ty.shape, fitting=self.flip(0.9))
                if layouts:
                    part = self.cast(part, part_ty, self.choose(layouts))  # type: ignore[arg-type]
            parts.append((part, part_ty))
        out = VType(shape, elt)
        name = self.fresh()
        self.emit(
            f'{name} = "mosaic_gpu.vector_concat"({", ".join(n for n, _ in parts)}) '
            f"<{{dimension = {dim} : i32}}> : "
            f"({', '.join(str(t) for _, t in parts)}) -> {out}"
        )
        layouts = tiled_layouts(shape)
        if layouts and self.flip(0.7):
            name = self.cast(name, out, self.choose(layouts))  # type: ignore[arg-type]
        self.define(name, out)

    def op_barrier(self) -> None:
        ty = self.any_type()
        value = self.vector(ty)
        name = self.fresh()
        self.emit(f'{name} = "mosaic_gpu.optimization_barrier"({value}) : ({ty}) -> {ty}')
        self.define(name, ty)

    def op_wgmma(self) -> None:
        m = self.choose((64, 128))
        n = self.choose((64, 128))
        elt = self.choose(("f16", "bf16"))
        k = 64
        acc_ty = VType((m, n), "f32")  # type: ignore[arg-type]
        acc = self.vector(acc_ty)
        if self.flip(0.3):
            a_ty = VType((m, k), elt)  # type: ignore[arg-type]
            a, a_type = self.vector(a_ty), str(a_ty)
        else:
            a_ref = self.ref((m, k), elt)  # type: ignore[arg-type]
            a, a_type = a_ref.name, a_ref.type
        b_ref = self.ref((k, n), elt)  # type: ignore[arg-type]
        name = self.fresh()
        self.emit(
            f'{name} = "mosaic_gpu.wgmma"({acc}, {a}, {b_ref.name}) : '
            f"({acc_ty}, {a_type}, {b_ref.type}) -> {acc_ty}"
        )
        self.define(name, acc_ty)

    def op_mma(self) -> None:
        """Ampere ``mma``: jax 0.12 picks 4, 2 or 1 warps along M from the accumulator shape."""
        m = self.choose((16, 32, 64, 128))
        n = self.choose((8, 16, 32, 64, 64))  # (16, 8) and (16, 16) fit no warp split
        elt = self.choose(("f16", "f16", "bf16"))
        k = self.choose((16, 32))
        acc_ty = VType((m, n), "f32")  # type: ignore[arg-type]
        a_ty = VType((m, k), elt)  # type: ignore[arg-type]
        b_ty = VType((k, n), elt)  # type: ignore[arg-type]
        acc, a, b = self.vector(acc_ty), self.vector(a_ty), self.vector(b_ty)
        name = self.fresh()
        self.emit(
            f'{name} = "mosaic_gpu.mma"({acc}, {a}, {b}) : ({acc_ty}, {a_ty}, {b_ty}) -> {acc_ty}'
        )
        self.define(name, acc_ty)

    def op_tmem(self) -> None:
        """A TMEM allocation, written from and read into registers and/or by tcgen05_mma."""
        n = self.choose((64, 128, 256))
        tmem = f"memref<128x{n}xf32, #mosaic_gpu.tmem>"
        addr_ty = f"memref<i32, {SMEM}>"
        addr, ref = self.fresh("r"), self.fresh("t")
        self.emit(
            f'{addr} = "mosaic_gpu.slice_smem"() <{{offset = {self.offset} : i32}}> : '
            f"() -> {addr_ty}"
        )
        self.offset += 65536
        if self.flip(0.2):
            # A sub-range of a wider allocation, as kernels slice their TMEM.
            wide, whole = self.fresh("t"), "memref<128x512xf32, #mosaic_gpu.tmem>"
            self.emit(f'{wide} = "mosaic_gpu.tmem_alloc"({addr}) {ALLOC} : ({addr_ty}) -> {whole}')
            offset = self.choose((0, 128, 256))
            self.emit(
                f'{ref} = "mosaic_gpu.slice_tmem"({wide}) <{{offset = {offset} : i32}}> : '
                f"({whole}) -> {tmem}"
            )
        else:
            self.emit(f'{ref} = "mosaic_gpu.tmem_alloc"({addr}) {ALLOC} : ({addr_ty}) -> {tmem}')
        ty = VType((128, n), "f32")
        steps = self.draw(
            st.lists(st.sampled_from(["store", "mma", "load"]), min_size=1, max_size=3)
        )
        for step in steps:
            if step == "store":
                value = self.vector(ty)
                self.emit(f'"mosaic_gpu.async_store_tmem"({value}, {ref}) : ({ty}, {tmem}) -> ()')
            elif step == "mma":
                elt = self.choose(("f16", "bf16"))
                a = self.ref((128, 64), elt)
                b = self.ref((64, n), elt)
                flag = self.fresh("f")
                self.emit(f'{flag} = "arith.constant"() <{{value = false}}> : () -> i1')
                self.emit(
                    f'"mosaic_gpu.tcgen05_mma"({ref}, {a.name}, {b.name}, {flag}) '
                    "<{collective = false, "
                    "operandSegmentSizes = array<i32: 1, 1, 1, 1, 0, 0, 0>}> : "
                    f"({tmem}, {a.type}, {b.type}, i1) -> ()"
                )
            elif self.flip(0.6):
                name = self.fresh()
                self.emit(f'{name} = "mosaic_gpu.async_load_tmem"({ref}) : ({tmem}) -> {ty}')
                self.define(name, ty)
            else:
                # A load with a fused row reduction (jax 0.12): a second result.
                name, row = self.fresh("l"), VType((128,), "f32")
                kind = self.draw(st.integers(0, 3))  # min, max, absmin, absmax
                self.emit(
                    f'{name}:2 = "mosaic_gpu.async_load_tmem"({ref}) <{{reduce = {kind} : i32}}> : '
                    f"({tmem}) -> ({ty}, {row})"
                )
                self.define(f"{name}#0", ty)
                self.define(f"{name}#1", row)

    def gmem(self, elt: str) -> tuple[str, str]:
        """A GMEM ref argument of the kernel (name, type)."""
        ty = f"memref<1024x1024x{elt}>"
        self.args.append(ty)
        return f"%arg{len(self.args) - 1}", ty

    def op_tma(self) -> None:
        """A TMA copy between GMEM and SMEM, sometimes gathering (or scattering) rows.

        A gather's row indices are a vector whose layout jax 0.12 picks among
        TMA_INDICES (rows a multiple of 16) and TMA_INDICES_4 (of 4); a cast
        may fix either, or something else.
        """
        elt = self.choose(("f16", "bf16", "f32"))
        gather = self.flip(0.5)
        rows = self.choose((16, 32, 64, 4, 8, 12, 6) if gather else (64, 128))
        cols = self.choose((64, 128))
        ref = self.ref((rows, cols), elt)  # type: ignore[arg-type]
        gmem, gmem_ty = self.gmem(elt)  # type: ignore[arg-type]
        indices, types = [], []
        if gather:
            index_ty = VType((rows,), "i32")  # type: ignore[arg-type]
            index = self.vector(index_ty)
            fitting = [TMA_INDICES] * (rows % 16 == 0) + [TMA_INDICES_4] * (rows % 4 == 0)
            if self.flip(0.1) or not fitting:
                fitting = [TMA_INDICES, TMA_INDICES_4, WGMMA_ROW]
            if self.flip(0.5):
                index = self.cast(index, index_ty, self.choose(fitting))  # type: ignore[arg-type]
            indices.append(index)
            types.append(str(index_ty))
        for _ in range(2 - len(indices)):
            name = self.fresh("i")
            value = self.choose((0, 64, 8))
            self.emit(f'{name} = "arith.constant"() <{{value = {value} : i32}}> : () -> i32')
            indices.append(name)
            types.append("i32")
        lengths = f"slice_lengths = array<i64: {rows}, {cols}>"
        if self.flip(0.7):
            barrier_ty = f"memref<!mosaic_gpu.barrier, {SMEM}>"
            barrier = self.fresh("b")
            self.emit(
                f'{barrier} = "mosaic_gpu.slice_smem"() <{{offset = {self.offset} : i32}}> : '
                f"() -> {barrier_ty}"
            )
            self.offset += 65536
            self.emit(
                f'"mosaic_gpu.async_load"({gmem}, {ref.name}, {barrier}, {", ".join(indices)}) '
                f"<{{collective = [], operandSegmentSizes = array<i32: 1, 1, 1, 2, 0, 0>, "
                f"{lengths}}}> : ({gmem_ty}, {ref.type}, {barrier_ty}, {', '.join(types)}) -> ()"
            )
        else:
            self.emit(
                f'"mosaic_gpu.async_store"({ref.name}, {gmem}, {", ".join(indices)}) '
                f"<{{operandSegmentSizes = array<i32: 1, 1, 2, 0, 0>, {lengths}}}> : "
                f"({ref.type}, {gmem_ty}, {', '.join(types)}) -> ()"
            )

    # --- control flow ---------------------------------------------------------------------

    def region(
        self,
        args: list[tuple[str, VType | str]],
        yields: list[VType],
        terminator: str,
    ) -> None:
        """A block with ``args``, a few random ops, then ``terminator`` yielding ``yields``."""
        outer = self.scope
        self.scope = Scope(parent=outer)
        self.depth += 1
        if args:
            params = ", ".join(f"{n}: {t}" for n, t in args)
            self.emit(f"^bb0({params}):")
        self.indent += 1
        for n, t in args:
            if isinstance(t, VType):
                self.define(n, t)
        for _ in range(self.draw(st.integers(0, 3))):
            self.op()
        results = [self.vector(t) for t in yields]
        types = ", ".join(map(str, yields))
        self.emit(f'"{terminator}"({", ".join(results)}) : ({types}) -> ()')
        self.indent -= 1
        self.depth -= 1
        self.scope = outer

    def carried(self) -> list[VType]:
        return [self.any_type() for _ in range(self.draw(st.integers(1, 2)))]

    def op_for(self) -> None:
        types = self.carried()
        inits = [self.vector(t) for t in types]
        lb, ub, step = self.index(0), self.index(4), self.index(1)
        results = [self.fresh() for _ in types]
        head = results[0] if len(results) == 1 else results[0].replace("%", "%r") + f":{len(types)}"
        self.emit(f'{head} = "scf.for"({lb}, {ub}, {step}, {", ".join(inits)}) ({{')
        iv = self.fresh("i")
        args = [(iv, "index")] + [(self.fresh("a"), t) for t in types]
        self.region(args, types, "scf.yield")
        sig = ", ".join(["index"] * 3 + [str(t) for t in types])
        self.emit(f"}}) : ({sig}) -> ({', '.join(map(str, types))})")
        self._bind_results(head, results, types)

    def _bind_results(self, head: str, results: list[str], types: list[VType]) -> None:
        if len(results) == 1:
            self.define(results[0], types[0])
            return
        base = head.split(":")[0]
        for i, t in enumerate(types):
            self.define(f"{base}#{i}", t)

    def op_while(self) -> None:
        types = self.carried()
        inits = [self.vector(t) for t in types]
        results = [self.fresh() for _ in types]
        head = results[0] if len(results) == 1 else results[0].replace("%", "%r") + f":{len(types)}"
        self.emit(f'{head} = "scf.while"({", ".join(inits)}) ({{')
        flag = self.fresh("f")
        # The condition: a constant flag (the loop runs, as far as layouts care).
        before = [(self.fresh("a"), t) for t in types]
        self.scope = Scope(parent=self.scope)
        params = ", ".join(f"{n}: {t}" for n, t in before)
        self.emit(f"^bb0({params}):")
        self.indent += 1
        self.emit(f'{flag} = "arith.constant"() <{{value = false}}> : () -> i1')
        for n, t in before:
            self.define(n, t)
        self.depth += 1
        for _ in range(self.draw(st.integers(0, 2))):
            self.op()
        self.depth -= 1
        passed = [self.vector(t) for t in types]
        self.emit(
            f'"scf.condition"({flag}, {", ".join(passed)}) : '
            f"(i1, {', '.join(map(str, types))}) -> ()"
        )
        self.indent -= 1
        assert self.scope.parent is not None
        self.scope = self.scope.parent
        self.emit("}, {")
        after = [(self.fresh("a"), t) for t in types]
        self.region(after, types, "scf.yield")
        sig = ", ".join(map(str, types))
        self.emit(f"}}) : ({sig}) -> ({sig})")
        self._bind_results(head, results, types)

    def op_switch(self) -> None:
        types = self.carried()
        which = self.index(self.draw(st.integers(0, 2)))
        results = [self.fresh() for _ in types]
        head = results[0] if len(results) == 1 else results[0].replace("%", "%r") + f":{len(types)}"
        cases = self.draw(st.integers(1, 2))
        case_list = ", ".join(str(i) for i in range(cases))
        self.emit(f'{head} = "scf.index_switch"({which}) <{{cases = array<i64: {case_list}>}}> ({{')
        for region in range(cases + 1):
            if region:
                self.emit("}, {")
            self.region([], types, "scf.yield")
        self.emit(f"}}) : (index) -> ({', '.join(map(str, types))})")
        self._bind_results(head, results, types)

    # --- the module --------------------------------------------------------------------------

    def module(self, size: int) -> str:
        for _ in range(size):
            self.op()
        body = "\n".join(self.lines)
        args = ", ".join(f"%arg{i}: {ty}" for i, ty in enumerate(self.args))
        return f'func.func @kernel({args}) {{\n{body}\n  "func.return"() : () -> ()\n}}\n'


@st.composite
def modules(draw: st.DrawFn, max_ops: int = 8) -> FuzzModule:
    """A random well-typed Mosaic GPU module and the arch to infer it for."""
    arch = draw(st.sampled_from([(9, 0), (9, 0), (10, 0)]))
    builder = Builder(draw, arch)
    text = builder.module(draw(st.integers(1, max_ops)))
    return FuzzModule(text, arch)
