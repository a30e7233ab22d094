"""smalto fails like JAX 0.12.0.1's pass, then says more.

For each kind of failure, the same module goes to JAX's pass and to smalto:
both raise the same exception type, and smalto's message carries JAX's
phrase for that kind of failure (word for word where smalto's system lets it
know what JAX knows), followed by smalto's own account.
"""

from __future__ import annotations

import re
import traceback
from pathlib import Path

import pytest
import reference
from jax._src.lib.mlir import ir
from jax.experimental.mosaic.gpu import layout_inference, tcgen05
from jax.experimental.mosaic.gpu import layouts as jax_layouts
from mlir_snippets import func_module, tmem_type

import smalto

UNSAT = Path(__file__).parents[1] / "unsat"
# Python reprs of JAX's layout types: never on smalto's first line.
REPRS = (
    "TiledLayout(",
    "WGStridedFragLayout(",
    "WGSplatFragLayout(",
    "TileTransform(",
    "TilingTransform(",
    "SwizzleTransform(",
)
GENERIC = (
    "Failed to infer a possible set of layouts. This should only happen if user-provided "
    "layout casts are unsatisfiable. To dump the constraint system for debugging, use "
    "`MOSAIC_GPU_DUMP_CONSTRAINT_SYSTEM=1`."
)

# fixture -> (JAX's phrase for the kind, whether smalto's first line is JAX's whole message)
CASES = {
    "cast_strided_then_wgmma": ("user-provided layout casts are unsatisfiable", True),
    "custom_primitive_conflicting_transforms": (
        "user-provided layout casts are unsatisfiable",
        True,
    ),
    "relayout_unsupported": ("cannot relayout from register layout WGMMA to", True),
    "registers_not_equal": ("expected register layouts WGMMA and", True),
    "smem_transfer_no_plan": (
        "no optimized SMEM <-> registers transfer plan could be synthesized for register "
        "layout WGMMA and ref with transforms (TilingTransform((8, 64)),)",
        True,
    ),
    "async_load_index_not_divisible": (
        "You need to prove the divisibility of index 0 using pl.multiple_of",
        True,
    ),
    # (JAX prints the layout's repr where smalto names it: WGMMA.)
    "cast_does_not_fit": ("Cannot cast to layout ", False),
    "with_transforms_does_not_fit": (
        "Cannot apply tiling TileTransform(tiling=(8, 64), rounding=None) with 128 swizzle to "
        "memref with shape (4, 64).",
        False,
    ),
    "gather_not_leading": ("Only leading gather dimensions allowed.", True),
    "gather_not_2d": ("Only 2D gathers/scatters for async load/store are supported.", True),
    "gather_minor_dim": (
        "Cannot assign layout to async load with gather indices since minor dim=8 is not "
        "divisible by divisor=16 bits.",
        True,
    ),
}


def _run(infer: object, text: str, **kwargs: object) -> tuple[BaseException, ir.Module]:
    ctx = reference.make_context()
    module = reference.parse(text, ctx)
    with ctx, ir.Location.unknown(), pytest.raises(Exception) as raised:  # noqa: PT011
        infer(module, **kwargs)  # type: ignore[operator]
    return raised.value, module


def _both(text: str, **kwargs: object) -> tuple[BaseException, BaseException]:
    jax_error, _ = _run(layout_inference.infer_layout, text, **kwargs)
    ours, _ = _run(smalto.infer_layout, text, **kwargs)
    return jax_error, ours


def _jax_text(error: BaseException) -> str:
    """JAX's message, but for the op it prints in some (smalto names ops its own way)."""
    return str(error).split(" in %", 1)[0]


@pytest.mark.parametrize("name", sorted(CASES))
def test_fails_like_jax_then_says_more(name: str) -> None:
    phrase, whole = CASES[name]
    jax_error, ours = _both((UNSAT / f"{name}.mlir").read_text(), arch=(9, 0))
    assert isinstance(ours, type(jax_error)), (type(jax_error), type(ours))
    jax_message, message = str(jax_error), str(ours)
    assert phrase in jax_message, jax_message
    assert phrase in message, message
    if isinstance(ours, ValueError):
        assert message.startswith(smalto.FAILURE_PREFIX)
    if whole and isinstance(ours, smalto.InferenceError) and ours.phrase is not None:
        first, second = message.splitlines()[:2]
        if first != jax_message:
            # JAX's words print a layout's repr: the first line names it as smalto does,
            # and the next says JAX's whole message.
            assert second == f"jax: {jax_message}"
            assert not any(repr_ in first for repr_ in REPRS), first
    elif whole:
        assert jax_message in message
    # ... and then smalto's own account, naming the op and where it is.
    assert "kernel.py:" in message.split(phrase, 1)[1] or "kernel.py:" in message


def test_a_cast_that_does_not_fit_is_refused_in_jax_s_words_with_the_layout_named() -> None:
    """The first line is JAX's sentence in smalto's words: the layout by name (not its repr
    of hundreds of characters), JAX's typo mended, the op by its name (not printed); the
    next line is JAX's sentence word for word (its typo and its print of the op included),
    but for the layout, named."""
    jax_error, ours = _both((UNSAT / "cast_does_not_fit.mlir").read_text(), arch=(9, 0))
    jax_message = str(jax_error)
    layout_repr = jax_message.removeprefix("Cannot cast to layout ").split(": the layout", 1)[0]
    assert layout_repr.startswith("TiledLayout(") and len(layout_repr) > 100
    first, second = str(ours).splitlines()[:2]
    assert first == (
        f"{smalto.FAILURE_PREFIX}: Cannot cast to layout WGMMA: the layout is not compatible "
        "with the operand shape (32, 32) in `mosaic_gpu.layout_cast`."
    )
    assert second == f"jax: {smalto.FAILURE_PREFIX}: " + jax_message.replace(layout_repr, "WGMMA")
    assert "the layout is notcompatible with the operand shape (32, 32) in %0 = " in second


def test_a_strided_layout_is_named_with_its_own_shape_and_jax_s_phrase_follows() -> None:
    """A strided layout written for another shape: the first line names it with its shape
    (no ``WGStridedFragLayout(...)``, no ``notcompatible``, no op in MLIR's text); JAX's
    whole message, word for word, is the next line; the why says the layout's shape too."""
    jax_error, ours = _both(
        (UNSAT / "pallas_strided_cast_of_another_shape.mlir").read_text(), arch=(9, 0)
    )
    jax_message = str(jax_error)
    assert "WGStridedFragLayout(shape=(64, 128), vec_size=2)" in jax_message
    assert isinstance(ours, smalto.InferenceError)
    lines = str(ours).splitlines()
    assert lines[0] == (
        f"{smalto.FAILURE_PREFIX}: Cannot cast to layout strided ×2 over (64, 128): the "
        "layout is not compatible with the operand shape (128, 64) in `mosaic_gpu.layout_cast`."
    )
    assert lines[1] == f"jax: {smalto.FAILURE_PREFIX}: {jax_message}"
    assert ours.headline == lines[0] and ours.phrase == lines[1].removeprefix("jax: ")
    (why,) = [line for line in lines if line.startswith("why: ")]
    assert why.endswith(
        "requires the cast result to be strided ×2 over (64, 128), which does not fit its "
        "shape (128, 64)"
    ), why


def test_a_ref_s_transforms_in_smalto_s_words_then_jax_s() -> None:
    """No SMEM transfer plan (the production sm_100 epilogue): the ref's transforms as smalto
    writes them (``tiled 32×1 + swizzle 128``), not their Python repr; JAX's words next."""
    text = (UNSAT / "fixes_tcgen05_transposed_epilogue.mlir").read_text()
    jax_error, ours = _both(text, arch=(10, 0))
    assert "(TilingTransform((32, 1)), SwizzleTransform(128))" in str(jax_error)
    first, second = str(ours).splitlines()[:2]
    assert first == (
        f"{smalto.FAILURE_PREFIX}: no optimized SMEM <-> registers transfer plan could be "
        "synthesized for register layout TCGEN05_TRANSPOSED and ref with transforms tiled "
        "32×1 + swizzle 128"
    )
    assert second == f"jax: {jax_error}"


def test_two_register_layouts_in_smalto_s_names_then_jax_s() -> None:
    jax_error, ours = _both((UNSAT / "registers_not_equal.mlir").read_text(), arch=(9, 0))
    first, second = str(ours).splitlines()[:2]
    assert first == (
        f"{smalto.FAILURE_PREFIX}: expected register layouts WGMMA and strided ×2 over "
        "(128, 128) to be equal"
    )
    assert second == f"jax: {jax_error}"


def test_the_generic_phrase_is_jax_s_whole_message() -> None:
    jax_error, ours = _both((UNSAT / "cast_strided_then_wgmma.mlir").read_text(), arch=(9, 0))
    assert str(jax_error) == GENERIC
    first, *rest = str(ours).splitlines()
    assert first == GENERIC
    # Then the fix (verified), then why.
    assert rest[0].startswith("fix: change the layout cast at kernel.py:11:8")
    assert "why: these requirements cannot all hold:" in rest


def test_fuel_exhaustion_in_jax_s_words() -> None:
    root = reference.corpus_root() or reference.BUNDLED_ROOT
    text = (root / "fuel_exhausted" / "custom_softmax_rows_nohint.mlir").read_text()
    jax_error, ours = _both(text, arch=(9, 0), fuel=3)
    jax_words = (
        "Layout inference failed to find a solution. Consider adding layout annotations to "
        "your program to guide the search."
    )
    assert type(jax_error) is ValueError and str(jax_error) == jax_words
    assert isinstance(ours, ValueError)
    first, *rest = str(ours).splitlines()
    assert first == f"{smalto.FAILURE_PREFIX}: {jax_words}"
    assert "ran out of fuel after 3 attempts" in rest[0]


def test_op_without_a_rule_in_jax_s_words() -> None:
    text = func_module(
        [
            '%c = "arith.constant"() <{value = dense<1.0> : vector<128x64xf32>}> : () -> '
            "vector<128x64xf32>",
            '%t = "vector.transpose"(%c) <{permutation = array<i64: 1, 0>}> : '
            "(vector<128x64xf32>) -> vector<64x128xf32>",
        ]
    )
    jax_error, ours = _both(text, arch=(9, 0))
    assert type(jax_error) is NotImplementedError is type(ours)
    for message in (str(jax_error), str(ours)):
        assert message.startswith("No layout inference rule defined for"), message
    assert "vector.transpose" in str(ours)


def test_tmem_cast_that_does_not_fit_in_jax_s_words() -> None:
    addr = "memref<i32, #gpu.address_space<workgroup>>"
    ty = tmem_type("64x128xf32")
    with reference.shared_context():
        layout = str(jax_layouts.to_layout_attr(tcgen05.tmem_default_layout(1)))
    text = func_module(
        [
            f'%t = "mosaic_gpu.tmem_alloc"(%addr) <{{collective = false, packing = 1 : i32}}> '
            f": ({addr}) -> {ty}",
            f'%c = "mosaic_gpu.tmem_layout_cast"(%t) <{{new_layout = {layout}}}> : ({ty}) -> {ty}',
        ],
        [("addr", addr)],
    )
    jax_error, ours = _both(text, arch=(10, 0))
    assert type(jax_error) is ValueError and isinstance(ours, ValueError)
    phrase = "Cannot cast to TMEM layout"
    assert str(jax_error).startswith(phrase)
    assert f"{smalto.FAILURE_PREFIX}: {phrase}" in str(ours)
    assert "the layout is not compatible with the operand shape (64, 128)" in str(ours)


# --- the traceback ends at the culprit's source line ------------------------------------------


def test_traceback_ends_at_the_op_jax_blames() -> None:
    jax_error, ours = _both((UNSAT / "relayout_unsupported.mlir").read_text(), arch=(9, 0))
    last = traceback.extract_tb(ours.__traceback__)[-1]
    # The second cast (kernel.py:23) is the one that cannot relayout.
    assert (last.filename, last.lineno) == ("kernel.py", 23)


def test_traceback_of_a_pallas_location_names_the_primitive() -> None:
    """JAX wraps the user's position in name locations; the frame is the user's line."""
    text = (UNSAT / "relayout_unsupported.mlir").read_text()
    text = text.replace(
        'loc("kernel.py":23:8)', 'loc("layout_cast:"("layout_cast"("kernel.py":23:8)))'
    )
    jax_error, ours = _both(text, arch=(9, 0))
    jax_last = traceback.extract_tb(jax_error.__traceback__)[-1]
    last = traceback.extract_tb(ours.__traceback__)[-1]
    assert (last.filename, last.lineno, last.name) == ("kernel.py", 23, "layout_cast")
    assert (jax_last.filename, jax_last.lineno, jax_last.name) == (
        last.filename,
        last.lineno,
        last.name,
    )
    # The message shows the position, never MLIR's location syntax.
    assert "kernel.py:23:8" in str(ours) and 'loc("' not in str(ours)


def test_derivation_error_traceback_ends_at_the_op() -> None:
    ours, _ = _run(smalto.infer_layout, (UNSAT / "cast_does_not_fit.mlir").read_text())
    last = traceback.extract_tb(ours.__traceback__)[-1]
    assert (last.filename, last.lineno) == ("kernel.py", 51)


def test_no_location_no_made_up_frame() -> None:
    text = re.sub(
        r' loc\("kernel.py":\d+:\d+\)', "", (UNSAT / "relayout_unsupported.mlir").read_text()
    )
    ours, _ = _run(smalto.infer_layout, text)
    # Ops parsed without a location sit in the parser's unnamed buffer: no frame for it.
    frames = traceback.extract_tb(ours.__traceback__)
    assert all(f.filename not in ("kernel.py", "-") for f in frames), frames
    assert frames[-1].filename.endswith(".py") and "smalto" in frames[-1].filename
