"""Where ``smalto infer --report`` spends its time: inference, the page, the pictures.

``python -m bench.report [FILES...] [--repeat N]``

For each module (default: the two examples), in one process, it times (process
CPU time, the minimum over ``--repeat`` runs, each on a freshly parsed copy):
the inference (solve and write the attributes, as ``smalto infer`` does), the
printed module (``smalto.report.printed``), the page without its pictures (the ops
table, the conversions, the explanations, the module listing, the HTML) and
the pictures alone (one per distinct layout, rendered to PNG). The report
should cost about the inference plus the pictures: the page's own share is
the figure to watch. The first run also pays the imports (Pillow's, for
the pictures), which the minimum leaves out; the first-run figures are
printed too.
"""

from __future__ import annotations

import argparse
import gc
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from smalto.basics.mlir import module_arch, parse_module
from smalto.draw.render import render
from smalto.infer import Inference, in_context, solve_module
from smalto.pipeline import annotate
from smalto.report import layouts_page as report
from smalto.report.printed import PrintedModule, printed_module

ROOT = Path(__file__).resolve().parents[1]
DEFAULT_FILES = [
    ROOT / "examples" / "flash_attention_fwd.mlir",
    ROOT / "examples" / "hopper_matmul.mlir",
]
STEPS = ("inference", "printed module", "page without pictures", "pictures")


def _timed(step: Callable[..., Any], *args: Any) -> tuple[float, Any]:
    gc.collect()
    start = time.process_time()
    result = step(*args)
    return time.process_time() - start, result


def _infer(path: Path) -> tuple[Any, Inference]:
    module = parse_module(path.read_text(), source_name=str(path))
    arch = module_arch(module) or (9, 0)
    with in_context(module):
        inference = solve_module(module, arch=arch)
        plan = annotate.plan_attributes(
            inference.program, inference.system, inference.solved.state.solution()
        )
        annotate.write_attributes(inference.program, plan)
    return module, inference


def _page_without_pictures(inference: Inference, name: str, printed: PrintedModule) -> report._Page:
    page = report._Page(inference, name, printed)
    page.collect()
    drawn = report.picture
    report.picture = lambda entry: None  # type: ignore[assignment]
    try:
        report._html(page, name)
    finally:
        report.picture = drawn
    return page


def _pictures(page: report._Page) -> int:
    count = 0
    for entry in page.layouts.values():
        grid = report.picture(entry)
        if grid is not None:
            render([grid], "png", report.PICTURE_DPI)
            count += 1
    return count


def measure(path: Path, repeat: int) -> tuple[list[float], list[float], int]:
    """(minimum, first run) seconds per step, and how many pictures."""
    best = [float("inf")] * len(STEPS)
    first: list[float] = []
    pictures = 0
    for run in range(repeat):
        seconds = []
        spent, (module, inference) = _timed(_infer, path)
        seconds.append(spent)
        with in_context(module):
            spent, printed = _timed(printed_module, module, inference.program)
            seconds.append(spent)
            spent, page = _timed(_page_without_pictures, inference, str(path), printed)
            seconds.append(spent)
            spent, pictures = _timed(_pictures, page)
            seconds.append(spent)
        if run == 0:
            first = seconds
        best = [min(b, s) for b, s in zip(best, seconds, strict=True)]
    return best, first, pictures


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.report", description=__doc__)
    parser.add_argument("files", nargs="*", type=Path, help="modules (default: the examples)")
    parser.add_argument("--repeat", type=int, default=3, help="runs per figure (default 3)")
    args = parser.parse_args(argv)
    print(f"{'module':34} {'step':22} {'min ms':>8} {'first ms':>9}")
    for path in args.files or DEFAULT_FILES:
        best, first, pictures = measure(path, max(args.repeat, 1))
        for step, low, once in zip(STEPS, best, first, strict=True):
            label = f"{step} ({pictures})" if step == "pictures" else step
            print(f"{path.name[:34]:34} {label:22} {low * 1e3:8.1f} {once * 1e3:9.1f}")
        ratio = (best[0] + best[1] + best[2]) / best[0]
        print(f"{path.name[:34]:34} {'report / inference':22} {ratio:8.2f}x (without pictures)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
