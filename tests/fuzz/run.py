"""The long fuzz run (``make fuzz``): many random modules, every failure kept.

    python -m fuzz.run --examples 10000 --jobs 2      (from ``tests/``)

Unlike the test suite's run, this one does not stop at the first failure: it
judges every module (``property.judge``), keeps the smallest module for each
distinct failure, writes the failures that are not known bugs under
``regressions/`` (replayed by ``tests/jax_parity/test_fuzz.py``), and prints a summary
of all verdicts. Exit status 1 if it found a failure that is not a known bug.
Work is split over ``--jobs`` processes, each with its own hypothesis seed.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
from collections import Counter
from pathlib import Path

HERE = Path(__file__).resolve().parent
TESTS = HERE.parent


def _worker(examples: int, seed: int, with_jax: bool) -> dict:
    from hypothesis import HealthCheck, given, settings
    from hypothesis import seed as hypothesis_seed

    from fuzz import property as prop
    from fuzz.strategies import FuzzModule, modules

    counts: Counter[str] = Counter()
    failures: dict[str, dict] = {}
    records: dict[str, dict] = {}

    @hypothesis_seed(seed)
    @settings(
        max_examples=examples,
        deadline=None,
        database=None,
        suppress_health_check=list(HealthCheck),
    )
    @given(modules())
    def explore(module: FuzzModule) -> None:
        verdict = prop.judge(module.text, module.arch, with_jax=with_jax)
        counts[verdict.kind] += 1
        entry = {
            "kind": verdict.kind,
            "detail": verdict.detail,
            "arch": list(module.arch),
            "text": module.text,
            "known": verdict.known_bug,
        }
        table = failures if verdict.failed else records
        if verdict.failed or verdict.kind in RECORDED:
            key = verdict.signature
            if key not in table or len(module.text) < len(table[key]["text"]):
                table[key] = entry

    explore()
    return {"counts": dict(counts), "failures": failures, "records": records}


# Verdicts that are not failures but worth keeping an example of.
RECORDED = frozenset(
    {
        "smalto-more-complete",
        "smalto-more-complete-beyond-jax-rules",
        "jax-answer-rejected-by-checker",
        "jax-crash",
        "smalto-fuel-jax-ok",
    }
)


def _merge(results: list[dict]) -> dict:
    counts: Counter[str] = Counter()
    failures: dict[str, dict] = {}
    records: dict[str, dict] = {}
    for result in results:
        counts.update(result["counts"])
        for target, source in ((failures, result["failures"]), (records, result["records"])):
            for key, entry in source.items():
                if key not in target or len(entry["text"]) < len(target[key]["text"]):
                    target[key] = entry
    return {"counts": dict(counts), "failures": failures, "records": records}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--examples", type=int, default=10_000)
    parser.add_argument("--jobs", type=int, default=os.cpu_count() or 1)
    parser.add_argument("--seed", type=int, default=int(time.time()))
    parser.add_argument("--no-jax", action="store_true", help="skip the comparison with JAX")
    parser.add_argument("--worker", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument("--summary", type=Path, default=TESTS.parent / ".cache" / "fuzz.json")
    args = parser.parse_args(argv)

    if args.worker:
        json.dump(_worker(args.examples, args.seed, not args.no_jax), sys.stdout)
        return 0

    start = time.time()
    jobs = max(1, min(args.jobs, args.examples))
    shares = [args.examples // jobs + (i < args.examples % jobs) for i in range(jobs)]
    processes = []
    for i, share in enumerate(shares):
        command = [
            sys.executable, "-m", "fuzz.run", "--worker", "--examples", str(share),
            "--seed", str(args.seed + i),
        ]  # fmt: skip
        if args.no_jax:
            command.append("--no-jax")
        processes.append(subprocess.Popen(command, cwd=TESTS, stdout=subprocess.PIPE, text=True))
    results = []
    for process in processes:
        out, _ = process.communicate()
        if process.returncode:
            print(f"fuzz worker failed with status {process.returncode}", file=sys.stderr)
            return 2
        results.append(json.loads(out))
    merged = _merge(results)
    elapsed = time.time() - start

    from fuzz import property as prop

    total = sum(merged["counts"].values())
    print(f"fuzzed {total} modules in {elapsed:.0f} s (seed {args.seed}, {jobs} jobs)")
    for kind, count in sorted(merged["counts"].items(), key=lambda kv: -kv[1]):
        print(f"  {count:6d}  {kind}")
    new = 0
    for key, entry in sorted(merged["failures"].items()):
        arch = tuple(entry["arch"])
        if entry["known"]:
            print(f"known bug: {key}\n    ({entry['known']})")
            continue
        new += 1
        verdict = prop.Verdict(entry["kind"], entry["detail"])
        path = prop.save_regression(entry["text"], arch, verdict)  # type: ignore[arg-type]
        print(f"NEW FAILURE: {key}\n    saved as {path.relative_to(TESTS.parent)}")
    for key in sorted(merged["records"]):
        print(f"recorded: {key}")
    args.summary.parent.mkdir(parents=True, exist_ok=True)
    args.summary.write_text(json.dumps(merged, indent=1))
    print(f"summary with one module per finding: {args.summary}")
    return 1 if new else 0


if __name__ == "__main__":
    sys.path.insert(0, str(TESTS / "helpers"))
    sys.path.insert(0, str(TESTS))
    sys.path.insert(0, str(TESTS.parent))
    raise SystemExit(main())
