"""Blackwell kernels as text for the TMEM and tcgen05 rules' tests: expected attributes, op
text, and both passes run on them.
"""

from __future__ import annotations

import functools
from collections.abc import Sequence

import pytest
import reference
from jax.experimental.mosaic.gpu import fragmented_array as fa
from jax.experimental.mosaic.gpu import layouts as jax_layouts
from jax.experimental.mosaic.gpu import tcgen05
from mlir_snippets import SmemSlicer, func_module, parse, smem_type, tmem_type

import smalto
from smalto import FAILURE_PREFIX

BLACKWELL = (10, 0)


HOPPER = (9, 0)


ADDR_TYPE = "memref<i32, #gpu.address_space<workgroup>>"


ADDR = ("addr", ADDR_TYPE)


PRED = ("p", "i1")


@functools.cache
def attr(layout: object) -> str:
    """A register or TMEM layout as JAX encodes it in an attribute."""
    with reference.shared_context():
        return str(jax_layouts.to_layout_attr(layout))


def tmem_default(packing: int = 1) -> str:
    return attr(tcgen05.tmem_default_layout(packing))


def tmem_half_lane(columns: int, packing: int = 1) -> str:
    return attr(tcgen05.tmem_half_lane_layout(columns, packing))


def as_register(tmem_layout: tcgen05.TMEMLayout) -> str:
    return attr(tmem_layout.as_tiled_layout())


TCGEN05 = "TCGEN05"


WGMMA = "WGMMA"


NAMED = {TCGEN05: fa.TCGEN05_LAYOUT, WGMMA: fa.WGMMA_LAYOUT}


def reg(name: str) -> str:
    return attr(NAMED[name])


def tiled(rows: int, cols: int, swizzle: int | None) -> str:
    """One SMEM ref's transforms: a tiling and a swizzle (``None``: the tile alone)."""
    if swizzle is None:
        return f"[#mosaic_gpu.tile<[{rows}, {cols}]>]"
    return f"[#mosaic_gpu.tile<[{rows}, {cols}]>, #mosaic_gpu.swizzle<{swizzle} : i32>]"


UNTILED = "[]"


def array(*items: str) -> str:
    return f"[{', '.join(items)}]"


def alloc(name: str, ty: str, *, collective: bool = False, packing: int = 1) -> str:
    return (
        f'%{name} = "mosaic_gpu.tmem_alloc"(%addr) <{{collective = {_bool(collective)}, '
        f"packing = {packing} : i32}}> : ({ADDR_TYPE}) -> {tmem_type(ty)}"
    )


def dealloc(ref: str, ty: str) -> str:
    return f'"mosaic_gpu.tmem_dealloc"(%{ref}) : ({tmem_type(ty)}) -> ()'


def tmem_cast(name: str, ref: str, ty: str, layout: str) -> str:
    return (
        f'%{name} = "mosaic_gpu.tmem_layout_cast"(%{ref}) <{{new_layout = {layout}}}> : '
        f"({tmem_type(ty)}) -> {tmem_type(ty)}"
    )


def slice_tmem(
    name: str, ref: str, ref_ty: str, ty: str, offset: int, alias_id: int | None = None
) -> str:
    alias = f"alias_id = {alias_id} : i64, " if alias_id is not None else ""
    return (
        f'%{name} = "mosaic_gpu.slice_tmem"(%{ref}) <{{{alias}offset = {offset} : i32}}> : '
        f"({tmem_type(ref_ty)}) -> {tmem_type(ty)}"
    )


def load_tmem(name: str, ref: str, ty: str) -> str:
    return f'%{name} = "mosaic_gpu.async_load_tmem"(%{ref}) : ({tmem_type(ty)}) -> vector<{ty}>'


def store_tmem(value: str, ref: str, ty: str) -> str:
    return (
        f'"mosaic_gpu.async_store_tmem"(%{value}, %{ref}) : (vector<{ty}>, {tmem_type(ty)}) -> ()'
    )


def load_gmem(name: str, ref: str, ty: str) -> str:
    """An unoptimized GMEM load: an optimized one must coalesce, which TCGEN05 and
    WGMMA do not for every type (JAX's answer would then not lower, and smalto's
    differ: ``test_gmem_transfer``); these tests are about the other end."""
    return (
        f'%{name} = "mosaic_gpu.vector_load"(%{ref}) <{{optimized = false}}> : '
        f"(memref<{ty}>) -> vector<{ty}>"
    )


def layout_cast(name: str, value: str, ty: str, layout: str) -> str:
    return (
        f'%{name} = "mosaic_gpu.layout_cast"(%{value}) <{{new_layout = {layout}}}> : '
        f"(vector<{ty}>) -> vector<{ty}>"
    )


def copy_to_tmem(op: str, source: str, source_ty: str, dest: str, dest_ty: str) -> str:
    return (
        f'"mosaic_gpu.{op}"(%{source}, %{dest}) <{{collective = false}}> : '
        f"({source_ty}, {tmem_type(dest_ty)}) -> ()"
    )


def mma(
    acc_ty: str,
    a_ty: str,
    b_ty: str,
    *,
    collective: bool = False,
    scales: tuple[str, str] | None = None,
    sparse_meta: str | None = None,
) -> str:
    """``tcgen05_mma(%acc, %a, %b, %p [, %sa, %sb] [, %meta])``; types as written in the op."""
    operands = ["%acc", "%a", "%b", "%p"]
    types = [tmem_type(acc_ty), a_ty, b_ty, "i1"]
    segments = [1, 1, 1, 1, 0, 0, 0]
    if scales is not None:
        operands += ["%sa", "%sb"]
        types += [tmem_type(scales[0]), tmem_type(scales[1])]
        segments[4] = segments[5] = 1
    if sparse_meta is not None:
        operands.append("%meta")
        types.append(tmem_type(sparse_meta))
        segments[6] = 1
    return (
        f'"mosaic_gpu.tcgen05_mma"({", ".join(operands)}) <{{collective = {_bool(collective)}, '
        f"operandSegmentSizes = array<i32: {', '.join(map(str, segments))}>}}> : "
        f"({', '.join(types)}) -> ()"
    )


def mma_kernel(
    acc: str,
    a: str,
    b: str,
    *,
    collective: bool = False,
    a_strides: Sequence[int] | None = None,
    b_strides: Sequence[int] | None = None,
    a_in_tmem: bool = False,
    extra: Sequence[str] = (),
    scales: tuple[str, str] | None = None,
    sparse_meta: str | None = None,
) -> str:
    """A kernel that allocates the accumulator (and A, if in TMEM), slices A and B from
    SMEM, runs ``extra`` ops (allocating scales or metadata), then the MMA."""
    slice_smem = SmemSlicer()
    b_ty = smem_type(b, b_strides)
    lines = [alloc("acc", acc, collective=collective)]
    if a_in_tmem:
        packing = 32 // _bitwidth(a)
        lines.append(alloc("a", a, collective=collective, packing=packing))
        a_ty = tmem_type(a)
    else:
        a_ty = smem_type(a, a_strides)
        lines.append(slice_smem("a", a_ty))
    lines += [slice_smem("b", b_ty), *extra]
    lines.append(
        mma(acc, a_ty, b_ty, collective=collective, scales=scales, sparse_meta=sparse_meta)
    )
    return func_module(lines, [ADDR, PRED])


def _bool(value: bool) -> str:
    return "true" if value else "false"


def _bitwidth(ty: str) -> int:
    element = ty.rsplit("x", 1)[1]
    return {"f32": 32, "i32": 32, "f16": 16, "bf16": 16, "i8": 8, "f8E5M2": 8}[element]


def infer(text: str, arch: tuple[int, int] = BLACKWELL) -> list[tuple[str, dict[str, str]]]:
    """smalto's attributes on ``text``, after checking they are identical to JAX's."""
    ctx = reference.shared_context()
    ours, _ = reference.smalto_attributes(text, arch, ctx)
    theirs, _ = reference.jax_attributes(text, arch, ctx)
    assert reference.diff_attributes(theirs, ours) == []
    return ours


def on(attributes: list[tuple[str, dict[str, str]]], op_name: str, nth: int = 0) -> dict[str, str]:
    """The attributes of the ``nth`` annotated op called ``op_name``."""
    found = [attrs for key, attrs in attributes if key.split(":", 1)[1] == op_name]
    assert len(found) > nth, f"no {nth}th annotated {op_name} in {attributes}"
    return found[nth]


def rejected(text: str, *, jax_rejects: bool = True, arch: tuple[int, int] = BLACKWELL) -> str:
    """smalto's error message on ``text``; checks JAX's pass fails too when ``jax_rejects``."""
    ctx = reference.shared_context()
    module = parse(text, ctx)
    before = str(module)
    with pytest.raises(smalto.InferenceError) as error:
        smalto.infer_layout(module, arch=arch)
    reference.pop_dump_name(module)  # set once the rules have run, as JAX's pass does
    assert str(module) == before, "a failed inference must leave the module unchanged"
    message = str(error.value)
    assert message.startswith(FAILURE_PREFIX)
    if jax_rejects:
        with pytest.raises(ValueError):
            reference.jax_attributes(text, arch, ctx)
    return message
