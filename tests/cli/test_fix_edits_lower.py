"""Every edit ``smalto.jax.fix`` marks applicable (``MachineApplicable`` or
``MaybeIncorrect`` with its spans) is applied by its spans, as an editor applies a quick
fix, to a copy of the kernel's file, and the kernel then lowers with smalto as the pass:
the failing Pallas kernels of ``tests/fix_kernels/`` and ``tests/unsat/``. Where a
kernel has several problems, the edit is applied with the first edit of each other
problem, as ``smalto fix`` makes them."""

from __future__ import annotations

import runpy
import shutil
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import jax
import jax.numpy as jnp
import pytest

import smalto.jax
from smalto.source.fix_edits import SourceEdit, apply_parts, overlaps

TESTS = Path(__file__).resolve().parents[1]
FIX_KERNELS = TESTS / "fix_kernels"
UNSAT = TESTS / "unsat"


def _f(*shape: int, dtype: Any = jnp.float16) -> jax.ShapeDtypeStruct:
    return jax.ShapeDtypeStruct(shape, dtype)


HOPPER = (_f(64, 64), _f(64, 128))
BLACKWELL = (_f(128, 64), _f(64, 128))
# (script, function, arguments, arch): the kernels of tests/fix_kernels that fail as written.
SCRIPTS = [
    ("hopper_row_sum.py", "row_sums", (_f(128, 128, dtype=jnp.float32),), (9, 0)),
    ("hopper_row_sum_aliased.py", "row_sums", (_f(128, 128, dtype=jnp.float32),), (9, 0)),
    ("hopper_row_sum_imported_layout.py", "row_sums", (_f(128, 128, dtype=jnp.float32),), (9, 0)),
    (
        "hopper_row_sum_layout_from_module.py",
        "row_sums",
        (_f(128, 128, dtype=jnp.float32),),
        (9, 0),
    ),
    ("hopper_row_sums_as_columns.py", "normalized", (_f(64, 64), _f(64, 64)), (9, 0)),
    ("hopper_cast_to_strided.py", "matmul", HOPPER, (9, 0)),
    ("hopper_unswizzled_epilogue.py", "matmul_and_row_sums", HOPPER, (9, 0)),
    ("hopper_fp8_epilogue.py", "matmul_fp8", HOPPER, (9, 0)),
    ("hopper_table_column.py", "scaled_matmul", (*HOPPER, _f(64, 4, dtype=jnp.float32)), (9, 0)),
    ("hopper_bf16_row_max.py", "matmul_row_max", HOPPER, (9, 0)),
    ("blackwell_bf16_epilogue.py", "matmul_bf16", BLACKWELL, (10, 0)),
    ("blackwell_load_as_wgmma.py", "matmul", BLACKWELL, (10, 0)),
    ("blackwell_tmem_m64_layout.py", "matmul", BLACKWELL, (10, 0)),
    ("blackwell_tmem_m64_layout_two_refs.py", "matmul", BLACKWELL, (10, 0)),
    ("blackwell_collective_m64_load.py", "matmul", BLACKWELL, (10, 0)),
]
UNSAT_MODULES = ("kernels.py", "kernels_fixes.py", "kernels_words.py")


def _unsat_kernels() -> list[tuple[str, str]]:
    return [
        (module, name)
        for module in UNSAT_MODULES
        for name in runpy.run_path(str(UNSAT / module))["KERNELS"]
    ]


def _with_the_others(edit: SourceEdit, edits: list[SourceEdit]) -> list[SourceEdit]:
    """``edit`` and the first applicable edit of each other problem that does not overlap."""
    chosen = [edit]
    for problem in sorted({e.problem for e in edits} - {edit.problem}):
        for other in edits:
            if other.problem != problem or not other.applicable or other.changes_meaning:
                continue
            if any(overlaps(a, b) for c in chosen for a in c.parts for b in other.parts):
                continue
            chosen.append(other)
            break
    return chosen


def _applied_lowers(
    file: Path,
    edits: list[SourceEdit],
    tmp_path: Path,
    load: Callable[[Path], Callable[..., Any]],
    args: tuple[Any, ...],
    arch: tuple[int, int],
) -> int:
    """Applies each applicable edit (with the others' firsts) to a copy of ``file`` and
    lowers the kernel ``load`` takes from it; how many were applied."""
    text = file.read_text(encoding="utf-8")
    applicable = [e for e in edits if e.applicable]
    for number, edit in enumerate(applicable):
        made = _with_the_others(edit, edits)
        assert all(Path(p.span.file).resolve() == file.resolve() for e in made for p in e.parts)
        copy = tmp_path / f"edit{number}" / file.name
        copy.parent.mkdir()
        for sibling in file.parent.glob("*.py"):  # (its imports: a layouts module)
            if sibling != file:
                shutil.copy(sibling, copy.parent / sibling.name)
        copy.write_text(apply_parts(text, [p for e in made for p in e.parts]), encoding="utf-8")
        fn = load(copy)
        try:
            smalto.jax.lower(fn, *args, arch=arch, by="smalto")
        except smalto.jax.KernelLoweringError as failed:
            pytest.fail(f"{edit.text} [{edit.applicability}], applied, fails: {failed}")
    return len(applicable)


@pytest.mark.parametrize(
    ("script", "function", "args", "arch"), SCRIPTS, ids=[s[0] for s in SCRIPTS]
)
def test_every_applicable_edit_of_a_fix_kernel_lowers_applied_by_its_span(
    tmp_path: Path, script: str, function: str, args: tuple[Any, ...], arch: tuple[int, int]
) -> None:
    path = FIX_KERNELS / script
    sys.path.insert(0, str(FIX_KERNELS))
    try:
        fn = runpy.run_path(str(path))[function]
        edits = smalto.jax.fix(fn, *args, arch=arch)
    finally:
        sys.path.remove(str(FIX_KERNELS))
    assert edits, "a failing kernel with no edit"

    def load(copy: Path) -> Callable[..., Any]:
        sys.path.insert(0, str(copy.parent))
        try:
            return runpy.run_path(str(copy))[function]
        finally:
            sys.path.remove(str(copy.parent))
            sys.modules.pop("row_layouts", None)

    applied = _applied_lowers(path, edits, tmp_path, load, args, arch)
    assert applied, [e.why for e in edits]


@pytest.mark.parametrize(("module", "name"), _unsat_kernels())
def test_every_applicable_edit_of_an_unsat_kernel_lowers_applied_by_its_span(
    tmp_path: Path, module: str, name: str
) -> None:
    fn, args, arch = runpy.run_path(str(UNSAT / module))["KERNELS"][name]
    edits = smalto.jax.fix(fn, *args, arch=arch)
    edits = [e for e in edits if all(Path(p.span.file).name == module for p in e.parts)]

    def load(copy: Path) -> Callable[..., Any]:
        return runpy.run_path(str(copy))["KERNELS"][name][0]

    _applied_lowers(UNSAT / module, edits, tmp_path, load, args, arch)
