# ruff: noqa: E501  (MLIR fixtures read best one op per line)
"""``smalto infer --report``: the HTML page, checked as text and in headless Chromium."""

from __future__ import annotations

import html
import re
import shutil
import subprocess
from html.parser import HTMLParser
from pathlib import Path

import pytest
from cli_run import run
from summary_kernels import TRANSPOSED

from smalto.basics.mlir import module_arch, parse_module
from smalto.errors import InferenceError
from smalto.infer import in_context, solve_module
from smalto.report.layouts_page import write_report

ROOT = Path(__file__).resolve().parents[2]
FLASH = ROOT / "examples" / "flash_attention_fwd.mlir"
TCGEN05 = ROOT / "tests" / "corpus" / "kernels" / "custom_tcgen05_mma_tmem_epilogue.mlir"
UNSAT = ROOT / "tests" / "unsat" / "cast_strided_then_wgmma.mlir"
SECTIONS = ("summary", "layouts", "ops", "why", "smem", "module")


class _Outline(HTMLParser):
    """Section ids, figure ids, images, relayout rows and internal links of a page."""

    def __init__(self) -> None:
        super().__init__()
        self.sections: list[str] = []
        self.figures: list[str] = []
        self.images: list[str] = []
        self.relayout_rows = 0
        self.free = 0  # splat broadcasts, noted but not marked
        self.links: list[str] = []
        self.lines: list[str] = []  # line anchors: L1, L2...
        self.marked: list[str] = []  # lines marked in the module

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        a = dict(attrs)
        if tag == "section":
            self.sections.append(a.get("id") or "")
        elif tag == "figure":
            self.figures.append(a.get("id") or "")
        elif tag == "img":
            self.images.append(a.get("src") or "")
        elif tag == "tr" and a.get("class") == "relayout":
            self.relayout_rows += 1
        elif tag == "a" and (a.get("href") or "").startswith("#"):
            self.links.append((a.get("href") or "")[1:])
        elif tag == "span" and a.get("class") == "free":
            self.free += 1
        elif tag == "span" and (a.get("id") or "").startswith("L"):
            self.lines.append(a.get("id") or "")
            if a.get("class") == "hit":
                self.marked.append(a.get("id") or "")


def _report(source: Path, out: Path) -> _Outline:
    module = parse_module(source.read_text(), source_name=str(source))
    with in_context(module):
        inference = solve_module(module, arch=module_arch(module) or (9, 0))
        write_report(module, inference, out, source_name=str(source))
    outline = _Outline()
    outline.feed(out.read_text(encoding="utf-8"))
    return outline


@pytest.fixture(scope="module")
def flash_report(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, _Outline]:
    out = tmp_path_factory.mktemp("report") / "flash.html"
    return out, _report(FLASH, out)


def test_page_has_sections_pictures_and_relayouts(flash_report: tuple[Path, _Outline]) -> None:
    path, outline = flash_report
    assert outline.sections == list(SECTIONS)
    # Every distinct layout has a figure; all but splats have a PNG picture.
    assert len(outline.figures) >= 4
    assert outline.images and all(s.startswith("data:image/png;base64,") for s in outline.images)
    assert len(outline.images) < len(outline.figures)  # the splat constants have no picture
    # The splat constants that seed the loop are broadcast: free, noted, not marked.
    assert outline.relayout_rows == 0 and outline.free == 8
    assert set(outline.links) <= set(outline.figures) | set(outline.lines)
    assert any(link.startswith("L") for link in outline.links)
    text = path.read_text(encoding="utf-8")
    assert "WGMMA" in text and "WGMMA_ROW" in text
    assert "mosaic_gpu.wgmma" in text and "splat &rarr; WGMMA (free: a splat broadcast)" in text
    assert "<li>0 relayouts that cost something</li>" in text


def test_only_relayouts_that_cost_something_are_marked(tmp_path: Path) -> None:
    source = tmp_path / "transposed.mlir"
    source.write_text(TRANSPOSED)
    outline = _report(source, tmp_path / "transposed.html")
    text = (tmp_path / "transposed.html").read_text(encoding="utf-8")
    assert outline.relayout_rows == 2 and outline.free == 1
    assert "%2: WGMMA &rarr; WGMMA_TRANSPOSED (registers shuffled between threads)" in text
    assert "<li>2 relayouts that cost something</li>" in text


def test_a_failed_inference_writes_the_diagnosis_and_the_module(tmp_path: Path) -> None:
    """The page that helps most: the requirements, where they come from, the suggestion,
    and the module with the lines the diagnosis names marked."""
    # The unsat kernel without its Python locations: the diagnosis names lines of the file.
    source = tmp_path / "unsat.mlir"
    source.write_text(re.sub(r" loc\([^)]*\)\)*", "", UNSAT.read_text()))
    page = tmp_path / "page.html"
    done = run("infer", source, "--report", page)
    assert done.status == 1 and "Traceback" not in done.err
    text = page.read_text(encoding="utf-8")
    outline = _Outline()
    outline.feed(text)
    # In the terminal's order: the fix, why, the layouts drawn, the notes.
    assert outline.sections == ["error", "suggestion", "diagnosis", "clash", "notes", "module"]
    module = parse_module(source.read_text(), path=str(source), source_name=str(source))
    with in_context(module):
        try:
            solve_module(module)
        except InferenceError as error:
            conflict = error.conflict
    assert conflict is not None and conflict.fix_lines()
    for requirement in conflict.requirements:
        assert html.escape(requirement.text) in text
    for line in conflict.fix_lines():
        assert html.escape(line) in text
    # Each location in the file links to its line, which is marked in the listing.
    lines = sorted({int(loc.rsplit(":", 2)[1]) for loc in conflict.locations})
    assert outline.marked == [f"L{n}" for n in lines]
    assert {f"L{n}" for n in lines} <= set(outline.links)
    assert len(outline.lines) == len(source.read_text().splitlines())
    # The layouts the casts fix, which cannot all hold, drawn side by side, in one picture.
    clash = _section(text, "clash")
    assert "strided ×2" in clash and "WGMMA" in clash
    assert clash.count('src="data:image/png;base64,') == 1


def test_a_failure_page_shows_the_python_source(tmp_path: Path) -> None:
    # A kernel located in a Python file that exists: its lines are shown.
    kernel_py = tmp_path / "kernel.py"
    kernel_py.write_text("\n".join(f"line_{n} = {n}" for n in range(1, 20)) + "\n")
    source = tmp_path / "unsat.mlir"
    source.write_text(UNSAT.read_text().replace('"kernel.py"', f'"{kernel_py}"'))
    page = tmp_path / "page.html"
    done = run("infer", source, "--report", page)
    assert done.status == 1
    text = page.read_text(encoding="utf-8")
    assert '<section id="source">' in text and "line_11 = 11" in text


def _section(text: str, name: str) -> str:
    start = text.index(f'<section id="{name}">')
    return text[start : text.index("</section>", start)]


PALLAS_UNSAT = ROOT / "tests" / "unsat" / "pallas_row_sum_cast_to_columns.mlir"


def test_a_pallas_failure_page_draws_the_clash_and_marks_the_printed_lines(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A module captured from Pallas: its ops are located in kernels.py, not in the .mlir
    file. The page shows the module as `smalto infer` prints it, and marks the lines of the
    ops that carry the kernel lines the diagnosis names; it draws the row sums in the
    layout the reduction gives them next to the column layout the cast asks for; the
    source lines come from kernels.py beside the module (run from elsewhere)."""
    monkeypatch.chdir(tmp_path)
    page = tmp_path / "page.html"
    done = run("infer", PALLAS_UNSAT, "--report", page)
    assert done.status == 1 and "Traceback" not in done.err
    text = page.read_text(encoding="utf-8")
    outline = _Outline()
    outline.feed(text)
    assert outline.sections == ["error", "suggestion", "diagnosis", "clash", "source", "module"]
    clash = _section(text, "clash")
    assert "cannot convert %53 (WGMMA_ROW) to %54 (WGMMA_COL)" in clash
    assert "through `vector.multi_reduction` (`reduce_sum`) at kernels.py:51:12" in clash
    assert clash.count('src="data:image/png;base64,') == 1
    assert 'alt="%53 as WGMMA_ROW, next to %54 as WGMMA_COL"' in clash
    # The kernel lines, read beside the module; the verified edit at its line.
    cast = "out_gmem[...] = plgpu.layout_cast(s, plgpu.Layout.WGMMA.reduce(0))"
    assert html.escape(cast) in _section(text, "source")
    assert html.escape(cast) in _section(text, "suggestion")
    # The printed module, its lines of the reduction and the cast at kernels.py:52:24
    # marked; the diagnosis links to them.
    listing = _section(text, "module")
    assert "as `smalto infer` prints it" in listing and "loc(" not in listing
    lines = re.findall(
        r'<span id="L(\d+)"( class="hit")?><span class="n">\s*\d+  </span>(.*)', listing
    )
    marked = {int(n): line for n, hit, line in lines if hit}
    assert marked and all(
        "vector.multi_reduction" in line or "mosaic_gpu.layout_cast" in line
        for line in marked.values()
    )
    reductions = [int(n) for n, _, line in lines if "vector.multi_reduction" in line]
    assert reductions and set(reductions) <= set(marked)
    assert {link for link in outline.links if link.startswith("L")} <= set(outline.marked)
    assert {f"L{n}" for n in marked} == set(outline.marked)


def test_a_failure_page_says_which_source_file_it_did_not_find(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    alone = tmp_path / "alone.mlir"
    alone.write_text(PALLAS_UNSAT.read_text())
    page = tmp_path / "page.html"
    done = run("infer", alone, "--report", page)
    assert done.status == 1
    source = _section(page.read_text(encoding="utf-8"), "source")
    assert "source lines not shown: kernels.py not found in the current directory" in source


def test_a_success_page_says_what_the_rescues_changed(tmp_path: Path) -> None:
    """A module with no layouts as written: the page says which ops the unit-dim rewrite
    changed (as the notes on stderr do) before the layouts of the rewritten module."""
    from rms_norm import RMS_NORM

    source = tmp_path / "rms.mlir"
    source.write_text(RMS_NORM)
    page = tmp_path / "page.html"
    done = run("infer", source, "--report", page)
    assert done.status == 0, done.err
    text = page.read_text(encoding="utf-8")
    outline = _Outline()
    outline.feed(text)
    assert outline.sections == ["summary", "changes", *SECTIONS[1:]]
    notes = [n.removeprefix("smalto: note: ") for n in done.err.splitlines()]
    assert len(notes) == 7
    changes = _section(text, "changes")
    assert "unit-dim rewrite" in changes
    assert all(f"<li>{html.escape(note)}</li>" in changes for note in notes)


def test_a_success_page_lists_the_transfers_made_unoptimized(tmp_path: Path) -> None:
    module = ROOT / "tests" / "unoptimized" / "pallas_tests"
    (entry,) = module.glob("*broadcast_in_dim11.mlir")
    page = tmp_path / "page.html"
    done = run("infer", entry, "--allow-unoptimized", "--report", page, "-o", tmp_path / "o")
    assert done.status == 0, done.err
    (warning,) = [w for w in done.err.splitlines() if w.startswith("smalto: warning: ")]
    changes = _section(page.read_text(encoding="utf-8"), "changes")
    assert "--allow-unoptimized" in changes
    assert html.escape(warning.removeprefix("smalto: warning: ")) in changes


def test_tmem_layouts_are_drawn(tmp_path: Path) -> None:
    outline = _report(TCGEN05, tmp_path / "tcgen05.html")
    text = (tmp_path / "tcgen05.html").read_text(encoding="utf-8")
    assert "TMEM default" in text
    assert len(outline.images) >= 2


def _chromium() -> str | None:
    for name in ("chromium", "chromium-browser", "google-chrome", "google-chrome-stable"):
        found = shutil.which(name)
        if found:
            return found
    return None


def _dom_in_chromium(page: Path, profile: Path) -> str:
    """The page's DOM once headless Chromium has loaded it (skips without Chromium)."""
    browser = _chromium()
    if browser is None:
        pytest.skip("Chromium is not installed (apt-get install chromium) to open the report")
    result = subprocess.run(
        [
            browser,
            "--headless",
            "--no-sandbox",
            "--disable-gpu",
            "--disable-background-networking",
            "--disable-component-update",
            "--disable-sync",
            "--no-first-run",
            f"--user-data-dir={profile}",
            "--virtual-time-budget=10000",
            "--dump-dom",
            page.as_uri(),
        ],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert result.returncode == 0, result.stderr[-2000:]
    return result.stdout


def test_page_loads_in_headless_chromium(
    flash_report: tuple[Path, _Outline], tmp_path: Path
) -> None:
    path, outline = flash_report
    dom = _dom_in_chromium(path, tmp_path / "profile")
    for section in SECTIONS:
        assert f'<section id="{section}">' in dom
    # The page's own script counts the pictures that decoded, once it has loaded.
    loaded = re.search(r'data-images-loaded="(\d+)"', dom)
    assert loaded, "the load handler did not run"
    assert int(loaded[1]) == len(outline.images) > 0


def test_failure_page_loads_in_headless_chromium(tmp_path: Path) -> None:
    page = tmp_path / "page.html"
    assert run("infer", PALLAS_UNSAT, "--report", page).status == 1
    outline = _Outline()
    outline.feed(page.read_text(encoding="utf-8"))
    dom = _dom_in_chromium(page, tmp_path / "profile")
    for section in outline.sections:
        assert f'<section id="{section}">' in dom
    loaded = re.search(r'data-images-loaded="(\d+)"', dom)
    assert loaded, "the load handler did not run"
    assert int(loaded[1]) == len(outline.images) == 1  # the two sides of the clash, in one


def test_a_failure_without_a_conflict_still_writes_the_page(tmp_path: Path) -> None:
    """An op with no rule: no conflict to show, the message and the module are."""
    source = tmp_path / "no_rule.mlir"
    source.write_text(
        "func.func @k() {\n"
        '  %c = "arith.constant"() <{value = dense<1.0> : vector<128x64xf32>}> : () -> vector<128x64xf32>\n'
        '  %t = "vector.transpose"(%c) <{permutation = array<i64: 1, 0>}> : (vector<128x64xf32>) -> vector<64x128xf32>\n'
        "  return\n"
        "}\n"
    )
    page = tmp_path / "page.html"
    done = run("infer", source, "--report", page)
    assert done.status == 1 and "vector.transpose" in done.err
    outline = _Outline()
    outline.feed(page.read_text(encoding="utf-8"))
    assert outline.sections == ["error", "diagnosis", "module"]
    assert "vector.transpose" in page.read_text(encoding="utf-8")
    assert len(outline.lines) == 5 and outline.marked == []
