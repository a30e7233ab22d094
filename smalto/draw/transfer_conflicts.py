"""Bank conflicts of a register array stored to (or loaded from) a tiled, swizzled SMEM ref.

``bank_conflicts`` takes the instructions JAX 0.12's lowering emits for the
transfer (``access.transfer_instructions``: JAX's own address arithmetic,
evaluated) and runs each, warp by warp, through the banking model
(``banks.warp_request``): wavefronts per instruction, the ideal, and which lanes
collide in which bank. Where JAX finds no conflict-free plan (and so refuses
the transfer unless the op says ``optimized=False``), the numbers are those of
the unoptimized transfer, and the report says so.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from jax.experimental.mosaic.gpu import fragmented_array as fa

from smalto.draw.access import WARP_SIZE, Instruction, TransferError, transfer_instructions
from smalto.draw.banks import WarpRequest, warp_request
from smalto.draw.smem import SmemPlacement, smem_placement
from smalto.draw.spec import layout_name as name_of
from smalto.draw.spec import parse_dtype

WARPS = fa.WARPS_IN_WARPGROUP


@dataclass(frozen=True)
class InstructionConflicts:
    """One instruction of the transfer, as each of the 4 warps runs it."""

    index: int
    instruction: Instruction
    warps: tuple[WarpRequest, ...]

    @property
    def wavefronts(self) -> int:
        return sum(w.wavefronts for w in self.warps)

    @property
    def ideal(self) -> int:
        return sum(w.ideal for w in self.warps)


@dataclass(frozen=True)
class BankConflicts:
    """Wavefronts of every SMEM instruction of one transfer; see ``bank_conflicts``."""

    layout_name: str
    shape: tuple[int, ...]
    element_type: str
    tiling: tuple[int, ...] | None
    swizzle: int
    load: bool
    arch: tuple[int, int]
    method: str  # the FragmentedArray method JAX's lowering calls
    plan: str  # "trivial" or "staggered" (lane groups visit tiles in rotated orders); "" for none
    optimized: bool
    refused: str  # why JAX refuses the optimized transfer ("" when it does not)
    instructions: tuple[InstructionConflicts, ...]
    placement: SmemPlacement

    @property
    def wavefronts(self) -> int:
        """All wavefronts of the transfer, all warps together."""
        return sum(i.wavefronts for i in self.instructions)

    @property
    def ideal(self) -> int:
        return sum(i.ideal for i in self.instructions)

    @property
    def conflict(self) -> int:
        """The worst n-way bank conflict of any phase (1: conflict-free)."""
        return max((w.conflict for i in self.instructions for w in i.warps), default=1)

    def element_conflicts(self) -> np.ndarray:
        """Per element of the array: the n-way conflict of the phase that moves it
        (the worst one, when several move it; 0: never moved)."""
        placed = self.placement
        element_bytes = max(placed.bitwidth // 8, 1)
        owner = np.full(max(placed.total_bytes, 1), -1, dtype=np.int64)
        flat_bytes = placed.byte.reshape(-1)
        for k in range(element_bytes):
            owner[flat_bytes + k] = np.arange(flat_bytes.size)
        worst = np.zeros(flat_bytes.size, dtype=np.int64)
        for item in self.instructions:
            size = item.instruction.lane_bytes
            for warp, request in enumerate(item.warps):
                address = item.instruction.address[warp * WARP_SIZE : (warp + 1) * WARP_SIZE]
                for phase in request.phases:
                    degree = phase.wavefronts // max(phase.ideal, 1)
                    for lane in phase.lanes:
                        touched = owner[int(address[lane]) : int(address[lane]) + size]
                        touched = touched[touched >= 0]
                        worst[touched] = np.maximum(worst[touched], degree)
        return worst.reshape(placed.shape)

    def text(self, detail: int = 4) -> str:
        """The numbers, for people: totals, then up to ``detail`` conflicting instructions."""
        lines = [self.headline()]
        lines.append(
            f"  JAX 0.12 lowering (sm_{self.arch[0]}{self.arch[1]}): "
            f"FragmentedArray.{self.method}" + (f", {self.plan} transfer plan" if self.plan else "")
        )
        if not self.optimized and not self.refused:
            lines.append(
                "  unoptimized (optimized=false): the trivial plan, whatever its conflicts"
            )
        if self.refused:
            lines.append(
                f"  JAX refuses the optimized transfer ({self.refused}); these are the numbers "
                "of the unoptimized one (vector_store/vector_load with optimized=False)"
            )
        lines.append("  each warp runs " + self.instruction_summary())
        per_warp = self.wavefronts // WARPS
        ideal = self.ideal // WARPS
        ratio = self.wavefronts / max(self.ideal, 1)
        verdict = (
            "no bank conflicts"
            if self.wavefronts == self.ideal
            else f"{self.conflict}-way bank conflicts, {ratio:.1f}x the ideal"
        )
        lines.append(f"  wavefronts per warp: {per_warp} (ideal {ideal}): {verdict}")
        shown = 0
        for item in self.instructions:
            request = item.warps[0]
            if request.wavefronts == request.ideal:
                continue
            if shown == detail:
                rest = sum(1 for i in self.instructions if i.warps[0].wavefronts > i.warps[0].ideal)
                lines.append(f"  ... {rest - shown} more instructions with conflicts")
                break
            shown += 1
            lines.append(
                f"  instruction {item.index} ({item.instruction.name}), warp 0: "
                f"{request.wavefronts} wavefronts (ideal {request.ideal})"
            )
            for number, phase in enumerate(request.phases):
                if phase.wavefronts == phase.ideal:
                    continue
                banks = phase.busiest_banks()
                first = sorted(
                    {lane for w in phase.words if w.bank == banks[0] for lane in w.lanes}
                )
                served = phase.wavefronts
                where = (
                    f"bank {banks[0]} serves {served} words, to lanes {lane_list(first)}"
                    if len(banks) == 1
                    else f"banks {lane_list(banks)} each serve {served} words "
                    f"(bank {banks[0]}: lanes {lane_list(first)})"
                )
                lines.append(
                    f"    phase {number} (lanes {lane_list(list(phase.lanes))}): "
                    f"{phase.wavefronts} wavefronts; {where}"
                )
        return "\n".join(lines)

    def headline(self) -> str:
        verb = "load" if self.load else "store"
        direction = "from" if self.load else "to"
        dims = "x".join(map(str, self.shape))
        return (
            f"{verb} of {dims} {self.element_type} in {self.layout_name} {direction} SMEM "
            f"{describe_transforms(self.tiling, self.swizzle)}"
        )

    def instruction_summary(self) -> str:
        counts: dict[str, int] = {}
        for item in self.instructions:
            counts[item.instruction.name] = counts.get(item.instruction.name, 0) + 1
        return ", ".join(f"{n} x {name}" for name, n in counts.items()) or "no SMEM instruction"

    def as_dict(self) -> dict[str, object]:
        return {
            "access": "load" if self.load else "store",
            "layout": self.layout_name,
            "shape": list(self.shape),
            "dtype": self.element_type,
            "tiling": list(self.tiling) if self.tiling else None,
            "swizzle": self.swizzle,
            "arch": f"{self.arch[0]}.{self.arch[1]}",
            "method": self.method,
            "plan": self.plan,
            "optimized": self.optimized,
            "refused": self.refused or None,
            "wavefronts": self.wavefronts,
            "ideal_wavefronts": self.ideal,
            "conflict": self.conflict,
            "instructions": [
                {
                    "index": item.index,
                    "name": item.instruction.name,
                    "lane_bytes": item.instruction.lane_bytes,
                    "wavefronts_per_warp": [w.wavefronts for w in item.warps],
                    "ideal_per_warp": [w.ideal for w in item.warps],
                }
                for item in self.instructions
            ],
        }


def describe_transforms(tiling: tuple[int, ...] | None, swizzle: int) -> str:
    tile = "untiled" if tiling is None else "tiled " + "x".join(map(str, tiling))
    return tile + (", no swizzle" if swizzle == 16 else f", {swizzle}-byte swizzle")


def lane_list(lanes: list[int]) -> str:
    """``0-7``, ``0, 4, 8`` or ``0-3, 8-11``: runs of consecutive lanes joined."""
    runs: list[list[int]] = []
    for lane in lanes:
        if runs and lane == runs[-1][-1] + 1:
            runs[-1].append(lane)
        else:
            runs.append([lane])
    return ", ".join(f"{r[0]}-{r[-1]}" if len(r) > 2 else ", ".join(map(str, r)) for r in runs)


def bank_conflicts(
    layout: fa.FragmentedLayout,
    shape: tuple[int, ...],
    element_type: str,
    tiling: tuple[int, ...] | None,
    swizzle: int,
    *,
    load: bool = False,
    optimized: bool = True,
    arch: tuple[int, int] = (9, 0),
    layout_name: str | None = None,
) -> BankConflicts:
    """Bank conflicts of storing (``load=False``) or loading an array of ``shape`` and
    ``element_type`` (an MLIR type name: ``bf16``, ``f32``, ``i8``, ...) in register
    ``layout`` to/from an SMEM ref tiled by ``tiling`` (None: untiled) and swizzled
    by ``swizzle`` bytes (16: none), as JAX 0.12 lowers ``vector_store``/``vector_load``
    for ``arch``.

    Raises ``access.TransferError`` where JAX's lowering cannot do the transfer at
    all; where only the optimized transfer is refused (no conflict-free plan), the
    result is the unoptimized transfer's, with ``refused`` set.
    """
    refused = ""
    try:
        transfer = transfer_instructions(
            layout, shape, element_type, tiling, swizzle, load=load, optimized=optimized, arch=arch
        )
    except TransferError as error:
        if not (optimized and error.no_plan):
            raise
        refused = str(error)
        optimized = False
        transfer = transfer_instructions(
            layout, shape, element_type, tiling, swizzle, load=load, optimized=False, arch=arch
        )
    items = []
    for index, instruction in enumerate(transfer.instructions):
        warps = tuple(
            warp_request(
                instruction.address[w * WARP_SIZE : (w + 1) * WARP_SIZE],
                instruction.lane_bytes,
                instruction.active,
            )
            for w in range(WARPS)
        )
        items.append(InstructionConflicts(index, instruction, warps))
    placement = smem_placement(shape, tiling, swizzle, parse_dtype(element_type))
    return BankConflicts(
        layout_name or name_of(layout),
        tuple(shape),
        element_type,
        tuple(tiling) if tiling else None,
        swizzle,
        load,
        arch,
        transfer.method,
        transfer.plan,
        optimized,
        refused,
        tuple(items),
        placement,
    )
