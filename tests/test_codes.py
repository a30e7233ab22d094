"""Failure codes: each kind of kernel with no layouts has one, named in the message (after
JAX's own first line), in ``smalto infer --json`` with each verified edit's span, and
explained by ``smalto explain CODE``; ``docs/codes.md`` is made from ``smalto.codes``."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
from cli_run import run

from smalto.codes import CODES, catalogue_markdown, entry_text

ROOT = Path(__file__).resolve().parents[1]
UNSAT = Path(__file__).resolve().parent / "unsat"


def test_docs_codes_is_made_from_the_catalogue() -> None:
    assert (ROOT / "docs" / "codes.md").read_text(encoding="utf-8") == catalogue_markdown(), (
        "docs/codes.md is out of date: python -m smalto.codes > docs/codes.md"
    )


def test_every_code_has_an_example_why_and_fixes() -> None:
    assert list(CODES) == [f"SM{n:03d}" for n in range(1, len(CODES) + 1)]
    for code in CODES.values():
        assert code.example.strip() and code.why.strip() and code.fixes
        assert "Failed to infer a possible set of layouts" in code.example


def test_explain_code_prints_its_entry_without_a_file() -> None:
    ran = run("explain", "SM004")
    assert ran.status == 0, ran.err
    assert ran.out == entry_text("SM004")
    assert ran.out.startswith("SM004: no SMEM transfer plan")
    assert "Fixes:" in ran.out and "SwizzleTransform(128)" in ran.out
    assert run("explain", "sm003").out == entry_text("SM003")


def test_explain_an_unknown_code_is_a_usage_error() -> None:
    ran = run("explain", "SM999")
    assert ran.status == 2
    assert "no failure code 'SM999'" in ran.err and "SM001" in ran.err


# (captured Pallas kernel, the code of each problem)
KINDS = [
    ("pallas_row_sum_cast_to_columns.mlir", ["SM003"]),
    ("pallas_tcgen05_row_sum_cast_to_columns.mlir", ["SM003"]),
    ("pallas_wgmma_then_strided.mlir", ["SM002"]),
    ("relayout_unsupported.mlir", ["SM002"]),
    ("pallas_epilogue_to_unswizzled_smem.mlir", ["SM004"]),
    ("pallas_tmem_acc_m64_layout_on_128_rows.mlir", ["SM006"]),
    ("async_load_index_not_divisible.mlir", ["SM007"]),
    ("cast_does_not_fit.mlir", ["SM008"]),
    ("registers_not_equal.mlir", ["SM001"]),
]


@pytest.mark.parametrize(("name", "codes"), KINDS, ids=[k[0] for k in KINDS])
def test_each_kind_of_failure_gets_its_code(name: str, codes: list[str]) -> None:
    ran = run("infer", UNSAT / name, "--json")
    assert ran.status == 1
    document = json.loads(ran.out)
    assert [problem["code"] for problem in document["problems"]] == codes
    assert document["code"] == codes[0]
    # The message still starts with JAX's own sentence; the code closes each problem.
    message = document["message"]
    assert message.startswith("Failed to infer a possible set of layouts")
    if "why: these requirements cannot all hold" in message:  # (a core, not a rule's words)
        assert re.findall(r"^\s*error\[(SM\d{3})\]: ", message, re.MULTILINE) == codes


def test_infer_json_gives_each_edit_a_span_and_applicability() -> None:
    ran = run("infer", UNSAT / "pallas_row_sum_cast_to_columns.mlir", "--json")
    document = json.loads(ran.out)
    retarget, drop = document["edits"][:2]
    kernels = (UNSAT / "kernels.py").read_text(encoding="utf-8").splitlines()
    for edit in (retarget, drop):
        fix = edit["fix"]
        assert fix["applicability"] == "MachineApplicable"
        span = fix["span"]
        assert span["file"] == "kernels.py" and span["line"] == span["end_line"]
        line = kernels[span["line"] - 1]
        assert line[span["column"] - 1 : span["end_column"] - 1] == fix["parts"][0]["original"]
        assert fix["replacement"] == fix["parts"][0]["replacement"]
    assert retarget["fix"]["replacement"] == "plgpu.Layout.WGMMA.reduce(1)"
    assert drop["fix"]["replacement"] == "s"  # the cast removed, its operand kept
