"""The page of a failed inference says what the terminal says, and draws the layouts in
conflict, both sides, at one scale (issue #34, part 4).

The kernels are Pallas kernels as users write them, captured (tests/unsat/kernels*.py):
a row sum cast to the column layout, a softmax whose max reduces the wrong axis, an
epilogue stored to an SMEM ref without a swizzle, a Blackwell row max cast to columns.
"""

from __future__ import annotations

import html
import re
from pathlib import Path

import jax
import jax.numpy as jnp
import pytest
from cli_run import run
from jax.experimental.pallas import mosaic_gpu as plgpu

import smalto.jax
import smalto.report.failure_page

UNSAT = Path(__file__).resolve().parents[1] / "unsat"


def _page_text(page: Path) -> str:
    """The page as a reader sees it: tags dropped, entities read, spaces collapsed."""
    text = re.sub(r"<[^>]+>", " ", page.read_text(encoding="utf-8"))
    return " ".join(html.unescape(text).split())


def _terminal_lines(err: str) -> list[str]:
    """The diagnosis ``smalto infer`` prints, line by line: from ``smalto: error:`` to the
    source excerpts that follow it (``kernels.py:52:24:`` and the lines under it)."""
    lines = []
    for line in err.splitlines():
        if re.fullmatch(r"\S+:\d+:\d+:", line):
            break
        line = line.removeprefix("smalto: error: ").strip().removeprefix("- ")
        if line and line != "why: these requirements cannot all hold:":
            lines.append(" ".join(line.split()))
    return lines


@pytest.mark.parametrize(
    "kernel",
    [
        "pallas_row_sum_cast_to_columns",
        "words_softmax_max_over_columns",
        "pallas_epilogue_to_unswizzled_smem",
        "pallas_tcgen05_row_sum_cast_to_columns",
        "words_iota_mask_in_row_layout",
    ],
)
def test_the_page_keeps_every_line_the_terminal_prints(kernel: str, tmp_path: Path) -> None:
    page = tmp_path / "page.html"
    done = run("infer", UNSAT / f"{kernel}.mlir", "--report", page)
    assert done.status == 1 and "Traceback" not in done.err
    said = _terminal_lines(done.err)
    # (Two of them print notes, so that the page is seen to keep those too.)
    noted = {"pallas_epilogue_to_unswizzled_smem", "words_iota_mask_in_row_layout"}
    assert any(line.startswith("note:") for line in said) == (kernel in noted)
    assert any(line.startswith("error[SM") for line in said)
    shown = _page_text(page)
    missing = [line for line in said if line not in shown]
    assert not missing, missing


def test_the_transfer_page_keeps_the_fast_alternatives(tmp_path: Path) -> None:
    """The note on an SMEM store with no plan names the transforms that work (the fast
    alternative); the page says it too, and draws the value next to the ref."""
    page = tmp_path / "page.html"
    run("infer", UNSAT / "pallas_epilogue_to_unswizzled_smem.mlir", "--report", page)
    text = page.read_text(encoding="utf-8")
    assert "transforms that work with WGMMA: tiled 8×64" in text
    assert 'alt="%71 as WGMMA, next to %72 as tiled 8×64, no swizzle"' in text


def test_a_reduction_over_the_wrong_axis_draws_both_sides(tmp_path: Path) -> None:
    """``m = s.max(axis=0)`` then ``s - m[:, None]``: the max as the reduction lays it out
    (one value per column) next to the layout the broadcast along rows needs."""
    page = tmp_path / "page.html"
    run("infer", UNSAT / "words_softmax_max_over_columns.mlir", "--report", page)
    text = page.read_text(encoding="utf-8")
    assert "%71 cannot be both WGMMA_COL and WGMMA_ROW" in text
    assert 'alt="%71 as WGMMA_COL, next to %71 as WGMMA_ROW"' in text
    row = text[text.index("<b>WGMMA_ROW</b>: wanted by") :].split("</li>")[0]
    assert "`mosaic_gpu.broadcast_in_dim` (`sub`) at kernels_words.py:166:23" in row


def test_a_blackwell_reduction_over_the_wrong_axis_draws_both_sides(tmp_path: Path) -> None:
    """The same softmax on a TMEM accumulator: no annotation lays out the TMEM load, so the
    picture takes the load's first layout (TCGEN05) and follows it both ways."""
    page = tmp_path / "page.html"
    run("infer", UNSAT / "words_tcgen05_softmax_max_over_columns.mlir", "--report", page)
    text = page.read_text(encoding="utf-8")
    assert "%84 cannot be both WGMMA_COL and TCGEN05_ROW" in text
    assert 'alt="%84 as WGMMA_COL, next to %84 as TCGEN05_ROW"' in text


@pytest.mark.parametrize(
    ("kernel", "sides"),
    [
        ("pallas_row_sum_cast_to_columns", ["%53: WGMMA_ROW", "%54: WGMMA_COL"]),
        ("words_softmax_max_over_columns", ["%71: WGMMA_COL", "%71: WGMMA_ROW"]),
    ],
)
def test_both_sides_are_drawn_at_one_scale(
    kernel: str, sides: list[str], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A vector of row sums (wrapped, wide labels) and one of column sums are drawn with
    the same cell size, in one picture, so that the page scales them together."""
    drawn: list[object] = []
    real = smalto.report.failure_page.render

    def recording(panels, fmt, dpi):  # noqa: ANN001, ANN202
        drawn.append(panels)
        return real(panels, fmt, dpi)

    monkeypatch.setattr(smalto.report.failure_page, "render", recording)
    run("infer", UNSAT / f"{kernel}.mlir", "--report", tmp_path / "page.html")
    (panels,) = drawn
    grids = [g for item in panels for g in (item if isinstance(item, tuple) else (item,))]
    assert [g.title.split(" in registers")[0] for g in grids] == [f"{s}: 128 f32" if "%5" in s
        else f"{s}: 64 f32" for s in sides]  # fmt: skip
    assert len({g.cell_px for g in grids}) == 1


def test_a_value_and_its_smem_ref_show_the_same_cells(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A WGMMA epilogue stored to an SMEM ref without a swizzle: the registers and the ref
    are drawn over the same corner of the 64x128 array, cell for cell."""
    drawn: list[object] = []
    real = smalto.report.failure_page.render

    def recording(panels, fmt, dpi):  # noqa: ANN001, ANN202
        drawn.append(panels)
        return real(panels, fmt, dpi)

    monkeypatch.setattr(smalto.report.failure_page, "render", recording)
    run("infer", UNSAT / "pallas_epilogue_to_unswizzled_smem.mlir", "--report", tmp_path / "p")
    (panels,) = drawn
    grids = [g for item in panels for g in (item if isinstance(item, tuple) else (item,))]
    assert [g.title.split(":")[0] for g in grids] == ["%71", "%72"]
    assert len({g.shape for g in grids}) == len({g.cell_px for g in grids}) == 1


def row_sums_and_column_maxima(x: jax.Array) -> tuple[jax.Array, jax.Array]:
    """Two independent problems: row sums cast to columns, column maxima cast to rows."""

    def kernel(x_gmem, sums_gmem, maxima_gmem, x_smem, barrier):  # noqa: ANN001, ANN202
        plgpu.copy_gmem_to_smem(x_gmem, x_smem, barrier)
        plgpu.barrier_wait(barrier)
        x = plgpu.layout_cast(x_smem[...], plgpu.Layout.WGMMA)
        sums_gmem[...] = plgpu.layout_cast(jnp.sum(x, axis=1), plgpu.Layout.WGMMA.reduce(0))
        y = plgpu.layout_cast(x_smem[...] * 2.0, plgpu.Layout.WGMMA)
        maxima_gmem[...] = plgpu.layout_cast(jnp.max(y, axis=0), plgpu.Layout.WGMMA.reduce(1))

    m, n = x.shape
    return plgpu.kernel(
        kernel,
        out_type=(jax.ShapeDtypeStruct((m,), x.dtype), jax.ShapeDtypeStruct((n,), x.dtype)),
        scratch_types=[plgpu.SMEM(x.shape, x.dtype), plgpu.Barrier()],
        compiler_params=plgpu.CompilerParams(lowering_semantics=plgpu.LoweringSemantics.Warpgroup),
    )(x)


def test_a_kernel_with_two_problems_gets_both_on_the_page(tmp_path: Path) -> None:
    (kernel,) = smalto.jax.capture(
        row_sums_and_column_maxima, jax.ShapeDtypeStruct((128, 128), jnp.float32), by="smalto"
    )
    module, page = tmp_path / "two.mlir", tmp_path / "page.html"
    module.write_text(kernel.text)
    done = run("infer", module, "--report", page)
    assert done.status == 1 and "problem 2 of 2:" in done.err
    shown = _page_text(page)
    said = _terminal_lines(done.err)
    assert "the kernel has 2 problems, each with its own fix:" in said
    assert [line for line in said if line not in shown] == []
    text = page.read_text(encoding="utf-8")
    assert text.count('id="problem-') == 2
    assert 'alt="%61 as WGMMA_ROW, next to %62 as WGMMA_COL"' in text
    assert 'alt="%66 as WGMMA_COL, next to %67 as WGMMA_ROW"' in text


def test_the_page_keeps_what_verbose_adds(tmp_path: Path) -> None:
    """``--verbose`` adds what each value was forced to and where each is defined: the page
    always shows both."""
    page = tmp_path / "page.html"
    done = run(
        "infer", UNSAT / "pallas_row_sum_cast_to_columns.mlir", "--verbose", "--report", page
    )
    said = [
        line for line in _terminal_lines(done.err) if line not in ("where:", "the values involved:")
    ]
    assert any("is defined by" in line for line in said)
    shown = _page_text(page)
    assert [line for line in said if line not in shown] == []


@pytest.mark.parametrize(
    ("kernel", "title", "sides"),
    [
        (  # `jnp.min(s, axis=0, keepdims=True)`, reshaped to a column and broadcast along rows
            "words_keepdims_min_over_columns",
            "`mosaic_gpu.broadcast_in_dim` (`sub`) at kernels_words.py:187:15 broadcasts %73 "
            "along its unit dim, which needs %73 as WGMMA_ROW keepdims; %73 comes from %71 as "
            "WGMMA_COL",
            ["%71: WGMMA_COL: 64 f32", "%73: WGMMA_ROW keepdims: 64x1 f32"],
        ),
        (  # an iota cast to rows, expanded to 1x64 (`cols[None, :]`) and broadcast down rows
            "words_iota_mask_in_row_layout",
            "`mosaic_gpu.broadcast_in_dim` at kernels_words.py:141:25 broadcasts %74 along its "
            "unit dim, which needs %74 as WGMMA_COL keepdims; %74 comes from %72 as WGMMA_ROW",
            ["%72: WGMMA_ROW: 64 i32", "%74: WGMMA_COL keepdims: 1x64 i1"],
        ),
        (  # Blackwell: `jnp.max(s, axis=1, keepdims=True)` reshaped to a row
            "words_tcgen05_keepdims_max_over_rows",
            "`mosaic_gpu.broadcast_in_dim` (`sub`) at kernels_words.py:232:15 broadcasts %86 "
            "along its unit dim, which needs %86 as WGMMA_COL keepdims; %86 comes from %84 as "
            "TCGEN05_ROW",
            ["%84: TCGEN05_ROW: 128 f32", "%86: WGMMA_COL keepdims: 1x128 f32"],
        ),
    ],
)
def test_a_unit_dim_broadcast_draws_what_it_needs_next_to_what_the_value_has(
    kernel: str, title: str, sides: list[str], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A value broadcast along a size-1 dim (a keep-dims reduction, an ``x[None, :]``) has
    no layout at all in JAX 0.12's lowering, so no requirement fails between two layouts:
    the page draws the layout the broadcast needs, at the unit-dim value's own shape, next
    to the layout the value comes from, both named, at one scale."""
    drawn: list[object] = []
    real = smalto.report.failure_page.render

    def recording(panels, fmt, dpi):  # noqa: ANN001, ANN202
        drawn.append(panels)
        return real(panels, fmt, dpi)

    monkeypatch.setattr(smalto.report.failure_page, "render", recording)
    page = tmp_path / "page.html"
    done = run("infer", UNSAT / f"{kernel}.mlir", "--report", page)
    assert done.status == 1 and "Traceback" not in done.err
    text = page.read_text(encoding="utf-8")
    assert f"<h3>{html.escape(title)}</h3>" in text
    alt = ", next to ".join(side.split(":")[0] + " as " + side.split(": ")[1] for side in sides)
    assert f'alt="{alt}"' in text
    (panels,) = drawn
    grids = [g for item in panels for g in (item if isinstance(item, tuple) else (item,))]
    assert [g.title.split(" in registers")[0] for g in grids] == sides
    assert len({g.cell_px for g in grids}) == 1


def _row_cast_then_broadcast_along_rows(row: jax.Array) -> jax.Array:
    """A row vector cast to one value per row (``WGMMA_ROW``), then broadcast down the rows
    of a tile (``row[None, :]``, which needs one value per column): nothing else lays the
    tile out, so no requirement fails between two forced layouts."""
    n = row.shape[0]

    def body(row_gmem, out_gmem):  # type: ignore[no-untyped-def]
        r = plgpu.layout_cast(row_gmem[...], plgpu.Layout.WGMMA.reduce(1))
        out_gmem[...] = jnp.broadcast_to(r[None, :], (n, n))

    return plgpu.kernel(
        body,
        out_type=jax.ShapeDtypeStruct((n, n), row.dtype),
        compiler_params=plgpu.CompilerParams(lowering_semantics=plgpu.LoweringSemantics.Warpgroup),
    )(row)


@pytest.mark.parametrize("arch", [(9, 0), (10, 0)])
def test_a_row_vector_broadcast_along_the_wrong_axis_draws_both_layouts(
    arch: tuple[int, int], tmp_path: Path
) -> None:
    """A plain clash of a cast and a broadcast whose result nothing lays out: the value in
    its cast layout, next to the layout the broadcast needs it in (the reduction of the
    arch's tile layout), with a title that names both."""
    (captured,) = smalto.jax.capture(
        _row_cast_then_broadcast_along_rows, jax.ShapeDtypeStruct((128,), jnp.float32)
    )
    module = tmp_path / "kernel.mlir"
    module.write_text(captured.text)
    page = tmp_path / "page.html"
    done = run("infer", module, "--arch", f"{arch[0]}.{arch[1]}", "--report", page)
    assert done.status == 1 and "Traceback" not in done.err
    text = page.read_text(encoding="utf-8")
    needed = "WGMMA_COL"  # (Blackwell's TCGEN05_COL is the same layout, named so)
    (alt,) = re.findall(r'alt="([^"]*)"', text)
    assert re.fullmatch(rf"(%\d+) as WGMMA_ROW, next to \1 as {needed}", alt), alt
    assert f"which needs it as {needed}; it is WGMMA_ROW" in _page_text(page)
