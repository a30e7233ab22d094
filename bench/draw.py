"""How long ``smalto draw`` takes, and where the time goes.

``python -m bench.draw [--repeat N] [--phases]``

Runs each command line below in a fresh process ``--repeat`` times and prints
the median wall time (what the user waits for: interpreter start, imports,
the panels, the file). With ``--phases``, one process per command line times
its steps in order: importing JAX's layout types, importing the renderer's
libraries, the command up to its picture (its own imports, its arguments, the
panels), rendering the picture; the first two are paid once per process, so
they are the floor of every picture. The command runs as ``python -m smalto
draw`` runs it (the benchmarks import nothing of ``smalto.cli``: the faces stand
above them); the renderer is timed where the command calls it.
"""

from __future__ import annotations

import argparse
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
COMMANDS = [
    ["WGMMA", "--shape", "64x64", "--dtype", "bf16"],
    ["WGMMA_COL", "--shape", "64"],
    ["WGMMA", "--shape", "1024x1024", "--dtype", "bf16"],
    ["WGMMA", "--shape", "64x4096"],
    ["WGMMA_ROW", "--shape", "131072"],
    ["splat", "--shape", "16x16"],
    ["--tmem", "--shape", "128x64", "--thread", "3"],
    ["--smem", "tile=8x64,swizzle=128", "--shape", "64x128", "--dtype", "bf16"],
    ["WGMMA", "--smem", "tile=8x64,swizzle=16", "--bank-conflicts", "--shape", "64x64",
     "--dtype", "bf16"],
]  # fmt: skip

_PHASES = """
import runpy, sys, time
start = time.perf_counter()
import jax.experimental.mosaic.gpu.fragmented_array
jax_done = time.perf_counter()
from smalto.draw import render
imports_done = time.perf_counter()
spans = []
rendering = render.render
def timed(*args, **keywords):
    began = time.perf_counter()
    picture = rendering(*args, **keywords)
    spans.append((began, time.perf_counter()))
    return picture
render.render = timed
sys.argv = ["smalto", "draw", *sys.argv[1:]]
try:
    runpy.run_module("smalto", run_name="__main__", alter_sys=True)
except SystemExit:
    pass
began, ended = spans[0] if spans else (time.perf_counter(), time.perf_counter())
print(jax_done - start, imports_done - jax_done, began - imports_done, ended - began)
"""


def wall_time(arguments: list[str], repeat: int, directory: str) -> float:
    times = []
    command = [sys.executable, "-m", "smalto", "draw", *arguments, "-o", f"{directory}/p.png"]
    for _ in range(repeat):
        start = time.perf_counter()
        subprocess.run(command, cwd=ROOT, capture_output=True, check=True)
        times.append(time.perf_counter() - start)
    return statistics.median(times)


def phases(arguments: list[str], directory: str) -> list[float]:
    done = subprocess.run(
        [sys.executable, "-c", _PHASES, *arguments, "-o", f"{directory}/phases.png"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        check=True,
    )
    return [float(x) for x in done.stdout.split()[-4:]]


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.draw", description=__doc__)
    parser.add_argument("--repeat", type=int, default=5, help="runs per command (default 5)")
    parser.add_argument("--phases", action="store_true", help="also time the steps of each")
    args = parser.parse_args(argv)
    header = f"{'smalto draw ...':64} {'median s':>9}"
    if args.phases:
        header += f" {'JAX':>6} {'libs':>6} {'cmd':>6} {'render':>6}"
    print(header)
    with tempfile.TemporaryDirectory() as directory:
        for arguments in COMMANDS:
            line = f"{' '.join(arguments):64} {wall_time(arguments, args.repeat, directory):9.3f}"
            if args.phases:
                line += "".join(f" {t:6.2f}" for t in phases(arguments, directory))
            print(line)
    return 0


if __name__ == "__main__":
    sys.exit(main())
