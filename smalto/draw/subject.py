"""What ``smalto draw`` draws: a layout (register, SMEM or TMEM), the array's shape and
element type, and the name the picture gives it; read from the command line (LAYOUT
and ``--shape``, ``--smem``, ``--tmem``) or from a kernel's value (FILE VALUE)."""

from __future__ import annotations

import argparse
import re
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from jax.experimental.mosaic.gpu import fragmented_array as fa
from jax.experimental.mosaic.gpu import tcgen05

from smalto.draw.help_names import ARCHS
from smalto.draw.layout_names import read_layout
from smalto.draw.smem import check_typed_transforms, dim_order, implied_swizzle
from smalto.draw.spec import (
    SpecError,
    mlir_element_type,
    parse_attribute,
    parse_dtype,
    parse_shape,
    parse_smem_spec,
)
from smalto.hw.names import REGISTER_LAYOUTS, describe_value
from smalto.hw.values import Const, Reg, Smem, Tmem

if TYPE_CHECKING:
    from smalto.draw.value import Lookup


@dataclass(frozen=True)
class Subject:
    layout: Const
    shape: tuple[int, ...]
    dtype: str  # as the user wrote it (bf16, f32), or the value's MLIR element type
    element_type: str  # MLIR's spelling
    title: str  # the layout's name in titles: WGMMA_COL, or %12 (line 40): WGMMA
    name: str  # the layout's name alone
    arch: tuple[int, int] | None = None  # the kernel's, for a value of one
    prefix: str = ""  # of default file names: the kernel and value drawn
    value: str = ""  # the kernel's value drawn and where: "%95#0, line 260"
    # An SMEM view with permuted dims (a memref.transpose): the ref's dims as the view's.
    dim_order: tuple[int, ...] | None = None
    # What the command should say of a kernel's value before drawing it (names of FILE
    # that are another in the printed module): handed up, the command prints them.
    notes: tuple[str, ...] = ()

    @property
    def layout_label(self) -> str:
        """The layout in a sentence: ``WGMMA``, ``WGMMA (%95#0, line 260)``."""
        return f"{self.name} ({self.value})" if self.value else self.title

    @property
    def kind(self) -> str:
        match self.layout:
            case Reg():
                return "register"
            case Smem():
                return "smem"
        return "tmem"

    @property
    def bitwidth(self) -> int:
        return parse_dtype(self.dtype)

    @property
    def dims(self) -> str:
        return "x".join(map(str, self.shape))

    @property
    def slug(self) -> str:
        return slug(self.prefix + self.name)

    def tiling_and_swizzle(self) -> tuple[tuple[int, ...] | None, int]:
        assert isinstance(self.layout, Smem)
        return self.layout.tiling, self.layout.swizzle or 16

    def file_name(self, stem: str | None = None) -> str:
        if stem is None:
            stem = self.prefix + self.name
            if self.kind == "smem":
                tiling, swizzle = self.tiling_and_swizzle()
                tile = "untiled" if tiling is None else "x".join(map(str, tiling))
                stem = f"{self.prefix}smem_{tile}_sw{swizzle}"
        return file_name(stem, self.shape, self.dtype)


def subject_of(args: argparse.Namespace, lookup: Lookup | None = None) -> Subject:
    """The subject the command line names (``lookup`` finds a kernel's value)."""
    if args.value is not None:
        assert lookup is not None, "FILE VALUE without a lookup"
        return _kernel_value(args, lookup)
    shape = parse_shape(args.shape)
    dtype = args.dtype or "f32"
    bitwidth = parse_dtype(dtype)
    element_type = mlir_element_type(dtype)
    if args.smem is not None and not args.bank_conflicts:
        if args.layout is not None:
            raise SpecError(
                "--smem draws transforms, not a register layout: drop LAYOUT (or add "
                "--bank-conflicts for the conflicts of transferring LAYOUT)"
            )
        tiling, swizzle = parse_smem_spec(args.smem)
        if swizzle is None:
            swizzle = implied_swizzle(tiling, bitwidth)
        check_typed_transforms(shape, tiling, swizzle, bitwidth)
        layout: Const = Smem(tiling, swizzle if swizzle != 16 else None)
        return _named(layout, shape, dtype, element_type, None)
    if args.tmem:
        layout = Tmem(_tmem_layout(args, shape))
        return _named(layout, shape, dtype, element_type, None)
    if args.layout is None:
        raise SpecError("name a LAYOUT to draw (or use --smem / --tmem, or FILE VALUE)")
    text = args.layout.strip()
    if text.startswith("#"):
        return _named(Reg(parse_attribute(text)), shape, dtype, element_type, None)
    layout = read_layout(text, shape, bitwidth)
    return _named(layout, shape, dtype, element_type, text)


def _named(
    layout: Const, shape: tuple[int, ...], dtype: str, element_type: str, typed: str | None
) -> Subject:
    name = layout_title(layout, typed)
    return Subject(layout, shape, dtype, element_type, name, name.partition(" (also")[0])


def layout_title(layout: Const, typed: str | None = None) -> str:
    """The layout's name as smalto prints it (``describe_value``), except that of JAX's
    equal layouts (``WGMMA_COL`` is ``TCGEN05_COL``) the one the user typed is kept;
    with the others named: ``WGMMA_COL (also TCGEN05_COL)``."""
    name = describe_value(layout)
    if not isinstance(layout, Reg) or not isinstance(layout.layout, fa.TiledLayout):
        return name
    aliases = [n for n, known in REGISTER_LAYOUTS.items() if known == layout.layout]
    if typed is not None:
        key = typed.strip().upper().replace("_LAYOUT", "")
        if key in aliases:
            name = key
    others = [n for n in aliases if n != name]
    return name + (f" (also {', '.join(others)})" if others else "")


def _tmem_layout(args: argparse.Namespace, shape: tuple[int, ...]) -> tcgen05.TMEMLayout:
    """``--tmem [LAYOUT]``: a TMEM layout by name (``half_lane``, ``TMEM half_lane``, any
    name smalto prints), from an attribute, or (no LAYOUT) the one JAX picks."""
    from smalto.draw.spec import parse_tmem_layout

    if args.packing <= 0 or args.packing & (args.packing - 1):
        raise SpecError(f"--packing must be a power of two, got {args.packing}")
    text = args.layout
    if text is not None and not text.strip().startswith("#"):
        key = text.strip()
        if not key.upper().startswith("TMEM ") and key.lower() in (
            "default", "half_lane", "m64_collective", "scales", "b_scales_m64_collective",
            "sparse_meta",
        ):  # fmt: skip
            key = f"TMEM {key}" + (f" (packing {args.packing})" if args.packing > 1 else "")
        found = read_layout(key, shape, parse_dtype(args.dtype or "f32"))
        if not isinstance(found, Tmem):
            raise SpecError(f"{text!r} is not a TMEM layout (drop --tmem to draw it)")
        return found.layout
    return parse_tmem_layout(text, shape, args.packing, args.collective)


def _kernel_value(args: argparse.Namespace, lookup: Lookup) -> Subject:
    found = lookup(args.layout, args.value, ARCHS[args.arch] if args.arch else None)
    name = layout_title(found.layout)
    title = f"{found.name} ({found.place}): {name}"
    stem = f"{_file_stem(args.layout)}_{found.name}_"
    return Subject(
        found.layout,
        found.shape,
        found.element_type,
        found.element_type,
        title,
        name.partition(" (also")[0],
        found.arch,
        stem,
        f"{found.name}, {found.place}",
        dim_order(found.strides) if isinstance(found.layout, Smem) else None,
        found.notes,
    )


def _file_stem(path: str) -> str:
    return Path(path).stem


def file_name(name: str, shape: tuple[int, ...], dtype: str) -> str:
    """``wgmma_64x64_bf16.png``: the layout, the shape and the element type."""
    return f"{slug(name)}_{'x'.join(map(str, shape))}_{slug(dtype)}.png"


def slug(name: str) -> str:
    return re.sub(r"[^A-Za-z0-9]+", "_", name).strip("_").lower() or "layout"
