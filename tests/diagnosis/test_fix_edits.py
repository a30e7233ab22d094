"""Where a verified edit goes in a Pallas user's Python source (``smalto.source.fix_edits``), edit
by edit: the span, the text it holds, the replacement, the applicability; the source is
parsed, never run."""

from __future__ import annotations

from dataclasses import dataclass, replace

import pytest

from smalto.source.fix_edits import (
    MACHINE_APPLICABLE,
    MAYBE_INCORRECT,
    UNSPECIFIED,
    apply_parts,
    in_kernel_words,
    source_edit,
)
from smalto.source.pallas_edits import SourceChange

KERNEL = """\
import jax.numpy as jnp
from jax.experimental.pallas import mosaic_gpu as mgpu

TILED = (mgpu.TilingTransform((8, 64)),)


def matmul(a, b):
    def body(a_gmem, o_gmem, w_ref, a_smem, o_smem, acc_tmem, barrier):
        acc = mgpu.async_load_tmem(acc_tmem, layout=mgpu.Layout.WGMMA)
        s = mgpu.layout_cast(jnp.sum(acc, axis=1), mgpu.Layout.WGMMA.reduce(0))
        o_smem[...] = acc.astype(o_smem.dtype)
        scale = w_ref[:, 1]

    return mgpu.kernel(
        body,
        out_type=a,
        scratch_types=[
            mgpu.SMEM((64, 64), jnp.float16),
            mgpu.SMEM((64, 128), jnp.float16, transforms=TILED),
            mgpu.TMEM(
                (128, 128), jnp.float32, layout=mgpu.TMEMLayout.M64_COLLECTIVE_LAYOUT(128)
            ),
            mgpu.Barrier(),
        ],
    )(a, b)
"""


@dataclass(frozen=True)
class Suggested:
    """What ``source_edit`` reads of a ``SuggestedEdit``."""

    kind: str
    ops: list[tuple[str, str]]
    pallas: str | None = None
    text: str = "the fix in words"
    uses: tuple[tuple[str, str], ...] = ()
    changes: tuple[SourceChange, ...] = ()
    needs_smalto: bool = False
    changes_meaning: bool = False


def _read(file: str) -> str | None:
    return KERNEL if file == "k.py" else None


def _line(number: int) -> str:
    return KERNEL.splitlines()[number - 1]


def _edited(edit: Suggested, **kwargs: str) -> tuple[str, str]:
    made = source_edit(edit, _read, **kwargs)
    assert made.applicable, made.why
    edited = apply_parts(KERNEL, made.parts)
    return made.applicability, edited


def test_a_layout_argument_retargeted_in_the_files_own_name_for_pallas() -> None:
    edit = Suggested(
        "retarget",
        [("mosaic_gpu.layout_cast", "k.py:9:14")],
        "acc = plgpu.async_load_tmem(acc_tmem, layout=plgpu.Layout.TCGEN05)",
    )
    applicability, edited = _edited(edit)
    assert applicability == MACHINE_APPLICABLE
    assert edited.splitlines()[8] == (
        "        acc = mgpu.async_load_tmem(acc_tmem, layout=mgpu.Layout.TCGEN05)"
    )


def test_a_layout_argument_removed_with_its_comma() -> None:
    edit = Suggested("drop", [("mosaic_gpu.layout_cast", "k.py:9:14")])
    _, edited = _edited(edit)
    assert edited.splitlines()[8] == "        acc = mgpu.async_load_tmem(acc_tmem)"


@pytest.mark.parametrize(
    ("kind", "pallas", "line"),
    [
        (
            "retarget",
            "plgpu.layout_cast(x, plgpu.Layout.WGMMA.reduce(1))",
            "        s = mgpu.layout_cast(jnp.sum(acc, axis=1), mgpu.Layout.WGMMA.reduce(1))",
        ),
        ("drop", None, "        s = jnp.sum(acc, axis=1)"),
    ],
)
def test_a_layout_cast_retargeted_or_removed(kind: str, pallas: str | None, line: str) -> None:
    edit = Suggested(kind, [("mosaic_gpu.layout_cast", "k.py:10:12")], pallas)
    _, edited = _edited(edit)
    assert edited.splitlines()[9] == line


def test_an_smem_refs_transforms_found_in_the_scratch_list_from_its_use() -> None:
    # ``o_smem`` is the body's 5th parameter: the 2nd of the 5 scratch refs.
    edit = Suggested(
        "retarget",
        [("mosaic_gpu.with_transforms", "k.py:11:8")],
        "transforms=(plgpu.TilingTransform((8, 64)), plgpu.SwizzleTransform(128))",
    )
    made = source_edit(edit, _read)
    (part,) = made.parts
    assert (part.span.line, part.original) == (19, "TILED")
    assert apply_parts(KERNEL, made.parts).splitlines()[18] == (
        "            mgpu.SMEM((64, 128), jnp.float16, transforms=(mgpu.TilingTransform((8, 64)), "
        "mgpu.SwizzleTransform(128))),"
    )
    dropped = apply_parts(KERNEL, source_edit(Suggested("drop", edit.ops), _read).parts)
    assert dropped.splitlines()[18] == "            mgpu.SMEM((64, 128), jnp.float16),"


def test_transforms_added_where_the_declaration_states_none() -> None:
    source = KERNEL.replace("o_smem[...] = acc", "a_smem[...] = acc")
    edit = Suggested(
        "retarget",
        [("mosaic_gpu.with_transforms", "k.py:11:8")],
        "transforms=(plgpu.SwizzleTransform(128),)",
    )
    made = source_edit(edit, lambda f: source if f == "k.py" else None)
    assert apply_parts(source, made.parts).splitlines()[17] == (
        "            mgpu.SMEM((64, 64), jnp.float16, transforms=(mgpu.SwizzleTransform(128),)),"
    )


def test_the_tmem_declaration_rebuilt_with_its_own_shape_and_dtype() -> None:
    edit = Suggested(
        "retarget",
        [("mosaic_gpu.tmem_layout_cast", "run_scoped")],
        "plgpu.TMEM((128, 128), jnp.float32)",
    )
    made = source_edit(edit, _read, home="k.py")
    assert made.applicability == MAYBE_INCORRECT
    edited = apply_parts(KERNEL, made.parts)
    assert "            mgpu.TMEM((128, 128), jnp.float32),\n" in edited
    assert "M64_COLLECTIVE" not in edited
    # Without the kernel's file, nowhere to put it.
    assert source_edit(edit, _read).applicability == UNSPECIFIED


# A Blackwell kernel with two TMEM scratch refs: the accumulator, declared in the M=64
# collective layout its 128-row MMA cannot write, and a second one for the scaled copy.
TWO_TMEM = """\
import jax.numpy as jnp
from jax.experimental.pallas import mosaic_gpu as plgpu


def matmul(a, b):
    def body(a_gmem, b_gmem, o_gmem, a_smem, b_smem, acc_tmem, scaled_tmem, done):
        plgpu.tcgen05_mma(acc_tmem, a_smem, b_smem, done, accumulate=False)
        plgpu.barrier_wait(done)
        acc = plgpu.async_load_tmem(acc_tmem)
        plgpu.async_store_tmem(scaled_tmem, acc * 2)

    return plgpu.kernel(
        body,
        out_type=a,
        scratch_types=[
            plgpu.SMEM((128, 64), jnp.bfloat16),
            plgpu.SMEM((64, 128), jnp.bfloat16),
            plgpu.TMEM((128, 128), jnp.float32, layout=plgpu.TMEMLayout.M64_COLLECTIVE_LAYOUT(128)),
            plgpu.TMEM((128, 128), jnp.float32),
            plgpu.Barrier(orders_tensor_core=True),
        ],
    )(a, b)
"""


def test_the_tmem_declaration_found_among_several_by_the_ops_that_use_it() -> None:
    edit = Suggested(
        "retarget",
        [("mosaic_gpu.tmem_layout_cast", "run_scoped")],
        "plgpu.TMEM((128, 128), jnp.float32)",
        uses=(("mosaic_gpu.tcgen05_mma", "k.py:7:8"), ("mosaic_gpu.async_load_tmem", "k.py:9:14")),
    )
    made = source_edit(edit, lambda f: TWO_TMEM if f == "k.py" else None, home="k.py")
    # The ref's own scratch entry, as an SMEM ref's is found: exact, not the likeliest.
    assert made.applicability == MACHINE_APPLICABLE, made.why
    (part,) = made.parts
    assert (part.span.line, part.span.end_line) == (18, 18)
    edited = apply_parts(TWO_TMEM, made.parts).splitlines()
    assert edited[17] == "            plgpu.TMEM((128, 128), jnp.float32),"
    assert edited[18] == TWO_TMEM.splitlines()[18]  # the other TMEM ref is left as it is
    assert "M64_COLLECTIVE" not in "\n".join(edited)
    # Without the uses, the file's two declarations leave no place to put it.
    without = source_edit(replace(edit, uses=()), lambda f: TWO_TMEM, home="k.py")
    assert without.applicability == UNSPECIFIED
    assert without.why == "the file declares 2 TMEM refs"


@pytest.mark.parametrize(
    ("name", "location", "line", "after"),
    [
        (
            "mosaic_gpu.vector_store",
            "k.py:11:8",
            11,
            "        mgpu.store(o_smem, acc.astype(o_smem.dtype), optimized=False)",
        ),
        (
            "mosaic_gpu.vector_load",
            "k.py:12:16",
            12,
            "        scale = mgpu.load(w_ref.at[:, 1], optimized=False)",
        ),
    ],
)
def test_a_transfer_made_unoptimized_where_written(
    name: str, location: str, line: int, after: str
) -> None:
    made = source_edit(Suggested("unoptimize", [(name, location)]), _read)
    assert made.applicability == MAYBE_INCORRECT  # slower: staging through SMEM is faster
    assert apply_parts(KERNEL, made.parts).splitlines()[line - 1] == after


def test_no_place_found_is_said_not_guessed() -> None:
    elsewhere = Suggested("retarget", [("mosaic_gpu.layout_cast", "other.py:3:4")], "x")
    made = source_edit(elsewhere, _read)
    assert made.applicability == UNSPECIFIED and not made.parts and not made.applicable
    assert "not found" in made.why
    # A column where no cast starts.
    nothing = Suggested("drop", [("mosaic_gpu.layout_cast", "k.py:11:8")])
    assert source_edit(nothing, _read).parts == ()
    assert _line(11).strip().startswith("o_smem")


# --- the kernel's own spelling ---------------------------------------------------------------

ALIASED = """\
import jax.numpy as jnp
from jax.experimental.pallas import mosaic_gpu as plgpu
from jax.experimental.pallas.mosaic_gpu import TMEMLayout

WGMMA = plgpu.Layout.WGMMA
SWIZZLED = (plgpu.TilingTransform((8, 64)), plgpu.SwizzleTransform(128))
TILED = (plgpu.TilingTransform((8, 64)),)


def matmul(a, b):
    m, n = a.shape[0], b.shape[1]

    def body(a_gmem, o_gmem, o_smem, acc_tmem):
        s = plgpu.layout_cast(jnp.sum(a_gmem[...], axis=1), WGMMA.reduce(0))
        o_smem[...] = s

    return plgpu.kernel(
        body,
        out_type=a,
        scratch_types=[
            plgpu.SMEM((m, n), jnp.float16, transforms=TILED),
            plgpu.TMEM((m, n), jnp.float32, layout=TMEMLayout.M64_COLLECTIVE_LAYOUT(n)),
        ],
    )(a, b)
"""


def _aliased(file: str) -> str | None:
    return ALIASED if file == "k.py" else None


def test_a_layout_is_written_with_the_kernels_alias() -> None:
    edit = Suggested(
        "retarget",
        [("mosaic_gpu.layout_cast", "k.py:14:12")],
        "plgpu.layout_cast(x, plgpu.Layout.WGMMA.reduce(1))",
    )
    made = source_edit(edit, _aliased)
    (part,) = made.parts
    assert (part.original, part.replacement) == ("WGMMA.reduce(0)", "WGMMA.reduce(1)")
    assert made.applicability == MACHINE_APPLICABLE


def test_transforms_are_written_with_the_kernels_name_for_them() -> None:
    edit = Suggested(
        "retarget",
        [("mosaic_gpu.with_transforms", "k.py:15:8")],
        "transforms=(plgpu.TilingTransform((8, 64)), plgpu.SwizzleTransform(128))",
    )
    (part,) = source_edit(edit, _aliased).parts
    assert (part.original, part.replacement) == ("TILED", "SWIZZLED")


def test_a_tmem_layout_is_written_with_the_imported_name_and_the_kernels_sizes() -> None:
    """``TMEMLayout`` as the kernel imports it; the column count as ``n``, the name the
    kernel's shape gives it, not the number the module holds."""
    edit = Suggested(
        "retarget",
        [("mosaic_gpu.tmem_layout_cast", "run_scoped")],
        "plgpu.TMEM((128, 128), jnp.float32, layout=plgpu.TMEMLayout.M64_COLLECTIVE_LAYOUT(128))",
        uses=(("mosaic_gpu.async_load_tmem", "k.py:14:12"),),
    )
    source = ALIASED.replace("o_smem[...] = s", "o_smem[...] = plgpu.async_load_tmem(acc_tmem)")
    source = source.replace(
        "layout=TMEMLayout.M64_COLLECTIVE_LAYOUT(n)", "layout=TMEMLayout.TCGEN05_LAYOUT"
    )
    located = replace(edit, uses=(("mosaic_gpu.async_load_tmem", "k.py:15:22"),))
    made = source_edit(located, lambda f: source if f == "k.py" else None, home="k.py")
    (part,) = made.parts
    assert part.replacement == (
        "plgpu.TMEM((m, n), jnp.float32, layout=TMEMLayout.M64_COLLECTIVE_LAYOUT(n))"
    )


def test_a_file_that_starts_with_a_byte_order_mark_is_edited_in_place() -> None:
    source = "\ufeff" + KERNEL
    edit = Suggested(
        "retarget",
        [("mosaic_gpu.layout_cast", "k.py:10:12")],
        "plgpu.layout_cast(x, plgpu.Layout.WGMMA.reduce(1))",
    )
    made = source_edit(edit, lambda f: source if f == "k.py" else None)
    assert made.applicability == MACHINE_APPLICABLE, made.why
    edited = apply_parts(source, made.parts)
    assert edited.startswith("\ufeff")
    assert edited.splitlines()[9].endswith("mgpu.Layout.WGMMA.reduce(1))")


def test_an_edit_that_changes_what_the_kernel_computes_is_never_machine_applicable() -> None:
    """The diagnosis marks an axis' or a broadcast's change (its module check): wherever
    it goes, a person chooses it."""
    line = _line(10)
    change = SourceChange("k.py", 10, line, line.replace("axis=1", "axis=0"))
    edit = Suggested("axis", [("vector.multi_reduction", "k.py:10:29")], changes=(change,))
    exact = source_edit(edit, _read)
    assert exact.applicability == MACHINE_APPLICABLE  # (as an edit of layouts would be)
    chosen = source_edit(replace(edit, changes_meaning=True), _read)
    assert chosen.applicability == MAYBE_INCORRECT and chosen.changes_meaning
    assert chosen.as_json()["changes_meaning"] is True


COLLECTIVE = """\
import jax.numpy as jnp
from jax.experimental.pallas import mosaic_gpu as plgpu

BLOCK_N = 128


def matmul(a, b):
    (m, k), (_, n) = a.shape, b.shape
    block_m = m // 2

    def body(a_smem, b_smem, acc_tmem, done):
        plgpu.tcgen05_mma(acc_tmem, a_smem, b_smem, done, collective_axis="x")
        acc = plgpu.async_load_tmem(acc_tmem, layout=plgpu.Layout.TCGEN05)

    return plgpu.kernel(
        body,
        out_type=a,
        scratch_types=[
            plgpu.TMEM((block_m, n), jnp.float32, collective=True),
            plgpu.Barrier(orders_tensor_core=True),
        ],
    )(a, b)
"""
M64_LOAD = Suggested(
    "retarget",
    [("mosaic_gpu.layout_cast", "k.py:13:14")],
    "acc = plgpu.async_load_tmem(acc_tmem, layout=plgpu.Layout.TCGEN05_M64_COLLECTIVE(128))",
)


def _m64_load(source: str) -> str:
    """The new layout of the edit of ``M64_LOAD``, at the load's line in ``source``."""
    line = next(i for i, text in enumerate(source.splitlines(), 1) if "acc = " in text)
    located = replace(M64_LOAD, ops=[("mosaic_gpu.layout_cast", f"k.py:{line}:14")])
    made = source_edit(located, lambda f: source if f == "k.py" else None)
    assert made.applicability == MACHINE_APPLICABLE, made.why
    (part,) = made.parts
    assert part.original == "plgpu.Layout.TCGEN05"
    return part.replacement


@pytest.mark.parametrize(
    ("declared", "written"),
    [
        ("(block_m, n)", "n"),  # the name the kernel's shape gives the columns
        ("(block_m, BLOCK_N)", "BLOCK_N"),  # a module constant
        ("(block_m, 2 * k)", "2 * k"),  # an expression of names bound once
        ("(block_m, b.shape[1])", "b.shape[1]"),
    ],
)
def test_a_register_layouts_size_is_written_with_the_kernels_name(
    declared: str, written: str
) -> None:
    """The columns of a TMEM ref loaded whole are the last dimension of its declaration:
    the expression written there holds them where the layout goes."""
    source = COLLECTIVE.replace("(block_m, n)", declared)
    assert _m64_load(source) == f"plgpu.Layout.TCGEN05_M64_COLLECTIVE({written})"


def test_a_size_is_named_in_a_cast_of_the_load_too() -> None:
    source = COLLECTIVE.replace(
        "plgpu.async_load_tmem(acc_tmem, layout=plgpu.Layout.TCGEN05)",
        "plgpu.layout_cast(plgpu.async_load_tmem(acc_tmem), plgpu.Layout.TCGEN05)",
    )
    assert _m64_load(source) == "plgpu.Layout.TCGEN05_M64_COLLECTIVE(n)"


@pytest.mark.parametrize(
    ("old", "new"),
    [
        ("(block_m, n)", "(64, 128)"),  # no name holds the size
        ("def body(a_smem,", "def body(n, a_smem,"),  # the body's own `n` is another
        ("    block_m = m // 2\n", "    block_m = m // 2\n    n = n // 2\n"),  # bound twice
        ("        acc = plgpu", "        n = 64\n        acc = plgpu"),  # rebound in the body
        ("(block_m, n)", "(block_m, int(n))"),  # a call: not proved to give the same
        # bound again in a branch
        ("    block_m = m // 2\n", "    block_m = m // 2\n    if k:\n        n = 128\n"),
    ],
)
def test_a_size_no_name_provably_holds_is_written_as_a_number(old: str, new: str) -> None:
    source = COLLECTIVE.replace(old, new)
    assert source != COLLECTIVE
    assert _m64_load(source) == "plgpu.Layout.TCGEN05_M64_COLLECTIVE(128)"


def test_a_layout_without_a_size_parameter_is_as_given() -> None:
    """``TCGEN05_TMEM_NATIVE(8)`` counts a vector's length, not the value's columns."""
    edit = replace(
        M64_LOAD,
        pallas="acc = plgpu.async_load_tmem(acc_tmem, layout=plgpu.Layout.TCGEN05_TMEM_NATIVE(8))",
    )
    made = source_edit(edit, lambda f: COLLECTIVE if f == "k.py" else None)
    (part,) = made.parts
    assert part.replacement == "plgpu.Layout.TCGEN05_TMEM_NATIVE(8)"


def test_the_suggestions_words_name_the_size_as_the_edit_does() -> None:
    lines = COLLECTIVE.splitlines()
    text = "plgpu.Layout.TCGEN05_M64_COLLECTIVE(128)"
    assert in_kernel_words(lines, text, 13, 14) == "plgpu.Layout.TCGEN05_M64_COLLECTIVE(n)"
    assert in_kernel_words(lines, text, 13) == text  # (no op given: no size known)


@pytest.mark.parametrize(
    ("alias", "written"),
    [
        # The kernel's name for the very layout is its spelling of it.
        ("ACC = plgpu.Layout.TCGEN05_M64_COLLECTIVE(128)", "ACC"),
        # Its name for the constructor, with its name for the size.
        ("M64 = plgpu.Layout.TCGEN05_M64_COLLECTIVE", "M64(n)"),
    ],
)
def test_a_sized_layout_keeps_the_kernels_alias(alias: str, written: str) -> None:
    source = COLLECTIVE.replace("BLOCK_N = 128\n", f"BLOCK_N = 128\n{alias}\n")
    assert _m64_load(source) == written


def test_a_size_bound_by_an_annotated_assignment_is_named() -> None:
    source = COLLECTIVE.replace(
        "    block_m = m // 2\n", "    block_m = m // 2\n    cols: int = n\n"
    )
    source = source.replace("(block_m, n)", "(block_m, cols)")
    assert _m64_load(source) == "plgpu.Layout.TCGEN05_M64_COLLECTIVE(cols)"
