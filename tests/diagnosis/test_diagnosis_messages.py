"""What a refused kernel's message says, and where (issues #24 sections 2-5, #25 points 1-2).

- The message leads with the verified fix (JAX's phrase first, then ``fix:`` with
  the user's line), then why, each requirement once; values are named by the
  user's source text where it can be read, one name per value; the rest is in
  the verbose message.
- Every independent problem is reported, each with its own values and fix,
  its fixes verified with the other problems' fixes made too.
- A layout an op fixes that the value's type cannot take is stated as a
  requirement too, in the lowering's own words.
- The route Pallas users take (``smalto.jax``) gets the same verified fix as
  ``smalto infer`` on the captured module.
- The diagnosis is made when the message is first read, not when the pass
  fails.
"""

from __future__ import annotations

import inspect
import re
import sys
from pathlib import Path
from typing import Any

import jax
import jax.numpy as jnp
import pytest
from blackwell_kit import ADDR, alloc, dealloc, tmem_cast, tmem_default
from jax.experimental.pallas import mosaic_gpu as plgpu
from mlir_snippets import func_module
from rule_kit import WGMMA, layout_attr_text, parse
from user_kernels_lowering import tcgen05_acc, tcgen05_scratch
from user_kernels_unoptimized import BLACKWELL, HOPPER, scale_rows_by_table_column, sds

import smalto
import smalto.jax
from smalto.diagnose.verify import lowering_fixes

UNSAT = Path(__file__).parents[1] / "unsat"
sys.path.insert(0, str(UNSAT))
import kernels  # noqa: E402  (tests/unsat/kernels.py: the Pallas kernels)

BF16, F32 = jnp.bfloat16, jnp.float32


def _refusal(fn: Any, *args: Any, arch: tuple[int, int]) -> smalto.InferenceError:
    """smalto's error for ``fn`` lowered the way Pallas users do (``smalto.jax``)."""
    with pytest.raises(smalto.jax.KernelLoweringError) as failed:
        smalto.jax.lower(fn, *args, arch=arch, by="smalto")
    error = failed.value.__cause__
    assert isinstance(error, smalto.InferenceError), failed.value
    return error


# --- two problems ------------------------------------------------------------------------------


def max_cast_and_narrow_sums(a: jax.Array, b: jax.Array) -> Any:
    """Two unrelated mistakes (Blackwell): row maxima cast to the column layout, and 16-bit
    row sums stored straight to GMEM (2 bytes a thread: no plan in any layout)."""
    m = a.shape[0]

    def body(a_gmem, b_gmem, s_gmem, r_gmem, a_smem, b_smem, acc_tmem, loaded, done):
        acc = tcgen05_acc(a_gmem, b_gmem, a_smem, b_smem, acc_tmem, loaded, done)
        maxima = plgpu.layout_cast(jnp.max(acc, axis=1), plgpu.Layout.TCGEN05.reduce(0))
        s_gmem[...] = maxima
        r_gmem[...] = jnp.sum(acc, axis=1).astype(jnp.bfloat16)

    return plgpu.kernel(
        body,
        out_type=(sds((m,), F32), sds((m,), BF16)),
        scratch_types=tcgen05_scratch(a, b),
        compiler_params=plgpu.CompilerParams(lowering_semantics=plgpu.LoweringSemantics.Warpgroup),
    )(a, b)


ARGS = (sds((128, 64), BF16), sds((64, 128), BF16))


def test_each_independent_problem_is_reported_with_its_own_fix() -> None:
    error = _refusal(max_cast_and_narrow_sums, *ARGS, arch=BLACKWELL)
    message = str(error)
    assert "the kernel has 2 problems" in message
    assert "problem 1 of 2:" in message and "problem 2 of 2:" in message
    problems = error.conflict.problems
    assert len(problems) == 2
    fixes = {problem.edits[0].kind for problem in problems}
    assert fixes == {"unoptimize", "retarget"}
    for problem in problems:
        # Each located at its own line, and verified with the other's fix (JAX's lowering
        # of both together: test_the_two_fixes_together_make_the_kernel_lower).
        assert problem.fixes[0].endswith("its checker accepts the layouts)")
        lines = {r.location.split(":")[-2] for r in problem.requirements}
        assert lines, problem
    # Asked for, JAX's dialect lowering runs on each first fix (with the other's): it takes it.
    with lowering_fixes():
        asked = _refusal(max_cast_and_narrow_sums, *ARGS, arch=BLACKWELL)
        str(asked)
    assert [p.edits_lowered for p in asked.conflict.problems] == [True, True]
    assert all(
        p.fixes[0].endswith("JAX's Mosaic GPU lowering takes it)") for p in asked.conflict.problems
    )
    cast, store = sorted(problems, key=lambda p: p.edits[0].kind != "retarget")
    assert "TCGEN05_ROW" in cast.fixes[0] and "maxima" in cast.message()
    assert (
        "plgpu.store(r_gmem, jnp.sum(acc, axis=1).astype(jnp.bfloat16), optimized=False)"
        in (store.fixes[0])
    )


def test_the_two_fixes_together_make_the_kernel_lower() -> None:
    """The kernel as its author would write it after both fixes compiles."""

    def fixed(a: jax.Array, b: jax.Array) -> Any:
        m = a.shape[0]

        def body(a_gmem, b_gmem, s_gmem, r_gmem, a_smem, b_smem, acc_tmem, loaded, done):
            acc = tcgen05_acc(a_gmem, b_gmem, a_smem, b_smem, acc_tmem, loaded, done)
            maxima = plgpu.layout_cast(jnp.max(acc, axis=1), plgpu.Layout.TCGEN05.reduce(1))
            s_gmem[...] = maxima
            plgpu.store(r_gmem, jnp.sum(acc, axis=1).astype(jnp.bfloat16), optimized=False)

        return plgpu.kernel(
            body,
            out_type=(sds((m,), F32), sds((m,), BF16)),
            scratch_types=tcgen05_scratch(a, b),
            compiler_params=plgpu.CompilerParams(
                lowering_semantics=plgpu.LoweringSemantics.Warpgroup
            ),
        )(a, b)

    lowering = smalto.jax.lower(fixed, *ARGS, arch=BLACKWELL, by="smalto")
    assert lowering.kernels[0].inferred_by == "smalto"


# --- the message leads with the fix -------------------------------------------------------------


def test_the_message_leads_with_the_fix_and_names_values_by_source() -> None:
    error = _refusal(
        scale_rows_by_table_column,
        sds((64, 64), BF16),
        sds((64, 64), BF16),
        sds((64, 2), F32),
        arch=HOPPER,
    )
    first, wrong, fix, snippet, *rest = str(error).splitlines()
    assert first == error.phrase
    # JAX's phrase blames layout casts the kernel does not have: what is wrong comes next.
    assert wrong.startswith("what is wrong: no layout cast is involved: a GMEM transfer ")
    assert fix.startswith("fix: make this transfer unoptimized where written: ")
    assert "`scale = plgpu.load(w_ref.at[:, column], optimized=False)`" in fix
    line = _line_of("scale = w_ref[:, column]", scale_rows_by_table_column)
    assert snippet.strip() == f"user_kernels_unoptimized.py:{line} | scale = w_ref[:, column]"
    why = rest.index("why: these requirements cannot all hold:")
    assert rest[why - 1].startswith("  or: compile the kernel as written")
    # The value by the user's own name, one name for it throughout.
    assert "`scale` (%" in "\n".join(rest)
    assert "through a view of strides (2,)" in str(error)
    # Where values come from: in the verbose message only.
    assert "the values involved:" not in str(error)
    assert "the values involved:" in error.conflict.message(verbose=True)


def test_each_explanation_is_given_once_per_message() -> None:
    """Two values that keep their layout into a consumer: the why is told for the first."""
    error = _refusal(kernels.column_max_cast_to_rows, sds((64, 128), BF16), arch=HOPPER)
    text = str(error)
    kept = [line for line in text.splitlines() if " is used by " in line]
    assert len(kept) == 2, text
    assert text.count("where the lowering converts it") == 1
    assert kept[1].endswith("it keeps its layout there (as above)")


def test_a_type_s_own_requirement_is_stated_in_the_lowering_s_words() -> None:
    """JAX's own TMEM test: a 32-bit TMEM ref cast to a layout of packing 2. Both
    requirements are listed (the cast's, and the element type's in JAX's words), the ref
    has one name, and the fix is at the author's cast."""
    ty = "128x128xf32"
    text = func_module(
        [alloc("t", ty), tmem_cast("c", "t", ty, tmem_default(2)), dealloc("c", ty)], [ADDR]
    )
    with pytest.raises(smalto.InferenceError) as failed:
        smalto.infer_layout(parse(text), arch=BLACKWELL)
    message = str(failed.value)
    assert "fix: change the TMEM layout cast at" in message
    assert "For 32-bit types, the vector length must be 1" in message
    requirements = failed.value.conflict.requirements
    assert len(requirements) == 2
    names = {r.text.split(" ")[0] for r in requirements}
    assert names == {"%0"}, requirements
    assert "declare the TMEM ref" not in message


def test_a_layout_jax_has_no_name_for_is_named_in_the_first_line() -> None:
    error = _refusal(kernels.row_sum_cast_to_columns, sds((64, 64), F32), arch=HOPPER)
    first = str(error).splitlines()[0]
    assert "TiledLayout(" not in first
    assert first.endswith("cannot relayout from register layout WGMMA_ROW to WGMMA_COL")


# --- the Pallas route gets the same fix as the CLI ----------------------------------------------


# (No single edit fixes these: an accumulator declared collective, or collective and 1-CTA
# MMAs mixed.)
NO_FIX = {"tmem_acc_declared_collective", "tmem_collective_and_single_cta_mma"}


@pytest.mark.parametrize("name", sorted(n for n in kernels.KERNELS if n not in NO_FIX))
def test_the_pallas_route_gets_the_verified_fix_the_cli_gets(name: str) -> None:
    fn, args, arch = kernels.KERNELS[name]
    # (Made with JAX's lowering of the first fix, as `smalto infer --lower-fixes` makes it.)
    with lowering_fixes():
        error = _refusal(fn, *args, arch=arch)
        captured = smalto.jax.capture(fn, *args, arch=arch)[-1]
        module = captured.module()
        with pytest.raises(smalto.InferenceError) as on_the_cli:
            smalto.infer_layout(module, arch=arch)
        ours, theirs = error.conflict, on_the_cli.value.conflict
    assert ours.edits, str(error)
    assert [e.text for e in ours.edits] == [e.text for e in theirs.edits]
    assert ours.edits_lowered is True and theirs.edits_lowered is True


# --- the diagnosis is made when the message is read ---------------------------------------------


def test_the_diagnosis_waits_until_the_message_is_read(monkeypatch: pytest.MonkeyPatch) -> None:
    import smalto.diagnose.problems as problems

    made: list[int] = []
    real = problems.describe_conflict

    def counting(*args: Any) -> Any:
        made.append(1)
        return real(*args)

    # (Where ``smalto.infer`` finds it when the message is first read.)
    monkeypatch.setattr(problems, "describe_conflict", counting)
    text = (UNSAT / "cast_strided_then_wgmma.mlir").read_text()
    with pytest.raises(smalto.InferenceError) as failed:
        smalto.infer_layout(parse(text))
    error = failed.value
    assert not made and not error.diagnosed
    assert error.phrase is not None and error.phrase.startswith(smalto.FAILURE_PREFIX)
    message = str(error)
    assert made == [1] and error.diagnosed and "\nfix: " in message
    assert error.conflict is not None and made == [1]  # made once


# --- a layout found without the author's cast ---------------------------------------------------


def test_a_reducing_tmem_load_stored_as_bf16_to_swizzled_smem_lowers_without_a_cast() -> None:
    """JAX's answer does not lower ("Fused load-reduce is not supported"); the lowering
    takes TMEM_NATIVE with 8-element vectors, a relayout of the load's own layout, which
    smalto finds without the author writing ``plgpu.layout_cast(p,
    plgpu.Layout.TCGEN05_TMEM_NATIVE(8))``."""
    from user_kernels_lowering import mma_operands, mma_transforms

    def kernel(a: jax.Array, b: jax.Array) -> Any:
        (m, _), (_, n) = a.shape, b.shape

        def body(a_gmem, b_gmem, o_gmem, m_gmem, a_smem, b_smem, acc_tmem, loaded, done, o_smem):
            plgpu.copy_gmem_to_smem(a_gmem, a_smem, loaded)
            plgpu.copy_gmem_to_smem(b_gmem, b_smem, loaded)
            plgpu.barrier_wait(loaded)
            plgpu.tcgen05_mma(acc_tmem, a_smem, b_smem, done, accumulate=False)
            plgpu.barrier_wait(done)
            p, maxima = plgpu.async_load_tmem(acc_tmem, reduce="max")
            o_smem[...] = p.astype(jnp.bfloat16)
            m_gmem[...] = maxima
            plgpu.commit_smem()
            plgpu.copy_smem_to_gmem(o_smem, o_gmem)
            plgpu.wait_smem_to_gmem(0)

        scratch = [
            *mma_operands(a, b),
            plgpu.TMEM((m, n), F32),
            plgpu.Barrier(num_arrivals=2),
            plgpu.Barrier(orders_tensor_core=True),
            plgpu.SMEM((m, n), BF16, transforms=mma_transforms(BF16, n)),
        ]
        return plgpu.kernel(
            body,
            out_type=(sds((m, n), BF16), sds((m,), F32)),
            scratch_types=scratch,
            compiler_params=plgpu.CompilerParams(
                lowering_semantics=plgpu.LoweringSemantics.Warpgroup
            ),
        )(a, b)

    with pytest.raises(smalto.jax.KernelLoweringError) as jax_failed:
        smalto.jax.lower(kernel, *ARGS, arch=BLACKWELL, by="jax")
    assert "load-reduce" in str(jax_failed.value)
    lowering = smalto.jax.lower(kernel, *ARGS, arch=BLACKWELL, by="smalto")
    # TMEM_NATIVE with wider vectors than the load's own: tiles (128, v) and (32, v).
    assert re.search(r"\[\[128, (4|8)\], \[32, \1\]\]", lowering.kernels[0].inferred_text)


def test_a_loaded_keepdims_statistic_is_described_as_loaded() -> None:
    """A (64, 1) statistic loaded from GMEM and broadcast: not "a computed value"."""
    x, stat = "vector<64x64xf32>", "vector<64x1xf32>"
    text = f"""module {{
  func.func @kernel(%x_ref: memref<64x64xf32>, %m_ref: memref<64x1xf32>,
                    %out: memref<64x64xf32>) {{
    %x = "mosaic_gpu.vector_load"(%x_ref) <{{optimized = false}}>
      : (memref<64x64xf32>) -> {x} loc("k.py":10:8)
    %w = "mosaic_gpu.layout_cast"(%x) <{{new_layout = {layout_attr_text(WGMMA)}}}>
      : ({x}) -> {x} loc("k.py":11:8)
    %m = "mosaic_gpu.vector_load"(%m_ref) <{{optimized = false}}>
      : (memref<64x1xf32>) -> {stat} loc("k.py":12:8)
    %b = mosaic_gpu.broadcast_in_dim(%m : {stat}) <broadcast_dimensions = [0, 1]> -> {x}
      loc("k.py":13:12)
    %y = arith.subf %w, %b : {x} loc("k.py":13:8)
    "mosaic_gpu.vector_store"(%y, %out) <{{optimized = false}}>
      : ({x}, memref<64x64xf32>) -> () loc("k.py":14:8)
    return
  }}
}}
"""
    with pytest.raises(smalto.InferenceError) as failed:
        smalto.infer_layout(parse(text), rewrite=False)
    message = str(failed.value)
    assert "loaded with its size-1 dim" in message
    assert "a computed" not in message


def _line_of(text: str, function: Any) -> int:
    """The line of the file defining ``function`` that holds ``text`` (once)."""
    lines, first = inspect.getsourcelines(function)
    (at,) = [first + i for i, line in enumerate(lines) if text in line]
    return at
