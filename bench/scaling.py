"""How time per op grows with kernel size, for JAX's pass and for smalto.

``python -m bench.scaling [--family NAME ...] [--min-n 1] [--max-n 64] [--jax-max-n N]
[--repeat N] [--markdown OUT [--append]]``

For each kernel family of ``scaling_kernels.FAMILIES`` (``tests/helpers/``) (default: all of them;
``attention``: n looped attention blocks, SMEM loads, two wgmmas,
softmax-style row reductions and broadcasts, pointwise ops, a truncf and a
store; ``unrolled_attention``: the same without the loop, each wgmma's zero
accumulator through an ``optimization_barrier``; ``ewred``: elementwise ops
and row/column reductions; ``loops``: nested loops carrying a register
tile), builds the kernel of n blocks for n = ``--min-n``, twice that, ...,
``--max-n``, runs JAX's pass (up to ``--jax-max-n`` blocks), smalto and the IR
floor on separately parsed copies (see ``bench.run.measure_module``), checks
that both passes succeed with identical attributes where JAX runs, and
reports ops, time per op, a fingerprint of smalto's answer (to compare
answers before and after a change where JAX is too slow to run) and the
growth of time per op from the smallest to the largest kernel. A pass that
scales linearly keeps its time per op flat; a growth of 2 means time per op
doubled.

Exit status 1 if a pass failed or the attributes differ.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import sys
from collections.abc import Sequence
from pathlib import Path

from scaling_kernels import FAMILIES

from bench.run import (
    CLOCKS,
    DEFAULT_CLOCK,
    ModuleResult,
    clock_words,
    environment_line,
    markdown_table,
    measure_module,
    positive_int,
    text_table,
    write_markdown,
)

DEFAULT_MAX_N = 64
# JAX's pass grows super-linearly: past this many blocks it is not run by default.
DEFAULT_JAX_MAX_N = 64
DEFAULT_REPEAT = 3
# JAX's pass takes seconds on the largest kernels: past this, its first run
# is its only sample.
JAX_SLOW_SECONDS = 2.0
ARCH = (9, 0)


def sizes(max_n: int, min_n: int = 1) -> list[int]:
    """``min_n``, twice that, ... up to ``max_n`` (and ``max_n`` itself if not reached)."""
    result = []
    n = min_n
    while n <= max_n:
        result.append(n)
        n *= 2
    if result[-1] != max_n:
        result.append(max_n)
    return result


def _per_op_us(ms: float | None, ops: int) -> float | None:
    return None if ms is None else ms * 1e3 / ops


@dataclasses.dataclass(frozen=True)
class Growth:
    """Time per op at the largest kernel over time per op at the smallest."""

    jax: float | None
    smalto: float | None
    floor: float | None


def growth(results: Sequence[ModuleResult]) -> Growth:
    first, last = results[0], results[-1]

    def ratio(a: float | None, b: float | None) -> float | None:
        if a is None or b is None or a == 0:
            return None
        return (b / last.ops) / (a / first.ops)

    return Growth(
        jax=ratio(first.jax_ms, last.jax_ms),
        smalto=ratio(first.smalto_ms, last.smalto_ms),
        floor=ratio(first.floor_ms, last.floor_ms),
    )


HEADERS = (
    "N",
    "ops",
    "JAX ms",
    "smalto ms",
    "floor ms",
    "JAX µs/op",
    "smalto µs/op",
    "floor µs/op",
    "JAX/smalto",
    "identical",
    "answer",
)


def _fmt(value: float | None, digits: int = 1, suffix: str = "") -> str:
    return "-" if value is None else f"{value:.{digits}f}{suffix}"


def rows(ns: Sequence[int], results: Sequence[ModuleResult]) -> list[list[str]]:
    table = []
    for n, r in zip(ns, results, strict=True):
        identical = {True: "yes", False: "NO", None: "-"}[r.identical]
        if r.error is not None:
            identical = r.error
        table.append(
            [
                str(n),
                str(r.ops),
                _fmt(r.jax_ms),
                _fmt(r.smalto_ms),
                _fmt(r.floor_ms, 2),
                _fmt(_per_op_us(r.jax_ms, r.ops)),
                _fmt(_per_op_us(r.smalto_ms, r.ops)),
                _fmt(_per_op_us(r.floor_ms, r.ops), 2),
                _fmt(r.jax_over_smalto, 1, "x"),
                identical,
                r.answer or "-",
            ]
        )
    return table


def growth_lines(ns: Sequence[int], g: Growth) -> list[str]:
    span = f"N={ns[0]} to N={ns[-1]}"
    return [
        f"growth of time/op from {span}: JAX {_fmt(g.jax, 2, 'x')}, "
        f"smalto {_fmt(g.smalto, 2, 'x')}, floor {_fmt(g.floor, 2, 'x')}"
    ]


def markdown(
    family: str,
    ns: Sequence[int],
    results: Sequence[ModuleResult],
    *,
    repeat: int,
    clock: str,
    jax_max_n: int,
) -> str:
    return "\n".join(
        [
            f"### {family}",
            "",
            f"Run: {environment_line()}.",
            "",
            f"Kernels: `scaling_kernels.FAMILIES[{family!r}](N)` (sm_90). Command: "
            f"`python -m bench.scaling --family {family} --min-n {ns[0]} --max-n {ns[-1]} "
            f"--jax-max-n {jax_max_n} --clock {clock}`. Each time ({clock_words(clock)}) is "
            f"the median of {repeat} runs on separately parsed copies (JAX: one run where it "
            f"takes over {JAX_SLOW_SECONDS:g} s; not run past N={jax_max_n}); *identical*: "
            "smalto's attributes equal JAX's; *answer*: a digest of smalto's attributes.",
            "",
            markdown_table(HEADERS, rows(ns, results)),
            "",
            *(f"- {line}" for line in growth_lines(ns, growth(results))),
            "",
        ]
    )


def _build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="python -m bench.scaling",
        description="Time per op of JAX's layout inference and smalto's on growing kernels.",
    )
    parser.add_argument(
        "--family",
        action="append",
        choices=sorted(FAMILIES),
        help="a kernel family to time (repeatable; default: all)",
    )
    parser.add_argument(
        "--min-n", type=positive_int, default=1, help="smallest number of blocks (default 1)"
    )
    parser.add_argument(
        "--max-n",
        type=positive_int,
        default=DEFAULT_MAX_N,
        help=f"largest number of blocks (default {DEFAULT_MAX_N})",
    )
    parser.add_argument(
        "--jax-max-n",
        type=int,
        default=DEFAULT_JAX_MAX_N,
        help=f"largest number of blocks JAX's pass runs on (default {DEFAULT_JAX_MAX_N})",
    )
    parser.add_argument(
        "--repeat", type=positive_int, default=DEFAULT_REPEAT, help="runs per figure (median)"
    )
    parser.add_argument(
        "--clock",
        choices=sorted(CLOCKS),
        default=DEFAULT_CLOCK,
        help="cpu: this process's CPU time (default); wall: wall-clock time",
    )
    parser.add_argument("--json", type=Path, metavar="OUT", help="write the results as JSON")
    parser.add_argument("--markdown", type=Path, metavar="OUT", help="write a markdown report")
    parser.add_argument(
        "--append", action="store_true", help="append to the --markdown file, not overwrite it"
    )
    return parser


def run_family(family: str, ns: Sequence[int], args: argparse.Namespace) -> list[ModuleResult]:
    build = FAMILIES[family]
    results = []
    for n in ns:
        print(f"  {family} N={n} ...", file=sys.stderr, flush=True)
        results.append(
            measure_module(
                build(n),
                ARCH,
                name=f"{family}_{n}",
                repeat=args.repeat,
                jax_repeat=args.repeat if n <= args.jax_max_n else 0,
                clock=args.clock,
                memory=False,
                jax_slow_seconds=JAX_SLOW_SECONDS,
            )
        )
    return results


def main(argv: Sequence[str] | None = None) -> int:
    args = _build_parser().parse_args(argv)
    ns = sizes(args.max_n, args.min_n)
    families = args.family or list(FAMILIES)
    ok = True
    data: dict[str, object] = {
        "environment": environment_line(),
        "clock": args.clock,
        "repeat": args.repeat,
        "sizes": ns,
        "families": {},
    }
    texts = []
    for family in families:
        results = run_family(family, ns, args)
        print(f"{family}:")
        print(text_table(HEADERS, rows(ns, results)))
        print()
        print("\n".join(growth_lines(ns, growth(results))))
        print()
        data["families"][family] = {  # type: ignore[index]
            "results": [dataclasses.asdict(r) for r in results],
            "growth": dataclasses.asdict(growth(results)),
        }
        texts.append(
            markdown(
                family,
                ns,
                results,
                repeat=args.repeat,
                clock=args.clock,
                jax_max_n=args.jax_max_n,
            )
        )
        ok = ok and all(r.error is None and r.identical is not False for r in results)
    if args.json is not None:
        args.json.write_text(json.dumps(data, indent=2) + "\n")
    if args.markdown is not None:
        write_markdown(args.markdown, "\n".join(texts), append=args.append)
    if not ok:
        print("bench.scaling: a pass failed or the attributes differ", file=sys.stderr)
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
