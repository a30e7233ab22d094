"""One family of kernels: JAX's pass beside smalto's, warm and cold, per op.

``python -m bench.family [FILES...] [--repeat N] [--cold N] [--markdown OUT [--append]]``

By default the family is the Blackwell int4-quantized ragged dots of
``tests/corpus/quantized/`` (``python -m bench.quantized_ragged_dot`` captures them):
the kernels on which smalto's margin over JAX's pass was thinnest. For each
module, by process CPU time:

- **warm**: ``bench.run.measure_module``: both passes in this one process on
  separately parsed copies, each after an untimed run, the median of
  ``--repeat`` runs (and the IR floor beside them);
- **cold**: each pass's first run in a fresh process of its own (both
  passes' modules imported, the module parsed, every cache empty, the other
  pass not run): ``--cold`` processes per pass and module; the median.

It prints, per module and over the family, JAX/smalto and smalto's time per op.
"""

from __future__ import annotations

import argparse
import statistics
import subprocess
import sys
import time
from collections.abc import Sequence
from pathlib import Path

from bench import REPO_ROOT
from bench.run import (
    DEFAULT_ARCH,
    Arch,
    ModuleResult,
    display_name,
    environment_line,
    index_arch,
    markdown_table,
    measure_module,
    positive_int,
    text_table,
    write_markdown,
)

FAMILY_DIR = REPO_ROOT / "tests" / "corpus" / "quantized"
DEFAULT_REPEAT = 5
DEFAULT_COLD = 3

HEADERS = (
    "module",
    "ops",
    "JAX ms",
    "smalto ms",
    "JAX/smalto",
    "smalto µs/op",
    "cold JAX ms",
    "cold smalto ms",
    "cold JAX/smalto",
    "identical",
)


def family_files(given: Sequence[Path]) -> list[Path]:
    return list(given) or sorted(FAMILY_DIR.glob("*.mlir"))


PASSES = ("jax", "smalto")


def cold_run(path: Path, arch: Arch, which: str) -> float:
    """Milliseconds of pass ``which``'s first run in this process (call it in a fresh one)."""
    import reference
    from jax._src.lib.mlir import ir
    from jax.experimental.mosaic.gpu import layout_inference

    import smalto
    import smalto.infer  # noqa: F401 -- the pass's modules, imported as JAX's are

    passes = {
        "jax": lambda m: layout_inference.infer_layout(m, arch=arch),
        "smalto": lambda m: smalto.infer_layout(m, arch=arch),
    }
    ctx = reference.make_context()
    with ctx, ir.Location.unknown():
        module = reference.parse(path.read_text(), ctx)
        start = time.process_time()
        passes[which](module)
        return (time.process_time() - start) * 1e3


def cold_medians(path: Path, arch: Arch, processes: int) -> tuple[float, float]:
    """Median cold milliseconds (JAX, smalto), each over ``processes`` fresh processes."""
    times: dict[str, list[float]] = {name: [] for name in PASSES}
    for _ in range(processes):
        for name in PASSES:
            argv = [sys.executable, "-m", "bench.family", "--cold-run", str(path), name]
            argv += ["--arch", f"{arch[0]}.{arch[1]}"]
            done = subprocess.run(argv, cwd=REPO_ROOT, capture_output=True, text=True, check=True)
            times[name].append(float(done.stdout.strip().splitlines()[-1]))
    return statistics.median(times["jax"]), statistics.median(times["smalto"])


def row(result: ModuleResult, cold: tuple[float, float] | None) -> list[str]:
    def ms(value: float | None) -> str:
        return "-" if value is None else f"{value:.1f}"

    ratio = result.jax_over_smalto
    per_op = None if result.smalto_ms is None else result.smalto_ms * 1e3 / result.ops
    cold_jax, cold_smalto = cold if cold is not None else (None, None)
    return [
        result.name,
        str(result.ops),
        ms(result.jax_ms),
        ms(result.smalto_ms),
        "-" if ratio is None else f"{ratio:.2f}",
        "-" if per_op is None else f"{per_op:.1f}",
        ms(cold_jax),
        ms(cold_smalto),
        "-" if cold is None else f"{cold[0] / cold[1]:.2f}",
        {True: "yes", False: "NO", None: "-"}[result.identical],
    ]


def summary_lines(
    results: Sequence[ModuleResult], colds: Sequence[tuple[float, float]]
) -> list[str]:
    warm = [r.jax_over_smalto for r in results if r.jax_over_smalto is not None]
    per_op = [r.smalto_ms * 1e3 / r.ops for r in results if r.smalto_ms is not None]
    lines = []
    if warm:
        lines.append(
            f"warm JAX/smalto: median {statistics.median(warm):.2f}x, "
            f"lowest {min(warm):.2f}x (over {len(warm)} modules)"
        )
    if colds:
        cold = [j / s for j, s in colds]
        lines.append(
            f"cold JAX/smalto: median {statistics.median(cold):.2f}x, lowest {min(cold):.2f}x"
        )
    if per_op:
        lines.append(f"smalto per op (warm): median {statistics.median(per_op):.1f} µs")
    lines.append(f"not identical to JAX's attributes: {sum(r.identical is False for r in results)}")
    return lines


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.family", description=__doc__)
    parser.add_argument("files", nargs="*", type=Path, metavar="FILES")
    parser.add_argument("--repeat", type=positive_int, default=DEFAULT_REPEAT)
    parser.add_argument(
        "--cold", type=int, default=DEFAULT_COLD, help="fresh processes per module (0: none)"
    )
    parser.add_argument("--markdown", type=Path, metavar="OUT")
    parser.add_argument("--append", action="store_true")
    # One cold run (in a process of its own): the module, the pass, the arch.
    parser.add_argument("--cold-run", nargs=2, metavar=("FILE", "PASS"), help=argparse.SUPPRESS)
    parser.add_argument("--arch", default="10.0", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.cold_run is not None:
        major, minor = (int(p) for p in args.arch.split("."))
        print(cold_run(Path(args.cold_run[0]), (major, minor), args.cold_run[1]))
        return 0
    files = family_files(args.files)
    missing = [str(f) for f in files if not f.is_file()]
    if missing or not files:
        print(
            f"bench.family: error: no such file: {', '.join(missing) or '(none)'}", file=sys.stderr
        )
        return 2
    results, colds, rows = [], [], []
    for path in files:
        print(f"  {display_name(path)} ...", file=sys.stderr, flush=True)
        arch = index_arch(path) or DEFAULT_ARCH
        result = measure_module(
            path.read_text(), arch, name=display_name(path), path=str(path), repeat=args.repeat
        )
        cold = cold_medians(path, arch, args.cold) if args.cold > 0 else None
        results.append(result)
        if cold is not None:
            colds.append(cold)
        rows.append(row(result, cold))
    print(text_table(list(HEADERS), rows))
    print()
    lines = summary_lines(results, colds)
    print("\n".join(lines))
    if args.markdown is not None:
        body = [
            environment_line(),
            "",
            f"Process CPU time; warm: median of {args.repeat} runs in one process; cold: "
            f"median of {args.cold} fresh processes per pass, its first run.",
            "",
            markdown_table(list(HEADERS), rows),
            "",
            *(f"- {line}" for line in lines),
            "",
        ]
        write_markdown(args.markdown, "\n".join(body), append=args.append)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
