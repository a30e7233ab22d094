"""Time smalto's failure path against JAX's pass, on the corpus kernels JAX gets wrong.

``python -m bench.failures [--repeat N] [-k TEXT] [--allow-unoptimized]
[--markdown OUT [--append]]``

The kernels: every module of the corpus (``../shared/corpus``, else the
bundled sample) whose answer from JAX's pass JAX's own lowering rejects (an
optimized transfer with no plan; ``corpus_lowering.jax_answer_rejected``).
On each, smalto either *refuses* (no layout lowers as written: its error,
diagnosis included) or *fixes* (layouts that lower, found by the wider
searches). With ``--allow-unoptimized`` smalto runs with that option too:
the refused kernels then compile (the fewest transfers made unoptimized).

For each, in this one process, on separately parsed copies (parsing is
never timed), the median over ``--repeat`` runs of the process CPU time of

- JAX's ``layout_inference.infer_layout`` (it answers, wrongly);
- ``smalto.infer_layout`` as a Pallas user calls it, until it raises (or
  answers, where it fixes the kernel);
- the same until its message is read too: smalto makes the diagnosis
  (minimal conflict, verified edits) when the message is first read, so a
  caller that catches the error and goes on never pays for it;
- with ``--allow-unoptimized``: ``smalto.infer_layout(...,
  allow_unoptimized=True)``.

Reported per group: the median JAX/smalto ratio, how many kernels smalto
takes longer on than JAX, and the slowest ones.
"""

from __future__ import annotations

import argparse
import gc
import statistics
import sys
import time
import warnings
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

import corpus_lowering
import reference
from jax._src.lib.mlir import ir
from jax.experimental.mosaic.gpu import layout_inference

import smalto
from bench.run import environment_line, markdown_table, text_table, write_markdown

DEFAULT_REPEAT = 3
# Issue #33: a refusal's words (its verified fixes included) take at most this many
# times JAX's pass on the same kernel.
WORDS_BUDGET = 10.0


@dataclass(frozen=True)
class Timing:
    key: str
    arch: tuple[int, int]
    refused: bool  # smalto finds no layout that lowers as written
    jax_ms: float
    smalto_ms: float  # until smalto raises (or answers)
    message_ms: float  # until its message is read too (the diagnosis made)
    unoptimized_ms: float | None  # with allow_unoptimized; None when not measured


def _median_ms(
    run: Callable[[ir.Module], None], text: str, repeat: int, *, message: bool = False
) -> float:
    """The median CPU time of ``run`` on fresh parses of ``text``; with ``message``, the
    time to the error's message too (smalto makes its diagnosis when it is first read)."""
    times = []
    context = reference.shared_context()
    for _ in range(repeat):
        module = reference.parse(text, context)
        gc.collect()
        start = time.process_time()
        try:
            run(module)
        except Exception as error:  # noqa: BLE001 -- a failure is what is timed here
            if message:
                str(error)
        times.append(time.process_time() - start)
        del module
    return 1000 * statistics.median(times)


def _jax(arch: tuple[int, int]) -> Callable[[ir.Module], None]:
    def run(module: ir.Module) -> None:
        with module.context, ir.Location.unknown():
            layout_inference.infer_layout(module, arch=arch)

    return run


def _smalto(arch: tuple[int, int], **options: bool) -> Callable[[ir.Module], None]:
    def run(module: ir.Module) -> None:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            smalto.infer_layout(module, arch=arch, **options)

    return run


def _refused(text: str, arch: tuple[int, int]) -> bool:
    module = reference.parse(text, reference.shared_context())
    try:
        _smalto(arch)(module)
    except smalto.InferenceError:
        return True
    return False


def measure(
    entries: Sequence[reference.CorpusEntry], repeat: int, *, unoptimized: bool
) -> list[Timing]:
    timings = []
    for entry in entries:
        if corpus_lowering.jax_answer_rejected(entry) is None:
            continue
        text = entry.path.read_text()
        arch = entry.arch
        timings.append(
            Timing(
                entry.key,
                arch,
                _refused(text, arch),
                _median_ms(_jax(arch), text, repeat),
                _median_ms(_smalto(arch), text, repeat),
                _median_ms(_smalto(arch), text, repeat, message=True),
                _median_ms(_smalto(arch, allow_unoptimized=True), text, repeat)
                if unoptimized
                else None,
            )
        )
        print(".", end="", file=sys.stderr, flush=True)
    print(file=sys.stderr)
    return timings


def _group_row(name: str, timings: Sequence[Timing], unoptimized: bool) -> list[str]:
    if not timings:
        return [name, "0", "-", "-", "-", "-", "-", "-", "-", "-", "-"]
    ratios = [t.jax_ms / t.smalto_ms for t in timings]
    to_message = [t.jax_ms / t.message_ms for t in timings]
    row = [
        name,
        str(len(timings)),
        f"{statistics.median(t.jax_ms for t in timings):.1f}",
        f"{statistics.median(t.smalto_ms for t in timings):.1f}",
        f"{statistics.median(ratios):.2f}",
        str(sum(r < 1 for r in ratios)),
        f"{statistics.median(to_message):.2f}",
        str(sum(r < 1 for r in to_message)),
        f"{statistics.median(1 / r for r in to_message):.2f}",
        str(sum(1 / r > WORDS_BUDGET for r in to_message)),
        f"{max(1 / r for r in to_message):.1f}",
    ]
    if unoptimized:
        ratios_u = [t.jax_ms / t.unoptimized_ms for t in timings if t.unoptimized_ms]
        row += [f"{statistics.median(ratios_u):.2f}", str(sum(r < 1 for r in ratios_u))]
    return row


def report(timings: Sequence[Timing], *, unoptimized: bool, markdown: bool, repeat: int) -> str:
    headers = [
        "smalto",
        "kernels",
        "JAX ms",
        "smalto ms",
        "JAX/smalto",
        "slower than JAX",
        "JAX/(smalto + message)",
        "slower, with message",
        "(smalto + message)/JAX",
        f"message over {WORDS_BUDGET:g}x JAX",
        "worst (smalto + message)/JAX",
    ]
    if unoptimized:
        headers += ["JAX/smalto (allow_unoptimized)", "slower (allow_unoptimized)"]
    refused = [t for t in timings if t.refused]
    fixed = [t for t in timings if not t.refused]
    rows = [
        _group_row("refuses", refused, unoptimized),
        _group_row("fixes", fixed, unoptimized),
    ]
    slowest = sorted(timings, key=lambda t: t.jax_ms / t.smalto_ms)[:8]
    slow_headers = ["kernel", "arch", "smalto", "JAX ms", "smalto ms", "JAX/smalto"]
    slow_rows = [
        [
            t.key,
            f"{t.arch[0]}.{t.arch[1]}",
            "refuses" if t.refused else "fixes",
            f"{t.jax_ms:.1f}",
            f"{t.smalto_ms:.1f}",
            f"{t.jax_ms / t.smalto_ms:.2f}",
        ]
        for t in slowest
    ]
    table = markdown_table if markdown else text_table
    words = (
        f"Corpus kernels whose answer from JAX's pass JAX's lowering rejects "
        f"({len(timings)}); process CPU time, median of {repeat} runs each."
    )
    parts = [words, "", table(headers, rows), "", "Lowest JAX/smalto:", ""]
    parts.append(table(slow_headers, slow_rows))
    wordiest = sorted(timings, key=lambda t: t.message_ms / t.jax_ms, reverse=True)[:8]
    wordy_headers = ["kernel", "arch", "JAX ms", "smalto + message ms", "(smalto + message)/JAX"]
    wordy_rows = [
        [
            t.key,
            f"{t.arch[0]}.{t.arch[1]}",
            f"{t.jax_ms:.1f}",
            f"{t.message_ms:.1f}",
            f"{t.message_ms / t.jax_ms:.1f}",
        ]
        for t in wordiest
        if t.refused
    ]
    parts += ["", "Highest (smalto + message)/JAX:", "", table(wordy_headers, wordy_rows)]
    if markdown:
        parts = ["## The failure path (bench.failures)", "", environment_line(), "", *parts]
    return "\n".join(parts) + "\n"


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.failures", description=__doc__)
    parser.add_argument("--repeat", type=int, default=DEFAULT_REPEAT)
    parser.add_argument("-k", dest="match", default="", help="only keys containing TEXT")
    parser.add_argument("--allow-unoptimized", action="store_true")
    parser.add_argument("--markdown", type=Path)
    parser.add_argument("--append", action="store_true")
    args = parser.parse_args(argv)
    _, entries = reference.selected_entries()
    entries = [e for e in entries if args.match in e.key]
    timings = measure(entries, args.repeat, unoptimized=args.allow_unoptimized)
    print(report(timings, unoptimized=args.allow_unoptimized, markdown=False, repeat=args.repeat))
    if args.markdown:
        text = report(
            timings, unoptimized=args.allow_unoptimized, markdown=True, repeat=args.repeat
        )
        write_markdown(args.markdown, text, append=args.append)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
