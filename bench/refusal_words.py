"""A refusal's whole message in a fresh process: smalto's words, verified fixes included,
against JAX's time to fail.

``python -m bench.refusal_words [FILES...] [--repeat N]``

A user whose kernel has no layouts meets the refusal once, in a fresh
process. For each module, ``--repeat`` fresh processes per pass
(``bench.fresh_process``, in turns) import JAX's Mosaic GPU package (then
``smalto.infer``), parse the module in a context made as JAX's lowering makes
one, and time by process CPU time:

- **raise**: the pass's first call, until it raises;
- **words**: then reading the error's message. JAX's pass has worded its one
  sentence when it raises; smalto words its diagnosis when the message is
  first read: the requirements in conflict, and the fixes, each verified (the
  edited module inferred and its layouts passed by the checker);
- **whole**: the two together, what the user waits for.

Each figure is the median over the processes. Issue #52: smalto's whole
message within 10x JAX's time to fail. By default the module is the
production sm_100 ragged dot's epilogue that no layout lowers
(``tests/unsat/fixes_tcgen05_transposed_epilogue.mlir``); ``--fixes`` adds
every ``tests/unsat/fixes_*.mlir``.
"""

from __future__ import annotations

import argparse
import statistics
import sys
from collections.abc import Sequence
from pathlib import Path

from bench import REPO_ROOT
from bench.first_call import PASSES, REFUSAL, fresh_process, module_arch, warm_bytecode
from bench.run import display_name, positive_int, text_table

BUDGET = 10.0


def measure(path: Path, repeat: int) -> dict[str, float] | None:
    """Median ms per pass of the raise and the words (JAX's words: 0, worded when raised);
    None where a pass does not refuse the module (JAX's pass answers some whose answer
    its lowering rejects: no time to fail to compare with)."""
    arch = module_arch(path)
    runs: dict[str, list[dict[str, float | str]]] = {which: [] for which in PASSES}
    for _ in range(repeat):
        for which in PASSES:
            figures = fresh_process(path, which, arch)
            if figures["outcome"] == "ok":
                return None
            runs[which].append(figures)

    def median(which: str, figure: str) -> float:
        return statistics.median(float(run.get(figure, 0.0)) for run in runs[which])

    def whole(which: str) -> float:
        return statistics.median(
            float(run["first"]) + float(run.get("words", 0.0)) for run in runs[which]
        )

    return {
        "jax_raise": median("jax", "first"),
        "jax_whole": whole("jax"),
        "smalto_raise": median("smalto", "first"),
        "smalto_words": median("smalto", "words"),
        "smalto_whole": whole("smalto"),
    }


HEADERS = (
    "module",
    "JAX fails ms",
    "smalto raises ms",
    "smalto words ms",
    "smalto whole ms",
    "whole/JAX",
)


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.refusal_words", description=__doc__)
    parser.add_argument("files", nargs="*", type=Path, metavar="FILES")
    parser.add_argument("--repeat", type=positive_int, default=5)
    parser.add_argument("--fixes", action="store_true", help="every tests/unsat/fixes_*.mlir too")
    args = parser.parse_args(argv)
    files = list(args.files) or [REFUSAL]
    if args.fixes:
        extra = sorted((REPO_ROOT / "tests" / "unsat").glob("fixes_*.mlir"))
        files += [f for f in extra if f not in files]
    warm_bytecode(files[0])
    rows = []
    ratios = []
    for path in files:
        print(f"  {display_name(path)} ...", file=sys.stderr, flush=True)
        m = measure(path, args.repeat)
        if m is None:
            print(f"  ({display_name(path)}: a pass answers it; left out)", file=sys.stderr)
            continue
        ratio = m["smalto_whole"] / m["jax_whole"]
        ratios.append(ratio)
        rows.append(
            [
                display_name(path),
                f"{m['jax_whole']:.1f}",
                f"{m['smalto_raise']:.1f}",
                f"{m['smalto_words']:.1f}",
                f"{m['smalto_whole']:.1f}",
                f"{ratio:.1f}x",
            ]
        )
    print(text_table(list(HEADERS), rows))
    over = sum(r > BUDGET for r in ratios)
    print(
        f"\nwhole message / JAX's time to fail: median {statistics.median(ratios):.1f}x, "
        f"worst {max(ratios):.1f}x; {over} of {len(ratios)} over {BUDGET:g}x "
        f"(median of {args.repeat} fresh processes per pass, process CPU time)"
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
