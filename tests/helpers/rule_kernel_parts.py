# ruff: noqa: E501  (MLIR op lines read best whole)
"""The registry and building blocks of the per-op kernels of ``rule_kernels``.

The op under test is at ``loc("op")`` (``OP``); pinned values are made by ops
at ``loc("p0")``, ``loc("p1")``... Register values start as splat constants,
cast (not strictly) to the pinned layout, which every tiled layout that tiles
the shape and every strided one can take; a pin on a result is a ``strict``
cast after it. SMEM refs come from ``slice_smem`` with the pinned transforms
(``with_transforms``).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

from jax.experimental.mosaic.gpu import fragmented_array as fa
from rule_agreement import Candidate, Cases, Pin, tag
from rule_kit import HOPPER, kernel, layout_attr_text

from smalto.hw import layouts as hl

BLACKWELL = (10, 0)
Generator = Callable[[str], Cases]
GENERATORS: dict[str, Generator] = {}


def generator(*names: str) -> Callable[[Generator], Generator]:
    def register(fn: Generator) -> Generator:
        for name in names:
            GENERATORS[name] = fn
        return fn

    return register


OP = "op"  # the location of the op under test
ELEMENTWISE_SHAPE = (128, 64)


# --- building blocks ---------------------------------------------------------------------


def vec(shape: Sequence[int], dtype: str) -> str:
    return f"vector<{'x'.join(map(str, shape))}x{dtype}>"


def splat_constant(name: str, ty: str) -> str:
    element = ty.rsplit("x", 1)[1].rstrip(">")
    value = "true" if element == "i1" else ("1" if element.startswith("i") else "1.000000e+00")
    return f'%{name} = "arith.constant"() <{{value = dense<{value}> : {ty}}}> : () -> {ty}'


def cast(name: str, value: str, ty: str, layout: str, at: str, strict: bool = False) -> str:
    extra = ", strict = true" if strict else ""
    return tag(
        f'%{name} = "mosaic_gpu.layout_cast"(%{value}) <{{new_layout = {layout}{extra}}}> '
        f": ({ty}) -> {ty}",
        at,
    )


def is_splat(layout: str) -> bool:
    return layout.startswith("#mosaic_gpu.WGSplatFragLayout")


def carrier(ty: str, layout: str) -> str:
    """What a cast pinning ``layout`` casts to: the layout, or for a splat (no cast
    takes one) a strided layout, into which a splat converts even strictly."""
    if not is_splat(layout):
        return layout
    shape = tuple(int(d) for d in ty.removeprefix("vector<").split("x")[:-1])
    return text_of(fa.WGStridedFragLayout(shape, 1))


def pinned_operand(name: str, ty: str, layout: str, at: str) -> list[str]:
    """``%name`` of type ``ty`` in ``layout``, made at ``loc(at)``: a splat constant
    cast to it; or for a splat, the constant itself, still cast (unused) so that every
    candidate has the same ops."""
    if is_splat(layout):
        return [
            tag(splat_constant(name, ty), at),
            cast(f"{name}_unused", name, ty, carrier(ty, layout), f"{at}_unused"),
        ]
    return [splat_constant(f"{name}_c", ty), cast(name, f"{name}_c", ty, layout, at)]


def pinned_result(name: str, value: str, ty: str, layout: str) -> str:
    """A strict cast of ``%value`` that keeps it in ``layout`` (a splat: converted after)."""
    return cast(name, value, ty, carrier(ty, layout), f"{name}_pin", strict=True)


def text_of(layout: fa.FragmentedLayout) -> str:
    return layout_attr_text(layout)


def register_layouts(shape: tuple[int, ...], bitwidth: int) -> dict[str, str]:
    """The register layouts a value of ``shape`` may be in: splat, strided and the tiled
    layouts whose tile fits, by name."""
    found = {"splat": text_of(fa.WGSplatFragLayout(shape))}
    strided = hl.default_strided(shape, bitwidth)
    if strided is not None:
        found["strided"] = text_of(strided.layout)
    tiled = {
        "WGMMA": hl.WGMMA,
        "WGMMA_8BIT": hl.WGMMA_8BIT,
        "WGMMA_TRANSPOSED": hl.WGMMA_TRANSPOSED,
        "TCGEN05": hl.TCGEN05,
        "WGMMA_ROW": hl.WGMMA_ROW,
        "WGMMA_COL": hl.WGMMA_COL,
        "TCGEN05_ROW": hl.TCGEN05_ROW,
    }
    from smalto.hw.values import Reg

    for name, layout in tiled.items():
        if hl.fits(Reg(layout), shape):
            found[name] = text_of(layout)
    return found


# --- one register operand, pinned; the op under test's line given ---------------------------


def register_cases(
    name: str,
    operand_ty: str,
    layouts: dict[str, str],
    op_line: Callable[[str], str],
    result_ty: str | None = None,
    result_layouts: dict[str, str] | None = None,
    restricted: bool = True,
    arch: tuple[int, int] = HOPPER,
    stricter: dict[str, str] | None = None,
) -> Cases:
    """Per entry of ``layouts``: the operand ``%x`` pinned to it, the op written by
    ``op_line("x")``; with ``result_ty``, its result ``%r`` pinned (strictly) to the
    entry of ``result_layouts`` of the same name (default: the operand's)."""
    candidates = []
    for label, layout in layouts.items():
        lines = [*pinned_operand("x", operand_ty, layout, "p0"), tag(op_line("x"))]
        pins = [Pin("p0", 0, layout)]
        if result_ty is not None:
            result = (result_layouts or layouts)[label]
            lines.append(pinned_result("q", "r", result_ty, result))
            pins.append(Pin(OP, 0, result))
        reason = (stricter or {}).get(label, "")
        candidates.append(Candidate(label, kernel(lines), tuple(pins), arch, reason))
    return Cases(name, tuple(candidates), restricted)


F32_2D = vec(ELEMENTWISE_SHAPE, "f32")


def some(layouts: dict[str, str], *names: str) -> dict[str, str]:
    return {n: layouts[n] for n in names if n in layouts}


def result_cases(name: str, op_line: str, ty: str, labels: Sequence[str], shape, bitwidth) -> Cases:
    layouts = register_layouts(shape, bitwidth)
    candidates = []
    for label in labels:
        lines = [tag(op_line), pinned_result("q", "r", ty, layouts[label])]
        candidates.append(Candidate(label, kernel(lines), (Pin(OP, 0, layouts[label]),)))
    return Cases(name, tuple(candidates))


# --- SMEM refs: transforms pinned by with_transforms ------------------------------------------

WORKGROUP = "#gpu.address_space<workgroup>"


def smem(shape_and_element: str, layout: str = "") -> str:
    return f"memref<{shape_and_element}{', ' + layout if layout else ''}, {WORKGROUP}>"


def transforms(tile: Sequence[int] | None, swizzle: int | None) -> str:
    parts = []
    if tile is not None:
        parts.append(f"#mosaic_gpu.tile<[{', '.join(map(str, tile))}]>")
    if swizzle is not None:
        parts.append(f"#mosaic_gpu.swizzle<{swizzle} : i32>")
    return f"[{', '.join(parts)}]"


def pinned_ref(name: str, ty: str, given: str, at: str, offset: int = 0) -> list[str]:
    """``%name``, an SMEM ref of type ``ty`` with transforms ``given``, made at ``loc(at)``."""
    return [
        f'%{name}_s = "mosaic_gpu.slice_smem"() <{{offset = {offset} : i32}}> : () -> {ty}',
        tag(
            f'%{name} = "mosaic_gpu.with_transforms"(%{name}_s) <{{transforms = {given}}}> '
            f": ({ty}) -> {ty}",
            at,
        ),
    ]


def smem_cases(
    name: str,
    ref_ty: str,
    options: dict[str, str],
    op_lines: Callable[[str], list[str]],
    restricted: bool = True,
    arch: tuple[int, int] = HOPPER,
    args: Sequence[str] = (),
    view_ty: str | None = None,
) -> Cases:
    """Per option: the ref ``%t`` pinned to those transforms, then ``op_lines("t")``.

    With ``view_ty``, the op's result ``%v`` (a view of that type) is pinned to
    the same transforms too (``with_transforms`` after it), so that a refusal
    is about the pair, not about a view left as an accepted answer had it.
    """
    candidates = []
    for label, given in options.items():
        lines = [*pinned_ref("t", ref_ty, given, "p0"), *op_lines("t")]
        pins = [Pin("p0", 0, given)]
        if view_ty is not None:
            lines.append(
                tag(
                    f'%w = "mosaic_gpu.with_transforms"(%v) <{{transforms = {given}}}> '
                    f": ({view_ty}) -> {view_ty}",
                    "p1",
                )
            )
            pins.append(Pin(OP, 0, given))
        candidates.append(Candidate(label, kernel(lines, args), tuple(pins), arch))
    return Cases(name, tuple(candidates), restricted)
