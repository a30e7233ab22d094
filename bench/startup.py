"""How long the ``smalto`` command takes to answer what needs no inference.

``python -m bench.startup [--repeat N]``

Runs each command line below in a fresh process ``--repeat`` times and prints
the median wall time (the user waits for the whole process: interpreter
start, imports, parsing), beside what importing JAX alone costs, which every
command paid before the command line stopped importing it up front.
"""

from __future__ import annotations

import argparse
import statistics
import subprocess
import sys
import time
from collections.abc import Sequence
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
COMMANDS = [
    ["smalto", "--help"],
    ["smalto", "--version"],
    ["smalto", "infer", "--help"],
    ["smalto", "explain", "--help"],
    ["smalto", "check", "--help"],
    ["smalto", "infer", "kernel.mlir", "--arch", "8.0"],
    ["python", "-c", "import smalto"],
    ["python", "-c", "import jax._src.lib.mlir.ir"],
    ["python", "-c", "import smalto.infer"],
]


def _argv(command: list[str]) -> list[str]:
    if command[0] == "smalto":
        return [sys.executable, "-m", "smalto", *command[1:]]
    return [sys.executable, *command[1:]]


def wall_time(command: list[str], repeat: int) -> float:
    times = []
    for _ in range(repeat):
        start = time.perf_counter()
        subprocess.run(_argv(command), cwd=ROOT, capture_output=True, check=False)
        times.append(time.perf_counter() - start)
    return statistics.median(times)


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.startup", description=__doc__)
    parser.add_argument("--repeat", type=int, default=7, help="runs per command (default 7)")
    args = parser.parse_args(argv)
    print(f"{'command':52} {'median s':>9}")
    for command in COMMANDS:
        seconds = wall_time(command, max(args.repeat, 1))
        print(f"{' '.join(command):52} {seconds:9.3f}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
