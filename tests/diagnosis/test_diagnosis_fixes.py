"""The fixes a failing kernel is told, judged as the user runs smalto (issue #33).

The kernels are ``tests/unsat/kernels_fixes.py`` (Pallas, Hopper and Blackwell), their
modules as JAX hands them to inference in ``fixes_*.mlir``:

1. an edit is judged by whether smalto, as the user runs it (JAX's order, the complete
   and widened searches), then compiles the kernel: a wrong ``layout_cast`` beside an
   unrelated bf16 output gets its fix, said to need smalto where JAX's own pass still
   rejects the edited kernel (``SuggestedEdit.needs_smalto``), and only there;
2. every transfer with no optimized plan, SMEM or GMEM, load or store, gets the
   one-word edit at its line first, then the ``allow_unoptimized`` option, then the
   edits that keep it fast where some exist (or a note that none does);
3. the advice fits the transfer it is about (no "store it into an SMEM scratch ref" for
   a store into one);
4. every printed fix is verified here by lowering the edited kernel through JAX's
   dialect lowering, with smalto as the pass, and JAX's own pass is asked whether it
   takes the edited kernel too;
8. the message's own claim is smalto's inference and checker (JAX's dialect lowering at
   message time costs 10-30 times JAX's pass on a small kernel): asked for
   (``lowering_fixes``), that lowering runs on the first fix of every failing kernel of
   ``tests/unsat`` with a launch, takes it, and the fixes stay the same.
"""

from __future__ import annotations

import re
import sys
import warnings
from pathlib import Path
from typing import Any

import pytest
import reference
from jax._src.lib.mlir import ir
from jax.experimental.mosaic.gpu import layout_inference

import smalto
import smalto.jax
from smalto.check import check
from smalto.diagnose.jax_lowering import lower_in_own_launch
from smalto.diagnose.lowering_advice import OPTION
from smalto.diagnose.suggest import LOWERED_SHORT, NEEDS_SMALTO, VERIFIED_SHORT, SuggestedEdit
from smalto.diagnose.verify import lowering_fixes
from smalto.errors import UnoptimizedTransferWarning
from smalto.source.files import Sources, searching_beside

UNSAT = Path(__file__).parents[1] / "unsat"
sys.path.insert(0, str(UNSAT))
import kernels_fixes  # noqa: E402  (tests/unsat/kernels_fixes.py: the Pallas kernels)
from edit_kit import editing_first, make_edit  # noqa: E402

FIXTURES = sorted(f"fixes_{name}" for name in kernels_fixes.KERNELS)
# The transfers with no optimized plan: (kernel, memory, load or store).
NO_PLAN = {
    "fixes_tcgen05_transposed_epilogue": ("SMEM", "store"),
    "fixes_wgmma_transposed_epilogue": ("SMEM", "store"),
    "fixes_transposed_tile_load": ("SMEM", "load"),
    "fixes_tcgen05_fp8_out": ("GMEM", "store"),
    "fixes_bias_column_plus_wgmma": ("GMEM", "load"),
}


def _fail(name: str) -> tuple[smalto.InferenceError, str]:
    path = UNSAT / f"{name}.mlir"
    text = path.read_text()
    module = reference.parse(text, reference.make_context())
    # The user's source lines (kernels_fixes.py) are read beside the module.
    with searching_beside(path), pytest.raises(smalto.InferenceError) as info:
        smalto.infer_layout(module, arch=reference.text_arch(text))
    str(info.value)  # the diagnosis is made when the message is read
    return info.value, text


@pytest.fixture(scope="module")
def failures() -> dict[str, tuple[smalto.InferenceError, str]]:
    with searching_beside(UNSAT / "kernels_fixes.py"):
        return {name: _fail(name) for name in FIXTURES}


def _jax_takes(text: str, edit: SuggestedEdit, arch: tuple[int, int]) -> bool:
    """Whether JAX's own pass lays out the edited kernel in layouts its lowering takes."""
    module = reference.parse(text, reference.make_context())
    make_edit(module, edit)
    try:
        with module.context, ir.Location.unknown():
            layout_inference.infer_layout(module, arch=arch)
        lower_in_own_launch(module.operation)
    except Exception:  # noqa: BLE001 -- any refusal of JAX's: its pass or its lowering
        return False
    return True


def _fix_lines(message: str) -> list[str]:
    """The message from its first ``fix:`` line on."""
    lines = message.splitlines()
    first = next(i for i, line in enumerate(lines) if line.startswith("fix: "))
    return lines[first:]


# --- 4. every printed fix lowers, and says whether it needs smalto ---------------------------


@pytest.mark.parametrize("name", FIXTURES)
def test_every_printed_fix_lowers_through_jax_with_smalto_as_the_pass(
    name: str, failures: dict
) -> None:
    error, text = failures[name]
    arch = reference.text_arch(text)
    edits = error.conflict.edits
    assert edits, str(error)
    for edit in edits:
        module = reference.parse(text, reference.make_context())
        make_edit(module, edit)
        smalto.infer_layout(module, arch=arch)
        assert check(module, arch) == [], edit.text
        lower_in_own_launch(module.operation)  # raises what JAX's dialect lowering raises
        # Said to need smalto exactly where JAX's own pass rejects the edited kernel.
        assert edit.needs_smalto == (not _jax_takes(text, edit, arch)), edit.text
        # (A change of what the kernel computes is worded among the choices, not the fixes.)
        words = [*error.conflict.fixes, *error.conflict.choices]
        said = "needs smalto installed" in next(f for f in words if edit.text in f)
        assert said == edit.needs_smalto, edit.text


@pytest.mark.parametrize("name", FIXTURES)
def test_the_first_fix_makes_jax_lower_the_pallas_kernel(name: str, failures: dict) -> None:
    """JAX's whole lowering, from the Pallas kernel to its custom call, with smalto as the
    pass: it fails as written and compiles with the first fix made."""
    error, _ = failures[name]
    fn, args, arch = kernels_fixes.KERNELS[name.removeprefix("fixes_")]
    with pytest.raises(smalto.jax.KernelLoweringError):
        smalto.jax.lower(fn, *args, arch=arch, by="smalto")
    with editing_first(error.conflict.edits[0]) as edited:
        lowering = smalto.jax.lower(fn, *args, arch=arch, by="smalto")
    assert len(edited) == 1
    assert lowering.lowered.as_text().count("stablehlo.custom_call @mosaic_gpu_v2") == 1


# --- 1. a verified fix is not withheld ----------------------------------------------------------


@pytest.mark.parametrize("dtype", ["f32", "bf16"])
def test_a_wrong_cast_beside_an_unrelated_output_gets_its_fix(dtype: str, failures: dict) -> None:
    """The wrong cast's edit fixes the kernel whatever the second output's dtype; with a
    bf16 output only smalto's widened search lays out the rest, and the fix says so."""
    error, _ = failures[f"fixes_row_sums_and_scaled_{dtype}"]
    message = str(error)
    assert "no single edit" not in message
    first = error.conflict.edits[0]
    assert first.kind == "retarget" and first.new == "WGMMA_ROW", message
    fix = _fix_lines(message)[0]
    assert fix.startswith("fix: change the layout cast at kernels_fixes.py")
    assert first.needs_smalto == (dtype == "bf16")
    assert ("needs smalto installed" in fix) == (dtype == "bf16")


def test_the_blackwell_cast_beside_a_second_output_gets_its_fix(failures: dict) -> None:
    error, _ = failures["fixes_tcgen05_row_max_and_scaled_f32"]
    first = error.conflict.edits[0]
    assert first.kind == "retarget" and first.new == "TCGEN05_ROW", str(error)
    assert not first.needs_smalto


# --- 2. a transfer with no plan: the one-word edit, the option, then what keeps it fast -------


@pytest.mark.parametrize("name", sorted(NO_PLAN))
def test_a_transfer_with_no_plan_gets_the_one_word_edit_first(name: str, failures: dict) -> None:
    error, _ = failures[name]
    memory, direction = NO_PLAN[name]
    fixes = error.conflict.fixes
    first = error.conflict.edits[0]
    assert first.kind == "unoptimize", str(error)
    call = "plgpu.store(" if direction == "store" else "plgpu.load("
    assert call in fixes[0] and "optimized=False" in fixes[0], fixes[0]
    assert fixes[1].startswith(OPTION), fixes
    cost = "uncoalesced" if memory == "GMEM" else "bank-conflicted"
    assert cost in fixes[0]
    # Then the edits that keep it optimized, or a word that none does.
    keeps_it_fast = [e for e in error.conflict.edits[1:] if e.kind != "unoptimize"]
    said_none = "keeps this transfer optimized" in str(error)
    assert bool(keeps_it_fast) != said_none, str(error)


def test_the_sm100_transposed_epilogue_in_the_kernel_s_words(failures: dict) -> None:
    """The production sm100 epilogue: JAX's phrase, then the store at its line made
    unoptimized, as the kernel spells it, then the option, then other transforms."""
    error, _ = failures["fixes_tcgen05_transposed_epilogue"]
    assert str(error).startswith(
        "Failed to infer a possible set of layouts: no optimized SMEM <-> registers transfer "
        "plan could be synthesized"
    )
    lines = _fix_lines(str(error))
    assert lines[0].startswith(
        "fix: make this transfer unoptimized where written: `plgpu.store(acc_smem.T, "
        "plgpu.layout_cast(acc, plgpu.Layout.TCGEN05_TRANSPOSED), optimized=False)` at "
        "kernels_fixes.py:"
    )
    assert lines[1] == (
        "    kernels_fixes.py:151 | "
        "acc_smem.T[...] = plgpu.layout_cast(acc, plgpu.Layout.TCGEN05_TRANSPOSED)"
    )
    assert lines[2].startswith(f"  or: {OPTION}")
    # Then what keeps it optimized, what works with JAX's own pass too first: the
    # ref's transforms, then the cast (which needs smalto).
    second, *rest = error.conflict.edits[1:]
    assert second.kind == "retarget" and "transforms of the SMEM ref" in second.text
    assert not second.needs_smalto
    assert "(8, 32)" in lines[lines.index(next(x for x in lines if second.text in x))]
    assert all(e.needs_smalto for e in rest if e.kind == "retarget" and "cast" in e.text)
    assert "no single edit" not in str(error)


def test_the_core_of_the_transposed_epilogue_names_the_cast_and_the_store(failures: dict) -> None:
    """The core lists the requirements that conflict (the cast, the optimized store), not
    only the ref's transforms and its transposed view (which hold together)."""
    error, _ = failures["fixes_tcgen05_transposed_epilogue"]
    texts = [r.text for r in error.conflict.requirements]
    assert any("TCGEN05_TRANSPOSED" in t and "cast" in t for t in texts), texts
    assert any("supported (optimized) transfer" in t for t in texts), texts
    assert error.conflict.minimal


# --- 3. advice that fits the transfer ------------------------------------------------------------


@pytest.mark.parametrize("name", sorted(NO_PLAN))
def test_the_unoptimized_warning_fits_the_transfer(name: str) -> None:
    """With ``allow_unoptimized`` the kernel compiles, and the warning's faster way fits:
    no staging through an SMEM scratch ref for a transfer that is one already."""
    memory, direction = NO_PLAN[name]
    text = (UNSAT / f"{name}.mlir").read_text()
    module = reference.parse(text, reference.make_context())
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        with searching_beside(UNSAT / f"{name}.mlir"):
            smalto.infer_layout(module, arch=reference.text_arch(text), allow_unoptimized=True)
    said = [str(w.message) for w in caught if issubclass(w.category, UnoptimizedTransferWarning)]
    assert len(said) == 1, said
    (warning,) = said
    assert f"this {memory} {direction}" in warning
    if memory == "SMEM":
        assert "SMEM scratch ref" not in warning and "copy_gmem_to_smem" not in warning
        assert "transforms" in warning
    elif direction == "store":
        assert "copy_smem_to_gmem" in warning
    else:
        assert "copy_gmem_to_smem" in warning


@pytest.mark.parametrize(
    "name", sorted(n for n, (memory, _) in NO_PLAN.items() if memory == "SMEM")
)
def test_the_diagnosis_of_an_smem_transfer_gives_no_gmem_advice(name: str, failures: dict) -> None:
    error, _ = failures[name]
    message = str(error)
    assert "copy_smem_to_gmem(o_smem" not in message
    assert "bf16 WGMMA layouts" not in message  # no example for another layout than its own


# --- distinct values never share a name -----------------------------------------------------------


_NAMED = re.compile(r"`([^`]+)` \((%[\w#]+)\)")


@pytest.mark.parametrize("name", FIXTURES)
def test_distinct_values_never_share_a_name(name: str, failures: dict) -> None:
    error, _ = failures[name]
    names: dict[str, set[str]] = {}
    for user, ssa in _NAMED.findall(str(error)):
        names.setdefault(user, set()).add(ssa)
    shared = {user: ssas for user, ssas in names.items() if len(ssas) > 1}
    assert not shared, shared
    # And one value has one name: named by the user's source once, it is everywhere.
    named = {ssa for ssas in names.values() for ssa in ssas}
    for requirement in error.conflict.requirements:
        for prefix, ssa in re.findall(r"(`[^`]+` \()?(%[\w#]+)", requirement.text):
            assert prefix or ssa not in named, requirement.text


def test_sources_are_read_beside_the_module() -> None:
    """(The fixtures are located in kernels_fixes.py, read beside them.)"""
    with searching_beside(UNSAT / "fixes_tcgen05_fp8_out.mlir"):
        assert Sources().line("kernels_fixes.py", 1) is not None


def test_the_fixtures_are_what_jax_hands_to_inference() -> None:
    """Each fixture's located lines are lines of kernels_fixes.py (regenerate with
    ``python tests/unsat/kernels_fixes.py``)."""
    source = (UNSAT / "kernels_fixes.py").read_text().splitlines()
    for name in FIXTURES:
        text = (UNSAT / f"{name}.mlir").read_text()
        lines = {int(n) for n in re.findall(r'loc\("kernels_fixes\.py":(\d+):\d+\)', text)}
        assert lines, name
        assert all(0 < n <= len(source) for n in lines), name


# --- 8. a refusal raises as fast as JAX's pass: the diagnosis waits for the reader -----------


def test_on_the_pallas_route_the_diagnosis_waits_until_the_message_is_read() -> None:
    """JAX copies the message of an error unwinding through a traced op (its
    ``JaxStackTraceBeforeTransformation``): that copy is JAX's phrase alone, so raising
    costs no diagnosis; the error the caller catches says everything when read."""
    from smalto.jax.capture import lower_for_cuda
    from smalto.jax.hooks import forced_arch

    fn, args, arch = kernels_fixes.KERNELS["row_sums_and_scaled_bf16"]
    with forced_arch(arch), smalto.jax.enabled(), pytest.raises(smalto.InferenceError) as info:
        lower_for_cuda(fn, args)
    error = info.value
    assert not error.diagnosed
    copy = error.__cause__
    assert type(copy).__name__ == "JaxStackTraceBeforeTransformation"
    assert "cannot relayout from register layout WGMMA_ROW to WGMMA_COL" in str(copy)
    assert "fix:" not in str(copy)
    assert "\nfix: change the layout cast at" in str(error)
    assert error.diagnosed


def test_jax_s_phrase_that_prints_the_op_is_made_when_read() -> None:
    """A cast whose layout does not fit its value: JAX's phrase prints the cast op, which
    costs more than a tenth of the refusal, so it is printed when the message is first read,
    on the Pallas route by JAX's copy of it as the error unwinds; the text is JAX's own."""
    from jax.experimental.pallas import mosaic_gpu as plgpu

    from smalto.jax.capture import lower_for_cuda
    from smalto.jax.hooks import forced_arch

    def body(x_ref: Any, o_ref: Any) -> None:
        o_ref[...] = plgpu.layout_cast(x_ref[...], plgpu.Layout.WGMMA)

    fn = kernels_fixes._kernel(body, kernels_fixes._sds(32, 32))
    args = (kernels_fixes._sds(32, 32),)
    copies = []
    for mine in (False, True):
        with forced_arch(kernels_fixes.HOPPER), pytest.raises(ValueError) as info:
            if mine:
                with smalto.jax.enabled():
                    lower_for_cuda(fn, args)
            else:
                lower_for_cuda(fn, args)
        copies.append(str(info.value.__cause__).split(": ", 1)[1].split("\n", 1)[0])
    jax_s, ours = copies
    layout_repr = jax_s.removeprefix("Cannot cast to layout ").split(": the layout", 1)[0]
    assert layout_repr.startswith("TiledLayout(")
    assert "= mosaic_gpu.layout_cast " in jax_s
    # The first line in smalto's words (the layout by name, the op by its name)...
    assert ours == (
        f"{smalto.errors.FAILURE_PREFIX}: Cannot cast to layout WGMMA: the layout is not "
        "compatible with the operand shape (32, 32) in `mosaic_gpu.layout_cast`."
    )
    error = info.value
    assert isinstance(error, smalto.InferenceError)
    # ... then JAX's (the layout named as smalto names it, where JAX prints its repr).
    assert error.phrase == f"{smalto.errors.FAILURE_PREFIX}: {jax_s.replace(layout_repr, 'WGMMA')}"
    assert error.headline == ours
    assert str(error).startswith(f"{ours}\njax: {error.phrase}\nfix: change the layout cast at ")


def test_a_phrase_made_when_read_is_the_message_s_first_line_however_it_is_read() -> None:
    """``InferenceError`` with a phrase made when read: its args, its string, its phrase
    and a pickled copy all say it, made once."""
    import pickle

    made: list[int] = []

    def phrase() -> str:
        made.append(1)
        return f"{smalto.errors.FAILURE_PREFIX}: JAX's words"

    def diagnose() -> tuple[str, object]:
        return "why, in smalto's words", None

    for read in (
        str,
        lambda e: e.args[0],
        lambda e: e.phrase,
        lambda e: str(pickle.loads(pickle.dumps(e))),
    ):
        made.clear()
        error = smalto.InferenceError(phrase=phrase, diagnose=diagnose)
        assert not made
        assert read(error).startswith(f"{smalto.errors.FAILURE_PREFIX}: JAX's words")
        assert str(error) == f"{smalto.errors.FAILURE_PREFIX}: JAX's words\nwhy, in smalto's words"
        assert made == [1]
    without_diagnosis = smalto.InferenceError(phrase=phrase)
    assert str(without_diagnosis) == f"{smalto.errors.FAILURE_PREFIX}: JAX's words"


def test_jax_s_lowering_verifies_the_first_fix_unless_the_budget_says_not() -> None:
    """JAX's dialect lowering runs on the first verified edit only (the message's costliest
    part on a small kernel); ``Budget(lower=False)`` leaves it to inference and the checker."""
    from smalto.diagnose.candidates import Candidates
    from smalto.diagnose.core import find_core
    from smalto.diagnose.verify import Budget, try_edits
    from smalto.infer import in_context
    from smalto.program.reader import read_program
    from smalto.rules import derive_system
    from smalto.solve.options import SolveOptions

    text = (UNSAT / "fixes_row_sums_and_scaled_f32.mlir").read_text()
    module = reference.parse(text, reference.make_context())
    arch = reference.text_arch(text)
    with in_context(module):
        program = read_program(module)
        system = derive_system(program, arch)
        options = SolveOptions(arch=arch)
        core, _ = find_core(program, system, options, set())
        trials = {
            lower: try_edits(
                program,
                system,
                options,
                Candidates(program, system, options, list(core), {}),
                Budget(lower=lower),
            )
            for lower in (True, False)
        }
    assert trials[True].lowered is True and trials[False].lowered is None
    assert trials[True].verified == trials[False].verified


# --- 8. JAX's lowering of the first fix: asked for, not made with every message -------------

# Every failing kernel of tests/unsat (the gathers fail whatever their layouts).
# (Not the gathers, nor the kernel mixing collective and 1-CTA MMAs: no layout conflict.)
EVERY_UNSAT = sorted(
    p.stem
    for p in UNSAT.glob("*.mlir")
    if not p.stem.startswith("gather_") and p.stem != "pallas_tmem_collective_and_single_cta_mma"
)


def _message(name: str, *, lower: bool) -> smalto.InferenceError:
    """The kernel's refusal, its message made (read) with JAX's lowering of the first fix
    on or off."""
    path = UNSAT / f"{name}.mlir"
    text = path.read_text()
    module = reference.parse(text, reference.make_context())
    with searching_beside(path), pytest.raises(smalto.InferenceError) as info:
        smalto.infer_layout(module, arch=reference.text_arch(text))
    with searching_beside(path), lowering_fixes(lower):
        str(info.value)
    return info.value


@pytest.mark.parametrize("name", EVERY_UNSAT)
def test_asked_for_jax_s_lowering_takes_the_first_fix_of_every_failing_kernel(name: str) -> None:
    quick = _message(name, lower=False)
    lowered = _message(name, lower=True)
    has_launch = "gpu.launch" in (UNSAT / f"{name}.mlir").read_text()
    # The same fixes in the same order; only what verified them is said otherwise.
    assert [p.fixes for p in _claimless(quick)] == [p.fixes for p in _claimless(lowered)]
    # (A reduction's other axis, a choice, never a fix: test_diagnosis_words.py.)
    for problem in lowered.conflict.problems:
        flags = [e.changes_meaning for e in problem.edits]
        assert flags == sorted(flags)  # the fixes' edits first, then the choices'
        if not problem.fixes:
            continue
        if has_launch:  # JAX's dialect lowering ran on the first fix, and took it
            assert problem.edits_lowered is True, name
            assert NEEDS_SMALTO in problem.fixes[0] or LOWERED_SHORT in problem.fixes[0]
        else:  # nothing to rebuild a launch context from: inference and the checker said
            assert problem.edits_lowered is None
    for problem in quick.conflict.problems:
        if problem.fixes:
            assert problem.edits_lowered is None
            assert NEEDS_SMALTO in problem.fixes[0] or VERIFIED_SHORT in problem.fixes[0]


def _claimless(error: smalto.InferenceError) -> list[Any]:
    """The problems, with what verified each fix left out of its words."""
    from dataclasses import replace

    def bare(fix: str) -> str:
        return fix.replace(LOWERED_SHORT, "").replace(VERIFIED_SHORT, "")

    return [replace(p, fixes=[bare(f) for f in p.fixes]) for p in error.conflict.problems]


def test_smalto_infer_lower_fixes_has_jax_s_lowering_take_the_first_fix(
    capsys: pytest.CaptureFixture[str],
) -> None:
    """``smalto infer --lower-fixes``: the first fix's claim is JAX's dialect lowering's."""
    from smalto.cli.main import main

    path = str(UNSAT / "pallas_column_max_cast_to_rows.mlir")
    claims = {}
    for flags in ([], ["--lower-fixes"]):
        assert main(["infer", *flags, path]) == 1
        fix = next(line for line in capsys.readouterr().err.splitlines() if "fix: " in line)
        claims[bool(flags)] = fix
    assert claims[False].endswith(f"({VERIFIED_SHORT})")
    assert claims[True].endswith(f"({LOWERED_SHORT})")
    assert claims[True].replace(LOWERED_SHORT, VERIFIED_SHORT) == claims[False]
