"""Keepdims as a source edit (issue #49, item 3): statistics kept with a unit dim written
as (N,) values broadcast where they meet the tile, which JAX's own pass lowers; proven
by running both kernels in JAX's interpreter, bit-equal. A kernel no edit is found for
names the reductions that cause it."""

from __future__ import annotations

import ast
import json
import runpy
import warnings
from pathlib import Path

import jax
import pytest
from cli_run import Ran, run

import smalto
import smalto.jax
from smalto.jax.interpreted import run_both
from smalto.source.fix_edits import apply_parts
from smalto.source.keepdims import keepdims_causes, keepdims_edit, keepdims_not_followed

REPO = Path(__file__).resolve().parents[2]
NORMS = REPO / "tests" / "fix_kernels" / "keepdims_norms.py"
TILE = jax.ShapeDtypeStruct((128, 128), "float32")


def _lines(text: str, function: str) -> range:
    found = next(
        n for n in ast.parse(text).body if isinstance(n, ast.FunctionDef) and n.name == function
    )
    return range(found.lineno, (found.end_lineno or found.lineno) + 1)


EDITED = {
    "layer_norm": [
        "x - jnp.mean(x, axis=-1)[..., None]",
        "jnp.mean(centered * centered, axis=-1)",
        "centered * jax.lax.rsqrt(var + 1e-5)[..., None]",
    ],
    "rms_norm": ["jnp.mean(x * x, axis=-1)", "x * jax.lax.rsqrt(ms + 1e-6)[..., None]"],
    "softmax": ["jnp.max(x, axis=1)", "jnp.exp(x - m[:, None])", "e / jnp.sum(e, axis=1)[:, None]"],
    "centered_by_reshape": ["jnp.sum(x, axis=1) * (1.0 / x.shape[1])", "x - mu[:, None]"],
    "max_shifted_by_none": ["jnp.max(x, axis=-1)", "jnp.maximum(x - ((m - 1.0)[:, None]), 0.0)"],
    "rms_norm_by_broadcast_to": [
        "jnp.mean(x * x, axis=-1)",
        "jnp.broadcast_to(jax.lax.rsqrt(ms + 1e-6)[..., None], x.shape)",
    ],
}


@pytest.mark.parametrize("function", sorted(EDITED))
def test_the_statistics_are_written_without_their_unit_dim(function: str) -> None:
    text = NORMS.read_text()
    edit = keepdims_edit(text, str(NORMS), _lines(text, function))
    assert edit is not None
    assert [p.replacement for p in edit.parts] == EDITED[function]
    edited = apply_parts(text, edit.parts)
    assert "keepdims=True" not in "".join(
        edited.splitlines()[_lines(text, function).start - 1 :][:12]
    )
    assert edit.causes and all(c.form for c in edit.causes)


def test_a_statistic_stored_as_it_is_leaves_no_edit_and_names_its_cause() -> None:
    text = NORMS.read_text()
    lines = _lines(text, "stored_statistics")
    assert keepdims_edit(text, str(NORMS), lines) is None
    (cause,) = keepdims_causes(text, lines)
    assert cause.text == "jnp.mean(x, axis=-1, keepdims=True)" and cause.form == "keepdims=True"
    assert text.splitlines()[cause.line - 1][cause.column - 1 :].startswith("jnp.mean(")


# (function, whether JAX's own pass rejects it as written: a softmax's keepdims it takes)
@pytest.mark.parametrize(
    ("function", "rejected"),
    [
        ("rms_norm", True),
        ("softmax", False),
        ("centered_by_reshape", True),
    ],
)
def test_the_edited_kernel_lowers_with_jax_and_runs_bit_equal(
    tmp_path: Path, function: str, rejected: bool
) -> None:
    """The edit is what JAX's own pass lowers (the original it rejects), and both kernels,
    run in JAX's Mosaic GPU interpreter on the same inputs, agree bit for bit."""
    text = NORMS.read_text()
    edit = keepdims_edit(text, str(NORMS), _lines(text, function))
    assert edit is not None
    edited_file = tmp_path / "edited.py"
    edited_file.write_text(apply_parts(text, edit.parts))
    original = runpy.run_path(str(NORMS))[function]
    edited = runpy.run_path(str(edited_file))[function]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        if rejected:
            with pytest.raises(smalto.jax.KernelLoweringError):
                smalto.jax.lower(original, TILE, arch=(9, 0), by="jax")
        smalto.jax.lower(edited, TILE, arch=(9, 0), by="jax")
    ran = run_both(original, edited, (TILE,))
    assert ran.proven, ran.why_not


def test_running_tells_a_kernel_that_computes_otherwise(tmp_path: Path) -> None:
    """The proof can fail: a broadcast along the wrong axis runs, and differs."""
    _assert_running_refutes(
        tmp_path, "rms_norm", "rsqrt(ms + 1e-6)[..., None]", "rsqrt(ms + 1e-6)[None, :]"
    )


def _assert_running_refutes(tmp_path: Path, kernel: str, edited: str, wrong: str) -> None:
    """The norms script's ``kernel`` with its keepdims edit, then ``edited`` in it made
    ``wrong`` (which must change it): it runs in JAX's interpreter, and differs."""
    text = NORMS.read_text()
    edit = keepdims_edit(text, str(NORMS), _lines(text, kernel))
    assert edit is not None
    right = apply_parts(text, edit.parts)
    assert edited in right
    edited_file = tmp_path / "wrong.py"
    edited_file.write_text(right.replace(edited, wrong))
    ran = run_both(
        runpy.run_path(str(NORMS))[kernel],
        runpy.run_path(str(edited_file))[kernel],
        (TILE,),
    )
    assert ran.refutes and "differs" in ran.why_not


def _fixed(tmp_path: Path, kernel: str) -> tuple[Path, Ran]:
    """``smalto fix --json`` on a copy of the norms script's ``kernel`` (f32[128,128]),
    which must succeed: the copy and the run."""
    script = tmp_path / "norms.py"
    script.write_text(NORMS.read_text())
    ran = run("fix", f"{script}:{kernel}", "--arg", "f32[128,128]", "--json")
    assert ran.status == 0, ran.err
    return script, ran


def _lowers_by_jax_alone(script: Path, kernel: str) -> None:
    """JAX's own pass and lowering take ``kernel`` of the file ``smalto fix`` wrote."""
    fn = runpy.run_path(str(script))[kernel]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        smalto.jax.lower(fn, TILE, arch=(9, 0), by="jax")


def test_smalto_fix_makes_jax_39966_portable_proven_by_running(tmp_path: Path) -> None:
    """jax#39966's line, ``x - jnp.mean(x, axis=-1, keepdims=True)``, loaded straight from
    GMEM: the mean written as an (N,) value and the load cast to smalto's layout; the
    edit changes the ops, so its proof is its run in JAX's interpreter (said in
    ``--json``), made once, and JAX's own pass lowers the file written."""
    script, ran = _fixed(tmp_path, "centered")
    fixed = script.read_text()
    assert "o_gmem[...] = x - jnp.mean(x, axis=-1)[..., None]" in fixed
    assert "x = plgpu.layout_cast(x_gmem[...], plgpu.Layout.WGMMA)" in fixed
    made = json.loads(ran.out)
    (edit,) = made["edits"]
    assert edit["kind"] == "portable" and edit["proofs"] == ["interpreter"]
    assert "run in JAX's Mosaic GPU interpreter" in edit["proven_by"]
    assert made["run"]["ran"] and made["run"]["bit_equal"] and not made["refuted"]
    assert made["needs_smalto"] is False and made["unproven"] == []
    assert ran.err.count("proven by running: both kernels run") == 1
    _lowers_by_jax_alone(script, "centered")


def test_smalto_fix_follows_a_statistic_through_broadcast_to(tmp_path: Path) -> None:
    """``jnp.broadcast_to(rsqrt(ms + eps), x.shape)``, as Pallas users write the scale: the
    unit dim put back in its argument, JAX's own pass lowers the file written, and both
    kernels run bit-equal in JAX's interpreter. (Where ``smalto fix`` refused it, the
    statistic not followed through ``broadcast_to``.)"""
    script, ran = _fixed(tmp_path, "rms_norm_by_broadcast_to")
    fixed = script.read_text()
    assert "ms = jnp.mean(x * x, axis=-1)\n" in fixed
    assert "scale = jnp.broadcast_to(jax.lax.rsqrt(ms + 1e-6)[..., None], x.shape)" in fixed
    made = json.loads(ran.out)
    assert made["run"]["ran"] and made["run"]["bit_equal"] and not made["refuted"]
    assert made["needs_smalto"] is False and made["unproven"] == []
    _lowers_by_jax_alone(script, "rms_norm_by_broadcast_to")


def test_the_broadcast_to_edit_keeps_its_unit_dim(tmp_path: Path) -> None:
    """Why the unit dim goes back in ``broadcast_to``'s argument: the (N,) value alone is
    lined up with the last dim, on a square tile the wrong axis, and it runs, and differs."""
    _assert_running_refutes(
        tmp_path, "rms_norm_by_broadcast_to", "1e-6)[..., None], x.shape", "1e-6), x.shape"
    )


@pytest.mark.slow  # JAX's own pass searches ~30 s of CPU before it gives up on it
def test_smalto_fix_makes_jax_39966_layer_norm_portable(tmp_path: Path) -> None:
    """jax#39966's layer norm, loaded straight from GMEM: the statistics written as (N,)
    values and the load cast to smalto's layout, proven by JAX's pass and by running."""
    script = tmp_path / "norms.py"
    script.write_text(NORMS.read_text())
    ran = run("fix", f"{script}:layer_norm", "--arg", "f32[128,128]")
    assert ran.status == 0, ran.err
    fixed = script.read_text()
    assert "centered = x - jnp.mean(x, axis=-1)[..., None]" in fixed
    assert "x = plgpu.layout_cast(x_gmem[...], plgpu.Layout.WGMMA)" in fixed
    assert "both kernels run bit-equal in JAX's interpreter" in ran.out
    fn = runpy.run_path(str(script))["layer_norm"]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        smalto.jax.lower(fn, TILE, arch=(9, 0), by="jax")


def test_a_keepdims_kernel_not_made_portable_names_the_reduction(tmp_path: Path) -> None:
    """A statistic stored with its unit dim: no edit, and the reduction is named. (Its
    cheaper kind, ``stored_mean``: on ``stored_statistics`` each cast candidate JAX's
    pass rejects costs seconds of its search; the text-level test above covers it.)"""
    script = tmp_path / "norms.py"
    script.write_text(NORMS.read_text())
    ran = run("fix", f"{script}:stored_mean", "--arg", "f32[128,128]")
    assert ran.status == 1
    assert "compiles only with smalto" in ran.err
    assert "the unit dims of `jnp.mean(x, axis=-1, keepdims=True)` at " in ran.err
    assert "(keepdims=True) are what JAX's own pass cannot lay out" in ran.err
    # And why no edit writes them so: the line where the statistic is not followed.
    text = script.read_text()
    store = next(
        n for n in _lines(text, "stored_mean") if "mu_gmem[...] = mu" in text.splitlines()[n - 1]
    )
    (stopped,) = [line for line in ran.err.splitlines() if "does not follow" in line]
    assert stopped.endswith(f"a statistic at {script}:{store}: `mu_gmem[...] = mu`")


def test_the_quickstart_add_is_made_portable_by_a_cast_at_the_store(tmp_path: Path) -> None:
    """jax#32123: smalto stores the sum in the WGMMA column layout; cast to it at the store,
    JAX's own pass lowers the kernel."""
    script = tmp_path / "quickstart.py"
    script.write_text((REPO / "tests" / "fix_kernels" / "quickstart_add.py").read_text())
    ran = run("fix", f"{script}:add_vectors", "--arg", "f32[32]", "--arg", "f32[32]")
    assert ran.status == 0, ran.err
    assert (
        "o_ref[...] = plgpu.layout_cast(x_ref[...] + y_ref[...], plgpu.Layout.WGMMA.reduce(0))"
        in script.read_text()
    )
    assert "to WGMMA_COL (the layouts smalto's answer gives them)" in ran.out


def test_the_smalto_only_warning_stands_at_the_value_and_names_its_layout() -> None:
    """With no relayout to name, the warning stands at the line of the value whose layout
    JAX's order does not reach (the store), and names that layout."""
    path = REPO / "tests" / "fix_kernels" / "quickstart_add.py"
    fn = runpy.run_path(str(path))["add_vectors"]
    vector = jax.ShapeDtypeStruct((32,), "float32")
    with warnings.catch_warnings(record=True) as said:
        warnings.simplefilter("always")
        smalto.jax.lower(fn, vector, vector, arch=(9, 0))
    (warning,) = [w for w in said if w.category is smalto.SmaltoOnlyWarning]
    store = next(
        i for i, line in enumerate(path.read_text().splitlines(), 1) if "o_ref[...] =" in line
    )
    assert (warning.filename, warning.lineno) == (str(path), store)
    assert f"`mosaic_gpu.vector_store` at {path}:{store}:8: WGMMA_COL" in str(warning.message)


def test_a_load_cast_already_to_its_layout_is_not_cast_again() -> None:
    """Found by the Pallas-form fuzzer (``tests/fuzz/pallas_families.py``): on
    ``x = plgpu.layout_cast(x_gmem[...], plgpu.Layout.WGMMA)``, where smalto's answer
    gives the load WGMMA, the portable edit wrote the cast a second time,
    ``plgpu.layout_cast(plgpu.layout_cast(x_gmem[...], ...WGMMA), ...WGMMA)``. A load
    cast to another layout is still cast (its own layout then differs from the cast's)."""
    from smalto.jax.portable import portable_edit
    from smalto.pipeline.relayouts import Relayout
    from smalto.source.locations import FilePosition

    text = NORMS.read_text()
    lines = _lines(text, "rms_norm")
    line = next(n for n in lines if "x_gmem[...]" in text.splitlines()[n - 1])
    column = text.splitlines()[line - 1].index("x_gmem[...]") + 1

    def load_in(layout: str) -> Relayout:
        where = FilePosition(str(NORMS), line, column)
        return Relayout("mosaic_gpu.vector_load", where, layout, layout, f"plgpu.Layout.{layout}")

    def made(layout: str) -> str:
        edit = portable_edit(
            text,
            str(NORMS),
            [],
            lambda _: True,
            lambda _: True,
            "rms_norm",
            transfers=[load_in(layout)],
            runs_equal=lambda _: True,
        )
        assert edit is not None
        return edit.text.splitlines()[line - 1].strip()

    assert made("WGMMA") == "x = plgpu.layout_cast(x_gmem[...], plgpu.Layout.WGMMA)"
    assert made("WGMMA_TRANSPOSED") == (
        "x = plgpu.layout_cast(plgpu.layout_cast(x_gmem[...], plgpu.Layout.WGMMA_TRANSPOSED), "
        "plgpu.Layout.WGMMA)"
    )


COLUMN_SOFTMAX = """import jax
import jax.numpy as jnp
from jax.experimental.pallas import mosaic_gpu as plgpu

WARPGROUP = plgpu.CompilerParams(lowering_semantics=plgpu.LoweringSemantics.Warpgroup)


def softmax(x):
    def body(x_gmem, o_gmem):
        x = plgpu.layout_cast(x_gmem[...], plgpu.Layout.WGMMA)
        rows, cols = x.shape
        m = jnp.max(x, {axis}).reshape({kept})
        e = jnp.exp(x - m)
        o_gmem[...] = e / jnp.sum(e, axis=({axis},)).reshape({kept})

    return plgpu.kernel(
        body, out_type=jax.ShapeDtypeStruct(x.shape, x.dtype), compiler_params=WARPGROUP
    )(x)
"""


@pytest.mark.parametrize(
    ("axis", "kept", "expansion"), [(-1, "rows, 1", "[:, None]"), (0, "1, cols", "[None, :]")]
)
def test_an_axis_as_a_tuple_or_an_argument_and_a_row_by_reshape_are_followed(
    tmp_path: Path, axis: int, kept: str, expansion: str
) -> None:
    """Found by the Pallas-form fuzzer (family keepdims, seeds 2004 and 2008): a softmax
    whose axis is the second argument (``jnp.max(x, -1)``) or a tuple of one
    (``axis=(-1,)``), or whose column statistics are rows by ``.reshape(1, cols)``, had
    no edit (``smalto fix`` refused). Each is written as an (N,) value and put back where
    it meets the tile; JAX's own pass lowers the edit and both kernels run bit-equal."""
    text = COLUMN_SOFTMAX.format(axis=axis, kept=kept)
    script = tmp_path / "softmax.py"
    script.write_text(text)
    edit = keepdims_edit(text, str(script), _lines(text, "softmax"))
    assert edit is not None
    assert [p.replacement for p in edit.parts] == [
        f"jnp.max(x, {axis})",
        f"jnp.exp(x - m{expansion})",
        f"e / jnp.sum(e, axis=({axis},)){expansion}",
    ]
    edited = tmp_path / "edited.py"
    edited.write_text(apply_parts(text, edit.parts))
    original, fixed = (runpy.run_path(str(p))["softmax"] for p in (script, edited))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        smalto.jax.lower(fixed, TILE, arch=(9, 0), by="jax")
    ran = run_both(original, fixed, (TILE,))
    assert ran.proven, ran.why_not


BROADCAST_SHIFT = """import jax
import jax.numpy as jnp
from jax.experimental.pallas import mosaic_gpu as plgpu

WARPGROUP = plgpu.CompilerParams(lowering_semantics=plgpu.LoweringSemantics.Warpgroup)


def shifted(x):
    def body(x_gmem, o_gmem):
        x = plgpu.layout_cast(x_gmem[...], plgpu.Layout.WGMMA)
        s = jnp.max(jnp.abs(x), axis={axis}, keepdims=True)
        o_gmem[...] = x - jnp.broadcast_to(s * 0.5, x.shape)

    return plgpu.kernel(
        body, out_type=jax.ShapeDtypeStruct(x.shape, x.dtype), compiler_params=WARPGROUP
    )(x)
"""


@pytest.mark.parametrize(("axis", "expansion"), [(-1, "[..., None]"), (0, "[None]")])
def test_a_row_or_column_statistic_through_broadcast_to_is_followed(
    tmp_path: Path, axis: int, expansion: str
) -> None:
    """Found by the Pallas-form fuzzer (family keepdims, ``x - jnp.broadcast_to(s,
    x.shape)``): ``smalto fix`` refused it. A row or a column statistic, on a tile that
    is not square: its unit dim put back in ``broadcast_to``'s argument; JAX's own pass
    lowers the edit and both kernels run bit-equal."""
    text = BROADCAST_SHIFT.format(axis=axis)
    script = tmp_path / "shifted.py"
    script.write_text(text)
    edit = keepdims_edit(text, str(script), _lines(text, "shifted"))
    assert edit is not None
    assert [p.replacement for p in edit.parts] == [
        f"jnp.max(jnp.abs(x), axis={axis})",
        f"x - jnp.broadcast_to((s * 0.5){expansion}, x.shape)",
    ]
    edited = tmp_path / "edited.py"
    edited.write_text(apply_parts(text, edit.parts))
    original, fixed = (runpy.run_path(str(p))["shifted"] for p in (script, edited))
    tile = jax.ShapeDtypeStruct((64, 128), "float32")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        smalto.jax.lower(fixed, tile, arch=(9, 0), by="jax")
    ran = run_both(original, fixed, (tile,))
    assert ran.proven, ran.why_not


@pytest.mark.parametrize(
    "shape",
    ["s.shape", "jnp.sum(x, axis=-1, keepdims=True).shape", "shape=(s.shape[0], x.shape[1])"],
)
def test_a_broadcast_to_whose_shape_is_a_statistics_is_refused_at_its_line(shape: str) -> None:
    """Where ``broadcast_to``'s shape is read from a statistic kept with its unit dim (the
    edit would change that shape), no edit, and the refusal names the line and why."""
    text = BROADCAST_SHIFT.format(axis=-1).replace(
        "x - jnp.broadcast_to(s * 0.5, x.shape)", f"x - jnp.broadcast_to(s * 0.5, {shape})"
    )
    lines = _lines(text, "shifted")
    assert keepdims_edit(text, "shifted.py", lines) is None
    stopped = keepdims_not_followed(text, lines)
    assert stopped is not None
    assert stopped.text == f"o_gmem[...] = x - jnp.broadcast_to(s * 0.5, {shape})"
    assert text.splitlines()[stopped.line - 1].strip() == stopped.text
    assert "`broadcast_to`'s shape is read from a statistic" in stopped.why
    # (With the tile's shape, followed: nothing stops it.)
    assert keepdims_not_followed(BROADCAST_SHIFT.format(axis=-1), lines) is None
