"""Reading a layout as a person writes it: every name smalto prints, and Pallas' spellings.

``read_layout`` is the inverse of ``smalto.hw.names.describe_value`` (what
``infer``, ``explain``, ``check`` and the error messages print), so that a name
copied from smalto's output draws: ``WGMMA``, ``WGMMA_ROW keepdims``,
``WGMMA_TRANSPOSED.reduce(0)``, ``TMEM_NATIVE(4)``, ``TCGEN05_M64_COLLECTIVE(128)``,
``TMEM_NATIVE half_lane``, ``strided ×2``, ``splat``, ``tiled (64, 8)(8, 8) warps -3
lanes -2 vector -1``; SMEM ``tiled 8×64 + swizzle 128``, ``tiled 8×64, no swizzle``,
``untiled``; TMEM ``TMEM default (packing 2)``, ``TMEM half_lane``. Pallas' spellings
(``plgpu.Layout.WGMMA``, ``Layout.WGMMA.reduce(1)``,
``plgpu.Layout.TCGEN05_TMEM_NATIVE(8)``, ``plgpu.TMEMLayout.M64_COLLECTIVE_LAYOUT(128)``)
are read as Python expressions, never run: the names and literal arguments are taken
from the syntax tree and handed to Pallas' own ``Layout.to_mgpu``, so they mean
exactly what they mean in a kernel. Some names need the array's shape (a splat, a
strided layout, TMEM layouts sized by their columns).
"""

from __future__ import annotations

import ast
import difflib
import re
from typing import SupportsIndex, SupportsInt

from jax.experimental.mosaic.gpu import fragmented_array as fa
from jax.experimental.mosaic.gpu import tcgen05

from smalto.hw.names import REGISTER_LAYOUTS, TmemName
from smalto.hw.values import Const, Reg, Smem, Tmem


class LayoutNameError(ValueError):
    """Text that names no layout (a usage error)."""


_TIMES = "[×x*]"


def read_layout(text: str, shape: tuple[int, ...], bitwidth: int) -> Const:
    """The layout ``text`` names, for an array of ``shape`` with ``bitwidth``-bit elements:
    a register layout (``Reg``), SMEM transforms (``Smem``) or a TMEM layout (``Tmem``)."""
    spec = " ".join(text.strip().split())
    for reader in (_smem, _tmem, _register):
        found = reader(spec, shape, bitwidth)
        if found is not None:
            return found
    close = difflib.get_close_matches(spec.upper(), REGISTER_LAYOUTS, n=1)
    guess = f" (did you mean {close[0]}?)" if close else ""
    raise LayoutNameError(
        f"unknown layout {text!r}{guess}; expected a name smalto prints (WGMMA, "
        "WGMMA_ROW keepdims, strided ×2, splat, tiled 8×64 + swizzle 128, TMEM half_lane, "
        "...), a Pallas spelling (plgpu.Layout.WGMMA, Layout.WGMMA.reduce(1), ...) or an "
        "attribute such as '#mosaic_gpu.TiledLayout<...>'"
    )


# --- SMEM -------------------------------------------------------------------------------


def _smem(spec: str, shape: tuple[int, ...], bitwidth: int) -> Smem | None:
    del shape, bitwidth  # transforms are checked against the ref where they are drawn
    return smem_transforms(spec)


def smem_transforms(text: str) -> Smem | None:
    """SMEM transforms as smalto prints them (``infer --summary``, ``explain``):
    ``tiled 8×64 + swizzle 128``, ``tiled 8×64, no swizzle``, ``untiled``; ``None`` for
    any other text."""
    spec = " ".join(text.strip().split())
    match = re.fullmatch(
        rf"(untiled|tiled (\d+(?: ?{_TIMES} ?\d+)*))(?:,? no swizzle|,? ?\+ ?swizzle (\d+))?",
        spec,
        re.IGNORECASE,
    )
    if match is None:
        return None
    tiling = None
    if match[2] is not None:
        tiling = tuple(int(d) for d in re.split(rf" ?{_TIMES} ?", match[2]))
    swizzle = int(match[3]) if match[3] is not None else None
    try:
        return Smem(tiling, swizzle if swizzle != 16 else None)
    except ValueError as error:
        raise LayoutNameError(str(error)) from None


# --- TMEM -------------------------------------------------------------------------------

_TMEM_KINDS = ("default", "half_lane", "m64_collective", "scales", "b_scales_m64_collective",
               "sparse_meta")  # fmt: skip


def _tmem(spec: str, shape: tuple[int, ...], bitwidth: int) -> Tmem | None:
    """``TMEM default``, ``TMEM half_lane (packing 2)``, ``TMEM tiled (...) warps ...``."""
    if not spec.upper().startswith("TMEM ") or spec.upper().startswith("TMEM_"):
        return None
    rest = spec[len("TMEM ") :]
    if rest.startswith("tiled "):
        tiled = _compact_tiled(rest)
        if tiled is None:
            return None
        return Tmem(tcgen05.TMEMLayout(tiled.tiling, tiled.warp_dims, tiled.lane_dims,
                                       tiled.vector_dim))  # fmt: skip
    kind, packing = _kind_and_packing(rest)
    if kind not in _TMEM_KINDS:
        raise LayoutNameError(
            f"unknown TMEM layout {spec!r}; expected TMEM followed by one of "
            f"{', '.join(_TMEM_KINDS)} (and '(packing N)' where it packs)"
        )
    return Tmem(tmem_layout(TmemName(kind, None, packing), shape))


def _kind_and_packing(text: str) -> tuple[str, int]:
    match = re.fullmatch(r"(\w+)(?: \(packing (\d+)\))?", text.strip())
    if match is None:
        return "", 1
    return match[1].lower(), int(match[2] or 1)


def tmem_layout(name: TmemName, shape: tuple[int, ...]) -> tcgen05.TMEMLayout:
    """The TMEM layout ``name`` stands for, for a ref of ``shape`` (the layouts sized by
    their columns take the shape's last dimension)."""
    try:
        match name.kind:
            case "default":
                return tcgen05.tmem_default_layout(name.packing)
            case "half_lane" | "m64_collective":
                columns = name.columns or (shape[-1] if len(shape) == 2 else None)
                if columns is None:
                    raise LayoutNameError(f"TMEM {name.kind} needs a 2D shape, not {shape}")
                builder = getattr(tcgen05, f"tmem_{name.kind}_layout")
                return builder(columns, name.packing)
            case "scales":
                return tcgen05.scales_layout()
            case "b_scales_m64_collective":
                return tcgen05.b_scales_m64_collective_layout()
            case "sparse_meta":
                return tcgen05.sparse_meta_layout()
    except ValueError as error:
        raise LayoutNameError(f"no {name} for shape {shape}: {error}") from None
    raise LayoutNameError(f"unknown TMEM layout {name}")


# --- registers --------------------------------------------------------------------------


def _register(spec: str, shape: tuple[int, ...], bitwidth: int) -> Reg | Tmem | None:
    """A register layout; a Pallas spelling may name a TMEM layout
    (``plgpu.TMEMLayout.M64_COLLECTIVE_LAYOUT(128)``)."""
    keepdims = False
    body = spec
    if body.lower().endswith(" keepdims"):
        keepdims, body = True, body[: -len(" keepdims")].strip()
    layout = _plain_register(body, shape, bitwidth)
    if layout is None:
        return None
    if isinstance(layout, tcgen05.TMEMLayout):
        return Tmem(layout)
    if keepdims:
        layout = _keep_dims(layout, body)
    return Reg(layout)


Layout = fa.FragmentedLayout | tcgen05.TMEMLayout


def _plain_register(spec: str, shape: tuple[int, ...], bitwidth: int) -> Layout | None:
    lowered = spec.lower()
    if lowered in ("splat", "wg_splat"):
        return fa.WGSplatFragLayout(tuple(shape))
    strided = re.fullmatch(rf"(?:strided|wg_strided)(?:(?: ?{_TIMES} ?|:)(\d+))?", lowered)
    if strided is not None:
        return strided_layout(shape, bitwidth, int(strided[1]) if strided[1] else None)
    if lowered.startswith("tiled "):
        return _compact_tiled(spec)
    native = re.fullmatch(r"TMEM_NATIVE (\w+)(?: \(packing (\d+)\))?", spec, re.IGNORECASE)
    if native is not None:
        name = TmemName(native[1].lower(), None, int(native[2] or 1))
        return tmem_layout(name, shape).as_tiled_layout()
    return _expression(spec, shape, bitwidth)


def strided_layout(
    shape: tuple[int, ...], bitwidth: int, vec: int | None
) -> fa.WGStridedFragLayout:
    """A strided layout of ``vec`` elements per vector (None: the one JAX picks)."""
    from smalto.hw.layouts import default_strided

    if vec is None:
        default = default_strided(tuple(shape), bitwidth)
        if default is None or not isinstance(default.layout, fa.WGStridedFragLayout):
            raise LayoutNameError(f"no strided layout fits shape {shape}")
        return default.layout
    try:
        return fa.WGStridedFragLayout(tuple(shape), vec)
    except ValueError:
        raise LayoutNameError(
            f"a strided layout with vector size {vec} does not fit shape {shape} "
            "(128 threads x vector size must divide its element count)"
        ) from None


def _keep_dims(layout: fa.FragmentedLayout, name: str) -> fa.TiledLayout:
    """The keep-dims form of a reduced layout: what ``WGMMA_ROW keepdims`` names."""
    from smalto.hw.layouts import keep_dims

    for full in (*REGISTER_LAYOUTS.values(),):
        if len(full.base_tile_shape) != 2:
            continue
        for axis in (0, 1):
            if full.reduce((axis,)) == layout:
                return keep_dims(full, axis)
    raise LayoutNameError(f"{name} is not the reduction of a named 2D layout: no keepdims form")


def _dims(text: str) -> tuple[int | fa.Replicated, ...]:
    if text == "-":
        return ()
    return tuple(
        fa.Replicated(int(part[1:])) if part[0] in "×x*" else int(part) for part in text.split(",")
    )


def _compact_tiled(spec: str) -> fa.TiledLayout | None:
    """``tiled (64, 8)(16, 8)(8, 8)(2) warps -7 lanes -3,-2 vector -1``."""
    match = re.fullmatch(
        r"tiled ((?:\(\d+(?:, ?\d+)*\))+) warps (\S+) lanes (\S+) vector (\S+)", spec
    )
    if match is None:
        return None
    tiles = tuple(
        tuple(int(d) for d in tile.split(",")) for tile in re.findall(r"\(([^)]*)\)", match[1])
    )
    try:
        vector = int(match[4])
        return fa.TiledLayout(fa.Tiling(tiles), _dims(match[2]), _dims(match[3]), vector)
    except (ValueError, TypeError, AssertionError) as error:
        raise LayoutNameError(f"not a tiled layout: {spec} ({error})") from None


# --- names as expressions: smalto's and Pallas' -------------------------------------------

_SHAPED = {"WG_SPLAT", "WG_STRIDED"}  # Pallas layouts that take the array's shape


def _expression(spec: str, shape: tuple[int, ...], bitwidth: int) -> Layout | None:
    """``WGMMA``, ``WGMMA_LAYOUT``, ``TMEM_NATIVE(4)``, ``WGMMA_TRANSPOSED.reduce(0)``,
    ``plgpu.Layout.WGMMA.reduce(1)``, ``plgpu.Layout.TCGEN05_TMEM_NATIVE(8)``: a name,
    called with literal arguments, reduced over axes."""
    try:
        tree = ast.parse(spec, mode="eval").body
    except SyntaxError:
        return None
    reductions: list[tuple[int, ...]] = []
    while (
        isinstance(tree, ast.Call)
        and isinstance(tree.func, ast.Attribute)
        and tree.func.attr == "reduce"
    ):
        reductions.append(_axes(tree))
        tree = tree.func.value
    call: ast.Call | None = None
    if isinstance(tree, ast.Call):
        call, tree = tree, tree.func
    path = _dotted(tree)
    if path is None:
        return None
    layout = _named(path, call, spec, shape, bitwidth)
    if layout is None:
        return None
    for axes in reversed(reductions):
        if not isinstance(layout, fa.TiledLayout):
            raise LayoutNameError(f"{spec}: only a tiled layout reduces")
        layout = layout.reduce(axes)
    return layout


def _dotted(node: ast.expr) -> list[str] | None:
    parts: list[str] = []
    while isinstance(node, ast.Attribute):
        parts.append(node.attr)
        node = node.value
    if not isinstance(node, ast.Name):
        return None
    parts.append(node.id)
    return parts[::-1]


def _axes(call: ast.Call) -> tuple[int, ...]:
    if len(call.args) != 1 or call.keywords:
        raise LayoutNameError("reduce takes the axes: reduce(1) or reduce((0, 1))")
    value = _literal(call.args[0])
    if isinstance(value, int):
        return (value,)
    if isinstance(value, tuple | list):
        axes = tuple(a for a in value if isinstance(a, int))
        if len(axes) == len(value):
            return axes
    raise LayoutNameError("reduce takes the axes: reduce(1) or reduce((0, 1))")


def _int(value: object) -> int:
    """``int(value)`` of a literal argument, as Python refuses what is no number."""
    if isinstance(value, SupportsInt | SupportsIndex | str | bytes):
        return int(value)
    raise TypeError(
        "int() argument must be a string, a bytes-like object or a real number, "
        f"not '{type(value).__name__}'"
    )


def _literal(node: ast.expr) -> object:
    """A literal argument (ints, tuples), or a dtype written as ``jnp.bfloat16``."""
    dotted = _dotted(node)
    if dotted is not None and len(dotted) >= 2 and dotted[0] in ("jnp", "np", "numpy", "jax"):
        import jax.numpy as jnp

        try:
            return getattr(jnp, dotted[-1])
        except AttributeError:
            raise LayoutNameError(f"unknown dtype {'.'.join(dotted)}") from None
    try:
        return ast.literal_eval(node)
    except ValueError:
        raise LayoutNameError(f"not a literal argument: {ast.unparse(node)}") from None


def _named(
    path: list[str], call: ast.Call | None, spec: str, shape: tuple[int, ...], bitwidth: int
) -> Layout | None:
    name = path[-1]
    pallas = len(path) > 1
    if pallas and path[-2] not in ("Layout", "TMEMLayout"):
        return None
    args = [_literal(a) for a in call.args] if call is not None else []
    kwargs = {k.arg: _literal(k.value) for k in call.keywords if k.arg} if call else {}
    key = name.upper()
    if not pallas:
        smalto = _smalto_name(key, args, kwargs)
        if smalto is not None:
            return smalto
    return _pallas(path, name, args, kwargs, spec, shape, bitwidth)


def _smalto_name(key: str, args: list[object], kwargs: dict[str, object]) -> fa.TiledLayout | None:
    """JAX's named layouts by smalto's names (``WGMMA_ROW``) or JAX's (``WGMMA_LAYOUT_8BIT``),
    and the ones smalto names with a parameter."""
    plain = key.replace("_LAYOUT", "")
    if plain in REGISTER_LAYOUTS and not args and not kwargs:
        return REGISTER_LAYOUTS[plain]
    try:
        if plain == "TMEM_NATIVE" and len(args) == 1:
            return fa.tmem_native_layout(_int(args[0]))
        if plain == "TCGEN05_M64_COLLECTIVE" and len(args) == 1:
            return tcgen05.fa_m64_collective_layout(_int(args[0]))
        if plain == "TCGEN05_M64_COLLECTIVE_NATIVE" and len(args) == 1:
            return tcgen05.tmem_m64_collective_layout(_int(args[0])).as_tiled_layout()
    except (ValueError, TypeError) as error:
        raise LayoutNameError(f"{key}({', '.join(map(str, args))}): {error}") from None
    return None


def _pallas(
    path: list[str],
    name: str,
    args: list[object],
    kwargs: dict[str, object],
    spec: str,
    shape: tuple[int, ...],
    bitwidth: int,
) -> Layout | None:
    from jax._src.pallas.mosaic_gpu import core as pallas

    enum = pallas.TMEMLayout if len(path) > 1 and path[-2] == "TMEMLayout" else pallas.Layout
    if name not in enum.__members__:
        name = name.upper()
        if name not in enum.__members__:
            return None
    if name in _SHAPED and not args:
        if name == "WG_SPLAT":
            return fa.WGSplatFragLayout(tuple(shape))
        vec = kwargs.get("vec_size")
        return strided_layout(shape, bitwidth, _int(vec) if vec is not None else None)
    try:
        layout = enum[name](*args, **kwargs).to_mgpu() if args or kwargs else None
        if layout is None:
            layout = enum[name].to_mgpu()
    except (ValueError, TypeError) as error:
        raise LayoutNameError(f"{spec}: {error}") from None
    return layout
