# ruff: noqa: E501  (layout attributes and kernel lines are kept whole)
"""Hand-written kernels for the checker's tests: layouts as attributes, kernel text, and
ways to break JAX's or smalto's annotations.
"""

from __future__ import annotations

import reference
from jax._src.lib.mlir import ir

import smalto
from smalto.check import Violation, check

HOPPER, BLACKWELL = (9, 0), (10, 0)

SMEM = "#gpu.address_space<workgroup>"


TMEM = "#mosaic_gpu.tmem"


WGMMA = "#mosaic_gpu.TiledLayout<[[64, 8], [16, 8], [8, 8], [2]], warp_dims = [-7], lane_dims = [-3, -2], vector_dim = -1>"


WGMMA_TRANSPOSED = "#mosaic_gpu.TiledLayout<[[64, 8], [16, 8], [8, 8], [2, 2], [2, 1]], warp_dims = [-10], lane_dims = [-6, -3, -5], vector_dim = -2>"


WGMMA_ROW = "#mosaic_gpu.TiledLayout<[[64], [16], [8], [1]], warp_dims = [-4], lane_dims = [-2, #mosaic_gpu.Replicated<times = 4>], vector_dim = -1>"


WGMMA_COL = "#mosaic_gpu.TiledLayout<[[8], [2]], warp_dims = [#mosaic_gpu.Replicated<times = 4>], lane_dims = [#mosaic_gpu.Replicated<times = 8>, -2], vector_dim = -1>"


def strided(shape: tuple[int, ...], vec: int) -> str:
    return f"#mosaic_gpu.WGStridedFragLayout<[{', '.join(map(str, shape))}], {vec}>"


def splat(shape: tuple[int, ...]) -> str:
    return f"#mosaic_gpu.WGSplatFragLayout<[{', '.join(map(str, shape))}]>"


def tiled(*tiling: int, swizzle: int | None | str = "implied") -> str:
    """An SMEM transform list as jax 0.12.0.1 writes it: ``[tile]`` or ``[tile, swizzle]``.

    By default the swizzle is the minor tile's width for 16-bit elements, where
    that is 32, 64 or 128 bytes (what JAX conjures); ``swizzle=None`` leaves it out.
    """
    if swizzle == "implied":
        width = tiling[-1] * 2
        swizzle = width if width in (32, 64, 128) else None
    tile = f"#mosaic_gpu.tile<[{', '.join(map(str, tiling))}]>"
    if swizzle is None:
        return f"[{tile}]"
    return f"[{tile}, #mosaic_gpu.swizzle<{swizzle} : i32>]"


def swizzled(swizzle: int) -> str:
    """A swizzle alone, no tiling (new in jax 0.12.0.1)."""
    return f"[#mosaic_gpu.swizzle<{swizzle} : i32>]"


def kernel(body: str, args: str = "") -> str:
    return f'func.func @k({args}) {{\n{body}\n  "func.return"() : () -> ()\n}}\n'


def smem(shape: str, layout: str = "") -> str:
    return f"memref<{shape}{layout}, {SMEM}>"


# A 128x64 f16 SMEM ref, and a pointwise kernel through it: load, add a constant, store.
REF_128x64 = smem("128x64xf16")
POINTWISE = kernel(
    f"""
  %c = "arith.constant"() <{{value = dense<1.0> : vector<128x64xf16>}}> : () -> vector<128x64xf16>
  %r = "mosaic_gpu.slice_smem"() <{{offset = 0 : i32}}> : () -> {REF_128x64}
  %x = "mosaic_gpu.vector_load"(%r) : ({REF_128x64}) -> vector<128x64xf16>
  %y = "arith.addf"(%x, %c) : (vector<128x64xf16>, vector<128x64xf16>) -> vector<128x64xf16>
  "mosaic_gpu.vector_store"(%y, %r) : (vector<128x64xf16>, {REF_128x64}) -> ()
"""
)


def annotated(text: str, arch: tuple[int, int] = HOPPER) -> ir.Module:
    """``text`` annotated by smalto; the checker must accept it as it is."""
    module = reference.parse(text, reference.shared_context())
    smalto.infer_layout(module, arch=arch)
    assert check(module, arch) == []
    return module


def ops_named(module: ir.Module, name: str) -> list[ir.Operation]:
    found: list[ir.Operation] = []

    def visit(op: ir.Operation) -> ir.WalkResult:
        if op.name == name:
            found.append(op)
        return ir.WalkResult.ADVANCE

    module.operation.walk(visit, ir.WalkOrder.PRE_ORDER)
    return found


def set_attr(module: ir.Module, op_name: str, attr: str, text: str, nth: int = 0) -> None:
    op = ops_named(module, op_name)[nth]
    with module.context:
        op.attributes[attr] = ir.Attribute.parse(text)


def set_entry(
    module: ir.Module, op_name: str, attr: str, index: int, text: str, nth: int = 0
) -> None:
    """Replaces entry ``index`` of an array attribute."""
    op = ops_named(module, op_name)[nth]
    with module.context:
        entries = list(ir.ArrayAttr(op.attributes[attr]))
        entries[index] = ir.Attribute.parse(text)
        op.attributes[attr] = ir.ArrayAttr.get(entries)


def caught(
    module: ir.Module, op_name: str, fragment: str, arch: tuple[int, int] = HOPPER
) -> Violation:
    violations = check(module, arch)
    matching = [v for v in violations if v.op == op_name and fragment in v.message]
    assert matching, "\n".join(map(str, violations)) or "no violation"
    assert not any("cannot be checked" in v.message for v in violations), violations
    return matching[0]
