"""The Pallas-form fuzz families (``tests/fuzz/pallas_families.py``) in CI: a fixed-seed
sample, a script a family, through ``smalto fix`` and JAX's Mosaic GPU interpreter, held
to every oracle of ``tests/fuzz/pallas_oracles.py``. A case costs seconds (``smalto fix``
runs the script and both kernels; the oracles run them again, independently), so CI
runs one a family; ``make fuzz`` runs many with a fresh seed (``python -m
fuzz.run_pallas``)."""

from __future__ import annotations

import ast
import shutil
from pathlib import Path

import pytest
from fuzz.pallas_families import FAMILIES, make_case
from fuzz.pallas_oracles import Verdict, judge

# (family, seed, what ``smalto fix`` does with it, the kinds of its edits): a sample that
# reaches each family's fix. Staged 2004 is a bug the fuzzer found: an f8 store staged,
# and an f16 store beside it that needs a cast, judged against the staged text.
SAMPLE = [
    ("keepdims", 2010, "fixed", ["portable"]),
    ("staged", 2004, "fixed", ["stage", "portable"]),
    ("columns", 2006, "fixed", ["unoptimize"]),
]


@pytest.mark.parametrize(("family", "seed", "outcome", "edits"), SAMPLE, ids=[s[0] for s in SAMPLE])
def test_a_fixed_seed_script_of_each_family_holds_every_oracle(
    tmp_path: Path, family: str, seed: int, outcome: str, edits: list[str]
) -> None:
    verdict = judge(make_case(family, seed), tmp_path)
    assert verdict.failures == [], "\n".join(verdict.failures)
    assert (verdict.outcome, verdict.edits) == (outcome, edits)
    assert verdict.rescued and verdict.ran, verdict.run_said


def test_the_families_write_scripts_python_reads_the_same_for_a_seed() -> None:
    """Cheap, and over many seeds: each script parses, defines ``kernel`` and
    ``reference``, and a family and a seed make the same script again (a failure is
    replayed from its two words)."""
    kinds: dict[str, set[str]] = {family: set() for family in FAMILIES}
    for family in FAMILIES:
        for seed in range(200):
            case = make_case(family, seed)
            names = {n.name for n in ast.parse(case.text).body if isinstance(n, ast.FunctionDef)}
            assert names == {"kernel", "reference"}, case
            assert make_case(family, seed).text == case.text
            kinds[family].add(case.shape.split(",")[0])
    # Each family writes more than one kind of kernel (not one script over and over).
    assert all(len(shapes) > 5 for shapes in kinds.values()), kinds


def test_the_oracles_catch_a_fix_that_computes_otherwise(tmp_path: Path) -> None:
    """The run oracle can fail: a "fixed" script whose epilogue is changed (the reference
    kept) is found to differ from the original in the interpreter."""
    from fuzz import pallas_oracles

    case = make_case("columns", 2002)
    wrong = tmp_path / "wrong.py"
    wrong.write_text(case.text.replace("o_gmem[...] = y\n", "o_gmem[...] = y + 0.25\n", 1))
    original = tmp_path / "original.py"
    shutil.copy(wrong, original)
    original.write_text(case.text)
    verdict = Verdict(case)
    kernel = pallas_oracles._load(original, "kernel", verdict)
    fixed = pallas_oracles._load(wrong, "kernel", verdict)
    pallas_oracles._run(verdict, kernel, fixed, original, case)
    assert verdict.ran
    assert [f.split(" of the fixed")[0] for f in verdict.failures] == ["(c) output 0"]
