"""Time ``smalto fix`` on failing Pallas kernels written as users write them.

``python -m bench.fix [--repeat N] [--process]``

The kernels: ``tests/fix_kernels/`` (Hopper and Blackwell: casts to layouts no
relayout reaches, a reduction cast to the other axis, bf16 and fp8 epilogues
stored straight to GMEM, a column of a GMEM table, an unswizzled SMEM tile,
TMEM refs declared with the wrong layout, a kernel with two problems, one with
no fix and one that lowers; a layout named by an alias, a reduction and a broadcast
that disagree, and kernels only smalto compiles, made portable or not). For each,
the median over ``--repeat`` runs of

- ``fix_script`` in this process (JAX imported once): every lowering, the
  diagnosis of each failure, the edits, JAX's trace of each edited script (the
  meaning check), the lowering that confirms, the lowering with JAX's own pass and,
  where it rejects the kernel, the portable edits tried, and the proof by running
  (both kernels in JAX's Mosaic GPU interpreter: its seconds said in the result);
  wall and CPU seconds;
- with ``--process``, the command itself, ``smalto fix ... --diff`` in a new
  process (JAX's import included: what a person waits for).

The goal is a few seconds a kernel. Nothing is written: ``fix_script`` edits text
only, and the command runs with ``--diff``.
"""

from __future__ import annotations

import argparse
import resource
import statistics
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
KERNELS = ROOT / "tests" / "fix_kernels"
HOPPER = ("f16[64,64]", "f16[64,128]")
BLACKWELL = ("f16[128,64]", "f16[64,128]")

# (script, function, --arg values, arch, allow unoptimized transfers)
CASES: list[tuple[str, str, tuple[str, ...], str, bool]] = [
    ("hopper_row_sum.py", "row_sums", ("f32[128,128]",), "9.0", False),
    ("hopper_cast_to_strided.py", "matmul", HOPPER, "9.0", False),
    ("hopper_unswizzled_epilogue.py", "matmul_and_row_sums", HOPPER, "9.0", False),
    ("hopper_fp8_epilogue.py", "matmul_fp8", HOPPER, "9.0", True),
    ("hopper_table_column.py", "scaled_matmul", (*HOPPER, "f32[64,4]"), "9.0", True),
    ("hopper_bf16_row_max.py", "matmul_row_max", HOPPER, "9.0", False),
    ("hopper_working.py", "matmul", HOPPER, "9.0", False),
    ("blackwell_bf16_epilogue.py", "matmul_bf16", BLACKWELL, "10.0", True),
    ("blackwell_load_as_wgmma.py", "matmul", BLACKWELL, "10.0", False),
    ("blackwell_tmem_m64_layout.py", "matmul", BLACKWELL, "10.0", False),
    ("blackwell_collective_acc.py", "matmul", ("f16[64,64]", "f16[64,128]"), "10.0", False),
    # A layout named by an alias: proved to keep the meaning by JAX's trace.
    ("hopper_row_sum_aliased.py", "row_sums", ("f32[128,128]",), "9.0", False),
    # A reduction and a broadcast that disagree: two choices, neither made.
    ("hopper_row_sums_as_columns.py", "normalized", ("f16[64,64]", "f16[64,64]"), "9.0", False),
    # Kernels only smalto compiles: the portable edit found, or none (exit 1).
    ("hopper_transposed_store.py", "matmul_transposed", ("f16[64,64]",) * 2, "9.0", False),
    ("hopper_load_shuffles_cancel.py", "copy_tile", ("f32[64,64]",) * 2, "9.0", False),
    ("hopper_smalto_only.py", "copy_tile", ("f32[64,64]",) * 2, "9.0", False),
    # Statistics kept with a unit dim (jax#39966), and the quickstart's add (jax#32123):
    # made portable, the first proven by running both kernels in JAX's interpreter.
    ("keepdims_norms.py", "layer_norm", ("f32[128,128]",), "9.0", False),
    ("quickstart_add.py", "add_vectors", ("f32[32]", "f32[32]"), "9.0", False),
]


def _shapes(values: tuple[str, ...]) -> tuple[object, ...]:
    import jax
    import jax.numpy as jnp

    names = {"f16": jnp.float16, "f32": jnp.float32, "bf16": jnp.bfloat16}
    shapes = []
    for value in values:
        dtype, dims = value.rstrip("]").split("[")
        shapes.append(jax.ShapeDtypeStruct(tuple(map(int, dims.split(","))), names[dtype]))
    return tuple(shapes)


def _cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_utime + usage.ru_stime


def time_in_process(case: tuple[str, str, tuple[str, ...], str, bool], repeat: int) -> tuple:
    from smalto.jax.fixing import PORTABLE, fix_script

    script, function, values, arch, allow = case
    walls, cpus, outcome = [], [], None
    for _ in range(repeat):
        wall, cpu = time.perf_counter(), _cpu()
        outcome = fix_script(
            KERNELS / script,
            function,
            _shapes(values),
            arch=(10, 0) if arch == "10.0" else (9, 0),
            allow_unoptimized=allow,
        )
        walls.append(time.perf_counter() - wall)
        cpus.append(_cpu() - cpu)
    assert outcome is not None
    portable = " (made portable)" if any(a.why == PORTABLE for a in outcome.applied) else ""
    if outcome.already:
        result = "lowers as written" + (" with smalto only" if outcome.needs_smalto else "")
    elif outcome.lowers:
        result = f"fixed: {len(outcome.applied)} edit(s), {outcome.rounds} lowerings{portable}"
        if outcome.run is not None:
            # (The proof by running: both kernels in JAX's interpreter, its share of the wall.)
            ran = "proven by running" if outcome.run.proven else "not run"
            result += f"; {ran} ({outcome.run.seconds:.2f} s of it)"
    else:
        result = "no fix"
    return statistics.median(walls), statistics.median(cpus), result


def time_command(case: tuple[str, str, tuple[str, ...], str, bool], repeat: int) -> tuple:
    script, function, values, arch, allow = case
    command = [sys.executable, "-m", "smalto", "fix", f"{KERNELS / script}:{function}", "--diff"]
    command += [a for v in values for a in ("--arg", v)] + ["--arch", arch]
    command += ["--allow-unoptimized"] if allow else []
    walls, cpus = [], []
    for _ in range(repeat):
        before = resource.getrusage(resource.RUSAGE_CHILDREN)
        wall = time.perf_counter()
        subprocess.run(command, capture_output=True, cwd=ROOT, check=False)
        walls.append(time.perf_counter() - wall)
        after = resource.getrusage(resource.RUSAGE_CHILDREN)
        cpus.append(after.ru_utime + after.ru_stime - before.ru_utime - before.ru_stime)
    return statistics.median(walls), statistics.median(cpus)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.fix", description=__doc__)
    parser.add_argument("--repeat", type=int, default=3, metavar="N")
    parser.add_argument(
        "--process", action="store_true", help="also time `smalto fix --diff` in a new process"
    )
    args = parser.parse_args(argv)
    header = "| kernel | fix_script wall s | CPU s |"
    rule = "| --- | ---: | ---: |"
    if args.process:
        header += " command wall s | CPU s |"
        rule += " ---: | ---: |"
    print(header + " result |")
    print(rule + " --- |")
    for case in CASES:
        wall, cpu, result = time_in_process(case, args.repeat)
        row = f"| {case[0]}:{case[1]} | {wall:.2f} | {cpu:.2f} |"
        if args.process:
            command_wall, command_cpu = time_command(case, args.repeat)
            row += f" {command_wall:.2f} | {command_cpu:.2f} |"
        print(f"{row} {result} |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
