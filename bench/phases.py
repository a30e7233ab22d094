"""Where smalto's time goes: each step of the pass timed apart, beside the floor and the read.

``python -m bench.phases [FILES...] [--repeat N]``

For each module (default: the corpus kernels, as ``bench.run``), on
separately parsed copies in one process, it times the pass's steps one by one
(reading the program view, the input check, deriving the constraints, the
solver's set-up, the search, planning the attributes, writing them), the IR
floor and the read (see ``bench.run``). Each figure is the *minimum* over
``--repeat`` runs, each run after a full garbage collection: the steps are
short and the minimum is the steadiest estimate of what each costs. Prints a
table per module and the sums over all modules, in milliseconds and in
multiples of the floor. The objects the pass makes are freed outside the
timed steps, so the sum of the steps is a little less than ``bench.run``'s
figure for the whole pass.
"""

from __future__ import annotations

import argparse
import gc
import sys
from collections.abc import Callable, Sequence
from pathlib import Path

import reference
from jax._src.lib.mlir import ir

import smalto
from bench.run import (
    CLOCKS,
    DEFAULT_ARCH,
    Arch,
    attribute_plan,
    clock_words,
    display_name,
    environment_line,
    floor_walk,
    index_arch,
    kernel_files,
    markdown_table,
    positive_int,
    read_walk,
    text_table,
    timed,
    write_markdown,
)
from smalto import infer
from smalto.basics.mlir import module_arch
from smalto.pipeline import annotate
from smalto.pipeline.validate import check_input
from smalto.program.reader import read_program
from smalto.rules import consumers, derive_system
from smalto.solve.decision import Solved
from smalto.solve.propagation import Propagation
from smalto.solve.search import Complete, InJaxOrder

STEPS = ("read", "check", "derive", "setup", "solve", "plan", "write")
REFERENCES = ("floor", "read walk")
DEFAULT_REPEAT = 11


def time_steps(module: ir.Module, arch: Arch, clock: Callable[[], float]) -> list[float]:
    """Seconds each of ``STEPS`` takes on ``module`` (which ends up annotated)."""
    fuel = smalto.DEFAULT_FUEL
    ticks = [clock()]
    program = read_program(module, consumers())
    ticks.append(clock())
    check_input(program, fuel=fuel, arch=arch)
    ticks.append(clock())
    system = derive_system(program, arch)
    ticks.append(clock())
    state = Propagation(system, program, arch, fuel)
    ticks.append(clock())
    # JAX's order, then the complete search over JAX's rules (``search.under_jax_rules``).
    if not isinstance(InJaxOrder(program).run(state) or Complete().run(state), Solved):
        raise smalto.InferenceError(f"no solution for {module}")
    ticks.append(clock())
    plan = annotate.plan_attributes(program, system, state.solution())
    ticks.append(clock())
    annotate.write_attributes(program, plan)
    ticks.append(clock())
    return [b - a for a, b in zip(ticks, ticks[1:], strict=False)]


def measure(text: str, arch: Arch | None, repeat: int, clock: Callable[[], float]) -> list[float]:
    """Minimum milliseconds of each step, then of the floor and the read walk."""
    ctx = reference.make_context()
    with ctx, ir.Location.unknown():
        first = reference.parse(text, ctx)
        arch = arch or module_arch(first) or DEFAULT_ARCH
        smalto.infer_layout(first, arch=arch)
        plan = attribute_plan(first)
        best = [float("inf")] * (len(STEPS) + len(REFERENCES))
        for _ in range(repeat):
            module = reference.parse(text, ctx)
            gc.collect()
            # The pass's own objects must not set off a collection mid-step.
            with infer.in_context(module), infer.CyclicGcPaused():
                steps = time_steps(module, arch, clock)
            times = [
                *steps,
                timed(lambda m: floor_walk(m, plan), reference.parse(text, ctx), clock),
                timed(read_walk, reference.parse(text, ctx), clock),
            ]
            best = [min(b, t) for b, t in zip(best, times, strict=True)]
    return [t * 1e3 for t in best]


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.phases", description=__doc__)
    parser.add_argument("files", nargs="*", type=Path, metavar="FILES")
    parser.add_argument("--repeat", type=positive_int, default=DEFAULT_REPEAT)
    parser.add_argument("--clock", choices=sorted(CLOCKS), default="wall")
    parser.add_argument(
        "--markdown", type=Path, metavar="OUT", help="also write the totals as a markdown section"
    )
    parser.add_argument(
        "--append", action="store_true", help="append to the --markdown file, not overwrite it"
    )
    parser.add_argument(
        "--title", default="Where the time goes", help="the markdown section's title"
    )
    args = parser.parse_args(argv)
    files = kernel_files(args.files, "bench.phases")
    if files is None:
        return 2
    clock = CLOCKS[args.clock]
    headers = ("module", *STEPS, "steps", *REFERENCES, "steps/floor")
    rows, totals = [], [0.0] * (len(STEPS) + len(REFERENCES))
    for path in files:
        times = measure(path.read_text(), index_arch(path), args.repeat, clock)
        totals = [a + b for a, b in zip(totals, times, strict=True)]
        steps, floor = sum(times[: len(STEPS)]), times[len(STEPS)]
        rows.append(
            [
                display_name(path),
                *(f"{t:.2f}" for t in times[: len(STEPS)]),
                f"{steps:.2f}",
                *(f"{t:.2f}" for t in times[len(STEPS) :]),
                f"{steps / floor:.1f}x",
            ]
        )
    steps, floor = sum(totals[: len(STEPS)]), totals[len(STEPS)]
    rows.append(
        [
            "total",
            *(f"{t:.1f}" for t in totals[: len(STEPS)]),
            f"{steps:.1f}",
            *(f"{t:.1f}" for t in totals[len(STEPS) :]),
            f"{steps / floor:.1f}x",
        ]
    )
    rows.append(
        [
            "x floor",
            *(f"{t / floor:.2f}" for t in totals[: len(STEPS)]),
            f"{steps / floor:.2f}",
            *(f"{t / floor:.2f}" for t in totals[len(STEPS) :]),
            "",
        ]
    )
    print(f"Milliseconds, minimum of {args.repeat} runs ({args.clock} clock).")
    print(text_table(headers, rows))
    if args.markdown is not None:
        text = "\n".join(
            [
                f"## {args.title}",
                "",
                f"Run: {environment_line()}.",
                "",
                f"Command: `python -m bench.phases --clock {args.clock} --repeat {args.repeat}` "
                f"on {len(files)} modules. Each step's time is the minimum of {args.repeat} runs "
                f"({clock_words(args.clock)}); sums over the modules, in milliseconds and in "
                "multiples of the floor.",
                "",
                markdown_table(headers, rows[-2:]),
                "",
            ]
        )
        write_markdown(args.markdown, text, append=args.append)
    return 0


if __name__ == "__main__":
    sys.exit(main())
