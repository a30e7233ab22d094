"""Which SMEM tiling and swizzle remove the bank conflicts of a transfer.

Not a rule of thumb: each candidate transform is tried with the same counter
``bank_conflicts`` uses (JAX's own emitted addresses, banked warp by warp), and a
candidate removes the conflicts when its transfer is one JAX lowers (optimized,
so a transform for which JAX finds no conflict-free plan does not count) and
takes exactly the ideal number of wavefronts.

The candidates are the transforms Mosaic GPU kernels use: tiles of 8 rows by
one swizzle's width of elements (``tile=8x64,swizzle=128`` for 16-bit elements),
swizzled by that width or not at all, and the untiled ref, swizzled or not,
where the shape allows each. Swizzled transforms come first, widest first: a
conflict-free transform with the widest swizzle is also the one TMA and WGMMA
read best.
"""

from __future__ import annotations

from dataclasses import dataclass

from jax.experimental.mosaic.gpu import fragmented_array as fa

from smalto.draw.access import TransferError
from smalto.draw.smem import SWIZZLES, SmemSpecError, smem_placement
from smalto.draw.spec import parse_dtype
from smalto.draw.transfer_conflicts import BankConflicts, bank_conflicts

TILE_ROWS = 8
MAX_LISTED = 3  # other conflict-free transforms named in the text


@dataclass(frozen=True)
class Remedy:
    """The transforms that remove the conflicts (``best`` first), or, where none does,
    the one with the fewest wavefronts (``best``, with ``conflict_free`` empty)."""

    best: BankConflicts | None
    conflict_free: tuple[BankConflicts, ...]
    tried: int

    def text(self) -> str:
        if self.best is None:
            return "  no tiling or swizzle smalto tried lets JAX lower this transfer"
        if self.conflict_free:
            others = ", ".join(smem_spec(r) for r in self.conflict_free[1 : 1 + MAX_LISTED])
            if len(self.conflict_free) > 1 + MAX_LISTED:
                others += ", ..."
            return (
                f"  to remove them: --smem {smem_spec(self.best)} (no bank conflicts: "
                f"{self.best.wavefronts // 4} wavefronts per warp)"
                + (f"; also conflict-free: {others}" if others else "")
            )
        return (
            f"  none of the {self.tried} tilings and swizzles smalto tried removes them; the "
            f"fewest wavefronts: --smem {smem_spec(self.best)} ({self.best.wavefronts // 4} "
            f"per warp, ideal {self.best.ideal // 4})"
        )

    def as_dict(self) -> dict[str, object] | None:
        if self.best is None:
            return None
        return {
            "smem": smem_spec(self.best),
            "tiling": list(self.best.tiling) if self.best.tiling else None,
            "swizzle": self.best.swizzle,
            "conflict_free": bool(self.conflict_free),
            "wavefronts": self.best.wavefronts,
            "also": [smem_spec(r) for r in self.conflict_free[1:]],
        }


def smem_spec(result: BankConflicts) -> str:
    """The ``--smem`` argument of a result's transforms."""
    tile = "none" if result.tiling is None else "x".join(map(str, result.tiling))
    return f"tile={tile},swizzle={result.swizzle}"


def candidate_transforms(
    shape: tuple[int, ...], bitwidth: int
) -> list[tuple[tuple[int, ...] | None, int]]:
    """(tiling, swizzle) pairs to try for a ref of ``shape``, the preferred first."""
    found: list[tuple[tuple[int, ...] | None, int]] = []
    widths = sorted(SWIZZLES[1:], reverse=True)
    for swizzle in widths:  # swizzled, widest first: a tile one swizzle wide, or untiled
        if len(shape) >= 2:
            found.append(((TILE_ROWS, swizzle * 8 // bitwidth), swizzle))
        found.append((None, swizzle))
    for swizzle in widths:  # then the same tiles unswizzled, and the plain ref
        if len(shape) >= 2:
            found.append(((TILE_ROWS, swizzle * 8 // bitwidth), 16))
    found.append((None, 16))
    valid = []
    for tiling, swizzle in found:
        try:
            smem_placement(shape, tiling, swizzle, bitwidth)
        except SmemSpecError:
            continue
        valid.append((tiling, swizzle))
    return valid


def remedy(
    layout: fa.FragmentedLayout,
    shape: tuple[int, ...],
    element_type: str,
    *,
    load: bool,
    arch: tuple[int, int],
    layout_name: str | None = None,
) -> Remedy:
    """The transforms, among ``candidate_transforms``, that make the transfer of an array
    of ``shape`` in ``layout`` conflict-free."""
    results = []
    candidates = candidate_transforms(shape, parse_dtype(element_type))
    for tiling, swizzle in candidates:
        try:
            result = bank_conflicts(
                layout, shape, element_type, tiling, swizzle, load=load, arch=arch,
                layout_name=layout_name,
            )  # fmt: skip
        except TransferError:
            continue
        results.append(result)
    lowered = [r for r in results if not r.refused]
    free = tuple(r for r in lowered if r.wavefronts == r.ideal)
    if free:
        return Remedy(free[0], free, len(candidates))
    best = min(lowered or results, key=lambda r: r.wavefronts, default=None)
    return Remedy(best, (), len(candidates))
