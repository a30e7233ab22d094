"""The long run of the rescue families (``make fuzz``): many fresh modules a family.

    python -m fuzz.run_rescues --examples 1000 --jobs 2      (from ``tests/``)

Every module of each family (``fuzz.rescues``) is judged by ``fuzz.rescue_property``;
the run prints, per family, how many modules inferred as written, were rescued by the
family's rescue, by another, or not at all, and every failure with its module (written
under ``.cache/fuzz-rescues/``). Exit status 1 on a failure, or where a family reached
its rescue on fewer than half its modules. The seed is fresh (the time) unless given;
each of the ``--jobs`` processes draws the family's same list of distinct modules from
it (``fuzz.rescues.cases``) and judges every ``jobs``-th one. CI judges the first 1 000
of seed 52 (``tests/beyond_jax/test_fuzz_rescues.py``).
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
OUT = TESTS.parent / ".cache" / "fuzz-rescues"


def _worker(family: str, examples: int, seed: int, jobs: int, job: int) -> dict:
    """Judges this job's share of the family's modules: every ``jobs``-th of the list
    ``cases`` draws from ``seed`` (the same list in every job), from the ``job``-th."""
    from fuzz.rescue_property import judge
    from fuzz.rescues import cases

    counts: Counter[str] = Counter()
    failures: list[dict] = []
    for case in cases(family, examples, seed)[job::jobs]:
        verdict = judge(case)
        counts[verdict.kind] += 1
        if verdict.failed:
            failures.append({"kind": verdict.kind, "detail": verdict.detail, "text": case.text})
    return {"counts": dict(counts), "failures": failures}


def main(argv: list[str] | None = None) -> int:
    from fuzz.rescues import FAMILIES

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--examples", type=int, default=1_000, help="modules a family")
    parser.add_argument("--jobs", type=int, default=os.cpu_count() or 1)
    parser.add_argument("--seed", type=int, default=int(time.time()))
    parser.add_argument("--family", action="append", choices=sorted(FAMILIES))
    parser.add_argument("--worker", type=int, help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    families = args.family or sorted(FAMILIES)
    jobs = max(1, min(args.jobs, args.examples))
    if args.worker is not None:
        json.dump(_worker(families[0], args.examples, args.seed, jobs, args.worker), sys.stdout)
        return 0
    status = 0
    for family in families:
        start = time.time()
        processes = [
            subprocess.Popen(
                [
                    sys.executable,
                    "-m",
                    "fuzz.run_rescues",
                    "--worker",
                    str(job),
                    "--family",
                    family,
                    "--examples",
                    str(args.examples),
                    "--seed",
                    str(args.seed),
                    "--jobs",
                    str(jobs),
                ],
                cwd=TESTS,
                stdout=subprocess.PIPE,
                text=True,
            )  # fmt: skip
            for job in range(jobs)
        ]
        counts: Counter[str] = Counter()
        failures: list[dict] = []
        for process in processes:
            out, _ = process.communicate()
            if process.returncode:
                print(f"fuzz worker failed with status {process.returncode}", file=sys.stderr)
                return 2
            result = json.loads(out)
            counts.update(result["counts"])
            failures += result["failures"]
        total = sum(counts.values())
        print(f"{family}: {total} modules in {time.time() - start:.0f} s (seed {args.seed})")
        for kind, count in counts.most_common():
            print(f"  {count:6d}  {kind}")
        if counts["rescued"] * 2 < total:
            print(f"  NOT REACHED: {family} rescued {counts['rescued']} of {total}")
            status = 1
        for number, failure in enumerate(failures):
            OUT.mkdir(parents=True, exist_ok=True)
            path = OUT / f"{family}-{failure['kind']}-{args.seed}-{number}.mlir"
            path.write_text(f"// {failure['kind']}: {failure['detail']}\n{failure['text']}")
            print(f"  FAILURE {failure['kind']}: {failure['detail'][:200]}\n    saved as {path}")
            status = 1
    return status


if __name__ == "__main__":
    sys.path.insert(0, str(TESTS / "helpers"))
    sys.path.insert(0, str(TESTS))
    sys.path.insert(0, str(TESTS.parent))
    raise SystemExit(main())
