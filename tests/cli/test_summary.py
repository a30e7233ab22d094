# ruff: noqa: E501  (MLIR fixtures read best one op per line)
"""``smalto infer FILE --summary``: each value's layout by name, shape and place; costly relayouts."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
from cli_run import infer_output, run
from jax.experimental.mosaic.gpu import fragmented_array as fa
from jax.experimental.mosaic.gpu import tcgen05
from summary_kernels import TRANSPOSED

import smalto
from smalto.basics.mlir import in_context, parse_module
from smalto.cli.main import main
from smalto.hw.values import Reg, Smem, Tmem
from smalto.report.summary import layout_name
from smalto.source.files import searching_beside

ROOT = Path(__file__).resolve().parents[2]
FLASH = ROOT / "examples" / "flash_attention_fwd.mlir"
TCGEN05 = ROOT / "tests" / "corpus" / "kernels" / "custom_tcgen05_mma_tmem_epilogue.mlir"
HALF_LANE = (
    ROOT
    / "tests"
    / "corpus"
    / "mosaic_tests"
    / "MosaicGpuDialectTCGen05Test.test_tcgen05_mma30.mlir"
)
STRIDED = ROOT / "tests" / "corpus" / "kernels" / "custom_elementwise_chain_grid.mlir"


ROW = re.compile(r"^ *(\d+)  (%\S+) +(.+?)  +(SMEM |TMEM )?(\S+) +(\S+)(?: at (\S+))?$")


def _run(args: list[str], capsys: pytest.CaptureFixture[str]) -> str:
    assert main(args) == 0
    captured = capsys.readouterr()
    assert captured.err == ""
    return captured.out


def _printed(path: Path) -> list[str]:
    return infer_output(path).splitlines()


def _rows(text: str) -> list[re.Match[str]]:
    table = text.split("\n\n", 1)[1].splitlines()
    assert table[0].split() == ["line", "value", "layout", "shape", "defined", "by"]
    rows = [ROW.match(line) for line in table[1:]]
    assert all(rows), table
    return rows  # type: ignore[return-value]


def test_flash_attention(capsys: pytest.CaptureFixture[str]) -> None:
    out = _run(["infer", str(FLASH), "--summary"], capsys)
    head, second, *_ = out.splitlines()
    assert head.startswith(f"{FLASH}: 64 values with layouts (arch 9.0): ")
    assert "19 WGMMA, 16 WGMMA_ROW, 5 splat" in head
    assert "23 tiled 8×64 + swizzle 128" in head
    # No relayout costs anything: the splat constants seeding the loop are broadcast.
    assert second == "relayouts that cost something: none; 8 splat broadcasts (free)"
    printed = _printed(FLASH)
    rows = _rows(out)
    assert len(rows) == 64
    for row in rows:
        line, name, memory, shape, op = int(row[1]), row[2], row[4], row[5], row[6]
        at = printed[line - 1]
        # Defined on that line of `smalto infer`'s output, by that op, with that type.
        assert name.split("#")[0] in at and op.split(".", 1)[-1] in at, row[0]
        dims = shape.rsplit("x", 1)[0]
        assert (f"memref<{dims}x" if memory else f"vector<{dims}x") in at, row[0]
    by_name = {row[2]: row for row in rows}
    assert by_name["%cst"][3] == "splat" and by_name["%cst"][5] == "64x128xf32"
    assert by_name["%159#0"][3] == "WGMMA" and by_name["%159#1"][3] == "WGMMA_ROW"
    assert by_name["%transpose"][3] == "tiled 64×8 + swizzle 128"
    assert by_name["%transpose"][4] == "SMEM " and by_name["%transpose"][5] == "128x128xf16"


def test_only_costly_relayouts_are_listed(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = tmp_path / "transposed.mlir"
    path.write_text(TRANSPOSED)
    out = _run(["infer", str(path), "--summary"], capsys)
    lines = out.splitlines()
    assert lines[1] == "relayouts that cost something: 2; 1 splat broadcast (free)"
    assert lines[2] == (
        "  %2 at `mosaic_gpu.layout_cast` at kernel.py:8 (line 6): WGMMA -> WGMMA_TRANSPOSED "
        "(registers shuffled between threads)"
    )
    assert lines[3] == (
        "  %4 at `mosaic_gpu.layout_cast` at kernel.py:11 (line 9): WGMMA_TRANSPOSED -> WGMMA "
        "(registers shuffled between threads)"
    )
    rows = {row[2]: row for row in _rows(out)}
    # Where each value comes from, in the Python source, and its printed line.
    assert rows["%3"][3] == "WGMMA_TRANSPOSED" and rows["%3"][7] == "kernel.py:8:8"
    assert rows["%cst"][3] == "splat" and rows["%cst"][1] == "7"
    printed = _printed(path)
    assert "%cst = arith.constant" in printed[6]
    assert printed[5].lstrip().startswith("%3 = mosaic_gpu.layout_cast x(%2 ")


def test_json(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = tmp_path / "transposed.mlir"
    path.write_text(TRANSPOSED)
    document = json.loads(_run(["infer", str(path), "--json"], capsys))  # --json: a summary
    assert document["file"] == str(path) and document["arch"] == "9.0"
    assert document["layouts"] == {
        "WGMMA": 3,
        "WGMMA_TRANSPOSED": 2,
        "tiled 8×64 + swizzle 128": 1,
        "splat": 1,
    }
    assert document["free_broadcasts"] == 1
    assert [(r["value"], r["from"], r["to"]) for r in document["relayouts"]] == [
        ("%2", "WGMMA", "WGMMA_TRANSPOSED"),
        ("%4", "WGMMA_TRANSPOSED", "WGMMA"),
    ]
    constant = next(v for v in document["values"] if v["name"] == "%cst")
    assert constant == {
        "name": "%cst",
        "input_name": "%one",
        "line": 7,
        "location": "kernel.py:9:10",
        "op": "arith.constant",
        "kind": "vector",
        "shape": [64, 64],
        "element_type": "bf16",
        "layout": "splat",
    }
    ref = document["values"][0]
    assert (ref["kind"], ref["shape"], ref["layout"]) == (
        "smem",
        [64, 64],
        "tiled 8×64 + swizzle 128",
    )


def test_several_files_as_json_lines(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    out = _run(["infer", "--summary", "--json", str(FLASH), str(TCGEN05)], capsys)
    documents = [json.loads(line) for line in out.splitlines()]
    assert [d["file"] for d in documents] == [str(FLASH), str(TCGEN05)]
    assert documents[1]["arch"] == "10.0"
    # -o still gets the module.
    out_dir = tmp_path / "o"
    _run(["infer", "--summary", "-o", str(out_dir), str(FLASH), str(TCGEN05)], capsys)
    assert "out_layouts" in (out_dir / FLASH.name).read_text()


def test_a_failed_file_is_a_json_diagnosis(capsys: pytest.CaptureFixture[str]) -> None:
    """`infer --json` on several files: one object per file, the failed one a diagnosis
    (what failed, each requirement with its op, location and source line, the values,
    the suggestion and the verified edits); exit status 1 still."""
    unsat = Path(__file__).resolve().parents[1] / "unsat" / "pallas_row_sum_cast_to_columns.mlir"
    status = main(["infer", "--json", str(FLASH), str(unsat)])
    captured = capsys.readouterr()
    assert status == 1
    solved, failed = (json.loads(line) for line in captured.out.splitlines())
    assert solved["ok"] is True and solved["file"] == str(FLASH) and solved["values"]
    assert failed["ok"] is False and failed["file"] == str(unsat) and failed["arch"] == "9.0"
    assert failed["error"].startswith(smalto.FAILURE_PREFIX)
    assert failed["message"].startswith(failed["error"]) and not failed["unsupported"]
    # stderr: what failed, in one line (the diagnosis is on stdout).
    assert captured.err == f"smalto: error: {unsat}: {failed['error']}\n"
    # The same facts as the error's own report, each requirement with its kernel line.
    # (Its kernel lines read beside the module, as the command line reads them.)
    with in_context(module := parse_module(unsat.read_text())), searching_beside(unsat):
        with pytest.raises(smalto.InferenceError) as raised:
            smalto.infer_layout(module)
        str(raised.value)  # the diagnosis is made here, where the sources are
    report = raised.value.conflict
    assert [(r["op"], r["location"], r["text"]) for r in failed["requirements"]] == [
        (r.op, r.location, r.text) for r in report.requirements
    ]
    cast = "out_gmem[...] = plgpu.layout_cast(s, plgpu.Layout.WGMMA.reduce(0))"
    at_cast = [r["source"] for r in failed["requirements"] if r["location"] == "kernels.py:52:24"]
    assert at_cast and set(at_cast) == {cast}
    assert [f"{v['name']} : {v['type']}" for v in failed["values"]] == report.values
    assert failed["suggestion"] == report.suggestion
    first = failed["edits"][0]
    assert (first["kind"], first["old"], first["new"]) == ("retarget", "WGMMA_COL", "WGMMA_ROW")
    # The whole edited line, in the kernel's own names (no placeholder ``x``).
    assert first["pallas"] == cast.replace("reduce(0)", "reduce(1)")
    assert first["ops"] == [
        {"op": "mosaic_gpu.layout_cast", "location": "kernels.py:52:24", "source": cast}
    ]
    assert failed["notes"] == []


def test_an_op_without_a_rule_is_a_json_failure(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = tmp_path / "no_rule.mlir"
    path.write_text(
        "func.func @k() {\n"
        '  %c = "arith.constant"() <{value = dense<1.0> : vector<128x64xf32>}> : () -> vector<128x64xf32>\n'
        '  %t = "vector.transpose"(%c) <{permutation = array<i64: 1, 0>}> : (vector<128x64xf32>) -> vector<64x128xf32>\n'
        "  return\n}\n"
    )
    assert main(["infer", "--json", str(path)]) == 1
    document = json.loads(capsys.readouterr().out)
    assert document["ok"] is False and document["unsupported"] is True
    assert "vector.transpose" in document["error"] and document["requirements"] == []


@pytest.mark.parametrize(
    "path, expected",
    [
        (TCGEN05, ["TCGEN05", "TMEM default"]),
        (HALF_LANE, ["TMEM half_lane", "WGMMA"]),
        (STRIDED, ["strided ×2", "untiled", "splat"]),
    ],
    ids=["tcgen05", "half-lane", "strided"],
)
def test_layouts_by_name(
    path: Path, expected: list[str], capsys: pytest.CaptureFixture[str]
) -> None:
    document = json.loads(_run(["infer", str(path), "--json"], capsys))
    assert set(expected) <= set(document["layouts"]), document["layouts"]
    assert not any("TiledLayout" in name or "Tiling" in name for name in document["layouts"])


def test_layout_names() -> None:
    assert layout_name(Reg(fa.WGMMA_LAYOUT)) == "WGMMA"
    assert layout_name(Reg(fa.WGMMA_ROW_LAYOUT)) == "WGMMA_ROW"
    assert layout_name(Reg(fa.TCGEN05_ROW_LAYOUT)) == "TCGEN05_ROW"
    assert layout_name(Reg(fa.WGSplatFragLayout((64, 64)))) == "splat"
    assert layout_name(Reg(fa.WGStridedFragLayout((128, 128), 4))) == "strided ×4"
    assert layout_name(Smem((8, 64), 128)) == "tiled 8×64 + swizzle 128"
    assert layout_name(Smem((8, 32), None)) == "tiled 8×32, no swizzle"
    assert layout_name(Smem(None, None)) == "untiled"
    assert layout_name(Tmem(tcgen05.tmem_half_lane_layout(128))) == "TMEM half_lane"
    assert layout_name(Tmem(tcgen05.tmem_default_layout(2))) == "TMEM default (packing 2)"
    assert layout_name(Tmem(tcgen05.tmem_m64_collective_layout(128))) == "TMEM m64_collective"
    # A keep-dims row reduction of WGMMA (``jnp.sum(x, axis=1, keepdims=True)``) is named so.
    kept = fa.TiledLayout(fa.Tiling(((64, 1), (16, 1), (8, 1))), (-6,), (-2, fa.Replicated(4)), -1)
    assert layout_name(Reg(kept)) == "WGMMA_ROW keepdims"
    # A layout with no name: its tiling, compactly, never a Python repr.
    odd = fa.TiledLayout(fa.Tiling(((64, 16), (16, 16), (8,))), (-5,), (-3, -2), -1)
    assert layout_name(Reg(odd)) == "tiled (64, 16)(16, 16)(8) warps -5 lanes -3,-2 vector -1"


def test_summary_on_failure_is_the_error(capsys: pytest.CaptureFixture[str]) -> None:
    unsat = ROOT / "tests" / "unsat" / "cast_strided_then_wgmma.mlir"
    assert main(["infer", str(unsat), "--summary"]) == 1
    captured = capsys.readouterr()
    assert captured.out == "" and captured.err.startswith("smalto: error: Failed to infer")


@pytest.mark.parametrize("page", ["README.md", "docs/cli.md"])
def test_the_documented_example_runs_as_written(page: str) -> None:
    """The --summary example of the README and of docs/cli.md: its lines are what it prints."""
    text = (ROOT / page).read_text()
    command, shown = re.search(
        r"^\$ (smalto infer \S+ --summary)\n(.*?)\n```", text, re.M | re.S
    ).groups()
    ran = run(*command.split()[1:])
    assert ran.status == 0, ran.err
    printed = ran.out.splitlines()
    shown_lines = shown.splitlines()
    assert printed[:4] == shown_lines[:4]
    # The rows it shows, between the elisions, are rows of the output.
    assert all(line in printed for line in shown_lines if line.strip() != "...")
