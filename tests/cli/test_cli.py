"""Tests of the ``smalto`` command line.

Most tests stand a recorder in for ``smalto.infer_layout`` and so check the
CLI alone: argument handling, exit statuses, messages. The ones marked with
the ``solver`` fixture run the real engine on an example kernel.
"""

from __future__ import annotations

import io
import json
import re
import subprocess
import sys
import tomllib
from pathlib import Path
from typing import Unpack

import pytest
from cli_run import run

import smalto
from smalto.basics.mlir import parse_module
from smalto.basics.version import JAX_PINNED
from smalto.cli.main import main
from smalto.solve.options import SolveKeywords, SolveOptions

REPO = Path(__file__).resolve().parents[2]
MATMUL = REPO / "examples" / "hopper_matmul.mlir"

# The smallest Mosaic GPU kernel: one vector value. Printed by MLIR exactly so.
TINY = (
    "module {\n  func.func @k() {\n"
    "    %cst = arith.constant dense<1.000000e+00> : vector<128xf32>\n"
    "    return\n  }\n}\n"
)


def tiny(attributes: str = "") -> str:
    """TINY, with module attributes (``{mosaic_gpu.arch_major = 10 : i32}``)."""
    return TINY.replace("module {", f"module attributes {attributes} {{", 1) if attributes else TINY


class RecordingInfer:
    """Stands in for ``smalto.infer_layout``; remembers how it was called: ``calls``, the
    fuel and arch of each, ``options``, the last call's whole ``SolveOptions`` (the
    keywords ``infer_layout`` takes are their fields: ``SolveOptions.of`` refuses any
    other, as ``infer_layout`` does)."""

    def __init__(self, error: Exception | None = None) -> None:
        self.calls: list[dict[str, object]] = []
        self.options = SolveOptions()
        self.error = error

    def __call__(self, module: object, **keywords: Unpack[SolveKeywords]) -> None:
        self.options = SolveOptions.of(keywords, "infer_layout")
        self.calls.append({"fuel": self.options.fuel, "arch": self.options.arch})
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
    path = write(tmp_path, tiny("{mosaic_gpu.arch_major = 8 : i32}"))
    assert main(["infer", str(path)]) == 2
    assert_one_line_error(
        capsys.readouterr().err, f"smalto: error: {path}: the module targets architecture 8.0"
    )
    assert recorder.calls == []


def test_unwritable_output(tmp_path: Path, recorder: RecordingInfer, capsys) -> None:
    path = write(tmp_path, TINY)
    out = tmp_path / "no" / "such" / "dir.mlir"
    assert main(["infer", str(path), "-o", str(out)]) == 2
    assert_one_line_error(capsys.readouterr().err, f"smalto: error: cannot write -o '{out}'")
    assert recorder.calls == []  # refused before any work


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
        tmp_path, tiny("{mosaic_gpu.arch_major = 10 : i32, mosaic_gpu.arch_minor = 0 : i32}")
    )
    assert main(["infer", str(path)]) == 0
    assert recorder.calls[-1]["arch"] == (10, 0)


def test_arch_defaults_to_hopper(tmp_path: Path, recorder: RecordingInfer) -> None:
    assert main(["infer", str(write(tmp_path, TINY))]) == 0
    assert recorder.calls[-1] == {"arch": (9, 0), "fuel": smalto.DEFAULT_FUEL}


def test_flags_reach_infer_layout(tmp_path: Path, recorder: RecordingInfer) -> None:
    path = write(tmp_path, TINY)
    assert main(["infer", str(path), "--arch", "10.0", "--fuel", "17"]) == 0
    assert recorder.calls[-1] == {"arch": (10, 0), "fuel": 17}
    assert recorder.options == SolveOptions(fuel=17, arch=(10, 0))
    assert main(["infer", str(path), "--no-rewrite", "--allow-unoptimized"]) == 0
    assert recorder.options == SolveOptions(rewrite=False, allow_unoptimized=True)
    assert main(["infer", str(path), "--stage-through-smem"]) == 0
    assert recorder.options == SolveOptions(stage_through_smem=True)


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
    path = write(tmp_path, TINY)
    assert main(["infer", str(path)]) == 0
    assert capsys.readouterr().out == TINY
    out = tmp_path / "out.mlir"
    assert main(["infer", str(path), "-o", str(out)]) == 0
    assert capsys.readouterr().out == ""
    assert out.read_text() == TINY
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


@pytest.mark.parametrize(
    ("argv", "label"),
    [
        (["infer"], "smalto"),
        (["infer", str(MATMUL), "--fuel", "0"], "smalto"),
        (["check"], "smalto"),
        (["check", str(MATMUL), "--no-such-option"], "smalto"),
        (["fix"], "smalto"),
        (["capture", "k.py:f", "--arg"], "smalto"),
        (["explain"], "smalto explain"),
        (["draw", "--no-such-option"], "smalto draw"),
    ],
)
def test_usage_errors_start_as_the_commands_own_lines(
    argv: list[str], label: str, capsys: pytest.CaptureFixture[str]
) -> None:
    """argparse names a subcommand's usage errors after its usage (``smalto infer:``);
    they start as that command's other errors do (docs/cli.md), after the usage line."""
    assert main(argv) == 2
    usage, *_, last = capsys.readouterr().err.strip().splitlines()
    assert usage.startswith("usage: smalto"), usage
    assert last.startswith(f"{label}: error: "), last


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


# --- failure paths: one line, exit 2, no traceback ---------------------------------------

FLASH = REPO / "examples" / "flash_attention_fwd.mlir"
UNSAT = REPO / "tests" / "unsat" / "cast_strided_then_wgmma.mlir"

STABLEHLO = """func.func @main(%a: tensor<4xf32>) -> tensor<4xf32> {
  %0 = stablehlo.add %a, %a : tensor<4xf32>
  %1 = stablehlo.multiply %0, %0 : tensor<4xf32>
  return %1 : tensor<4xf32>
}
"""


def smalto_process(*args: str, **kwargs: object) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "smalto", *args],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=300,
        **kwargs,  # type: ignore[arg-type]
    )


@pytest.mark.parametrize("flag", ["--report", "-o"])
def test_a_path_that_cannot_be_written_is_one_line_before_any_work(
    flag: str, tmp_path: Path, recorder: RecordingInfer, capsys: pytest.CaptureFixture[str]
) -> None:
    target = tmp_path / "missing" / "dir" / "x.html"
    assert main(["infer", str(MATMUL), flag, str(target)]) == 2
    captured = capsys.readouterr()
    assert_one_line_error(captured.err, f"smalto: error: cannot write {flag} '{target}'")
    assert "no directory" in captured.err
    assert captured.out == "" and recorder.calls == []
    # A directory where a file is wanted.
    assert main(["infer", str(MATMUL), flag, str(tmp_path)]) == 2
    assert "it is a directory" in capsys.readouterr().err


def test_output_onto_the_input_is_refused(tmp_path: Path, recorder: RecordingInfer, capsys) -> None:
    path = write(tmp_path, TINY)
    assert main(["infer", str(path), "-o", str(path)]) == 2
    assert_one_line_error(capsys.readouterr().err, f"smalto: error: cannot write -o '{path}'")
    assert path.read_text() == TINY


def test_bad_report_path_through_the_process_has_no_traceback(tmp_path: Path) -> None:
    done = smalto_process("infer", str(MATMUL), "--report", str(tmp_path / "no" / "x.html"))
    assert done.returncode == 2
    assert_one_line_error(done.stderr)
    assert done.stdout == ""


@pytest.mark.parametrize(
    "args",
    [
        ["infer", str(FLASH)],
        ["explain", str(FLASH), "--json"],
        ["check", str(MATMUL)],
    ],
    ids=["infer", "explain-json", "check"],
)
def test_a_closed_pipe_is_no_error(args: list[str], solver: None) -> None:
    """`smalto infer k.mlir | head -1`: the reader leaves; no traceback, status 0."""
    process = subprocess.Popen(
        [sys.executable, "-m", "smalto", *args],
        cwd=REPO,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    assert process.stdout is not None and process.stderr is not None
    process.stdout.close()  # nobody reads: every write fails with EPIPE
    stderr = process.stderr.read()
    assert process.wait(timeout=300) == 0, stderr
    assert stderr == ""


@pytest.mark.parametrize(
    "text, found",
    [
        ("", "is empty: expected a Mosaic GPU module"),
        ("\n  // only a comment\n\n", "is empty: expected a Mosaic GPU module"),
        ("module {\n}\n", "is not a Mosaic GPU kernel: the module is empty (no ops)"),
        (
            STABLEHLO,
            "is not a Mosaic GPU kernel: it has 4 ops (func.func, stablehlo.add, "
            "stablehlo.multiply, func.return), 3 of them on tensors (stablehlo.add, "
            "stablehlo.multiply, func.return) and no mosaic_gpu op or vector value",
        ),
    ],
    ids=["empty", "comment", "empty-module", "stablehlo"],
)
@pytest.mark.parametrize("command", ["infer", "explain", "check"])
def test_what_is_no_kernel_is_an_error_naming_what_it_found(
    command: str, text: str, found: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = write(tmp_path, text)
    assert main([command, str(path)]) == 2
    captured = capsys.readouterr()
    prefix = "smalto explain: error: " if command == "explain" else "smalto: error: "
    assert_one_line_error(captured.err, f"{prefix}{path} {found}")
    assert captured.out == ""


def test_dump_system_locates_ops_in_the_file_given(
    solver: None, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = write(tmp_path, TINY.replace("%cst =", "%cst =", 1))
    assert main(["infer", str(path), "--dump-system"]) == 0
    err = capsys.readouterr().err
    # The constant is at line 3, its op name at column 12.
    assert f"`arith.constant` at {path}:3:12" in err
    assert "at -:" not in err


def test_errors_name_the_file_given_and_show_its_line(
    solver: None, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # No loc(...) on the ops: the diagnosis places them in the .mlir file itself.
    text = re.sub(r" loc\([^)]*\)\)*", "", UNSAT.read_text())
    path = write(tmp_path, text)
    assert main(["infer", str(path)]) == 1
    err = capsys.readouterr().err
    assert f"`mosaic_gpu.layout_cast` at {path}:5:" in err
    assert "-:5:" not in err
    # The excerpt under a location shows that line of the file, cut to a readable width.
    excerpt = err.split(f"\n{path}:5:", 1)[1].splitlines()[1]
    assert "mosaic_gpu.layout_cast" in excerpt and len(excerpt) <= 130


# --- habits ---------------------------------------------------------------------------------


def _pyproject_version() -> str:
    with (REPO / "pyproject.toml").open("rb") as file:
        return tomllib.load(file)["project"]["version"]


def test_version(capsys: pytest.CaptureFixture[str]) -> None:
    assert smalto.__version__ == _pyproject_version()
    assert main(["--version"]) == 0
    out = capsys.readouterr().out
    assert out.startswith(f"smalto {smalto.__version__} (jax {JAX_PINNED}")


# Each of these must answer without importing JAX (nor numpy, nor matplotlib).
LIGHT = [
    ["--help"],
    ["--version"],
    ["infer", "--help"],
    ["explain", "--help"],
    ["check", "--help"],
    [],
    ["frobnicate"],
    ["infer"],
    ["infer", "k.mlir", "--arch", "8.0"],
    ["infer", "k.mlir", "--fuel", "0"],
    ["infer", "k.mlir", "--no-such-flag"],
    ["explain"],
    ["check", "--arch", "7.5", "k.mlir"],
    ["capture", "--help"],
    ["capture", "kernel.py:f", "--arg", "f16(128)"],
]


@pytest.mark.parametrize("args", LIGHT, ids=lambda a: " ".join(a) or "no-args")
def test_help_and_argument_errors_import_no_jax(args: list[str]) -> None:
    probe = (
        "import sys\n"
        "from smalto.cli.main import main\n"
        f"status = main({args!r})\n"
        "heavy = sorted(m for m in ('jax', 'jaxlib', 'numpy', 'matplotlib') if m in sys.modules)\n"
        "print('PROBE', status, heavy, file=sys.stderr)\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", probe], cwd=REPO, capture_output=True, text=True, timeout=60
    )
    probe_line = done.stderr.strip().splitlines()[-1]
    expected_status = 0 if args and args[-1] in ("--help", "--version") else 2
    assert probe_line == f"PROBE {expected_status} []", done.stderr


def test_import_smalto_is_light_and_its_api_loads_on_use() -> None:
    done = subprocess.run(
        [sys.executable, "-c", "import sys, smalto; print('jax' in sys.modules)"],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.stdout.split() == ["False"], done.stderr
    # Here (JAX loaded by now or not), each name loads on use, as before.
    from smalto import DEFAULT_FUEL, FAILURE_PREFIX, InferenceError, infer_layout

    assert smalto.infer_layout is infer_layout and callable(smalto.check.check)
    assert issubclass(InferenceError, ValueError) and FAILURE_PREFIX.startswith("Failed to infer")
    assert DEFAULT_FUEL == 100_000 and {"infer_layout", "check", "__version__"} <= set(dir(smalto))


def test_check_says_what_it_checked(solver: None, tmp_path: Path, capsys) -> None:
    annotated = tmp_path / "matmul.mlir"
    assert main(["infer", str(MATMUL), "-o", str(annotated)]) == 0
    capsys.readouterr()
    assert main(["check", str(annotated)]) == 0
    (line,) = capsys.readouterr().out.splitlines()
    found = re.fullmatch(
        rf"{re.escape(str(annotated))}: ok: (\d+) ops with layouts checked \(of (\d+) ops\); "
        r"(\d+) values: (\d+) vectors, (\d+) SMEM refs; arch 9\.0",
        line,
    )
    assert found, line
    with_layouts, ops, values, vectors, smem = map(int, found.groups())
    text = annotated.read_text()
    # Every op that carries a layout attribute was among those checked.
    assert with_layouts >= sum(
        1 for line in text.splitlines() if re.search(r"\b(in|out)_(layouts|transforms)\b", line)
    )
    assert ops > with_layouts and values == vectors + smem > 0


def test_check_several_files_and_json(solver: None, tmp_path: Path, capsys) -> None:
    good = tmp_path / "good.mlir"
    assert main(["infer", str(MATMUL), "-o", str(good)]) == 0
    text = good.read_text()
    wgmma = next(line for line in text.splitlines() if "mosaic_gpu.wgmma" in line)
    bad = wgmma.replace(
        "vector_dim = -1>]", "vector_dim = -1>, #mosaic_gpu.WGSplatFragLayout<[1]>]", 1
    )
    broken = tmp_path / "broken.mlir"
    broken.write_text(text.replace(wgmma, bad))
    missing = tmp_path / "missing.mlir"
    capsys.readouterr()
    assert main(["check", str(good), str(broken)]) == 1
    out = capsys.readouterr().out.splitlines()
    assert out[0].startswith(f"{good}: ok: ")
    assert any(line.startswith(f"{broken}:") and "mosaic_gpu.wgmma" in line for line in out)
    assert re.match(rf"{re.escape(str(broken))}: \d+ violations?: ", out[-1])
    # The worst status wins; a file that cannot be read says so and the others are checked.
    assert main(["check", str(missing), str(good), "--json"]) == 2
    captured = capsys.readouterr()
    assert_one_line_error(captured.err, f"smalto: error: cannot read '{missing}'")
    (document,) = [json.loads(line) for line in captured.out.splitlines()]
    assert document["file"] == str(good) and document["ok"] is True
    assert document["arch"] == "9.0" and document["violations"] == []
    assert document["ops_with_layouts"] > 0 and document["values"]["vectors"] > 0
    assert main(["check", str(broken), "--json"]) == 1
    document = json.loads(capsys.readouterr().out)
    assert document["ok"] is False
    assert {v["op"] for v in document["violations"]} == {"mosaic_gpu.wgmma"}
    assert all(v["location"] and v["message"] for v in document["violations"])


def test_infer_several_files_into_a_directory(solver: None, tmp_path: Path, capsys) -> None:
    out = tmp_path / "annotated"
    kernels = [MATMUL, FLASH]
    assert main(["infer", "-o", str(out), *map(str, kernels)]) == 0
    assert capsys.readouterr().out == ""
    for kernel in kernels:
        written = (out / kernel.name).read_text()
        assert "out_layouts" in written
        assert main(["check", str(out / kernel.name)]) == 0
    # With reports, one page each.
    reports = tmp_path / "pages"
    assert main(["infer", "--report", str(reports), "-o", str(out), *map(str, kernels)]) == 0
    assert sorted(p.name for p in reports.iterdir()) == sorted(f"{k.stem}.html" for k in kernels)


def test_infer_several_files_to_stdout_and_failures(
    solver: None, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = write(tmp_path, TINY)
    assert main(["infer", str(MATMUL), str(path)]) == 0
    out = capsys.readouterr().out
    first, second = out.split("// -----\n")
    assert first.startswith("module @anonymous") and "out_layouts" in second
    # Every file is tried; the worst status is returned, each error names its file.
    assert main(["infer", str(UNSAT), str(path), str(tmp_path / "nope.mlir")]) == 2
    captured = capsys.readouterr()
    assert f"smalto: error: {UNSAT}: Failed to infer" in captured.err
    assert f"smalto: error: cannot read '{tmp_path / 'nope.mlir'}'" in captured.err
    assert captured.out.startswith("module attributes {") and "// -----" not in captured.out
    # Two inputs of one name cannot share a directory; stdin is read alone.
    twin = tmp_path / "sub" / "kernel.mlir"
    twin.parent.mkdir()
    twin.write_text(TINY)
    assert main(["infer", "-o", str(tmp_path / "o"), str(path), str(twin)]) == 2
    assert "would both be written as kernel.*" in capsys.readouterr().err
    assert main(["infer", "-", str(path)]) == 2
    assert "'-' (stdin) can only be read alone" in capsys.readouterr().err


def test_the_readme_check_example_runs_as_written(
    solver: None, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    readme = (REPO / "README.md").read_text()
    command, shown = re.search(
        r"^\$ (smalto infer .* && smalto check .*)\n(.*)$", readme, re.M
    ).groups()
    (tmp_path / "examples").mkdir()
    (tmp_path / "examples" / MATMUL.name).write_text(MATMUL.read_text())
    monkeypatch.chdir(tmp_path)
    for part in command.split(" && "):
        ran = run(*part.split()[1:])
        assert ran.status == 0, ran.err
    assert ran.out.splitlines() == [shown]


def test_capture_of_a_kernel_jax_rejects_hints_at_smalto(tmp_path: Path) -> None:
    """A keep-dims row maximum: JAX's pass finds no layouts (docs/beyond_jax.md), smalto's does."""
    script = tmp_path / "kernel.py"
    script.write_text(
        "import sys\n"
        "from functools import partial\n"
        f"sys.path.insert(0, {str(REPO / 'tests' / 'helpers')!r})\n"
        "from beyond_kernels import keepdims_reduce\n"
        "row_max = partial(keepdims_reduce, axis=1)\n"
    )
    target = [f"{script}:row_max", "--arg", "f32[128,128]"]
    # With --jax the capture still works (the module as it reached JAX's pass is written):
    # exit status 0, JAX's rejection a note, with what smalto's pass makes of it.
    rejected = run("capture", *target, "--jax", "-o", tmp_path / "jax")
    assert rejected.status == 0 and "Traceback" not in rejected.err
    written = tmp_path / "jax" / "row_max.mlir"
    assert rejected.out.splitlines() == [str(written)] and written.is_file()
    captured, advice = rejected.err.splitlines()
    assert captured.startswith(
        f"smalto: note: {written}: JAX's layout inference found no layouts: Failed to infer"
    )
    assert advice.startswith(
        f"smalto: note: smalto's pass finds layouts for it: `smalto infer {written}`"
    )
    assert run("infer", written).status == 0  # what the note promises
    unknown = run("capture", f"{script}:row_max", "--arg", "q7[128,128]")
    assert unknown.status == 2
    assert_one_line_error(unknown.err, "smalto: error: argument --arg: unknown dtype 'q7'")
    accepted = run("capture", *target, "--smalto", "--inferred", "-o", tmp_path)
    assert accepted.status == 0, accepted.err
    assert "out_layouts" in (tmp_path / "row_max.inferred.mlir").read_text()


def test_capture_with_smalto_fails_where_smalto_finds_no_layouts(tmp_path: Path) -> None:
    """With --smalto, a kernel smalto cannot lay out is an inference failure (exit 1), its
    module still written; without it, the capture alone is asked for, and it worked."""
    target = [f"{REPO / 'tests' / 'unsat' / 'kernels.py'}:row_sum_cast_to_columns"]
    target += ["--arg", "f32[128,128]"]
    refused = run("capture", *target, "--smalto", "-o", tmp_path / "smalto")
    assert refused.status == 1 and "Traceback" not in refused.err
    assert refused.err.startswith("smalto: error: ") and "Failed to infer" in refused.err
    assert [Path(p).is_file() for p in refused.out.splitlines()] == [True]
    captured = run("capture", *target, "-o", tmp_path / "jax")
    assert captured.status == 0 and "smalto's layout inference found no layouts" in captured.err
