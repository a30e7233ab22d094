"""Small MLIR modules and readers for the per-rule-family unit tests (Hopper).

A test writes the body of a kernel (pretty or generic form, one op a line),
``kernel`` wraps it into a module with one ``func.func``, and the helpers here
run smalto's pass, and JAX's where it has rules for every op, on separately
parsed copies. Layouts and transforms are read back decoded, as JAX's own
objects (``fa.WGMMA_LAYOUT``, ``TileTransform``, ``SwizzlingMode``), so the
tests can say what they expect in the terms of the op's requirements.

SMEM refs come from ``mosaic_gpu.slice_smem`` (JAX's pass needs every SMEM
ref to have a producer with a rule); GMEM refs are function arguments.
"""

from __future__ import annotations

import functools
from collections.abc import Sequence
from typing import Any

import pytest
import reference
from jax._src.lib.mlir import ir
from jax.experimental.mosaic.gpu import fragmented_array as fa
from jax.experimental.mosaic.gpu import launch_context as lc
from jax.experimental.mosaic.gpu import layouts as layouts_lib

import smalto

HOPPER = (9, 0)
WORKGROUP = "#gpu.address_space<workgroup>"
BARRIER = f"memref<!mosaic_gpu.barrier, {WORKGROUP}>"

# Named register layouts, for readable assertions.
WGMMA = fa.WGMMA_LAYOUT
WGMMA_8BIT = fa.WGMMA_LAYOUT_8BIT
WGMMA_ROW = fa.WGMMA_ROW_LAYOUT
WGMMA_COL = fa.WGMMA_COL_LAYOUT
WGMMA_TRANSPOSED = fa.WGMMA_TRANSPOSED_LAYOUT
TMA_INDICES = fa.TMA_INDICES_LAYOUT
TMA_INDICES_4 = fa.TMA_INDICES_4_LAYOUT


def splat(*shape: int) -> fa.WGSplatFragLayout:
    return fa.WGSplatFragLayout(shape=tuple(shape))


def strided(shape: Sequence[int], vec_size: int) -> fa.WGStridedFragLayout:
    return fa.WGStridedFragLayout(shape=tuple(shape), vec_size=vec_size)


def is_tiled(layout: fa.FragmentedLayout) -> bool:
    return isinstance(layout, fa.TiledLayout)


def layout_attr_text(layout: fa.FragmentedLayout) -> str:
    """The attribute syntax of ``layout`` (for ``layout_cast`` and friends)."""
    with shared_context(), ir.Location.unknown():
        return str(layouts_lib.to_layout_attr(layout))


# --- building modules ---------------------------------------------------------------


def smem(shape: Sequence[int], dtype: str, layout: str | None = None) -> str:
    """An SMEM memref type, e.g. ``smem((64, 64), "bf16")``."""
    dims = "x".join(str(d) for d in shape)
    inner = f"{dims}x{dtype}" if dims else dtype
    if layout is not None:
        inner += f", {layout}"
    return f"memref<{inner}, {WORKGROUP}>"


def gmem(shape: Sequence[int], dtype: str) -> str:
    return f"memref<{'x'.join(str(d) for d in shape)}x{dtype}>"


def vec(shape: Sequence[int], dtype: str) -> str:
    return f"vector<{'x'.join(str(d) for d in shape)}x{dtype}>"


def slice_smem(name: str, ty: str, offset: int = 0, alias_id: int | None = None) -> str:
    """``%name = mosaic_gpu.slice_smem`` of type ``ty``."""
    alias = "" if alias_id is None else f"alias_id = {alias_id} : i64, "
    return f'%{name} = "mosaic_gpu.slice_smem"() <{{{alias}offset = {offset} : i32}}> : () -> {ty}'


def vector_load(
    name: str, ref: str, ref_ty: str, vec_ty: str, optimized: bool | None = None
) -> str:
    """A ``vector_load``; from a GMEM ref unoptimized unless ``optimized`` says.

    An optimized GMEM load must coalesce, which JAX's answers often do not
    (WGMMA moves a 16-bit row as 16 bytes): there smalto answers differently
    from JAX (``test_gmem_transfer``). The rule tests load their inputs from
    GMEM to speak of other ops, so they load them unoptimized.
    """
    if optimized is None and WORKGROUP not in ref_ty:
        optimized = False
    attrs = "" if optimized is None else f" <{{optimized = {str(optimized).lower()}}}>"
    return f'%{name} = "mosaic_gpu.vector_load"(%{ref}){attrs} : ({ref_ty}) -> {vec_ty}'


def vector_store(value: str, vec_ty: str, ref: str, ref_ty: str) -> str:
    return f'"mosaic_gpu.vector_store"(%{value}, %{ref}) : ({vec_ty}, {ref_ty}) -> ()'


def layout_cast(name: str, value: str, vec_ty: str, layout: fa.FragmentedLayout) -> str:
    attr = layout_attr_text(layout)
    return (
        f'%{name} = "mosaic_gpu.layout_cast"(%{value}) <{{new_layout = {attr}}}> '
        f": ({vec_ty}) -> {vec_ty}"
    )


def with_transforms(
    name: str, ref: str, ty: str, tile: Sequence[int] | None = None, swizzle: int | None = None
) -> str:
    """``%name = mosaic_gpu.with_transforms`` with a tiling (and swizzle), or none."""
    parts = []
    if tile is not None:
        parts.append(f"#mosaic_gpu.tile<[{', '.join(map(str, tile))}]>")
    if swizzle is not None:
        parts.append(f"#mosaic_gpu.swizzle<{swizzle} : i32>")
    return (
        f'%{name} = "mosaic_gpu.with_transforms"(%{ref}) <{{transforms = [{", ".join(parts)}]}}> '
        f": ({ty}) -> {ty}"
    )


def kernel(body: str | Sequence[str], args: Sequence[str] = ()) -> str:
    """A module with ``func.func @kernel(args)`` running ``body`` then returning.

    ``args`` are argument types; they are named ``%arg0``, ``%arg1``, ...
    """
    lines = [body] if isinstance(body, str) else list(body)
    params = ", ".join(f"%arg{i}: {ty}" for i, ty in enumerate(args))
    inner = "\n".join(f"    {line}" for piece in lines for line in piece.strip().splitlines())
    return f"module {{\n  func.func @kernel({params}) {{\n{inner}\n    return\n  }}\n}}\n"


# --- running the passes ---------------------------------------------------------------


@functools.cache
def shared_context() -> ir.Context:
    return reference.make_context()


def parse(text: str, ctx: ir.Context | None = None) -> ir.Module:
    return reference.parse(text, ctx if ctx is not None else shared_context())


def run_smalto(text: str, arch: tuple[int, int] = HOPPER, **kwargs: Any) -> ir.Module:
    """A fresh parse of ``text``, annotated by smalto."""
    module = parse(text)
    smalto.infer_layout(module, arch=arch, **kwargs)
    return module


def run_jax(text: str, arch: tuple[int, int] = HOPPER) -> ir.Module:
    """A fresh parse of ``text``, annotated by JAX's pass."""
    from jax.experimental.mosaic.gpu import layout_inference

    module = parse(text)
    with module.context, ir.Location.unknown():
        layout_inference.infer_layout(module, arch=arch)
    return module


def infer_like_jax(text: str, arch: tuple[int, int] = HOPPER) -> ir.Module:
    """smalto's annotated module, after checking its attributes are JAX's, op by op."""
    ours = run_smalto(text, arch)
    theirs = run_jax(text, arch)
    diff = reference.diff_attributes(
        reference.layout_attributes(theirs), reference.layout_attributes(ours)
    )
    assert not diff, "smalto differs from JAX:\n" + "\n".join(diff)
    return ours


def lower_in_launch(module: ir.Module, arch: tuple[int, int] = HOPPER) -> None:
    """Runs JAX's dialect lowering on an annotated kernel, with a launch context.

    The kernel's ops move into a ``gpu.launch`` (``module`` is consumed), so
    that ops needing the launch context (TMA copies from a GMEM ref marked as
    a kernel argument, asynchronous SMEM stores) lower too; then verifies the
    lowered module, as Mosaic GPU does after lowering; raises what the
    lowering or the verifier raises. TMA descriptors are not built.
    """
    from fuzz.property import lower_in_launch as lower

    lower(module, arch)


def lowers_beyond_jax(text: str, arch: tuple[int, int] = HOPPER) -> ir.Module:
    """smalto's annotated module where JAX's pass finds no layouts.

    Checks that JAX's pass rejects ``text``, that smalto's answer passes the
    checker, and that JAX's dialect lowering (with a launch context) takes it.
    """
    from smalto.check import check

    assert jax_fails(text, arch), "JAX's pass solves this kernel"
    module = run_smalto(text, arch)
    assert check(module, arch) == []
    lower_in_launch(run_smalto(text, arch), arch)
    return module


def jax_fails(text: str, arch: tuple[int, int] = HOPPER) -> bool:
    """Whether JAX's pass rejects ``text`` (for kernels only smalto solves)."""
    try:
        run_jax(text, arch)
    except (ValueError, NotImplementedError, KeyError):
        return True
    return False


def rejected_like_jax(
    text: str, expected: type[Exception] = smalto.InferenceError, arch: tuple[int, int] = HOPPER
) -> Exception:
    """Checks that smalto raises ``expected`` and JAX's pass rejects the kernel too.

    An ``InferenceError``'s message must start with the failure prefix tools grep
    for; JAX raises a plain ``ValueError`` (the base class) with the same prefix.
    The module must come out of the failed call unchanged, but for the dump name
    both passes give it once their rules have run (so when their search fails).
    """
    from jax.experimental.mosaic.gpu import layout_inference

    module = parse(text)
    before = str(module)
    with pytest.raises(expected) as ours:
        smalto.infer_layout(module, arch=arch)
    named = reference.pop_dump_name(module) is not None
    assert str(module) == before, "a failed inference changed the module"
    if issubclass(expected, smalto.InferenceError):
        assert str(ours.value).startswith(smalto.FAILURE_PREFIX)
    jax_expected = ValueError if issubclass(expected, ValueError) else expected
    theirs = parse(text)
    with pytest.raises(jax_expected), theirs.context, ir.Location.unknown():
        layout_inference.infer_layout(theirs, arch=arch)
    assert named == (reference.pop_dump_name(theirs) is not None), "dump name unlike JAX's"
    return ours.value


# --- reading the results ---------------------------------------------------------------


def ops(module: ir.Module, name: str) -> list[ir.OpView]:
    """Every op called ``name``, in pre-order."""
    found: list[ir.OpView] = []

    def visit(op: Any) -> Any:
        if op.name == name:
            found.append(op.opview)
        return ir.WalkResult.ADVANCE

    module.operation.walk(visit, ir.WalkOrder.PRE_ORDER)
    return found


def op(module: ir.Module, name: str, index: int = 0) -> ir.OpView:
    found = ops(module, name)
    assert len(found) > index, f"no {name} #{index} in the module"
    return found[index]


def layouts(operation: ir.OpView, attr: str) -> list[fa.FragmentedLayout]:
    """The decoded register layouts of ``in_layouts`` or ``out_layouts``."""
    assert attr in operation.attributes, f"{operation.name} has no {attr}"
    with operation.context:
        return [layouts_lib.from_layout_attr(a) for a in ir.ArrayAttr(operation.attributes[attr])]


def in_layouts(operation: ir.OpView) -> list[fa.FragmentedLayout]:
    return layouts(operation, "in_layouts")


def out_layouts(operation: ir.OpView) -> list[fa.FragmentedLayout]:
    return layouts(operation, "out_layouts")


Transforms = tuple[tuple[int, ...] | None, int | None]
UNTILED: Transforms = (None, None)


def transforms(operation: ir.OpView, attr: str) -> list[Transforms]:
    """``in_transforms``/``out_transforms`` decoded, one ``(tiling, swizzle bytes)``
    per ref, ``None`` for what a ref does not have: ``UNTILED`` (``(None, None)``)
    for a ref without transforms, ``(tile, None)`` for a tile alone."""
    assert attr in operation.attributes, f"{operation.name} has no {attr}"
    result: list[Transforms] = []
    with operation.context:
        for ref in ir.ArrayAttr(operation.attributes[attr]):
            tiling: tuple[int, ...] | None = None
            swizzle: int | None = None
            for t in ir.ArrayAttr(ref):
                decoded = layouts_lib.from_transform_attr(t)
                if isinstance(decoded, lc.TileTransform):
                    tiling = tuple(decoded.tiling)
                else:
                    swizzle = int(decoded.value)
            result.append((tiling, swizzle))
    return result


def in_transforms(operation: ir.OpView) -> list[Transforms]:
    return transforms(operation, "in_transforms")


def out_transforms(operation: ir.OpView) -> list[Transforms]:
    return transforms(operation, "out_transforms")


def has_layout_attributes(operation: ir.OpView) -> bool:
    return any(name in operation.attributes for name in reference.LAYOUT_ATTRIBUTE_NAMES)
