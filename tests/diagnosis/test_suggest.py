"""Diagnoses with verified suggestions (issue #19, item 4).

Every unsatisfiable kernel of ``tests/unsat`` (hand-written modules, and the
Pallas kernels of ``tests/unsat/kernels.py`` as JAX's lowering hands them to
layout inference) must end its error with a ``suggestion:`` that names layouts
by name. Where smalto says an edit was verified, the test makes that edit
itself, from the data on the error (``error.conflict.edits``): on a fresh
parse of the module, then smalto must infer it and its checker accept the
answer; for the Pallas kernels, the edit is made on the module inside JAX's
real lowering of the kernel, which must then go through JAX's own Mosaic GPU
dialect lowering to a custom call.
"""

from __future__ import annotations

import re
import sys
from pathlib import Path
from typing import Any

import jax.numpy as jnp
import pytest
import reference
from jax._src.lib.mlir import ir
from jax.experimental.mosaic.gpu import fragmented_array as fa
from jax.experimental.mosaic.gpu import layouts as jax_layouts
from jax.experimental.mosaic.gpu import tcgen05
from jax.experimental.pallas import mosaic_gpu as plgpu
from mlir_snippets import func_module

import smalto
import smalto.jax
from smalto.check import check
from smalto.diagnose.suggest import SuggestedEdit, tmem_pallas
from smalto.hw import layouts as hl
from smalto.hw.names import REGISTER_LAYOUTS, describe_value, pallas_layout
from smalto.hw.values import Reg, Smem, Tmem
from smalto.source.files import searching_beside

UNSAT = Path(__file__).parents[1] / "unsat"
sys.path.insert(0, str(UNSAT))
import kernels  # noqa: E402  (tests/unsat/kernels.py: the Pallas kernels)
from edit_kit import editing_first, make_edit, ops_of  # noqa: E402

# Not layout conflicts: gathers JAX's lowering cannot do (JAX raises too), for any layout.
# A collective and a 1-CTA MMA in one kernel: JAX's lowering refuses the mix, for any layout.
NOT_LAYOUT_CONFLICTS = {
    "gather_not_2d",
    "gather_not_leading",
    "gather_minor_dim",
    "pallas_tmem_collective_and_single_cta_mma",
}
# (``words_*``: the kernels of kernels_words.py, tested from their source by
# test_diagnosis_words.py.)
FIXTURES = sorted(
    p.stem
    for p in UNSAT.glob("*.mlir")
    if p.stem not in NOT_LAYOUT_CONFLICTS and not p.stem.startswith("words_")
)
PALLAS = sorted(name for name in FIXTURES if name.startswith("pallas_"))
# Kernels no single edit of the layout annotations fixes (they say so, and why).
NO_SINGLE_EDIT = {"pallas_tmem_acc_declared_collective"}
VERIFIED = [name for name in FIXTURES if name not in NO_SINGLE_EDIT]
PALLAS_VERIFIED = [name for name in PALLAS if name not in NO_SINGLE_EDIT]
BLACKWELL_FIXTURES = [
    name for name in PALLAS if kernels.KERNELS[name.removeprefix("pallas_")][2] == (10, 0)
]
# Python reprs of JAX's layout types: never in smalto's words (JAX's phrase may have them).
REPRS = ("TMEMLayout(", "TiledLayout(", "WGStridedFragLayout(", "WGSplatFragLayout(", "Tiling(")


def fail(name: str) -> tuple[smalto.InferenceError, str]:
    """The error for a fixture, its kernel lines read beside it (as ``smalto infer`` reads
    them), and the fixture's text."""
    path = UNSAT / f"{name}.mlir"
    text = path.read_text()
    module = reference.parse(text, reference.make_context())
    with searching_beside(path), pytest.raises(smalto.InferenceError) as info:
        smalto.infer_layout(module, arch=reference.text_arch(text))
    return info.value, text


@pytest.fixture(scope="module")
def failures() -> dict[str, tuple[smalto.InferenceError, str]]:
    return {name: fail(name) for name in FIXTURES}


def after_the_phrase(error: smalto.InferenceError) -> list[str]:
    """The message's lines after JAX's phrase (and after JAX's own words of it, where the
    first line says them in smalto's)."""
    lines = str(error).splitlines()[1:]
    return lines[1:] if lines and lines[0].startswith("jax: ") else lines


def own_words(error: smalto.InferenceError) -> str:
    """The message but for JAX's phrase (JAX's, reprs and all): where the first line says
    the phrase in smalto's words, that line, then what follows the phrase's own line."""
    message = str(error)
    phrase = error.phrase or ""
    if message.startswith(phrase):
        return message[len(phrase) :]
    opening = f"{error.headline}\njax: {phrase}"
    assert message.startswith(opening), message
    return f"{error.headline}{message[len(opening) :]}"


# --- every kernel gets a suggestion, with layouts by name ---------------------------------


@pytest.mark.parametrize("name", FIXTURES)
def test_every_unsatisfiable_kernel_gets_a_suggestion(name: str, failures: dict) -> None:
    error, _ = failures[name]
    message = str(error)
    assert message.startswith(smalto.FAILURE_PREFIX)
    assert "\nfix: " in message or "\nsuggestion: " in message, message
    assert error.conflict is not None and error.conflict.suggestion
    words = own_words(error)
    for repr_ in REPRS:
        assert repr_ not in words, (repr_, words)


def test_a_gather_no_layout_can_serve_says_what_to_change() -> None:
    """Not a layout conflict (no layout helps), yet an unsatisfiable kernel all the same:
    the message says what to change in the kernel."""
    error, _ = fail("gather_minor_dim")
    assert "\nsuggestion: gather rows of 16 elements instead of 8" in str(error)


def test_a_dozen_unsatisfiable_kernels_include_blackwell_ones() -> None:
    assert len(FIXTURES) >= 12
    assert len(BLACKWELL_FIXTURES) >= 4


@pytest.mark.parametrize("name", FIXTURES)
def test_each_value_is_located_where_it_is_defined(name: str, failures: dict) -> None:
    error, _ = failures[name]
    report = error.conflict
    if not report.core:  # an annotation its value cannot take: the one op is the conflict
        return
    named = set(re.findall(r"%[\w#]+", "\n".join(r.text for r in report.requirements)))
    defined = {line.split(" ", 1)[0] for line in report.origins}
    assert named <= defined, (named - defined, report.origins)
    for line in report.origins:
        assert re.search(
            r"kernels?(?:_\w+)?\.py:\d+:\d+|run_scoped|argument of the kernel", line
        ), line


def test_a_cast_result_says_which_cast_and_what_it_casts(failures: dict) -> None:
    """The issue's kernel: x cast to WGMMA, summed over axis 1, the sums cast to WGMMA's
    column layout. "%N cannot be splat" now comes with where %N is made."""
    error, _ = failures["pallas_row_sum_cast_to_columns"]
    message = str(error)
    # Named by the user's source where it can be read (`x` (%52)), else by its SSA name.
    splat = re.search(r"(?:`x` \()?(%\d+)\)? cannot be splat", message)
    assert splat is not None, message
    value = splat.group(1)
    (origin,) = [o for o in error.conflict.origins if o.startswith(f"{value} ")]
    assert "is defined by `mosaic_gpu.layout_cast` at kernels.py:50:" in origin
    assert "the cast of %" in origin and "(`get`) at kernels.py:50:" in origin
    assert origin.endswith("to WGMMA")
    # Where each value comes from: in the verbose message (the short one leads with the fix).
    assert "\nthe values involved:\n" not in message
    assert "\nthe values involved:\n" in error.conflict.message(verbose=True)


# --- the suggestions the kernels' mistakes call for ------------------------------------------

EXPECTED = {
    # The whole edited line, in the kernel's own names.
    "pallas_row_sum_cast_to_columns": "from WGMMA_COL to WGMMA_ROW: "
    "`out_gmem[...] = plgpu.layout_cast(s, plgpu.Layout.WGMMA.reduce(1))`",
    "pallas_column_max_cast_to_rows": "from WGMMA_ROW to WGMMA_COL: "
    "`out_gmem[...] = plgpu.layout_cast(m, plgpu.Layout.WGMMA.reduce(0)).astype(jnp.float32)`",
    "pallas_tcgen05_row_sum_cast_to_columns": "to TCGEN05_ROW: "
    "`out_smem[...] = plgpu.layout_cast(sums, plgpu.Layout.TCGEN05.reduce(1))`",
    # Where ``layout=`` states it, edited there.
    "pallas_tmem_load_as_wgmma": "change the layout `plgpu.async_load_tmem` states at "
    "kernels.py:278:14 from WGMMA to TCGEN05: "
    "`acc = plgpu.async_load_tmem(acc_tmem, layout=plgpu.Layout.TCGEN05)`",
    "pallas_tmem_store_strided": "from strided ×4 to TCGEN05",
    "pallas_wgmma_then_strided": "from strided ×2 to WGMMA",
    "pallas_strided_loop_carry": "at kernels.py:183:15 from strided ×2 to WGMMA",
    "pallas_tmem_acc_m64_layout_not_collective": "as TMEM half_lane, not TMEM m64_collective: "
    "`plgpu.TMEM((64, 128), jnp.float32)`",
    "pallas_tmem_acc_m64_layout_on_128_rows": "as TMEM default, not TMEM m64_collective: "
    "`plgpu.TMEM((128, 128), jnp.float32)`",
    "pallas_wgmma_operand_not_swizzled": "from tiled 8×64, no swizzle to tiled 8×64 + "
    "swizzle 128: `transforms=(plgpu.TilingTransform((8, 64)), plgpu.SwizzleTransform(128))`",
    # A transfer with no plan: the one-word edit at its line first (#33), then the transforms.
    "pallas_epilogue_to_unswizzled_smem": "make this transfer unoptimized where written",
    "relayout_unsupported": "change the layout cast at kernel.py:2",
    "cast_strided_then_wgmma": "change the layout cast at kernel.py:1",
    "registers_not_equal": "`plgpu.inline_mgpu` at kernel.py:8",
    "custom_primitive_conflicting_transforms": "`plgpu.inline_mgpu` at kernel.py:71:4",
    "smem_transfer_no_plan": "make this transfer unoptimized where written",
    "cast_does_not_fit": "from WGMMA to strided ×2",
    "with_transforms_does_not_fit": "without transforms",
}


@pytest.mark.parametrize("name", sorted(EXPECTED))
def test_the_first_verified_edit_is_the_fix_the_mistake_calls_for(
    name: str, failures: dict
) -> None:
    error, _ = failures[name]
    edits = error.conflict.edits
    assert edits, str(error)
    assert EXPECTED[name] in edits[0].text, edits[0].text
    # The message leads with it, right after JAX's phrase (and JAX's own words of it,
    # where the first line says them in smalto's).
    first_line = after_the_phrase(error)[0]
    assert first_line.startswith("fix: ") and edits[0].text in first_line
    assert "(verified: smalto infers the kernel with it" in first_line
    # What verified it is said: smalto's inference and checker (JAX's lowering of it runs
    # in the tests, test_the_first_edit_makes_jax_lower_the_pallas_kernel, or when asked).
    assert error.conflict.edits_lowered is None
    assert "its checker accepts the layouts" in first_line


@pytest.mark.parametrize("name", ["async_load_index_not_divisible", "dynamic_offset_not_divisible"])
def test_an_unproven_offset_suggests_the_proof_first(name: str, failures: dict) -> None:
    error, _ = failures[name]
    suggestion = error.conflict.suggestion
    assert suggestion.startswith("the offsets of ")
    assert "pl.multiple_of" in suggestion.splitlines()[0]
    assert "\n  or: declare the SMEM ref" in suggestion  # the verified layout edit comes after


def test_most_kernels_get_a_verified_edit(failures: dict) -> None:
    verified = [name for name in FIXTURES if failures[name][0].conflict.edits]
    assert set(verified) == set(VERIFIED), set(VERIFIED) ^ set(verified)


# --- applying the edits: the test makes them itself ------------------------------------------


@pytest.mark.parametrize("name", VERIFIED)
def test_each_verified_edit_makes_smalto_infer_and_the_checker_accept(
    name: str, failures: dict
) -> None:
    error, text = failures[name]
    assert 1 <= len(error.conflict.edits) <= 3
    arch = reference.text_arch(text)
    for edit in error.conflict.edits:
        module = reference.parse(text, reference.make_context())
        make_edit(module, edit)
        smalto.infer_layout(module, arch=arch)
        assert check(module, arch) == [], edit.text
        if edit.new_attribute is not None:  # the layout the edit states is in the answer
            assert edit.new_attribute in str(module)


@pytest.mark.parametrize("name", PALLAS_VERIFIED)
def test_the_first_edit_makes_jax_lower_the_pallas_kernel(name: str, failures: dict) -> None:
    """JAX's real lowering, from the Pallas kernel to a Mosaic GPU custom call, accepts the
    module once the suggested edit is made on it (and fails without it)."""
    error, _ = failures[name]
    fn, args, arch = kernels.KERNELS[name.removeprefix("pallas_")]
    with pytest.raises(smalto.jax.KernelLoweringError):
        smalto.jax.lower(fn, *args, arch=arch, by="smalto")
    with editing_first(error.conflict.edits[0]) as edited:
        lowering = smalto.jax.lower(fn, *args, arch=arch, by="smalto")
    assert len(edited) == 1
    assert lowering.lowered.as_text().count("stablehlo.custom_call @mosaic_gpu_v2") == 1


@pytest.mark.parametrize("name", PALLAS)
def test_the_fixture_is_what_jax_hands_to_inference_for_the_kernel(name: str) -> None:
    """The located lines of each captured module are the kernel's lines in kernels.py."""
    source = (UNSAT / "kernels.py").read_text().splitlines()
    text = (UNSAT / f"{name}.mlir").read_text()
    lines = {int(n) for n in re.findall(r'"kernels\.py":(\d+):\d+', text)}
    assert lines
    function = getattr(kernels, name.removeprefix("pallas_"))
    import inspect

    body, first = inspect.getsourcelines(function)
    helpers = [kernels._tcgen05_matmul, kernels._store_tile]
    spans = [range(first, first + len(body))] + [
        range(f, f + len(b)) for b, f in map(inspect.getsourcelines, helpers)
    ]
    for line in lines:
        assert any(line in span for span in spans), (line, source[line - 1])


# --- when no single edit helps ----------------------------------------------------------------

WGMMA_ATTR = (
    "#mosaic_gpu.TiledLayout<[[64, 8], [16, 8], [8, 8], [2]], warp_dims = [-7], "
    "lane_dims = [-3, -2], vector_dim = -1>"
)
STRIDED_ATTR = "#mosaic_gpu.WGStridedFragLayout<[128, 128], 2>"
REF = "memref<128x128xf32, #gpu.address_space<workgroup>>"
VEC = "vector<128x128xf32>"


def _cast_line(result: str, source: str, layout: str, line: int) -> str:
    return (
        f'%{result} = "mosaic_gpu.layout_cast"(%{source}) <{{new_layout = {layout}}}> : '
        f'({VEC}) -> {VEC} loc("k.py":{line}:1)'
    )


def test_when_no_single_edit_helps_it_says_so() -> None:
    """%a is WGMMA (a cast, and an inline_mgpu that reads it so), and two casts take it to
    a strided layout, a relayout that does not exist: every single edit leaves one of
    the two strided casts, or the WGMMA read, unsatisfied."""
    body = [
        f'%ref = "mosaic_gpu.slice_smem"() <{{offset = 0 : i32}}> : () -> {REF} loc("k.py":1:1)',
        f'%v = "mosaic_gpu.vector_load"(%ref) : ({REF}) -> {VEC} loc("k.py":2:1)',
        _cast_line("a", "v", WGMMA_ATTR, 3),
        _cast_line("b", "a", STRIDED_ATTR, 4),
        _cast_line("c", "a", STRIDED_ATTR, 5),
        f'"mosaic_gpu.vector_store"(%b, %ref) : ({VEC}, {REF}) -> () loc("k.py":6:1)',
        f'"mosaic_gpu.vector_store"(%c, %ref) : ({VEC}, {REF}) -> () loc("k.py":7:1)',
        f'"mosaic_gpu.custom_primitive"(%a) <{{in_layouts = [{WGMMA_ATTR}], in_transforms = [], '
        'out_layouts = []}> ({\n  "mosaic_gpu.return"() : () -> ()\n}) : '
        f'({VEC}) -> () loc("k.py":8:1)',
    ]
    text = func_module(body)
    module = reference.parse(text, reference.make_context())
    with pytest.raises(smalto.InferenceError) as info:
        smalto.infer_layout(module, arch=(9, 0))
    report = info.value.conflict
    assert report.edits == []
    assert report.edits_tried > 0
    assert "no single edit of the layout annotations involved fixes the kernel" in (
        report.suggestion
    )
    assert f"smalto tried {report.edits_tried}" in report.suggestion


def test_an_edit_jax_s_lowering_rejects_is_not_suggested(failures: dict) -> None:
    """A 1-CTA MMA into a TMEM accumulator declared collective: giving the ref the 1-CTA
    layout makes the layouts fit, but the allocation stays collective, and JAX's lowering
    rejects kernels that mix collective and 1-CTA ops (so does smalto's pass, SM011). So
    smalto does not suggest the edit as a fix: it says none fixes the kernel, names the
    closest, and gives JAX's reason."""
    error, text = failures["pallas_tmem_acc_declared_collective"]
    report = error.conflict
    assert report.edits == []
    assert "no single edit of the layout annotations involved fixes the kernel" in (
        report.suggestion
    )
    assert "The closest: declare the TMEM ref" in report.suggestion
    assert "as TMEM half_lane, not TMEM m64_collective" in report.suggestion
    assert report.suggestion.endswith(
        "JAX's Mosaic GPU lowering rejects them: Collective attributes are inconsistent "
        "across operations in the kernel"
    )
    # The test makes that edit itself: the layouts fit, and smalto's pass refuses the mix...
    module = reference.parse(text, reference.make_context())
    with module.context, ir.Location.unknown():
        (cast,) = [op for op in ops_of(module) if op.name == "mosaic_gpu.tmem_layout_cast"]
        cast.attributes["new_layout"] = jax_layouts.to_layout_attr(
            tcgen05.tmem_half_lane_layout(128, 1)
        )
    with pytest.raises(smalto.InferenceError) as refused:
        smalto.infer_layout(module, arch=(10, 0))
    assert refused.value.code == "SM011"
    assert "Collective attributes are inconsistent" in str(refused.value)
    # ... and JAX's real lowering of the Pallas kernel, so edited, rejects it.
    fn, args, arch = kernels.KERNELS["tmem_acc_declared_collective"]
    half_lane = SuggestedEdit(
        kind="retarget",
        text="",
        pallas=None,
        ops=[("mosaic_gpu.tmem_layout_cast", "run_scoped")],
        old=None,
        new=None,
        attribute="new_layout",
        old_attribute=_tmem_attr(tcgen05.tmem_m64_collective_layout(128, 1)),
        new_attribute=_tmem_attr(tcgen05.tmem_half_lane_layout(128, 1)),
    )
    with editing_first(half_lane), pytest.raises(smalto.jax.KernelLoweringError) as lowering:
        smalto.jax.lower(fn, *args, arch=arch, by="smalto")
    assert "Collective attributes are inconsistent" in str(lowering.value)


def _tmem_attr(layout: Any) -> str:
    with reference.shared_context():
        return str(jax_layouts.to_layout_attr(layout))


def test_a_small_budget_says_it_ran_out() -> None:
    from smalto.diagnose.candidates import Candidates
    from smalto.diagnose.core import find_core
    from smalto.diagnose.verify import Budget, try_edits
    from smalto.infer import in_context
    from smalto.program.reader import read_program
    from smalto.rules import derive_system
    from smalto.solve.options import SolveOptions

    text = (UNSAT / "relayout_unsupported.mlir").read_text()
    module = reference.parse(text, reference.make_context())
    with in_context(module):
        program = read_program(module)
        system = derive_system(program, (9, 0))
        options = SolveOptions(arch=(9, 0))
        core, _ = find_core(program, system, options, set())
        candidates = Candidates(program, system, options, list(core), {})
        trial = try_edits(program, system, options, candidates, Budget(candidates=1))
        assert trial.tried == 1 and not trial.complete
        full = try_edits(
            program, system, options, Candidates(program, system, options, list(core), {})
        )
        assert len(full.verified) >= 2 and full.tried > 1


# --- names: by name, never a repr; Pallas spellings that evaluate to the layout -------------

PALLAS_NAMESPACE = {"plgpu": plgpu, "jnp": jnp}


def _named_register_layouts() -> list[Reg]:
    layouts = [Reg(layout) for layout in REGISTER_LAYOUTS.values()]
    layouts += [Reg(hl.m64_collective(128)), Reg(fa.tmem_native_layout(1))]
    layouts += [hl.strided((128, 64), 4), hl.splat((64,))]
    layouts += [Reg(fa.TMEM_NATIVE_LAYOUT.reduce((1,)))]
    return layouts


@pytest.mark.parametrize("value", _named_register_layouts(), ids=describe_value)
def test_register_layouts_have_names_and_pallas_spellings(value: Reg) -> None:
    name = describe_value(value)
    assert not any(r in name for r in REPRS), name
    code = pallas_layout(value)
    assert code is not None, name
    assert eval(code, PALLAS_NAMESPACE).to_mgpu() == value.layout  # noqa: S307


TMEM_CASES = [
    ("TMEM default", tcgen05.tmem_default_layout(1), (128, 128), jnp.float32, 32),
    ("TMEM default (packing 2)", tcgen05.tmem_default_layout(2), (128, 64), jnp.bfloat16, 16),
    ("TMEM half_lane", tcgen05.tmem_half_lane_layout(128, 1), (64, 128), jnp.float32, 32),
    (
        "TMEM m64_collective",
        tcgen05.tmem_m64_collective_layout(128, 1),
        (64, 128),
        jnp.float32,
        32,
    ),
    ("TMEM scales", tcgen05.scales_layout(), (128, 4), jnp.float8_e8m0fnu, 8),
]


@pytest.mark.parametrize(("name", "layout", "shape", "dtype", "bits"), TMEM_CASES)
def test_tmem_layouts_have_the_names_pallas_uses(
    name: str, layout: Any, shape: tuple[int, int], dtype: Any, bits: int
) -> None:
    assert describe_value(Tmem(layout)) == name
    with reference.shared_context(), ir.Location.unknown():
        element = {32: ir.F32Type.get(), 16: ir.BF16Type.get(), 8: ir.Float8E8M0FNUType.get()}
        memref = ir.MemRefType.get(shape, element[bits])
    code = tmem_pallas(Tmem(layout), memref, bits)
    assert code is not None
    declared = eval(code, PALLAS_NAMESPACE)  # noqa: S307
    assert declared.layout == layout, code


def test_smem_transforms_have_short_names() -> None:
    assert describe_value(Smem((8, 64), 128)) == "tiled 8×64 + swizzle 128"
    assert describe_value(Smem((8, 64), None)) == "tiled 8×64, no swizzle"
    assert describe_value(Smem(None, None)) == "untiled"


def test_an_unnamed_layout_is_compact_and_no_repr() -> None:
    text = describe_value(Reg(hl.wide_rows(16)))
    assert text == "tiled (64, 16)(16, 16)(8) warps -5 lanes -3,-2 vector -1"
    odd = tcgen05.TMEMLayout(fa.Tiling(((128, 8), (32, 8), (2,))), (-5,), (-3,), -1)
    assert describe_value(Tmem(odd)) == "TMEM tiled (128, 8)(32, 8)(2) warps -5 lanes -3 vector -1"


@pytest.mark.parametrize("name", PALLAS)
def test_jax_s_phrase_stays_first(name: str, failures: dict) -> None:
    """JAX's pass rejects each Pallas kernel too; smalto's message starts with its words."""
    from jax.experimental.mosaic.gpu import layout_inference

    error, text = failures[name]
    module = reference.parse(text, reference.make_context())
    with module.context, ir.Location.unknown(), pytest.raises(ValueError) as jax_error:
        layout_inference.infer_layout(module, arch=reference.text_arch(text))
    jax_words = str(jax_error.value).split(" in %", 1)[0]
    first, *rest = str(error).splitlines()
    # JAX's sentence as JAX's pass says it: the first line, or where that says it in
    # smalto's words (no repr), the next.
    ours = rest[0].removeprefix("jax: ") if rest and rest[0].startswith("jax: ") else first
    for repr_ in REPRS:
        assert repr_ not in first, first
    if not jax_words.startswith(smalto.FAILURE_PREFIX):
        # A rule's own refusal: JAX raises its sentence bare, smalto after the prefix.
        ours = ours.removeprefix(f"{smalto.FAILURE_PREFIX}: ")
    # JAX's sentence, with tiled layouts JAX prints as a repr named as smalto names them.
    kind = jax_words.split("TiledLayout(", 1)[0]
    assert ours.startswith(kind) and "TiledLayout(" not in ours


# Hand-written fixtures JAX's dialect lowering can take in a test launch (rule_kit): the
# others hold ops it cannot lower there whatever their layouts (an empty custom_primitive
# body; a TMA copy from a function argument).
LOWERABLE = [
    "cast_does_not_fit",
    "cast_strided_then_wgmma",
    "custom_primitive_conflicting_transforms",
    "dynamic_offset_not_divisible",
    "relayout_unsupported",
    "smem_transfer_no_plan",
    "with_transforms_does_not_fit",
]


@pytest.mark.parametrize("name", LOWERABLE)
def test_each_verified_edit_makes_jax_s_dialect_lowering_accept(name: str, failures: dict) -> None:
    from rule_kit import lower_in_launch

    error, text = failures[name]
    arch = reference.text_arch(text)
    for edit in error.conflict.edits:
        module = reference.parse(text, reference.make_context())
        make_edit(module, edit)
        smalto.infer_layout(module, arch=arch)
        lower_in_launch(module, arch)  # raises what JAX's lowering raises


def test_a_relayout_the_lowering_performs_at_a_use_needs_no_cast() -> None:
    """A WGMMA value an inline_mgpu reads as WGMMA_TRANSPOSED: JAX's lowering converts
    each operand to the layout its consumer takes it in (16-bit WGMMA <->
    WGMMA_TRANSPOSED is a relayout it has), so smalto's widened search infers the
    module as written, with no cast to suggest, and the checker accepts it."""
    vec = "vector<128x128xf16>"
    with reference.shared_context():
        transposed = str(jax_layouts.to_layout_attr(fa.WGMMA_TRANSPOSED_LAYOUT))
        wgmma = str(jax_layouts.to_layout_attr(fa.WGMMA_LAYOUT))
    text = func_module(
        [
            f'%c = "arith.constant"() <{{value = dense<1.0> : {vec}}}> : () -> {vec} '
            'loc("k.py":1:1)',
            f'%a = "mosaic_gpu.layout_cast"(%c) <{{new_layout = {wgmma}}}> : ({vec}) -> {vec} '
            'loc("k.py":2:1)',
            f'%b = "arith.addf"(%a, %a) : ({vec}, {vec}) -> {vec} loc("k.py":3:1)',
            f'"mosaic_gpu.custom_primitive"(%b) <{{in_layouts = [{transposed}], '
            'in_transforms = [], out_layouts = []}> ({\n  "mosaic_gpu.return"() : () -> ()\n'
            f'}}) : ({vec}) -> () loc("k.py":4:1)',
        ]
    )
    module = reference.parse(text, reference.make_context())
    smalto.infer_layout(module, arch=(9, 0))
    assert check(module, (9, 0)) == []
    assert str(module).count("mosaic_gpu.layout_cast") == 1
