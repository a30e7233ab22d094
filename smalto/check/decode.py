"""Reading the layout attributes of an op into the checker's sites."""

from __future__ import annotations

import functools

from jax._src.lib.mlir import ir

from smalto.check.core import (
    IN,
    LAYOUTS,
    OPAQUE,
    OUT,
    PREFIX,
    ROLE,
    TMEM,
    TRANSFORMS,
    Checker,
    Family,
    family_of,
    smem_positions,
)
from smalto.check.names import describe
from smalto.check.semantics import Layout
from smalto.check.smem import Transforms, decode_transforms, invalid
from smalto.hw import encode
from smalto.hw import layouts as hl
from smalto.hw.values import Reg, Tmem
from smalto.program.view import Op, Value

_FAMILIES = (LAYOUTS, TMEM, TRANSFORMS)
# Per role, each family with its attribute's name (``in_layouts``, ``out_tmem_layouts``,
# ...), in the order the families are read.
_FAMILY_NAMES = {
    role: tuple((family, f"{PREFIX[role]}_{family.suffix}") for family in _FAMILIES)
    for role in (IN, OUT)
}
_ALL_NAMES = tuple(name for names in _FAMILY_NAMES.values() for _, name in names)
_NONE: list[int] = []


def decode(c: Checker, op: Op) -> None:
    values = c.program.values
    attributes = op.operation.attributes
    if op.id not in c.layout_ops and not any(name in attributes for name in _ALL_NAMES):
        # None of its values needs a layout (the program view says which ops have one,
        # and proved it missed no use) and it states none: nothing to read. Most ops of a
        # kernel are such, and reading their operands is a binding call each.
        return
    for role, ids in ((IN, op.operands), (OUT, op.results)):
        # The positions of each family's values, in one pass over them.
        by_family: dict[Family, list[int]] = {}
        for i, v in enumerate(ids):
            found = family_of(values[v])
            if found is not None:
                by_family.setdefault(found, []).append(i)
        for family, name in _FAMILY_NAMES[role]:
            positions = by_family.get(family, _NONE)
            if name not in attributes:
                if positions:
                    c.report(op, f"has no {name} for its {len(positions)} {family.what}(s)")
                continue
            try:
                entries = list(ir.ArrayAttr(attributes[name]))
            except (ValueError, TypeError):
                c.report(op, f"{name} is not an array: {attributes[name]}")
                continue
            if (
                op.name in OPAQUE
                and family is TRANSFORMS
                and len(entries) != len(positions)
                and len(entries) == len(smem := smem_positions(c.program, ids))
            ):
                # A custom primitive declares transforms for every SMEM ref
                # it takes, barriers included (which have none).
                entries = [e for e, i in zip(entries, smem, strict=True) if i in positions]
            if len(entries) != len(positions):
                c.report(
                    op,
                    f"{name} has {len(entries)} entries for {len(positions)} {family.what}(s)",
                )
                continue
            for index, entry in zip(positions, entries, strict=True):
                layout = decode_entry(c, op, role, index, family, entry)
                if layout is not None:
                    c.sites[(op.id, role, index)] = layout


def decode_entry(
    c: Checker, op: Op, role: int, index: int, family: Family, entry: ir.Attribute
) -> Layout | None:
    value = c.value(op, role, index)
    # Attributes are unique in their context: its hash names an entry, read once per
    # context (a verified edit's copy repeats its module's), as the reading alone says.
    key = (hash(entry), family.suffix)
    layout = c.decoded.get(key)
    if layout is None:
        try:
            layout = _decoded(entry, family)
        except Exception as error:  # noqa: BLE001 -- any undecodable entry is a finding
            where = _site(role, index)
            c.report(op, f"cannot read the {family.suffix} entry of {where} ({entry}): {error}")
            return None
        c.decoded[key] = layout
    if isinstance(layout, Transforms):
        return layout if transforms_valid(c, op, _site(role, index), value, layout) else None
    if not hl.fits(layout, value.shape):
        laid_out = describe(layout, with_shape=True)  # a splat's or strided layout's own shape
        c.report(
            op, f"{_site(role, index)} of shape {value.shape} cannot be laid out as {laid_out}"
        )
        return None
    if isinstance(layout, Tmem) and not hl.tmem_fits(layout, value.shape, value.bitwidth):
        # TMEMLayout.check_type, run wherever the lowering builds a TMEM ref.
        packed = max(1, 32 // (value.bitwidth or 32))
        sizes = "1 element" if packed == 1 else f"1 or {packed} elements"
        c.report(
            op,
            f"{_site(role, index)} ({value.type}) cannot be laid out as {describe(layout)}: a TMEM "
            f"layout of {value.bitwidth}-bit elements has vectors of {sizes}",
        )
        return None
    return layout


def _site(role: int, index: int) -> str:
    """How a report names an entry's site, ``operand #1`` (made only for a report)."""
    return f"{ROLE[role]} #{index}"


def attribute_value(c: Checker, attr: ir.Attribute, family: Family) -> Layout:
    """What an op's own layout (or transforms) attribute says, as its sites' entries are
    read: once per context, by the attribute's hash (the same value object for the same
    attribute, so a site that has it compares equal at once). Raises where it cannot
    be read."""
    key = (hash(attr), family.suffix)
    layout = c.decoded.get(key)
    if layout is None:
        layout = c.decoded[key] = _decoded(attr, family)
    return layout


def _decoded(entry: ir.Attribute, family: Family) -> Layout:
    """What an entry of ``family`` says, read from it alone (raises where it cannot be read)."""
    if family is LAYOUTS:
        return Reg(encode.decode_layout(entry))
    if family is TMEM:
        return Tmem(encode.decode_tmem_layout(entry))
    return decode_transforms(entry)


# Why a ref type cannot take transforms, by (transforms, shape, strides, bitwidth): a pure
# function of them, asked again for each verified edit's copy (the lowering's tiling of the
# strides runs JAX's code).
_invalid = functools.lru_cache(maxsize=4096)(invalid)


def transforms_valid(c: Checker, op: Op, where: str, value: Value, transforms: Transforms) -> bool:
    """Reports (and returns False) where a ref cannot take these transforms."""
    problem = _invalid(transforms, value.shape, value.strides, value.bitwidth)
    if problem is None:
        return True
    c.report(op, f"{where} ({value.type}) cannot be {describe(transforms)}: {problem}")
    return False
