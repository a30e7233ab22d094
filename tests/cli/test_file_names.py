"""File names that are no UTF-8 (``k\\xff.mlir``, as a file system can hold them): every
command reads, writes and names them, showing their stray bytes as escapes, and never
ends in a traceback; a script at such a path, which MLIR cannot name in a location, is
refused in one line.
"""

from __future__ import annotations

import contextlib
import io
import os
from pathlib import Path

import pytest
from cli_run import Ran, run

from smalto.cli.main import main

SMEM = "#gpu.address_space<workgroup>"
GOOD = f"""\
func.func @k() {{
  %r = "mosaic_gpu.slice_smem"() <{{offset = 0 : i32}}> : () -> memref<128x64xf16, {SMEM}>
  %x = "mosaic_gpu.vector_load"(%r) : (memref<128x64xf16, {SMEM}>) -> vector<128x64xf16>
  %y = "arith.addf"(%x, %x) : (vector<128x64xf16>, vector<128x64xf16>) -> vector<128x64xf16>
  "mosaic_gpu.vector_store"(%y, %r) : (vector<128x64xf16>, memref<128x64xf16, {SMEM}>) -> ()
  "func.return"() : () -> ()
}}
"""
UNSAT = """\
func.func @k() {
  %c = "arith.constant"() <{value = dense<1.0> : vector<128x128xf32>}> : () -> vector<128x128xf32>
  %a = "mosaic_gpu.layout_cast"(%c) <{new_layout = #mosaic_gpu.WGStridedFragLayout<[128, 128], 4>}> : (vector<128x128xf32>) -> vector<128x128xf32>
  %b = "mosaic_gpu.layout_cast"(%a) <{new_layout = #mosaic_gpu.TiledLayout<[[64, 8], [16, 8], [8, 8], [2]], warp_dims = [-7], lane_dims = [-3, -2], vector_dim = -1>}> : (vector<128x128xf32>) -> vector<128x128xf32>
  "func.return"() : () -> ()
}
"""  # noqa: E501


def _named(folder: Path, raw: bytes, text: str = GOOD) -> Path:
    """A file whose name is the bytes ``raw`` (no UTF-8), holding ``text``."""
    path = folder / os.fsdecode(raw)
    path.write_text(text)
    return path


def _clean(ran: Ran) -> None:
    assert "Traceback" not in ran.err, ran.err
    assert "\udcff" not in ran.out + ran.err  # shown as an escape, not a lone surrogate


@pytest.fixture(autouse=True)
def _in(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)


@pytest.mark.parametrize(
    "args",
    [("infer",), ("infer", "--summary"), ("infer", "--json"), ("explain",), ("explain", "%y")],
)
def test_commands_read_and_name_the_file(args: tuple[str, ...], tmp_path: Path) -> None:
    path = _named(tmp_path, b"k\xff.mlir")
    ran = run(args[0], path.name, *args[1:])
    _clean(ran)
    assert ran.status == 0, ran.err
    if "--summary" in args:
        assert ran.out.startswith("k\\xff.mlir: ")


def test_check_and_report_of_a_file_so_named(tmp_path: Path) -> None:
    inferred = run("infer", _named(tmp_path, b"k\xff.mlir").name, "-o", os.fsdecode(b"o\xfe.mlir"))
    assert inferred.status == 0, inferred.err
    checked = run("check", os.fsdecode(b"o\xfe.mlir"))
    _clean(checked)
    assert checked.status == 0, checked.out + checked.err
    page = os.fsdecode(b"page\xff.html")
    reported = run("infer", os.fsdecode(b"k\xff.mlir"), "--report", page)
    _clean(reported)
    assert reported.status == 0 and "k\\xff.mlir" in (tmp_path / page).read_text()


def test_a_failure_page_of_a_file_so_named(tmp_path: Path) -> None:
    path = _named(tmp_path, b"u\xff.mlir", UNSAT)
    ran = run("infer", path.name, "--report", "page.html")
    _clean(ran)
    assert ran.status == 1, ran.err
    assert "u\\xff.mlir" in (tmp_path / "page.html").read_text()


def test_draw_a_value_of_a_file_so_named(tmp_path: Path) -> None:
    path = _named(tmp_path, b"k\xff.mlir")
    ran = run("draw", path.name, "%y", "-o", os.fsdecode(b"y\xff.svg"))
    _clean(ran)
    assert ran.status == 0, ran.err
    assert ran.out.strip() == "wrote y\\xff.svg"
    assert (tmp_path / os.fsdecode(b"y\xff.svg")).stat().st_size > 0


def test_a_missing_file_so_named_is_one_line(tmp_path: Path) -> None:
    ran = run("infer", os.fsdecode(b"missing\xff.mlir"))
    assert ran.status == 2
    assert ran.err == "smalto: error: cannot read 'missing\\xff.mlir': No such file or directory\n"


def test_a_script_so_named_is_refused_in_one_line(tmp_path: Path) -> None:
    script = _named(tmp_path, b"kernel\xff.py", "def f(x):\n    return x\n")
    for command in ("capture", "fix"):
        ran = run(
            command,
            f"{script.name}:f",
            "--arg",
            "f32[128]",
            *(["-o", "out"] * (command == "capture")),
        )
        assert ran.status == 2, ran.err
        assert "Traceback" not in ran.err
        assert "kernel\\xff.py': its path is not UTF-8" in ran.err, ran.err


def test_draw_of_a_scalar_ref_is_one_line(tmp_path: Path) -> None:
    text = f"""\
func.func @k() {{
  %r = "mosaic_gpu.slice_smem"() <{{offset = 0 : i32}}> : () -> memref<i32, {SMEM}>
  %x = "mosaic_gpu.slice_smem"() <{{offset = 64 : i32}}> : () -> memref<128x64xf16, {SMEM}>
  %y = "mosaic_gpu.vector_load"(%x) : (memref<128x64xf16, {SMEM}>) -> vector<128x64xf16>
  "func.return"() : () -> ()
}}
"""
    (tmp_path / "k.mlir").write_text(text)
    ran = run("draw", "k.mlir", "%r", "-o", "r.svg")
    assert ran.status == 2 and "Traceback" not in ran.err, ran.err
    assert "a 0-dimensional ref holds one element" in ran.err


def test_names_on_a_strict_utf8_stdout(tmp_path: Path) -> None:
    """Where stdout and stderr refuse lone surrogates (a UTF-8 locale's ``strict``, which
    a test's ``StringIO`` is not): what every command prints of a name is printable."""
    _named(tmp_path, b"k\xff.mlir")
    name = os.fsdecode(b"k\xff.mlir")
    out = io.TextIOWrapper(io.BytesIO(), encoding="utf-8", errors="strict")
    err = io.TextIOWrapper(io.BytesIO(), encoding="utf-8", errors="strict")
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        statuses = [
            main(["infer", "--summary", name]),
            main(["explain", name]),
            main(["draw", name, "%y", "-o", os.fsdecode(b"y\xff.png")]),
            main(["infer", os.fsdecode(b"none\xff.mlir")]),
        ]
    out.flush()
    err.flush()
    assert statuses == [0, 0, 0, 2]
    printed = out.buffer.getvalue().decode()  # type: ignore[attr-defined]
    assert "wrote y\\xff.png" in printed and printed.startswith("k\\xff.mlir: ")
    assert "'none\\xff.mlir'" in err.buffer.getvalue().decode()  # type: ignore[attr-defined]
