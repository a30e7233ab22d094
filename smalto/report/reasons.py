"""Why a value got its layout: the chain of requirements behind it.

After inference, the solver remembers for each layout variable how it got its
value: an op fixed it, a constraint forced it once the other variables it reads
had values, or the search chose it. Following "forced" back through those other
variables ends at an op that fixed a layout (or at a choice), which gives a
chain a person can follow:

    %12: WGMMA_LAYOUT because it flows into the accumulator of
    `mosaic_gpu.wgmma` at line 88 via iter_arg #0 of `scf.for` at line 61

Values, ops and lines are named as the module ``smalto infer`` prints them
(``smalto.report.printed``).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TypedDict

from smalto.constraints.language import (
    Broadcast,
    Collapse,
    Constraint,
    Divides,
    Equal,
    Fixed,
    MinorTileDivisible,
    NotOfKind,
    OneOf,
    Reduce,
    Relayout,
    Reshape,
    Role,
    Site,
    SmemTransfer,
    TmaRows,
    TmemTransfer,
    Transpose,
    Var,
    constraint_variables,
    value_at,
    variables_of,
)
from smalto.hw.names import describe_value
from smalto.pipeline.steps import Inference
from smalto.program.view import Kind
from smalto.report.printed import Places, PrintedModule
from smalto.solve.propagation import Reason

MAX_STEPS = 64  # a chain longer than this is cut (it cannot cycle, but may be long)


@dataclass
class Explanation:
    """Why one value has its layout: a one-line ``summary`` and the ``steps`` behind it."""

    value: int
    name: str  # as the printed module names it
    place: str  # where the value is defined: "line 12" (of the printed module), "kernel.py:7"
    type: str
    layout: str
    summary: str
    steps: list[str] = field(default_factory=list)
    free: bool = False
    line: int | None = None  # the printed module's line that defines the value
    location: str | None = None  # the defining op's source position, ``file:line:col``
    input_name: str | None = None  # the name the input file gave the value

    def text(self, detailed: bool = True) -> str:
        lines = [f"{self.name} ({self.place}): {self.summary}"]
        if detailed:
            lines.append(f"  type: {self.type}")
            if self.input_name is not None and self.input_name != self.name:
                lines.append(f"  in the input: {self.input_name}")
            lines.extend(f"  {i}. {step}" for i, step in enumerate(self.steps, 1))
        return "\n".join(lines)

    def as_json(self) -> dict[str, object]:
        return {
            "name": self.name,
            "input_name": self.input_name,
            "line": self.line,
            "location": self.location,
            "type": self.type,
            "layout": self.layout,
            "summary": self.summary,
            "steps": self.steps,
            "free": self.free,
        }


class _Facts(TypedDict):
    """The facts about a value an ``Explanation`` carries, whatever its layout."""

    line: int | None
    location: str | None
    input_name: str | None


class Explainer(Places):
    """Explains the layouts of one solved module (named and placed as ``Places`` does)."""

    def __init__(
        self,
        inference: Inference,
        source_name: str = "<input>",
        printed: PrintedModule | None = None,
    ) -> None:
        """``printed``: the module as ``smalto infer`` prints it, whose names and lines the
        explanations use (default: the pretty form of the module the program was read from)."""
        super().__init__(inference.program, source_name, printed)
        self.system = inference.system
        # The decided state: each variable's slot, value and reason.
        self.state = inference.solved.state
        self.fixed_of: dict[int, Fixed] = {}
        for fixed in self.system.fixed:
            self.fixed_of.setdefault(fixed.var, fixed)
        self.var_of_value: dict[int, int] = {}
        for variable in self.system.variables:
            for site in variable.sites:
                vid = self._value_at(site)
                # A value's own variable is its producer's (result or block argument).
                if site.role != Role.OPERAND or vid not in self.var_of_value:
                    self.var_of_value[vid] = variable.id
        # Variables by slot: plain equalities merge variables into one slot.
        self.members: dict[int, list[int]] = {}
        for variable in self.system.variables:
            self.members.setdefault(self.state.root[variable.id], []).append(variable.id)
        # Notes on names the user gave (a name of the input file that the printed
        # module gives another value), for the command line to print.
        self.notes: list[str] = []
        # The ways to required layouts through equal ones (``_ways_to_required``), once.
        self._ways: dict[int, tuple[int, int, int, int]] | None = None
        self._vias_of_slot: dict[int, tuple[str, ...]] = {}

    def _value_at(self, site: Site) -> int:
        return value_at(self.program, site)

    # --- the sites -----------------------------------------------------------------

    def site_text(self, site: Site, var: int | None = None) -> str:
        """``the accumulator of `mosaic_gpu.wgmma` at line 88``, ``operand #1 of ...``."""
        op = self.program.ops[site.op]
        fixed = self.fixed_of.get(var) if var is not None else None
        if fixed is not None and fixed.origin == site.op and fixed.what != "the value":
            return f"{fixed.what} of {self.op_text(site.op)}"
        if site.role == Role.ARGUMENT:
            return f"{self._argument_text(site)} of {self.op_text(site.op)}"
        role = "operand" if site.role == Role.OPERAND else "result"
        count = len(op.operands if site.role == Role.OPERAND else op.results)
        what = f"the {role}" if count == 1 else f"{role} #{site.index}"
        return f"{what} of {self.op_text(site.op)}"

    def _argument_text(self, site: Site) -> str:
        name = self.program.ops[site.op].name
        if name == "scf.for" and site.region == 0:
            return f"iter_arg #{site.index - 1}"  # argument 0 is the induction variable
        return f"block argument #{site.index} of region #{site.region}"

    def vias(self, var: int) -> list[str]:
        """Loops and branches a variable is carried through."""
        out = []
        for site in self.system.variables[var].sites:
            if site.role == Role.ARGUMENT:
                out.append(f"{self._argument_text(site)} of {self.op_text(site.op)}")
        return out

    # --- the chain ------------------------------------------------------------------

    def layout_of(self, var: int) -> str:
        value = self.state.value[self.state.root[var]]
        return "unassigned" if value is None else describe_value(value)

    def explain_value(self, vid: int) -> Explanation:
        value = self.program.values[vid]
        var = self.var_of_value.get(vid)
        facts = _Facts(
            line=self.printed.value_lines.get(vid),
            location=self.source_location(vid),
            input_name=self.printed.input_names.get(vid),
        )
        name, place, ty = self.name(vid), self.place(vid), str(value.type)
        if var is None:
            return Explanation(vid, name, place, ty, "none", "has no layout", free=True, **facts)
        layout = self.layout_of(var)
        steps: list[str] = []
        vias: list[str] = []
        ending = self._follow(var, steps, vias)
        summary = f"{layout} {_summary(ending, steps, vias)}"
        free = ending.kind == "free"
        return Explanation(vid, name, place, ty, layout, summary, steps, free=free, **facts)

    def _follow(self, var: int, steps: list[str], vias: list[str]) -> _Ending:
        """Appends the chain behind ``var``'s slot to ``steps`` (and the loops it passes
        through to ``vias``); returns how it ends."""
        slot = self.state.root[var]
        seen: set[int] = set()
        first = True
        relation = "is tied to"
        # The first step that changes the layout on the way (a reduction, reshape,
        # ...): the summary names it, since the value's layout is not the one at
        # the end of the chain but what that step makes of it.
        change: tuple[str, str, int] | None = None  # noun, op, index of the step
        first_relation = ""
        vias_seen = set(vias)  # (a set: a nest's chain passes hundreds of loops)
        while True:
            seen.add(slot)
            for via in self._slot_vias(slot):
                if via not in vias_seen:
                    vias_seen.add(via)
                    vias.append(via)
            reason = self.state.reason.get(slot)
            if reason is None:
                steps.append("nothing required or chose it: free")
                return _Ending("free", "(free: nothing constrains it)")
            if reason.kind == "fixed":
                assert reason.fixed is not None
                return self._fixed_ending(
                    reason.fixed,
                    steps,
                    first=first,
                    change=change,
                    first_relation=first_relation,
                    relation=relation,
                )
            if reason.kind in ("chosen", "domain") and (kept := self._kept_by(reason, slot, seen)):
                # The search gave it the layout of the value it is handed from or to,
                # whose layout an op required: not free, but that op's (a wgmma's
                # accumulator...), so the chain goes on there.
                step, relation_here, slot = kept
                steps.append(step)
                way = self._ways_to_required().get(slot)
                if len(steps) >= MAX_STEPS and way is not None and way[2] not in seen:
                    # A long way of one layout (a loop nest, a long chain): its end.
                    steps.append(f"... {way[3]} more values of the same layout on the way")
                    seen.add(slot)
                    slot = way[2]
                if not first_relation and change is None:
                    first_relation = relation_here
                # A way that goes both with the flow and against it (a bias added to
                # what comes from an accumulator) ties the value to the end of it.
                relation = relation_here if first or relation == relation_here else "is tied to"
                first = False
                continue
            if reason.kind == "chosen" or reason.kind == "domain":
                return self._choice(reason.kind, reason.constraint, slot, steps)
            assert reason.constraint is not None
            constraint = self.state.constraints[reason.constraint]
            step, relation, following = self._step(constraint, slot)
            if change is None and (changing := _layout_change(constraint)) is not None:
                change = (changing, self.op_text(constraint.origin), len(steps))
            elif change is None and not first_relation:
                first_relation = relation
            steps.append(step)
            following = [s for s in following if s not in seen]
            if not following or len(steps) >= MAX_STEPS:
                return _Ending("forced", f"because {step}")
            slot = following[0]
            first = False

    def _fixed_ending(
        self,
        fixed: Fixed,
        steps: list[str],
        *,
        first: bool,
        change: tuple[str, str, int] | None,
        first_relation: str,
        relation: str,
    ) -> _Ending:
        """How a chain ends at the op that requires ``fixed`` (its step appended to
        ``steps``): at the value itself (``first``), through the first step that changes
        the layout on the way (``change``), or tied to the op's value by ``relation``."""
        steps.append(
            f"{self.op_text(fixed.origin)} requires {fixed.what} to be "
            f"{describe_value(fixed.value)}"
        )
        if first:
            return _Ending(
                "fixed-here", f"because {self.op_text(fixed.origin)} requires it ({fixed.what})"
            )
        place = self._fixed_place(fixed)
        if change is None:
            return _Ending("fixed", f"because it {relation} {place}")
        noun, where, index = change
        if index == 0:
            lead = "is"
        elif first_relation == "comes from":
            lead = "comes from"
        else:
            lead = "is tied to"
        # Right after the change (and the requirement), the chain may end.
        ends = len(steps) == index + 2
        source = place if ends else f"a value that {relation} {place}"
        return _Ending("fixed", f"because it {lead} the {noun} ({where}) of {source}")

    def _slot_vias(self, slot: int) -> tuple[str, ...]:
        """The loops and branches the variables of a slot are carried through, made once
        a slot: the chains of the values of a loop nest pass through the same slots."""
        vias = self._vias_of_slot.get(slot)
        if vias is None:
            out: list[str] = []
            for var in self.members.get(slot, ()):
                out.extend(self.vias(var))
            vias = self._vias_of_slot[slot] = tuple(out)
        return vias

    def _fixed_place(self, fixed: Fixed) -> str:
        site = next(
            (s for s in self.system.variables[fixed.var].sites if s.op == fixed.origin), None
        )
        if site is None:
            return f"{fixed.what} of {self.op_text(fixed.origin)}"
        return self.site_text(site, fixed.var)

    def _kept_by(self, reason: Reason, slot: int, seen: set[int]) -> tuple[str, str, int] | None:
        """For a layout a search decided: the first step towards the value whose layout an
        op required (or a constraint forced) that it equals.

        A layout the search chose to match the value it is handed from or to (a strict
        relayout: the lowering converts only a splat there) is that value's (``_kept``).
        Otherwise the way goes through the values it is handed from or to with the same
        layout, however many (the complete search states relayouts as the lowering
        performs them, not strict: one that leaves the layout as it is keeps it all the
        same): a value computed from a wgmma's accumulator, through an elementwise chain
        whose every value the search decided, is that accumulator's layout because of it.
        The nearest such value is found; the step returned is the first on the way, the
        chain following the rest one op at a time.
        """
        if reason.kind == "chosen":
            kept = self._kept(reason.constraint, slot, seen)
            if kept is not None:
                return kept
        return self._towards_required(slot, seen)

    def _towards_required(self, slot: int, seen: set[int]) -> tuple[str, str, int] | None:
        """The first step of the shortest way from ``slot``, through relayouts that keep
        its layout, to a slot whose layout was required or forced (None: there is none)."""
        entry = self._ways_to_required().get(slot)
        if entry is None or entry[0] in seen:
            return None
        following, ci, _, _ = entry
        edge = self._edge(ci, slot, strict=False)
        if edge is None:  # (cannot be: the way was found along this relayout)
            return None
        step, relation, _ = edge
        return step, relation, following

    def _ways_to_required(self) -> dict[int, tuple[int, int, int, int]]:
        """For every slot the searches decided, the way to the nearest slot whose layout was
        required or forced, through relayouts that keep the layout: the next slot on it,
        the relayout to it, the slot at its end and how many steps away. One search from
        every such slot at once, made once per module (a chain of hundreds of values
        would cost hundreds of searches a value)."""
        if self._ways is not None:
            return self._ways
        state = self.state
        value, watchers, root = state.value, state.watchers, state.root
        ways: dict[int, tuple[int, int, int, int]] = {}
        frontier = [
            slot
            for slot, reason in state.reason.items()
            if reason is not None and reason.kind in ("fixed", "forced") and root[slot] == slot
        ]
        reached = set(frontier)
        distance = 0
        while frontier:
            distance += 1
            following = []
            for here in frontier:
                target = ways[here][2] if here in ways else here
                for ci in watchers[here]:
                    c = state.constraints[ci]
                    if not (isinstance(c, Relayout) and isinstance(c.source, Var)):
                        continue
                    if not isinstance(c.target, Var):
                        continue
                    ends = root[c.source.id], root[c.target.id]
                    other = ends[1] if ends[0] == here else ends[0]
                    if other in reached or value[other] != value[here]:
                        continue
                    reached.add(other)
                    ways[other] = (here, ci, target, distance)
                    following.append(other)
            frontier = following
        self._ways = ways
        return ways

    def _kept(
        self, ci: int | None, slot: int, seen: set[int], *, strict: bool = True
    ) -> tuple[str, str, int] | None:
        """For a layout the search chose to match a value it is handed from or to (a strict
        relayout: the lowering converts only a splat there), where that value's own layout
        was required or forced: the step to it, its relation, and its slot."""
        edge = self._edge(ci, slot, strict=strict)
        if edge is None or edge[2] in seen:
            return None
        reason = self.state.reason.get(edge[2])
        if reason is None or reason.kind not in ("fixed", "forced"):
            return None
        return edge

    def _edge(self, ci: int | None, slot: int, *, strict: bool) -> tuple[str, str, int] | None:
        """Where constraint ``ci`` is a relayout (``strict``: a strict one) between ``slot``
        and another slot: the step to that slot, its relation, and the slot."""
        if ci is None:
            return None
        c = self.state.constraints[ci]
        if not (isinstance(c, Relayout) and (c.strict or not strict)):
            return None
        if not (isinstance(c.source, Var) and isinstance(c.target, Var)):
            return None
        root = self.state.root
        source, target = root[c.source.id], root[c.target.id]
        other = target if source == slot else source
        if other == slot:
            return None
        if source == slot:
            consumer = self._site_of(c.target.id, c.origin)
            where = self.site_text(consumer, c.target.id) if consumer else self.op_text(c.origin)
            return f"it keeps its layout into {where}", "flows into", other
        producer = self.system.variables[c.source.id].key
        return (
            f"it keeps the layout of {self.site_text(producer, c.source.id)}",
            "comes from",
            other,
        )

    def _choice(self, kind: str, ci: int | None, slot: int, steps: list[str]) -> _Ending:
        if kind == "domain":
            steps.append("no requirement forced it; the complete search picked it")
            return _Ending("free", "(free: picked by the search; nothing forced it)")
        if ci is None:
            steps.append("no requirement forced it; it is the preferred default for its shape")
            return _Ending("free", "(free: chosen by preference)")
        c = self.state.constraints[ci]
        where = self.op_text(c.origin)
        if isinstance(c, Relayout) and c.strict:
            source = isinstance(c.source, Var) and self.state.root[c.source.id] == slot
            what = f"its use by {where}" if source else f"its producer, {where}"
            steps.append(f"no requirement forced it; the search chose it first, to match {what}")
            return _Ending("free", f"(free: chosen by preference, to match {what})")
        if isinstance(c, TmemTransfer):
            # A load of the TMEM accumulator: its layout is the load's own default (JAX's
            # pass picks it too), computed from the accumulator, not free.
            steps.append(f"it is loaded from TMEM by {where}, in the load's default layout")
            return _Ending("chosen", f"because {where} loads it from TMEM in its default layout")
        steps.append(
            f"no requirement forced it; the search chose it among the layouts that "
            f"{self._constraint_kind(c)} of {where} allows"
        )
        return _Ending("free", f"(free: chosen by preference among what {where} allows)")

    def _step(self, c: Constraint, slot: int) -> tuple[str, str, list[int]]:
        """(sentence, relation for the summary, next slots to follow) for a forcing constraint."""
        root = self.state.root
        others = list(dict.fromkeys(root[v] for v in constraint_variables(c) if root[v] != slot))
        match c:
            case Relayout(source=Var(id=s), target=Var(id=t), strict=True):
                if root[s] == slot:
                    consumer = self._site_of(t, c.origin)
                    where = self.site_text(consumer, t) if consumer else self.op_text(c.origin)
                    return f"it flows into {where}", "flows into", others
                producer = self.system.variables[s].key
                return f"it comes from {self.site_text(producer, s)}", "comes from", others
            case Relayout():
                return f"it is cast by {self.op_text(c.origin)}", "is cast by", others
            case Equal(lhs=lhs, rhs=rhs):
                expr = rhs if any(root[v] == slot for v in variables_of(lhs)) else lhs
                own = lhs if expr is rhs else rhs
                kind = _expression_kind(expr) or _expression_kind(own) or "the same layout as"
                return f"it is {kind} a value of {self.op_text(c.origin)}", f"is {kind}", others
            case SmemTransfer() | TmemTransfer():
                memory = "SMEM" if isinstance(c, SmemTransfer) else "TMEM"
                on_reg_side = any(root[v] == slot for v in variables_of(c.reg))
                if on_reg_side:
                    text = f"it moves to or from a {memory} ref in {self.op_text(c.origin)}"
                else:
                    text = f"its registers in {self.op_text(c.origin)} need it"
                return text, "moves with", others
            case OneOf():
                return (
                    f"it is an MMA operand or gather index of {self.op_text(c.origin)}",
                    "is read by",
                    others,
                )
            case NotOfKind(kind=kind):
                return (
                    f"{self.op_text(c.origin)} rules out a {kind.value} layout",
                    "is used by",
                    others,
                )
            case Broadcast():
                return f"it is broadcast by {self.op_text(c.origin)}", "is broadcast by", others
            case Divides() | MinorTileDivisible() | TmaRows():
                return (
                    f"{self.op_text(c.origin)} needs its tiling to divide what it copies",
                    "is copied by",
                    others,
                )
        return f"a requirement of {self.op_text(c.origin)}", "is tied to", others

    def _site_of(self, var: int, op_id: int) -> Site | None:
        return next((s for s in self.system.variables[var].sites if s.op == op_id), None)

    @staticmethod
    def _constraint_kind(c: Constraint) -> str:
        match c:
            case Relayout(strict=True):
                return "the use"
            case SmemTransfer():
                return "the SMEM transfer"
            case TmemTransfer():
                return "the TMEM transfer"
            case Relayout():
                return "the cast"
            case OneOf():
                return "the MMA operand or gather index"
        return "the requirement"

    # --- all values -------------------------------------------------------------------

    def values(self) -> list[int]:
        """Ids of the values that have a layout, in program order."""
        return sorted(
            vid
            for vid in self.var_of_value
            if self.program.values[vid].kind in (Kind.VECTOR, Kind.SMEM, Kind.TMEM)
            and self.program.values[vid].producer is not None
        )

    def find(self, name: str) -> list[int]:
        """Ids of the values (with a layout) that ``name`` names; raises ``LookupError``
        saying why when there is none.

        ``name``: an SSA name of the printed module (``%12``, ``%95#0``, or ``%95`` for
        every result of a multi-result op), else of the input file (MLIR names values
        afresh when it prints, so the two may differ: the printed module's names win,
        with a note in ``notes``); ``@N``: the values defined at line N of the printed
        module. Names restart in each function, so a name may find several.
        """
        with_layout = set(self.values())
        if name.startswith("@") and name[1:].isdigit():
            found = self.printed.values_at_line(int(name[1:]))
            kept = [v for v in found if v in with_layout]
            return kept or self._none(found, f"at line {name[1:]} of the printed module")
        wanted = name if name.startswith("%") else f"%{name}"
        printed = self.printed.values_named(wanted)
        from_input = self.printed.values_named_in_input(wanted)
        kept = [v for v in printed if v in with_layout]
        kept_in_input = [v for v in from_input if v in with_layout]
        if kept:
            if kept_in_input and set(kept_in_input) != set(kept):
                self.notes.append(
                    f"{wanted} of {self.source_name} is {self._listed(kept_in_input)} in the "
                    f"printed module; explaining the printed {wanted}"
                )
            return kept
        if kept_in_input:
            if printed:
                self.notes.append(
                    f"{wanted} of {self.source_name} is {self._listed(kept_in_input)} in the "
                    f"printed module (whose {wanted} has no layout)"
                )
            return kept_in_input
        return self._none(printed or from_input, f"named {wanted}")

    def _listed(self, values: list[int]) -> str:
        return ", ".join(f"{self.name(v)} ({self.place(v)})" for v in values)

    def _none(self, found: list[int], what: str) -> list[int]:
        if not found:
            raise LookupError(f"no value {what}")
        held = ", ".join(
            f"{self.name(v)} ({self.place(v)}) is {self.program.values[v].type}" for v in found[:4]
        )
        raise LookupError(f"no value {what} has a layout: {held}")


MAX_VIAS = 3


def _summary(ending: _Ending, steps: list[str], vias: list[str]) -> str:
    via = ""
    if vias:
        via = " via " + ", ".join(vias[:MAX_VIAS]) + (", ..." if len(vias) > MAX_VIAS else "")
    match ending.kind:
        case "fixed-here":
            return ending.summary
        case "free" if len(steps) > 1:
            return f"because {steps[0]}{via}, and that was free {ending.summary}"
        case "free":
            return ending.summary
    return ending.summary + via


@dataclass(frozen=True)
class _Ending:
    kind: str  # "fixed-here", "fixed", "forced", "chosen" (an op's default), "free"
    summary: str


_CHANGE_NOUNS = {
    Reduce: "reduction",
    Reshape: "reshape",
    Transpose: "transpose",
    Collapse: "collapse",
}


def _layout_change(c: Constraint) -> str | None:
    """``reduction`` (...) for an equality through an expression that changes the layout."""
    if isinstance(c, Equal):
        for side in (c.rhs, c.lhs):
            noun = _CHANGE_NOUNS.get(type(side))
            if noun is not None:
                return noun
    return None


def _expression_kind(expr: object) -> str | None:
    match expr:
        case Reduce():
            return "a reduction of"
        case Reshape():
            return "a reshape of"
        case Transpose():
            return "a transpose of"
        case Collapse():
            return "a collapse of"
    return None
