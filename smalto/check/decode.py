"""Reading the layout attributes of an op into the checker's sites."""

from __future__ import annotations

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
from smalto.hw import encode
from smalto.hw import layouts as hl
from smalto.hw.values import Reg, Smem, Tmem
from smalto.program import Op, Value


def decode(c: Checker, op: Op) -> None:
    values = c.program.values
    attributes = op.operation.attributes
    for role, ids in ((IN, op.operands), (OUT, op.results)):
        for family in (LAYOUTS, TMEM, TRANSFORMS):
            positions = [i for i, v in enumerate(ids) if family_of(values[v]) is family]
            name = f"{PREFIX[role]}_{family.suffix}"
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
    where = f"{ROLE[role]} #{index}"
    try:
        if family is LAYOUTS:
            layout: Layout = Reg(encode.decode_layout(entry))
        elif family is TMEM:
            layout = Tmem(encode.decode_tmem_layout(entry))
        else:
            tiling, swizzle = encode.decode_transforms(ir.ArrayAttr(entry))
            layout = Smem(tiling)
            if not swizzle_ok(c, op, where, value, tiling, swizzle):
                return None
    except Exception as error:  # noqa: BLE001 -- any undecodable entry is a finding
        c.report(op, f"cannot read the {family.suffix} entry of {where} ({entry}): {error}")
        return None
    if isinstance(layout, Smem) and len(layout.tiling or ()) > len(value.shape):
        c.report(op, f"{where} of shape {value.shape} cannot be {describe(layout)}")
        return None
    if not hl.fits(layout, value.shape):
        c.report(op, f"{where} of shape {value.shape} cannot be laid out as {describe(layout)}")
        return None
    return layout


def swizzle_ok(
    c: Checker,
    op: Op,
    where: str,
    value: Value,
    tiling: tuple[int, ...] | None,
    swizzle: int | None,
) -> bool:
    if tiling is None or swizzle is None or value.strides is None or value.bitwidth is None:
        return True
    if len(tiling) > len(value.strides):
        c.report(op, f"{where}: tiling {tiling} has more dims than {value.type}")
        return False
    try:
        implied = hl.swizzle_for(tiling, value.strides, value.bitwidth)
    except ValueError as error:
        c.report(op, f"{where}: {error}")
        return False
    if implied != swizzle:
        c.report(
            op,
            f"{where}: swizzle {swizzle} does not match tiling {tiling}, which implies "
            f"{implied} for {value.type}",
        )
        return False
    return True
