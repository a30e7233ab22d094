"""Trying edits: one is suggested only if, made on a copy of the module, inference
succeeds and the checker accepts every layout of the answer.

An edit is judged by what smalto, as the user runs it, then does with the
kernel: the whole decision of the pass (JAX's order, the complete search,
the widened one: ``decide``), never a narrower search. Most candidates fail,
and a failure is found cheaply on the derived system: a new target for an
annotation changes only the layout that annotation fixes (its rule states
nothing else that depends on it), so deciding the system with that one value
changed is exact; removing an annotation is at most as constrained as
dropping what it fixes, so that relaxed system is a sound filter. Only edits
that pass are made on a clone of the module, which is then read, derived,
solved, annotated and checked (``smalto.check``, JAX 0.12.0.1's lowering
requirements), as a kernel author's next run would be.

Where the edited kernel's layouts come from smalto's own searches (JAX's
order finds none that lowers), JAX's own pass still rejects the edited
kernel: the edit then needs smalto installed (``Verdict.needs_smalto``), and
the fix says so. The work is bounded by counts (candidates looked at, edits made on a
copy), never a clock: the message is the same on a busy machine as on an idle one.

JAX's own dialect lowering of a fix is not run when the message is made: on a
small kernel it alone costs 10 to 30 times JAX's whole pass, and a refusal's
words stay within 10 times it (issue #33). The checker states JAX 0.12.0.1's
lowering requirements, so "smalto infers the kernel with it and its checker
accepts the layouts" is the claim; the tests lower every printed first fix of
the failing kernels they hold, and ``smalto fix`` lowers the kernel it edits.
Where a caller wants that word in the message itself, ``lowering_fixes()``
(``smalto infer --lower-fixes``) or ``Budget(lower=True)`` asks for it.
"""

from __future__ import annotations

import time
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import field

from jax._src.lib.mlir import ir

from smalto.basics.mlir import clone_module
from smalto.basics.records import value_class
from smalto.check import check
from smalto.constraints.language import Fixed, Role, Site, System
from smalto.diagnose.edits import ADD_CAST, DROP, RETARGET, UNOPTIMIZE, Edit, apply, ops_in_order
from smalto.diagnose.jax_lowering import COLLECTIVE_MIXED, collective_mixed, jax_lowering_accepts
from smalto.pipeline.steps import (
    Failure,
    Inference,
    RulesRefused,
    derive,
    solve,
    solve_copy,
    write,
)
from smalto.program.reader import read_program
from smalto.program.view import Program
from smalto.rewrite.transfers import relaxed
from smalto.rules import consumers
from smalto.rules.tmem import MIXED_COLLECTIVE
from smalto.solve.decision import Solved
from smalto.solve.for_diagnosis import for_diagnosis
from smalto.solve.options import SolveOptions

# Whether a message made now lowers its first fix through JAX's dialect lowering (off by
# default: see the module's docstring). A context variable, since the message is made
# lazily, when it is first read: the caller who reads it says.
_LOWER_FIXES: ContextVar[bool] = ContextVar("smalto_lower_fixes", default=False)


def lower_fixes() -> bool:
    """Whether messages made now have JAX's dialect lowering verify their first fix."""
    return _LOWER_FIXES.get()


@contextmanager
def lowering_fixes(on: bool = True) -> Iterator[None]:
    """Within this block, a message made (read) lowers its first fix through JAX's dialect
    lowering too, where the module has its launch (``on=False``: it does not)."""
    token = _LOWER_FIXES.set(on)
    try:
        yield
    finally:
        _LOWER_FIXES.reset(token)


@value_class(frozen=True)
class Budget:
    """How much a diagnosis may spend on trying edits."""

    candidates: int = 48  # candidates looked at, at most
    on_module: int = 4  # of which made on a copy of the module (the dear part), at most
    verified: int = 3  # stop once this many edits are verified
    # JAX's dialect lowering on the edit printed first (where the module has its launch):
    # the surest word, and most of the message's cost on a small kernel, so off unless
    # asked for (``lowering_fixes``).
    lower: bool = field(default_factory=lower_fixes)


@value_class()
class Trial:
    """What trying the candidates found: the verified edits, best first, and how far it got."""

    verified: list[Edit] = field(default_factory=list)
    tried: int = 0  # candidates looked at
    on_module: int = 0  # of which made on a copy of the module
    complete: bool = True  # every candidate was looked at (no budget ran out)
    seconds: float = 0.0  # how long it took (said, never a bound)
    # Whether JAX's dialect lowering took the first verified edit's answer (None: not run,
    # the module has no launch to lower it in). It runs on the first verified edit only.
    lowered: bool | None = None
    # Edits smalto's checker accepted but JAX's lowering rejected, with its reason.
    rejected: list[tuple[Edit, str]] = field(default_factory=list)
    # The verified edits whose kernel JAX's own pass still rejects: they need smalto.
    needs_smalto: set[Edit] = field(default_factory=set)


@value_class(frozen=True)
class Verdict:
    """An edit made on a copy: whether the copy inferred and checked, and JAX's lowering's
    word on it (None where it was not asked or cannot run on the module)."""

    ok: bool
    lowered: bool | None = None
    rejected: str = ""  # why JAX's lowering rejected an answer the checker accepted
    # The layouts came from smalto's own searches, not JAX's order: JAX's own pass finds
    # none that lowers for the edited kernel (it needs smalto installed).
    needs_smalto: bool = False

    def __bool__(self) -> bool:
        return self.ok


def try_edits(
    program: Program,
    system: System | None,
    options: SolveOptions,
    candidates: Iterable[Edit],
    budget: Budget | None = None,
    background: tuple[Edit, ...] = (),
) -> Trial:
    """The candidates (in order) that make the kernel infer and check, within ``budget``;
    ``background``: edits made first on every copy (the other problems' fixes, where a
    kernel has several), so that each candidate is judged with them. ``options``: the
    caller's (``for_diagnosis``)."""
    budget = budget or Budget()
    start = time.monotonic()
    trial = Trial()
    module = module_of(program)
    fixed_places: set[tuple[int, ...]] = set()
    for edit in candidates:
        if _place(edit) in fixed_places:
            continue  # another target for a cast already fixed: no news for the author
        if edit.kind == ADD_CAST and trial.verified:
            continue  # new code where an edit of the author's own does: not worth the time
        out_of_budget = trial.tried >= budget.candidates or trial.on_module >= budget.on_module
        if out_of_budget:
            trial.complete = False
            break
        trial.tried += 1
        allowed, decided = _system_allows(program, edited_system(system, background), options, edit)
        if not allowed:
            continue
        trial.on_module += 1
        # JAX's own lowering (where the module has its launch) runs on the edit printed
        # first: an edit it rejects is not suggested. It costs many times the rest of
        # the trial, so the edits after it are verified by inference and the checker.
        lower_it = not trial.verified and budget.lower
        verdict = works_on_copy(
            module, edit, options, lower=lower_it, background=background, decided=decided
        )
        if verdict.rejected:
            trial.rejected.append((edit, verdict.rejected))
        if verdict:
            if not trial.verified:
                trial.lowered = verdict.lowered
            trial.verified.append(edit)
            if verdict.needs_smalto:
                trial.needs_smalto.add(edit)
            fixed_places.add(_place(edit))
            if len(trial.verified) >= budget.verified:
                break
    # After the first (the likeliest, and the one JAX's lowering ran on), the edits that
    # work with JAX's own pass too before those that need smalto installed.
    if trial.verified:
        first, *others = trial.verified
        trial.verified = [first, *sorted(others, key=lambda e: e in trial.needs_smalto)]
    trial.seconds = time.monotonic() - start
    return trial


def _place(edit: Edit) -> tuple[int, ...]:
    """Where an edit changes the kernel: the annotation (and its entry), or the cast value."""
    kind = (RETARGET, DROP, ADD_CAST, UNOPTIMIZE).index(edit.kind)
    if edit.value is not None:
        return (kind, edit.value, *(edit.use or ()))
    return (kind, *edit.ops, edit.argument if edit.argument is not None else -1)


def module_of(program: Program) -> ir.Operation:
    """The module operation the program was read from."""
    top = program.ops[program.top_level[0]].operation
    parent = top.parent
    assert parent is not None, "a program's ops sit in a module"
    return parent


@value_class(frozen=True)
class Decided:
    """An edited system the pass decided, and what solved it: the copy's own inference
    where the copy derives that very system (``works_on_copy``)."""

    system: System
    solved: Solved


def _system_allows(
    program: Program, system: System | None, options: SolveOptions, edit: Edit
) -> tuple[bool, Decided | None]:
    """Whether the derived system, edited as the module would be, may have a solution:
    decided as the pass decides it (``decide``: JAX's order, then the widened search),
    so that an edit is never refused for want of a layout only smalto's searches find;
    with the solved system, where it was decided."""
    if system is None or edit.kind == ADD_CAST:
        return True, None  # a new cast adds a value: only the module says
    edited = edited_system(system, (edit,))
    if edited is None:
        return True, None
    decision = for_diagnosis(options).as_the_pass(edited, program)
    if not isinstance(decision, Solved):
        return False, None  # no layouts, or more search than a fix may need
    return True, Decided(edited, decision)


def _edited_fixed(system: System, edit: Edit) -> list[Fixed] | None:
    """The fixed layouts after the edit (None where the edit's fixed layout is not found)."""
    ops = set(edit.ops)
    hits = [
        i
        for i, f in enumerate(system.fixed)
        if f.origin in ops and f.value == edit.old and _same_entry(system, f, edit)
    ]
    if not hits:
        return None
    fixed = list(system.fixed)
    for i in reversed(hits):
        if edit.kind == RETARGET:
            assert edit.new is not None
            fixed[i] = Fixed(fixed[i].var, edit.new, fixed[i].origin, fixed[i].what)
        else:
            del fixed[i]
    return fixed


def _same_entry(system: System, fixed: Fixed, edit: Edit) -> bool:
    """For an ``inline_mgpu`` entry: whether ``fixed`` is the one the entry states."""
    if edit.attribute is None:
        return True
    role = Role.RESULT if edit.attribute == "out_layouts" else Role.OPERAND
    site = Site(fixed.origin, role, edit.argument if edit.argument is not None else -1)
    return system.var_of_site.get(site) == fixed.var


def edited_system(system: System | None, edits: tuple[Edit, ...]) -> System | None:
    """``system`` as the module would derive it once ``edits`` are made; None where an
    edit changes what only the module can say (a new cast), or ``system`` is None."""
    for edit in edits:
        if system is None:
            return None
        if edit.kind == UNOPTIMIZE:
            system = relaxed(system, frozenset(edit.ops))
        elif edit.kind in (RETARGET, DROP):
            fixed = _edited_fixed(system, edit)
            if fixed is None:
                return None
            system = System(system.variables, system.constraints, fixed, system.var_of_site)
        else:
            return None
    return system


def works_on_copy(
    module: ir.Operation,
    edit: Edit,
    options: SolveOptions,
    *,
    lower: bool = False,
    background: tuple[Edit, ...] = (),
    decided: Decided | None = None,
) -> Verdict:
    """Makes ``edit`` (after ``background``) on a clone of ``module``: does the clone infer,
    and its answer check? With ``lower``, JAX's dialect lowering must take the answer too
    where it can run. ``decided``: the edited system as the derived system predicted it,
    solved; where the clone derives that very system, its solver is the clone's (the
    pass would decide it again, step for step), and the answer is written and checked.
    ``options``: the caller's (``for_diagnosis``)."""
    with module.context, ir.Location.unknown(module.context):
        clone = clone_module(module)
    try:
        with clone.context, ir.Location.unknown(clone.context):
            # (Edits that remove ops go last: the others name ops by position.)
            edits = sorted((*background, edit), key=lambda e: e.kind == DROP)
            # The ops up to the last one an edit names, by position (the walk stops there).
            ops = ops_in_order(clone.operation, until=max(map(_last_op, edits)))
            for made in edits:
                apply(made, ops)
            # Decided as inference decides it (the widened search included).
            try:
                inference = _inference(clone, options, decided)
            except Failure as failure:
                if _mixes_collective(failure):
                    # Layouts found, and the pass refuses the mix as JAX's lowering does.
                    return Verdict(False, False, COLLECTIVE_MIXED)
                return Verdict(False)
            # JAX's order answers only as JAX's pass does; the complete and widened
            # searches find what it does not.
            needs_smalto = not inference.solved.in_jax_order
            # The one requirement of JAX's lowering beyond layouts a layout edit meets: a
            # kernel collective throughout or not at all (none changes it, so none fixes
            # it). Said as the lowering's reason (the closest edit), before the checker,
            # which restates it.
            if collective_mixed(inference.program):
                return Verdict(False, False, COLLECTIVE_MIXED, needs_smalto)
            write(inference)
        # (The checker reads the program view inference read: the same ops and values.)
        if check(clone, options.arch, program=inference.program):
            return Verdict(False)
        if not lower:
            return Verdict(True, needs_smalto=needs_smalto)
        lowered, why = jax_lowering_accepts(clone.operation)
        return Verdict(lowered is not False, lowered, why, needs_smalto)
    except (NotImplementedError, ValueError):
        return Verdict(False)  # the edited kernel fails some other way: not a fix
    except Exception:  # noqa: BLE001 -- an edit the pipeline cannot take is no fix either
        return Verdict(False)
    finally:
        del clone


def _mixes_collective(failure: Failure) -> bool:
    """Whether the pass refused a copy for mixing collective and 1-CTA ops."""
    return isinstance(failure, RulesRefused) and failure.error.code == MIXED_COLLECTIVE


def _last_op(edit: Edit) -> int:
    """The last op (by position) an edit changes or names."""
    return max((*edit.ops, edit.use[0] if edit.use is not None else 0))


def _inference(clone: ir.Module, options: SolveOptions, decided: Decided | None) -> Inference:
    """The pass on the clone (``solve_copy``), but for the search where the clone derives
    the system already decided: the solver depends on the system alone (and on attributes
    no edit changes: a cast's ``strict``, an allocation's ``collective``)."""
    options = for_diagnosis(options).pass_options
    if decided is None:
        return solve_copy(clone, options)
    program = read_program(clone, consumers())
    system = derive(program, options)
    if system != decided.system:
        return solve(program, system, options)
    return Inference(program, system, decided.solved)


__all__ = [
    "Budget",
    "Decided",
    "Trial",
    "Verdict",
    "edited_system",
    "lower_fixes",
    "lowering_fixes",
    "module_of",
    "try_edits",
    "works_on_copy",
]
