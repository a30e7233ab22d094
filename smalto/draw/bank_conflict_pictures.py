"""Pictures of the bank conflicts of a transfer (``smalto draw ... --bank-conflicts``).

- the array, each element coloured by how many ways the bank conflict of the
  phase that moves it is (green: none), warps outlined;
- one instruction of one warp, bank by bank: columns are the 32 banks, rows the
  wavefronts it takes (phases separated by heavy lines), each cell the 4-byte
  word a bank delivers in that wavefront, coloured and labelled by the lane that
  asked for it. A conflict-free instruction fills one row per phase; an n-way
  conflict stacks n rows with most banks idle.
"""

from __future__ import annotations

import numpy as np

from smalto.draw.banks import BANKS, WarpRequest
from smalto.draw.colors import Color, lane_color, rgb
from smalto.draw.frame import map_window, window
from smalto.draw.lanes import lane_key, numbers_text
from smalto.draw.ownership import WARP_SIZE, Ownership
from smalto.draw.remedy import Remedy
from smalto.draw.render import Grid, figure_size, label_cell_px
from smalto.draw.transfer_conflicts import BankConflicts, InstructionConflicts

# n-way conflict -> colour: green for none, then warmer and darker.
CONFLICT_COLORS = {
    1: "#8fd19e", 2: "#ffe066", 3: "#ffc078", 4: "#ffa94d", 8: "#f03e3e", 16: "#a61e4d",
    32: "#5f0f40",
}  # fmt: skip
UNMOVED_COLOR = "#ffffff"
ARRAY_BUDGET = (600.0, 600.0)
SIDE_BY_SIDE_WIDTH = 2000


def conflict_color(degree: int) -> tuple[float, float, float]:
    if degree <= 0:
        return rgb(UNMOVED_COLOR)
    key = min((k for k in CONFLICT_COLORS if k >= degree), default=32)
    return rgb(CONFLICT_COLORS[key])


def _array_panel(result: BankConflicts, held: Ownership | None) -> Grid:
    degrees = result.element_conflicts()
    view, side = map_window(result.shape, ARRAY_BUDGET)
    if side >= 14:
        labelled = window(result.shape, view.rows, view.cols)
        view = labelled
    shown = view.take(degrees)
    colors = np.array([conflict_color(int(d)) for d in shown.reshape(-1)]).reshape(*shown.shape, 3)
    regions = None
    if held is not None:
        warps = view.take(held.warps)
        single = np.all(warps == warps[..., :1], axis=-1)
        regions = np.where(single, warps[..., 0], -1)
    present = sorted({int(d) for d in np.unique(shown)})
    legend: list[tuple[Color, str]] = [
        (
            conflict_color(d),
            "not moved" if d == 0 else "no conflict" if d == 1 else f"{d}-way conflict",
        )
        for d in present
    ]
    if regions is not None:
        legend.append(("black", "heavy outline: a warp"))
    title = (
        f"{result.headline()}\n{_verdict(result)}\n"
        "each element coloured by the bank conflict of the phase that moves it"
    )
    if view.note:
        title += f"\n{view.note}"
    return Grid(
        colors,
        [],
        title,
        legend,
        **view.grid_fields(),
        regions=regions,
        cell_px=(side, side),
        groups=np.arange(shown.size).reshape(shown.shape),
    )


def _verdict(result: BankConflicts) -> str:
    per_warp, ideal = result.wavefronts // 4, result.ideal // 4
    text = (
        f"{result.instruction_summary()} per warp; {per_warp} wavefronts per warp (ideal {ideal})"
    )
    if result.refused:
        text += "; JAX refuses the optimized transfer (no conflict-free plan): unoptimized shown"
    elif not result.optimized:
        text += "; unoptimized (optimized=false)"
    return text


def worst_instruction(result: BankConflicts) -> InstructionConflicts | None:
    """The instruction whose warp 0 takes the most wavefronts beyond the ideal (the first
    instruction when none has conflicts)."""
    if not result.instructions:
        return None
    return max(
        result.instructions, key=lambda i: (i.warps[0].wavefronts - i.warps[0].ideal, -i.index)
    )


def bank_grid(item: InstructionConflicts, warp: int = 0) -> Grid:
    """Banks x wavefronts of one instruction of one warp, cells labelled by lane."""
    request: WarpRequest = item.warps[warp]
    rows = max(request.wavefronts, 1)
    colors = np.ones((rows, BANKS, 3))
    labels: dict[tuple[int, int], str] = {}
    lane_of = np.full((rows, BANKS), -1)
    row_lines, row_ticks = [], []
    first_row = 0
    for number, phase in enumerate(request.phases):
        for word in phase.words:
            row = first_row + word.wavefront
            colors[row, word.bank] = lane_color(word.lanes[0])
            labels[(row, word.bank)] = numbers_text(word.lanes)
            lane_of[row, word.bank] = word.lanes[0]
        for k in range(phase.wavefronts):
            row_ticks.append(
                (first_row + k, f"p{number} w{k}" if phase.wavefronts > 1 else f"p{number}")
            )
        first_row += phase.wavefronts
        if number + 1 < len(request.phases):
            row_lines.append(first_row)
    spans = []
    for r in range(rows):
        c = 0
        while c < BANKS:
            if (r, c) not in labels:
                c += 1
                continue
            stop = c + 1
            while (
                stop < BANKS
                and labels.get((r, stop)) == labels[(r, c)]
                and lane_of[r, stop] == lane_of[r, c]
            ):
                stop += 1
            spans.append((r, c, stop, labels[(r, c)]))
            c = stop
    cell = label_cell_px(spans)
    per_phase = len(request.phases[0].lanes) if request.phases else WARP_SIZE
    degree = request.conflict
    verdict = "no conflict" if degree == 1 else f"{degree}-way bank conflict"
    title = (
        f"instruction {item.index} ({item.instruction.name}, {item.instruction.lane_bytes} bytes "
        f"per lane), warp {warp}: {request.wavefronts} wavefronts (ideal {request.ideal}): "
        f"{verdict}\n"
        f"columns: the 32 banks; rows: wavefronts, phase by phase (p<phase> w<wavefront>; up to "
        f"{per_phase} lanes per phase); cell: the word a bank delivers, labelled with its lane"
    )
    return Grid(
        colors,
        spans,
        title,
        [("white", "blank: the bank idles in that wavefront"), ("black", "heavy line: next phase")],
        row_lines=row_lines,
        row_label="phase, wavefront",
        col_label="bank",
        cell_px=(max(cell[0], 26.0), max(cell[1], 18.0)),
        row_ticks=row_ticks,
    )


def conflict_pictures(
    result: BankConflicts, held: Ownership | None, remedy: Remedy | None = None
) -> list[Grid | tuple[Grid, ...]]:
    """The panels of ``smalto draw LAYOUT --smem SPEC --bank-conflicts``; the title of
    the array says which transforms remove the conflicts (``remedy``), when given."""
    array = _array_panel(result, held)
    if remedy is not None:
        array.title += "\n" + remedy.text().strip()
    item = worst_instruction(result)
    if item is None:
        return [array]
    banks = bank_grid(item)
    side_by_side: list[Grid | tuple[Grid, ...]] = [lane_key(), (array, banks)]
    if figure_size(side_by_side)[0] <= SIDE_BY_SIDE_WIDTH:
        return side_by_side
    return [array, lane_key(), banks]
