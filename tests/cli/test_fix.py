"""``smalto fix`` on copies of failing Pallas kernels written as users write them
(``tests/fix_kernels/``): each fixed copy is lowered again, with smalto as the pass and,
where the fix needs no smalto, with JAX's own; a kernel with no fix, or a fix that is not
allowed, leaves the file byte-identical; a working kernel is untouched; no fix changes
a dtype, a shape, an axis or an output."""

from __future__ import annotations

import re
import runpy
import shutil
from collections import Counter
from pathlib import Path
from typing import Any

import jax
import jax.numpy as jnp
import pytest
from cli_run import Ran, run

import smalto.jax
from smalto.source import fix_edits
from smalto.source.fix_edits import MACHINE_APPLICABLE, apply_parts

KERNELS = Path(__file__).resolve().parents[1] / "fix_kernels"
HOPPER = ("--arg", "f16[64,64]", "--arg", "f16[64,128]")
BLACKWELL = ("--arch", "10.0", "--arg", "f16[128,64]", "--arg", "f16[64,128]")
SQUARE_F16 = ("--arg", "f16[64,64]", "--arg", "f16[64,64]")
SQUARE_F32 = ("--arg", "f32[64,64]", "--arg", "f32[64,64]")
_DTYPE = re.compile(r"\b(?:b?float\d+\w*|u?int\d+|bool_)\b")


def _fix(tmp_path: Path, script: str, function: str, *args: str) -> tuple[Ran, Path, bytes]:
    """``smalto fix`` on a copy of ``script``: what it said, the copy, the copy's bytes
    before."""
    copy = tmp_path / script
    shutil.copy(KERNELS / script, copy)
    before = copy.read_bytes()
    return run("fix", f"{copy}:{function}", *args), copy, before


def _sds(*args: str) -> tuple[tuple[Any, ...], tuple[int, int] | None]:
    """The ``--arg``s and ``--arch`` as ``lower`` takes them."""
    names = {"f16": jnp.float16, "f32": jnp.float32, "bf16": jnp.bfloat16}
    shapes, arch = [], None
    for flag, value in zip(args, args[1:], strict=False):
        if flag == "--arg":
            dtype, dims = re.fullmatch(r"(\w+)\[([\d,]+)\]", value).groups()  # type: ignore[union-attr]
            shapes.append(jax.ShapeDtypeStruct(tuple(map(int, dims.split(","))), names[dtype]))
        elif flag == "--arch":
            arch = (10, 0) if value == "10.0" else (9, 0)
    return tuple(shapes), arch


def _lowers(copy: Path, function: str, args: tuple[str, ...], by: str) -> bool:
    fn = runpy.run_path(str(copy))[function]
    shapes, arch = _sds(*args)
    try:
        smalto.jax.lower(fn, *shapes, arch=arch, by=by)  # type: ignore[arg-type]
    except smalto.jax.KernelLoweringError:
        return False
    return True


def _dtypes(text: str) -> Counter[str]:
    return Counter(_DTYPE.findall(text))


# (script, function, arguments, codes of the fixes made, JAX's own pass lowers it fixed)
FIXED = [
    ("hopper_row_sum.py", "row_sums", ("--arg", "f32[128,128]"), ["SM003"], True),
    ("hopper_cast_to_strided.py", "matmul", HOPPER, ["SM002"], True),
    ("hopper_unswizzled_epilogue.py", "matmul_and_row_sums", HOPPER, ["SM003", "SM004"], True),
    (
        "hopper_table_column.py",
        "scaled_matmul",
        (*HOPPER, "--arg", "f32[64,4]", "--allow-unoptimized"),
        ["SM005"],
        True,
    ),
    ("blackwell_load_as_wgmma.py", "matmul", BLACKWELL, ["SM002"], True),
    ("blackwell_tmem_m64_layout.py", "matmul", BLACKWELL, ["SM006"], True),
    # Two TMEM scratch refs: the declaration changed is that of the ref the MMA uses.
    ("blackwell_tmem_m64_layout_two_refs.py", "matmul", BLACKWELL, ["SM006"], True),
    # A collective MMA's M=64 accumulator loaded with the 128-row habit's layout.
    ("blackwell_collective_m64_load.py", "matmul", BLACKWELL, ["SM008"], True),
    # Fixed, it lowers with smalto only (the bf16 store straight to GMEM): then made
    # portable, the stored value cast to the layout smalto's answer stores it in.
    ("hopper_bf16_row_max.py", "matmul_row_max", HOPPER, ["SM003"], True),
    # Kernels only smalto compiles, as written: each made portable by one edit, verified
    # with JAX's own pass (no failure code: smalto lowers them as written).
    ("hopper_bf16_epilogue.py", "matmul_bf16", HOPPER, [], True),
    ("hopper_transposed_store.py", "matmul_transposed", SQUARE_F16, [], True),
    ("hopper_load_shuffles_cancel.py", "copy_tile", SQUARE_F32, [], True),
]


@pytest.mark.parametrize(
    ("script", "function", "args", "codes", "jax_lowers"), FIXED, ids=[f[0] for f in FIXED]
)
def test_a_fixed_kernel_lowers_and_computes_the_same(
    tmp_path: Path,
    script: str,
    function: str,
    args: tuple[str, ...],
    codes: list[str],
    jax_lowers: bool,
) -> None:
    ran, copy, before = _fix(tmp_path, script, function, *args)
    assert ran.status == 0, ran.err
    assert "Traceback" not in ran.err
    after = copy.read_bytes()
    assert after != before
    # Each change line by line, and why: the failure's code.
    assert re.findall(r"error\[(SM\d{3})\]", ran.out) == codes
    assert ran.out.count("\n  - ") >= len(codes) and ran.out.count("\n  + ") >= len(codes)
    # What the kernel computes is kept: the same dtypes, and no other word or number.
    assert _dtypes(after.decode()) == _dtypes(before.decode())
    assert _lowers(copy, function, args, "smalto")
    assert _lowers(copy, function, args, "jax") is jax_lowers
    if not jax_lowers:
        assert "smalto: note: JAX's own pass still rejects" in ran.err


M64_LOAD = "acc = plgpu.async_load_tmem(acc_tmem, layout=plgpu.Layout.TCGEN05_M64_COLLECTIVE({}))"


def test_a_layouts_size_is_written_with_the_kernels_name_and_lowers(tmp_path: Path) -> None:
    """The columns of the accumulator, which the kernel calls ``n`` (its TMEM ref's
    ``(block_m, n)``), are written ``n``, not the number the module holds; said and
    written alike, and the edited kernel lowers with JAX's own pass."""
    ran, copy, _ = _fix(tmp_path, "blackwell_collective_m64_load.py", "matmul", *BLACKWELL)
    assert ran.status == 0, ran.err
    made = M64_LOAD.format("n")
    assert f"  + {made}" in ran.out and f"`{made}`" in ran.out
    assert copy.read_text().count(made) == 1
    assert "TCGEN05_M64_COLLECTIVE(128)" not in copy.read_text()
    assert _lowers(copy, "matmul", BLACKWELL, "jax")


def test_a_size_no_name_holds_is_written_as_the_number(tmp_path: Path) -> None:
    """A kernel for one tile size, its TMEM ref declared ``(64, 128)``: the number."""
    copy = tmp_path / "blackwell_collective_m64_load.py"
    text = (KERNELS / copy.name).read_text()
    copy.write_text(text.replace("plgpu.TMEM((block_m, n),", "plgpu.TMEM((64, 128),"))
    ran = run("fix", f"{copy}:matmul", *BLACKWELL)
    assert ran.status == 0, ran.err
    made = M64_LOAD.format("128")
    assert f"  + {made}" in ran.out and copy.read_text().count(made) == 1
    assert _lowers(copy, "matmul", BLACKWELL, "jax")


def test_a_size_written_by_a_wrong_name_is_never_written(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Were the size named wrongly (``block_n``, half the columns), the edited kernel
    would not lower: ``smalto fix`` lowers every edit before it writes it, and the file
    stays as it was."""
    monkeypatch.setattr(fix_edits, "_loaded_columns", lambda *_: "block_n")
    ran, copy, before = _fix(tmp_path, "blackwell_collective_m64_load.py", "matmul", *BLACKWELL)
    assert ran.status == 1
    assert copy.read_bytes() == before
    assert "Traceback" not in ran.err


def test_a_kernel_with_no_fix_is_left_byte_identical(tmp_path: Path) -> None:
    copy = tmp_path / "blackwell_collective_acc.py"
    shutil.copy(KERNELS / copy.name, copy)
    stat = copy.stat()
    before = copy.read_bytes()
    ran = run(
        "fix", f"{copy}:matmul", "--arch", "10.0", "--arg", "f16[64,64]", "--arg", "f16[64,128]"
    )
    assert ran.status == 1
    assert "still fails" in ran.err and "unchanged" in ran.err
    assert "error[SM006]" in ran.err  # the diagnosis that remains
    assert copy.read_bytes() == before and copy.stat().st_mtime_ns == stat.st_mtime_ns
    assert "Traceback" not in ran.err


def test_a_kernel_that_lowers_is_untouched(tmp_path: Path) -> None:
    ran, copy, before = _fix(tmp_path, "hopper_working.py", "matmul", *HOPPER)
    assert copy.read_bytes() == before
    assert ran.status == 0, ran.err
    assert "lowers as written: nothing to fix" in ran.out
    assert "JAX's own pass rejects" not in ran.err


def test_a_kernel_only_smalto_compiles_exits_1_unless_allowed(tmp_path: Path) -> None:
    """No edit makes JAX's own pass accept it: a kernel that fails for everyone without
    smalto is no success for a CI step, unless smalto is what it runs with."""
    ran, copy, before = _fix(tmp_path, "hopper_smalto_only.py", "copy_tile", *SQUARE_F32)
    assert copy.read_bytes() == before
    assert ran.status == 1
    assert "lowers as written with smalto as the pass only" in ran.out
    assert "smalto: note: JAX's own pass rejects it" in ran.err
    assert "compiles only with smalto; --allow-smalto-only accepts that" in ran.err
    allowed, _, _ = _fix(
        tmp_path, "hopper_smalto_only.py", "copy_tile", *SQUARE_F32, "--allow-smalto-only"
    )
    assert allowed.status == 0, allowed.err
    assert copy.read_bytes() == before


def test_a_kernel_only_smalto_compiles_is_made_portable(tmp_path: Path) -> None:
    """The edit the issue names: the accumulator cast at the transposed store."""
    ran, copy, before = _fix(
        tmp_path, "hopper_transposed_store.py", "matmul_transposed", *SQUARE_F16
    )
    assert ran.status == 0, ran.err
    assert "compiles only with smalto: JAX's own pass rejects it" in ran.out
    assert copy.read_text() == before.decode().replace(
        "o_smem.T[...] = acc\n",
        "o_smem.T[...] = plgpu.layout_cast(acc, plgpu.Layout.WGMMA_TRANSPOSED)\n",
    )
    assert _lowers(copy, "matmul_transposed", SQUARE_F16, "jax")


def test_the_route_says_once_where_a_kernel_compiles_only_with_smalto() -> None:
    import warnings

    fn = runpy.run_path(str(KERNELS / "hopper_transposed_store.py"))["matmul_transposed"]
    shapes, arch = _sds(*SQUARE_F16)
    with warnings.catch_warnings(record=True) as said:
        warnings.simplefilter("default")
        smalto.jax.lower(fn, *shapes, arch=arch, by="smalto")
        smalto.jax.lower(fn, *shapes, arch=arch, by="smalto")
    (warning,) = [w for w in said if w.category is smalto.SmaltoOnlyWarning]
    assert Path(warning.filename).name == "hopper_transposed_store.py"
    assert "1 relayout: `mosaic_gpu.vector_store`" in str(warning.message)
    assert "WGMMA -> WGMMA_TRANSPOSED" in str(warning.message)
    working = runpy.run_path(str(KERNELS / "hopper_working.py"))["matmul"]
    with warnings.catch_warnings(record=True) as said:
        warnings.simplefilter("default")
        smalto.jax.lower(working, *_sds(*HOPPER)[0], arch=(9, 0), by="smalto")
    assert not [w for w in said if w.category is smalto.SmaltoOnlyWarning]


def test_unoptimized_transfers_only_with_allow_unoptimized(tmp_path: Path) -> None:
    # A column of a GMEM table: no layout coalesces it, and a TMA copy cannot take it.
    ran, copy, before = _fix(
        tmp_path, "hopper_table_column.py", "scaled_matmul", *HOPPER, "--arg", "f32[64,4]"
    )
    assert ran.status == 1
    assert "--allow-unoptimized makes it" in ran.err
    assert "error[SM005]" in ran.err
    assert copy.read_bytes() == before


# (script, function, arguments, the statement as written): a 16-bit or 8-bit MMA result
# stored straight to GMEM.
EPILOGUES = [
    ("hopper_fp8_epilogue.py", "matmul_fp8", HOPPER, "o_gmem[...] = acc.astype(jnp.float8_e4m3fn)"),
    (
        "blackwell_bf16_epilogue.py",
        "matmul_bf16",
        BLACKWELL,
        "o_gmem[...] = acc.astype(jnp.bfloat16)",
    ),
]


@pytest.mark.parametrize(
    ("script", "function", "args", "statement"), EPILOGUES, ids=[e[0] for e in EPILOGUES]
)
def test_a_gmem_store_with_no_coalesced_plan_is_staged_in_the_source(
    tmp_path: Path, script: str, function: str, args: tuple[str, ...], statement: str
) -> None:
    """The first fix, with no flag: the store through an SMEM scratch and a TMA copy, in the
    file's own names, which JAX's own pass lowers (the kernel then needs no smalto); every
    transfer stays optimized."""
    ran, copy, before = _fix(tmp_path, script, function, *args)
    assert ran.status == 0, ran.err
    assert re.findall(r"error\[(SM\d{3})\]", ran.out) == ["SM005"]
    after = copy.read_text()
    assert "optimized=False" not in after
    assert statement not in after and statement in before.decode()
    # The same expression, stored whole into a scratch of the ref's shape and dtype, and
    # copied whole to the same ref.
    value = statement.split(" = ", 1)[1]
    assert f"o_gmem_smem[...] = {value}" in after
    # Said as written: the scratch's body indented under its ``def``, as in the file.
    assert (
        f"  + def _store_o_gmem_through_smem(o_gmem_smem):\n  +     o_gmem_smem[...] = {value}\n"
        in (ran.out)
    )
    for call in (
        "plgpu.commit_smem()",
        "plgpu.copy_smem_to_gmem(o_gmem_smem, o_gmem)",
        "plgpu.wait_smem_to_gmem(0)",
        "plgpu.SMEM(o_gmem.shape, o_gmem.dtype, transforms=",
    ):
        assert call in after
    assert _dtypes(after) == _dtypes(before.decode())
    assert _lowers(copy, function, args, "jax")
    assert _lowers(copy, function, args, "smalto")
    assert "JAX's own pass still rejects" not in ran.err


def test_a_gmem_load_with_no_coalesced_plan_is_staged_in_the_source(tmp_path: Path) -> None:
    """The mirror for a load: a bf16 bias row loaded straight from GMEM is copied into an
    SMEM scratch by the TMA, waited for, and loaded from there; the line reads it."""
    args = (*BLACKWELL[:2], "--arg", "bf16[128,64]", "--arg", "bf16[64,128]", "--arg", "bf16[128]")
    ran, copy, before = _fix(tmp_path, "blackwell_bias_row.py", "matmul_bias", *args)
    assert ran.status == 0, ran.err
    assert re.findall(r"error\[(SM\d{3})\]", ran.out) == ["SM005"]
    after = copy.read_text()
    assert "optimized=False" not in after
    for line in (
        "plgpu.copy_gmem_to_smem(bias_gmem, bias_gmem_smem, bias_gmem_copied)",
        "plgpu.barrier_wait(bias_gmem_copied)",
        "return bias_gmem_smem[...]",
        "plgpu.SMEM(bias_gmem.shape, bias_gmem.dtype",
        "o_smem[...] = acc + bias_gmem_loaded.astype(jnp.float32)[None, :]",
    ):
        assert line in after
    assert "bias_gmem[...]" not in after and "bias_gmem[...]" in before.decode()
    assert _dtypes(after) == _dtypes(before.decode())
    assert _lowers(copy, "matmul_bias", args, "jax")
    assert _lowers(copy, "matmul_bias", args, "smalto")


def test_a_fast_fix_comes_before_an_unoptimized_transfer(tmp_path: Path) -> None:
    # The SMEM tile's transforms fixed, not its store made unoptimized, though allowed.
    ran, copy, _ = _fix(
        tmp_path,
        "hopper_unswizzled_epilogue.py",
        "matmul_and_row_sums",
        *HOPPER,
        "--allow-unoptimized",
    )
    assert ran.status == 0, ran.err
    text = copy.read_text()
    assert "optimized=False" not in text
    # In the kernel's own words: the transforms it named ``SWIZZLED`` for its other tiles.
    assert "plgpu.SMEM((m, n), a.dtype, transforms=SWIZZLED)," in text


def test_diff_prints_the_change_and_writes_nothing(tmp_path: Path) -> None:
    ran, copy, before = _fix(
        tmp_path, "hopper_row_sum.py", "row_sums", "--arg", "f32[128,128]", "--diff"
    )
    assert ran.status == 0, ran.err
    assert copy.read_bytes() == before
    assert ran.out.startswith(f"--- {copy}\n+++ {copy}\n@@ ")
    removed = [line for line in ran.out.splitlines() if line.startswith("-") and "reduce" in line]
    added = [line for line in ran.out.splitlines() if line.startswith("+") and "reduce" in line]
    assert [line.replace("reduce(0)", "reduce(1)")[1:] for line in removed] == [
        line[1:] for line in added
    ]
    assert "error[SM003]" in ran.err  # what changed and why, apart from the diff


def test_a_file_changed_meanwhile_is_not_written(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import smalto.jax.fixing as fixing

    fix_script = fixing.fix_script

    def edited_meanwhile(path: Path, *args: Any, **kwargs: Any) -> Any:
        outcome = fix_script(path, *args, **kwargs)
        path.write_text(path.read_text() + "# the author's own edit\n")
        return outcome

    monkeypatch.setattr(fixing, "fix_script", edited_meanwhile)
    ran, copy, before = _fix(tmp_path, "hopper_row_sum.py", "row_sums", "--arg", "f32[128,128]")
    assert ran.status == 1
    assert "changed since smalto fix read it" in ran.err
    assert copy.read_bytes() == before + b"# the author's own edit\n"


@pytest.mark.parametrize(
    ("target", "message"),
    [
        ("no_colon.py", "expected SCRIPT.py:FUNCTION"),
        ("missing.py:f", "no such file"),
        ("{kernels}/hopper_row_sum.py:not_there", "defines no function 'not_there'"),
    ],
)
def test_usage_errors_exit_2_in_one_line(target: str, message: str) -> None:
    ran = run("fix", target.format(kernels=KERNELS), "--arg", "f32[128,128]")
    assert ran.status == 2
    assert message in ran.err and "Traceback" not in ran.err
    # One line, after the note that the script runs where it does.
    said = ran.err.strip().splitlines()
    assert said[-1].startswith("smalto: error: ")
    assert [line for line in said[:-1] if "note: running" not in line] == []


def test_the_api_returns_the_edits_without_writing() -> None:
    namespace = runpy.run_path(str(KERNELS / "hopper_unswizzled_epilogue.py"))
    a = jax.ShapeDtypeStruct((64, 64), jnp.float16)
    b = jax.ShapeDtypeStruct((64, 128), jnp.float16)
    before = (KERNELS / "hopper_unswizzled_epilogue.py").read_bytes()
    edits = smalto.jax.fix(namespace["matmul_and_row_sums"], a, b, arch=(9, 0))
    assert (KERNELS / "hopper_unswizzled_epilogue.py").read_bytes() == before
    firsts = {e.problem: e for e in reversed(edits)}
    assert [firsts[p].code for p in sorted(firsts)] == ["SM003", "SM004"]
    cast = firsts[0]
    (transforms,) = [e for e in edits if e.problem == 1 and e.kind == "retarget"]
    assert cast.applicability == MACHINE_APPLICABLE
    (part,) = cast.parts
    assert Path(part.span.file).name == "hopper_unswizzled_epilogue.py"
    assert (part.original, part.replacement) == (
        "plgpu.Layout.WGMMA.reduce(0)",
        "plgpu.Layout.WGMMA.reduce(1)",
    )
    line = before.decode().splitlines()[part.span.line - 1]
    assert line[part.span.column - 1 : part.span.end_column - 1] == part.original
    assert transforms.parts[0].original == "TILED"
    json = cast.as_json()
    assert json["applicability"] == MACHINE_APPLICABLE and json["replacement"] == part.replacement
    working = runpy.run_path(str(KERNELS / "hopper_working.py"))["matmul"]
    assert smalto.jax.fix(working, a, b, arch=(9, 0)) == []


def test_applying_parts_checks_the_text_is_still_there() -> None:
    from smalto.source.fix_edits import Part, Span

    part = Part(Span("k.py", 1, 5, 1, 8), "abc", "xyz")
    assert apply_parts("1234abc\n", [part]) == "1234xyz\n"
    with pytest.raises(ValueError, match="changed"):
        apply_parts("1234abd\n", [part])
