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
from dataclasses import dataclass, field
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
# vector result).
Annotation = Mapping[str, "Layout | tuple[Layout, ...] | Sequence[Layout | tuple[Layout, ...]]"]


class HandPass:
    """A stand-in for layout inference that writes the layouts of an ``Annotation``.

    Each op with vector results gets ``out_layouts`` from the annotation; each
    op with vector operands gets ``in_layouts`` from the layouts its operands
    were produced with, as any pass must. Raises ``ValueError`` if an op with
    vector results is missing from the annotation, or an entry is left unused,
    so a mistyped annotation cannot lower by accident.
    """

    def __init__(self, annotation: Annotation) -> None:
        self.annotation = annotation

    def __call__(self, module: ir.Module, **_: Any) -> None:
        produced: dict[ir.Value, Layout] = {}
        used: dict[str, int] = {}

        def result_layouts(op: ir.Operation, count: int) -> tuple[Layout, ...]:
            if op.name not in self.annotation:
                raise ValueError(f"no layout given for {op.name} (in {op})")
            entry: Any = self.annotation[op.name]
            occurrence = used.get(op.name, 0)
            used[op.name] = occurrence + 1
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
            if operands:
                op.attributes["in_layouts"] = _layouts_attr(produced[v] for v in operands)
            if results:
                layouts = result_layouts(op, len(results))
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
                raise ValueError(f"layouts given for {expected} {name} ops, the kernel has "
                                 f"{used.get(name, 0)}")


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


# A 16-bit (N, 1) or (1, N) vector cannot be stored to GMEM by JAX 0.12's
# lowering in any layout the reduction can produce (each thread would move 2
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


def broadcast_tile_3d(tile: jax.Array, *, batch: int) -> jax.Array:
    """A (M, N) tile broadcast to (batch, M, N) and stored."""
    out_shape = (batch, *tile.shape)

    def body(tile_gmem, out_gmem):
        out_gmem[...] = jnp.broadcast_to(tile_gmem[...], out_shape)

    return _kernel(body, out_shape, tile.dtype)(tile)


def tile_add_3d(x: jax.Array, tile: jax.Array) -> jax.Array:
    """``x + tile``: a (M, N) tile broadcast over a (B, M, N) value."""

    def body(x_gmem, tile_gmem, out_gmem):
        out_gmem[...] = x_gmem[...] + tile_gmem[...]

    return _kernel(body, x.shape, x.dtype)(x, tile)


# --- 3. integer indexing of a leading dim -----------------------------------


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


def gelu_exact(x: jax.Array) -> jax.Array:
    """Exact GELU, ``x * (1 + erf(x / sqrt(2))) / 2``."""

    def body(x_gmem, out_gmem):
        x = x_gmem[...]
        out_gmem[...] = x * (1 + lax.erf(x * 0.7071067811865476)) * 0.5

    return _kernel(body, x.shape, x.dtype)(x)


def arctan2(y: jax.Array, x: jax.Array) -> jax.Array:
    """``jnp.arctan2(y, x)``, elementwise."""

    def body(y_gmem, x_gmem, out_gmem):
        out_gmem[...] = jnp.arctan2(y_gmem[...], x_gmem[...])

    return _kernel(body, x.shape, x.dtype)(y, x)
