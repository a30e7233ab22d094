"""``smalto infer --report``: the HTML page, checked as text and in headless Chromium."""

from __future__ import annotations

import re
import shutil
import subprocess
from html.parser import HTMLParser
from pathlib import Path

import pytest

from smalto.infer import in_context, solve_module
from smalto.mlir import module_arch, parse_module
from smalto.report import write_report

ROOT = Path(__file__).resolve().parents[1]
FLASH = ROOT / "examples" / "flash_attention_fwd.mlir"
TCGEN05 = ROOT / "tests" / "corpus" / "kernels" / "custom_tcgen05_mma_tmem_epilogue.mlir"
SECTIONS = ("summary", "layouts", "ops", "why")


class _Outline(HTMLParser):
    """Section ids, figure ids, images, relayout rows and internal links of a page."""

    def __init__(self) -> None:
        super().__init__()
        self.sections: list[str] = []
        self.figures: list[str] = []
        self.images: list[str] = []
        self.relayout_rows = 0
        self.links: list[str] = []

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
    # The splat constants that seed the loop are converted: marked as relayouts.
    assert outline.relayout_rows > 0
    assert set(outline.links) <= set(outline.figures)
    text = path.read_text(encoding="utf-8")
    assert "WGMMA" in text and "WGMMA_ROW" in text
    assert "mosaic_gpu.wgmma" in text and "&rarr;" in text


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


def test_page_loads_in_headless_chromium(
    flash_report: tuple[Path, _Outline], tmp_path: Path
) -> None:
    browser = _chromium()
    if browser is None:
        pytest.skip("Chromium is not installed (apt-get install chromium) to open the report")
    path, outline = flash_report
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
            f"--user-data-dir={tmp_path / 'profile'}",
            "--virtual-time-budget=10000",
            "--dump-dom",
            path.as_uri(),
        ],
        capture_output=True,
        text=True,
        timeout=120,
    )
    dom = result.stdout
    assert result.returncode == 0, result.stderr[-2000:]
    for section in SECTIONS:
        assert f'<section id="{section}">' in dom
    # The page's own script counts the pictures that decoded, once it has loaded.
    loaded = re.search(r'data-images-loaded="(\d+)"', dom)
    assert loaded, "the load handler did not run"
    assert int(loaded[1]) == len(outline.images) > 0
