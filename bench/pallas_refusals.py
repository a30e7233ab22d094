"""Time a refusal on the Pallas route: JAX's own route against smalto's, to the message.

``python -m bench.pallas_refusals [--repeat N] [-k TEXT] [--skip TEXT]``

The kernels: the failing Pallas kernels of ``tests/unsat/kernels.py``,
``kernels_fixes.py`` and ``kernels_words.py``, each lowered as a user's
``jax.jit(...)`` is (``trace(...).lower(lowering_platforms=("cuda",))``, no GPU
needed) with its architecture forced, JAX's caches cleared before each run.
For each, the median over ``--repeat`` runs of the process CPU time of

- JAX's route, until it raises (its pass, or its lowering, refuses);
- smalto's route (``smalto.jax.enabled()``), until it raises, and until the
  caught error's message is read (smalto words it then).

The two routes take turns, one run of each per repeat (``--blocks``: all of
JAX's runs, then all of smalto's): on a machine shared with other work, the
load then weighs on both alike, where a block of one route's runs may meet a
busier moment than the other's (10-20 % apart on the 12 ms kernels).

Issue #33: no kernel raises later than on JAX's route, and the words take at
most 10x it. (``--skip tcgen05_keepdims``: JAX's pass takes 100 s on it.)
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
import warnings
from collections.abc import Callable, Sequence
from typing import Any

import jax

import smalto
import smalto.jax
from bench import REPO_ROOT
from smalto.jax.capture import lower_for_cuda
from smalto.jax.hooks import forced_arch

sys.path.insert(0, str(REPO_ROOT / "tests" / "unsat"))

import kernels  # noqa: E402  (tests/unsat: the Pallas kernels)
import kernels_fixes  # noqa: E402
import kernels_words  # noqa: E402

WORDS_BUDGET = 10.0


def _run(
    fn: Callable[..., Any], args: tuple[Any, ...], arch: tuple[int, int], ours: bool
) -> tuple[float, float]:
    """(seconds to the raise, seconds to the message read) of one lowering."""
    with forced_arch(arch):
        jax.clear_caches()
        start = time.process_time()
        raised = None
        try:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                if ours:
                    with smalto.jax.enabled():
                        lower_for_cuda(fn, args)
                else:
                    lower_for_cuda(fn, args)
        except Exception as error:  # noqa: BLE001 -- the refusal is what is timed
            raised = time.process_time()
            str(error)
        read = time.process_time()
    return (raised or read) - start, read - start


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.pallas_refusals", description=__doc__)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("-k", dest="match", default="", help="only kernels whose name has TEXT")
    parser.add_argument("--skip", action="append", default=[], help="leave out names with TEXT")
    parser.add_argument(
        "--blocks", action="store_true", help="JAX's runs first, then smalto's (not in turns)"
    )
    args = parser.parse_args(argv)
    rows = []
    for module in (kernels, kernels_fixes, kernels_words):
        for name, (fn, fn_args, arch) in module.KERNELS.items():
            key = f"{module.__name__}.{name}"
            if args.match not in key or any(skip in key for skip in args.skip):
                continue
            _run(fn, fn_args, arch, ours=True)  # (the first run pays Python's imports)
            if args.blocks:
                jax_runs = [_run(fn, fn_args, arch, ours=False) for _ in range(args.repeat)]
                ours = [_run(fn, fn_args, arch, ours=True) for _ in range(args.repeat)]
            else:
                jax_runs, ours = [], []
                for _ in range(args.repeat):
                    jax_runs.append(_run(fn, fn_args, arch, ours=False))
                    ours.append(_run(fn, fn_args, arch, ours=True))
            theirs = statistics.median(t[1] for t in jax_runs)
            raised = statistics.median(t[0] for t in ours)
            words = statistics.median(t[1] for t in ours)
            rows.append((key, theirs, raised, words))
            print(
                f"{key:55s} JAX {theirs * 1e3:8.1f} ms  smalto raises {raised * 1e3:7.1f} ms, "
                f"words {words * 1e3:7.1f} ms  ({raised / theirs:.2f}x, {words / theirs:.2f}x)",
                flush=True,
            )
    if rows:
        to_raise = [r / j for _, j, r, _ in rows]
        to_words = [w / j for _, j, _, w in rows]
        print(
            f"raise/JAX: median {statistics.median(to_raise):.2f}, worst {max(to_raise):.2f}, "
            f"{sum(x > 1 for x in to_raise)} of {len(rows)} later than JAX; words/JAX: median "
            f"{statistics.median(to_words):.2f}, worst {max(to_words):.2f}, "
            f"{sum(x > WORDS_BUDGET for x in to_words)} over {WORDS_BUDGET:g}x"
        )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
