"""The requirements printed under "these requirements cannot all hold" (issue #33).

Over every failing kernel of ``tests/unsat`` (and, where ``../shared/corpus`` is
present, a sample of the corpus kernels smalto refuses, listed in
``tests/unsat/corpus_refusals.txt``), each problem's core, as the error reports it:

- cannot hold by itself: no layout the lowering accepts satisfies it;
- is minimal where it says so: without any one of its requirements, the rest hold
  together (a solution is found, so this half is proven, not just searched for);
- is what the fix is about: the layouts of the kernel with a verified fix made break
  one of its requirements (a witness found apart from the core search: a core that
  every fixed kernel satisfies is not why the kernel failed).
"""

from __future__ import annotations

import warnings
from pathlib import Path

import pytest
import reference

import smalto
from smalto.constraints.conflict_report import ConflictReport
from smalto.constraints.language import Element, Fixed, System
from smalto.diagnose.core import core_satisfiable
from smalto.diagnose.subsystem import subsystem
from smalto.diagnose.verify import edited_system
from smalto.infer import in_context
from smalto.program.reader import read_program
from smalto.program.view import Program
from smalto.rewrite.transfers import Plan, relaxed
from smalto.rules import derive_system
from smalto.solve.decision import Exhausted, Solved
from smalto.solve.evaluate import judge
from smalto.solve.options import SolveOptions
from smalto.solve.search import decide, widest

UNSAT = Path(__file__).parents[1] / "unsat"
# Not layout conflicts: gathers JAX's lowering cannot do, collective and 1-CTA MMAs mixed,
# for any layout.
NOT_LAYOUT_CONFLICTS = {
    "gather_not_2d",
    "gather_not_leading",
    "gather_minor_dim",
    "pallas_tmem_collective_and_single_cta_mma",
}
UNSAT_KERNELS = sorted(p.stem for p in UNSAT.glob("*.mlir") if p.stem not in NOT_LAYOUT_CONFLICTS)
# Corpus modules smalto refuses (no layout lowers as written), found by running it on
# the whole corpus; a sample keeps the test fast.
CORPUS_REFUSALS = (UNSAT / "corpus_refusals.txt").read_text().split()
CORPUS_SAMPLE = 30


def _reports(text: str, arch: tuple[int, int]) -> list[ConflictReport]:
    """Each problem's report, as the error gives it (none where the rules refused)."""
    module = reference.parse(text, reference.make_context())
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        with pytest.raises(smalto.InferenceError) as info:
            smalto.infer_layout(module, arch=arch)
    report = info.value.conflict
    if not isinstance(report, ConflictReport) or not report.core:
        return []
    return [report, *report.others]


def _holds(system: System, elements: list[Element], program: Program, arch) -> bool | None:
    """True where a solution exists (found), False where none does, None: out of fuel."""
    decision = widest(subsystem(system, elements), program, SolveOptions(fuel=50_000, arch=arch))
    return None if isinstance(decision, Exhausted) else isinstance(decision, Solved)


def _check_cores(text: str, arch: tuple[int, int]) -> int:
    """Asserts every printed core cannot hold and, where flagged minimal, is minimal;
    returns how many cores it checked."""
    reports = _reports(text, arch)
    if not reports:
        return 0  # an annotation its value cannot take: the rules refused, no core
    module = reference.parse(text, reference.make_context())
    with in_context(module):
        program = read_program(module)  # (the ids of a fresh read are the same)
        system = derive_system(program, arch)
        for report in reports:
            core = list(report.core)
            assert _holds(system, core, program, arch) is False, report.message()
            assert not core_satisfiable(system, core, program, SolveOptions(arch=arch))
            if len(reports) == 1:
                _no_witness_satisfies(system, program, arch, report)
            if not report.minimal:
                continue
            for index in range(len(core)):
                rest = core[:index] + core[index + 1 :]
                assert _holds(system, rest, program, arch) is True, (
                    f"requirement {index} is not needed:\n{report.message()}"
                )
    return len(reports)


def _no_witness_satisfies(
    system: System, program: Program, arch: tuple[int, int], report: ConflictReport
) -> None:
    """No assignment satisfies an unsatisfiable core: neither the layouts of the kernel
    with a verified fix made, nor those of the kernel with its transfers made
    unoptimized (``allow_unoptimized``'s plan), both solved apart from the core search."""
    witnesses: list[tuple[str, System]] = []
    for suggested in report.edits:
        edited = edited_system(system, (suggested.edit,)) if suggested.edit else None
        if edited is not None:  # (a new cast: only the module can say)
            witnesses.append((suggested.text, edited))
    plan = Plan(program, system, SolveOptions(fuel=100_000, arch=arch))
    ops = plan.fewest()
    if ops is not None:
        witnesses.append(("allow_unoptimized", relaxed(system, ops)))
    for what, witness in witnesses:
        solved = decide(witness, program, SolveOptions(fuel=100_000, arch=arch))
        assert isinstance(solved, Solved), what
        solution = solved.state.solution()

        def lookup(var: int, solution: list = solution) -> object:
            return solution[var]

        broken = [
            e
            for e in report.core
            if (solution[e.var] != e.value if isinstance(e, Fixed) else not judge(e, lookup, True))
        ]
        assert broken, f"the layouts with {what} keep every requirement of:\n{report.message()}"


@pytest.mark.parametrize("name", UNSAT_KERNELS)
def test_each_printed_core_cannot_hold_and_is_minimal(name: str) -> None:
    text = (UNSAT / f"{name}.mlir").read_text()
    _check_cores(text, reference.text_arch(text))


def test_the_printed_cores_are_flagged_minimal() -> None:
    """Shrinking finishes on every unsat kernel: none is left "small but not minimal"."""
    for name in UNSAT_KERNELS:
        text = (UNSAT / f"{name}.mlir").read_text()
        for report in _reports(text, reference.text_arch(text)):
            assert report.minimal, name


def _corpus_sample() -> list[reference.CorpusEntry]:
    root = reference.corpus_root()
    if root is None:
        return []
    entries = {e.key: e for e in reference.load_entries(root)}
    refused = [entries[key] for key in CORPUS_REFUSALS if key in entries]
    step = max(1, len(refused) // CORPUS_SAMPLE)
    return refused[::step][:CORPUS_SAMPLE]


@pytest.mark.skipif(reference.corpus_root() is None, reason="no ../shared/corpus")
@pytest.mark.parametrize("entry", _corpus_sample(), ids=lambda e: e.key)
def test_each_core_of_a_refused_corpus_kernel_cannot_hold_and_is_minimal(
    entry: reference.CorpusEntry,
) -> None:
    _check_cores(entry.path.read_text(), entry.arch)


def test_the_refused_corpus_kernels_are_listed() -> None:
    assert CORPUS_REFUSALS, "tests/unsat/corpus_refusals.txt lists the refused corpus kernels"
