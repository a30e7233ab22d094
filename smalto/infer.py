"""``smalto.infer_layout``: the pass, then, where it finds no layouts, the rescues and the
diagnosis.

The pass (``smalto.pipeline.steps``: read, derive, solve, write) raises what it
found where it finds no layouts (``Failure``), undiagnosed. Here that failure
is decided on: the rescues the caller turned on are tried on copies of the
module (``smalto.rescue``; ``rewrite``: the unit-dim rewrite), and where none
works, the failure is put into words a kernel author can act on
(``smalto.diagnose``), after JAX's own phrase for it (``smalto.diagnose.jax_phrases``),
with a traceback that ends at the kernel line to blame.
"""

from __future__ import annotations

import gc
import warnings
import weakref
from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from typing import TYPE_CHECKING, TextIO, Unpack

from jax._src.lib.mlir import ir

from smalto.basics.mlir import in_context
from smalto.constraints.language import System
from smalto.errors import (
    FAILURE_PREFIX,
    MODULE_CHANGED,
    InferenceError,
    SlowLayoutsWarning,
    SmaltoOnlyWarning,
)
from smalto.pipeline.steps import (
    DEFAULT_FUEL,
    Failure,
    Inference,
    OutOfFuel,
    RulesRefused,
    SolveOptions,
    Unsatisfiable,
    solve_as_written,
    write,
)
from smalto.program.view import Program
from smalto.solve.decision import NoLayouts
from smalto.solve.options import SolveKeywords
from smalto.source.locations import FilePosition, file_position
from smalto.source.tracebacks import repoint_traceback, with_op_traceback

if TYPE_CHECKING:
    from smalto.constraints.conflict_report import ConflictReport
    from smalto.pipeline.relayouts import AnswerLayouts, Relayout, SolvedLayouts

# What only a kernel with no layouts as written needs (the rescues and the rewrites
# under them, JAX's phrases, the user's source files), and what only an answer JAX's
# own pass has not (its relayouts in words), is imported where first needed: a
# process whose kernels all infer never loads it (issue #52: the first kernel on
# JAX's route pays the import of what it uses).

__all__ = [
    "DEFAULT_FUEL",
    "Inference",
    "SolveKeywords",
    "SolveOptions",
    "in_context",
    "infer_keeping_the_solution",
    "infer_layout",
    "solve_module",
    "solve_with",
]


def solve_module(
    module: ir.Module, *, dump_to: TextIO | None = None, **keywords: Unpack[SolveKeywords]
) -> Inference:
    """Infers layouts without writing them; raises as ``infer_layout`` does.

    ``keywords``: those of ``infer_layout`` (``SolveOptions``' fields), but the unit-dim
    rewrite is off unless asked for. Between the rules and the search, names the module
    for dumps and dumps the system when asked (``dump_to``, or JAX's environment
    variables), as JAX's pass does (see ``smalto.pipeline.dump``). With ``rewrite``, a
    module with no layouts as written is tried again after the unit-dim rewrite
    (``smalto.rewrite``), and rewritten in place if that infers; with
    ``stage_through_smem``, then with the transfers in the way routed through SMEM;
    with ``allow_unoptimized``, then with the fewest transfers made unoptimized.
    Must run inside the module's context (``infer_layout`` takes care of it).
    """
    keywords.setdefault("rewrite", False)
    return solve_with(module, SolveOptions.of(keywords, "solve_module"), dump_to)


def solve_with(
    module: ir.Module, options: SolveOptions, dump_to: TextIO | None = None
) -> Inference:
    """``solve_module`` with its settings made into options (``SolveOptions``)."""
    try:
        return solve_as_written(module, options, dump_to)
    except Failure as found:
        failure = found
    notes: list[str] = []
    from smalto.rescue import rescue, wants_a_rescue

    if wants_a_rescue(options):
        rescued, notes = rescue(
            module, failure, options, solve=lambda changed: _solved(changed, options, dump_to)
        )
        if rescued is not None:
            return rescued
    error = diagnosed(failure, options)
    for note in notes:
        error.say_also(note)
    # The traceback keeps this frame: were it to hold the error or the failure, a cycle
    # would keep the program, the system and the solver alive until the collector ran
    # (a traversal of them all, in whatever the caller does next), not freed with the
    # error.
    del failure
    try:
        raise error
    finally:
        del error


def _solved(module: ir.Module, options: SolveOptions, dump_to: TextIO | None) -> Inference:
    """The pass on a module a rescue changed; its failure, if any, diagnosed."""
    try:
        return solve_as_written(module, options, dump_to)
    except Failure as found:
        failure = found
    error = diagnosed(failure, options)
    del failure  # (held by no frame the traceback keeps: see ``solve_module``)
    try:
        raise error
    finally:
        del error


def diagnosed(failure: Failure, options: SolveOptions) -> InferenceError:
    """The error to raise for what the pass found: JAX's words for it, then ours (the
    diagnosis searches under ``options``, the caller's)."""
    from smalto.diagnose.jax_phrases import OUT_OF_FUEL

    match failure:
        case RulesRefused(error=error, program=program):
            # An annotation its value cannot take: the edits that would fix it, tried
            # when the message is first read (raising costs no more than JAX's pass).
            # (Its own words, where the rule left them to be made then, come first.)
            if isinstance(error, InferenceError):
                # (The error, which keeps this, named weakly: a cycle otherwise, left
                # for the collector wherever the message is never read.)
                refused = weakref.ref(error)

                def suggest() -> None:
                    from smalto.diagnose.suggest import suggest_at_derivation

                    context, read = program.context, refused()
                    if read is None or not program.unchanged():
                        return  # (the rule's words say the module changed)
                    with context, ir.Location.unknown(context), CyclicGcPaused():
                        suggest_at_derivation(read, program, options)

                error.defer(suggest)
            return error
        case Unsatisfiable(program=program, system=system, decision=decision):
            return _unsatisfiable_error(program, system, decision, options)
        case OutOfFuel(program=program, system=system, spent=spent, open_variables=open_ones):
            from smalto.diagnose.conflict import describe_fuel_exhaustion

            reason = describe_fuel_exhaustion(program, system, spent, open_ones)
            return InferenceError(reason, phrase=f"{FAILURE_PREFIX}: {OUT_OF_FUEL}")
    raise AssertionError(f"smalto bug: a failure of the pass not diagnosed: {failure!r}")


def _unsatisfiable_error(
    program: Program, system: System, decision: NoLayouts, options: SolveOptions
) -> InferenceError:
    """The error for a system with no assignment: JAX's phrase, then the diagnosis, made
    when the message is first read (``InferenceError``'s ``diagnose``)."""
    from smalto.diagnose.jax_phrases import unsatisfiable
    from smalto.source.files import Sources

    phrase = unsatisfiable(program, system)
    # Where the user's source files are looked for is decided now (the caller's scope),
    # not when the message is read.
    sources = Sources()

    def diagnose() -> tuple[str, object]:
        if not program.unchanged():
            return f"({MODULE_CHANGED})", None  # (its ops may be gone: none read)
        # (Made when read, outside ``infer_layout``: the collector paused here too, the
        # diagnosis's import included: its classes' making sets off collections that
        # would traverse every object of the process, JAX's included.)
        with program.context, ir.Location.unknown(program.context), CyclicGcPaused():
            from smalto.diagnose.problems import describe_conflict

            reason, conflict = describe_conflict(program, system, decision, options, sources)
            # The traceback ends at the line the first fix names, now it is known.
            fixed_at, raised = _first_fix_op(conflict), made()
            if fixed_at is not None and raised is not None:
                op = program.ops[fixed_at]
                repoint_traceback(raised, op.operation, op.name)
        return reason, conflict

    error = InferenceError(phrase=phrase.text, diagnose=diagnose)
    # (Named weakly: the error keeps ``diagnose``, and a cycle through it would be left
    # for the collector wherever the message is never read.)
    made = weakref.ref(error)
    # The op JAX blames, else where the search met the conflict: its source line
    # ends the traceback, as in JAX's errors.
    culprit = phrase.op if phrase.op is not None else _where_it_failed(decision)
    if culprit is None:  # where JAX's propagation met it, else a likely op: a kernel line
        culprit = phrase.culprit
    if culprit is None:
        from smalto.diagnose.wrong import likely_culprit

        culprit = likely_culprit(program, system)
    if culprit is not None:
        op = program.ops[culprit]
        with_op_traceback(error, op.operation, op.name)
    return error


def _first_fix_op(conflict: ConflictReport) -> int | None:
    """The op the first verified fix changes (a cast, a ``layout=``, a transfer, a
    reduction), where the diagnosis found one."""
    from smalto.diagnose.suggest import SuggestedEdit

    first = conflict.edits[0] if conflict.edits else None
    if not isinstance(first, SuggestedEdit) or first.edit is None or not first.edit.ops:
        return None
    return first.edit.ops[0]


def _where_it_failed(decision: NoLayouts) -> int | None:
    """The op of the requirement the search failed on, or of a transfer JAX's answer breaks."""
    conflict = decision.proof.conflict
    if conflict is not None:
        if conflict.constraint is not None:
            return conflict.constraint.origin
        if conflict.fixed is not None:
            return conflict.fixed.origin
    breaks = decision.jax_answer_breaks
    return breaks[0][0].origin if breaks else None


def infer_keeping_the_solution(
    module: ir.Module, options: SolveOptions, dump_to: TextIO | None = None
) -> Inference:
    """``infer_layout``, keeping what the summary and the report show (the solved system);
    the system is also written to ``dump_to`` once derived, when given."""
    inference = solve_with(module, options, dump_to)
    write(inference)
    if not inference.solved.in_jax_order:
        say_slow_layouts(_solved_layouts(inference))
    return inference


def infer_layout(module: ir.Module, **keywords: Unpack[SolveKeywords]) -> None:
    """Infers register layouts, SMEM transforms and TMEM layouts for ``module``.

    ``keywords``: the fields of ``SolveOptions`` (``fuel=DEFAULT_FUEL``,
    ``arch=(9, 0)``, ``rewrite=True``, ``allow_unoptimized=False``,
    ``stage_through_smem=False``), keyword-only.

    Writes ``in_layouts``/``out_layouts``, ``in_transforms``/``out_transforms``
    and ``in_tmem_layouts``/``out_tmem_layouts`` on the ops, exactly as JAX's
    ``infer_layout`` does. Raises ``InferenceError`` when no assignment exists
    or ``fuel`` attempts did not find one (the message starts with JAX's own
    for that failure), ``NotImplementedError`` for ops it has no rule for. Like
    JAX's pass, it sets the module's ``mosaic_gpu.dump_basename`` if absent
    once the rules have run (so also when the search fails); otherwise a
    failure leaves the module unchanged.

    Where the module as written has no layouts, and ``rewrite`` is true,
    smalto tries the unit-dim rewrite (``smalto.rewrite``): values expanded
    by unit dims (``keepdims=True`` statistics) computed without them. If the
    rewritten module infers, the module is rewritten in place, its layouts
    written, and a ``smalto.UnitDimRewriteWarning`` names every changed op;
    if not, the module is left as it came and the error is the one about the
    module as written.

    With ``allow_unoptimized`` (off by default: Pallas' contract is to raise
    where an optimized transfer has no plan), where the module has no layouts
    that lower even after the rewrite, smalto sets ``optimized = false`` on the
    fewest ``vector_load``/``vector_store``/``async_store_smem`` ops that stand
    in the way (an uncoalesced GMEM or bank-conflicted SMEM transfer: slower),
    infers, and warns once per changed op (``smalto.UnoptimizedTransferWarning``).
    It never acts where the module infers as written.

    With ``stage_through_smem`` (off by default, for the same reason), where the
    module has no layouts that lower even after the rewrite, smalto routes the
    ``vector_load``/``vector_store`` ops that stand in the way through a new SMEM
    buffer (``smalto.rewrite.staging``): a store into it in the producer's layout,
    a warpgroup barrier, a load back in a layout the transfer can use, a barrier.
    Every transfer stays optimized; the kernel's dynamic SMEM grows by the
    largest buffer (1024-aligned, past its end; the staged ops share it), never
    past the per-block limit (232448 bytes): beyond it, the error says how many
    bytes staging would need. One ``smalto.StagedThroughSmemWarning`` per staged
    op. With both options, staging is tried first, and transfers are made
    unoptimized only where staging cannot serve.
    """
    # (The context entered directly, and the collector paused by a class: a refusal
    # unwinds through them, which costs a generator-made manager a throw each.)
    context = module.context
    with context, ir.Location.unknown(context), CyclicGcPaused():
        result = solve_with(module, SolveOptions.of(keywords, "infer_layout"))
        write(result)
        if not result.solved.in_jax_order:
            from smalto.pipeline.relayouts import relayouts

            layouts = _solved_layouts(result)
            found = relayouts(layouts)
            if _SAY_SMALTO_ONLY.get():
                _say_smalto_only(layouts, found)
            say_slow_layouts(layouts, found)
        # Freed here, while the collector is paused: they hold no cycles, so
        # reference counting frees them all; left alive, they would be
        # traversed by the collection that resuming it sets off.
        del result


# Whether an answer JAX's own pass does not find is said (``SmaltoOnlyWarning``): on the
# route, where a kernel is lowered with smalto as the pass (``saying_smalto_only``). A
# context variable: each thread, each lowering, says for itself.
_SAY_SMALTO_ONLY: ContextVar[bool] = ContextVar("smalto_say_smalto_only", default=False)
# The warnings said, by their text and line: once each, whatever the filters.
_SAID: dict[str | tuple[str, type[Warning], int], int] = {}


@contextmanager
def saying_smalto_only() -> Iterator[None]:
    """Within this block, a kernel smalto answers where JAX's own pass finds no layouts that
    lower (smalto's complete or widened search found them) is said, once per kernel line,
    with a ``SmaltoOnlyWarning`` naming the relayouts smalto's answer asks for."""
    token = _SAY_SMALTO_ONLY.set(True)
    try:
        yield
    finally:
        _SAY_SMALTO_ONLY.reset(token)


def _solved_layouts(inference: Inference) -> SolvedLayouts:
    """The layouts of an answer, as the solver holds them: what is said of an answer JAX's
    own pass has not found is read off them, not off the module through the bindings."""
    from smalto.pipeline.relayouts import SolvedLayouts

    solution = inference.solved.state.solution()
    return SolvedLayouts(inference.program, inference.system, solution)


def _say_smalto_only(layouts: AnswerLayouts, found: list[Relayout]) -> None:
    named = "; ".join(str(r) for r in found[:4]) + (
        f"; and {len(found) - 4} more" if len(found) > 4 else ""
    )
    plural = "s" if len(found) != 1 else ""
    added = f" (its layouts ask for {len(found)} relayout{plural}: {named})" if found else ""
    # (No relayout: what needs smalto is a layout JAX's order does not reach, of a value
    # the kernel stores or loads; the warning stands at the first such line and names it.)
    from smalto.pipeline.relayouts import transfer_layouts

    laid = [] if found else sorted(transfer_layouts(layouts), key=lambda t: "store" not in t.op)
    laid = [t for t in laid if t.position is not None]
    if laid:
        named = "; ".join(f"`{t.op}` at {t.position}: {t.target}" for t in laid[:4])
        added = f" (its layouts, which JAX's order does not reach: {named})"
    message = SmaltoOnlyWarning(
        "JAX's own pass finds no layouts for this kernel that its lowering accepts; smalto's "
        f"search found some{added}: the kernel compiles with smalto installed only "
        "(`smalto fix` looks for the edit that makes JAX's pass accept it)",
        tuple(found),
    )
    where = next((r.position for r in [*found, *laid] if r.position is not None), None)
    _warn_at(message, where, layouts.program.module)


def say_slow_layouts(layouts: AnswerLayouts, found: list[Relayout] | None = None) -> None:
    """Where the answer's layouts (one JAX's own pass has not found) cost speed, a
    ``SlowLayoutsWarning`` says so, once, at the line of the first place (``found``: its
    relayouts, where read already)."""
    from smalto.pipeline.speed import answer_speed_costs

    report = answer_speed_costs(layouts, found)
    if not report.costs:
        return
    message = SlowLayoutsWarning(report.message(), report)
    where = next((c.position for c in report.costs if c.position is not None), None)
    _warn_at(message, where, layouts.program.module)


def _warn_at(message: Warning, where: FilePosition | None, module: ir.Module) -> None:
    """Says ``message`` once at the kernel's line ``where`` (else the module's first
    located op's; else at ``infer_layout``'s caller)."""
    if where is None:
        where = _first_line(module)
    if where is None:
        warnings.warn(message, stacklevel=4)
        return
    warnings.warn_explicit(message, type(message), where.file, where.line, registry=_SAID)


def _first_line(module: ir.Module) -> FilePosition | None:
    """The first line of the user's kernel an op of ``module`` is located at."""
    found: list[FilePosition] = []

    def visit(op: ir.Operation) -> ir.WalkResult:
        position = file_position(op.location)
        if position is not None and position.file != "-":
            found.append(position)
            return ir.WalkResult.INTERRUPT
        return ir.WalkResult.ADVANCE

    module.operation.walk(visit, ir.WalkOrder.PRE_ORDER)
    return found[0] if found else None


class CyclicGcPaused:
    """Pauses Python's cyclic garbage collector for one inference (or one diagnosis, made
    when its message is read), as it was on entry.

    The pass allocates many thousands of small objects (program view, sites,
    constraints, trail entries) in a few milliseconds; each allocation burst
    can set off a collection that traverses them, and now and then one that
    traverses every object of the process (JAX's included), tens of
    milliseconds at once. Nothing the pass allocates needs the collector
    before it returns: reference counting frees it, and the collector
    resumes on the way out, whatever happens. (Whatever is still alive when
    it resumes is traversed by the collection the allocations since set
    off: callers free what they made first.) About 7% on kernels dense in
    register values, and no more stalls.
    """

    __slots__ = ("_paused",)

    def __enter__(self) -> None:
        self._paused = gc.isenabled()
        if self._paused:
            gc.disable()

    def __exit__(self, *_: object) -> None:
        if self._paused:
            gc.enable()
