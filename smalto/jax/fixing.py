"""Making a failing Pallas kernel lower: the verified fixes applied to its Python source.

``fix_script`` lowers a function of a script with smalto as the pass (no GPU
needed). Where a kernel has no layouts, the diagnosis has verified, on the
kernel's module, the edits that fix each of its problems; the first of each
that has a place in the source (``smalto.source.fix_edits``) is made on the text,
the edited script is lowered again, and so on until the function lowers or
no verified fix is left. The script runs in its own place, as ``python
SCRIPT.py`` runs it (``__file__``, ``sys.path``, the working directory), its
edited text in memory: nothing is written, nor copied anywhere, and the file is
written (by the caller) only where the kernel then lowers. An edit outside the
function, in a helper other functions of the file share, is made only where
they still lower (``smalto.jax.other_functions``). Once it lowers with smalto,
the same function is lowered with JAX's own pass too: a fix JAX's pass rejects
needs smalto installed to compile.

``fix(fn, *args)`` is the same diagnosis for a function at hand, as edits of
its source file, without running anything again nor writing.
"""

from __future__ import annotations

import ast
import inspect
import os
import warnings
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from smalto.constraints.conflict_report import problems_of
from smalto.errors import SmaltoOnlyWarning
from smalto.jax.hooks import InferenceCall, Observer, Pass, observing
from smalto.jax.interpreted import RunProof, run_both
from smalto.jax.lowering import KernelLoweringError, lower
from smalto.jax.meaning import Meaning, TraceFailed, meaning_of
from smalto.jax.other_functions import OtherFunctions
from smalto.jax.portable import portable_edit
from smalto.jax.staged_epilogue import STAGE, offered_staging, staged_epilogues
from smalto.pipeline.relayouts import Relayout, relayouts, transfer_layouts, written_layouts
from smalto.source.files import reading_as_edited
from smalto.source.fix_edits import (
    MACHINE_APPLICABLE,
    MAYBE_INCORRECT,
    DiagnosedEdit,
    SourceEdit,
    apply_parts,
    overlaps,
    source_edit,
)
from smalto.source.keepdims import keepdims_causes, keepdims_not_followed
from smalto.source.lines import python_lines
from smalto.source.scripts import ScriptError, check_arguments, one_line, run_script

# Rounds of fixing at most: each problem's fix may uncover another (a kernel rarely has
# more than the diagnosis' four problems at once).
MAX_ROUNDS = 4
UNOPTIMIZE = "unoptimize"
# The script's ``__name__`` while smalto runs it: its ``if __name__ == "__main__":`` part
# does not run.
RUN_NAME = "__smalto_fix__"


@dataclass(frozen=True)
class Applied:
    """An edit made, with what it changed line by line and why."""

    edit: SourceEdit
    before: list[str]  # the lines it changes, as they were
    after: list[str]  # the same lines, edited
    why: str  # the failure it fixes: its code and title
    # Proven by running before it was chosen (it changes the ops, which JAX's trace cannot
    # judge: a statistic computed without its unit dim).
    by_running: bool = False

    @property
    def proven_by(self) -> str:
        """What proves, before the run of the whole, that the edit keeps what the kernel
        computes."""
        if self.by_running:
            return RUNNING
        if self.edit.kind == STAGE:
            return CONSTRUCTION
        return TRACE


# The proofs an edit's meaning has before the run (``Applied.proven_by``).
TRACE = "JAX's trace of the edited function equals its trace before the edit, layouts set aside"
CONSTRUCTION = (
    "its construction: the same value stored whole and copied whole to the same place, "
    "no name changing binding"
)
RUNNING = (
    "the kernel as it was and as edited run in JAX's Mosaic GPU interpreter on the same "
    "random inputs, bit-equal (JAX's trace cannot judge an edit that changes the ops)"
)


@dataclass(frozen=True)
class HeldBack:
    """A verified fix not made, and why not."""

    edit: SourceEdit
    reason: str


@dataclass
class FixOutcome:
    """What ``fix_script`` did: the text before and after, whether the edited function
    lowers with smalto (and with JAX's own pass), the edits made and those held back."""

    path: Path
    original: str
    text: str  # the edited text (the original where nothing was made)
    lowers: bool  # the function lowers with smalto as the pass, as edited
    already: bool = False  # it lowered as written
    applied: list[Applied] = field(default_factory=list)
    held_back: list[HeldBack] = field(default_factory=list)
    remaining: str | None = None  # the diagnosis where it still fails
    # JAX's own pass rejects the kernel as edited (None: not asked, it does not lower).
    needs_smalto: bool | None = None
    jax_says: str = ""  # what JAX's pass said, where it rejected it
    rounds: int = 0
    not_staged: list[str] = field(default_factory=list)  # why a transfer was not staged
    # Both kernels run in JAX's Mosaic GPU interpreter (None: no edit to prove).
    run: RunProof | None = None
    # The run showed the edits change what the kernel computes: nothing is written.
    refuted: bool = False
    # Why a portable edit JAX's pass took was not proven by running (a difference, a race,
    # what the interpreter cannot run).
    unproven: list[str] = field(default_factory=list)
    # The reductions kept with a unit dim in the function, where it compiles only with
    # smalto: what JAX's lowering cannot compute on.
    keepdims: list[str] = field(default_factory=list)
    # Where the keepdims edit stops following a statistic (``path:line: `code`: why``),
    # where a statistic kept with a unit dim is not followed.
    keepdims_not_followed: str = ""


def fix_script(
    path: Path,
    function: str,
    args: tuple[Any, ...],
    *,
    arch: tuple[int, int] | None = None,
    allow_unoptimized: bool = False,
    text: str | None = None,
    announce: Callable[[str], None] | None = None,
) -> FixOutcome:
    """Fixes ``function`` of the script at ``path`` (its text: ``text``, else the file's)
    until it lowers with smalto, on text only; raises ``ScriptError`` where the script
    cannot be run as written. ``announce`` is told, in words, each time the script runs
    (its top level runs as ``python SCRIPT.py`` runs it: once as written, once more
    after each round of edits)."""
    original = path.read_text(encoding="utf-8") if text is None else text
    outcome = FixOutcome(path, original, original, lowers=False)
    script = Path(os.path.abspath(path))  # the name its code runs under: its ``__file__``

    # Each text is run once: the round that lowers an edited text uses the functions its
    # meaning check ran it for.
    ran: dict[str, dict[str, Any]] = {}

    def run(source: str, why: str) -> dict[str, Any]:
        if source not in ran:
            if announce is not None:
                announce(f"running {path} {why}")
            with reading_as_edited(script, source):
                ran[source] = run_script(path, run_name=RUN_NAME, text=source, subject="the script")
        return ran[source]

    def load(source: str, why: str) -> Callable[..., Any]:
        """The function as the script ``source`` defines it."""
        with reading_as_edited(script, source):
            return _function_of(run(source, why), function)

    def rerun_original() -> Callable[..., Any]:
        """The function as written, from a second run of the unedited script."""
        if announce is not None:
            announce(f"running {path} again as written, to see if JAX's trace of it is the same")
        with reading_as_edited(script, original):
            ran_again = run_script(path, run_name=RUN_NAME, text=original, subject="the script")
            return _function_of(ran_again, function)

    seen = {original}
    current = original
    meanings = Meanings(load, args, rerun_original, text=original)
    lowered: Callable[..., Any] | None = None
    by_smalto: dict[str, tuple[bool, BaseException | None]] = {}
    for round_number in range(MAX_ROUNDS + 1):
        with reading_as_edited(script, current):
            try:
                namespace = run(current, _why(round_number, function))
                fn = _function_of(namespace, function)
            except ScriptError:
                if round_number == 0:
                    raise
                break  # an edited script that does not load: not a fix (never written)
            if round_number == 0:
                check_arguments(fn, len(args), function)
                meanings.original_function(fn)
            # (A staged text its check already lowered with smalto is not lowered again.)
            checked = by_smalto.pop(current, None)
            ok, error = checked if checked else lower_with(fn, args, arch, "smalto")
            outcome.rounds = round_number + 1
            if ok:
                outcome.lowers, outcome.already = True, round_number == 0
                outcome.text, outcome.remaining = current, None
                lowered = fn
                break
            outcome.remaining = _named(_message(error), script, path)
            if round_number == MAX_ROUNDS:
                break
            others = OtherFunctions(function, args, arch, run)
            chosen = choose(
                error,
                current,
                script,
                allow_unoptimized,
                outcome,
                meanings.keeps_from(current),
                others=(others, namespace),
                staged_lowers=_staged_lowers(load, script, function, args, arch, by_smalto),
                unsteady=meanings.unsteady,
            )
            if not chosen:
                break
            edited = apply_parts(current, [p for e in chosen for p in e.parts])
            # (A staged epilogue restructures its line: made from the statement's own parts,
            # and verified by JAX's own pass, it is judged apart. A text already seen was
            # proven to keep the meaning when it was made.)
            plain = apply_parts(current, [p for e in chosen if e.kind != STAGE for p in e.parts])
            if edited in seen or (plain not in seen and not meanings.keeps_from(current)(plain)):
                break
            for edit in chosen:
                outcome.applied.append(_applied(edit, current, script, path))
            seen.add(edited)
            current = edited
    _finish(outcome, lowered, script, load, args, arch, meanings, announce)
    return outcome


def _staged_lowers(
    load: Loader,
    script: Path,
    function: str,
    args: tuple[Any, ...],
    arch: tuple[int, int] | None,
    by_smalto: dict[str, tuple[bool, BaseException | None]],
) -> Callable[[str, list[tuple[int, int]]], bool]:
    """The check of a staged text (``choose``'s ``staged_lowers``); what smalto's pass
    said of a text it lowered goes into ``by_smalto`` (the next round's lowering, where
    that text is the one chosen: each diagnosis costs seconds)."""

    def staged_lowers(edited: str, ranges: list[tuple[int, int]]) -> bool:
        """Whether the function as ``edited`` (transfers staged at ``ranges``' lines)
        lowers with JAX's own pass, or, where other problems remain, smalto's finds none
        at the staged lines."""
        try:
            fn = load(edited, f"as staged, to lower {function} with JAX's pass")
        except ScriptError:
            return False
        with reading_as_edited(script, edited):
            if lower_with(fn, args, arch, "jax")[0]:
                return True
            ok, error = by_smalto[edited] = lower_with(fn, args, arch, "smalto")
        return ok or _none_within(error, str(script), ranges)

    return staged_lowers


def _finish(
    outcome: FixOutcome,
    lowered: Callable[..., Any] | None,
    script: Path,
    load: Loader,
    args: tuple[Any, ...],
    arch: tuple[int, int] | None,
    meanings: Meanings,
    announce: Callable[[str], None] | None,
) -> None:
    """After the fix loop: the kernel that lowered with smalto lowered with JAX's own pass
    (made portable where it is not), the whole proven by running, and a kernel not fixed
    left as it was."""
    path = outcome.path
    if lowered is not None:
        # The function that lowered with smalto, lowered with JAX's own pass: no new run.
        with reading_as_edited(script, outcome.text):
            ok, error = lower_with(lowered, args, arch, "jax")
        outcome.needs_smalto = not ok
        cause = getattr(error, "__cause__", None) or error
        outcome.jax_says = "" if ok else _named(_first_line(cause), script, path)
        if not ok:
            _make_portable(outcome, lowered, script, load, args, arch, meanings)
    proven_already = outcome.run is not None  # (the portable edit's run was of the whole)
    if outcome.lowers and outcome.applied and meanings.original is not None and not proven_already:
        _prove_by_running(outcome, meanings.original, load, args, announce)
    if not outcome.lowers or outcome.refuted:
        outcome.text = outcome.original  # a kernel not fixed is left as it was
    if not outcome.lowers:
        outcome.applied.clear()


def _prove_by_running(
    outcome: FixOutcome,
    original: Callable[..., Any],
    load: Loader,
    args: tuple[Any, ...],
    announce: Callable[[str], None] | None,
) -> None:
    """The whole of the edits proven by running: the original and the fixed function run
    in JAX's Mosaic GPU interpreter on the same random inputs (``smalto.jax.interpreted``).
    Where they differ, or the fixed kernel races, nothing is written (``refuted``); where
    the interpreter cannot run the kernel, each edit stands on its own proof (JAX's trace,
    or the staged epilogue's construction)."""
    try:
        fixed = load(outcome.text, "as fixed, to run it in JAX's Mosaic GPU interpreter")
    except ScriptError as error:
        outcome.run = RunProof(False, why_not=f"the fixed script does not load: {error}")
        outcome.refuted = True
        return
    if announce is not None:
        announce(
            f"the kernel of {outcome.path}, as written and as fixed, run in JAX's Mosaic GPU "
            "interpreter (on the CPU) on the same random inputs"
        )
    with reading_as_edited(Path(os.path.abspath(outcome.path)), outcome.text):
        outcome.run = run_both(original, fixed, args)
    outcome.refuted = outcome.run.refutes


# The ops that move a value to or from memory: a staged block's own (its store into the
# scratch, its load from it) are where a staging that does not hold would fail.
_TRANSFERS = ("mosaic_gpu.vector_store", "mosaic_gpu.vector_load", "vector.store", "vector.load")


def _none_within(error: BaseException | None, file: str, ranges: list[tuple[int, int]]) -> bool:
    """Whether the inference ``error`` has problems, none of them the staged blocks' own:
    a problem is theirs where every transfer its conflict holds is written at a line of
    ``file`` within ``ranges`` (a conflict of a store not staged yet may hold the staged
    blocks' transfers too, as uses of the same value)."""
    problems = problems_of(error)
    if not problems:
        return False

    def within(location: str) -> bool:
        head, _, _ = location.rpartition(":")
        name, _, line = head.rpartition(":")
        return name == file and line.isdigit() and any(a <= int(line) <= b for a, b in ranges)

    for report in problems:
        transfers = [
            str(getattr(r, "location", ""))
            for r in getattr(report, "requirements", [])
            if str(getattr(r, "op", "")).startswith(_TRANSFERS)
        ]
        if transfers and all(within(where) for where in transfers):
            return False
    return True


def _why(round_number: int, function: str) -> str:
    if round_number == 0:
        return f"(its top level, as python runs it, but not its __main__ part) to lower {function}"
    return f"again, as edited (in memory: the file is not written yet), to lower {function}"


def _function_of(namespace: dict[str, Any], function: str) -> Callable[..., Any]:
    found = namespace.get(function)
    if not callable(found):
        raise ScriptError(f"the script defines no function {function!r}")
    return found


# The function as a text of the script defines it (the text run in the script's place).
Loader = Callable[[str, str], Callable[..., Any]]


class Meanings:
    """The check that an edit keeps what the kernel computes (``smalto.jax.meaning``): the
    edited script run, its function traced by JAX, and its trace compared with the
    original's. Each text is traced once."""

    def __init__(
        self,
        load: Loader,
        args: tuple[Any, ...],
        rerun: Callable[[], Callable[..., Any]] | None = None,
        *,
        text: str | None = None,
    ):
        self.load, self.args, self.rerun = load, args, rerun
        self.text = text  # the script as written, where known
        self._original: Callable[..., Any] | None = None
        self._meanings: dict[str, Meaning | None] = {}
        self._wanted: Meaning | None = None
        self._steady: bool | None = None

    def original_function(self, fn: Callable[..., Any]) -> None:
        """The function as written (traced when an edit is first checked)."""
        self._original = fn

    @property
    def original(self) -> Callable[..., Any] | None:
        return self._original

    def keeps(self, edited: str) -> bool:
        """Whether the script ``edited`` computes what the original does."""
        if self._wanted is None:
            if self._original is None:
                return False
            try:
                self._wanted = meaning_of(self._original, self.args)
            except TraceFailed:
                return False  # nothing to compare with: nothing is proven
        return self._meaning(edited) == self._wanted

    def keeps_from(self, base: str) -> Callable[[str], bool]:
        """The check of an edit of the script ``base``: JAX's trace of the edited script
        against ``base``'s. A text the fixing made (the script as staged, say) computes
        what the original does, each of its edits proven when it was made; an edit of it
        keeps that where its trace is the text's own. (Against the original's trace, an
        edit of a staged text could never be proven: the staging changes the ops.)"""
        if base == self.text:
            return self.keeps

        def keeps(edited: str) -> bool:
            wanted = self._meaning(base)
            return wanted is not None and self._meaning(edited) == wanted

        return keeps

    def unsteady(self) -> bool:
        """Whether JAX's trace of the function as written differs between two runs of the
        unedited script (a random value, the time, at its top level): then no trace of an
        edit can be compared with it. Asked only where a comparison failed (a run more)."""
        if self._steady is None:
            self._steady = True  # where it cannot be told: no difference seen
            if self._wanted is not None and self.rerun is not None:
                try:
                    self._steady = meaning_of(self.rerun(), self.args) == self._wanted
                except (ScriptError, TraceFailed):
                    pass
        return not self._steady

    def _meaning(self, text: str) -> Meaning | None:
        if text not in self._meanings:
            try:
                fn = self.load(text, "as edited, to compare JAX's trace of it with the original's")
                self._meanings[text] = meaning_of(fn, self.args)
            except (ScriptError, TraceFailed):
                self._meanings[text] = None
        return self._meanings[text]


# Why a kernel's portable edit is made (said where a fix says its failure's code).
PORTABLE = "compiles only with smalto: JAX's own pass rejects it"


def _make_portable(
    outcome: FixOutcome,
    fn: Callable[..., Any],
    script: Path,
    load: Loader,
    args: tuple[Any, ...],
    arch: tuple[int, int] | None,
    meanings: Meanings,
) -> None:
    """Where the kernel (as fixed, ``fn``) lowers with smalto only: the edit that makes
    JAX's own pass accept it (``smalto.jax.portable``), made on the text where one is
    found."""
    found = _RelayoutsSeen()
    with observing(found), reading_as_edited(script, outcome.text):
        lowered, _ = lower_with(fn, args, arch, "smalto")
    if not lowered:
        return

    def jax_lowers(text: str) -> bool:
        try:
            edited = load(text, "as edited, to lower it with JAX's own pass")
        except ScriptError:
            return False
        with reading_as_edited(script, text):
            return lower_with(edited, args, arch, "jax")[0]

    runs: dict[str, RunProof] = {}

    def runs_equal(text: str) -> bool:
        """Whether the function as ``text`` computes, run in JAX's interpreter, what it
        computes as the text it was (``fn``), bit for bit, with no race."""
        try:
            edited = load(text, "as edited, to run it in JAX's interpreter beside the original")
        except ScriptError:
            return False
        with reading_as_edited(script, text):
            runs[text] = run_both(fn, edited, args)
        if not runs[text].proven:
            outcome.unproven.append(runs[text].why_not)
        return runs[text].proven

    made = portable_edit(
        outcome.text,
        str(script),
        found.relayouts,
        meanings.keeps_from(outcome.text),
        jax_lowers,
        fn.__name__,
        transfers=found.transfers,
        runs_equal=runs_equal,
    )
    if made is None:
        lines = _function_lines(outcome.text, fn.__name__)
        outcome.keepdims = [
            f"`{c.text}` at {outcome.path}:{c.line}:{c.column} ({c.form})"
            for c in keepdims_causes(outcome.text, lines)
        ]
        stopped = keepdims_not_followed(outcome.text, lines) if outcome.keepdims else None
        if stopped is not None:
            outcome.keepdims_not_followed = f"{outcome.path}:{stopped.line}: `{stopped.text}`" + (
                f": {stopped.why}" if stopped.why else ""
            )
        return
    applied = _applied(made.edit, outcome.text, script, outcome.path)
    outcome.applied.append(replace(applied, why=PORTABLE, by_running=made.by_running))
    if made.by_running and outcome.text == outcome.original:
        # (Its run was of the kernel as written against the kernel as fixed: the run of
        # the whole, made once.)
        outcome.run = runs[made.text]
    outcome.text, outcome.already = made.text, False
    outcome.needs_smalto, outcome.jax_says = False, ""


def _function_lines(text: str, function: str) -> range | None:
    """The lines of the top-level function ``function`` of ``text``."""
    try:
        tree = ast.parse(text.removeprefix("\ufeff"))
    except SyntaxError:
        return None
    for node in tree.body:
        if isinstance(node, ast.FunctionDef) and node.name == function:
            return range(node.lineno, (node.end_lineno or node.lineno) + 1)
    return None


class _RelayoutsSeen(Observer):
    """The relayouts of every answer smalto's pass gave while observed."""

    def __init__(self) -> None:
        self.relayouts: list[Relayout] = []
        self.transfers: list[Relayout] = []  # the layouts of the values loaded and stored

    def after(self, call: InferenceCall, error: BaseException | None) -> None:
        if error is None and call.inferred_by == "smalto":
            with call.module.context:
                layouts = written_layouts(call.module)
                self.relayouts += relayouts(layouts)
                self.transfers += transfer_layouts(layouts)


def choose(
    error: BaseException | None,
    text: str,
    script: Path,
    allow_unoptimized: bool,
    outcome: FixOutcome,
    keeps: Callable[[str], bool],
    *,
    others: tuple[OtherFunctions, dict[str, Any]] | None = None,
    staged_lowers: Callable[[str, list[tuple[int, int]]], bool] | None = None,
    unsteady: Callable[[], bool] | None = None,
) -> list[SourceEdit]:
    """The first verified fix of every problem that can be made on the text: it has a place
    in the source, keeps what the kernel computes (``keeps``: JAX's trace of the edited
    script is the original's, layouts set aside), and (made unoptimized) is allowed;
    among those, one that JAX's own pass takes too comes before one that needs smalto, and
    one that keeps the transfers optimized before one that makes them unoptimized. First
    of all, for every GMEM store or load with no coalesced plan, the staged epilogue
    (``smalto.jax.staged_epilogue``), where ``staged_lowers`` the text it makes. An
    edit outside the function being fixed is made only where the script's other
    functions that use what it changes still lower (``others``: them, and what the
    script as ``text`` defined). ``unsteady``: whether the script's own trace differs
    from run to run (said as the reason where a trace differs)."""

    def read(file: str) -> str | None:
        return text if os.path.abspath(file) == str(script) else None

    chosen: list[SourceEdit] = []
    problems = problems_of(error)
    staged_problems: set[int] = set()
    if staged_lowers is not None:
        # The fast fix first: every transfer with no coalesced plan staged through SMEM.
        staged = staged_epilogues(problems, text, str(script), staged_lowers)
        outcome.not_staged += [
            _named(r, script, outcome.path)
            for r in staged.refusals
            if _named(r, script, outcome.path) not in outcome.not_staged
        ]
        kept = []
        for edit in staged.edits:
            reason = others[0].refusal(text, others[1], edit) if others is not None else None
            if reason is not None:
                outcome.held_back.append(HeldBack(_renamed(edit, script, outcome.path), reason))
            else:
                kept.append(edit)
        if len(kept) == len(staged.edits):
            chosen += kept
            staged_problems = staged.problems
    for problem, report in enumerate(problems):
        code = report.code
        if problem in staged_problems:
            continue
        # Best first, but a fix JAX's own pass takes too before one that needs smalto, and
        # one that keeps every transfer optimized (fast) before one that does not.
        suggested_edits: list[DiagnosedEdit] = list(report.edits)
        ranked = sorted(suggested_edits, key=lambda e: (e.needs_smalto, e.kind == UNOPTIMIZE))
        for suggested in ranked:
            edit = source_edit(suggested, read, code=code, problem=problem, home=str(script))
            reason = _not_made(edit, text, allow_unoptimized, keeps, unsteady)
            if reason is None and any(
                overlaps(a, b) for other in chosen for a in other.parts for b in edit.parts
            ):
                reason = "it changes the same place as another problem's fix"
            if reason is None and others is not None:
                reason = others[0].refusal(text, others[1], edit)
            if reason is not None:
                outcome.held_back.append(HeldBack(_renamed(edit, script, outcome.path), reason))
                continue
            chosen.append(edit)
            break
    return chosen


# Why no edit can be proven where the script's own trace differs from run to run.
UNSTEADY = (
    "JAX's trace of the kernel as written differs between two runs of the unedited script "
    "(a random value or the time at its top level?): whether an edit keeps what the kernel "
    "computes cannot be proven by comparing traces, so none is made"
)


def _not_made(
    edit: SourceEdit,
    text: str,
    allow_unoptimized: bool,
    keeps: Callable[[str], bool],
    unsteady: Callable[[], bool] | None = None,
) -> str | None:
    if edit.changes_meaning:
        return "it changes what the kernel computes: which change you meant is yours to make"
    if not edit.applicable:
        return f"no place in the source: {edit.why or 'the edit has no source form'}"
    if edit.kind == UNOPTIMIZE and not allow_unoptimized:
        return "it makes transfers unoptimized (slower): --allow-unoptimized makes it"
    if not keeps(apply_parts(text, edit.parts)):
        if unsteady is not None and unsteady():
            return UNSTEADY
        return (
            "it would change what the kernel computes (JAX's trace of the edited function differs)"
        )
    return None


def lower_with(
    fn: Callable[..., Any], args: tuple[Any, ...], arch: tuple[int, int] | None, by: Pass
) -> tuple[bool, BaseException | None]:
    """Whether ``fn(*args)`` lowers with ``by``'s pass; else the inference error (the
    diagnosis), or what the lowering raised. JAX's pass is not asked about a kernel
    smalto's solver proves has no layouts that lower (its search would spend minutes
    to fail: ``smalto.jax.prediction``); a kernel JAX's pass lowers is lowered by it."""
    try:
        with warnings.catch_warnings():
            # (What that warning says, fixing says in its own words: the portable edit.)
            warnings.simplefilter("ignore", SmaltoOnlyWarning)
            lower(fn, *args, arch=arch, by=by, predicted=by == "jax")
    except KernelLoweringError as failed:
        if failed.stage == "inference" and failed.kernels and failed.kernels[-1].error:
            return False, failed.kernels[-1].error
        return False, failed
    return True, None


def _applied(edit: SourceEdit, text: str, script: Path, path: Path) -> Applied:
    lines = python_lines(text)
    first = min(p.span.line for p in edit.parts)
    last = max(p.span.end_line for p in edit.parts)
    edited = python_lines(apply_parts(text, edit.parts))
    grown = len(edited) - len(lines)
    code = edit.code or ""
    why = code
    if code:
        from smalto.basics.codes import CODES

        why = f"error[{code}]: {CODES[code].title}" if code in CODES else code
    return Applied(
        _renamed(edit, script, path),
        lines[first - 1 : last],
        edited[first - 1 : last + grown],
        why,
    )


def _renamed(edit: SourceEdit, script: Path, path: Path) -> SourceEdit:
    """``edit`` with the name the script's code ran under (absolute) replaced by the path as
    the user gave it, in its text and spans."""
    parts = tuple(
        replace(p, span=replace(p.span, file=str(path)))
        if os.path.abspath(p.span.file) == str(script)
        else p
        for p in edit.parts
    )
    return replace(edit, parts=parts, text=_named(edit.text, script, path))


def _named(text: str, script: Path, path: Path) -> str:
    return text.replace(str(script), str(path))


def _message(error: BaseException | None) -> str:
    return str(error) if error is not None else "the lowering failed"


def _first_line(error: BaseException | None) -> str:
    return one_line(error) if error is not None else ""


def fix(
    fn: Callable[..., Any], *args: Any, arch: tuple[int, int] | None = None
) -> list[SourceEdit]:
    """The verified fixes of ``fn(*args)``'s kernel, as edits of its Python source; none
    where it lowers with smalto as the pass.

    Every problem's verified edits, best first (``SourceEdit.problem`` says whose; the
    first of each is what ``smalto fix`` makes; for a GMEM transfer with no coalesced
    plan, the staged epilogue comes first, ``MaybeIncorrect``), each with the spans of the source
    files it changes, the replacement texts and its applicability. Nothing is written;
    where an edit would be ``MachineApplicable``, the script, as edited (in memory), is
    run in its place to trace it (``Meanings``).
    """
    ok, error = lower_with(fn, args, arch, "smalto")
    if ok:
        return []

    def read(file: str) -> str | None:
        try:
            return Path(file).read_text(encoding="utf-8")
        except (OSError, UnicodeDecodeError):
            return None

    home = _source_file(fn)
    edits: list[SourceEdit] = []
    for problem, report in enumerate(problems_of(error)):
        if getattr(report, "faster", None):
            # The fast fix first: the transfer staged through SMEM (not lowered here:
            # ``MaybeIncorrect``; ``smalto fix`` verifies it and proves it by running).
            staged, _ = offered_staging(report, read)
            if staged is not None:
                edits.append(replace(staged, problem=problem))
        suggested_edits: list[DiagnosedEdit] = list(report.edits)
        for suggested in suggested_edits:
            edits.append(source_edit(suggested, read, code=report.code, problem=problem, home=home))
    return _checked(edits, fn, args, home)


def _checked(
    edits: list[SourceEdit], fn: Callable[..., Any], args: tuple[Any, ...], home: str | None
) -> list[SourceEdit]:
    """The edits, each ``MachineApplicable`` one of ``fn``'s own file checked as ``smalto
    fix`` checks an edit before it makes it (``Meanings``: JAX's trace of the edited
    function against the original's): one that changes what the kernel computes is
    ``MaybeIncorrect``, marked so. Where ``fn`` is no function defined at the top of its
    file (a ``partial``, a closure), the diagnosis' check on the module stands alone."""
    name = getattr(fn, "__qualname__", None)
    exact = [e for e in edits if e.applicability == MACHINE_APPLICABLE]
    if home is None or not exact or not inspect.isfunction(fn) or name != fn.__name__:
        return edits
    path = Path(home)
    try:
        original = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError):
        return edits
    script = Path(os.path.abspath(path))

    def load(source: str, why: str) -> Callable[..., Any]:
        with reading_as_edited(script, source):
            ran = run_script(path, run_name=RUN_NAME, text=source, subject="the script")
            return _function_of(ran, fn.__name__)

    meanings = Meanings(load, args, lambda: load(original, "again as written"))
    meanings.original_function(fn)
    checked: list[SourceEdit] = []
    for edit in edits:
        if edit in exact and all(Path(p.span.file) == path for p in edit.parts):
            try:
                kept = meanings.keeps(apply_parts(original, edit.parts))
            except ValueError:  # the file no longer reads what the edit replaces
                kept = False
            if not kept:
                # (Where the script's own trace differs from run to run, nothing is proven
                # either way: look at it, but it is not known to change anything.)
                changes = not meanings.unsteady()
                edit = replace(edit, applicability=MAYBE_INCORRECT, changes_meaning=changes)
        checked.append(edit)
    return checked


def _source_file(fn: Callable[..., Any]) -> str | None:
    """The file ``fn`` is written in (through ``jax.jit`` and ``functools.partial``)."""
    inner: Any = fn
    for _ in range(8):
        inner = getattr(inner, "__wrapped__", None) or getattr(inner, "func", None) or inner
    try:
        return inspect.getsourcefile(inner)
    except TypeError:
        return None


__all__ = ["Applied", "FixOutcome", "HeldBack", "ScriptError", "fix", "fix_script"]
