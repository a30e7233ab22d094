"""``smalto fix`` writes the staged epilogue for every store shape users write
(``tests/staged_kernels/``: a ``.at[i]`` view in a ``lax.fori_loop``, ``pl.ds`` column
blocks in a Python loop, ``lax.cond`` and ``pl.when`` branches, two stores in one kernel,
a store in a helper two kernels share, a store whose value binds a walrus), each fixed
copy lowered with JAX's own pass and proven by running both kernels in JAX's Mosaic GPU
interpreter (no GPU: it runs in CI); and a load that cannot leave its generator
expression is not staged, said in one line."""

from __future__ import annotations

import json
import re
import runpy
import shutil
from pathlib import Path
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from cli_run import Ran, run

import smalto.jax
from smalto.jax.interpreted import random_inputs, run_both

KERNELS = Path(__file__).resolve().parents[1] / "staged_kernels"
BLACKWELL = ("--arch", "10.0", "--arg", "f16[128,64]", "--arg", "f16[64,128]")
_NAMES = {"f16": jnp.float16, "bf16": jnp.bfloat16, "f32": jnp.float32}


def _shapes(args: tuple[str, ...]) -> tuple[Any, ...]:
    found = []
    for flag, value in zip(args, args[1:], strict=False):
        if flag == "--arg":
            dtype, dims = re.fullmatch(r"(\w+)\[([\d,]+)\]", value).groups()  # type: ignore[union-attr]
            found.append(jax.ShapeDtypeStruct(tuple(map(int, dims.split(","))), _NAMES[dtype]))
    return tuple(found)


def _fix(tmp_path: Path, script: str, function: str, *args: str) -> tuple[Ran, Path, str]:
    copy = tmp_path / script
    shutil.copy(KERNELS / script, copy)
    before = copy.read_text()
    return run("fix", f"{copy}:{function}", *args, "--json"), copy, before


# (script, function, the statements staged, as written)
SHAPES = [
    (
        "blackwell_store_at_in_fori_loop.py",
        "scaled_matmuls",
        ["o_gmem.at[i][...] = (acc * (i + 1).astype(jnp.float32)).astype(jnp.bfloat16)"],
    ),
    (
        "blackwell_column_blocks.py",
        "tiled_matmul",
        ["o_gmem[:, pl.ds(j * bn, bn)] = (acc - float(j)).astype(jnp.bfloat16)"],
    ),
    (
        "blackwell_cond_branches.py",
        "matmul_relu_or_not",
        [
            "o_gmem[...] = jnp.maximum(acc, 0.0).astype(jnp.bfloat16)",
            "o_gmem[...] = acc.astype(jnp.bfloat16)",
            "p_gmem[...] = (acc * 0.5).astype(jnp.bfloat16)",
        ],
    ),
    (
        "blackwell_two_outputs.py",
        "matmul_and_square",
        ["o_gmem[...] = acc.astype(jnp.float16)", "sq_gmem[...] = (acc * acc).astype(jnp.float16)"],
    ),
]


HOPPER = ("--arg", "f16[64,64]", "--arg", "f16[64,128]")
SHAPES_HOPPER = [
    (
        "hopper_column_blocks_in_fori_loop.py",
        "shifted_matmuls",
        ["o_gmem.at[:, pl.ds(i * n, n)][...] = shifted.astype(jnp.float8_e4m3fn)"],
    ),
]
ARGS = {script: BLACKWELL for script, _, _ in SHAPES} | {s: HOPPER for s, _, _ in SHAPES_HOPPER}


@pytest.mark.parametrize(
    ("script", "function", "statements"),
    SHAPES + SHAPES_HOPPER,
    ids=[s[0] for s in SHAPES + SHAPES_HOPPER],
)
def test_each_store_shape_is_staged_and_proven_by_running(
    tmp_path: Path, script: str, function: str, statements: list[str]
) -> None:
    args = ARGS[script]
    ran, copy, before = _fix(tmp_path, script, function, *args)
    assert ran.status == 0, ran.err
    made = json.loads(ran.out)
    assert made["written"] and not made["refuted"]
    # One edit per statement (a store a Python loop unrolls twice is one), each staged.
    assert [e["kind"] for e in made["edits"]] == ["stage"] * len(statements)
    assert all(e["proofs"] == ["construction", "interpreter"] for e in made["edits"])
    assert made["run"]["ran"] and made["run"]["bit_equal"]
    assert "proven by running: both kernels run in JAX's Mosaic GPU interpreter" in ran.err
    after = copy.read_text()
    for statement in statements:
        assert statement in before and statement not in after
        value = statement.split(" = ", 1)[1]
        assert re.search(rf"_smem(_\d+)?\[\.\.\.\] = {re.escape(value)}\n", after)
    assert after.count(".copy_smem_to_gmem(") == len(statements)
    assert after.count(".wait_smem_to_gmem(0)") == len(statements)
    assert "optimized=False" not in after
    # The kernel then needs no smalto: JAX's own pass lowers it.
    fixed = runpy.run_path(str(copy))[function]
    arch = (10, 0) if args is BLACKWELL else (9, 0)
    smalto.jax.lower(fixed, *_shapes(args), arch=arch, by="jax")


def test_where_the_interpreter_cannot_run_the_kernel_the_trace_alone_proves_the_fix(
    tmp_path: Path,
) -> None:
    """A wgmma whose left operand is in registers (an attention tail's ``p @ v``): JAX's
    interpreter cannot run it. The wrong reduced layout's fix is written, proven by JAX's
    trace, and the output says why the run was not possible."""
    ran, copy, before = _fix(tmp_path, "hopper_register_lhs_row_sums.py", "attention_tail", *HOPPER)
    assert ran.status == 0, ran.err
    made = json.loads(ran.out)
    assert [e["proofs"] for e in made["edits"]] == [["trace"]]
    assert made["run"]["ran"] is False and made["written"]
    assert made["run"]["why_not"] == (
        "the interpreter cannot run it: ValueError: Expected shape (6,) but got (64, 64) "
        "(the kernel as written)"
    )
    assert "not run in JAX's Mosaic GPU interpreter: the interpreter cannot run it" in ran.err
    assert "Traceback" not in ran.err
    assert "WGMMA.reduce(1))" in copy.read_text() and "WGMMA.reduce(0))" in before


def test_the_fast_fix_comes_first_in_the_message_and_in_infer_json(tmp_path: Path) -> None:
    """For a ``pl.ds`` view too: the route's message says the fast fix before the verified
    unoptimized edit, and ``smalto infer --json`` gives it with its source edit, which,
    applied as an editor would, lowers with JAX's own pass."""
    copy = tmp_path / "blackwell_column_blocks.py"
    shutil.copy(KERNELS / "blackwell_column_blocks.py", copy)
    kernel = runpy.run_path(str(copy))["tiled_matmul"]
    with pytest.raises(smalto.jax.KernelLoweringError) as failed:
        smalto.jax.lower(kernel, *_shapes(BLACKWELL), arch=(10, 0), by="smalto")
    message = str(failed.value.kernels[-1].error)
    fast = message.index("fast fix: store it into an SMEM scratch ref")
    assert fast < message.index("fix: make this transfer unoptimized where written")
    # From Python too: smalto.jax.fix offers it first for each problem.
    offered = smalto.jax.fix(kernel, *_shapes(BLACKWELL), arch=(10, 0))
    assert [e.kind for e in offered if e.problem == 0][:2] == ["stage", "unoptimize"]
    captured = tmp_path / "captured"
    assert run("capture", f"{copy}:tiled_matmul", *BLACKWELL, "-o", captured).status == 0
    (module,) = captured.glob("*.mlir")
    ran = run("infer", module, "--json")
    problems = json.loads(ran.out)["problems"]
    offered = problems[0]["fast_fix"]
    assert offered["kind"] == "stage" and offered["why_not"] is None
    assert offered["fix"]["applicability"] == "MaybeIncorrect"
    (part,) = offered["fix"]["parts"]
    assert part["original"] in copy.read_text()
    copy.write_text(copy.read_text().replace(part["original"], part["replacement"]))
    edited = runpy.run_path(str(copy))["tiled_matmul"]
    smalto.jax.lower(edited, *_shapes(BLACKWELL), arch=(10, 0), by="jax")


def test_a_store_whose_value_binds_a_walrus_keeps_the_name_the_kernels(tmp_path: Path) -> None:
    """``o[...] = (s := acc + 1.0).astype(bf16)`` with ``s`` used after it: the value is
    evaluated where it was written, so ``s`` stays the kernel's; the fixed kernel computes
    ``a @ b + 1`` and ``2 (a @ b + 1)``, checked against jax.numpy in the interpreter."""
    ran, copy, _ = _fix(tmp_path, "blackwell_walrus_store.py", "shifted_matmul", *BLACKWELL)
    assert ran.status == 0, ran.err
    after = copy.read_text()
    assert "o_gmem_value = (s := acc + 1.0).astype(jnp.bfloat16)\n" in after
    assert "o_gmem_smem[...] = o_gmem_value\n" in after
    made = json.loads(ran.out)
    assert made["run"]["bit_equal"]
    a, b = random_inputs(_shapes(BLACKWELL))
    fixed = runpy.run_path(str(copy))["shifted_matmul"]
    from jax.experimental.pallas import mosaic_gpu as plgpu

    with plgpu.force_gpu_interpret_mode(plgpu.InterpretGPUParams(detect_races=True)):
        o, s = jax.jit(fixed)(a, b)
    product = jnp.dot(a.astype(jnp.float32), b.astype(jnp.float32))
    np.testing.assert_array_equal(np.asarray(o), np.asarray((product + 1.0).astype(jnp.bfloat16)))
    np.testing.assert_array_equal(np.asarray(s), np.asarray((product + 1.0) * 2.0))


def test_a_staging_that_moves_a_walrus_is_refuted_by_running(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The miscompile the construction prevents (the walrus moved into the nested
    function, so the kernel's later ``s`` reads the old value), forced: the run in the
    interpreter finds the outputs differ, and nothing is written."""
    import smalto.source.staging_text as staging_text

    monkeypatch.setattr(staging_text, "_binds", lambda node: False)
    ran, copy, before = _fix(tmp_path, "blackwell_walrus_store.py", "shifted_matmul", *BLACKWELL)
    assert ran.status == 1
    made = json.loads(ran.out)
    assert made["refuted"] and made["run"]["ran"] and made["run"]["bit_equal"] is False
    assert "differs" in made["run"]["why_not"]
    assert "not written: the fixed kernel does not compute what the original computes" in ran.err
    assert copy.read_text() == before


def test_a_load_inside_a_generator_is_not_staged_and_says_why(tmp_path: Path) -> None:
    args = ("--arch", "10.0", *("--arg", "bf16[128,64]", "--arg", "bf16[64,128]"))
    args = (*args, "--arg", "bf16[2,128]")
    ran, copy, before = _fix(
        tmp_path, "blackwell_bias_rows_in_generator.py", "matmul_two_biases", *args
    )
    assert ran.status == 1
    said = [line for line in ran.err.splitlines() if "not staged" in line]
    assert said == [
        f"smalto: note: {copy}:24: not staged: the load is read inside a generator "
        "expression, whose own names it may use: taken out of it, they would be the kernel's"
    ]
    assert copy.read_text() == before


def test_hoisting_a_load_out_of_its_generator_changes_what_the_kernel_computes() -> None:
    """Why it is refused: the load taken out of the generator by hand reads the kernel's
    ``j`` (1) twice instead of rows 0 and 1; running both kernels shows it."""
    text = (KERNELS / "blackwell_bias_rows_in_generator.py").read_text()
    statement = "bias = sum(bias_gmem[j].astype(jnp.float32) for j in range(2))"
    assert statement in text
    hoisted = text.replace(
        statement,
        "row = bias_gmem[j]\n        bias = sum(row.astype(jnp.float32) for j in range(2))",
    )
    original = runpy.run_path(str(KERNELS / "blackwell_bias_rows_in_generator.py"))
    namespace: dict[str, Any] = {"__name__": "hoisted"}
    exec(compile(hoisted, "hoisted.py", "exec"), namespace)
    shapes = _shapes(("--arg", "bf16[128,64]", "--arg", "bf16[64,128]", "--arg", "bf16[2,128]"))
    proof = run_both(original["matmul_two_biases"], namespace["matmul_two_biases"], shapes)
    assert proof.refutes, proof
    assert "differs" in proof.why_not


def test_a_store_in_a_shared_helper_is_fixed_the_same_whichever_kernel_is_fixed(
    tmp_path: Path,
) -> None:
    texts = {}
    for first in ("matmul", "matmul_halved"):
        folder = tmp_path / first
        folder.mkdir()
        ran, copy, before = _fix(folder, "blackwell_shared_store_helper.py", first, *BLACKWELL)
        assert ran.status == 0, ran.err
        texts[first] = copy.read_text()
        assert "o_gmem[...] = acc.astype(jnp.bfloat16)" in before
        assert "o_gmem_smem[...] = acc.astype(jnp.bfloat16)" in texts[first]
    assert texts["matmul"] == texts["matmul_halved"]
    # Both kernels then lower with JAX's own pass: fixing the other changes nothing.
    copy = tmp_path / "matmul" / "blackwell_shared_store_helper.py"
    namespace = runpy.run_path(str(copy))
    for name in ("matmul", "matmul_halved"):
        smalto.jax.lower(namespace[name], *_shapes(BLACKWELL), arch=(10, 0), by="jax")
    again = run("fix", f"{copy}:matmul_halved", *BLACKWELL)
    assert again.status == 0 and "nothing to fix" in again.out
    assert copy.read_text() == texts["matmul"]
