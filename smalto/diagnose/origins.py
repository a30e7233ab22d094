"""Where each value of a conflict is defined: the op, its source line, and for a cast what it casts.

A requirement such as "%37 cannot be splat" is only actionable once the
author can find %37 in the kernel: these lines say which op defines each
value and where, and follow a cast back to the value it casts (the
``x = plgpu.layout_cast(x_ref[...], ...)`` a reduction then reads).
"""

from __future__ import annotations

from collections.abc import Callable

from jax._src.lib.mlir import ir

from smalto.constraints.language import Role, System, value_at
from smalto.hw.names import describe_value
from smalto.hw.values import Const
from smalto.program.view import Program
from smalto.source.locations import op_text

# Ops whose result is their operand under a layout the op states.
CASTS = frozenset(
    {"mosaic_gpu.layout_cast", "mosaic_gpu.tmem_layout_cast", "mosaic_gpu.with_transforms"}
)


def defining_value(program: Program, system: System, var: int) -> int:
    """The value a variable stands for, as defined: an op's result or a block argument
    where it has one (the site messages name it by), else its first use."""
    variable = system.variables[var]
    sites = sorted(variable.sites, key=lambda s: (s.role != Role.RESULT, s.role))
    return value_at(program, sites[0]) if sites else variable.key_value


def cast_layout(program: Program, op_id: int) -> Const | None:
    """The layout a cast op states (``new_layout``, or the transforms), decoded."""
    from smalto.hw import encode
    from smalto.hw.values import Reg, Tmem

    op = program.ops[op_id]
    attrs = op.operation.attributes
    try:
        if op.name == "mosaic_gpu.layout_cast":
            return Reg(encode.decode_layout(attrs["new_layout"]))
        if op.name == "mosaic_gpu.tmem_layout_cast":
            return Tmem(encode.decode_tmem_layout(attrs["new_layout"]))
        if op.name == "mosaic_gpu.with_transforms":
            return encode.decode_transforms(ir.ArrayAttr(attrs["transforms"]))
    except (ValueError, NotImplementedError, KeyError):
        return None
    return None


class Origins:
    """Says where values are defined, naming them as the conflict's namer does."""

    def __init__(self, program: Program, name_of: Callable[[int], str]) -> None:
        self.program = program
        self._name = name_of  # value id -> "%12"

    def producer_text(self, vid: int) -> str:
        """`` `arith.addf` at k.py:3:4``, ``iter_arg #0 of `scf.for` at ...``, or
        ``an argument of the kernel``."""
        producer = self.program.values[vid].producer
        if producer is None:
            return "an argument of the kernel"
        op = self.program.ops[producer.op]
        if producer.region is not None:
            return f"block argument #{producer.index} of {op_text(op)}"
        return op_text(op)

    def line(self, vid: int) -> str:
        """``%54 : vector<128xf32> is defined by `mosaic_gpu.layout_cast` at k.py:52:24:
        the cast of %53 (from `vector.multi_reduction` at k.py:51:12) to WGMMA_COL``."""
        value = self.program.values[vid]
        name = self._name(vid)
        text = f"{name} : {value.type} "
        producer = value.producer
        if producer is None or producer.region is not None:
            return text + f"is {self.producer_text(vid)}"
        text += f"is defined by {self.producer_text(vid)}"
        op = self.program.ops[producer.op]
        if op.name in CASTS and op.operands:
            source = op.operands[0]
            layout = cast_layout(self.program, op.id)
            target = f" to {describe_value(layout)}" if layout is not None else ""
            kind = "transforms" if op.name == "mosaic_gpu.with_transforms" else "cast"
            text += (
                f": the {kind} of {self._name(source)} (from {self.producer_text(source)}){target}"
            )
        return text


__all__ = ["CASTS", "Origins", "cast_layout", "defining_value"]
