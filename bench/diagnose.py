"""Time the diagnosis of unsatisfiable kernels, beside JAX's pass failing on them.

``python -m bench.diagnose [--repeat N] [--with-jax] [--unsat-only] [-k TEXT]
[--skip TEXT] [--blocks] [--markdown OUT [--append]]``

The kernels: every module of ``tests/unsat/`` that fails for its layouts, and
each corpus kernel of ``tests/corpus/kernels/`` with one impossible cast
added after its first MMA result (a strided layout where the MMA gives
WGMMA or TCGEN05): corpus-sized conflicts. For each, in this one process, on
separately parsed copies (parsing is never timed), the median over
``--repeat`` runs of

- JAX's ``layout_inference.infer_layout`` failing (its message only; on the
  corpus kernels only with ``--with-jax``: its search of an unsatisfiable
  corpus kernel can take minutes);
- ``smalto.infer_layout`` until it raises (the diagnosis waits for the
  message to be read), and until its message is read, with the whole
  diagnosis (minimal conflict, where its values come from, and the
  suggestion: candidate edits tried on the derived system and on copies of
  the module, inferred and checked);
- of which the suggestion alone (for a conflict found by the search; an
  annotation its value cannot take is diagnosed while the rules run, and
  counted in the whole only), with how many candidates it tried and how many
  it verified;
- the raise and the whole diagnosis over JAX's pass on the same kernel
  (issue #33: the raise at most 1x, the words at most 10x).

The two passes take turns, one run of each per repeat, as a failure comes in
a user's process: after other work, with neither pass's code warm from
running itself just before (``--blocks``: all of JAX's runs, then all of
smalto's; on a pass of 0.05 ms, the one run back to back on itself gains
most, JAX's pass up to half its time).
"""

from __future__ import annotations

import argparse
import re
import statistics
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests" / "helpers"))

import reference  # noqa: E402
from jax._src.lib.mlir import ir  # noqa: E402
from jax.experimental.mosaic.gpu import layout_inference  # noqa: E402

import smalto  # noqa: E402
from smalto.diagnose import conflict  # noqa: E402

_MMA = re.compile(r'\s*(%[\w#]+) = "?mosaic_gpu\.(wgmma|async_load_tmem)\b.*-> (vector<[^>]+>)')


# Issue #33: a refusal's words take at most this many times JAX's pass on the kernel.
WORDS_BUDGET = 10.0


def kernels(unsat_only: bool = False) -> dict[str, tuple[str, tuple[int, int]]]:
    """name -> (module text, arch); ``unsat_only``: the ``tests/unsat`` kernels alone."""
    out: dict[str, tuple[str, tuple[int, int]]] = {}
    for path in sorted((ROOT / "tests" / "unsat").glob("*.mlir")):
        text = path.read_text()
        if "gather" in path.stem:
            continue  # not layout conflicts: gathers the lowering cannot do
        out[path.stem] = (text, reference.text_arch(text))
    if unsat_only:
        return out
    entries = reference.load_entries(reference.corpus_root() or reference.BUNDLED_ROOT)
    for entry in entries:
        if entry.folder != "kernels" or not entry.jax_ok:
            continue
        text = _with_bad_cast(entry.path.read_text())
        if text is not None:
            out[f"{entry.key} + bad cast"] = (text, entry.arch)
    return out


def _with_bad_cast(text: str) -> str | None:
    lines = text.splitlines()
    for i, line in enumerate(lines):
        match = _MMA.match(line)
        if match is None:
            continue
        value, ty = match.group(1), match.group(3)
        shape = ty[len("vector<") : -1].split("x")[:-1]
        layout = f"#mosaic_gpu.WGStridedFragLayout<[{', '.join(shape)}], 1>"
        lines.insert(
            i + 1,
            f'  %bad_cast = "mosaic_gpu.layout_cast"({value}) <{{new_layout = {layout}}}> : '
            f'({ty}) -> {ty} loc("bench.py":1:1)',
        )
        return "\n".join(lines)
    return None


def _time_jax(text: str, arch: tuple[int, int]) -> float:
    module = reference.parse(text, reference.make_context())
    start = time.process_time()
    try:
        with module.context, ir.Location.unknown():
            layout_inference.infer_layout(module, arch=arch)
    except Exception:  # noqa: BLE001 -- JAX's pass failing (its own assertions too) is timed
        pass
    return time.process_time() - start


def _time_smalto(text: str, arch: tuple[int, int]) -> tuple[float, float, float, int, int]:
    """(to the raise, whole failing inference with its message read, suggestion alone,
    candidates tried, edits verified)."""
    module = reference.parse(text, reference.make_context())
    spent: dict[str, float] = {}
    real = conflict.suggest

    def timed(*args: object, **kwargs: object) -> object:
        start = time.process_time()
        found = real(*args, **kwargs)  # type: ignore[arg-type]
        spent["suggest"] = time.process_time() - start
        return found

    conflict.suggest = timed  # type: ignore[assignment]
    start = time.process_time()
    try:
        smalto.infer_layout(module, arch=arch)
        raise SystemExit("a kernel of the benchmark inferred: it is not unsatisfiable")
    except smalto.InferenceError as error:
        raised = time.process_time() - start
        str(error)  # the diagnosis is made when the message is first read: timed with it
        total = time.process_time() - start
        report = error.conflict
    finally:
        conflict.suggest = real  # type: ignore[assignment]
    return raised, total, spent.get("suggest", 0.0), report.edits_tried, len(report.edits)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--markdown", type=Path)
    parser.add_argument("--append", action="store_true")
    parser.add_argument("--with-jax", action="store_true", help="time JAX on corpus kernels too")
    parser.add_argument("--unsat-only", action="store_true", help="only tests/unsat's kernels")
    parser.add_argument("-k", dest="match", default="", help="only kernels whose name has TEXT")
    parser.add_argument(
        "--skip", action="append", default=[], help="leave out kernels whose name has TEXT"
    )
    parser.add_argument(
        "--blocks", action="store_true", help="JAX's runs first, then smalto's (not in turns)"
    )
    args = parser.parse_args(argv)
    rows = []
    for name, (text, arch) in kernels(args.unsat_only).items():
        if args.match not in name or any(skip in name for skip in args.skip):
            continue
        with_jax = args.with_jax or "bad cast" not in name
        _time_smalto(text, arch)  # warm once
        jax_runs: list[float] = []
        runs = []
        if args.blocks:
            jax_runs = [_time_jax(text, arch) for _ in range(args.repeat)] if with_jax else []
            runs = [_time_smalto(text, arch) for _ in range(args.repeat)]
        else:
            for _ in range(args.repeat):
                if with_jax:
                    jax_runs.append(_time_jax(text, arch))
                runs.append(_time_smalto(text, arch))
        jax_t = statistics.median(jax_runs) if jax_runs else float("nan")
        raised = statistics.median(r[0] for r in runs)
        total = statistics.median(r[1] for r in runs)
        suggest = statistics.median(r[2] for r in runs)
        tried, verified = runs[0][3], runs[0][4]
        rows.append((name, jax_t, raised, total, suggest, tried, verified))
        print(
            f"{name:62s} JAX {jax_t * 1e3:7.2f} ms  smalto raises {raised * 1e3:7.2f} ms, "
            f"words {total * 1e3:7.2f} ms  (suggestion {suggest * 1e3:6.2f} ms, tried {tried}, "
            f"verified {verified})  {raised / jax_t:5.2f}x, {total / jax_t:5.1f}x JAX"
        )
    how = "JAX's runs, then smalto's" if args.blocks else "the two passes in turns"
    lines = [
        f"## Diagnosing unsatisfiable kernels (process CPU time, median, {how})",
        "",
        "| kernel | JAX's pass fails | smalto raises | smalto's words (diagnosed) "
        "| of which the suggestion | candidates tried | verified | raise / JAX | words / JAX |",
        "|---|---:|---:|---:|---:|---:|---:|---:|---:|",
    ]
    lines += [
        f"| {n} | {'-' if j != j else f'{j * 1e3:.2f} ms'} | {r * 1e3:.2f} ms "
        f"| {t * 1e3:.2f} ms | {s * 1e3:.2f} ms | {c} | {v} "
        f"| {'-' if j != j else f'{r / j:.2f}x'} | {'-' if j != j else f'{t / j:.1f}x'} |"
        for n, j, r, t, s, c, v in rows
    ]
    worst = max(rows, key=lambda row: row[3])
    to_raise = [r / j for _, j, r, *_ in rows if j == j]
    to_words = [t / j for _, j, _, t, *_ in rows if j == j]
    lines += ["", f"Slowest diagnosis: {worst[0]}, {worst[3] * 1e3:.0f} ms."]
    if to_words:
        lines.append(
            f"Raise / JAX: median {statistics.median(to_raise):.2f}x, worst "
            f"{max(to_raise):.2f}x, {sum(r > 1 for r in to_raise)} of {len(to_raise)} later "
            f"than JAX. Diagnosed / JAX: median {statistics.median(to_words):.1f}x, worst "
            f"{max(to_words):.1f}x, {sum(r > WORDS_BUDGET for r in to_words)} of "
            f"{len(to_words)} over {WORDS_BUDGET:g}x."
        )
    lines.append("")
    print("\n".join(lines[-3:]))
    if args.markdown:
        mode = "a" if args.append else "w"
        with args.markdown.open(mode, encoding="utf-8") as out:
            out.write("\n".join(lines) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
