# ruff: noqa: E501  (MLIR fixtures read best one op per line)
"""The checker's jax 0.12.0.1 requirements, one by one.

For each: a module annotated by JAX's own pass (or by hand, where JAX has no
answer) that the checker accepts, and the same module broken so that it no
longer lowers, which the checker rejects on the op that breaks it. Where
JAX's own answer does not lower, the test says so and shows the lowering fail.
"""

from __future__ import annotations

import pytest
import reference
from jax._src.lib.mlir import ir
from jax.experimental.mosaic.gpu import fragmented_array as fa
from jax.experimental.mosaic.gpu import layouts as jax_layouts
from jax.experimental.mosaic.gpu.mma import MMALayouts
from test_check import (
    BLACKWELL,
    HOPPER,
    TMEM,
    WGMMA,
    WGMMA_TRANSPOSED,
    caught,
    kernel,
    ops_named,
    set_attr,
    set_entry,
    smem,
    splat,
    swizzled,
    tiled,
)

from smalto.check import check


def by_jax(text: str, arch: tuple[int, int] = HOPPER, *, onto: str | None = None) -> ir.Module:
    """``text`` annotated by JAX's pass; the checker must accept it unless ``onto`` is given.

    ``onto``: parse this text instead and give it JAX's attributes for ``text``
    (same ops, some property changed), to break what JAX's answer relies on.
    """
    attributes, _ = reference.jax_attributes(text, arch)
    module = reference.parse(onto or text, reference.shared_context())
    by_index = {int(key.split(":", 1)[0]): attrs for key, attrs in attributes}
    index = 0

    def visit(op: ir.Operation) -> ir.WalkResult:
        nonlocal index
        for name, attr in by_index.get(index, {}).items():
            op.attributes[name] = ir.Attribute.parse(attr)
        index += 1
        return ir.WalkResult.ADVANCE

    with module.context, ir.Location.unknown():
        module.operation.walk(visit, ir.WalkOrder.PRE_ORDER)
    if onto is None:
        assert check(module, arch) == [], "\n".join(map(str, check(module, arch)))
    return module


def attr_text(layout: object) -> str:
    with reference.shared_context(), ir.Location.unknown():
        return str(jax_layouts.to_layout_attr(layout))  # type: ignore[arg-type]


def transforms_of(module: ir.Module, op: str, nth: int = 0) -> str:
    return str(ops_named(module, op)[nth].attributes["in_transforms"])


# --- SMEM transforms: [swizzle] alone, [tile] alone, validity --------------------------------


def swizzled_load(columns: int, transforms: str, optimized: str = "") -> str:
    ref = smem(f"128x{columns}xbf16")
    return kernel(
        f"""
  %r0 = "mosaic_gpu.slice_smem"() <{{offset = 0 : i32}}> : () -> {ref}
  %r = "mosaic_gpu.with_transforms"(%r0) <{{transforms = {transforms}}}> : ({ref}) -> {ref}
  %x = "mosaic_gpu.vector_load"(%r) <{{{optimized}}}> : ({ref}) -> vector<128x{columns}xbf16>
  %y = "mosaic_gpu.layout_cast"(%x) <{{new_layout = {WGMMA}}}> : (vector<128x{columns}xbf16>) -> vector<128x{columns}xbf16>
"""
    ).replace("<{}>", "")


def test_a_swizzle_alone_is_kept_and_transfers() -> None:
    # 64 bf16 columns are 128 bytes: a whole 128-byte swizzle, without tiling.
    module = by_jax(swizzled_load(64, swizzled(128)))
    assert transforms_of(module, "mosaic_gpu.vector_load") == f"[{swizzled(128)}]"
    # Strided registers never move through a swizzled ref.
    set_attr(module, "mosaic_gpu.vector_load", "out_layouts", f"[{strided_text((128, 64), 8)}]")
    caught(module, "mosaic_gpu.vector_load", "no tiling and no swizzle")


def strided_text(shape: tuple[int, ...], vec: int) -> str:
    return f"#mosaic_gpu.WGStridedFragLayout<[{', '.join(map(str, shape))}], {vec}>"


def test_a_swizzle_must_fit_the_minor_dim() -> None:
    # 32 bf16 columns are 64 bytes: a 128-byte swizzle does not fit, a 64-byte one does.
    by_jax(swizzled_load(32, swizzled(64)))
    module = by_jax(swizzled_load(32, swizzled(64)), onto=swizzled_load(32, swizzled(128)))
    for op, attr in (
        ("mosaic_gpu.with_transforms", "out_transforms"),
        ("mosaic_gpu.vector_load", "in_transforms"),
    ):
        set_attr(module, op, attr, f"[{swizzled(128)}]")
    caught(module, "mosaic_gpu.with_transforms", "do not divide the minor dim (32)")


def test_a_tile_alone_is_unswizzled() -> None:
    # Unswizzled (8, 64) tiles of bf16: rows 128 bytes apart, every row in the
    # same banks. Only an unoptimized WGMMA load exists.
    unswizzled = tiled(8, 64, swizzle=None)
    module = by_jax(swizzled_load(64, unswizzled, "optimized = false"))
    assert transforms_of(module, "mosaic_gpu.vector_load") == f"[{unswizzled}]"
    set_attr(module, "mosaic_gpu.vector_load", "optimized", "true")
    caught(module, "mosaic_gpu.vector_load", "no optimized transfer")
    # With the swizzle, the optimized load exists.
    by_jax(swizzled_load(64, tiled(8, 64, swizzle=128), "optimized = true"))


def test_a_tiling_wider_than_the_swizzle_is_valid() -> None:
    # jax 0.12.0.1: the minor tile (128 bf16, 256 bytes) need only be a multiple of the swizzle.
    module = by_jax(swizzled_load(128, tiled(8, 128, swizzle=128)))
    assert check(module) == []


def test_no_tiling_or_swizzle_on_a_ref_with_two_unit_strides() -> None:
    ref = smem("128x64x1xbf16")
    text = kernel(
        f"""
  %r = "mosaic_gpu.slice_smem"() <{{offset = 0 : i32}}> : () -> {ref}
  %x = "mosaic_gpu.vector_load"(%r) : ({ref}) -> vector<128x64x1xbf16>
"""
    )
    module = by_jax(text)
    for op, attr in (
        ("mosaic_gpu.slice_smem", "out_transforms"),
        ("mosaic_gpu.vector_load", "in_transforms"),
    ):
        set_attr(module, op, attr, f"[{swizzled(128)}]")
    caught(module, "mosaic_gpu.slice_smem", "two unit-stride dims cannot be swizzled")


# --- transfers: an unset `optimized` is optimized ---------------------------------------------


def store_kernel(optimized: str) -> str:
    ref = smem("128x64xf16")
    return kernel(
        f"""
  %r0 = "mosaic_gpu.slice_smem"() <{{offset = 0 : i32}}> : () -> {ref}
  %r = "mosaic_gpu.with_transforms"(%r0) <{{transforms = []}}> : ({ref}) -> {ref}
  %c = "arith.constant"() <{{value = dense<1.0> : vector<128x64xf16>}}> : () -> vector<128x64xf16>
  %w = "mosaic_gpu.layout_cast"(%c) <{{new_layout = {WGMMA}}}> : (vector<128x64xf16>) -> vector<128x64xf16>
  "mosaic_gpu.vector_store"(%w, %r) <{{{optimized}}}> : (vector<128x64xf16>, {ref}) -> ()
"""
    ).replace("<{}>", "")


def test_an_unset_optimized_store_must_be_optimized() -> None:
    # WGMMA into an untiled ref: only an unoptimized plan exists (jax 0.10.2
    # let an unset `optimized` fall back to it; jax 0.12.0.1 does not).
    by_jax(store_kernel("optimized = false"))
    module = by_jax(store_kernel("optimized = false"), onto=store_kernel(""))
    caught(module, "mosaic_gpu.vector_store", "no optimized transfer")


# --- MMA operands: exact (tiling, swizzle) pairs -------------------------------------------------


def wgmma_b(b_transforms: str) -> str:
    b_ref = smem("64x128xf16")
    return kernel(
        f"""
  %a = "arith.constant"() <{{value = dense<1.0> : vector<64x64xf16>}}> : () -> vector<64x64xf16>
  %b0 = "mosaic_gpu.slice_smem"() <{{offset = 0 : i32}}> : () -> {b_ref}
  %b = "mosaic_gpu.with_transforms"(%b0) <{{transforms = {b_transforms}}}> : ({b_ref}) -> {b_ref}
  %acc = "arith.constant"() <{{value = dense<0.0> : vector<64x128xf32>}}> : () -> vector<64x128xf32>
  %d = "mosaic_gpu.wgmma"(%acc, %a, %b) : (vector<64x128xf32>, vector<64x64xf16>, {b_ref}) -> vector<64x128xf32>
"""
    )


def test_an_mma_operand_is_an_exact_tiling_and_swizzle() -> None:
    by_jax(wgmma_b(tiled(8, 32, swizzle=64)))
    # The same tile without its swizzle no longer fits wgmma (jax 0.12.0.1).
    module = by_jax(wgmma_b(tiled(8, 32, swizzle=64)), onto=wgmma_b(tiled(8, 32, swizzle=None)))
    for op, attr in (
        ("mosaic_gpu.with_transforms", "out_transforms"),
        ("mosaic_gpu.wgmma", "in_transforms"),
    ):
        set_attr(module, op, attr, f"[{tiled(8, 32, swizzle=None)}]")
    caught(module, "mosaic_gpu.wgmma", "B (operand #2) is tiled (8, 32), no swizzle")


def smem_to_tmem(source_transforms: str) -> str:
    source = smem("128x64xbf16")
    tmem = f"memref<128x64xbf16, {TMEM}>"
    return kernel(
        f"""
  %addr = "mosaic_gpu.slice_smem"() <{{offset = 0 : i32}}> : () -> {smem("i32")}
  %t = "mosaic_gpu.tmem_alloc"(%addr) <{{collective = false, packing = 2 : i32}}> : ({smem("i32")}) -> {tmem}
  %s0 = "mosaic_gpu.slice_smem"() <{{offset = 1024 : i32}}> : () -> {source}
  %s = "mosaic_gpu.with_transforms"(%s0) <{{transforms = {source_transforms}}}> : ({source}) -> {source}
  "mosaic_gpu.async_store_smem_to_tmem"(%s, %t) : ({source}, {tmem}) -> ()
"""
    )


def test_smem_to_tmem_copies_read_the_unswizzled_16_byte_tile() -> None:
    sixteen_bytes = tiled(8, 8, swizzle=None)
    by_jax(smem_to_tmem(sixteen_bytes), BLACKWELL)
    # An unswizzled 32-byte tile is not one of the copy's options.
    wider = tiled(8, 16, swizzle=None)
    module = by_jax(smem_to_tmem(sixteen_bytes), BLACKWELL, onto=smem_to_tmem(wider))
    for op, attr in (
        ("mosaic_gpu.with_transforms", "out_transforms"),
        ("mosaic_gpu.async_store_smem_to_tmem", "in_transforms"),
    ):
        set_attr(module, op, attr, f"[{wider}]")
    caught(
        module,
        "mosaic_gpu.async_store_smem_to_tmem",
        "the SMEM source (operand #0) is tiled (8, 16), no swizzle",
        BLACKWELL,
    )
