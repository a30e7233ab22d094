"""``smalto explain``: the chain of ops and requirements behind each value's layout."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import jax
import jax.numpy as jnp
import pytest
from cli_run import infer_output, run
from jax.experimental import pallas as pl
from jax.experimental.pallas import mosaic_gpu as plgpu

import smalto.jax
from smalto.basics.mlir import module_arch, parse_module
from smalto.cli.explain import explain_main
from smalto.infer import in_context, solve_module
from smalto.report.reasons import Explainer

ROOT = Path(__file__).resolve().parents[2]
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
    # Line 7 of the printed module, from line 7 of kernel.py.
    assert first.startswith("%arg4 (line 7, kernel.py:7): WGMMA because it ")
    assert "iter_args(%arg4 = %cst)" in infer_output(loop_file).splitlines()[6]
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
    printed = infer_output(FLASH).splitlines()
    # The first layout cast of the kernel: to WGMMA_ROW, for the row statistics.
    cast = next(i for i, line in enumerate(printed, 1) if "mosaic_gpu.layout_cast" in line)
    status, out, _ = _explain([str(FLASH), "%arg15", f"@{cast}"], capsys)
    assert status == 0
    found = re.search(r"accumulator of `mosaic_gpu.wgmma` at line (\d+)", out)
    assert found and "mosaic_gpu.wgmma" in printed[int(found[1]) - 1]
    loop = re.search(r"iter_arg #0 of `scf.for` at line (\d+)", out)
    assert loop and "scf.for" in printed[int(loop[1]) - 1]
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
    text = infer_output(FLASH_CORPUS)
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
        assert "vector.multi_reduction" in _line_of(text, int(found[1]))
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


# --- the printed module's names and lines (issue #19, item 2) -------------------------------

MATMUL = ROOT / "examples" / "hopper_matmul.mlir"
README = ROOT / "README.md"
HEADER = re.compile(r"^(%[\w$.\-#]+) \(line (\d+)(?:, [^)]*)?\): ")
OP_AT_LINE = re.compile(r"`([\w.]+)` at line (\d+)")


@pytest.mark.parametrize("path", [FLASH, MATMUL, FLASH_CORPUS], ids=lambda p: p.stem)
def test_every_name_and_line_is_the_printed_modules(
    path: Path, capsys: pytest.CaptureFixture
) -> None:
    """Each value `explain --all` names is defined at the line it gives in `smalto infer`'s
    output, under that name; each op it places at a line is on that line."""
    printed = infer_output(path).splitlines()
    status, out, _ = _explain([str(path), "--all"], capsys)
    assert status == 0
    named = 0
    for line in out.splitlines():
        header = HEADER.match(line)
        assert header, line
        name, number = header[1], int(header[2])
        base, _, result = name.partition("#")
        at = printed[number - 1]
        if result:  # %95#0: the op defines %95:N
            assert re.search(rf"{re.escape(base)}:\d+ = ", at), (line, at)
        else:
            assert re.search(rf"{re.escape(name)}\b", at), (line, at)
        for op, op_line in OP_AT_LINE.findall(line):
            assert op in printed[int(op_line) - 1], (line, printed[int(op_line) - 1])
        named += 1
    assert named > 20


def test_a_multi_result_op_is_found_by_its_plain_name(capsys: pytest.CaptureFixture) -> None:
    """`%159` of flash attention is a 3-result scf.for: `%159` explains each result."""
    status, out, _ = _explain([str(FLASH), "%159"], capsys)
    assert status == 0
    headers = [HEADER.match(line) for line in out.splitlines()]
    names = [h[1] for h in headers if h]
    assert names == ["%159#0", "%159#1", "%159#2"]
    assert {h[2] for h in headers if h} == {"251"}
    status, out, _ = _explain([str(FLASH), "%159#2"], capsys)
    assert status == 0 and out.startswith("%159#2 (line 251): WGMMA_ROW because")


def test_names_of_the_input_file_are_accepted(capsys: pytest.CaptureFixture) -> None:
    """The generic-form input calls the splat constant %2 and the loop %251:3; the printed
    module, %cst_1 and %159:3. Both spellings find the value, the printed one is shown."""
    source = FLASH.read_text().splitlines()
    assert any(line.strip().startswith("%251:3 = ") for line in source)
    status, out, err = _explain([str(FLASH), "%251#0"], capsys)
    assert status == 0
    assert out.startswith("%159#0 (line 251): WGMMA because")
    assert "  in the input: %251#0" in out
    # %2 is also a name of the printed module, of a value with no layout: a note says which.
    status, out, err = _explain([str(FLASH), "%2"], capsys)
    assert status == 0 and out.startswith("%cst_1 (line 8): splat")
    assert "note: %2 of" in err and "is %cst_1 (line 8) in the printed module" in err


def test_at_line_is_a_line_of_the_printed_module(capsys: pytest.CaptureFixture) -> None:
    status, out, _ = _explain([str(FLASH), "@251"], capsys)
    assert status == 0
    names = [h[1] for line in out.splitlines() if (h := HEADER.match(line))]
    assert names == ["%159#0", "%159#1", "%159#2", "%arg15", "%arg16", "%arg17"]
    status, _, err = _explain([str(FLASH), "@1"], capsys)
    assert status == 2 and "error: no value at line 1 of the printed module (in" in err
    printed = infer_output(FLASH).splitlines()
    scalar = next(
        i for i, line in enumerate(printed, 1) if re.search(r"= arith.constant \d+ : i32", line)
    )
    status, _, err = _explain([str(FLASH), f"@{scalar}"], capsys)
    assert status == 2
    assert f"no value at line {scalar} of the printed module has a layout: %c" in err
    assert "is i32" in err


def test_json(capsys: pytest.CaptureFixture) -> None:
    printed = infer_output(FLASH).splitlines()
    status, out, _ = _explain([str(FLASH), "%159", "--json"], capsys)
    assert status == 0
    document = json.loads(out)
    assert document["file"] == str(FLASH) and document["arch"] == "9.0"
    first, *_ = document["values"]
    assert first["name"] == "%159#0" and first["input_name"] == "%251#0"
    assert first["line"] == 251 and "scf.for" in printed[250]
    line = _source_line(FLASH, "%251:3 = ")
    column = FLASH.read_text().splitlines()[line - 1].index('"scf.for"') + 1
    assert first["location"] == f"{FLASH}:{line}:{column}"  # the input's own position
    assert first["type"] == "vector<64x128xf32>" and first["layout"] == "WGMMA"
    assert first["summary"].startswith("WGMMA because")
    assert first["steps"][-1].endswith("requires the accumulator to be WGMMA")
    assert first["free"] is False
    # --all as JSON: every value with a layout.
    status, out, _ = _explain([str(FLASH), "--json"], capsys)
    assert len(json.loads(out)["values"]) == out.count('"name"') > 50


def _source_line(path: Path, text: str) -> int:
    return next(i for i, line in enumerate(path.read_text().splitlines(), 1) if text in line)


def test_generic_names_and_lines_match_infer_generic(capsys: pytest.CaptureFixture) -> None:
    printed = infer_output(MATMUL, "--generic").splitlines()
    status, out, _ = _explain([str(MATMUL), "--generic", "%204"], capsys)
    assert status == 0
    header = HEADER.match(out)
    assert header and header[1] == "%204#0"
    assert printed[int(header[2]) - 1].lstrip().startswith('%204:3 = "scf.for"')


def test_the_readme_example_runs_as_written() -> None:
    """Every `$ smalto explain ...` line of the README and docs/ prints what they show next."""
    pages = [README, *sorted((ROOT / "docs").glob("*.md"))]
    text = "\n".join(page.read_text() for page in pages)
    examples = re.findall(r"^\$ (smalto explain [^\n]+)\n([^\n]+)", text, re.M)
    assert re.search(r"^\$ smalto explain ", README.read_text(), re.M), "the README shows none"
    for command, shown in examples:
        ran = run(*command.split()[1:])
        assert ran.status == 0, ran.err
        assert ran.out.splitlines()[0] == shown, command


def _gemm_bias_gelu(a: Any, b: Any, bias: Any) -> Any:
    """``gelu(a @ b + bias)`` to bf16 (Hopper, wgmma), as a Pallas user writes it: every
    value of the epilogue is the accumulator's layout because it is computed from it."""
    m, n = a.shape[0], b.shape[1]
    swizzled = (plgpu.TilingTransform((8, 64)), plgpu.SwizzleTransform(128))

    def body(a_gmem, b_gmem, bias_gmem, o_gmem, a_smem, b_smem, loaded):  # type: ignore[no-untyped-def]
        plgpu.copy_gmem_to_smem(a_gmem, a_smem, loaded)
        plgpu.copy_gmem_to_smem(b_gmem, b_smem, loaded)
        plgpu.barrier_wait(loaded)

        def mma(acc_ref):  # type: ignore[no-untyped-def]
            plgpu.wgmma(acc_ref, a_smem, b_smem)
            return acc_ref[...]

        acc = pl.run_scoped(mma, plgpu.ACC((m, n), jnp.float32))
        y = jax.nn.gelu(acc + bias_gmem[...][None, :])
        o_gmem[...] = y.astype(jnp.bfloat16)

    return plgpu.kernel(
        body,
        out_type=jax.ShapeDtypeStruct((m, n), jnp.bfloat16),
        scratch_types=[
            plgpu.SMEM(a.shape, a.dtype, transforms=swizzled),
            plgpu.SMEM(b.shape, b.dtype, transforms=swizzled),
            plgpu.Barrier(num_arrivals=2),
        ],
        compiler_params=plgpu.CompilerParams(lowering_semantics=plgpu.LoweringSemantics.Warpgroup),
    )(a, b, bias)


def test_values_computed_from_an_accumulator_are_its_layout_because_of_it(
    tmp_path: Path, capsys: pytest.CaptureFixture
) -> None:
    """Equality followed: the search decided each value of the epilogue, yet each is the
    accumulator's layout because it is computed from it (or added to what is), and the
    chain names every op on the way back to the wgmma."""
    sds = jax.ShapeDtypeStruct
    (captured,) = smalto.jax.capture(
        _gemm_bias_gelu,
        sds((64, 64), jnp.float16),
        sds((64, 128), jnp.float16),
        sds((128,), jnp.float32),
    )
    path = tmp_path / "gemm_bias_gelu.mlir"
    path.write_text(captured.text)
    status, out, _ = _explain([str(path)], capsys)
    assert status == 0
    epilogue = [
        line
        for line in out.splitlines()
        if re.match(r"%\S+ \(.*\): WGMMA ", line) and "requires it" not in line
    ]
    assert len(epilogue) >= 10, out
    for line in epilogue:
        assert "free" not in line, line
        assert re.search(
            r"because it (comes from|is tied to|flows into) the accumulator of `mosaic_gpu.wgmma`",
            line,
        ), line
    # The last value of the chain: every op between it and the wgmma, one step each.
    last = epilogue[-1].split()[0]
    status, out, _ = _explain([str(path), last], capsys)
    steps = [line for line in out.splitlines() if re.match(r"  \d+\. ", line)]
    assert len(steps) >= 3 and "requires the accumulator to be WGMMA" in steps[-1], out
    assert all("keeps the layout of" in step for step in steps[:-1]), out
