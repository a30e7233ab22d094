"""Tests of the ``smalto`` command line.

Most tests stand a recorder in for ``smalto.infer_layout`` and so check the
CLI alone: argument handling, exit statuses, messages. The ones marked with
the ``solver`` fixture run the real engine on an example kernel.
"""

from __future__ import annotations

import io
import subprocess
import sys
from pathlib import Path

import pytest

import smalto
from smalto.cli import main
from smalto.mlir import parse_module

REPO = Path(__file__).resolve().parent.parent
MATMUL = REPO / "examples" / "hopper_matmul.mlir"

EMPTY_MODULE = "module {\n}\n"


class RecordingInfer:
    """Stands in for ``smalto.infer_layout``; remembers how it was called."""

    def __init__(self, error: Exception | None = None) -> None:
        self.calls: list[dict[str, object]] = []
        self.error = error

    def __call__(self, module: object, *, fuel: int, arch: tuple[int, int]) -> None:
        self.calls.append({"fuel": fuel, "arch": arch})
        if self.error is not None:
            raise self.error


@pytest.fixture
def recorder(monkeypatch: pytest.MonkeyPatch) -> RecordingInfer:
    recording = RecordingInfer()
    monkeypatch.setattr(smalto, "infer_layout", recording)
    return recording


@pytest.fixture
def solver() -> None:
    """Skips the test until the solver core (``smalto.infer``) exists."""
    pytest.importorskip("smalto.infer")


def write(tmp_path: Path, text: str, name: str = "kernel.mlir") -> Path:
    path = tmp_path / name
    path.write_text(text)
    return path


def assert_one_line_error(stderr: str, starts_with: str = "smalto: error: ") -> None:
    assert "Traceback" not in stderr
    lines = stderr.splitlines()
    assert len(lines) == 1, stderr
    assert lines[0].startswith(starts_with), stderr


# Bad usage: exit 2, no traceback.


def test_no_command_is_bad_usage(capsys: pytest.CaptureFixture[str]) -> None:
    assert main([]) == 2
    assert "usage: smalto" in capsys.readouterr().err


def test_unknown_command_is_bad_usage(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["frobnicate"]) == 2
    assert "invalid choice" in capsys.readouterr().err


def test_infer_without_file_is_bad_usage(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["infer"]) == 2
    assert "required" in capsys.readouterr().err


def test_help_exits_zero(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["infer", "--help"]) == 0
    assert "--arch" in capsys.readouterr().out


def test_missing_file(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    missing = tmp_path / "missing.mlir"
    assert main(["infer", str(missing)]) == 2
    captured = capsys.readouterr()
    assert_one_line_error(captured.err, f"smalto: error: cannot read '{missing}'")
    assert captured.out == ""


def test_directory_as_input(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["infer", str(tmp_path)]) == 2
    assert_one_line_error(capsys.readouterr().err, "smalto: error: cannot read")


def test_malformed_mlir(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = write(
        tmp_path, 'module {\n  %0 = "arith.constant"() <{value = 1 : i32}> : () -> i64\n}\n'
    )
    assert main(["infer", str(path)]) == 2
    captured = capsys.readouterr()
    assert_one_line_error(captured.err, f"smalto: error: {path}:2:8: 'arith.constant' op")
    assert captured.out == ""


def test_malformed_mlir_on_stdin(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setattr(sys, "stdin", io.StringIO("this is not mlir"))
    assert main(["infer", "-"]) == 2
    assert_one_line_error(capsys.readouterr().err, "smalto: error: <stdin>:1:1: ")


def test_non_utf8_input(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = tmp_path / "binary.mlir"
    path.write_bytes(b"\xff\xfe\x00garbage")
    assert main(["infer", str(path)]) == 2
    assert_one_line_error(capsys.readouterr().err, "smalto: error: cannot read")


@pytest.mark.parametrize("arch", ["8.0", "9", "10.1", "sm_90", ""])
def test_unsupported_arch(arch: str, recorder: RecordingInfer, capsys) -> None:
    assert main(["infer", str(MATMUL), "--arch", arch]) == 2
    assert "unsupported architecture" in capsys.readouterr().err
    assert recorder.calls == []


@pytest.mark.parametrize("fuel", ["0", "-3", "abc", "1.5"])
def test_fuel_must_be_a_positive_integer(fuel: str, recorder: RecordingInfer, capsys) -> None:
    assert main(["infer", str(MATMUL), f"--fuel={fuel}"]) == 2
    assert "expected a positive integer" in capsys.readouterr().err
    assert recorder.calls == []


def test_module_targeting_an_unsupported_arch(
    tmp_path: Path, recorder: RecordingInfer, capsys: pytest.CaptureFixture[str]
) -> None:
    path = write(tmp_path, "module attributes {mosaic_gpu.arch_major = 8 : i32} {\n}\n")
    assert main(["infer", str(path)]) == 2
    assert_one_line_error(
        capsys.readouterr().err, "smalto: error: the module targets architecture 8.0"
    )
    assert recorder.calls == []


def test_unwritable_output(tmp_path: Path, recorder: RecordingInfer, capsys) -> None:
    path = write(tmp_path, EMPTY_MODULE)
    out = tmp_path / "no" / "such" / "dir.mlir"
    assert main(["infer", str(path), "-o", str(out)]) == 2
    assert_one_line_error(capsys.readouterr().err, f"smalto: error: cannot write '{out}'")


def test_no_traceback_through_python_dash_m(tmp_path: Path) -> None:
    path = write(tmp_path, "garbage\n")
    result = subprocess.run(
        [sys.executable, "-m", "smalto", "infer", str(path)],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert result.returncode == 2
    assert_one_line_error(result.stderr, f"smalto: error: {path}:1:1: ")
    assert result.stdout == ""


# The CLI's side of inference, with a recorder in place of the engine.


def test_arch_defaults_to_the_module_attributes(tmp_path: Path, recorder: RecordingInfer) -> None:
    path = write(
        tmp_path,
        "module attributes {mosaic_gpu.arch_major = 10 : i32, mosaic_gpu.arch_minor = 0 : i32}"
        " {\n}\n",
    )
    assert main(["infer", str(path)]) == 0
    assert recorder.calls[-1]["arch"] == (10, 0)


def test_arch_defaults_to_hopper(tmp_path: Path, recorder: RecordingInfer) -> None:
    assert main(["infer", str(write(tmp_path, EMPTY_MODULE))]) == 0
    assert recorder.calls[-1] == {"arch": (9, 0), "fuel": smalto.DEFAULT_FUEL}


def test_flags_reach_infer_layout(tmp_path: Path, recorder: RecordingInfer) -> None:
    path = write(tmp_path, EMPTY_MODULE)
    assert main(["infer", str(path), "--arch", "10.0", "--fuel", "17"]) == 0
    assert recorder.calls[-1] == {"arch": (10, 0), "fuel": 17}


def test_arch_flag_overrides_the_module(recorder: RecordingInfer) -> None:
    assert main(["infer", str(MATMUL), "--arch", "10.0"]) == 0
    assert recorder.calls[-1]["arch"] == (10, 0)


def test_inference_error_exits_one(
    tmp_path: Path, recorder: RecordingInfer, capsys: pytest.CaptureFixture[str]
) -> None:
    recorder.error = smalto.InferenceError("%3 must be WGMMA and splat")
    out = tmp_path / "out.mlir"
    assert main(["infer", str(MATMUL), "-o", str(out)]) == 1
    captured = capsys.readouterr()
    assert captured.err.startswith("smalto: error: Failed to infer a possible set of layouts")
    assert "Traceback" not in captured.err
    assert captured.out == ""
    assert not out.exists()


def test_unsupported_op_exits_one(recorder: RecordingInfer, capsys) -> None:
    recorder.error = NotImplementedError("no layout rule for 'mosaic_gpu.frobnicate'")
    assert main(["infer", str(MATMUL)]) == 1
    captured = capsys.readouterr()
    assert captured.err == "smalto: error: no layout rule for 'mosaic_gpu.frobnicate'\n"
    assert captured.out == ""


def test_output_goes_to_stdout_or_file(tmp_path: Path, recorder: RecordingInfer, capsys) -> None:
    path = write(tmp_path, EMPTY_MODULE)
    assert main(["infer", str(path)]) == 0
    assert capsys.readouterr().out == EMPTY_MODULE
    out = tmp_path / "out.mlir"
    assert main(["infer", str(path), "-o", str(out)]) == 0
    assert capsys.readouterr().out == ""
    assert out.read_text() == EMPTY_MODULE
    assert main(["infer", str(path), "--generic", "-o", "-"]) == 0
    assert capsys.readouterr().out.startswith('"builtin.module"() ({')


# With the real engine.


def test_infers_the_matmul_example(solver: None, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["infer", str(MATMUL)]) == 0
    captured = capsys.readouterr()
    assert captured.err == ""
    assert captured.out.startswith("module @anonymous")
    assert "out_layouts" in captured.out or "in_transforms" in captured.out
    parse_module(captured.out)  # what we print is valid MLIR


def test_reads_stdin(solver: None, monkeypatch: pytest.MonkeyPatch, capsys) -> None:
    monkeypatch.setattr(sys, "stdin", io.StringIO(MATMUL.read_text()))
    assert main(["infer", "-"]) == 0
    assert "in_transforms" in capsys.readouterr().out


def test_writes_output_file(solver: None, tmp_path: Path, capsys) -> None:
    out = tmp_path / "annotated.mlir"
    assert main(["infer", str(MATMUL), "-o", str(out)]) == 0
    assert capsys.readouterr().out == ""
    text = out.read_text()
    assert "out_layouts" in text or "in_transforms" in text


def test_generic_output(solver: None, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["infer", str(MATMUL), "--generic"]) == 0
    out = capsys.readouterr().out
    assert out.startswith('"builtin.module"')
    assert "in_transforms" in out or "out_layouts" in out


def test_report_is_written_next_to_the_module(solver: None, tmp_path: Path, capsys) -> None:
    page = tmp_path / "report.html"
    assert main(["infer", str(MATMUL), "--report", str(page)]) == 0
    assert "in_transforms" in capsys.readouterr().out
    html = page.read_text()
    assert "<html" in html.lower() and "mosaic_gpu.wgmma" in html


def test_explain_is_a_subcommand(solver: None, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["explain", str(MATMUL), "--all"]) == 0
    out = capsys.readouterr().out
    assert "WGMMA because" in out


def test_draw_is_a_subcommand(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    picture = tmp_path / "wgmma.svg"
    assert main(["draw", "WGMMA_ROW", "--shape", "64", "-o", str(picture)]) == 0
    assert picture.read_text().lstrip().startswith("<?xml")


@pytest.mark.parametrize("command", ["draw", "explain", "capture"])
def test_delegated_commands_report_bad_usage(
    command: str, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main([command, "--no-such-option"]) == 2
    assert "Traceback" not in capsys.readouterr().err


def test_check_is_a_subcommand(solver: None, tmp_path: Path, capsys) -> None:
    annotated = tmp_path / "annotated.mlir"
    assert main(["infer", str(MATMUL), "-o", str(annotated)]) == 0
    assert main(["check", str(annotated)]) == 0
    broken = tmp_path / "broken.mlir"
    text = annotated.read_text()
    wgmma = next(line for line in text.splitlines() if "mosaic_gpu.wgmma" in line)
    bad = wgmma.replace(
        "vector_dim = -1>]", "vector_dim = -1>, #mosaic_gpu.WGSplatFragLayout<[1]>]", 1
    )
    broken.write_text(text.replace(wgmma, bad))
    capsys.readouterr()
    assert main(["check", str(broken)]) != 0
