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
from check_kit import (
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
from corpus_lowering import apply_attributes
from jax._src.lib.mlir import ir
from jax.experimental.mosaic.gpu import fragmented_array as fa
from jax.experimental.mosaic.gpu import layouts as jax_layouts
from jax.experimental.mosaic.gpu.mma import MMALayouts

from smalto.check import check


def by_jax(text: str, arch: tuple[int, int] = HOPPER, *, onto: str | None = None) -> ir.Module:
    """``text`` annotated by JAX's pass; the checker must accept it unless ``onto`` is given.

    ``onto``: parse this text instead and give it JAX's attributes for ``text``
    (same ops, some property changed), to break what JAX's answer relies on.
    """
    attributes, _ = reference.jax_attributes(text, arch)
    module = reference.parse(onto or text, reference.shared_context())
    apply_attributes(module, attributes)
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
    caught(module, "mosaic_gpu.wgmma", "B (operand #2) is tiled 8×32, no swizzle")


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
        "the SMEM source (operand #0) is tiled 8×16, no swizzle",
        BLACKWELL,
    )


# --- async copies: TMA's swizzle rule, operand segments, alias ids ------------------------------

GMEM = "memref<4096x4096xbf16>"


def copy_kernel(transforms: str, *, barrier: bool = True, second_index: int = 0) -> str:
    ref, bar = smem("128x128xbf16"), smem("!mosaic_gpu.barrier")
    operands, types = ("%g, %r, %b, %i, %j", f"{GMEM}, {ref}, {bar}, i32, i32")
    if not barrier:  # cp.async: no barrier segment
        operands, types = ("%g, %r, %i, %j", f"{GMEM}, {ref}, i32, i32")
    return kernel(
        f"""
  %r0 = "mosaic_gpu.slice_smem"() <{{offset = 0 : i32}}> : () -> {ref}
  %r = "mosaic_gpu.with_transforms"(%r0) <{{transforms = {transforms}}}> : ({ref}) -> {ref}
  %b = "mosaic_gpu.slice_smem"() <{{offset = 65536 : i32}}> : () -> {bar}
  %i = "arith.constant"() <{{value = 0 : i32}}> : () -> i32
  %j = "arith.constant"() <{{value = {second_index} : i32}}> : () -> i32
  "mosaic_gpu.async_load"({operands}) <{{collective = [], oob_fill_mode = {2 if barrier else 1} : i32, operandSegmentSizes = array<i32: 1, 1, {int(barrier)}, 2, 0, 0>, slice_lengths = array<i64: 128, 128>}}> : ({types}) -> ()
""",
        f"%g: {GMEM}",
    )


def test_a_swizzled_copy_moves_rows_of_exactly_the_swizzle() -> None:
    by_jax(copy_kernel(tiled(8, 64, swizzle=128)))
    # JAX 0.12.0.1 accepts a minor tile wider than the swizzle (it is a valid
    # ref), but TMA needs the copied minor dim to be exactly the swizzle wide:
    # JAX's own answer does not lower.
    module = by_jax(
        copy_kernel(tiled(8, 128, swizzle=128)), onto=copy_kernel(tiled(8, 128, swizzle=128))
    )
    assert transforms_of(module, "mosaic_gpu.async_load") == f"[{tiled(8, 128, swizzle=128)}]"
    caught(module, "mosaic_gpu.async_load", "exactly 64 elements, not 128")
    from jax.experimental.mosaic.gpu import launch_context

    with reference.shared_context(), ir.Location.unknown():
        gmem = ir.MemRefType(ir.Type.parse(GMEM))
        with pytest.raises(
            ValueError, match="require the last dimension of the slice to be exactly"
        ):
            # The check ``async_copy`` runs on the tiled slice (16, 1, 8, 128).
            launch_context.LaunchContext._check_tma_strides_and_swizzle(
                None,  # type: ignore[arg-type]  (reads nothing of the context)
                gmem,
                (16, 1, 8, 128),
                128,
            )


def test_a_copy_without_barrier_reads_its_indices_after_two_operands() -> None:
    # async_load's barrier is optional: the indices follow the operand segments.
    module = by_jax(copy_kernel("[]", barrier=False, second_index=8))
    assert not any("cannot be checked" in v.message for v in check(module))
    for op, attr in (
        ("mosaic_gpu.with_transforms", "out_transforms"),
        ("mosaic_gpu.async_load", "in_transforms"),
    ):
        set_attr(module, op, attr, f"[{tiled(8, 64)}]")
    # The second index (8) is known: a 64-column tile does not divide it.
    caught(module, "mosaic_gpu.async_load", "known offset divisors) (128, 8)")


def test_slices_with_one_alias_id_are_one_ref_whatever_their_offsets() -> None:
    ref = smem("128x64xf16")
    text = kernel(
        f"""
  %r = "mosaic_gpu.slice_smem"() <{{offset = 0 : i32, alias_id = 1 : i64}}> : () -> {ref}
  %s = "mosaic_gpu.slice_smem"() <{{offset = 16384 : i32, alias_id = 1 : i64}}> : () -> {ref}
  %x = "mosaic_gpu.vector_load"(%r) : ({ref}) -> vector<128x64xf16>
  %y = "mosaic_gpu.layout_cast"(%x) <{{new_layout = {WGMMA}}}> : (vector<128x64xf16>) -> vector<128x64xf16>
  %z = "mosaic_gpu.vector_load"(%s) : ({ref}) -> vector<128x64xf16>
"""
    )
    module = by_jax(text)
    # JAX gave both slices the WGMMA load's tiling; give the second another one.
    for op, attr, nth in (
        ("mosaic_gpu.slice_smem", "out_transforms", 1),
        ("mosaic_gpu.vector_load", "in_transforms", 1),
    ):
        set_attr(module, op, attr, "[[]]", nth=nth)
    set_attr(
        module, "mosaic_gpu.vector_load", "out_layouts", f"[{strided_text((128, 64), 8)}]", nth=1
    )
    caught(module, "mosaic_gpu.slice_smem", "(alias_id 1) but is untiled where that one is tiled")


# --- register layouts: mma, relayouts, strict casts, vector_concat ------------------------------


def test_mma_layouts_follow_the_accumulator_shape() -> None:
    entry = next(e for e in reference.bundled_entries() if e.key.endswith("test_mma4"))
    module = by_jax(entry.path.read_text())
    # A 128x8 accumulator takes four warps along M; A laid out for two is wrong.
    with reference.shared_context():
        i8 = ir.IntegerType.get_signless(8)
        two_warps = attr_text(MMALayouts(i8, m_warps=2).lhs)
    set_entry(module, "mosaic_gpu.mma", "in_layouts", 1, two_warps)
    caught(module, "mosaic_gpu.mma", "operand A must be")


def cast_chain(element: str, second: str, strict: bool = False) -> str:
    ref = smem(f"128x64x{element}")
    vec = f"vector<128x64x{element}>"
    strict_text = ", strict = true" if strict else ""
    return kernel(
        f"""
  %r = "mosaic_gpu.slice_smem"() <{{offset = 0 : i32}}> : () -> {ref}
  %x = "mosaic_gpu.vector_load"(%r) : ({ref}) -> {vec}
  %w = "mosaic_gpu.layout_cast"(%x) <{{new_layout = {WGMMA}}}> : ({vec}) -> {vec}
  %u = "mosaic_gpu.layout_cast"(%w) <{{new_layout = {second}{strict_text}}}> : ({vec}) -> {vec}
"""
    )


def test_wgmma_relayouts_to_upcast_2x_for_narrow_types_only() -> None:
    upcast = attr_text(fa.WGMMA_LAYOUT_UPCAST_2X)
    by_jax(cast_chain("bf16", upcast))  # new in jax 0.12.0.1: WGMMA -> UPCAST_2X
    module = by_jax(cast_chain("bf16", upcast), onto=cast_chain("f32", upcast))
    caught(module, "mosaic_gpu.layout_cast", "cannot relayout WGMMA to WGMMA_UPCAST_2X")


def test_a_strict_cast_only_changes_a_splat() -> None:
    by_jax(cast_chain("bf16", WGMMA_TRANSPOSED))
    module = by_jax(
        cast_chain("bf16", WGMMA_TRANSPOSED), onto=cast_chain("bf16", WGMMA_TRANSPOSED, strict=True)
    )
    caught(module, "mosaic_gpu.layout_cast", "a strict cast changes only a splat's layout")


def splat_cast(shape: str) -> str:
    vec = f"vector<{shape}xf32>"
    return kernel(
        f"""
  %c = "arith.constant"() <{{value = dense<1.0> : {vec}}}> : () -> {vec}
  %w = "mosaic_gpu.layout_cast"(%c) <{{new_layout = {WGMMA}, strict = true}}> : ({vec}) -> {vec}
"""
    )


def test_a_splat_becomes_tiled_when_its_trailing_dims_hold_whole_tiles() -> None:
    # jax 0.12.0.1 matches the tile against the splat's trailing dims, (64, 128)
    # here (jax 0.10.2 matched the leading ones, (2, 64), and refused).
    by_jax(splat_cast("2x64x128"))
    # Trailing dims (2, 128) hold no whole (64, 8) tile: no tiled value of this
    # shape exists, which is the only way a splat fails the rule.
    module = reference.parse(splat_cast("64x2x128"), reference.shared_context())
    for op, attr, layout in (
        ("arith.constant", "out_layouts", splat((64, 2, 128))),
        ("mosaic_gpu.layout_cast", "in_layouts", splat((64, 2, 128))),
        ("mosaic_gpu.layout_cast", "out_layouts", WGMMA),
    ):
        set_attr(module, op, attr, f"[{layout}]")
    caught(
        module,
        "mosaic_gpu.layout_cast",
        "result #0 of shape (64, 2, 128) cannot be laid out as WGMMA",
    )


CONCAT = kernel(
    f"""
  %r = "mosaic_gpu.slice_smem"() <{{offset = 0 : i32}}> : () -> {smem("64x64xf32")}
  %s = "mosaic_gpu.slice_smem"() <{{offset = 16384 : i32}}> : () -> {smem("64x128xf32")}
  %x = "mosaic_gpu.vector_load"(%r) : ({smem("64x64xf32")}) -> vector<64x64xf32>
  %y = "mosaic_gpu.vector_load"(%s) : ({smem("64x128xf32")}) -> vector<64x128xf32>
  %a = "mosaic_gpu.layout_cast"(%x) <{{new_layout = {WGMMA}}}> : (vector<64x64xf32>) -> vector<64x64xf32>
  %b = "mosaic_gpu.layout_cast"(%y) <{{new_layout = {WGMMA}}}> : (vector<64x128xf32>) -> vector<64x128xf32>
  %c = "mosaic_gpu.vector_concat"(%a, %b) <{{dimension = 1 : i32}}> : (vector<64x64xf32>, vector<64x128xf32>) -> vector<64x192xf32>
"""
)


def test_vector_concat_shares_one_tiled_layout() -> None:
    module = by_jax(CONCAT)
    set_entry(module, "mosaic_gpu.vector_concat", "in_layouts", 1, WGMMA_TRANSPOSED)
    caught(module, "mosaic_gpu.vector_concat", "concatenated values share one tiled layout")
    for attr, layouts in (
        ("in_layouts", [splat((64, 64)), splat((64, 128))]),
        ("out_layouts", [splat((64, 192))]),
    ):
        set_attr(module, "mosaic_gpu.vector_concat", attr, f"[{', '.join(layouts)}]")
    caught(module, "mosaic_gpu.vector_concat", "does not concatenate splats")


# --- async_load_tmem with a fused reduction -------------------------------------------------------


def reducing_load(cast: bool) -> str:
    tmem = f"memref<128x128xf32, {TMEM}>"
    native = attr_text(fa.TMEM_NATIVE_LAYOUT)
    to_native = (
        f'  %y = "mosaic_gpu.layout_cast"(%x) <{{new_layout = {native}, strict = true}}> : (vector<128x128xf32>) -> vector<128x128xf32>'
        if cast
        else ""
    )
    return kernel(
        f"""
  %addr = "mosaic_gpu.slice_smem"() <{{offset = 0 : i32}}> : () -> {smem("i32")}
  %t = "mosaic_gpu.tmem_alloc"(%addr) <{{collective = false, packing = 1 : i32}}> : ({smem("i32")}) -> {tmem}
  %x, %m = "mosaic_gpu.async_load_tmem"(%t) <{{reduce = 1 : i32}}> : ({tmem}) -> (vector<128x128xf32>, vector<128xf32>)
{to_native}
"""
    )


def test_a_reducing_tmem_load_needs_the_tmem_native_layout() -> None:
    # Pinned to TMEM_NATIVE by a strict cast, JAX's answer lowers.
    by_jax(reducing_load(cast=True), BLACKWELL)
    # Left to itself, JAX's pass tries TCGEN05 first and keeps it, which the
    # lowering cannot fuse a reduction into.
    module = by_jax(reducing_load(cast=False), BLACKWELL, onto=reducing_load(cast=False))
    caught(
        module, "mosaic_gpu.async_load_tmem", "a load that reduces must be TMEM_NATIVE", BLACKWELL
    )
    assert (
        _fused_load_error(fa.TCGEN05_LAYOUT) == "Fused load-reduce is not supported for this layout"
    )
    assert _fused_load_error(fa.TMEM_NATIVE_LAYOUT) is None


def _fused_load_error(layout: fa.TiledLayout) -> str | None:
    """What ``TMEMRef.load`` (the lowering of the op) says to a max-reducing f32 load."""
    from jax._src.lib.mlir.dialects import arith, func
    from jax.experimental.mosaic.gpu import tcgen05

    with reference.shared_context(), ir.Location.unknown():
        module = ir.Module.create()
        i32, f32 = ir.IntegerType.get_signless(32), ir.F32Type.get()
        module.operation.attributes["mosaic_gpu.arch_major"] = ir.IntegerAttr.get(i32, 10)
        module.operation.attributes["mosaic_gpu.arch_minor"] = ir.IntegerAttr.get(i32, 0)
        with ir.InsertionPoint(module.body):
            probe = func.FuncOp("probe", ir.FunctionType.get([], []))
        with ir.InsertionPoint(probe.add_entry_block()):
            address = arith.constant(i32, 0)
            ref = tcgen05.TMEMRef(address, (128, 128), f32, tcgen05.tmem_default_layout(1))
            try:
                ref.load(layout, None, reduce="max")
            except ValueError as error:
                return str(error)
    return None
