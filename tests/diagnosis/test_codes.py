"""Failure codes: each kind of kernel with no layouts has one, named in the message (after
JAX's own first line), in ``smalto infer --json`` with each verified edit's span, and
explained by ``smalto explain CODE``; ``docs/codes.md`` is made from ``smalto.basics.codes``."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest
from cli_run import run

import smalto
from smalto.basics.codes import CODES, GENERIC, catalogue_markdown, entry_text
from smalto.basics.inputs import read_input
from smalto.basics.mlir import in_context, module_arch
from smalto.constraints import conflict_report
from smalto.errors import InferenceError

ROOT = Path(__file__).resolve().parents[2]
UNSAT = Path(__file__).resolve().parents[1] / "unsat"


def test_docs_codes_is_made_from_the_catalogue() -> None:
    assert (ROOT / "docs" / "codes.md").read_text(encoding="utf-8") == catalogue_markdown(), (
        "docs/codes.md is out of date: python -m smalto.basics.codes > docs/codes.md"
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


# Every failing kernel of tests/unsat and the code of each of its problems, written from
# what is wrong in the kernel (its docstring in kernels*.py, the module's ops), not from
# smalto's output: the code names the thing to change, whatever else the conflict holds.
KINDS = {
    # A value given two layouts: two casts, a cast and a loop carry, an inline_mgpu's.
    "registers_not_equal.mlir": ["SM001"],
    "pallas_strided_loop_carry.mlir": ["SM001"],
    # A `layout=` (load, iota) of the per-row layout on a value broadcast along rows (which
    # needs the per-column one): a second layout for the value, no reduction anywhere.
    "words_bias_loaded_as_rows.mlir": ["SM001"],
    "words_tcgen05_bias_loaded_as_rows.mlir": ["SM001"],
    "words_iota_in_row_layout.mlir": ["SM001"],
    # A TMEM load's layout (TCGEN05) against one stated elsewhere: a WGMMA_ROW `layout=`
    # where the broadcast needs the load's rows, a WGMMA cast on the loop carry it starts.
    # The TMEM refs are fine: two layouts for one value, not SM006.
    "words_tcgen05_scale_loaded_as_wgmma_rows.mlir": ["SM001"],
    "words_tcgen05_loop_carry_cast_to_wgmma.mlir": ["SM001"],
    # A cast to a layout its value cannot be converted to (from WGMMA, from strided, and a
    # TMEM load's TCGEN05 cast to WGMMA by `layout=`: the TMEM side is fine).
    "relayout_unsupported.mlir": ["SM002"],
    "cast_strided_then_wgmma.mlir": ["SM002"],
    "pallas_wgmma_then_strided.mlir": ["SM002"],
    "pallas_tmem_load_as_wgmma.mlir": ["SM002"],
    # A reduction's result cast to, broadcast along, or reshaped as the other axis's.
    "pallas_row_sum_cast_to_columns.mlir": ["SM003"],
    "pallas_tcgen05_row_sum_cast_to_columns.mlir": ["SM003"],
    "pallas_column_max_cast_to_rows.mlir": ["SM003"],
    "fixes_row_sums_and_scaled_bf16.mlir": ["SM003"],
    "fixes_row_sums_and_scaled_f32.mlir": ["SM003"],
    "fixes_tcgen05_row_max_and_scaled_f32.mlir": ["SM003"],
    "words_softmax_max_over_columns.mlir": ["SM003"],
    "words_tcgen05_softmax_max_over_columns.mlir": ["SM003"],
    "words_row_sum_broadcast_along_columns.mlir": ["SM003"],
    "words_tcgen05_row_sum_broadcast_along_columns.mlir": ["SM003"],
    "words_bf16_min_over_columns.mlir": ["SM003"],
    "words_keepdims_min_over_columns.mlir": ["SM003"],
    "words_tcgen05_keepdims_max_over_rows.mlir": ["SM003"],
    # Registers to or from an SMEM ref whose transforms have no transfer plan for them.
    "smem_transfer_no_plan.mlir": ["SM004"],
    "pallas_epilogue_to_unswizzled_smem.mlir": ["SM004"],
    "fixes_wgmma_transposed_epilogue.mlir": ["SM004"],
    "fixes_tcgen05_transposed_epilogue.mlir": ["SM004"],
    "fixes_transposed_tile_load.mlir": ["SM004"],
    # A GMEM transfer no layout coalesces (a bf16 table's column, an fp8 accumulator).
    "fixes_bias_column_plus_wgmma.mlir": ["SM005"],
    "fixes_tcgen05_fp8_out.mlir": ["SM005"],
    # A TMEM ref declared in a layout its MMA cannot write; strided registers into TMEM.
    "pallas_tmem_acc_declared_collective.mlir": ["SM006"],
    "pallas_tmem_acc_m64_layout_not_collective.mlir": ["SM006"],
    "pallas_tmem_acc_m64_layout_on_128_rows.mlir": ["SM006"],
    "pallas_tmem_store_strided.mlir": ["SM006"],
    # A TMA offset not known to be a multiple of the tile.
    "async_load_index_not_divisible.mlir": ["SM007"],
    "dynamic_offset_not_divisible.mlir": ["SM007"],
    # A layout or tiling the shape cannot take; a 1x64 value broadcast along its unit dim
    # (no tiled layout does it; the iota's `layout=` is not the cause).
    "cast_does_not_fit.mlir": ["SM008"],
    "pallas_strided_cast_of_another_shape.mlir": ["SM008"],
    "pallas_small_tile_cast_to_wgmma.mlir": ["SM008"],
    "with_transforms_does_not_fit.mlir": ["SM008"],
    "words_iota_mask_in_row_layout.mlir": ["SM008"],
    # One ref (a wgmma's two operands, an inline_mgpu's ref passed twice) with two
    # transforms.
    "pallas_wgmma_operand_not_swizzled.mlir": ["SM009"],
    "custom_primitive_conflicting_transforms.mlir": ["SM009"],
    # A gather the rules refuse outright for its row width: no conflict (no problem of its
    # own), its code on the error. Unsupported gathers (NotImplementedError): no code.
    "gather_minor_dim.mlir": ["SM010"],
    "gather_not_2d.mlir": [],
    "gather_not_leading.mlir": [],
    # A collective and a 1-CTA MMA on one collective TMEM ref: every layout fits, JAX's
    # lowering refuses the mix; refused outright, its code on the error.
    "pallas_tmem_collective_and_single_cta_mma.mlir": ["SM011"],
}


# Refused by a rule outright, with no conflict to report as a problem.
OUTRIGHT = {"gather_minor_dim.mlir", "pallas_tmem_collective_and_single_cta_mma.mlir"}


def test_every_failing_kernel_has_its_code_pinned() -> None:
    assert sorted(KINDS) == sorted(p.name for p in UNSAT.glob("*.mlir"))


@pytest.mark.parametrize(("name", "codes"), KINDS.items(), ids=list(KINDS))
def test_each_kind_of_failure_gets_its_code(name: str, codes: list[str]) -> None:
    ran = run("infer", UNSAT / name, "--json")
    assert ran.status == 1
    document = json.loads(ran.out)
    outright = name in OUTRIGHT
    assert [problem["code"] for problem in document["problems"]] == ([] if outright else codes)
    assert document["code"] == (codes[0] if codes else None)
    # The message still starts with JAX's own sentence (an unsupported gather's is JAX's
    # NotImplementedError's); the code closes each problem, a refusal found while the
    # rules are derived as well as a conflict's.
    message = document["message"]
    assert message.startswith("Failed to infer a possible set of layouts") or not codes
    assert re.findall(r"^\s*error\[(SM\d{3})\]: ", message, re.MULTILINE) == codes
    if codes:  # (after the last problem, what smalto tried beyond it: the notes)
        diagnosis = message.rstrip()
        for note in reversed(document["notes"]):
            diagnosis = diagnosis.removesuffix(f"\n{note}").rstrip()
        assert diagnosis.splitlines()[-1].lstrip().startswith(f"error[{codes[-1]}]")


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


def test_every_code_is_produced_by_a_kernel() -> None:
    produced = {code for codes in KINDS.values() for code in codes}
    assert produced == set(CODES), f"no failing kernel gets {sorted(set(CODES) - produced)}"


# For each row of ``failure_code``'s table, a kernel it decides: the first row that holds
# of the kernel's conflict (the rows above it do not). The last row, the catch-all, decides
# a conflict of which nothing more specific holds (``test_the_last_row_holds_of_anything``).
ROW_KERNELS = {
    "a GMEM transfer with no plan": "fixes_tcgen05_fp8_out.mlir",
    "an SMEM transfer with no plan": "pallas_epilogue_to_unswizzled_smem.mlir",
    "a TMEM layout imposed": "pallas_tmem_acc_declared_collective.mlir",
    "a TMA index": "async_load_index_not_divisible.mlir",
    "a reduction's layout": "pallas_column_max_cast_to_rows.mlir",
    "only loads from TMEM meet a register layout": "words_tcgen05_scale_loaded_as_wgmma_rows.mlir",
    "registers a TMEM transfer cannot take": "pallas_tmem_store_strided.mlir",
    "a cast to a layout its value cannot be": "relayout_unsupported.mlir",
    "one SMEM ref with two sets of transforms": "custom_primitive_conflicting_transforms.mlir",
    "two layouts stated for one value": "registers_not_equal.mlir",
    "a layout the shape cannot take": "cast_does_not_fit.mlir",
}


def test_every_row_of_the_code_table_has_a_reason_and_a_kernel() -> None:
    rows = [row.reason for row in conflict_report.CODE_ROWS[:-1]]
    assert all(reason.strip() for reason in rows)
    assert [next(r for r in rows if r.startswith(start)) for start in ROW_KERNELS] == rows


@pytest.mark.parametrize(("start", "name"), ROW_KERNELS.items(), ids=list(ROW_KERNELS.values()))
def test_each_row_of_the_code_table_decides_its_kernel(
    start: str, name: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    decided: list[conflict_report.CodeRow] = []
    deciding = conflict_report.deciding_row

    def spy(*args: Any) -> conflict_report.CodeRow:
        decided.append(deciding(*args))
        return decided[-1]

    monkeypatch.setattr(conflict_report, "deciding_row", spy)
    source = read_input(str(UNSAT / name))
    with in_context(source.module), pytest.raises(InferenceError) as failed:
        smalto.infer_layout(source.module, arch=module_arch(source.module) or (9, 0))
    assert failed.value.conflict is not None
    codes = [problem.code for problem in conflict_report.problems_of(failed.value)]
    assert decided and decided[0].reason.startswith(start)
    assert codes[0] == decided[0].code == KINDS[name][0]


def test_the_last_row_holds_of_anything() -> None:
    last = conflict_report.CODE_ROWS[-1]
    assert conflict_report.deciding_row([], {}) is last and last.code == GENERIC


def test_codes_are_named_only_in_the_catalogue() -> None:
    """A code is a constant of ``smalto.basics.codes`` (``NO_SMEM_PLAN``), imported where it
    is given: no other module of the package spells one as a bare string."""
    import ast

    spelled = [
        f"{path.relative_to(ROOT)}:{node.lineno}: {node.value}"
        for path in sorted((ROOT / "smalto").rglob("*.py"))
        if path != ROOT / "smalto" / "basics" / "codes.py"
        for node in ast.walk(ast.parse(path.read_text()))
        if isinstance(node, ast.Constant)
        and isinstance(node.value, str)
        and re.fullmatch(r"SM\d{3}", node.value)
    ]
    assert not spelled, "codes spelled outside smalto/basics/codes.py:\n" + "\n".join(spelled)
