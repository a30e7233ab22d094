"""Turning a failed inference into words a kernel author can act on.

From a system with no solution, find a small set of requirements that cannot
hold together (an unsatisfiable core, minimal: dropping any one of them makes
the rest satisfiable; ``core``), say for each which op imposed it and where
(``smalto.pipeline.describe``), say what the values involved were forced to, and
suggest the change that resolves it (``suggest``).
"""

from __future__ import annotations

import dataclasses

from smalto.basics.records import value_class
from smalto.constraints.conflict_report import ConflictReport, Requirement
from smalto.constraints.language import (
    Constraint,
    Divides,
    Element,
    Fixed,
    GmemTransfer,
    NotOfKind,
    Relayout,
    SmemTransfer,
    System,
    Variable,
    allowed_layouts,
    as_solved,
    element_variables,
    fixed_layout,
)
from smalto.diagnose import lowering_advice
from smalto.diagnose.axes import axis_clue
from smalto.diagnose.core import core_satisfiable, find_core
from smalto.diagnose.edits import UNOPTIMIZE, Edit
from smalto.diagnose.meaning import changes_meaning
from smalto.diagnose.origins import Origins, defining_value
from smalto.diagnose.suggest import SuggestedEdit, suggest
from smalto.diagnose.verify import module_of
from smalto.diagnose.wrong import axis_choices, headline
from smalto.hw import layouts as hl
from smalto.hw.jax_text import does_not_fit_type
from smalto.hw.names import describe_value
from smalto.hw.values import Const, Reg
from smalto.pipeline.describe import Namer, describe_allowed, describe_element, expr_var
from smalto.program.view import Kind, Program
from smalto.rewrite.transfers import fewest, optimized_transfers, relax_transfers
from smalto.solve.options import SolveOptions
from smalto.solve.propagation import Propagation, Reason
from smalto.source.files import Sources
from smalto.source.locations import op_location_text, op_text


def _op_of(program: Program, element: Element) -> tuple[str, str]:
    op = program.ops[element.origin]
    return op.name, op_location_text(op)


def _derivations(
    program: Program, system: System, arch: tuple[int, int], core: list[Element], namer: Namer
) -> tuple[list[str], dict[int, Const]]:
    """What each value of the core is forced to, and by what (propagating the core alone).

    A requirement that allows one layout only is what its op fixes, however the rule
    states it (a ``Fixed``, a ``OneOf`` of one option): the propagation starts from it."""
    constraints, imposed = as_solved(core)
    sub = System(system.variables, constraints, imposed, system.var_of_site)
    state = Propagation(sub, program, arch, fuel=1)
    queue: list[int] = []
    for fixed in sub.fixed:
        if not state.assign(fixed.var, fixed.value, queue):
            break
        state.reason[state.root[fixed.var]] = Reason("fixed", fixed=fixed)
    queue.extend(range(len(state.constraints)))
    state.propagate(queue)
    lines, values, named = [], {}, set()
    involved = {v for e in core for v in element_variables(e)}
    for var in sorted(involved):
        slot = state.root[var]
        value = state.value[slot]
        reason = state.reason.get(slot)
        if value is None or reason is None:
            continue
        values[var] = value
        if reason.kind == "fixed" and reason.fixed is not None:
            why = f"it is {reason.fixed.what} of {op_text(program.ops[reason.fixed.origin])}"
        elif reason.kind == "forced" and reason.constraint is not None:
            origin = state.constraints[reason.constraint].origin
            why = f"it must agree with {op_text(program.ops[origin])}"
        else:
            continue
        name = namer.var(var)
        if name not in named:
            named.add(name)
            lines.append(f"{name} is {describe_value(value)} because {why}")
    return lines, values


def _suggestion(
    program: Program, system: System, core: list[Element], values: dict[int, Const], namer: Namer
) -> str | None:
    """The first hint of ``_HINTS`` that has something to say of the core."""
    for hint in _HINTS:
        said = hint(program, system, core, values, namer)
        if said is not None:
            return said
    return None


def _shape_hint(
    program: Program, system: System, core: list[Element], values: dict[int, Const], namer: Namer
) -> str | None:
    """A value no kind of layout but the one refused fits: its shape is what to change."""
    if len(core) == 1 and isinstance(core[0], NotOfKind):
        var = expr_var(core[0].expr)
        if var is not None:
            shape = system.variables[var].shape
            return (
                f"{namer.typed(var)} cannot be a {core[0].kind.value}, and no other register "
                f"layout fits its shape {shape}: strided layouts need a multiple of 128 "
                "elements, tiled ones a shape their tile divides; give the value such a shape "
                "(e.g. load it wider, or reshape it)"
            )
    return None


def _hand_over_hint(
    program: Program, system: System, core: list[Element], values: dict[int, Const], namer: Namer
) -> str | None:
    """A value handed from producer to consumer in a layout the consumer does not take."""
    for e in core:
        if isinstance(e, Relayout) and e.strict:
            s, t = expr_var(e.source), expr_var(e.target)
            if s is None or t is None:
                continue
            a = values.get(s)
            wanted = _wanted_layouts(core, values, t)
            if isinstance(a, Reg) and wanted and a not in wanted:
                return _convert_before(program, e, s, a, wanted, namer)
    return None


def _convert_before(
    program: Program, e: Relayout, s: int, a: Reg, wanted: list[Reg], namer: Namer
) -> str:
    consumer = program.ops[e.origin].name
    reachable = [b for b in wanted if hl.relayout_allowed(a, b, e.bitwidth, strict=False)]
    if reachable:
        return (
            f"convert {namer.var(s)} explicitly before `{consumer}`: "
            f"`plgpu.layout_cast(x, {describe_value(reachable[0])})` (a supported "
            f"relayout from {describe_value(a)})"
        )
    between = "between them" if len(wanted) == 1 else "to any of them"
    return (
        f"{namer.var(s)} is {describe_value(a)} but `{consumer}` needs "
        f"{describe_allowed(wanted)}, and no relayout {between} is supported: "
        "change one of the layout casts or the op that fixes one of them"
    )


def _cast_hint(
    program: Program, system: System, core: list[Element], values: dict[int, Const], namer: Namer
) -> str | None:
    """A layout cast to a layout its value cannot be converted to."""
    for e in core:
        if isinstance(e, Relayout) and not e.strict:
            s, t = expr_var(e.source), expr_var(e.target)
            a = values.get(s) if s is not None else None
            b = values.get(t) if t is not None else None
            if (
                isinstance(a, Reg)
                and isinstance(b, Reg)
                and not hl.relayout_allowed(a, b, e.bitwidth, strict=False)
            ):
                op = program.ops[e.origin]
                return (
                    f"{op_text(op)} cannot convert "
                    f"{describe_value(a)} to {describe_value(b)}: only relayouts from a splat, "
                    "between WGMMA and WGMMA_TRANSPOSED (or TCGEN05 and its transpose) for 16- "
                    "and 32-bit elements, and from the WGMMA upcast layouts are supported; "
                    f"cast to a layout reachable from {describe_value(a)}, "
                    "or produce the value in the layout you need"
                )
    return None


def _transfer_hint(
    program: Program, system: System, core: list[Element], values: dict[int, Const], namer: Namer
) -> str | None:
    """An SMEM transfer with no plan: the transforms that would work."""
    for e in core:
        if isinstance(e, SmemTransfer):
            text = _transfer_alternatives(e, values, namer)
            if text:
                return text
    return None


def _two_layouts_hint(
    program: Program, system: System, core: list[Element], values: dict[int, Const], namer: Namer
) -> str | None:
    """Two register layouts imposed on one value."""
    fixed = [f for e in core if (f := fixed_layout(e)) is not None and isinstance(f.value, Reg)]
    if len({f.value for f in fixed}) > 1:
        where = " and ".join(
            f"{describe_value(f.value)} ({op_text(program.ops[f.origin])})" for f in fixed[:2]
        )
        return (
            f"one value is required to be both {where}; make these agree, or add a "
            "`plgpu.layout_cast` between them where the relayout is supported "
            "(from splat to anything, WGMMA <-> WGMMA_TRANSPOSED and TCGEN05 <-> "
            "TCGEN05_TRANSPOSED for 16- and 32-bit elements, and the WGMMA upcast layouts)"
        )
    return None


def _smem_hint(
    program: Program, system: System, core: list[Element], values: dict[int, Const], namer: Namer
) -> str | None:
    """An SMEM transfer with no alternative found: what to change, in general."""
    if any(isinstance(e, SmemTransfer) for e in core):
        return (
            "give the SMEM ref transforms that fit the register layout, or `layout_cast` "
            "the value to a layout the ref supports"
        )
    return None


def _proof_hint(
    program: Program, system: System, core: list[Element], values: dict[int, Const], namer: Namer
) -> str | None:
    return _divisibility_hint(program, system, core)


# The hints of ``_suggestion``, in order: the first with something to say is the one said.
_HINTS = (
    _shape_hint,
    _hand_over_hint,
    _proof_hint,
    _cast_hint,
    _transfer_hint,
    _two_layouts_hint,
    _smem_hint,
)


def _wanted_layouts(core: list[Element], values: dict[int, Const], var: int) -> list[Reg]:
    """The register layouts the core lets ``var`` take: the one it is forced to where an op
    fixes it (the derivations start from what ops fix), else an op's options where one
    allows several (in their order: the propagation may have forced ``var`` to its
    producer's layout, which the op does not take), else the one it is forced to."""
    options: list[Const] = []
    for e in core:
        allowed = allowed_layouts(e)
        if allowed is None or allowed.var != var:
            continue
        if allowed.only is not None:
            options = []
            break
        options = options or list(allowed.layouts)
    forced = values.get(var)
    wanted = options or ([forced] if forced is not None else [])
    return [layout for layout in wanted if isinstance(layout, Reg)]


def _divisibility_hint(program: Program, system: System, core: list[Element]) -> str | None:
    """For offsets not known to be tile multiples: prove them (no layout edit says that)."""
    for e in core:
        var = expr_var(e.expr) if isinstance(e, Divides) else None
        if isinstance(e, Divides) and var is not None and _offset_limited(e, system.variables[var]):
            op = program.ops[e.origin]
            if op.name in ("memref.subview", "mosaic_gpu.async_load", "mosaic_gpu.async_store"):
                return (
                    f"the offsets of {op_text(op)} are not known to "
                    "be multiples of the tile size: prove it with `pl.multiple_of(index, n)` "
                    "(n a multiple of the tile along that dimension), or use a smaller tiling "
                    "with `plgpu.TilingTransform`"
                )
    return None


def _transfer_alternatives(
    transfer: SmemTransfer, values: dict[int, Const], namer: Namer
) -> str | None:
    """For a transfer with no plan: the tilings that would work, and the register layouts."""
    from smalto.hw.transfers import smem_transfer_supported
    from smalto.hw.values import Smem

    s, r = expr_var(transfer.smem), expr_var(transfer.reg)
    if s is None or r is None:
        return None
    tiling, reg = values.get(s), values.get(r)
    if not isinstance(tiling, Smem) or not isinstance(reg, Reg):
        return None
    args = (
        transfer.shape,
        transfer.strides,
        transfer.bitwidth,
        transfer.mode,
        transfer.txmatrix,
        transfer.store,
    )
    tilings = [((8, 8 * sw // transfer.bitwidth), sw) for sw in hl.SWIZZLES]
    good_tilings = [
        describe_value(Smem(t, sw))
        for t, sw in tilings
        if hl.fits(Smem(t, sw), transfer.shape)
        and smem_transfer_supported(t, sw, reg.layout, *args)
    ]
    parts = [
        f"{namer.var(r)} is {describe_value(reg)} and the SMEM ref {namer.var(s)} is "
        f"{describe_value(tiling)}; no {transfer.mode.value} transfer exists between them"
    ]
    if good_tilings:
        parts.append(f"transforms that work with {describe_value(reg)}: {'; '.join(good_tilings)}")
    return "; ".join(parts)


def _offset_limited(divides: Divides, ref: Variable) -> bool:
    """Whether a divisibility requirement is tighter than the ref's own shape (offsets limit it)."""
    tail = ref.shape[-len(divides.multiple) :] if divides.multiple else ()
    return any(m < d for m, d in zip(divides.multiple, tail, strict=False))


def diagnose(
    program: Program,
    system: System,
    options: SolveOptions,
    seeds: set[int],
    explanation: list[Element] | None = None,
    *,
    namer: Namer | None = None,
    jax_answer_breaks: list[tuple[Constraint, Const]] | None = None,
    background: tuple[Edit, ...] = (),
    found: tuple[list[Element], bool] | None = None,
) -> ConflictReport:
    """One problem: a minimal core found from ``seeds`` (or the propagation's
    ``explanation``; or ``found`` already, with whether it is minimal), in words, with
    the edits verified to fix it (made together with ``background``: the fixes of the
    kernel's other problems). ``options``: the caller's (``for_diagnosis``)."""
    arch = options.arch
    core, minimal = found or find_core(program, system, options, seeds, explanation)
    core = list(core)
    # What ops impose outright first, then the rest in program order.
    core.sort(key=lambda e: (fixed_layout(e) is None, e.origin))
    namer = namer or Namer(program, system, Sources())
    requirements = _requirements(program, system, core, namer)
    derivations, values = _derivations(program, system, arch, core, namer)
    names, lines = _involved(program, system, core, namer)
    hint = _suggestion(program, system, core, values, namer)
    proof = _divisibility_hint(program, system, core) is not None
    names_of = {
        e.origin: namer.expr(e.reg, "the value") for e in core if isinstance(e, GmemTransfer)
    }
    said_by_lowering = lowering_advice.advice(
        program, list(core), jax_answer_breaks or [], arch, names_of
    )
    if hint is None:
        hint = said_by_lowering.remedy
    made = _suggested(program, system, options, core, values, namer, hint, proof, background)
    text, edits, fixes, notes = made.text, made.edits, made.fixes, made.notes
    if edits and edits[0].kind == UNOPTIMIZE:
        # The same fix, made by smalto where the user asks for it (an option, no edit of
        # the kernel: so a fix with no edit beside it); then the edits that keep the
        # transfer optimized, or where none does, a word that none does.
        fixes.insert(1, f"{lowering_advice.OPTION} (verified with the same change)")
        if len(edits) == 1 and made.complete:
            notes.append(lowering_advice.none_keeps_it_fast(made.tried))
    # A reduction over the wrong axis: said as the author thinks of it, with the other axis
    # first where it is verified.
    clue = axis_clue(program, core, namer.sources or Sources())
    offered = axis_choices(program, clue, options, background) if clue is not None else []
    # Every edit checked on the module: one that changes what the kernel computes is a
    # choice for the author (``changes_meaning``), never a fix.
    edits, fixes, choice_edits, choices = _by_meaning(program, edits, fixes, offered)
    if clue is not None:
        if choices:
            if not edits:  # "no single edit helps" no longer holds: a choice is one
                notes = [note for note in notes if note != text]
        elif not fixes:
            text = f"{clue.fix}\nnote: {text}" if text else clue.fix
    said_first = headline(program, system, core, namer, clue)
    if clue is not None and said_first is None:
        notes.insert(0, clue.text)
    notes = [n for n in (said_by_lowering.why, *notes) if n]
    return ConflictReport(
        requirements,
        names,
        derivations,
        text,
        minimal,
        core,
        origins=lines,
        edits=[*edits, *choice_edits],
        edits_tried=made.tried,
        edits_lowered=made.lowered,
        fixes=fixes,
        choices=choices,
        notes=list(dict.fromkeys(notes)),
        headline=said_first,
        faster=said_by_lowering.faster,
    )


def _requirements(
    program: Program, system: System, core: list[Element], namer: Namer
) -> list[Requirement]:
    """The core's requirements in words, each said once (one ref passed twice reads the
    same both times), then what the values' types require."""
    requirements: list[Requirement] = []
    said: set[str] = set()
    for e in core:
        wording = describe_element(e, program, namer)
        if wording not in said:
            said.add(wording)
            requirements.append(Requirement(*_op_of(program, e), wording, e))
    for wording, e in _type_requirements(program, system, core, namer):
        requirements.append(Requirement(*_op_of(program, e), wording, e))
    return requirements


def _involved(
    program: Program, system: System, core: list[Element], namer: Namer
) -> tuple[list[str], list[str]]:
    """The names of the core's values, typed, and a line for where each is defined."""
    involved: dict[int, None] = {}
    for e in core:
        for v in element_variables(e):
            involved.setdefault(v)
    names = list(dict.fromkeys(namer.typed(v) for v in involved))
    origins = Origins(program, namer.value)
    defined = [defining_value(program, system, v) for v in involved]
    lines = [origins.line(vid) for vid in sorted(dict.fromkeys(defined))]
    return names, list(dict.fromkeys(lines))


@value_class()
class _Suggested:
    """What ``suggest`` made of the core, or the hint alone where it failed."""

    text: str | None
    edits: list[SuggestedEdit]
    tried: int
    lowered: bool | None
    complete: bool
    fixes: list[str]
    notes: list[str]


def _suggested(
    program: Program,
    system: System,
    options: SolveOptions,
    core: list[Element],
    values: dict[int, Const],
    namer: Namer,
    hint: str | None,
    proof: bool,
    background: tuple[Edit, ...],
) -> _Suggested:
    try:
        suggestion = suggest(
            program,
            system,
            options,
            list(core),
            values,
            namer,
            hint,
            hint_first=proof,
            unoptimize=core_transfers(program, system, core, options),
            background=background,
        )
    except Exception:  # noqa: BLE001 -- a diagnosis never hides the error it explains
        return _Suggested(hint, [], 0, None, False, [], [hint] if hint else [])
    return _Suggested(
        suggestion.text,
        suggestion.edits,
        suggestion.tried,
        suggestion.lowered,
        suggestion.complete,
        list(suggestion.fixes),
        list(suggestion.notes),
    )


def _by_meaning(
    program: Program,
    edits: list[SuggestedEdit],
    fixes: list[str],
    offered: list[tuple[SuggestedEdit, str]],
) -> tuple[list[SuggestedEdit], list[str], list[SuggestedEdit], list[str]]:
    """The verified edits and their words parted by what the module check says
    (``smalto.diagnose.meaning``): those that keep what the kernel computes (the fixes)
    and those that change it (the choices: ``offered``, the axis' and the broadcast's, and
    any other the check finds), each marked."""
    module = module_of(program)
    kept: list[SuggestedEdit] = []
    kept_words = list(fixes)
    choice_edits: list[SuggestedEdit] = []
    choices: list[str] = []
    for suggested in edits:
        if suggested.edit is None or not changes_meaning(module, (suggested.edit,)):
            kept.append(suggested)
            continue
        choice_edits.append(dataclasses.replace(suggested, changes_meaning=True))
        said = next((w for w in kept_words if w.startswith(suggested.text)), None)
        if said is not None:
            kept_words.remove(said)
            choices.append(said)
    for suggested, words in offered:
        changes = suggested.edit is None or changes_meaning(module, (suggested.edit,))
        choice_edits.append(dataclasses.replace(suggested, changes_meaning=changes))
        choices.append(words)
    return kept, kept_words, choice_edits, choices


def core_transfers(
    program: Program, system: System, core: list[Element], options: SolveOptions
) -> tuple[int, ...]:
    """The fewest optimized transfers of the core which, unoptimized, make it satisfiable
    (the one-word changes that resolve this conflict); none where no subset does."""
    ops = optimized_transfers(program, core)

    def resolves(chosen: frozenset[int]) -> bool:
        return core_satisfiable(system, relax_transfers(core, chosen), program, options)

    found = fewest(ops, resolves, largest=len(ops), limit=2 ** len(ops))
    return tuple(found) if found is not None else ()


def _type_requirements(
    program: Program, system: System, core: list[Element], namer: Namer
) -> list[tuple[str, Element]]:
    """For a layout an op fixes that the value's own type cannot take: that requirement
    too, in the lowering's own words (it is no constraint of the system, so no core holds
    it: a TMEM ref of 32-bit elements takes no packing of 2)."""
    found: list[tuple[str, Element]] = []
    for e in core:
        fixed = fixed_layout(e)
        if fixed is None or fixed.value is None:
            continue
        variable = system.variables[fixed.var]
        why = does_not_fit_type(fixed.value, variable.shape, variable.bitwidth)
        if why is not None:
            kind = {Kind.TMEM: "TMEM ref", Kind.SMEM: "SMEM ref"}.get(variable.kind, "value")
            found.append(
                (
                    f"{namer.typed(fixed.var)}, a {kind} of {variable.bitwidth}-bit elements, "
                    f'cannot be {describe_value(fixed.value)}: JAX\'s lowering says "{why}"',
                    e,
                )
            )
    return found


__all__ = ["ConflictReport", "Requirement", "Variable", "core_transfers", "diagnose"]


def no_value_fits(program: Program, system: System, var: int) -> ConflictReport:
    variable = system.variables[var]
    namer = Namer(program, system)
    op = program.ops[variable.key.op]
    where = op_location_text(op)
    kind = {2: "SMEM transform", 3: "TMEM layout"}.get(int(variable.kind), "register layout")
    text = f"no {kind} fits {namer.typed(var)} (shape {variable.shape}) from {op_text(op)}"
    hint = None
    if int(variable.kind) == 3:
        hint = "TMEM refs have 128 rows (or 64, split in lane groups): allocate one of those"
    # No value fits, so the requirement names the ref with none: a Fixed of no value
    # (Fixed.value is a Const wherever the system holds one; this one is never solved).
    fixed = Fixed(var, None, op.id, "the ref")  # type: ignore[arg-type]
    return ConflictReport(
        [Requirement(op.name, where, text, fixed)], [namer.typed(var)], [], hint, True, []
    )


def describe_fuel_exhaustion(
    program: Program, system: System, spent: int, open_variables: list[int]
) -> str:
    """What the search had done and what was left when fuel ran out."""
    namer = Namer(program, system)
    names = list(dict.fromkeys(namer.var(v) for v in open_variables))
    shown = ", ".join(names[:10]) + (f" and {len(names) - 10} more" if len(names) > 10 else "")
    return (
        f"the search ran out of fuel after {spent} attempts; still open: {shown}. "
        "Add layout annotations (e.g. `plgpu.layout_cast` on one of these values) to guide "
        "the search, or raise `fuel`."
    )
