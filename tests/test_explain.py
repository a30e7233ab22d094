"""``smalto explain``: the chain of ops and requirements behind each value's layout."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from smalto.explain import Explainer, explain_main
from smalto.infer import in_context, solve_module
from smalto.mlir import module_arch, parse_module

ROOT = Path(__file__).resolve().parents[1]
FLASH = ROOT / "examples" / "flash_attention_fwd.mlir"
UNSAT = ROOT / "tests" / "unsat" / "cast_strided_then_wgmma.mlir"
KERNELS = sorted((ROOT / "tests" / "corpus" / "kernels").glob("*.mlir"))

# An accumulator carried through a loop into a wgmma: the example.
LOOP = """
module {
  func.func @kernel(%lo: index, %hi: index, %step: index) {
    %zero = arith.constant dense<0.000000e+00> : vector<64x64xf32> loc("kernel.py":3:4)
    %a = "mosaic_gpu.slice_smem"() <{offset = 0 : i32}> : () -> memref<64x64xf16, #gpu.address_space<workgroup>> loc("kernel.py":4:4)
    %b = "mosaic_gpu.slice_smem"() <{offset = 8192 : i32}> : () -> memref<64x64xf16, #gpu.address_space<workgroup>> loc("kernel.py":5:4)
    %out = "mosaic_gpu.slice_smem"() <{offset = 16384 : i32}> : () -> memref<64x64xf32, #gpu.address_space<workgroup>> loc("kernel.py":6:4)
    %r = scf.for %i = %lo to %hi step %step iter_args(%acc = %zero) -> (vector<64x64xf32>) {
      %x = arith.addf %acc, %acc : vector<64x64xf32> loc("kernel.py":8:8)
      %y = "mosaic_gpu.wgmma"(%x, %a, %b) : (vector<64x64xf32>, memref<64x64xf16, #gpu.address_space<workgroup>>, memref<64x64xf16, #gpu.address_space<workgroup>>) -> vector<64x64xf32> loc("kernel.py":9:8)
      scf.yield %y : vector<64x64xf32> loc("kernel.py":10:8)
    } loc("kernel.py":7:4)
    %s = arith.mulf %r, %r : vector<64x64xf32> loc("kernel.py":11:4)
    "mosaic_gpu.vector_store"(%s, %out) : (vector<64x64xf32>, memref<64x64xf32, #gpu.address_space<workgroup>>) -> () loc("kernel.py":12:4)
    return
  }
}
"""  # noqa: E501


def _explain(args: list[str], capsys: pytest.CaptureFixture) -> tuple[int, str, str]:
    status = explain_main(args)
    captured = capsys.readouterr()
    return status, captured.out, captured.err


@pytest.fixture
def loop_file(tmp_path: Path) -> Path:
    path = tmp_path / "loop.mlir"
    path.write_text(LOOP)
    return path


def test_loop_carried_accumulator_names_the_wgmma_and_the_loop(
    loop_file: Path, capsys: pytest.CaptureFixture
) -> None:
    status, out, _ = _explain([str(loop_file), "%arg4"], capsys)
    assert status == 0
    first = out.splitlines()[0]
    assert first.startswith("%arg4 (kernel.py:7): WGMMA because it ")
    assert "the accumulator of `mosaic_gpu.wgmma` at kernel.py:9" in first
    assert "via iter_arg #0 of `scf.for` at kernel.py:7" in first
    # The steps end at the op that fixed the layout.
    assert (
        out.rstrip()
        .splitlines()[-1]
        .endswith("`mosaic_gpu.wgmma` at kernel.py:9 requires the accumulator to be WGMMA")
    )


def test_fixed_and_free_values(loop_file: Path, capsys: pytest.CaptureFixture) -> None:
    status, out, _ = _explain([str(loop_file), "--all"], capsys)
    assert status == 0
    lines = {line.split(" ", 1)[0]: line for line in out.splitlines()}
    assert "because `arith.constant` at kernel.py:3 requires it (the constant)" in lines["%cst"]
    wgmma = "because `mosaic_gpu.wgmma` at kernel.py:9 requires it (the accumulator)"
    assert lines["%6"].endswith(wgmma)
    # Nothing forces the SMEM tilings: the search picks the preferred one.
    assert "(free: chosen by preference" in lines["%0"]


def test_flash_attention_lines_point_at_the_ops(capsys: pytest.CaptureFixture) -> None:
    source = FLASH.read_text().splitlines()
    # The first layout cast of the kernel: to WGMMA_ROW, for the row statistics.
    cast = next(i for i, line in enumerate(source, 1) if '"mosaic_gpu.layout_cast"' in line)
    status, out, _ = _explain([str(FLASH), "%arg15", f"@{cast}"], capsys)
    assert status == 0
    found = re.search(r"accumulator of `mosaic_gpu.wgmma` at line (\d+)", out)
    assert found and "mosaic_gpu.wgmma" in source[int(found[1]) - 1]
    loop = re.search(r"iter_arg #0 of `scf.for` at line (\d+)", out)
    assert loop and '"scf.for"' in source[int(loop[1]) - 1]
    assert f"WGMMA_ROW because `mosaic_gpu.layout_cast` at line {cast} requires it" in out


@pytest.mark.parametrize("path", KERNELS, ids=lambda p: p.stem)
def test_every_value_of_every_kernel_has_an_explanation(path: Path) -> None:
    module = parse_module(path.read_text(), source_name=str(path))
    with in_context(module):
        explainer = Explainer(solve_module(module, arch=module_arch(module) or (9, 0)), str(path))
        for vid in explainer.values():
            explanation = explainer.explain_value(vid)
            assert explanation.steps, explanation.text()
            assert explanation.summary.startswith(explanation.layout), explanation.text()
            assert "because" in explanation.summary or "(free:" in explanation.summary
            if not explanation.free:
                assert "`" in explanation.steps[-1]  # ends at an op


def test_usage_and_inference_errors(loop_file: Path, capsys: pytest.CaptureFixture) -> None:
    status, _, err = _explain([str(loop_file), "%nope"], capsys)
    assert status == 2 and "no value named %nope" in err
    status, _, err = _explain([str(UNSAT)], capsys)
    assert status == 1 and "Failed to infer" in err
    status, _, err = _explain(["/nonexistent.mlir"], capsys)
    assert status == 2 and "cannot read" in err
    status, _, err = _explain([str(loop_file), "--arch", "8.0"], capsys)
    assert status == 2 and "unsupported architecture" in err


FLASH_CORPUS = ROOT / "tests" / "corpus" / "kernels" / "flash_attn_fwd_wg_hd128_b64x128.mlir"


def _line_of(text: str, line: int) -> str:
    return text.splitlines()[line - 1]


def test_a_row_vector_is_explained_through_its_reduction(capsys: pytest.CaptureFixture) -> None:
    """The row maximum of a WGMMA score matrix: WGMMA_ROW because it is that reduction."""
    text = FLASH_CORPUS.read_text()
    status, out, _ = _explain([str(FLASH_CORPUS)], capsys)
    assert status == 0
    rows = [line for line in out.splitlines() if ": WGMMA_ROW because" in line]
    through = [line for line in rows if "accumulator of `mosaic_gpu.wgmma`" in line]
    assert through, rows
    for line in through:
        found = re.search(
            r"the reduction \(`vector.multi_reduction` at line (\d+)\) of a value", line
        )
        assert found, line
        assert '"vector.multi_reduction"' in _line_of(text, int(found[1]))
    # The reduction's own result *is* the reduction; its users come from it.
    reduced = int(found[1])
    own = next(line for line in rows if f"(line {reduced})" in line)
    assert "because it is the reduction" in own, own
    assert any("because it comes from the reduction" in line for line in through)


def test_pallas_locations_read_as_file_and_line(
    tmp_path: Path, capsys: pytest.CaptureFixture
) -> None:
    """jax wraps positions in name locations; explain shows the file and line, and the name."""
    module = FLASH_CORPUS.read_text()
    text = re.sub(
        r'("mosaic_gpu.wgmma".*)$',
        r'\1 loc("dot:"("dot"("attention.py":88:12)))',
        module,
        count=1,
        flags=re.MULTILINE,
    )
    path = tmp_path / "k.mlir"
    path.write_text(text)
    status, out, _ = _explain([str(path)], capsys)
    assert status == 0
    assert "`mosaic_gpu.wgmma` (`dot`) at attention.py:88" in out
    assert "loc(" not in out
