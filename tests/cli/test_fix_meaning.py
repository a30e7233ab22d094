"""What ``smalto fix`` proves before it writes: an edit keeps what the kernel computes when
JAX's trace of the edited function equals the original's, layouts, transforms and the
``optimized`` flag set aside (``smalto.jax.meaning``). The kernel's own names for
layouts never make it refuse (an alias, an imported name, a constant of another module,
a byte order mark); two swapped arguments never pass. A reduction and a broadcast that
disagree are the author's to settle: both changes are offered, verified, and none is
made."""

from __future__ import annotations

import runpy
import shutil
import sys
from collections.abc import Iterator
from pathlib import Path

import jax
import jax.numpy as jnp
import pytest
from cli_run import run

import smalto.jax
from smalto.jax.meaning import meaning_of
from smalto.source.fix_edits import MAYBE_INCORRECT, apply_parts

KERNELS = Path(__file__).resolve().parents[1] / "fix_kernels"
ROWS = (jax.ShapeDtypeStruct((128, 128), jnp.float32),)
SQUARE = (jax.ShapeDtypeStruct((64, 64), jnp.float16),) * 2


@pytest.fixture
def folder(tmp_path: Path) -> Iterator[Path]:
    """A folder for edited copies of kernels, beside the layouts module they may import."""
    shutil.copy(KERNELS / "row_layouts.py", tmp_path / "row_layouts.py")
    sys.path.insert(0, str(tmp_path))
    try:
        yield tmp_path
    finally:
        sys.path.remove(str(tmp_path))
        sys.modules.pop("row_layouts", None)


def _meaning(folder: Path, name: str, text: str, function: str, args: tuple) -> object:
    path = folder / name
    path.write_text(text, encoding="utf-8")
    return meaning_of(runpy.run_path(str(path))[function], args)


ROW_SUM = (KERNELS / "hopper_row_sum.py").read_text()


@pytest.mark.parametrize(
    ("old", "new"),
    [
        # The layout retargeted: what the fix does.
        ("plgpu.Layout.WGMMA.reduce(0)", "plgpu.Layout.WGMMA.reduce(1)"),
        # The cast removed: a layout cast is the identity on values.
        ("plgpu.layout_cast(s, plgpu.Layout.WGMMA.reduce(0))", "s"),
        # Through an alias, an imported name, a constant of another module.
        (
            "def row_sums(x):",
            "WGMMA = plgpu.Layout.WGMMA\n\n\ndef row_sums(x):",
        ),
        (
            "plgpu.Layout.WGMMA.reduce(0)",
            "Layout.WGMMA.reduce(1)",
        ),
        ("plgpu.Layout.WGMMA.reduce(0))", "SUMS)"),
        # A byte order mark before the file.
        ('"""Hopper', '\ufeff"""Hopper'),
    ],
)
def test_layouts_however_named_keep_the_meaning(folder: Path, old: str, new: str) -> None:
    edited = ROW_SUM.replace(old, new)
    edited = edited.replace(
        "from jax.experimental.pallas import mosaic_gpu as plgpu\n",
        "from jax.experimental.pallas import mosaic_gpu as plgpu\n"
        "from jax.experimental.pallas.mosaic_gpu import Layout\n"
        "from row_layouts import SUMS\n",
    )
    if "WGMMA = " in edited:
        edited = edited.replace("plgpu.Layout.WGMMA)", "WGMMA)").replace(
            "plgpu.Layout.WGMMA.reduce(0)", "WGMMA.reduce(1)"
        )
    assert edited != ROW_SUM
    before = _meaning(folder, "before.py", ROW_SUM, "row_sums", ROWS)
    assert _meaning(folder, "after.py", edited, "row_sums", ROWS) == before


@pytest.mark.parametrize(
    ("old", "new"),
    [
        ("jnp.sum(x, axis=1)", "jnp.sum(x, axis=0)"),  # another axis
        ("jnp.sum(x, axis=1)", "jnp.sum(x.astype(jnp.bfloat16), axis=1).astype(jnp.float32)"),
        ("jnp.sum(x, axis=1)", "jnp.max(x, axis=1)"),  # another op
        ("jnp.sum(x, axis=1)", "jnp.sum(x[:, ::-1], axis=1)"),  # the same words, reordered
    ],
)
def test_what_the_kernel_computes_is_never_set_aside(folder: Path, old: str, new: str) -> None:
    before = _meaning(folder, "before.py", ROW_SUM, "row_sums", ROWS)
    edited = ROW_SUM.replace(old, new)
    assert _meaning(folder, "after.py", edited, "row_sums", ROWS) != before


SUBTRACT = """\
import jax
from jax.experimental.pallas import mosaic_gpu as plgpu


def subtract(x, y):
    def body(x_gmem, y_gmem, o_gmem):
        o_gmem[...] = plgpu.layout_cast(x_gmem[...], plgpu.Layout.WGMMA) - y_gmem[...]

    return plgpu.kernel(
        body,
        out_type=jax.ShapeDtypeStruct(x.shape, x.dtype),
        compiler_params=plgpu.CompilerParams(lowering_semantics=plgpu.LoweringSemantics.Warpgroup),
    )(x, y)
"""


def test_two_swapped_arguments_change_the_meaning(folder: Path) -> None:
    """The same names, attributes and constants, in the same numbers (what a comparison
    of the text's words would accept): ``y - x`` is not ``x - y``."""
    args = (jax.ShapeDtypeStruct((64, 64), jnp.float32),) * 2
    before = _meaning(folder, "before.py", SUBTRACT, "subtract", args)
    swapped = SUBTRACT.replace(
        "plgpu.layout_cast(x_gmem[...], plgpu.Layout.WGMMA) - y_gmem[...]",
        "plgpu.layout_cast(y_gmem[...], plgpu.Layout.WGMMA) - x_gmem[...]",
    )
    assert _meaning(folder, "after.py", swapped, "subtract", args) != before
    relaid = SUBTRACT.replace("plgpu.Layout.WGMMA)", "plgpu.Layout.WG_STRIDED((64, 64), 4))")
    assert _meaning(folder, "relaid.py", relaid, "subtract", args) == before


# --- smalto fix in the kernel's own names ------------------------------------------------------


@pytest.mark.parametrize(
    ("script", "old", "new"),
    [
        ("hopper_row_sum_aliased.py", "WGMMA.reduce(0))", "WGMMA.reduce(1))"),
        ("hopper_row_sum_imported_layout.py", "Layout.WGMMA.reduce(0))", "Layout.WGMMA.reduce(1))"),
        (
            "hopper_row_sum_layout_from_module.py",
            "plgpu.layout_cast(s, SUMS)",
            "plgpu.layout_cast(s, plgpu.Layout.WGMMA.reduce(1))",
        ),
    ],
)
def test_a_layout_named_the_kernels_way_is_fixed_in_its_words(
    folder: Path, script: str, old: str, new: str
) -> None:
    copy = folder / script
    shutil.copy(KERNELS / script, copy)
    before = copy.read_text()
    ran = run("fix", f"{copy}:row_sums", "--arg", "f32[128,128]")
    assert ran.status == 0, ran.err
    assert "would change what the kernel computes" not in ran.err
    after = copy.read_text()
    assert after == before.replace(old, new)
    # The words of the fix, as the edit, in the kernel's names.
    assert any(line.startswith("  + ") and new in line for line in ran.out.splitlines())
    if script == "hopper_row_sum_aliased.py":
        assert "`out_gmem[...] = plgpu.layout_cast(s, WGMMA.reduce(1))`" in ran.out
    fn = runpy.run_path(str(copy))["row_sums"]
    smalto.jax.lower(fn, *ROWS, arch=(9, 0), by="jax")


def test_a_file_with_a_byte_order_mark_is_fixed_and_keeps_it(folder: Path) -> None:
    copy = folder / "row_sum.py"
    copy.write_bytes(b"\xef\xbb\xbf" + (KERNELS / "hopper_row_sum.py").read_bytes())
    ran = run("fix", f"{copy}:row_sums", "--arg", "f32[128,128]")
    assert ran.status == 0, ran.err
    after = copy.read_bytes()
    assert after.startswith(b"\xef\xbb\xbf")
    assert b"plgpu.Layout.WGMMA.reduce(1))" in after


# --- a reduction and a broadcast that disagree ---------------------------------------------


def test_row_sums_broadcast_as_columns_offer_both_changes_and_make_none(tmp_path: Path) -> None:
    script = "hopper_row_sums_as_columns.py"
    copy = tmp_path / script
    shutil.copy(KERNELS / script, copy)
    before = copy.read_bytes()
    ran = run("fix", f"{copy}:normalized", "--arg", "f16[64,64]", "--arg", "f16[64,64]")
    assert ran.status == 1
    assert copy.read_bytes() == before  # neither is made: which one is the author's call
    assert "which did you mean?" in ran.err
    assert "`total = jnp.sum(acc, axis=0)`" in ran.err
    assert "(acc / total[:, None])" in ran.err
    assert "\nfix: " not in ran.err


def test_each_offered_change_is_maybe_incorrect_and_lowers_applied_by_its_span(
    tmp_path: Path,
) -> None:
    path = KERNELS / "hopper_row_sums_as_columns.py"
    fn = runpy.run_path(str(path))["normalized"]
    edits = smalto.jax.fix(fn, *SQUARE, arch=(9, 0))
    offered = [e for e in edits if e.changes_meaning]
    assert sorted(e.kind for e in offered) == ["axis", "broadcast"]
    text = path.read_text()
    for number, edit in enumerate(offered):
        assert edit.applicability == MAYBE_INCORRECT
        assert edit.as_json()["applicability"] == MAYBE_INCORRECT
        copy = tmp_path / f"choice{number}.py"
        copy.write_text(apply_parts(text, edit.parts))
        edited = runpy.run_path(str(copy))["normalized"]
        smalto.jax.lower(edited, *SQUARE, arch=(9, 0), by="smalto")
        smalto.jax.lower(edited, *SQUARE, arch=(9, 0), by="jax")


# --- where only the module is given ------------------------------------------------------------

UNSAT = Path(__file__).resolve().parents[1] / "unsat"


def _json_edits(name: str) -> list[dict]:
    import json

    ran = run("infer", UNSAT / name, "--json")
    assert ran.status == 1
    document = json.loads(ran.out.splitlines()[0])
    return [edit for problem in document["problems"] for edit in problem["edits"]]


def test_from_the_module_alone_a_change_of_meaning_is_a_choice_in_json() -> None:
    """``smalto infer FILE.mlir --json``: no Python to trace, the check runs on the module.
    The reduction's axis and the broadcast's dimensions change it: both choices."""
    edits = _json_edits("words_row_sum_broadcast_along_columns.mlir")
    assert sorted(e["kind"] for e in edits) == ["axis", "broadcast"]
    for edit in edits:
        assert edit["changes_meaning"] is True
        assert edit["fix"]["changes_meaning"] is True
        assert edit["fix"]["applicability"] == MAYBE_INCORRECT


def test_from_the_module_alone_a_layout_edit_keeps_the_meaning() -> None:
    edits = _json_edits("pallas_row_sum_cast_to_columns.mlir")
    assert edits
    assert all(e["changes_meaning"] is False for e in edits)
    assert edits[0]["fix"]["applicability"] == "MachineApplicable"


# --- the same check where smalto.jax.fix labels an edit ----------------------------------------


def test_the_api_labels_an_edit_with_the_same_trace_check() -> None:
    """``smalto.jax.fix`` labels each ``MachineApplicable`` edit with the check ``smalto
    fix`` decides with: an edit whose text changes the axis is demoted and marked, one
    that retargets the cast keeps its level."""
    from smalto.jax.fixing import _checked
    from smalto.source.fix_edits import MACHINE_APPLICABLE, Part, SourceEdit, Span

    path = KERNELS / "hopper_row_sum.py"
    text = path.read_text()
    fn = runpy.run_path(str(path))["row_sums"]

    def edit_of(old: str, new: str) -> SourceEdit:
        number = next(i for i, line in enumerate(text.splitlines(), 1) if old in line)
        column = text.splitlines()[number - 1].index(old) + 1
        span = Span(str(path), number, column, number, column + len(old))
        return SourceEdit("retarget", old, MACHINE_APPLICABLE, parts=(Part(span, old, new),))

    layout = edit_of("WGMMA.reduce(0)", "WGMMA.reduce(1)")
    axis = edit_of("axis=1", "axis=0")
    checked = _checked([layout, axis], fn, ROWS, str(path))
    assert checked[0] == layout  # a layout retargeted: as it was
    assert checked[1].applicability == MAYBE_INCORRECT and checked[1].changes_meaning


def test_an_edit_of_a_staged_text_is_judged_against_that_text() -> None:
    """Found by the Pallas-form fuzzer (``tests/fuzz/pallas_families.py``, family staged,
    seed 2004: an f8 store staged, an f16 store beside it needing a cast): an edit made
    after the staged epilogue was judged against the original's trace, which the staging
    changes (``run_scoped``, the copy), so no such edit could ever be proven and the fix
    needed smalto. It is judged against the text it edits, itself proven when made: the
    same trace passes, another computation does not, and an edit of the script as written
    is still judged against the original."""
    from smalto.jax.fixing import Meanings

    original = "def kernel(x):\n    return x + 1.0\n"
    staged = "def kernel(x):\n    y = jnp.sort(x)\n    return y + 1.0\n"  # (other ops)
    recast = "def kernel(x):\n    return jnp.sort(x) + 1.0\n"  # (the staged text's trace)
    changed = "def kernel(x):\n    return jnp.sort(x) + 2.0\n"

    def load(text: str, why: str) -> object:
        namespace: dict[str, object] = {"jnp": jnp}
        exec(text, namespace)
        return namespace["kernel"]

    meanings = Meanings(load, (jax.ShapeDtypeStruct((8,), jnp.float32),), text=original)
    meanings.original_function(load(original, ""))
    assert not meanings.keeps(recast)  # (the original's trace: the staging differs)
    assert meanings.keeps_from(staged)(recast)
    assert not meanings.keeps_from(staged)(changed)
    assert meanings.keeps_from(original)("def kernel(x):\n    y = x\n    return y + 1.0\n")
    assert not meanings.keeps_from(original)(changed)
