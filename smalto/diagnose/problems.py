"""Every problem of a kernel with no layouts: found one after the other, each with a core
of its own, then each put into words (``conflict.diagnose``) with the edits verified to
fix it while the other problems' likeliest fixes are made too.

A problem is set aside, before the next is looked for, by its likeliest fix (its
transfers made unoptimized, or the first edit of its annotations that makes its core
satisfiable), else by dropping its core's requirements. A core that meets what an
earlier problem is about (its annotations, what its fix changes) is that problem
again, not a new one.
"""

from __future__ import annotations

import dataclasses

from smalto.constraints.conflict_report import ConflictReport
from smalto.constraints.language import (
    Element,
    System,
    as_solved,
    constraint_variables,
    fixed_layout,
)
from smalto.diagnose.candidates import ANNOTATIONS, Candidates
from smalto.diagnose.conflict import core_transfers, diagnose, no_value_fits
from smalto.diagnose.core import core_satisfiable, find_core
from smalto.diagnose.edits import DROP, RETARGET, UNOPTIMIZE, Edit
from smalto.diagnose.verify import edited_system
from smalto.pipeline.describe import Namer
from smalto.program.view import Program
from smalto.solve.decision import NoLayouts
from smalto.solve.for_diagnosis import for_diagnosis
from smalto.solve.options import SolveOptions
from smalto.solve.propagation import Propagation
from smalto.source.files import Sources
from smalto.source.locations import op_location_text

# Past this many problems, the rest are left for the next run.
MAX_PROBLEMS = 4
# Edits of a core's annotations tried for the likeliest fix, at most.
_LIKELY_CANDIDATES = 8


def describe_conflict(
    program: Program,
    system: System,
    decision: NoLayouts,
    options: SolveOptions,
    sources: Sources | None = None,
) -> tuple[str, ConflictReport]:
    """The message and report for a system with no layouts (``decision``, under the
    caller's ``options``): every problem of the kernel (up to ``MAX_PROBLEMS``), each
    with its own core and its own fixes.

    First the problems are found one after the other, each with a core of its own,
    then set aside by its likeliest fix (or without its requirements, where there is
    none) before the next is looked for. Then each is put into words, with the edits
    verified to fix it while the other problems' likeliest fixes are made too: alone,
    no edit makes a kernel with several problems infer.
    """
    empty = decision.proof.empty_slot
    if empty is not None:
        report = no_value_fits(program, system, empty)
        return report.message(), report
    namer = Namer(program, system, sources or Sources())
    breaks = decision.jax_answer_breaks
    problems: list[tuple[list[Element], bool, Edit | None]] = []
    current, failed = system, decision.proof
    # The ops the problems so far are about: their annotations and what their fixes change.
    owned: set[int] = set()
    while len(problems) < MAX_PROBLEMS:
        core, minimal = find_core(
            program, current, options, _seeds(failed), failed.root_explanation()
        )
        if problems and any(e.origin in owned for e in core):
            # The same problem, not resolved by its likeliest fix: one problem, not two.
            break
        fix = _likeliest_fix(program, current, core, options)
        owned.update(e.origin for e in core if program.ops[e.origin].name in ANNOTATIONS)
        if fix is not None:
            owned.update(fix.ops)
        problems.append((core, minimal, fix))
        past = _past(current, core, fix)
        if past is None:
            break
        current = past
        # The next problem, where the widest search finds one (not where it runs out).
        left = for_diagnosis(options).widest(current, program)
        if not isinstance(left, NoLayouts) or left.proof.empty_slot is not None:
            break
        failed = left.proof
    reports = []
    said: set[frozenset[tuple[str, str]]] = set()
    for index, (core, minimal, _) in enumerate(problems):
        # (One line of the kernel's source unrolled by a Python loop into several ops is
        # one problem, with one fix in the source: said once. Its other ops' fixes stay
        # made in the background of every problem's verification.)
        place = frozenset(
            (program.ops[e.origin].name, op_location_text(program.ops[e.origin])) for e in core
        )
        if place in said:
            continue
        said.add(place)
        background = tuple(f for i, (*_, f) in enumerate(problems) if i != index and f)
        reports.append(
            diagnose(
                program,
                system,
                options,
                set(),
                namer=namer,
                jax_answer_breaks=breaks,
                background=background,
                found=(core, minimal),
            )
        )
    first, *others = reports
    report = dataclasses.replace(first, others=others)
    return report.message(), report


def _seeds(state: Propagation) -> set[int]:
    """The variables where the search met the conflict."""
    conflict = state.conflict
    seeds: set[int] = set()
    if conflict is not None:
        if conflict.fixed is not None:
            seeds.add(conflict.fixed.var)
        if conflict.constraint is not None:
            seeds.update(constraint_variables(conflict.constraint))
        if conflict.variable is not None:
            seeds.add(conflict.variable)
    return seeds


def _likeliest_fix(
    program: Program, system: System, core: list[Element], options: SolveOptions
) -> Edit | None:
    """The change that most likely resolves this core, judged on the core alone: its
    transfers made unoptimized, else the first edit of its annotations that makes it
    satisfiable (None where neither does)."""
    transfers = core_transfers(program, system, core, options)
    candidates = Candidates(program, system, options, core, {}, transfers)
    constraints, fixed = as_solved(core)
    for number, edit in enumerate(candidates):  # in the order they are suggested
        if number == _LIKELY_CANDIDATES:
            break
        if edit.kind == UNOPTIMIZE:
            return edit  # (resolves the core: ``_core_transfers`` checked it)
        if edit.kind not in (RETARGET, DROP):
            continue
        sub = edited_system(System(system.variables, [], fixed, system.var_of_site), (edit,))
        if sub is None:
            continue
        elements = [*sub.fixed, *constraints]
        if core_satisfiable(system, elements, program, options):
            return edit
    return None


def _past(system: System, core: list[Element], fix: Edit | None) -> System | None:
    """The system with this problem set aside: fixed as ``fix`` says, else without its
    core's requirements (None where nothing can be set aside)."""
    if fix is not None:
        fixed = edited_system(system, (fix,))
        if fixed is not None:
            return fixed
    dropped = {id(e) for e in core if fixed_layout(e) is None}
    if not dropped:
        # Only layouts imposed outright (fixed, or one option): the last one goes.
        dropped = {id(core[-1])} if core else set()
    if not dropped:
        return None
    return System(
        system.variables,
        [c for c in system.constraints if id(c) not in dropped],
        [f for f in system.fixed if id(f) not in dropped],
        system.var_of_site,
    )
