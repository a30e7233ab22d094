"""The long run of the Pallas-form fuzz families (``make fuzz``): many fresh scripts a
family through ``smalto fix`` and JAX's Mosaic GPU interpreter.

    python -m fuzz.run_pallas --examples 40 --jobs 2 [--seed S] [--family F]   (from tests/)

A case is a family and a seed (``fuzz.pallas_families.make_case``): seeds ``S``,
``S + 1``, ... are shared among the jobs (each its own process). Every case is judged by
``fuzz.pallas_oracles.judge``; the run prints, per family, what ``smalto fix`` did (fixed
with which edits, lowered as written, refused), how many the route's rescue lowered and
the interpreter ran, and every failure, its script saved under ``.cache/fuzz-pallas/``
with the oracle's words on top (replay: ``make_case(family, seed)``). Exit status 1 on a
failure.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import threading
import time
from collections import Counter
from pathlib import Path

HERE = Path(__file__).resolve().parent
TESTS = HERE.parent
OUT = TESTS.parent / ".cache" / "fuzz-pallas"


def _worker(family: str, seeds: list[int]) -> None:
    """Judges each seed's case, one JSON line each (as it ends: a long run shows progress)."""
    import warnings

    from fuzz.pallas_families import make_case
    from fuzz.pallas_oracles import judge

    warnings.simplefilter("ignore")
    with tempfile.TemporaryDirectory(prefix="smalto-fuzz-pallas-") as folder:
        for seed in seeds:
            case = make_case(family, seed)
            verdict = judge(case, Path(folder))
            line = {
                "seed": seed,
                "shape": case.shape,
                "outcome": verdict.outcome,
                "edits": verdict.edits,
                "rescued": verdict.rescued,
                "ran": verdict.ran,
                "run_said": verdict.run_said,
                "seconds": round(verdict.seconds, 1),
                "failures": verdict.failures,
            }
            print(json.dumps(line), flush=True)


def _read(process: subprocess.Popen[str], lines: list[dict], verbose: bool) -> None:
    """A worker's lines, as they come (a failure is said at once, not at the end)."""
    assert process.stdout is not None
    for text in process.stdout:
        if not text.startswith("{"):
            continue
        line = json.loads(text)
        lines.append(line)
        if verbose or line["failures"]:
            said = f"; FAILED: {line['failures'][0][:300]}" if line["failures"] else ""
            print(
                f"    seed {line['seed']}: {line['outcome']} {line['edits']} "
                f"({line['shape']}, {line['seconds']} s){said}",
                flush=True,
            )


def main(argv: list[str] | None = None) -> int:
    from fuzz.pallas_families import FAMILIES, make_case

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--examples", type=int, default=40, help="scripts a family")
    parser.add_argument("--jobs", type=int, default=min(2, os.cpu_count() or 1))
    parser.add_argument("--seed", type=int, default=int(time.time()))
    parser.add_argument("--family", action="append", choices=FAMILIES)
    parser.add_argument("--verbose", action="store_true", help="a line per script as it ends")
    parser.add_argument("--worker", nargs="+", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.worker:
        _worker(args.worker[0], [int(s) for s in args.worker[1:]])
        return 0
    status = 0
    for family in args.family or FAMILIES:
        start = time.time()
        seeds = list(range(args.seed, args.seed + args.examples))
        jobs = max(1, min(args.jobs, len(seeds)))
        processes = [
            subprocess.Popen(
                [
                    sys.executable,
                    "-m",
                    "fuzz.run_pallas",
                    "--worker",
                    family,
                    *map(str, seeds[i::jobs]),
                ],
                cwd=TESTS,
                stdout=subprocess.PIPE,
                stderr=subprocess.DEVNULL,
                text=True,
            )  # fmt: skip
            for i in range(jobs)
        ]
        lines: list[dict] = []
        readers = [
            threading.Thread(target=_read, args=(process, lines, args.verbose))
            for process in processes
        ]
        for reader in readers:
            reader.start()
        for reader, process in zip(readers, processes, strict=True):
            reader.join()
            if process.wait():
                print(f"fuzz worker failed with status {process.returncode}", file=sys.stderr)
                status = 2
        outcomes = Counter(
            f"{line['outcome']}" + (f" ({', '.join(line['edits'])})" if line["edits"] else "")
            for line in lines
        )
        rescued = sum(1 for line in lines if line["rescued"])
        ran = sum(1 for line in lines if line["ran"])
        seconds = time.time() - start
        print(
            f"{family}: {len(lines)} scripts in {seconds:.0f} s (seeds {args.seed}.."
            f"{args.seed + args.examples - 1}); the route's rescue lowered {rescued}, the "
            f"interpreter ran {ran}"
        )
        for outcome, count in outcomes.most_common():
            print(f"  {count:5d}  {outcome}")
        for said, count in Counter(line["run_said"] for line in lines if line["run_said"]).items():
            print(f"  {count:5d}  not run: {said[:160]}")
        for line in lines:
            if not line["failures"]:
                continue
            status = 1
            OUT.mkdir(parents=True, exist_ok=True)
            path = OUT / f"{family}-{line['seed']}.py"
            words = "\n".join(f"# {f}".replace("\n", "\n# ") for f in line["failures"])
            path.write_text(f"{words}\n{make_case(family, line['seed']).text}")
            print(f"  FAILURE seed {line['seed']} ({line['shape']}): {line['failures'][0][:300]}")
            print(f"    saved as {path}")
    return status


if __name__ == "__main__":
    sys.path.insert(0, str(TESTS / "helpers"))
    sys.path.insert(0, str(TESTS))
    sys.path.insert(0, str(TESTS.parent))
    raise SystemExit(main())
