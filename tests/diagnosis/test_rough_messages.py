"""The last rough messages, as a new user meets them (issue #43, point 4).

- Blackwell kernels whose TMEM refs are fine get the code of what is wrong (two
  layouts for one value), not SM006;
- a collective and a 1-CTA MMA on one TMEM ref: a diagnosed refusal with a line and
  a code, the same from ``smalto infer`` and ``smalto capture``, and the checker
  rejects JAX's answer for it;
- the traceback ends at the line the first fix names (and, before the message is
  read, at a kernel line: a GMEM column's load);
- ``smalto explain`` does not call a value handed to the wgmma accumulator free;
- the failure page draws the clash of a ``layout=`` against the broadcast that needs
  the other axis's layout.

(The first line in smalto's words, and a strided layout's own shape in the ``why:``,
are in ``test_error_phrases.py``; the codes of every failing kernel in ``test_codes.py``.)
"""

from __future__ import annotations

import html
import json
import re
import sys
import traceback
from pathlib import Path
from typing import Any

import jax
import jax.numpy as jnp
import pytest
import reference
from cli_run import run
from jax._src.lib.mlir import ir
from jax.experimental.mosaic.gpu import layout_inference
from jax.experimental.pallas import mosaic_gpu as plgpu

import smalto
import smalto.jax
from smalto.check import check
from smalto.jax.capture import lower_for_cuda
from smalto.jax.hooks import forced_arch

UNSAT = Path(__file__).parents[1] / "unsat"
sys.path.insert(0, str(UNSAT))
import kernels  # noqa: E402  (tests/unsat/kernels.py: the Pallas kernels)
import kernels_words  # noqa: E402

WARPGROUP = plgpu.CompilerParams(lowering_semantics=plgpu.LoweringSemantics.Warpgroup)
COLLECTIVE = "pallas_tmem_collective_and_single_cta_mma.mlir"


# --- SM001, not SM006, where the TMEM ref is fine ---------------------------------------------


@pytest.mark.parametrize(
    "name", ["tcgen05_scale_loaded_as_wgmma_rows", "tcgen05_loop_carry_cast_to_wgmma"]
)
def test_a_tmem_load_against_a_layout_stated_elsewhere_is_two_layouts(name: str) -> None:
    ran = run("infer", UNSAT / f"words_{name}.mlir", "--json")
    assert ran.status == 1
    document = json.loads(ran.out)
    assert [problem["code"] for problem in document["problems"]] == ["SM001"]
    message = document["message"]
    assert "error[SM006]" not in message and "error[SM001]" in message
    # The fix is the layout stated elsewhere, made the load's (or dropped).
    assert "to TCGEN05" in message.split("\nwhy:", 1)[0]


# --- a collective and a 1-CTA MMA on one TMEM ref ---------------------------------------------


def test_mixed_collective_mmas_are_a_diagnosed_refusal_with_a_line_and_a_code() -> None:
    ran = run("infer", UNSAT / COLLECTIVE, "--json")
    assert ran.status == 1, ran.out
    document = json.loads(ran.out)
    assert document["ok"] is False and document["code"] == "SM011"
    message = document["message"]
    first = message.splitlines()[0]
    assert first.startswith(smalto.FAILURE_PREFIX)
    # JAX's lowering's own sentence, then which ops, at the kernel's lines.
    assert "Collective attributes are inconsistent across operations in the kernel." in first
    assert re.search(r"`mosaic_gpu.tcgen05_mma` at kernels\.py:\d+:\d+ is 1-CTA", first)
    assert message.rstrip().splitlines()[-1].startswith("error[SM011]")
    # No verified fix exists (either edit changes what an MMA computes, across two CTAs
    # the evaluator does not run): one line says so, at the 1-CTA MMA's line.
    assert "\nfix:" not in message
    (note,) = [line for line in message.splitlines() if line.startswith("note: no fix")]
    assert re.match(
        r"note: no fix is offered at `mosaic_gpu.tcgen05_mma` at kernels\.py:\d+:\d+: making "
        r"it collective .* changes what the MMAs compute",
        note,
    ), note
    assert "cannot verify" in note
    plain = run("infer", UNSAT / COLLECTIVE)
    assert plain.status == 1 and "error[SM011]" in plain.err and "Traceback" not in plain.err


def test_the_traceback_of_mixed_collective_mmas_ends_at_the_1_cta_mma() -> None:
    fn, args, arch = kernels.KERNELS["tmem_collective_and_single_cta_mma"]
    with pytest.raises(smalto.jax.KernelLoweringError) as failed:
        smalto.jax.lower(fn, *args, arch=arch, by="smalto")
    error = failed.value.__cause__
    assert isinstance(error, smalto.InferenceError) and error.code == "SM011"
    last = traceback.extract_tb(error.__traceback__)[-1]
    assert Path(last.filename).name == "kernels.py"
    assert "accumulate=True" in Path(kernels.__file__).read_text().splitlines()[last.lineno - 1]


def test_the_checker_rejects_jax_s_answer_for_mixed_collective_mmas() -> None:
    """JAX's pass answers (its lowering then refuses): the checker says why."""
    ctx = reference.make_context()
    module = reference.parse((UNSAT / COLLECTIVE).read_text(), ctx)
    with ctx, ir.Location.unknown():
        layout_inference.infer_layout(module)
    violations = check(module, (10, 0))
    assert [v.op for v in violations] == ["mosaic_gpu.tcgen05_mma"]
    assert "does not mix collective and 1-CTA" in violations[0].message


def test_capture_says_what_infer_says_of_mixed_collective_mmas(tmp_path: Path) -> None:
    ran = run(
        "capture",
        f"{kernels.__file__}:tmem_collective_and_single_cta_mma",
        "--arch",
        "10.0",
        "--arg",
        "f16[128,64]",
        "--arg",
        "f16[64,128]",
        "--arg",
        "f16[64,256]",
        "-o",
        tmp_path,
    )
    assert ran.status == 0, ran.err
    (captured,) = tmp_path.glob("*.mlir")
    # No promise of edits that do not exist: what infer says, with the code.
    assert "smalto's layout inference found no layouts" in ran.err
    assert "Collective attributes are inconsistent" in ran.err
    assert "`smalto explain SM011`" in ran.err and "applies the verified fix" not in ran.err
    inferred = run("infer", captured, "--json")
    assert inferred.status == 1 and json.loads(inferred.out)["code"] == "SM011"


# --- the traceback ends at the line the fix names ---------------------------------------------


def _fix_line(message: str) -> tuple[str, int] | None:
    found = re.search(r"^\s*fix: .*? at (\S+?\.py):(\d+):\d+", message, re.MULTILINE)
    return (Path(found.group(1)).name, int(found.group(2))) if found else None


@pytest.mark.parametrize(
    ("module", "name"),
    [
        # The search meets these conflicts at another op than the cast to change.
        (kernels, "strided_loop_carry"),
        (kernels, "tmem_store_strided"),
        (kernels_words, "tcgen05_loop_carry_cast_to_wgmma"),
        # ... and these where the cast is.
        (kernels, "row_sum_cast_to_columns"),
        (kernels_words, "bias_loaded_as_rows"),
    ],
)
def test_once_read_the_traceback_ends_at_the_line_the_fix_names(module: Any, name: str) -> None:
    fn, args, arch = module.KERNELS[name]
    with pytest.raises(smalto.jax.KernelLoweringError) as failed:
        smalto.jax.lower(fn, *args, arch=arch, by="smalto")
    error = failed.value.__cause__
    assert isinstance(error, smalto.InferenceError)
    fixed_at = _fix_line(str(error))
    assert fixed_at is not None, str(error)
    frames = traceback.extract_tb(error.__traceback__)
    assert (Path(frames[-1].filename).name, frames[-1].lineno) == fixed_at
    # The frames it unwound through are kept before it.
    assert any(Path(frame.filename).name == "lowering.py" for frame in frames)


def scaled_by_a_table_column(x: jax.Array, w: jax.Array) -> jax.Array:
    """Each row of ``x`` scaled by an element of a column of the table ``w`` in GMEM."""

    def body(x_ref, w_ref, out_ref):
        out_ref[...] = x_ref[...] * w_ref[:, 1][:, None]

    return plgpu.kernel(
        body, out_type=jax.ShapeDtypeStruct(x.shape, jnp.float32), compiler_params=WARPGROUP
    )(x, w)


COLUMN_ARGS = (
    jax.ShapeDtypeStruct((128, 128), jnp.float32),
    jax.ShapeDtypeStruct((128, 4), jnp.float32),
)
COLUMN_LINE = scaled_by_a_table_column.__code__.co_firstlineno + 4


def test_a_gmem_column_s_traceback_ends_at_its_load_even_unread() -> None:
    """On the Pallas route, as the error unwinds (its message not read yet), the traceback
    ends at the kernel's line that loads the column, not in smalto's pass."""
    with forced_arch((9, 0)), pytest.raises(Exception) as raised:  # noqa: PT011
        with smalto.jax.enabled():
            lower_for_cuda(scaled_by_a_table_column, COLUMN_ARGS)
    error: BaseException | None = raised.value
    while error is not None and not isinstance(error, smalto.InferenceError):
        error = error.__cause__
    assert isinstance(error, smalto.InferenceError)
    assert not error.diagnosed
    last = traceback.extract_tb(error.__traceback__)[-1]
    assert (Path(last.filename).name, last.lineno) == (Path(__file__).name, COLUMN_LINE)
    assert "w_ref[:, 1]" in Path(__file__).read_text().splitlines()[COLUMN_LINE - 1]
    # Read, the message's fix names that line too.
    assert _fix_line(str(error)) == (Path(__file__).name, COLUMN_LINE)
    last = traceback.extract_tb(error.__traceback__)[-1]
    assert (Path(last.filename).name, last.lineno) == (Path(__file__).name, COLUMN_LINE)


# --- explain: a value handed to the wgmma accumulator is not free ------------------------------


def test_explain_follows_the_complete_search_to_the_accumulator(
    capsys: pytest.CaptureFixture,
) -> None:
    """The kernel as written has no layouts that lower: the complete search decides them
    (with the fewest transfers unoptimized), and the zeros the wgmma accumulates into take
    the accumulator's layout, whichever search decided it."""
    from smalto.cli.explain import explain_main

    path = UNSAT / "fixes_wgmma_transposed_epilogue.mlir"
    assert explain_main(["--json", "--allow-unoptimized", str(path), "%65"]) == 0
    (explained,) = json.loads(capsys.readouterr().out)["values"]
    assert explained["free"] is False, explained
    assert "picked by the search" not in explained["summary"]
    assert "the accumulator of `mosaic_gpu.wgmma`" in explained["summary"]


# --- the failure page draws a plain clash -----------------------------------------------------


@pytest.mark.parametrize(
    ("name", "layouts"),
    [
        ("bias_loaded_as_rows", ("WGMMA_ROW", "WGMMA_COL")),
        ("tcgen05_bias_loaded_as_rows", ("TCGEN05_ROW", "WGMMA_COL")),
        ("tcgen05_scale_loaded_as_wgmma_rows", ("WGMMA_ROW", "TCGEN05_ROW")),
    ],
)
def test_the_page_draws_a_layout_keyword_against_the_broadcast(
    tmp_path: Path, name: str, layouts: tuple[str, str]
) -> None:
    """The value loaded with ``layout=`` of one axis's layout, next to itself in the layout
    the broadcast of it needs (the other axis's)."""
    page = tmp_path / "page.html"
    assert run("infer", "--report", page, UNSAT / f"words_{name}.mlir").status == 1
    text = html.unescape(page.read_text())
    pictures = re.findall(r'<img src="data:image/png;base64,[^"]+" alt="([^"]*)"', text)
    assert pictures, "no picture of the clash"
    sides = re.findall(r"(%\w+) as ([\w ×.()]+?)(?:, next to |$)", pictures[0])
    assert len(sides) == 2 and sides[0][0] == sides[1][0], pictures[0]
    assert {layout for _, layout in sides} == set(layouts)
