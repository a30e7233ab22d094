"""A failure message in the kernel's own words, at the kernel's own lines (issue #33, 4-7).

The kernels of ``tests/unsat/kernels_words.py`` are written as Pallas users
write them: a ``plgpu.load``/``plgpu.broadcasted_iota`` given the wrong
``layout=``, or a reduction over the wrong axis of a square WGMMA or TCGEN05
tile (``s.max(axis=0)`` then ``s - m[:, None]``). Each is lowered the way
Pallas users lower kernels, with smalto as the pass (``smalto.jax.lower``), and
every fix the message prints is pasted, as printed, into a copy of the
kernel's source, which must then lower through JAX's Mosaic GPU dialect
lowering with smalto as the pass.
"""

from __future__ import annotations

import importlib.util
import re
import sys
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest

import smalto
import smalto.jax
from smalto.constraints.conflict_report import CHOICES
from smalto.diagnose.jax_phrases import UNSATISFIABLE

UNSAT = Path(__file__).parents[1] / "unsat"
SOURCE = UNSAT / "kernels_words.py"
sys.path.insert(0, str(UNSAT))
import kernels_words  # noqa: E402  (tests/unsat/kernels_words.py: the Pallas kernels)

LAYOUT_WRITTEN = ["bias_loaded_as_rows", "iota_in_row_layout", "tcgen05_bias_loaded_as_rows"]
# What is wrong, said as the author thinks of it, right after JAX's phrase.
WRONG_AXIS = {
    "softmax_max_over_columns": "`s.max(axis=0)` gives one value per column (WGMMA_COL); "
    "`m[:, None]` broadcasts it along rows, which needs one value per row (WGMMA_ROW, a "
    "reduction over axis 1)",
    "row_sum_broadcast_along_columns": "`jnp.sum(s, axis=1)` gives one value per row "
    "(WGMMA_ROW); `total[None, :]` broadcasts it along columns, which needs one value per "
    "column (WGMMA_COL, a reduction over axis 0)",
    "keepdims_min_over_columns": "`jnp.min(s, axis=0, keepdims=True)` gives one value per "
    "column (WGMMA_COL); `low.reshape(-1, 1)` broadcasts it along rows, which needs one "
    "value per row (WGMMA_ROW, a reduction over axis 1)",
    "tcgen05_softmax_max_over_columns": "`jnp.max(s, axis=0)` gives one value per column "
    "(TCGEN05_COL); `m[:, None]` broadcasts it along rows, which needs one value per row "
    "(TCGEN05_ROW, a reduction over axis 1)",
    "bf16_min_over_columns": "`s.min(axis=0)` gives one value per column (WGMMA_COL); "
    "`lo[:, None]` broadcasts it along rows, which needs one value per row (WGMMA_ROW, a "
    "reduction over axis 1)",
    "tcgen05_keepdims_max_over_rows": "`jnp.max(s, axis=1, keepdims=True)` gives one value "
    "per row (TCGEN05_ROW); `m.reshape(1, -1)` broadcasts it along columns, which needs one "
    "value per column (TCGEN05_COL, a reduction over axis 0)",
    "tcgen05_row_sum_broadcast_along_columns": "`s.sum(axis=1)` gives one value per row "
    "(TCGEN05_ROW); `total[None, :]` broadcasts it along columns, which needs one value "
    "per column (TCGEN05_COL, a reduction over axis 0)",
}
# The reduction over the other axis, as printed (the statement, edited).
AXIS_FIXES = {
    "softmax_max_over_columns": "m = s.max(axis=1)",
    "row_sum_broadcast_along_columns": "total = jnp.sum(s, axis=0)",
    "keepdims_min_over_columns": "low = jnp.min(s, axis=1, keepdims=True)",
    "tcgen05_softmax_max_over_columns": "m = jnp.max(s, axis=1)",
    "tcgen05_row_sum_broadcast_along_columns": "total = s.sum(axis=0)",
    "bf16_min_over_columns": "lo = s.min(axis=1)",
    "tcgen05_keepdims_max_over_rows": "m = jnp.max(s, axis=0, keepdims=True)",
}
# Python reprs of JAX's layout types: never in a first line.
REPRS = ("TMEMLayout(", "TiledLayout(", "WGStridedFragLayout(", "WGSplatFragLayout(", "Tiling(")


def refusal(module: ModuleType, name: str) -> smalto.InferenceError:
    """smalto's error for kernel ``name`` of ``module``, lowered as Pallas users lower it."""
    fn, args, arch = module.KERNELS[name]
    with pytest.raises(smalto.jax.KernelLoweringError) as failed:
        smalto.jax.lower(fn, *args, arch=arch, by="smalto")
    error = failed.value.__cause__
    assert isinstance(error, smalto.InferenceError), failed.value
    return error


@pytest.fixture(scope="module")
def failures() -> dict[str, smalto.InferenceError]:
    found = {}
    for name in kernels_words.KERNELS:
        error = refusal(kernels_words, name)
        str(error)  # the diagnosis is made when first read
        found[name] = error
    return found


# --- pasting a printed fix ---------------------------------------------------------------------

_COUNT = iter(range(1_000_000))


def printed_fixes(error: smalto.InferenceError) -> list[tuple[str, int, str]]:
    """Each fix (and a suggestion) the message prints for a line of the kernel: (the fix
    line, the kernel line it names, the code it quotes last, before what verified it)."""
    found = []
    choosing = False  # within the changes offered as choices (``CHOICES``)
    for line in str(error).splitlines():
        choosing = line == CHOICES or (choosing and line.startswith("  "))
        choice = choosing and line.startswith("  - ")
        if not choice and not line.startswith(("fix: ", "  or: ", "suggestion: ")):
            continue
        where = re.search(r"kernels_words\.py:(\d+):\d+", line)
        said = re.split(r" \((?:verified|needs)", line)[0]
        code = re.search(r": `([^`]*)`$", said)
        if where is None:
            continue
        assert code is not None, line  # a fix at a kernel line quotes the line as edited
        found.append((line, int(where.group(1)), code.group(1)))
    return found


def pasted(line: int, code: str) -> ModuleType:
    """kernels_words.py with the statement at ``line`` replaced by ``code`` (as printed,
    on one line, at the statement's indentation), imported afresh."""
    lines = SOURCE.read_text().splitlines()
    first = lines[line - 1]
    indent = first[: len(first) - len(first.lstrip())]
    end = line
    while end <= len(lines):  # the statement's last line: the first prefix that compiles
        try:
            # (In a function: a ``return`` statement is one to paste too.)
            body = "".join(f"\n    {x.strip()}" for x in lines[line - 1 : end])
            compile(f"def _statement():{body}", "<s>", "exec")
            break
        except SyntaxError:
            assert end < len(lines), f"no statement at line {line}"
            end += 1
    edited = [*lines[: line - 1], indent + code, *lines[end:]]
    path = Path(kernels_words.__file__).with_name(f"_pasted_{next(_COUNT)}.py")
    path.write_text("\n".join(edited) + "\n")
    try:
        spec = importlib.util.spec_from_file_location(path.stem, path)
        assert spec is not None and spec.loader is not None
        module = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(module)
    finally:
        path.unlink()
    return module


def lowers(module: ModuleType, name: str) -> Any:
    fn, args, arch = module.KERNELS[name]
    lowering = smalto.jax.lower(fn, *args, arch=arch, by="smalto")
    assert lowering.lowered.as_text().count("stablehlo.custom_call @mosaic_gpu_v2") == 1
    return lowering


@pytest.mark.parametrize("name", sorted(kernels_words.KERNELS))
def test_every_printed_fix_lowers_when_pasted_as_printed(name: str, failures: dict) -> None:
    error = failures[name]
    fixes = printed_fixes(error)
    # (The mask broadcast by ``jnp.where`` is a second problem no single edit fixes.)
    assert fixes or name == "iota_mask_in_row_layout", str(error)
    for line, number, code in fixes:
        assert lowers(pasted(number, code), name), line


# --- 4. a layout= fixed where it is written, in the kernel's spelling --------------------------


@pytest.mark.parametrize("name", LAYOUT_WRITTEN)
def test_a_layout_keyword_is_fixed_in_its_own_call(name: str, failures: dict) -> None:
    error = failures[name]
    message = str(error)
    assert "layout_cast(x" not in message  # no placeholder, no call the kernel has not
    fix = message.splitlines()[1]
    call = "plgpu.broadcasted_iota" if "iota" in name else "plgpu.load"
    assert fix.startswith(f"fix: change the layout `{call}` states at ")
    edit = error.conflict.edits[0]
    assert (
        f"layout=plgpu.Layout.{'TCGEN05' if 'tcgen05' in name else 'WGMMA'}"
        in (message.splitlines()[2])
    )
    # The whole statement, its assignment kept, in the kernel's own names.
    assert edit.pallas.startswith(("bias = plgpu.load(bias_ref, layout=", "cols = plgpu."))
    assert edit.pallas.endswith("layout=plgpu.Layout.WGMMA.reduce(0))")
    assert f"`{edit.pallas}`" in fix


@pytest.mark.parametrize("name", LAYOUT_WRITTEN)
def test_an_edit_carries_the_lines_it_changes(name: str, failures: dict) -> None:
    """File, line, the lines as they read and as they become: what a tool needs to apply it
    (and applying it, the kernel lowers)."""
    source = SOURCE.read_text().splitlines()
    for edit in failures[name].conflict.edits:
        (change,) = edit.changes
        assert Path(change.file).resolve() == SOURCE.resolve()
        old = change.old.split("\n")
        assert source[change.line - 1 : change.line - 1 + len(old)] == old
        assert change.new != change.old
        edited = [
            *source[: change.line - 1],
            *change.new.split("\n"),
            *source[change.line - 1 + len(old) :],
        ]
        assert "plgpu.layout_cast" not in change.new
        compile("\n".join(edited), "kernels_words.py", "exec")


def test_a_retarget_of_a_cast_quotes_the_kernel_s_own_operand() -> None:
    """The existing cast kernels: ``plgpu.layout_cast(s, ...)`` as the kernel has it, the
    assignment kept, never a placeholder ``x``."""
    import kernels

    error = refusal(kernels, "row_sum_cast_to_columns")
    message = str(error)
    assert "layout_cast(x," not in message
    assert (
        "from WGMMA_COL to WGMMA_ROW: "
        "`out_gmem[...] = plgpu.layout_cast(s, plgpu.Layout.WGMMA.reduce(1))`"
    ) in message.splitlines()[1]
    # Removing the cast: the line as it then reads.
    assert "remove the layout cast to WGMMA_COL at " in message
    assert "kernels.py:52:24: `out_gmem[...] = s`" in message


# --- 5. a reduction over the wrong axis ---------------------------------------------------------


@pytest.mark.parametrize("name", sorted(WRONG_AXIS))
def test_a_reduction_over_the_wrong_axis_is_said_in_axes(name: str, failures: dict) -> None:
    error = failures[name]
    lines = str(error).splitlines()
    assert lines[0] == UNSATISFIABLE  # JAX's phrase, as JAX's pass says it
    assert lines[1] == f"what is wrong: {WRONG_AXIS[name]}"
    assert any(f"`{AXIS_FIXES[name]}`" in line for line in lines[2:4]), lines[:4]


# (With keep-dims and a reshape between, the module edit is not the source edit.)
KEEPDIMS = {"keepdims_min_over_columns", "tcgen05_keepdims_max_over_rows"}


# The broadcast along the axis the values run, as printed (the statement, edited).
BROADCAST_FIXES = {
    "softmax_max_over_columns": "return jnp.exp(s - m[None, :])",
    "row_sum_broadcast_along_columns": "return s / total[:, None]",
    "tcgen05_softmax_max_over_columns": "return jnp.exp(s - m[None, :])",
    "tcgen05_row_sum_broadcast_along_columns": "return s / total[:, None]",
    "bf16_min_over_columns": "return s - lo[None, :]",
}


@pytest.mark.parametrize("name", sorted(set(WRONG_AXIS) - KEEPDIMS))
def test_the_other_axis_and_the_other_broadcast_are_choices_never_fixes(
    name: str, failures: dict
) -> None:
    """A reduction and a broadcast that disagree look like a bug: both changes the author
    may have meant are offered, each verified, each changing what the kernel computes
    (never ``fix:``, never made by a tool)."""
    error = failures[name]
    lines = str(error).splitlines()
    assert not any(line.startswith("fix: ") for line in lines), lines
    assert lines[2] == CHOICES
    assert lines[3].startswith("  - reduce over axis ")
    assert "(verified: smalto infers the kernel with it" in lines[3]  # (pasted, it lowers)
    axis, *others = [e for e in error.conflict.edits if e.changes_meaning]
    assert axis.kind == "axis" and axis.pallas == AXIS_FIXES[name]
    (change,) = axis.changes
    assert change.new.strip() == AXIS_FIXES[name]
    assert [e.pallas for e in others] == [p for p in [BROADCAST_FIXES[name]] if p]
    assert all(e.kind == "broadcast" for e in others)
    # Nor does a note then say that no edit helps.
    assert "no single edit" not in str(error) and "no edit of one" not in str(error)


def test_a_keepdims_reduction_gets_the_axis_as_a_suggestion(failures: dict) -> None:
    """With keep-dims and a reshape between, the module edit is not the source edit: the
    other axis is suggested, not claimed verified (pasted, it lowers: see above)."""
    error = failures["keepdims_min_over_columns"]
    lines = str(error).splitlines()
    line = kernels_words.keepdims_min_over_columns.__code__.co_firstlineno + 5
    assert lines[2] == (
        f"suggestion: reduce over axis 1 at {SOURCE}:{line}:14: "
        "`low = jnp.min(s, axis=1, keepdims=True)`"
    )
    assert "verified" not in lines[2]


# --- 6. the first line ----------------------------------------------------------------------


@pytest.mark.parametrize("name", sorted(kernels_words.KERNELS))
def test_the_first_line_is_jax_s_phrase_with_layouts_by_name(name: str, failures: dict) -> None:
    error = failures[name]
    first = str(error).splitlines()[0]
    assert first == error.phrase and first.startswith(smalto.FAILURE_PREFIX)
    for repr_ in REPRS:
        assert repr_ not in first


@pytest.mark.parametrize("name", sorted(WRONG_AXIS))
def test_where_jax_blames_casts_the_kernel_lacks_the_next_line_says_what_is_wrong(
    name: str, failures: dict
) -> None:
    error = failures[name]
    assert error.phrase == UNSATISFIABLE
    assert str(error).splitlines()[1].startswith("what is wrong: ")


@pytest.mark.parametrize("name", LAYOUT_WRITTEN)
def test_a_kernel_with_a_layout_of_its_own_leads_with_the_fix(name: str, failures: dict) -> None:
    """JAX's phrase blames a layout the kernel states (``layout=``): the fix is next."""
    assert str(failures[name]).splitlines()[1].startswith("fix: ")


# --- 7. where ---------------------------------------------------------------------------------


@pytest.mark.parametrize("name", sorted(kernels_words.KERNELS))
def test_every_op_is_placed_at_a_kernel_line(name: str, failures: dict) -> None:
    message = str(failures[name])
    for at in re.findall(r"` at ([^\s,;)]+)", message):
        assert re.fullmatch(r".*\.py:\d+:\d+:?", at), (at, message)
    for requirement in failures[name].conflict.requirements:
        assert re.fullmatch(r".*\.py:\d+:\d+", requirement.location), requirement


def test_an_op_jax_makes_without_a_line_is_placed_at_the_line_that_uses_it(
    failures: dict,
) -> None:
    """``jnp.where(cols[None, :] < 100, acc, 0.0)`` broadcasts the mask with an op JAX
    locates nowhere: it is placed at the ``jnp.where`` line, not "at broadcast_in_dim"."""
    message = str(failures["iota_mask_in_row_layout"])
    assert "at broadcast_in_dim" not in message
    line = kernels_words.iota_mask_in_row_layout.__code__.co_firstlineno + 6
    assert "jnp.where(cols[None, :] < 100" in SOURCE.read_text().splitlines()[line - 1]
    assert f"`mosaic_gpu.broadcast_in_dim` at {SOURCE}:{line}:" in message


@pytest.mark.parametrize("name", sorted(kernels_words.KERNELS))
def test_no_message_points_up_to_requirements_listed_below(name: str, failures: dict) -> None:
    assert "requirements above" not in str(failures[name])


@pytest.mark.parametrize("name", sorted(kernels_words.KERNELS))
def test_on_the_pallas_route_the_traceback_ends_at_the_kernel_s_line(name: str) -> None:
    """JAX's phrase blames no op and its propagation meets no contradiction here: the
    traceback still ends at a line of the kernel (the reduction, the ``layout=``), not in
    smalto's pass."""
    import traceback

    error = refusal(kernels_words, name)
    last = traceback.extract_tb(error.__traceback__)[-1]
    assert Path(last.filename).resolve() == SOURCE.resolve(), last
    # The statement there (a call may spread over lines).
    line = " ".join(SOURCE.read_text().splitlines()[last.lineno - 1 : last.lineno + 2])
    if name in WRONG_AXIS:
        assert "axis=" in line, line  # the reduction over the wrong axis
    elif name in LAYOUT_WRITTEN:
        assert "layout=" in line, line


# --- explain: a value computed from the accumulator is not "free" -----------------------------

CORPUS = Path(__file__).parents[1] / "corpus"


@pytest.mark.parametrize(
    ("kernel", "value", "because"),
    [
        # Pallas' sliced accumulator (JAX's own test kernel): the zeros it starts from take
        # the layout of the wgmma accumulator they are handed to.
        (
            "pallas_tests/PallasCallSm90AWGTest.test_wgmma_sliced_acc_flip.mlir",
            "%66",
            "the accumulator of `mosaic_gpu.wgmma`",
        ),
        # A Blackwell matmul's epilogue: the accumulator loaded from TMEM.
        (
            "kernels/blackwell_matmul_t128x128x64_s4.mlir",
            "%157",
            "loads it from TMEM in its default layout",
        ),
    ],
)
def test_explain_says_a_value_computed_from_the_accumulator_is_not_free(
    kernel: str, value: str, because: str, capsys: pytest.CaptureFixture
) -> None:
    import json

    from smalto.cli.explain import explain_main

    assert explain_main(["--json", str(CORPUS / kernel), value]) == 0
    (explained,) = json.loads(capsys.readouterr().out)["values"]
    assert explained["free"] is False, explained
    assert "free" not in explained["summary"] and because in explained["summary"]


def test_the_report_page_s_edit_keeps_the_assignment(tmp_path: Path) -> None:
    """The failure page shows each verified edit as the line reads before and after: the
    whole statement, ``bias =`` kept."""
    import html

    from smalto.cli.main import main

    page = tmp_path / "page.html"
    status = main(["infer", "--report", str(page), str(UNSAT / "words_bias_loaded_as_rows.mlir")])
    assert status == 1
    text = html.unescape(page.read_text())
    after = "→ <code>bias = plgpu.load(bias_ref, layout=plgpu.Layout.WGMMA.reduce(0))</code>"
    assert after in text
