"""``smalto draw`` on what the other commands print (issue #34, part 5): a transposed SMEM
ref of a kernel (``k_smem.T`` fed to a wgmma, as flash attention does), the transforms
``infer --summary`` prints, typed transforms whose swizzle does not fit the tile, and
a splat's holdings."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from cli_run import run

from smalto.draw.smem import dim_order, smem_placement

REPO = Path(__file__).resolve().parents[2]
ATTENTION = REPO / "examples" / "flash_attention_fwd.mlir"


def test_draws_the_transposed_smem_ref_the_readme_names(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """``%transpose`` is ``k_smem.T`` (tiled 64×8 + swizzle 128 as a view): it is drawn
    where the ref, tiled 8×64, puts each element."""
    summary = run("infer", "--summary", ATTENTION)
    assert "%transpose   tiled 64×8 + swizzle 128  SMEM 128x128xf16" in summary.out
    monkeypatch.chdir(tmp_path)
    ran = run("draw", ATTENTION, "%transpose", "-o", tmp_path / "t.svg")
    assert ran.status == 0, ran.err
    svg = (tmp_path / "t.svg").read_text()
    assert "tile 64x8 (a view with dims (1, 0) of the ref, tiled 8x64), 128-byte swizzle" in svg


def test_a_transposed_view_places_each_element_where_the_ref_does() -> None:
    view = smem_placement((128, 64), (64, 8), 128, 16, order=dim_order((1, 128)))
    ref = smem_placement((64, 128), (8, 64), 128, 16)
    assert view.dim_order == (1, 0) and view.ref_tiling == (8, 64)
    np.testing.assert_array_equal(view.byte, ref.byte.T)
    np.testing.assert_array_equal(view.tile, ref.tile.T)
    assert dim_order((128, 1)) is None  # a row-major ref is no view


@pytest.mark.parametrize(
    "printed", ["tiled 8×64 + swizzle 128", "tiled 8x64 + swizzle 128", "tiled 8x64+swizzle 128"]
)
def test_smem_accepts_the_transforms_infer_prints(tmp_path: Path, printed: str) -> None:
    typed = run("draw", "--smem", "tile=8x64,swizzle=128", "--shape", "64x128", "--dtype",
                "f16", "-o", tmp_path / "typed.svg")  # fmt: skip
    ran = run("draw", "--smem", printed, "--shape", "64x128", "--dtype", "f16",
              "-o", tmp_path / "printed.svg")  # fmt: skip
    assert typed.status == ran.status == 0, ran.err
    assert (tmp_path / "printed.svg").read_text() == (tmp_path / "typed.svg").read_text()
    unswizzled = run("draw", "--smem", "tiled 8x64, no swizzle", "--shape", "64x128",
                     "--dtype", "f16", "-o", tmp_path / "plain.svg")  # fmt: skip
    assert unswizzled.status == 0 and "no swizzle" in (tmp_path / "plain.svg").read_text()


def test_smem_refuses_a_swizzle_narrower_than_the_tile_row(tmp_path: Path) -> None:
    """A bf16 tile of 8x64 has 128-byte rows: swizzle 64 is not what a TMA copy takes."""
    ran = run("draw", "--smem", "tile=8x64,swizzle=64", "--shape", "64x128", "--dtype", "bf16",
              "-o", tmp_path / "x.png")  # fmt: skip
    assert ran.status == 2 and not (tmp_path / "x.png").exists()
    assert ran.err.count("\n") == 1 and "Traceback" not in ran.err
    assert "tile 8x64 has 128 bytes per row (use swizzle=128, or tile 8x32 for swizzle=64)" in (
        ran.err
    )
    fits = run("draw", "--smem", "tile=8x32,swizzle=64", "--shape", "64x128", "--dtype", "bf16",
               "-o", tmp_path / "y.png")  # fmt: skip
    assert fits.status == 0, fits.err


def test_transposed_transforms_drawn_alone_point_to_the_ref(tmp_path: Path) -> None:
    ran = run("draw", "--smem", "tiled 64×8 + swizzle 128", "--shape", "128x128", "--dtype",
              "f16", "-o", tmp_path / "x.png")  # fmt: skip
    assert ran.status == 2
    assert "transposed view, whose ref is tiled 8x64" in ran.err


def test_a_splat_thread_holds_every_element_in_one_line(tmp_path: Path) -> None:
    ran = run("draw", "splat", "--shape", "64x64", "--thread", "3", "-o", tmp_path / "s.png")
    assert ran.status == 0, ran.err
    assert ran.out.splitlines()[0] == (
        "thread 3 (warp 0, lane 3) holds every element of the 64x64 array (as every thread "
        "does: one value, broadcast), in R0"
    )
    wgmma = run("draw", "WGMMA", "--shape", "64x64", "--thread", "3", "-o", tmp_path / "w.png")
    assert wgmma.out.splitlines()[1] == "  R0: (0, 6), (0, 7)"  # others still list theirs
