"""The user's Python files behind a module's locations: found from the current directory
and beside the module file, and a note (never silence) where they are not.

A captured module names its kernel file as it was where ``smalto capture`` ran
(``kernels.py``). Run from elsewhere, the file is found beside the module;
everything that reads a source line goes through ``smalto.source.files``: the CLI's
excerpts, the report, and, through ``searching_beside``, the edits the pass
itself writes in Pallas' words (a transfer made unoptimized).
"""

from __future__ import annotations

import json
import re
import shutil
from pathlib import Path

import jax
import jax.numpy as jnp
import pytest
from cli_run import run
from user_kernels_unoptimized import matmul_narrow_out

import smalto.jax
from smalto.source.files import Sources, searching_beside

TESTS = Path(__file__).resolve().parents[1]
UNSAT = TESTS / "unsat"
ROW_SUM = UNSAT / "pallas_row_sum_cast_to_columns.mlir"  # located in kernels.py:LINE:COL
CAST_LINE = "out_gmem[...] = plgpu.layout_cast(s, plgpu.Layout.WGMMA.reduce(0))"


def test_a_file_is_found_as_named_then_beside_the_module(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    module = tmp_path / "captured" / "k.mlir"
    (module.parent / "src").mkdir(parents=True)
    (module.parent / "src" / "kernels.py").write_text("a = 1\nb = 2\n")
    (module.parent / "flat.py").write_text("c = 3\n")
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    (elsewhere / "here.py").write_text("d = 4\n")
    monkeypatch.chdir(elsewhere)
    sources = Sources(near=[module])
    assert sources.line("here.py", 1) == "d = 4"  # the current directory first
    assert sources.line("src/kernels.py", 2) == "b = 2"  # beside the module, same path
    assert sources.line("/home/someone/project/flat.py", 1) == "c = 3"  # by its base name
    assert sources.line("src/kernels.py", 9) is None  # no such line: not a missing file
    assert sources.missing == []
    assert sources.line("gone.py", 1) is None and sources.line("gone.py", 2) is None
    assert sources.line("-", 1) is None  # stdin: nothing to find, nothing missing
    assert sources.missing == ["gone.py"]
    assert sources.missing_note() == (
        f"source lines not shown: gone.py not found in the current directory or beside "
        f"{module.parent}/"
    )


def test_sources_made_inside_a_search_share_it(tmp_path: Path) -> None:
    module = tmp_path / "k.mlir"
    (tmp_path / "kernels.py").write_text("x = 1\n")
    assert Sources().line("kernels.py", 1) is None  # the current directory alone
    with searching_beside(module) as search:
        inner = Sources()  # as the pass makes one, not knowing the module file
        assert inner.line("kernels.py", 1) == "x = 1"
        assert inner.line("other.py", 1) is None
    assert search.missing == ["other.py"]  # the command sees what the pass missed
    assert "other.py not found" in (search.missing_note() or "")
    assert Sources().directories == []  # the search ends with the block


@pytest.fixture
def elsewhere(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A directory to run from, which holds no kernel file."""
    cwd = tmp_path / "cwd"
    cwd.mkdir()
    monkeypatch.chdir(cwd)
    return cwd


def test_the_cli_shows_the_lines_beside_the_module_from_another_directory(
    tmp_path: Path, elsewhere: Path
) -> None:
    beside = tmp_path / "kernel_dir"
    beside.mkdir()
    module = beside / ROW_SUM.name
    shutil.copy(ROW_SUM, module)
    shutil.copy(UNSAT / "kernels.py", beside / "kernels.py")
    failed = run("infer", module)
    assert failed.status == 1
    assert f"kernels.py:52:24:\n  {' ' * 8}{CAST_LINE}\n" in failed.err
    assert "source lines not shown" not in failed.err
    # As JSON: each requirement with its source line.
    document = json.loads(run("infer", "--json", module).out)
    sources = {r["location"]: r["source"] for r in document["requirements"]}
    assert sources["kernels.py:52:24"] == CAST_LINE and document["notes"] == []


def test_the_cli_says_which_file_it_did_not_find(tmp_path: Path, elsewhere: Path) -> None:
    module = tmp_path / "alone" / ROW_SUM.name
    module.parent.mkdir()
    shutil.copy(ROW_SUM, module)
    failed = run("infer", module)
    assert failed.status == 1 and CAST_LINE not in failed.err
    note = (
        "smalto: note: source lines not shown: kernels.py not found in the current "
        f"directory or beside {module.parent}/"
    )
    assert failed.err.splitlines()[-1] == note
    document = json.loads(run("infer", "--json", module).out)
    assert document["notes"] == [note.removeprefix("smalto: note: ")]
    assert all(r["source"] is None for r in document["requirements"])


def _captured_narrow_store(directory: Path) -> Path:
    """A Hopper matmul whose fp8 result is stored straight to GMEM (no optimized plan in
    any layout), captured, its locations naming ``kernels.py`` as a capture run beside
    the kernel file would; the module is written to ``directory``."""
    f8, bf16 = jnp.float8_e4m3fn, jnp.bfloat16
    operands = (jax.ShapeDtypeStruct((128, 64), bf16), jax.ShapeDtypeStruct((64, 128), bf16))
    kernel = TESTS / "helpers" / "user_kernels_unoptimized.py"

    def narrow(a: jax.Array, b: jax.Array) -> jax.Array:
        return matmul_narrow_out(a, b, out_dtype=f8)

    # JAX's pass takes it and its lowering fails after; smalto's refuses it, the module
    # captured.
    with smalto.jax.enabled():
        (captured,) = smalto.jax.capture(narrow, *operands, arch=(9, 0))
    text = re.sub(rf'"[^"]*{kernel.name}"', '"kernels.py"', captured.text)
    assert '"kernels.py"' in text
    module = directory / "narrow.mlir"
    module.write_text(text)
    return module


def test_the_pallas_edit_of_a_transfer_is_written_from_the_line_beside_the_module(
    tmp_path: Path, elsewhere: Path
) -> None:
    """The edit the pass writes for a transfer made unoptimized (deep in the pass, which
    does not know the module file) comes from the kernel line beside the module."""
    beside = tmp_path / "captured"
    beside.mkdir()
    module = _captured_narrow_store(beside)
    shutil.copy(TESTS / "helpers" / "user_kernels_unoptimized.py", beside / "kernels.py")
    edit = "plgpu.store(o_gmem, acc.astype(out_dtype), optimized=False)"
    refused = run("infer", module)  # the diagnosis's remedy, in the user's own line
    assert refused.status == 1 and edit in refused.err
    ran = run("infer", module, "--allow-unoptimized", "-o", tmp_path / "out.mlir")
    assert ran.status == 0, ran.err
    (warning,) = [line for line in ran.err.splitlines() if "warning:" in line]
    assert edit in warning
    assert "source lines not shown" not in ran.err
    # Without the file, the edit's shape, and a note that says why.
    (beside / "kernels.py").unlink()
    ran = run("infer", module, "--allow-unoptimized", "-o", tmp_path / "out.mlir")
    assert ran.status == 0, ran.err
    assert "plgpu.store(ref, value, optimized=False)" in ran.err
    assert ran.err.splitlines()[-1].startswith(
        "smalto: note: source lines not shown: kernels.py not found"
    )
