"""Pallas Mosaic GPU kernels JAX 0.12.0.1's layout inference cannot infer
(issue #13), and ``lower_annotated``: lowering with hand-written layouts.

Five kinds, each a family of small kernels (jax 0.12.0.1 API, warpgroup
semantics, operands straight from GMEM so that no SMEM transform is involved):

1. reductions with ``keepdims=True`` whose (N, 1) or (1, N) result is used as
   such (stored);
2. ``broadcast_in_dim`` to rank 3;
3. integer indexing of a leading dim (``x[3]``);
4. concatenation along the leading dim;
5. ``lax.erf`` and ``jnp.arctan2``.

JAX's own pass fails on every one of them, yet layouts exist that JAX's own
Mosaic GPU lowering accepts. ``lower_annotated`` proves it: it lowers a kernel
for CUDA (no GPU needed) with a stand-in "pass" that writes layouts chosen by
hand, per op, and lets JAX's dialect lowering and verifier consume them. The
layouts given here (``*_LAYOUT`` constants, ``Case.layouts``) are the targets
the engine must find.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from functools import partial
from typing import Any

import jax
import jax.numpy as jnp
from jax import lax
from jax._src.lib.mlir import ir
from jax.experimental.mosaic.gpu import fragmented_array as fa
from jax.experimental.mosaic.gpu import layouts as mgpu_layouts
from jax.experimental.pallas import mosaic_gpu as plgpu

import smalto
import smalto.jax
from smalto.hw import layouts as hl
from smalto.jax import Lowering

HOPPER = (9, 0)
BLACKWELL = (10, 0)
WARPGROUP = plgpu.CompilerParams(lowering_semantics=plgpu.LoweringSemantics.Warpgroup)

Layout = fa.FragmentedLayout

# --- The layouts JAX's lowering accepts (see docs/beyond_jax.md) -----------

WGMMA = fa.WGMMA_LAYOUT
WGMMA_ROW = fa.WGMMA_ROW_LAYOUT
WGMMA_COL = fa.WGMMA_COL_LAYOUT

# (N, 1) keep-dims vector: WGMMA with the column tile shrunk to 1. Its
# reduction over dim 1 is WGMMA_ROW (what the row reduction yields), so the
# (N,) -> (N, 1) broadcast_in_dim lowers; the size-1 vector dim and the 4
# lanes of a row replicated.
KEEP_ROWS = fa.TiledLayout(
    fa.Tiling(((64, 1), (16, 1), (8, 1))),
    warp_dims=(-6,),
    lane_dims=(-2, fa.Replicated(4)),
    vector_dim=-1,
)
# (1, N) keep-dims vector: WGMMA_COL with a leading size-1 tile dim. Its
# reduction over dim 0 is WGMMA_COL (what the column reduction yields).
KEEP_COLS = fa.TiledLayout(
    fa.Tiling(((1, 8), (2,))),
    warp_dims=(fa.Replicated(4),),
    lane_dims=(fa.Replicated(8), -2),
    vector_dim=-1,
)


# --- Lowering with hand-written layouts -------------------------------------

# For each op name, the layout of its vector result(s): one layout for every
# occurrence of the op, or a list with one entry per occurrence, in program
# order. An entry is a layout (all vector results get it) or a tuple (one per
# vector result). The key ``"*"`` gives the layout of every op not named.
Annotation = Mapping[str, "Layout | tuple[Layout, ...] | Sequence[Layout | tuple[Layout, ...]]"]


class HandPass:
    """A stand-in for layout inference that writes the layouts of an ``Annotation``.

    Each op with vector results gets ``out_layouts`` from the annotation, except
    splat constants, which get the splat layout (as JAX's pass gives them); each
    op with vector operands gets ``in_layouts`` from the layouts its operands
    were produced with, as any pass must, except that a splat operand of an op
    with a vector result is taken in that result's layout (the one relayout
    JAX's system allows between producer and consumer). Raises ``ValueError`` if an op with
    vector results is missing from the annotation, or an entry is left unused,
    so a mistyped annotation cannot lower by accident.
    """

    def __init__(self, annotation: Annotation) -> None:
        self.annotation = annotation

    def __call__(self, module: ir.Module, **_: Any) -> None:
        produced: dict[ir.Value, Layout] = {}
        used: dict[str, int] = {}

        def result_layouts(op: ir.Operation, count: int) -> tuple[Layout, ...]:
            name = op.name if op.name in self.annotation else "*"
            if name not in self.annotation:
                raise ValueError(f"no layout given for {op.name} (in {op})")
            entry: Any = self.annotation[name]
            occurrence = used.get(name, 0)
            used[name] = occurrence + 1
            if isinstance(entry, list):
                if occurrence >= len(entry):
                    raise ValueError(f"more {op.name} ops than layouts given")
                entry = entry[occurrence]
            layouts = entry if isinstance(entry, tuple) else (entry,) * count
            if len(layouts) != count:
                raise ValueError(f"{op.name} has {count} vector results, given {len(layouts)}")
            return layouts

        def visit(op: ir.Operation) -> None:
            operands = [v for v in op.operands if isinstance(v.type, ir.VectorType)]
            results = [v for v in op.results if isinstance(v.type, ir.VectorType)]
            if results:
                if op.name == "arith.constant":
                    layouts: tuple[Layout, ...] = (fa.WGSplatFragLayout(_shape(results[0])),)
                else:
                    layouts = result_layouts(op, len(results))
            if operands:
                taken = [
                    layouts[0]
                    if results
                    and isinstance(produced[v], fa.WGSplatFragLayout)
                    and _shape(v) == _shape(results[0])
                    else produced[v]
                    for v in operands
                ]
                op.attributes["in_layouts"] = _layouts_attr(taken)
            if results:
                op.attributes["out_layouts"] = _layouts_attr(layouts)
                produced.update(zip(results, layouts, strict=True))
            for region in op.regions:
                for block in region.blocks:
                    for inner in block.operations:
                        visit(inner.operation)

        for op in module.body.operations:
            visit(op.operation)
        for name, entry in self.annotation.items():
            expected = len(entry) if isinstance(entry, list) else 1
            if used.get(name, 0) < expected:
                raise ValueError(
                    f"layouts given for {expected} {name} ops, the kernel has {used.get(name, 0)}"
                )


def _shape(value: ir.Value) -> tuple[int, ...]:
    return tuple(ir.VectorType(value.type).shape)


def _layouts_attr(layouts: Any) -> ir.ArrayAttr:
    return ir.ArrayAttr.get([mgpu_layouts.to_layout_attr(layout) for layout in layouts])


@contextlib.contextmanager
def _passing_as_smalto(replacement: Callable[..., None]) -> Iterator[None]:
    # smalto.jax's hook calls ``smalto.infer_layout`` looked up at call time.
    real = smalto.infer_layout
    smalto.infer_layout = replacement  # type: ignore[assignment]
    try:
        yield
    finally:
        smalto.infer_layout = real  # type: ignore[assignment]


def lower_annotated(
    fn: Callable[..., Any], *args: Any, arch: tuple[int, int], layouts: Annotation
) -> Lowering:
    """Lowers ``fn(*args)`` for CUDA with ``layouts`` written in place of inference.

    JAX's own Mosaic GPU dialect lowering and verifier consume them: a success
    means JAX's lowering accepts these layouts. Raises
    ``smalto.jax.KernelLoweringError`` like ``smalto.jax.lower`` otherwise
    (stage ``"inference"`` for a malformed annotation).
    """
    with _passing_as_smalto(HandPass(layouts)):
        return smalto.jax.lower(fn, *args, arch=arch, by="smalto")


def _sds(shape: tuple[int, ...], dtype: Any) -> jax.ShapeDtypeStruct:
    return jax.ShapeDtypeStruct(shape, dtype)


def _kernel(body: Callable[..., None], out_shape: tuple[int, ...], dtype: Any) -> Callable:
    return plgpu.kernel(body, out_type=_sds(out_shape, dtype), compiler_params=WARPGROUP)


# --- 1. keep-dims reductions ------------------------------------------------

_REDUCTIONS = {"max": jnp.max, "sum": jnp.sum}


def _keep_shape(shape: tuple[int, ...], axis: int) -> tuple[int, ...]:
    return tuple(1 if d == axis else n for d, n in enumerate(shape))


# A 16-bit (N, 1) vector cannot be stored to GMEM by JAX 0.12's lowering in
# the layouts a reduction of a GMEM load can have (each thread would store 2
# bytes, or a warp less than whole 32-byte sectors): 16-bit inputs are
# reduced, then stored as f32.
def _stored_dtype(dtype: Any) -> Any:
    return jnp.float32 if jnp.dtype(dtype).itemsize < 4 else dtype


def keepdims_reduce(x: jax.Array, *, axis: int, op: str = "max") -> jax.Array:
    """``op(x, axis, keepdims=True)`` stored as an (N, 1) or (1, N) array."""
    reduce = _REDUCTIONS[op]
    out_dtype = _stored_dtype(x.dtype)

    def body(x_gmem, out_gmem):
        out_gmem[...] = reduce(x_gmem[...], axis=axis, keepdims=True).astype(out_dtype)

    return _kernel(body, _keep_shape(x.shape, axis), out_dtype)(x)


def keepdims_scaled(x: jax.Array, *, axis: int) -> jax.Array:
    """A keep-dims maximum used in elementwise arithmetic before it is stored."""
    out_dtype = _stored_dtype(x.dtype)

    def body(x_gmem, out_gmem):
        m = jnp.max(x_gmem[...], axis=axis, keepdims=True).astype(out_dtype)
        out_gmem[...] = m * 2 + 1

    return _kernel(body, _keep_shape(x.shape, axis), out_dtype)(x)


def keepdims_reduce_wgmma_hint(x: jax.Array, *, axis: int) -> jax.Array:
    """Like ``keepdims_reduce``, with the input cast to the WGMMA layout first."""
    out_dtype = _stored_dtype(x.dtype)

    def body(x_gmem, out_gmem):
        x = plgpu.layout_cast(x_gmem[...], plgpu.Layout.WGMMA)
        out_gmem[...] = jnp.max(x, axis=axis, keepdims=True).astype(out_dtype)

    return _kernel(body, _keep_shape(x.shape, axis), out_dtype)(x)


# --- 2. broadcast_in_dim to rank 3 ------------------------------------------


def bias_add_3d(x: jax.Array, bias: jax.Array) -> jax.Array:
    """``x + bias``: a (N,) bias broadcast over a (B, M, N) value."""

    def body(x_gmem, bias_gmem, out_gmem):
        out_gmem[...] = x_gmem[...] + bias_gmem[...]

    return _kernel(body, x.shape, x.dtype)(x, bias)


def index_leading(x: jax.Array, *, index: int) -> jax.Array:
    """``x[index]`` of a value loaded whole (not of the ref), stored."""

    def body(x_gmem, out_gmem):
        out_gmem[...] = x_gmem[...][index]

    return _kernel(body, x.shape[1:], x.dtype)(x)


# --- 4. concatenation along the leading dim ---------------------------------


def concat_halves(x: jax.Array) -> jax.Array:
    """``concatenate([x[:h], x[h:] * 2])`` along dim 0."""
    half = x.shape[0] // 2

    def body(x_gmem, out_gmem):
        x = x_gmem[...]
        out_gmem[...] = jnp.concatenate([x[:half], x[half:] * 2], axis=0)

    return _kernel(body, x.shape, x.dtype)(x)


def concat_inputs(a: jax.Array, b: jax.Array) -> jax.Array:
    """``concatenate([a, b])`` of two inputs along dim 0."""
    out_shape = (a.shape[0] + b.shape[0], *a.shape[1:])

    def body(a_gmem, b_gmem, out_gmem):
        out_gmem[...] = jnp.concatenate([a_gmem[...], b_gmem[...]], axis=0)

    return _kernel(body, out_shape, a.dtype)(a, b)


# --- 5. erf and atan2 ---------------------------------------------------------


def gelu_exact(x: jax.Array, *, erf: Callable[[jax.Array], jax.Array] = lax.erf) -> jax.Array:
    """Exact GELU, ``x * (1 + erf(x / sqrt(2))) / 2`` (``erf`` swappable, for a twin
    kernel JAX can infer)."""

    def body(x_gmem, out_gmem):
        x = x_gmem[...]
        out_gmem[...] = x * (1 + erf(x * 0.7071067811865476)) * 0.5

    return _kernel(body, x.shape, x.dtype)(x)


def arctan2(
    y: jax.Array, x: jax.Array, *, atan2: Callable[..., jax.Array] = jnp.arctan2
) -> jax.Array:
    """``jnp.arctan2(y, x)``, elementwise (``atan2`` swappable, as in ``gelu_exact``)."""

    def body(y_gmem, x_gmem, out_gmem):
        out_gmem[...] = atan2(y_gmem[...], x_gmem[...])

    return _kernel(body, x.shape, x.dtype)(y, x)


def broadcast_tile_3d_hint(tile: jax.Array, *, batch: int) -> jax.Array:
    """``broadcast_tile_3d`` with the tile cast to the WGMMA layout first."""
    out_shape = (batch, *tile.shape)

    def body(tile_gmem, out_gmem):
        tile = plgpu.layout_cast(tile_gmem[...], plgpu.Layout.WGMMA)
        out_gmem[...] = jnp.broadcast_to(tile, out_shape)

    return _kernel(body, out_shape, tile.dtype)(tile)


def bias_add_3d_hint(x: jax.Array, bias: jax.Array) -> jax.Array:
    """``bias_add_3d`` with the (B, M, N) value cast to the WGMMA layout first."""

    def body(x_gmem, bias_gmem, out_gmem):
        x = plgpu.layout_cast(x_gmem[...], plgpu.Layout.WGMMA)
        out_gmem[...] = x + bias_gmem[...]

    return _kernel(body, x.shape, x.dtype)(x, bias)


def tile_bias_3d_hint(tile: jax.Array, bias: jax.Array, *, batch: int) -> jax.Array:
    """A WGMMA-cast (M, N) tile broadcast to (batch, M, N), plus a (N,) bias."""
    out_shape = (batch, *tile.shape)

    def body(tile_gmem, bias_gmem, out_gmem):
        tile = plgpu.layout_cast(tile_gmem[...], plgpu.Layout.WGMMA)
        out_gmem[...] = jnp.broadcast_to(tile, out_shape) + bias_gmem[...]

    return _kernel(body, out_shape, tile.dtype)(tile, bias)


# --- More target layouts ----------------------------------------------------

# WGMMA at rank 3: the rank-2 WGMMA tiling with a leading size-1 tile dim, so
# that the layout tiles every dim of a (B, M, N) broadcast result. Its
# reduction over dim 0 is WGMMA, over dims (0, 1) WGMMA_COL.
WGMMA_3D = fa.TiledLayout(
    fa.Tiling(((1, 64, 8), (16, 8), (8, 8), (2,))),
    warp_dims=(-7,),
    lane_dims=(-3, -2),
    vector_dim=-1,
)
# One column per thread, tiling only the minor dim: x[i] of a (M, 128) value
# in this layout is the (128,) row in the same layout (the leading dim is
# untiled, so indexing it drops whole registers).
MINOR_ONLY = fa.TiledLayout(
    fa.Tiling(((128,), (32,), (1,))),
    warp_dims=(-3,),
    lane_dims=(-2,),
    vector_dim=-1,
)
# A 16-bit GMEM load must move whole 32-byte sectors per warp instruction:
# WGMMA (4 lanes x 2 elements per row, 16 bytes) cannot; this layout (2 lanes
# x 8 elements per row) can. 16-bit kernels use it where the f32 ones use WGMMA.
WIDE_16BIT = fa.TiledLayout(
    fa.Tiling(((64, 16), (16, 16), (8,))),
    warp_dims=(-5,),
    lane_dims=(-3, -2),
    vector_dim=-1,
)


# The keep-dims layout of a tiled layout: the engine's own (its lowering is
# what these tests check).
keep_dims = hl.keep_dims


# --- The cases: kernel, arguments, arch, the hand layouts, what JAX says ----


@dataclass(frozen=True)
class Case:
    """One kernel JAX 0.12.0.1 cannot infer, with layouts its lowering accepts."""

    kind: str  # "keepdims", "broadcast3d", "index", "concat", "erf_atan2"
    name: str
    fn: Callable[..., Any]
    args: tuple[jax.ShapeDtypeStruct, ...]
    arch: tuple[int, int]
    layouts: Annotation
    jax_stage: str  # the stage at which smalto.jax.lower(..., by="jax") fails
    jax_says: str  # a phrase of JAX's message
    # True where smalto does not yet infer layouts that lower (none today).
    engine_pending: bool = False

    @property
    def id(self) -> str:
        return f"{self.name}-sm{self.arch[0]}{self.arch[1]}"


UNSATISFIABLE = "Failed to infer a possible set of layouts"
OUT_OF_FUEL = "Layout inference failed to find a solution"
RANK_MISMATCH = "Tiling rank different than broadcast result rank"
NO_RULE = "No layout inference rule defined for"

_F32, _BF16, _F16 = jnp.float32, jnp.bfloat16, jnp.float16
_ARCHS = (HOPPER, BLACKWELL)


def _name(dtype: Any, shape: tuple[int, ...]) -> str:
    return f"{jnp.dtype(dtype).name}_{'x'.join(map(str, shape))}"


def _tile_layout(dtype: Any) -> fa.TiledLayout:
    return WGMMA if jnp.dtype(dtype).itemsize == 4 else WIDE_16BIT


def _keepdims_layouts(
    source: fa.TiledLayout, axis: int, *, dtype: Any, hint: bool = False, scaled: bool = False
) -> dict[str, Any]:
    reduced, kept = source.reduce([axis]), keep_dims(source, axis)
    layouts: dict[str, Any] = {
        "mosaic_gpu.vector_load": source,
        "vector.multi_reduction": reduced,
        "mosaic_gpu.broadcast_in_dim": kept,
    }
    if hint:
        layouts["mosaic_gpu.layout_cast"] = source
    if jnp.dtype(dtype).itemsize < 4:
        layouts["arith.extf"] = kept  # the f32 store of a 16-bit reduction
    if scaled:  # ``m * 2 + 1``
        layouts["arith.mulf"] = layouts["arith.addf"] = kept
    return layouts


def _keepdims_cases() -> list[Case]:
    cases = []
    for arch in _ARCHS:
        for shape in ((128, 128), (64, 256), (256, 64)):
            for axis, op in ((1, "max"), (0, "sum")):
                cases.append(
                    Case(
                        "keepdims",
                        f"keepdims_{op}_axis{axis}_{_name(_F32, shape)}",
                        partial(keepdims_reduce, axis=axis, op=op),
                        (_sds(shape, _F32),),
                        arch,
                        _keepdims_layouts(WGMMA, axis, dtype=_F32),
                        "inference",
                        UNSATISFIABLE,
                    )
                )
        for axis in (1, 0):
            cases.append(
                Case(
                    "keepdims",
                    f"keepdims_scaled_axis{axis}_{_name(_F32, (128, 128))}",
                    partial(keepdims_scaled, axis=axis),
                    (_sds((128, 128), _F32),),
                    arch,
                    _keepdims_layouts(WGMMA, axis, dtype=_F32, scaled=True),
                    "inference",
                    UNSATISFIABLE,
                )
            )
        # With a WGMMA hint: JAX's (N,) version infers; the (N, 1) one is
        # unsatisfiable, the (1, N) one gets a rank-1 layout the lowering rejects.
        for axis, stage, says in (
            (1, "inference", UNSATISFIABLE),
            (0, "after inference", RANK_MISMATCH),
        ):
            cases.append(
                Case(
                    "keepdims",
                    f"keepdims_hint_axis{axis}_{_name(_F32, (128, 128))}",
                    partial(keepdims_reduce_wgmma_hint, axis=axis),
                    (_sds((128, 128), _F32),),
                    arch,
                    _keepdims_layouts(WGMMA, axis, dtype=_F32, hint=True),
                    stage,
                    says,
                )
            )
        for dtype in (_BF16, _F16):
            cases.append(
                Case(
                    "keepdims",
                    f"keepdims_max_axis1_{_name(dtype, (128, 128))}",
                    partial(keepdims_reduce, axis=1),
                    (_sds((128, 128), dtype),),
                    arch,
                    _keepdims_layouts(WIDE_16BIT, 1, dtype=dtype),
                    "inference",
                    UNSATISFIABLE,
                )
            )
    return cases


def _broadcast3d_cases() -> list[Case]:
    cases = []
    for arch in _ARCHS:
        for batch in (2, 4):
            cases.append(
                Case(
                    "broadcast3d",
                    f"broadcast_tile_3d_hint_b{batch}_{_name(_F32, (64, 128))}",
                    partial(broadcast_tile_3d_hint, batch=batch),
                    (_sds((64, 128), _F32),),
                    arch,
                    {
                        "mosaic_gpu.vector_load": WGMMA,
                        "mosaic_gpu.layout_cast": WGMMA,
                        "mosaic_gpu.broadcast_in_dim": WGMMA_3D,
                    },
                    "after inference",
                    RANK_MISMATCH,
                )
            )
        cases.append(
            Case(
                "broadcast3d",
                f"tile_bias_3d_hint_b2_{_name(_F32, (64, 128))}",
                partial(tile_bias_3d_hint, batch=2),
                (_sds((64, 128), _F32), _sds((128,), _F32)),
                arch,
                {
                    "mosaic_gpu.vector_load": [WGMMA, WGMMA_COL],
                    "mosaic_gpu.layout_cast": WGMMA,
                    "mosaic_gpu.broadcast_in_dim": WGMMA_3D,
                    "arith.addf": WGMMA_3D,
                },
                "after inference",
                RANK_MISMATCH,
            )
        )
    return cases


def _index_cases() -> list[Case]:
    cases = []
    for arch in _ARCHS:
        for shape, index in (((128, 128), 3), ((64, 128), 63), ((8, 128), 0)):
            cases.append(
                Case(
                    "index",
                    f"index_{index}_{_name(_F32, shape)}",
                    partial(index_leading, index=index),
                    (_sds(shape, _F32),),
                    arch,
                    {"*": MINOR_ONLY},
                    "inference",
                    UNSATISFIABLE,
                )
            )
        for dtype in (_F32, _BF16, _F16):
            for shape in ((2, 64, 128), (3, 128, 64)):
                cases.append(
                    Case(
                        "index",
                        f"index_1_{_name(dtype, shape)}",
                        partial(index_leading, index=1),
                        (_sds(shape, dtype),),
                        arch,
                        {"*": _tile_layout(dtype)},
                        "inference",
                        UNSATISFIABLE,
                    )
                )
    return cases


def _concat_cases() -> list[Case]:
    cases = []
    for arch in _ARCHS:
        for dtype in (_F32, _BF16, _F16):
            for shape in ((128, 128), (256, 64)):
                cases.append(
                    Case(
                        "concat",
                        f"concat_halves_{_name(dtype, shape)}",
                        concat_halves,
                        (_sds(shape, dtype),),
                        arch,
                        {"*": _tile_layout(dtype)},
                        "inference",
                        UNSATISFIABLE,
                    )
                )
            cases.append(
                Case(
                    "concat",
                    f"concat_inputs_{_name(dtype, (64, 128))}",
                    concat_inputs,
                    (_sds((64, 128), dtype), _sds((64, 128), dtype)),
                    arch,
                    {"*": _tile_layout(dtype)},
                    "inference",
                    UNSATISFIABLE,
                )
            )
    return cases


def _erf_atan2_cases() -> list[Case]:
    cases = []
    for arch in _ARCHS:
        for dtype in (_F32, _BF16, _F16):
            for shape in ((128, 128), (64, 256)):
                # What JAX gives the same kernel with exp (a product) in place
                # of erf (atan2): 8 bytes per thread.
                strided = fa.WGStridedFragLayout(shape, 8 // jnp.dtype(dtype).itemsize)
                cases.append(
                    Case(
                        "erf_atan2",
                        f"gelu_exact_{_name(dtype, shape)}",
                        gelu_exact,
                        (_sds(shape, dtype),),
                        arch,
                        {"*": strided},
                        "inference",
                        NO_RULE,
                    )
                )
                cases.append(
                    Case(
                        "erf_atan2",
                        f"arctan2_{_name(dtype, shape)}",
                        arctan2,
                        (_sds(shape, dtype), _sds(shape, dtype)),
                        arch,
                        {"*": strided},
                        "inference",
                        NO_RULE,
                    )
                )
    return cases


CASES: tuple[Case, ...] = (
    *_keepdims_cases(),
    *_broadcast3d_cases(),
    *_index_cases(),
    *_concat_cases(),
    *_erf_atan2_cases(),
)


# --- JAX's own constraint system, judging an annotation -----------------------


def jax_violations(text: str, arch: tuple[int, int]) -> list[str]:
    """The constraints of JAX's own system that the layouts in ``text`` violate.

    ``text`` is an annotated module (e.g. ``Lowering.kernels[-1].inferred_text``).
    JAX derives its constraint system from the module as usual; where it would
    search, each constraint is instead evaluated under the layouts the module
    carries. Empty: every fact of JAX's system holds, so a complete search over
    the right candidates finds these layouts.
    """
    from jax.experimental.mosaic.gpu import constraints as cs
    from jax.experimental.mosaic.gpu import layout_inference as li
    from jax_check import _decode_site, _preorder
    from reference import make_context, parse

    context = make_context()
    annotated, fresh = parse(text, context), parse(text, context)
    fresh_ops, annotated_ops = _preorder(fresh), _preorder(annotated)
    violations: list[str] = []

    def judge(unknowns: Any, system: Any, *, fuel: int, arch: tuple[int, int]) -> Any:
        del arch
        assignments = {}
        for var in unknowns:
            site = var.key
            # Wrappers of one op may hash differently: find it by equality.
            op = annotated_ops[next(i for i, o in enumerate(fresh_ops) if o == site.operation)]
            assignments[var] = _decode_site(op, site.type == li.VariableType.OPERAND, site.index)
            if not cs.is_valid_assignment(var, assignments[var]):
                violations.append(f"invalid assignment {var} := {assignments[var]}")
        for variable, value in system.assignments.items():
            if assignments.get(variable, value) != value:
                violations.append(f"{variable} is fixed to {value}")
        for constraint in system.constraints:
            reduced = cs.reduce_constraint(constraint, assignments)
            if isinstance(reduced, cs.Unsatisfiable) or reduced.holds() is not True:
                violations.append(str(constraint))
        return (cs.Unsatisfiable() if violations else assignments), fuel

    for op in fresh_ops:  # JAX's pass writes the attributes afresh
        for name in ("in_layouts", "out_layouts"):
            if name in op.attributes:
                del op.attributes[name]
    original = li.find_assignments_for
    li.find_assignments_for = judge
    try:
        with context, ir.Location.unknown():
            li.infer_layout(fresh, arch=arch)
    except ValueError:
        assert violations, "JAX's pass failed before judging the layouts"
    finally:
        li.find_assignments_for = original
    return violations


# --- Out of reach: no layout lowers -------------------------------------------


def reshape_to_keepdims(x: jax.Array) -> jax.Array:
    """``x.max(axis=1).reshape(N, 1)``: a ``vector.shape_cast`` through a size-1 dim.

    JAX's lowering reshapes a tiled value only if the new shape keeps the
    minor dims of the base tile: (N,) in WGMMA_ROW (base tile (64,)) cannot
    become (N, 1) in any layout, so no annotation lowers this kernel.
    """

    def body(x_gmem, out_gmem):
        x = plgpu.layout_cast(x_gmem[...], plgpu.Layout.WGMMA)
        out_gmem[...] = x.max(axis=1).reshape(x.shape[0], 1)

    return _kernel(body, (x.shape[0], 1), x.dtype)(x)
