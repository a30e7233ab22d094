"""The benchmarks run: ``smalto bench`` and the ``bench`` tools (nothing is timed).

The one folder of tests that imports ``bench``: its subject is the benchmarks
themselves. (The kernels they time are test material: ``scaling_kernels`` and
``tests/corpus/quantized``.)"""

from __future__ import annotations

import re
import sys
from pathlib import Path

import pytest
import reference
from scaling_kernels import attention_kernel

from smalto.cli.main import main


def test_bench_command_prints_a_table(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    kernel = tmp_path / "attention_1.mlir"
    kernel.write_text(attention_kernel(1))
    assert main(["bench", "--repeat", "1", str(kernel)]) == 0
    out = capsys.readouterr().out
    assert "JAX/smalto" in out and "smalto/floor" in out and "read/floor" in out
    assert "attention_1" in out


def test_read_walk_gathers_each_ops_dataflow() -> None:
    """The read reference: one entry per op, operands naming the results they use."""
    from jax._src.lib.mlir import ir

    from bench.run import count_ops, read_walk
    from smalto.program.reader import read_program

    ctx = reference.shared_context()
    module = reference.parse(attention_kernel(1), ctx)
    with ctx, ir.Location.unknown():
        entries = read_walk(module)
        program = read_program(module)
    assert len(entries) == count_ops(module)  # the module op itself included
    entries = entries[1:]
    assert [name for name, _, _ in entries] == [op.name for op in program.ops]
    # Results are numbered as defined; an operand names the result it uses (None:
    # a block argument, which the read does not number).
    numbering: dict[int, int] = {}
    for (_, _, types), op in zip(entries, program.ops, strict=True):
        for vid in op.results:
            numbering[vid] = len(numbering)
        assert len(types) == len(op.results)
    for (_, operands, _), op in zip(entries, program.ops, strict=True):
        expected = tuple(numbering.get(v) for v in op.operands)
        assert operands == expected


def test_bench_command_without_the_benchmarks_is_a_usage_error(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    # ``None`` in sys.modules makes the import fail, as outside a source checkout.
    monkeypatch.setitem(sys.modules, "bench.run", None)
    assert main(["bench"]) == 2
    err = capsys.readouterr().err
    assert err.startswith("smalto: error: the benchmarks are not available")
    assert err.count("\n") == 1


def test_bench_command_names_a_missing_file(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["bench", "no-such-kernel.mlir"]) == 2
    assert "no-such-kernel.mlir" in capsys.readouterr().err


def test_phases_times_each_step_of_the_pass(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """bench.phases: one row per module with every step, the sums and the floor multiples."""
    from bench.phases import STEPS
    from bench.phases import main as phases_main

    kernel = tmp_path / "attention_1.mlir"
    kernel.write_text(attention_kernel(1))
    assert phases_main(["--repeat", "1", str(kernel)]) == 0
    lines = capsys.readouterr().out.splitlines()
    header = lines[1].split()
    assert header[1 : 1 + len(STEPS)] == list(STEPS)
    (row,) = [line.split() for line in lines if line.startswith("attention_1")]
    times = [float(t) for t in row[1 : 2 + len(STEPS)]]
    assert all(t >= 0 for t in times) and times[-1] > 0  # the steps, then their sum
    assert abs(sum(times[:-1]) - times[-1]) < 0.02 * len(STEPS)
    assert any(line.startswith("x floor") for line in lines)


def test_bounds_times_each_rung_of_the_ladder(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """bench.bounds: per module the floor, each rung, the pass less its read; sums in floors."""
    from bench.bounds import LADDER
    from bench.bounds import main as bounds_main

    kernel = tmp_path / "attention_2.mlir"
    kernel.write_text(attention_kernel(2))
    assert bounds_main(["--repeat", "1", str(kernel)]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert lines[1].split()[1:] == ["floor", *LADDER, "pass", "-", "read"]
    (row,) = [line.split() for line in lines if line.startswith("attention_2")]
    floor, *rungs, analysis = (float(t) for t in row[1:])
    assert floor > 0 and all(t > 0 for t in rungs)
    # The whole pass does at least its read; the column is their difference.
    pass_ms, read_ms = rungs[LADDER.index("pass")], rungs[LADDER.index("read")]
    assert pass_ms > read_ms and abs(analysis - (pass_ms - read_ms)) < 0.02
    (multiples,) = [line.split() for line in lines if line.startswith("x floor")]
    assert float(multiples[2]) == 1.0  # the floor in floors


def test_bounds_names_a_missing_file(capsys: pytest.CaptureFixture[str]) -> None:
    from bench.bounds import main as bounds_main

    assert bounds_main(["no-such-kernel.mlir"]) == 2
    assert "no-such-kernel.mlir" in capsys.readouterr().err


def test_the_quantized_family_is_what_its_pallas_kernel_lowers_to(tmp_path: Path) -> None:
    """tests/corpus/quantized holds what bench.quantized_ragged_dot captures (one tiling
    redone)."""
    from bench.quantized_ragged_dot import CONFIGS, OUT_DIR, capture_all

    def text(path: Path) -> str:
        # The dump name counts the kernels lowered so far in the process.
        return re.sub(r'(mosaic_gpu.dump_basename = "[^"]*_)\d+"', r'\1N"', path.read_text())

    config = CONFIGS[0]
    (written,) = capture_all(tmp_path, [config])
    assert text(written) == text(OUT_DIR / written.name)
    assert 1000 < text(written).count("loc(") and "/work/" not in text(written)


def test_family_bench_prints_jax_over_smalto_warm_and_cold(
    capsys: pytest.CaptureFixture[str],
) -> None:
    from bench.family import FAMILY_DIR
    from bench.family import main as family_main

    kernel = sorted(FAMILY_DIR.glob("*.mlir"))[0]
    assert family_main(["--repeat", "1", "--cold", "1", str(kernel)]) == 0
    out = capsys.readouterr().out
    header, _, row, *_ = out.splitlines()
    assert "JAX/smalto" in header and "cold JAX/smalto" in header
    cells = row.split()
    assert cells[0] == kernel.stem and cells[-1] == "yes"  # identical to JAX's attributes
    assert all(float(c) > 0 for c in cells[1:-1])
    assert "warm JAX/smalto: median" in out and "cold JAX/smalto: median" in out
