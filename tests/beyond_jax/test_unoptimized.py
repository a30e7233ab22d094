"""``allow_unoptimized``: the fewest transfers made unoptimized where a kernel as written has
no layouts that lower (issue #24, sections 0 and 1).

Every answer is lowered by JAX's own dialect lowering with a launch context:
the Pallas kernels through ``smalto.jax.lower`` (the route users take), the
corpus modules with the launch context rebuilt from their ``gpu.launch``.
The option acts only where the module as written has no layouts that lower;
it never changes an answer smalto gives as written (rule 1 and rule 2 stay
exact), and a failed inference leaves the module as it came.
"""

from __future__ import annotations

import functools
import json
import re
import warnings
from collections.abc import Callable
from pathlib import Path
from typing import Any

import jax.numpy as jnp
import pytest
import reference
from cli_run import run
from corpus_lowering import lower_with_jax
from rule_kit import parse
from user_kernels_unoptimized import (
    BLACKWELL,
    F8,
    HOPPER,
    matmul_narrow_out,
    row_max_into_table_column,
    scale_rows_by_table_column,
    scale_window,
    sds,
    sum_of_table_columns,
    tcgen05_narrow_out,
    tcgen05_row_max_and_out,
    tcgen05_shift_by_table_column,
)

import smalto
import smalto.jax
from smalto.basics.mlir import in_context
from smalto.pipeline.steps import Unsatisfiable, solve_as_written
from smalto.rewrite import transfers
from smalto.rewrite.transfers import Plan, fewest
from smalto.solve.options import SolveOptions

TESTS = Path(__file__).resolve().parents[1]
MODULES = TESTS / "unoptimized"
INDEX = json.loads((MODULES / "index.json").read_text())
BF16, F16, F32 = jnp.bfloat16, jnp.float16, jnp.float32
UNOPTIMIZED = "optimized = false"


def _lower(fn: Callable[..., Any], *args: Any, arch: tuple[int, int], **options: Any) -> Any:
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        lowering = smalto.jax.lower(fn, *args, arch=arch, by="smalto", **options)
    transfers = [w for w in caught if issubclass(w.category, smalto.UnoptimizedTransferWarning)]
    return lowering, transfers


def _inferred(lowering: Any) -> list[str]:
    """Each kernel's inferred module, without the dump name (a counter of the process)."""
    return [re.sub(r'dump_basename = "[^"]*"', "", k.inferred_text) for k in lowering.kernels]


def _a(dtype: Any = BF16) -> Any:
    return sds((128, 64), dtype)


def _b(dtype: Any = BF16) -> Any:
    return sds((64, 128), dtype)


# (name, arch, kernel, args, transfers the option makes unoptimized, their kernel lines)
REFUSED = [
    ("tcgen05 bf16 out", BLACKWELL, functools.partial(tcgen05_narrow_out, out_dtype=BF16),
     (_a(), _b()), 1),
    ("tcgen05 f16 out", BLACKWELL, functools.partial(tcgen05_narrow_out, out_dtype=F16),
     (_a(F16), _b(F16)), 1),
    ("tcgen05 fp8 out", BLACKWELL, functools.partial(tcgen05_narrow_out, out_dtype=F8),
     (_a(), _b()), 1),
    ("wgmma fp8 out", HOPPER, functools.partial(matmul_narrow_out, out_dtype=F8), (_a(), _b()), 1),
    ("tcgen05 row max and out", BLACKWELL,
     functools.partial(tcgen05_row_max_and_out, out_dtype=BF16), (_a(), _b()), 2),
    ("wgmma scale by a table column", HOPPER, scale_rows_by_table_column,
     (sds((64, 64), BF16), sds((64, 64), BF16), sds((64, 2), F32)), 1),
    ("tcgen05 shift by a table column", BLACKWELL, tcgen05_shift_by_table_column,
     (_a(), _b(), sds((128, 2), F32)), 1),
    ("wgmma row max into a table column", HOPPER, row_max_into_table_column,
     (sds((64, 64), BF16), sds((64, 64), BF16)), 2),
]  # fmt: skip


@pytest.mark.parametrize(
    ("name", "arch", "fn", "args", "count"), REFUSED, ids=[r[0] for r in REFUSED]
)
def test_refused_as_written_compiles_with_the_option(
    name: str, arch: tuple[int, int], fn: Callable[..., Any], args: Any, count: int
) -> None:
    with pytest.raises(smalto.jax.KernelLoweringError) as refused:
        smalto.jax.lower(fn, *args, arch=arch, by="smalto")
    assert refused.value.stage == "inference"
    assert "optimized=False" in str(refused.value)  # the Pallas way out is named
    lowering, transfers = _lower(fn, *args, arch=arch, allow_unoptimized=True)
    (kernel_,) = lowering.kernels
    assert kernel_.inferred_by == "smalto" and kernel_.arch == arch
    assert kernel_.inferred_text is not None
    # The fewest: exactly the transfers that stand in the way, each warned about once, at
    # its own line of the kernel file, with its cost and the fast alternative.
    assert kernel_.inferred_text.count(UNOPTIMIZED) - kernel_.text.count(UNOPTIMIZED) == count
    assert len(transfers) == count
    assert len({w.lineno for w in transfers}) == count
    for warning in transfers:
        assert Path(warning.filename).name == "user_kernels_unoptimized.py"
        text = str(warning.message)
        assert "uncoalesced" in text and "plgpu.copy_" in text
        assert "optimized=False)" in text


@pytest.mark.parametrize(
    ("arch", "fn", "args"),
    [
        (HOPPER, functools.partial(matmul_narrow_out, out_dtype=BF16), (_a(), _b())),
        (HOPPER, functools.partial(matmul_narrow_out, out_dtype=F16), (_a(F16), _b(F16))),
        (HOPPER, sum_of_table_columns, (sds((128, 2), F32),)),
        (HOPPER, scale_window, (sds((64, 128), F32),)),
        (BLACKWELL, scale_window, (sds((64, 128), BF16),)),
    ],
    ids=["wgmma bf16 out", "wgmma f16 out", "sum of table columns", "window f32", "window bf16"],
)
def test_the_option_never_acts_where_the_kernel_lowers_as_written(
    arch: tuple[int, int], fn: Callable[..., Any], args: Any
) -> None:
    plain, _ = _lower(fn, *args, arch=arch)
    allowed, transfers = _lower(fn, *args, arch=arch, allow_unoptimized=True)
    assert not transfers
    assert _inferred(allowed) == _inferred(plain)


@pytest.mark.parametrize(
    ("arch", "fixed", "args"),
    [
        (
            BLACKWELL,
            functools.partial(tcgen05_narrow_out, out_dtype=BF16, fixed=True),
            (_a(), _b()),
        ),
        (HOPPER, functools.partial(matmul_narrow_out, out_dtype=F8, fixed=True), (_a(), _b())),
        (
            HOPPER,
            functools.partial(scale_rows_by_table_column, fixed=True),
            (sds((64, 64), BF16), sds((64, 64), BF16), sds((64, 2), F32)),
        ),
        (
            HOPPER,
            functools.partial(row_max_into_table_column, fixed=True),
            (sds((64, 64), BF16), sds((64, 64), BF16)),
        ),
    ],  # fmt: skip
    ids=["tcgen05 bf16 out", "wgmma fp8 out", "table column load", "table column store"],
)
def test_the_edit_a_user_makes_instead_lowers_and_matches_jax(
    arch: tuple[int, int], fixed: Callable[..., Any], args: Any
) -> None:
    """``plgpu.store(..., optimized=False)`` / ``plgpu.load(ref.at[...], optimized=False)``
    written in the kernel: JAX's answer lowers, and smalto's is the same."""
    theirs = smalto.jax.lower(fixed, *args, arch=arch, by="jax")
    ours, transfers = _lower(fixed, *args, arch=arch)
    assert not transfers
    assert _inferred(ours) == _inferred(theirs)


# --- the corpus modules smalto refuses ----------------------------------------------------------


def _entries() -> list[reference.CorpusEntry]:
    return reference.load_entries(MODULES)


@pytest.mark.parametrize("entry", _entries(), ids=lambda e: e.key)
def test_corpus_refusals_compile_with_the_option(entry: reference.CorpusEntry) -> None:
    text = entry.path.read_text()
    module = parse(text)
    with pytest.raises(smalto.InferenceError):
        smalto.infer_layout(module, arch=entry.arch)
    assert str(module) == str(parse(text))  # a failed inference leaves it as it came
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        smalto.infer_layout(module, arch=entry.arch, allow_unoptimized=True)
    made = [w for w in caught if issubclass(w.category, smalto.UnoptimizedTransferWarning)]
    assert made and str(module).count(UNOPTIMIZED) >= len(made)
    assert not smalto.check.check(module, entry.arch)
    lower_with_jax(module)  # raises where JAX's lowering rejects the answer


def test_the_fewest_transfers_are_made_unoptimized() -> None:
    """Two of the four optimized transfers of this Hopper test stand in the way."""
    entry = next(e for e in _entries() if "load_store47" in e.key)
    module = parse(entry.path.read_text())
    with in_context(module):
        with pytest.raises(Unsatisfiable) as failed:
            solve_as_written(module, SolveOptions(arch=entry.arch))
        plan = Plan(
            failed.value.program,
            failed.value.system,
            SolveOptions(fuel=smalto.DEFAULT_FUEL, arch=entry.arch),
        )
        fewest = plan.fewest()
        assert len(plan.candidates) == 4 and fewest is not None and len(fewest) == 2
        # No single transfer would do, and the pair found does.
        assert not any(plan.solves(frozenset({op})) for op in plan.candidates)
        assert plan.solves(frozenset(fewest))


def test_the_subset_search_asks_smallest_first_in_order() -> None:
    asked: list[frozenset[str]] = []

    def needs_b_and_c(chosen: frozenset[str]) -> bool:
        asked.append(chosen)
        return {"b", "c"} <= chosen

    items = ["a", "b", "c", "d"]
    assert fewest(items, needs_b_and_c, largest=4, limit=100) == ["b", "c"]
    # The four singles, then pairs in order up to (b, c): ab, ac, ad, bc.
    assert [len(c) for c in asked] == [1, 1, 1, 1, 2, 2, 2, 2]
    assert fewest(items, needs_b_and_c, largest=1, limit=100) is None  # pairs not allowed
    asked.clear()
    assert fewest(items, needs_b_and_c, largest=4, limit=5) is None  # asked five, none did
    assert len(asked) == 5


def test_past_the_exact_sets_the_plan_keeps_an_irreducible_set(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Seven candidates of which the last five are needed: past ``EXACT_SETS`` sets
    (all 35 triples come first) the plan stops counting and drops, from the last, every
    op it can; with a higher limit it finds the same set by counting."""
    asked: list[frozenset[int]] = []

    def needs_the_last_five(self: Plan, ops: frozenset[int]) -> bool:
        asked.append(ops)
        return {2, 3, 4, 5, 6} <= ops

    plan = Plan.__new__(Plan)
    plan.candidates = list(range(7))
    monkeypatch.setattr(Plan, "solves", needs_the_last_five)
    assert plan.fewest() == [2, 3, 4, 5, 6]
    assert len(asked) == 1 + transfers.EXACT_SETS + 7  # all, the exact sets, one drop each
    asked.clear()
    monkeypatch.setattr(transfers, "EXACT_SETS", 200)
    assert plan.fewest() == [2, 3, 4, 5, 6]
    assert len(asked) == 1 + 7 + 21 + 35 + 35 + 21  # the last set of five is the answer
    monkeypatch.setattr(Plan, "solves", lambda self, ops: len(ops) == 7)
    assert plan.fewest() == list(range(7))  # every smaller set asked, none does: all


def test_where_no_transfer_stands_in_the_way_the_module_is_left_as_it_came() -> None:
    """Casts no relayout reconciles (WGMMA, then strided): no transfer plan is the cause,
    so the option changes nothing, and the error says it tried."""
    from rms_norm import UNSAT

    text = UNSAT
    module = parse(text)
    with pytest.raises(smalto.InferenceError) as failed:
        smalto.infer_layout(module, allow_unoptimized=True)
    assert str(module) == str(parse(text))
    notes = "\n".join(failed.value.notes)
    assert "not a transfer plan" in notes


@pytest.mark.parametrize(
    "category", [smalto.UnoptimizedTransferWarning, smalto.UnitDimRewriteWarning]
)
def test_a_warning_turned_into_an_error_leaves_the_module_as_it_came(category: type) -> None:
    """Where the caller makes the rescue's warning an error, the inference fails, and a
    failed inference changes nothing (the rescue announces before it changes the module)."""
    if category is smalto.UnoptimizedTransferWarning:
        entry = _entries()[0]
        text, arch = entry.path.read_text(), entry.arch
    else:
        from rms_norm import RMS_NORM

        text, arch = RMS_NORM, HOPPER
    module = parse(text)
    with warnings.catch_warnings():
        warnings.simplefilter("error", category)
        with pytest.raises(category):
            smalto.infer_layout(module, arch=arch, allow_unoptimized=True)
    assert str(module) == str(parse(text))


# --- the command line ----------------------------------------------------------------------------


def test_the_command_line_refuses_then_compiles_with_allow_unoptimized(tmp_path: Path) -> None:
    entry = next(e for e in _entries() if "broadcast_in_dim11" in e.key)
    refused = run("infer", entry.path)
    assert refused.status == 1
    assert "--allow-unoptimized" in refused.err or "allow_unoptimized" in refused.err
    out = tmp_path / "out.mlir"
    ran = run("infer", entry.path, "--allow-unoptimized", "-o", out)
    assert ran.status == 0, ran.err
    assert out.read_text().count(UNOPTIMIZED) > entry.path.read_text().count(UNOPTIMIZED)
    warned = [line for line in ran.err.splitlines() if line.startswith("smalto: warning:")]
    assert len(warned) == 1 and "runs unoptimized" in warned[0]


def test_the_pallas_route_takes_the_option_from_the_environment(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    import smalto.jax as route

    monkeypatch.setenv(route.ENV_ENABLE, "1")
    monkeypatch.setenv("SMALTO_JAX_ALLOW_UNOPTIMIZED", "1")
    try:
        route._install_from_environment()
        assert route.is_installed()
        lowering, transfers = _lower(
            functools.partial(tcgen05_narrow_out, out_dtype=BF16), _a(), _b(), arch=BLACKWELL
        )
        assert len(transfers) == 1 and lowering.kernels[0].inferred_by == "smalto"
    finally:
        route.uninstall()
