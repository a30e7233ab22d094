"""The first call, as a user's process meets it: each module in fresh processes.

``python -m bench.first_call [FILES...] [--repeat N] [--markdown OUT [--append]]``

A Pallas compile runs the layout-inference pass once per kernel, and JAX makes
a new MLIR context every few lowerings, so the first call in a process is
the one users wait for. For each module, and for each pass (JAX's, smalto's),
``--repeat`` fresh processes (``bench.fresh_process``) each import JAX's Mosaic
GPU package, then (smalto's) ``smalto.infer``, parse the module in a context
made as JAX's lowering makes one, and time by process CPU time:

- the pass's **first call**, every cache empty, the other pass never run;
- its **second call**, on a fresh parse of the same text in the same context;
- the **import** of ``smalto.infer`` beyond JAX's Mosaic GPU package (and that
  package's own import beside it).

Each figure is the median over the processes. A run before the timed ones
fills the bytecode cache (``.cache/pycache``) as an installed package's is.

By default the modules are the **held-out kernels**: ``--held-out`` (20)
modules of the shared corpus's ``pallas_tests/`` and ``mosaic_tests/`` that
have layouts that lower (not in ``tests/unsat/corpus_refusals.txt``, the
modules with none) and that the bundled sample (``tests/corpus``, which the
tests and the other benchmarks use) does not hold, evenly spaced in the order
of their keys. On some of them JAX's pass answers with layouts its own
lowering rejects, and smalto's answer differs (marked ``(*)``); the summary
gives the figures over the others alone too. And **the refusal**: the
production sm_100 ragged dot's epilogue that JAX's pass cannot lay out
(``tests/unsat/fixes_tcgen05_transposed_epilogue.mlir``), where the time is
until the pass raises. Without the shared corpus, the bundled ``kernels/``.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import os
import statistics
import subprocess
import sys
from collections.abc import Sequence
from pathlib import Path

import reference

from bench import REPO_ROOT
from bench.run import (
    Arch,
    display_name,
    environment_line,
    index_arch,
    markdown_table,
    positive_int,
    text_table,
    write_markdown,
)

DEFAULT_REPEAT = 3
DEFAULT_HELD_OUT = 20
REFUSAL = REPO_ROOT / "tests" / "unsat" / "fixes_tcgen05_transposed_epilogue.mlir"
# The corpus modules JAX's pass answers with layouts its own lowering rejects: smalto refuses
# them, with a diagnosis; a refusal is timed as such, not as a held-out kernel.
CORPUS_REFUSALS = REPO_ROOT / "tests" / "unsat" / "corpus_refusals.txt"
PYCACHE = REPO_ROOT / ".cache" / "pycache"
PASSES = ("jax", "smalto")


def held_out(count: int) -> list[Path]:
    """``count`` corpus modules JAX lays out that the bundled sample lacks, evenly spaced."""
    root = reference.corpus_root()
    if root is None:
        return sorted((reference.BUNDLED_ROOT / "kernels").glob("*.mlir"))
    left_out = {entry.key for entry in reference.bundled_entries()}
    left_out |= set(CORPUS_REFUSALS.read_text().split())
    _, entries = reference.selected_entries("full")
    candidates = [
        entry.path
        for entry in entries
        if entry.folder != "kernels" and entry.jax_ok and entry.key not in left_out
    ]
    step = len(candidates) / count
    return [candidates[int(i * step)] for i in range(min(count, len(candidates)))]


def module_arch(path: Path) -> Arch:
    """The corpus index's arch for ``path``, else the module text's (Hopper if it names none)."""
    return index_arch(path) or reference.text_arch(path.read_text())


def _child_environment() -> dict[str, str]:
    """This environment, with bytecode read from and written to ``PYCACHE``."""
    environment = dict(os.environ)
    environment.pop("PYTHONDONTWRITEBYTECODE", None)
    environment["PYTHONPYCACHEPREFIX"] = str(PYCACHE)
    return environment


def fresh_process(path: Path, which: str, arch: Arch) -> dict[str, float | str]:
    """One ``bench.fresh_process`` run's figures."""
    argv = [sys.executable, "-m", "bench.fresh_process", str(path), which, f"{arch[0]}.{arch[1]}"]
    done = subprocess.run(
        argv, cwd=REPO_ROOT, env=_child_environment(), capture_output=True, text=True, check=False
    )
    if done.returncode != 0:
        raise RuntimeError(f"{' '.join(argv)} failed:\n{done.stderr}")
    figures: dict[str, float | str] = json.loads(done.stdout.strip().splitlines()[-1])
    return figures


@dataclasses.dataclass(frozen=True)
class Measured:
    """Median figures of one module (milliseconds), per pass."""

    name: str
    jax_first: float
    smalto_first: float
    jax_second: float
    smalto_second: float
    jax_import: float
    smalto_import: float
    outcome: dict[str, str]
    # Whether both passes wrote the same layouts (where JAX's do not lower, smalto's differ).
    same_answer: bool

    @property
    def first_ratio(self) -> float:
        return self.jax_first / self.smalto_first

    @property
    def second_ratio(self) -> float:
        return self.jax_second / self.smalto_second


def measure(path: Path, repeat: int) -> Measured:
    arch = module_arch(path)
    runs: dict[str, list[dict[str, float | str]]] = {which: [] for which in PASSES}
    for _ in range(repeat):
        for which in PASSES:  # in turns, so that a busy spell falls on both
            runs[which].append(fresh_process(path, which, arch))

    def median(which: str, figure: str) -> float:
        return statistics.median(float(run[figure]) for run in runs[which])

    return Measured(
        name=display_name(path),
        jax_first=median("jax", "first"),
        smalto_first=median("smalto", "first"),
        jax_second=median("jax", "second"),
        smalto_second=median("smalto", "second"),
        jax_import=median("jax", "jax_import"),
        smalto_import=median("smalto", "smalto_import"),
        outcome={which: str(runs[which][0]["outcome"]) for which in PASSES},
        same_answer=runs["jax"][0]["answer"] == runs["smalto"][0]["answer"],
    )


HEADERS = (
    "module",
    "JAX 1st ms",
    "smalto 1st ms",
    "1st JAX/smalto",
    "JAX 2nd ms",
    "smalto 2nd ms",
    "2nd JAX/smalto",
    "import ms",
)


def row(measured: Measured) -> list[str]:
    name = measured.name
    if measured.outcome["smalto"] != "ok" or measured.outcome["jax"] != "ok":
        name += f" (JAX: {measured.outcome['jax']}, smalto: {measured.outcome['smalto']})"
    elif not measured.same_answer:
        name += " (*)"
    return [
        name,
        f"{measured.jax_first:.1f}",
        f"{measured.smalto_first:.1f}",
        f"{measured.first_ratio:.2f}x",
        f"{measured.jax_second:.1f}",
        f"{measured.smalto_second:.1f}",
        f"{measured.second_ratio:.2f}x",
        f"{measured.smalto_import:.0f}",
    ]


def _ratio_lines(kernels: Sequence[Measured], which: str) -> list[str]:
    first = [m.first_ratio for m in kernels]
    second = [m.second_ratio for m in kernels]
    slower = [m.name for m in kernels if m.first_ratio < 1.0]
    return [
        f"first call{which}, JAX/smalto: median {statistics.median(first):.2f}x, lowest "
        f"{min(first):.2f}x; smalto slower on {len(slower)} of {len(kernels)}"
        + (f" ({', '.join(slower)})" if slower else ""),
        f"second call{which}, JAX/smalto: median {statistics.median(second):.2f}x, lowest "
        f"{min(second):.2f}x",
    ]


def summary_lines(kernels: Sequence[Measured], refusals: Sequence[Measured]) -> list[str]:
    lines = []
    if kernels:
        lines += _ratio_lines(kernels, "")
        same = [m for m in kernels if m.same_answer]
        if len(same) != len(kernels):
            lines.append(
                f"(*) JAX's answer does not lower; smalto's differs ({len(kernels) - len(same)} "
                "modules)"
            )
            if same:
                lines += _ratio_lines(same, " (identical answers only)")
    everything = [*kernels, *refusals]
    imports = [m.smalto_import for m in everything]
    jax_imports = [m.jax_import for m in everything]
    lines.append(
        "import smalto.infer beyond JAX's Mosaic GPU package: median "
        f"{statistics.median(imports):.0f} ms ({min(imports):.0f}-{max(imports):.0f}); "
        "the package itself: median "
        f"{statistics.median(jax_imports):.0f} ms"
    )
    for refusal in refusals:
        lines.append(
            f"refusal {refusal.name}: smalto raises in {refusal.smalto_first:.1f} ms "
            f"({refusal.outcome['smalto']}), JAX's pass in {refusal.jax_first:.1f} ms "
            f"({refusal.outcome['jax']}): JAX/smalto {refusal.first_ratio:.2f}x"
        )
    return lines


def warm_bytecode(path: Path) -> None:
    """One untimed run of each pass: the bytecode cache is full from then on."""
    for which in PASSES:
        fresh_process(path, which, module_arch(path))


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.first_call", description=__doc__)
    parser.add_argument("files", nargs="*", type=Path, metavar="FILES")
    parser.add_argument("--repeat", type=positive_int, default=DEFAULT_REPEAT)
    parser.add_argument("--held-out", type=positive_int, default=DEFAULT_HELD_OUT)
    parser.add_argument("--markdown", type=Path, metavar="OUT")
    parser.add_argument("--append", action="store_true")
    args = parser.parse_args(argv)
    files = list(args.files) or held_out(args.held_out)
    refusal_files = [] if args.files else [REFUSAL]
    missing = [str(f) for f in [*files, *refusal_files] if not f.is_file()]
    if missing:
        print(f"bench.first_call: error: no such file: {', '.join(missing)}", file=sys.stderr)
        return 2
    warm_bytecode(files[0])
    kernels: list[Measured] = []
    refusals: list[Measured] = []
    for path in [*files, *refusal_files]:
        print(f"  {display_name(path)} ...", file=sys.stderr, flush=True)
        (refusals if path in refusal_files else kernels).append(measure(path, args.repeat))
    rows = [row(m) for m in [*kernels, *refusals]]
    lines = summary_lines(kernels, refusals)
    print(text_table(list(HEADERS), rows))
    print()
    print("\n".join(lines))
    if args.markdown is not None:
        body = [
            environment_line(),
            "",
            f"Process CPU time, median of {args.repeat} fresh processes per module and pass "
            "(`python -m bench.first_call`); import: `smalto.infer` after JAX's Mosaic GPU "
            "package.",
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
