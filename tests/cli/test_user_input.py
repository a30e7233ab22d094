"""Whatever a user gives a command, the answer is one line and a documented status, never
a traceback (issue #43): scripts with line separators Python does not count, stdin that
is not UTF-8, inputs with no end, shapes too large to draw, ambiguous dtypes, the wrong
number of ``--arg``, a full disk, a folder where a script was expected."""

from __future__ import annotations

import errno
import io
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from cli_run import Ran, run

import smalto.basics.inputs
from smalto.cli.output import UsageError
from smalto.cli.targets import shape_dtype
from smalto.source.files import Sources
from smalto.source.lines import python_lines

REPO = Path(__file__).resolve().parents[2]
KERNELS = REPO / "tests" / "fix_kernels"
ROW_SUM = ("--arg", "f32[128,128]")
GOOD = """\
func.func @k() {
  %c = "arith.constant"() <{value = dense<1.0> : vector<128xf32>}> : () -> vector<128xf32>
  "func.return"() : () -> ()
}
"""


def _one_error(ran: Ran, status: int = 2) -> str:
    """The one error line ``ran`` ended with (asserting it is one, with ``status``)."""
    assert ran.status == status, ran.err
    assert "Traceback" not in ran.err, ran.err
    errors = [line for line in ran.err.splitlines() if ": error: " in line]
    assert len(errors) == 1, ran.err
    return errors[0]


# --- Python's lines, not str.splitlines' ---------------------------------------------------

# Characters str.splitlines splits at and Python's tokenizer does not.
NOT_LINE_ENDS = ["\x0c", "\u2028", "\x85", "\x0b", "\u2029", "\x1c"]


@pytest.mark.parametrize("separator", NOT_LINE_ENDS, ids=lambda s: f"U+{ord(s):04X}")
def test_lines_are_counted_as_python_counts_them(separator: str) -> None:
    text = f"a = 1  # {separator} in a comment\r\nb = '{separator}'\rc = 3\n\nd"
    reference = io.StringIO(text, newline="").readlines()  # \n, \r\n, \r only
    assert python_lines(text, keepends=True) == reference
    assert "".join(python_lines(text, keepends=True)) == text
    assert python_lines(text) == [line.rstrip("\r\n") for line in reference]
    assert len(python_lines(text)) == 5 != len(text.splitlines())


def test_source_lines_of_a_message_are_python_lines(tmp_path: Path) -> None:
    script = tmp_path / "kernel.py"
    script.write_text("# page one\x0c\n# a \u2028 b\nx = 1\n", encoding="utf-8")
    assert Sources().line(str(script), 3) == "x = 1"


def _with_separators(tmp_path: Path) -> tuple[Path, str]:
    """The row-sum kernel with a form feed, U+2028 and U+0085 in comments before and
    inside the function (Python runs it as written: they end no line)."""
    text = (KERNELS / "hopper_row_sum.py").read_text(encoding="utf-8")
    text = text.replace(
        "def row_sums(x):",
        "# page break:\x0c\n# a line separator \u2028 and a next line \x85 here\ndef row_sums(x):",
    ).replace(
        "        s = jnp.sum(x, axis=1)\n",
        "        s = jnp.sum(x, axis=1)  # rows \u2028 summed \x0c\n",
    )
    copy = tmp_path / "row_sum.py"
    copy.write_bytes(text.encode("utf-8"))
    return copy, text


def test_fix_places_its_edit_on_python_lines(tmp_path: Path) -> None:
    copy, before = _with_separators(tmp_path)
    ran = run("fix", f"{copy}:row_sums", *ROW_SUM)
    assert ran.status == 0, ran.err
    after = copy.read_bytes().decode("utf-8")
    # The one change is the layout cast's; every separator is still there, byte for byte.
    assert after == before.replace("WGMMA.reduce(0))", "WGMMA.reduce(1))")
    assert after != before
    line = python_lines(before).index(
        "        out_gmem[...] = plgpu.layout_cast(s, plgpu.Layout.WGMMA.reduce(0))"
    )
    assert f"{copy}:{line + 1}: error[SM003]" in ran.out


def test_fix_diff_shows_python_lines(tmp_path: Path) -> None:
    copy, before = _with_separators(tmp_path)
    ran = run("fix", f"{copy}:row_sums", *ROW_SUM, "--diff")
    assert ran.status == 0, ran.err
    lines = python_lines(ran.out)
    changed = [line for line in lines if line.startswith(("+", "-"))]
    assert changed[2:] == [
        "-        out_gmem[...] = plgpu.layout_cast(s, plgpu.Layout.WGMMA.reduce(0))",
        "+        out_gmem[...] = plgpu.layout_cast(s, plgpu.Layout.WGMMA.reduce(1))",
    ]
    # The context line holding U+2028 and a form feed is one line of the diff, as in Python.
    assert "         s = jnp.sum(x, axis=1)  # rows \u2028 summed \x0c" in lines
    assert copy.read_bytes().decode("utf-8") == before


# --- stdin and files that are not UTF-8, or have no end -----------------------------------

NOT_UTF8 = GOOD.encode().replace(b"@k", b"@k\xff")


@pytest.mark.parametrize("command", ["infer", "check", "explain"])
def test_stdin_that_is_not_utf8_is_one_line(command: str, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(sys, "stdin", io.TextIOWrapper(io.BytesIO(NOT_UTF8)))
    error = _one_error(run(command, "-"))
    assert "cannot read <stdin>: not UTF-8 text (byte 0xff at offset 12)" in error


@pytest.mark.parametrize("command", ["infer", "check"])
def test_a_file_that_is_not_utf8_is_one_line(command: str, tmp_path: Path) -> None:
    path = tmp_path / "k.mlir"
    path.write_bytes(NOT_UTF8)
    assert f"cannot read '{path}': not UTF-8 text" in _one_error(run(command, path))


def test_stdin_that_is_not_utf8_in_a_process() -> None:
    """The real stdin, bytes and all (a test's replacement may decode differently)."""
    done = subprocess.run(
        [sys.executable, "-m", "smalto", "infer", "-"],
        input=NOT_UTF8,
        capture_output=True,
        timeout=300,
        cwd=REPO,
        env={**os.environ, "PYTHONPATH": str(REPO)},
    )
    assert done.returncode == 2, done.stderr
    assert done.stderr.decode().splitlines() == [
        "smalto: error: cannot read <stdin>: not UTF-8 text (byte 0xff at offset 12)"
    ]


@pytest.mark.parametrize("command", ["infer", "check", "explain"])
def test_input_with_no_end_is_refused_at_the_limit(
    command: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(smalto.basics.inputs, "MAX_INPUT_BYTES", 1 << 20)
    error = _one_error(run(command, "/dev/zero"))
    assert "cannot read '/dev/zero': larger than 1 MiB, the most smalto reads" in error


def test_stdin_beyond_the_limit_is_refused(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(smalto.basics.inputs, "MAX_INPUT_BYTES", 1 << 20)
    big = GOOD.encode() + b"// padding\n" * ((1 << 20) // 11)
    monkeypatch.setattr(sys, "stdin", io.TextIOWrapper(io.BytesIO(big)))
    assert "cannot read <stdin>: larger than 1 MiB" in _one_error(run("infer", "-"))


def test_the_limit_is_far_above_a_kernel() -> None:
    corpus = REPO / "tests" / "corpus" / "kernels"
    largest = max(p.stat().st_size for p in corpus.rglob("*.mlir"))
    assert smalto.basics.inputs.MAX_INPUT_BYTES == 64 << 20 > 50 * largest


# --- draw, bench ---------------------------------------------------------------------------


@pytest.mark.parametrize("shape", ["65536x65536", "2048x1024", "1024x1024x2"])
def test_draw_refuses_a_shape_too_large_to_draw(shape: str, tmp_path: Path) -> None:
    error = _one_error(run("draw", "WGMMA", "--shape", shape, "-o", tmp_path / "x.png"))
    assert f"shape '{shape}' has" in error and "smalto draws at most 1,048,576" in error
    assert not (tmp_path / "x.png").exists()


def test_bench_refuses_a_module_that_does_not_parse(tmp_path: Path) -> None:
    path = tmp_path / "k.mlir"
    path.write_text("this is { not mlir\n")
    error = _one_error(run("bench", path, "--repeat", "1"))
    assert error.startswith(f"smalto: error: {path}:1:1: ")


# --- --arg: ambiguous dtypes, the wrong number --------------------------------------------


@pytest.mark.parametrize("command", ["capture", "fix"])
def test_f8_is_refused_as_ambiguous(command: str, tmp_path: Path) -> None:
    copy = tmp_path / "hopper_row_sum.py"  # (where f8 were read, fix would write it)
    shutil.copy(KERNELS / "hopper_row_sum.py", copy)
    ran = run(command, f"{copy}:row_sums", "--arg", "f8[128,128]")
    error = _one_error(ran)
    assert "dtype 'f8' is ambiguous" in error
    assert "float64 to numpy" in error and "f64" in error
    assert "f8e4m3fn" in error and "f8e5m2" in error


@pytest.mark.parametrize(("name", "means"), [("F8", "float64"), ("f4", "float32")])
def test_ambiguous_dtypes_are_refused_by_the_api_too(name: str, means: str) -> None:
    with pytest.raises(UsageError, match=f"dtype '{name}' is ambiguous: it is {means}"):
        shape_dtype(name, (8,))


@pytest.mark.parametrize("command", ["capture", "fix"])
@pytest.mark.parametrize(
    ("args", "given"),
    [((), "given 0 --arg"), ((*ROW_SUM, "--arg", "f32[4]"), "given 2 --arg")],
    ids=["none", "two"],
)
def test_a_wrong_number_of_args_is_a_usage_error(
    command: str, args: tuple[str, ...], given: str, tmp_path: Path
) -> None:
    copy = tmp_path / "hopper_row_sum.py"
    shutil.copy(KERNELS / "hopper_row_sum.py", copy)
    error = _one_error(run(command, f"{copy}:row_sums", *args))
    assert f"row_sums takes 1 argument (x), {given}" in error
    assert copy.read_bytes() == (KERNELS / "hopper_row_sum.py").read_bytes()


# --- what cannot be written, what is no script ---------------------------------------------

needs_dev_full = pytest.mark.skipif(not Path("/dev/full").exists(), reason="no /dev/full")


@needs_dev_full
@pytest.mark.parametrize("option", ["-o", "--report"])
def test_a_full_file_is_named(option: str, tmp_path: Path) -> None:
    path = tmp_path / "k.mlir"
    path.write_text(GOOD)
    error = _one_error(run("infer", path, option, "/dev/full"))
    assert error == "smalto: error: cannot write '/dev/full': No space left on device"


class _FullStdout(io.StringIO):
    def write(self, text: str) -> int:
        raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))


@pytest.mark.parametrize("command", ["infer", "check", "explain"])
def test_a_full_stdout_is_named(command: str, tmp_path: Path, capsys) -> None:  # type: ignore[no-untyped-def]
    from smalto.cli.main import main

    path = tmp_path / "k.mlir"
    path.write_text(GOOD)
    previous = sys.stdout
    sys.stdout = _FullStdout()
    try:
        status = main([command, str(path)])
    finally:
        sys.stdout = previous
    err = capsys.readouterr().err
    assert status == 2
    assert err.splitlines() == ["smalto: error: cannot write to stdout: No space left on device"]


@needs_dev_full
def test_a_full_stdout_in_a_process(tmp_path: Path) -> None:
    path = tmp_path / "k.mlir"
    path.write_text(GOOD)
    with open("/dev/full", "w") as full:
        done = subprocess.run(
            [sys.executable, "-m", "smalto", "check", str(path)],
            stdout=full,
            stderr=subprocess.PIPE,
            text=True,
            timeout=300,
            cwd=REPO,
            env={**os.environ, "PYTHONPATH": str(REPO)},
        )
    assert done.returncode == 2, done.stderr
    assert done.stderr.splitlines() == [
        "smalto: error: cannot write to stdout: No space left on device"
    ]


@pytest.mark.parametrize("command", ["capture", "fix"])
@pytest.mark.parametrize(
    ("script", "says"), [("{folder}", "it is a folder"), ("/dev/null", "not a file")]
)
def test_a_script_that_is_no_file_says_what_it_is(
    command: str, script: str, says: str, tmp_path: Path
) -> None:
    target = script.format(folder=tmp_path)
    error = _one_error(run(command, f"{target}:row_sums", *ROW_SUM))
    assert f"cannot read '{target}': {says}" in error


def test_run_refuses_a_folder_as_the_program(tmp_path: Path, capsys) -> None:  # type: ignore[no-untyped-def]
    from smalto.cli.capture import run_main

    assert run_main([str(tmp_path)]) == 2
    assert capsys.readouterr().err.splitlines() == [
        f"smalto: error: cannot read '{tmp_path}': it is a folder (expected SCRIPT.py)"
    ]


def test_capture_output_that_is_a_file_is_refused(tmp_path: Path) -> None:
    taken = tmp_path / "taken"
    taken.write_text("mine\n")
    error = _one_error(
        run("capture", f"{KERNELS / 'hopper_row_sum.py'}:row_sums", *ROW_SUM, "-o", taken)
    )
    assert f"cannot write to '{taken}': it is a file, and -o names a folder" in error
    assert taken.read_text() == "mine\n"


def test_capture_to_a_full_stdout_is_named(capsys) -> None:  # type: ignore[no-untyped-def]
    from smalto.cli.capture import capture_main

    previous = sys.stdout
    sys.stdout = _FullStdout()
    try:
        status = capture_main([f"{KERNELS / 'hopper_row_sum.py'}:row_sums", *ROW_SUM])
    finally:
        sys.stdout = previous
    assert status == 2
    assert capsys.readouterr().err.splitlines() == [
        "smalto: error: cannot write to stdout: No space left on device"
    ]
