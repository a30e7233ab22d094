"""The pictures of ``smalto draw`` say what they show (issue 25): the layout's own name,
labels that read one way, the whole array at a size that shows it (folded, not a strip;
no black bar; within the size budget), warp names apart, the 1D atom whole, a splat
labelled once, text for ``--warp`` and TMEM ``--thread``, one file name per element type;
and no module of ``smalto.draw`` imports another in a circle."""

from __future__ import annotations

import ast
import io
import math
import re
from pathlib import Path

import numpy as np
import pytest
from jax.experimental.mosaic.gpu import fragmented_array as fa
from jax.experimental.mosaic.gpu import tcgen05
from PIL import Image

from smalto.cli.draw import build_parser, draw_main, panels_to_draw
from smalto.draw import tmem_placement
from smalto.draw.colors import lane_colors
from smalto.draw.holdings import lane_holdings, warp_holdings
from smalto.draw.ownership import ownership
from smalto.draw.pictures import register_pictures
from smalto.draw.render import (
    LABEL_PX,
    MAX_SIDE,
    Grid,
    figure_size,
    render,
    scene,
    text_width,
)
from smalto.draw.scene import Cells

DRAW = Path(__file__).resolve().parents[2] / "smalto" / "draw"


def _panels(items: list) -> list[Grid]:
    return [g for item in items for g in (item if isinstance(item, tuple) else (item,))]


def _draw(*argv: str) -> tuple[list[Grid], str, str]:
    panels, name, text = panels_to_draw(build_parser().parse_args(list(argv)))
    return _panels(panels), name, text


def _map(panels: list[Grid]) -> Grid:
    """The colour map of a register picture (the panel whose title says 'the whole array')."""
    (found,) = [g for g in panels if "the whole array" in g.title]
    return found


def _png_of(*argv: str) -> Image.Image:
    """The PNG ``smalto draw`` writes for ``argv``."""
    panels, _, _ = panels_to_draw(build_parser().parse_args(list(argv)))
    return Image.open(io.BytesIO(render(panels, "png")))


# --- names in titles, labels ------------------------------------------------------------


@pytest.mark.parametrize("extra", [[], ["--arch", "9.0"], ["--arch", "10.0"]])
def test_wgmma_col_is_titled_wgmma_col(extra: list[str]) -> None:
    """JAX's WGMMA_COL_LAYOUT equals TCGEN05_COL_LAYOUT: the picture keeps the name asked
    for (and says the other), in the layout picture and in the bank conflicts."""
    panels, name, _ = _draw("WGMMA_COL", "--shape", "64")
    assert panels[1].title.startswith("WGMMA_COL (also TCGEN05_COL): 64 f32")
    assert name == "wgmma_col_64_f32.png"
    conflicts, _, text = _draw(
        "WGMMA_COL", "--shape", "64", "--smem", "tile=64", "--bank-conflicts", *extra
    )
    assert text.startswith("store of 64 f32 in WGMMA_COL (also TCGEN05_COL) to SMEM")
    assert any(g.title.startswith("store of 64 f32 in WGMMA_COL (also") for g in conflicts)
    tcgen05_col, _, _ = _draw("TCGEN05_COL", "--shape", "64")
    assert tcgen05_col[1].title.startswith("TCGEN05_COL (also WGMMA_COL)")


def _holders(label: str) -> list[int]:
    """The threads a label names: ``T5``, ``T0-3``, ``T0,4..124``."""
    text = label.partition(":")[0].removeprefix("T")
    if ".." in text:
        pair, last = text.split("..")
        first, second = (int(x) for x in pair.split(","))
        return list(range(first, int(last) + 1, second - first))
    if "-" in text:
        first, last = (int(x) for x in text.split("-"))
        return list(range(first, last + 1))
    return [int(x) for x in text.split(",")]


@pytest.mark.parametrize(
    ("layout", "shape"),
    [(fa.WGMMA_COL_LAYOUT, (64,)), (fa.WGMMA_ROW_LAYOUT, (64,)),
     (fa.WGMMA_TRANSPOSED_LAYOUT.reduce((0,)), (8,)), (fa.TMA_INDICES_LAYOUT, (16,))],
)  # fmt: skip
def test_labels_name_exactly_the_threads_that_hold_copies(layout: object, shape: tuple) -> None:
    """No label reads as hex (``T0x32``): each names its threads as a run or a progression,
    and reading it back gives exactly the threads that hold the element."""
    held = ownership(layout, shape)
    (panel,) = [g for g in _panels(register_pictures(held, layout, "L", "f32")) if g.spans][1:]
    assert panel.spans
    for row, start, stop, text in panel.spans:
        assert not re.search(r"T\d+x\d+", text)
        for col in range(start, stop):
            element = row * panel.row_scale + col
            assert _holders(text) == held.threads[element].tolist(), text
    if layout == fa.WGMMA_COL_LAYOUT:  # 32 threads: lane l%4 of each group of 4, every warp
        assert {t.partition(":")[0] for *_, t in panel.spans} == {
            "T0,4..124", "T1,5..125", "T2,6..126", "T3,7..127"
        }  # fmt: skip


def test_a_splat_is_labelled_once() -> None:
    panels, _, _ = _draw("splat", "--shape", "16x16")
    (array,) = panels[1:]
    assert [text for *_, text in array.spans] == ["T0-127:R0"]
    assert array.shape == (16, 16)
    assert "every thread holds the one value" in array.title


# --- sizes -------------------------------------------------------------------------------


def test_a_large_array_is_drawn_whole_within_the_budget() -> None:
    """1024x1024 was cropped to 1000 rows in a picture 1528 px high: the map now takes the
    room the size budget leaves, and shows every row."""
    panels, _, _ = _draw("WGMMA", "--shape", "1024x1024", "--dtype", "bf16")
    overview = _map(panels)
    assert overview.shape == (1024, 1024)
    assert "showing" not in overview.title
    width, height = _png_of("WGMMA", "--shape", "1024x1024", "--dtype", "bf16").size
    assert max(width, height) <= MAX_SIDE
    assert height >= 1024


def _label_boxes(grid: Grid) -> list[tuple[float, float, float, float]]:
    cell_w, cell_h = grid.cell_px
    boxes = []
    for row, start, stop, text in grid.spans:
        middle = (start + stop) / 2 * cell_w
        half = text_width(text, LABEL_PX) / 2
        boxes.append((middle - half, row * cell_h, middle + half, (row + 1) * cell_h))
    return boxes


@pytest.mark.parametrize("shape", ["1024x1024", "256x256", "64x64", "128x64", "64x4096"])
def test_warp_names_sit_in_their_warp_and_never_overlap(shape: str) -> None:
    overview = _map(_draw("WGMMA", "--shape", shape)[0])
    boxes = _label_boxes(overview)
    for a, box in enumerate(boxes):
        for other in boxes[a + 1 :]:
            apart = box[2] <= other[0] or other[2] <= box[0] or box[3] <= other[1]
            assert apart or other[3] <= box[1], (box, other)
    for row, start, stop, text in overview.spans:
        assert overview.regions is not None
        assert set(overview.regions[row, start:stop].tolist()) == {int(text[1:])}


def test_a_wide_array_is_folded_not_a_strip() -> None:
    """64x4096 was a 50-pixel strip of its first 1400 columns: folded into bands of
    columns, it is all there, in cells large enough to see."""
    panels, _, _ = _draw("WGMMA", "--shape", "64x4096")
    overview = _map(panels)
    rows, cols = overview.shape
    assert rows * cols == 64 * 4096 and overview.row_period == 64
    assert overview.cell_px[0] >= 2
    assert "folded into" in overview.title
    width, height = _png_of("WGMMA", "--shape", "64x4096").size
    assert min(width, height) >= 600 and max(width, height) <= MAX_SIDE
    # Band b of the fold holds columns 512b..512b+511 of the array.
    held = ownership(fa.WGMMA_LAYOUT, (64, 4096))
    band = cols
    expected = lane_colors(held.threads[:, 3 * band : 4 * band, 0] % 32)
    assert np.allclose(overview.colors[3 * 64 : 4 * 64], expected)


@pytest.mark.parametrize(
    ("name", "layout"),
    [("WGMMA_ROW", fa.WGMMA_ROW_LAYOUT), ("TCGEN05_ROW", fa.TCGEN05_ROW_LAYOUT),
     ("strided:1", fa.WGStridedFragLayout((131072,), 1))],
)  # fmt: skip
def test_a_long_1d_array_is_not_a_black_bar(name: str, layout: object) -> None:
    """131072 elements in rows of 64 at 1 px, outlined warp by warp, read as a black bar:
    now wrapped to fit the budget, every lane colour of the layout shows in the map."""
    argv = [name, "--shape", "131072"]
    panels, _, _ = _draw(*argv)
    overview = _map(panels)
    assert math.prod(overview.shape) == 131072
    assert overview.cell_px[0] >= 3
    image = np.asarray(_png_of(*argv).convert("RGB"))
    picture = scene(panels_to_draw(build_parser().parse_args(argv))[0])
    cells = max((i for i in picture.items if isinstance(i, Cells)), key=lambda c: c.width)
    top, left = round(cells.y), round(cells.x)
    drawn = image[top : top + round(cells.height), left : left + round(cells.width)]
    dark = np.all(drawn < 60, axis=-1).mean()
    assert dark < 0.1, dark  # the map's own pixels, not black outlines
    colours = {tuple(p) for p in drawn.reshape(-1, 3).tolist()}
    held = ownership(layout, (131072,))
    lanes = np.unique(held.threads[..., 0] % 32)
    expected = {tuple(c) for c in np.round(lane_colors(lanes) * 255).astype(int).tolist()}
    assert len(expected) >= 8 and expected <= colours


def test_the_1d_atom_is_whole_and_its_title_says_how_it_wraps() -> None:
    panels, _, _ = _draw("WGMMA_ROW", "--shape", "1024")
    (atom,) = [g for g in panels if g.title.startswith("the layout's atom")]
    rows, wrap = atom.shape
    assert 64 % wrap == 0 and rows * wrap == 64  # all of the tile, in whole rows
    assert atom.row_scale == wrap
    assert f"elements 0..63, {wrap} per row" in atom.title
    labelled = {row * wrap + c for row, start, stop, _ in atom.spans for c in range(start, stop)}
    assert labelled == set(range(64))
    key, (overview, _) = register_pictures(
        ownership(fa.WGMMA_ROW_LAYOUT, (1024,)), fa.WGMMA_ROW_LAYOUT, "W", "f32"
    )
    assert figure_size([key, (overview, atom)])[0] <= MAX_SIDE


# --- text ------------------------------------------------------------------------------


def test_warp_prints_what_the_warp_holds(capsys: pytest.CaptureFixture, tmp_path: Path) -> None:
    out = tmp_path / "w.png"
    assert draw_main(["WGMMA", "--shape", "128x64", "--warp", "1", "-o", str(out)]) == 0
    text = capsys.readouterr().out
    held = ownership(fa.WGMMA_LAYOUT, (128, 64))
    mine = np.any(held.threads // 32 == 1, axis=-1)
    assert f"warp 1 (threads 32-63) holds {int(mine.sum())} of {128 * 64} elements" in text
    rows = np.flatnonzero(mine.any(axis=1))
    assert rows.tolist() == [*range(16, 32), *range(80, 96)]
    assert "rows: 16-31, 80-95 (of 128)" in text
    assert "columns: 0-63 (all)" in text
    assert warp_holdings(held, 1) in text


def test_tmem_thread_prints_what_its_lane_holds(
    capsys: pytest.CaptureFixture, tmp_path: Path
) -> None:
    out = tmp_path / "t.png"
    argv = ["--tmem", "half_lane", "--shape", "64x64", "--thread", "20", "-o", str(out)]
    assert draw_main(argv) == 0
    text = capsys.readouterr().out
    placed = tmem_placement(tcgen05.tmem_half_lane_layout(64), (64, 64))
    rows, cols = np.nonzero(np.any(placed.lane == 20, axis=-1))
    assert set(rows.tolist()) == {4} and cols.tolist() == list(range(32, 64))
    assert "TMEM lane 20 (lane quarter 0: warp 0 reads it" in text
    assert "columns 0-31: (4, 32)..(4, 63)" in text
    assert lane_holdings(placed, 20) in text


def test_default_file_names_differ_by_element_type(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.chdir(tmp_path)
    for dtype in ("bf16", "f32"):
        assert draw_main(["WGMMA", "--shape", "64x64", "--dtype", dtype]) == 0
    smem = ["--smem", "tile=8x32", "--shape", "64x64"]
    for dtype in ("f16", "f32"):
        assert draw_main([*smem, "--dtype", dtype]) == 0
    names = sorted(p.name for p in tmp_path.iterdir())
    assert names == [
        "smem_8x32_sw128_64x64_f32.png",
        "smem_8x32_sw64_64x64_f16.png",
        "wgmma_64x64_bf16.png",
        "wgmma_64x64_f32.png",
    ]


# --- imports ------------------------------------------------------------------------------


def test_no_module_of_draw_imports_another_in_a_circle() -> None:
    """Function-local imports count: ``pictures`` and ``tmem_pictures`` imported each other."""
    graph: dict[str, set[str]] = {}
    for path in DRAW.glob("*.py"):
        found = set()
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.ImportFrom) and node.module:
                if node.module == "smalto.draw":
                    found |= {f"smalto.draw.{a.name}" for a in node.names}
                elif node.module.startswith("smalto.draw."):
                    found.add(node.module)
            elif isinstance(node, ast.Import):
                found |= {a.name for a in node.names if a.name.startswith("smalto.draw.")}
        graph[f"smalto.draw.{path.stem}"] = found - {f"smalto.draw.{path.stem}"}

    def reaches(start: str, goal: str, seen: set[str]) -> bool:
        for nxt in graph.get(start, ()):
            if nxt == goal or (nxt not in seen and reaches(nxt, goal, seen | {nxt})):
                return True
        return False

    circles = [m for m in graph if reaches(m, m, {m})]
    assert circles == []
    assert "smalto.draw.tmem_pictures" in graph and graph["smalto.draw.pictures"]


def test_svg_is_well_formed_and_its_text_is_text(tmp_path: Path) -> None:
    """The SVG is written by hand: it parses as XML, its size is the picture's, its cells
    are rectangles of the layout's colours and its titles and labels are searchable text."""
    import xml.etree.ElementTree as ElementTree

    out = tmp_path / "w.svg"
    assert draw_main(["WGMMA", "--shape", "64x16", "--dtype", "bf16", "-o", str(out)]) == 0
    root = ElementTree.fromstring(out.read_bytes())
    namespace = "{http://www.w3.org/2000/svg}"
    panels, _, _ = panels_to_draw(build_parser().parse_args(["WGMMA", "--shape", "64x16"]))
    assert (int(root.get("width")), int(root.get("height"))) == figure_size(panels)
    texts = [t.text for t in root.iter(f"{namespace}text")]
    assert "WGMMA: 64x16 bf16 in registers; 4 register(s) of 2 element(s) per thread" in texts
    assert {"T0:R0", "T127:R3"} <= set(texts)
    fills = {p.get("fill") for p in root.iter(f"{namespace}path") if p.get("fill") != "none"}
    lane0 = "#" + "".join(f"{round(c * 255):02x}" for c in lane_colors(np.array([0]))[0])
    assert lane0 in fills
