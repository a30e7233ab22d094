"""A table of smalto against JAX's pass over the corpus.

    python -m tests.helpers.report_differential [--corpus full|bundled] [-k TEXT]
                                        [--arch 9.0] [--fresh] [--jax-only]
                                        [--include-failing] [--allow-unoptimized]
                                        [--stage-through-smem]

Per folder and arch: how many modules are identical, differ, fail in smalto,
fail in JAX, or get an answer from JAX that JAX's own lowering rejects ("jax
rejected": an optimized GMEM transfer that does not coalesce, as the checker
finds in JAX's answer; there smalto answers with layouts the checker accepts,
or reports that none lowers, naming the requirement); then the differing
modules with their first difference, and the median time of each pass. Exit
status 0 when every compared module is identical or jax rejected, 1
otherwise. With ``--allow-unoptimized``, every module smalto refuses is inferred
again with ``allow_unoptimized=True`` and lowered by JAX's dialect lowering
(a launch context rebuilt from its ``gpu.launch``): how many then compile,
with how many transfers made unoptimized. With ``--stage-through-smem``, the
same with ``stage_through_smem=True`` (every transfer optimized, staged through
SMEM): how many then compile and lower, how many SMEM bytes staging added
(median and range), and why the others do not.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from collections import Counter
from dataclasses import dataclass
from pathlib import Path

# Run as a script or with -m: this working tree's smalto, and the helper module.
sys.path[:0] = [str(Path(__file__).resolve().parent), str(Path(__file__).resolve().parents[2])]
import corpus_lowering  # noqa: E402
import reference  # noqa: E402

COLUMNS = ("identical", "jax rejected", "differ", "smalto error", "jax error")


@dataclass(frozen=True)
class Row:
    entry: reference.CorpusEntry
    status: str
    detail: str
    jax: reference.Outcome | None
    smalto: reference.Outcome | None


def _first_line(text: str) -> str:
    line = text.strip().splitlines()[0] if text.strip() else ""
    return line if len(line) <= 200 else line[:197] + "..."


def compare(entry: reference.CorpusEntry, *, fresh: bool, jax_only: bool) -> Row:
    if not entry.jax_ok:
        jax = reference.Outcome(None, "index.json: jax_infer_ok is false (not rerun)", 0.0)
    else:
        jax = reference.jax_outcome(entry.path, entry.arch, use_cache=not fresh)
    if jax_only:
        ok = jax.attributes is not None
        return Row(entry, "jax ok" if ok else "jax error", jax.error or "", jax, None)
    smalto = reference.smalto_outcome(entry.path, entry.arch)
    if jax.attributes is None:
        detail = f"JAX: {jax.error}; smalto: {smalto.error or 'succeeds'}"
        return Row(entry, "jax error", detail, jax, smalto)
    lines = (
        reference.diff_attributes(jax.attributes, smalto.attributes)
        if smalto.attributes is not None
        else []
    )
    if smalto.attributes is not None and not lines:
        return Row(entry, "identical", "", jax, smalto)
    rejected = corpus_lowering.smalto_fixes_jax_answer(entry, smalto.error)
    if rejected is not None:
        return Row(entry, "jax rejected", rejected, jax, smalto)
    if smalto.attributes is None:
        return Row(entry, "smalto error", smalto.error or "", jax, smalto)
    return Row(entry, "differ", f"{len(lines)} diffs; {lines[0]}", jax, smalto)


def print_table(rows: list[Row], columns: tuple[str, ...]) -> None:
    counts: Counter[tuple[str, str, str]] = Counter()
    groups = sorted({(r.entry.folder, f"{r.entry.arch[0]}.{r.entry.arch[1]}") for r in rows})
    for r in rows:
        counts[(r.entry.folder, f"{r.entry.arch[0]}.{r.entry.arch[1]}", r.status)] += 1
    header = f"{'folder':<16}{'arch':>6}{'modules':>9}" + "".join(f"{c:>14}" for c in columns)
    print(header)
    print("-" * len(header))
    totals: Counter[str] = Counter()
    for folder, arch in groups:
        n = sum(
            1
            for r in rows
            if (r.entry.folder, f"{r.entry.arch[0]}.{r.entry.arch[1]}") == (folder, arch)
        )
        cells = "".join(f"{counts[(folder, arch, c)]:>14}" for c in columns)
        print(f"{folder:<16}{arch:>6}{n:>9}{cells}")
        for c in columns:
            totals[c] += counts[(folder, arch, c)]
    print("-" * len(header))
    print(f"{'total':<16}{'':>6}{len(rows):>9}" + "".join(f"{totals[c]:>14}" for c in columns))


def print_details(rows: list[Row], status: str) -> None:
    chosen = [r for r in rows if r.status == status]
    if chosen:
        print(f"\n{status} ({len(chosen)}):")
        for r in chosen:
            print(f"  {r.entry.key} [{r.entry.arch[0]}.{r.entry.arch[1]}]: {_first_line(r.detail)}")


def print_times(rows: list[Row]) -> None:
    both = [r for r in rows if r.jax and r.jax.attributes is not None]
    jax_times = [r.jax.seconds for r in both if r.jax]
    if jax_times:
        cached = sum(1 for r in both if r.jax and r.jax.cached)
        print(
            f"\nJAX infer_layout: median {statistics.median(jax_times) * 1e3:.1f} ms, "
            f"total {sum(jax_times):.2f} s over {len(jax_times)} modules "
            f"({cached} timings from the cache, i.e. from an earlier process)"
        )
    ok = [r for r in both if r.smalto and r.smalto.attributes is not None and r.jax]
    if ok:
        s = [r.smalto.seconds for r in ok if r.smalto]
        j = [r.jax.seconds for r in ok if r.jax]
        print(
            f"smalto infer_layout: median {statistics.median(s) * 1e3:.1f} ms, "
            f"total {sum(s):.2f} s over {len(s)} modules "
            f"(JAX on the same modules: median {statistics.median(j) * 1e3:.1f} ms)"
        )


def unoptimized_outcome(entry: reference.CorpusEntry) -> tuple[str, int]:
    """A refused module inferred with ``allow_unoptimized``: ("lowers" / "rejected: WHY" /
    "refused: WHY"), and how many transfers were made unoptimized."""
    import warnings

    import smalto

    module = reference.parse(entry.path, reference.make_context())
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always", smalto.UnoptimizedTransferWarning)
        try:
            smalto.infer_layout(module, arch=entry.arch, allow_unoptimized=True)
        except smalto.InferenceError as error:
            return f"refused: {_first_line(str(error).splitlines()[-1])}", 0
    changed = sum(isinstance(w.message, smalto.UnoptimizedTransferWarning) for w in caught)
    try:
        corpus_lowering.lower_with_jax(module)
    except Exception as error:  # noqa: BLE001 -- every rejection counts
        return f"rejected: {type(error).__name__}: {_first_line(str(error))}", changed
    return "lowers", changed


def print_unoptimized(rows: list[Row]) -> None:
    refused = [r for r in rows if r.status == "jax rejected" and r.smalto and r.smalto.error]
    outcomes = [(r, *unoptimized_outcome(r.entry)) for r in refused]
    lowered = [o for o in outcomes if o[1] == "lowers"]
    by_count = Counter(n for _, _, n in lowered)
    counts = ", ".join(f"{k} transfer(s): {by_count[k]}" for k in sorted(by_count))
    print(
        f"\nallow_unoptimized: {len(lowered)} of the {len(refused)} modules smalto refuses "
        f"compile and lower through JAX's lowering ({counts})"
    )
    for r, outcome, _ in outcomes:
        if outcome != "lowers":
            print(f"  {r.entry.key} [{r.entry.arch[0]}.{r.entry.arch[1]}]: {outcome}")


def staged_outcome(entry: reference.CorpusEntry) -> tuple[str, int, int]:
    """A refused module inferred with ``stage_through_smem``: ("lowers" / "rejected: WHY" /
    "refused: WHY"), how many transfers were staged and the SMEM bytes staging added."""
    import warnings

    import smalto

    module = reference.parse(entry.path, reference.make_context())
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always", smalto.StagedThroughSmemWarning)
        try:
            smalto.infer_layout(module, arch=entry.arch, stage_through_smem=True)
        except smalto.InferenceError as error:
            notes = [n for n in error.notes if "stag" in n]
            why = notes[0] if notes else str(error).splitlines()[-1]
            return f"refused: {_first_line(why)}", 0, 0
    staged = [
        w.message.staged for w in caught if isinstance(w.message, smalto.StagedThroughSmemWarning)
    ]
    added = staged[0].added_bytes if staged else 0
    try:
        corpus_lowering.lower_with_jax(module)
    except Exception as error:  # noqa: BLE001 -- every rejection counts
        return f"rejected: {type(error).__name__}: {_first_line(str(error))}", len(staged), added
    return "lowers", len(staged), added


def print_staged(rows: list[Row]) -> None:
    refused = [r for r in rows if r.status == "jax rejected" and r.smalto and r.smalto.error]
    outcomes = [(r, *staged_outcome(r.entry)) for r in refused]
    lowered = [o for o in outcomes if o[1] == "lowers"]
    added = sorted(o[3] for o in lowered)
    grown = (
        f"; SMEM added: median {statistics.median(added)} bytes, from {added[0]} to {added[-1]}"
        if added
        else ""
    )
    print(
        f"\nstage_through_smem: {len(lowered)} of the {len(refused)} modules smalto refuses "
        f"compile with every transfer optimized and lower through JAX's lowering{grown}"
    )
    for r, outcome, _, _ in outcomes:
        if outcome != "lowers":
            print(f"  {r.entry.key} [{r.entry.arch[0]}.{r.entry.arch[1]}]: {outcome}")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument(
        "--corpus",
        choices=("full", "bundled"),
        default=None,
        help="default: $SMALTO_CORPUS, else full when ../shared/corpus exists",
    )
    parser.add_argument("-k", dest="substring", default="", help="only keys containing TEXT")
    parser.add_argument("--arch", default=None, help="only this arch, e.g. 9.0")
    parser.add_argument(
        "--fresh",
        action="store_true",
        help="rerun JAX's pass instead of reading the cache (times both passes "
        "in this process); the cache is left as it is",
    )
    parser.add_argument(
        "--jax-only", action="store_true", help="only run JAX's pass (fills the cache)"
    )
    parser.add_argument(
        "--include-failing",
        action="store_true",
        help="also modules on which JAX's pass is known to fail (JAX not rerun)",
    )
    parser.add_argument(
        "--allow-unoptimized",
        action="store_true",
        help="also infer every module smalto refuses with allow_unoptimized=True and lower it",
    )
    parser.add_argument(
        "--stage-through-smem",
        action="store_true",
        help="also infer every module smalto refuses with stage_through_smem=True and lower it",
    )
    args = parser.parse_args(argv)

    name, entries = reference.selected_entries(args.corpus)
    if args.include_failing:
        root = reference.corpus_root() if name == "full" else reference.BUNDLED_ROOT
        known = {e.key for e in entries}
        entries += [e for e in reference.load_entries(root) if e.key not in known]
    entries = [e for e in entries if args.substring in e.key and (e.jax_ok or args.include_failing)]
    if args.arch:
        entries = [e for e in entries if f"{e.arch[0]}.{e.arch[1]}" == args.arch]

    if not args.jax_only:
        try:
            import smalto  # noqa: F401
        except ImportError as e:
            print(f"smalto cannot be imported ({e}); use --jax-only", file=sys.stderr)
            return 2

    start = time.perf_counter()
    rows = [compare(e, fresh=args.fresh, jax_only=args.jax_only) for e in entries]
    elapsed = time.perf_counter() - start

    print(f"corpus: {name} ({len(rows)} modules), JAX {reference.jax_version()}\n")
    columns = ("jax ok", "jax error") if args.jax_only else COLUMNS
    print_table(rows, columns)
    for status in ("differ", "smalto error", "jax error", "jax rejected"):
        print_details(rows, status)
    print_times(rows)
    if args.allow_unoptimized:
        print_unoptimized(rows)
    if args.stage_through_smem:
        print_staged(rows)
    print(f"wall time: {elapsed:.2f} s")
    compared = [r for r in rows if r.status != "jax error"]
    return 0 if all(r.status in ("identical", "jax rejected", "jax ok") for r in compared) else 1


if __name__ == "__main__":
    sys.exit(main())
