"""The facts behind a failed inference, for tools: ``InferenceError.conflict``.

A conflict is a set of requirements that cannot hold together, each with the
op that imposed it and where; the diagnosis (``smalto.diagnose``) adds what
the values were forced to and the edits that resolve it. A rule that meets a
layout its value cannot take reports that one requirement alone.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import field
from typing import TYPE_CHECKING

from smalto.basics.codes import (
    GENERIC,
    LAYOUT_FOR_SHAPE,
    NO_RELAYOUT,
    NO_SMEM_PLAN,
    REDUCTION_LAYOUT,
    TMA_INDEX,
    TMEM_LAYOUT,
    TWO_SMEM_TRANSFORMS,
    UNCOALESCED_GMEM,
    code_line,
)
from smalto.basics.records import value_class
from smalto.constraints.language import (
    Broadcast,
    Divides,
    Element,
    Equal,
    Fixed,
    FullyTiled,
    GmemTransfer,
    MinorTileDivisible,
    NotOfKind,
    Reduce,
    RegisterBits,
    Relayout,
    SmemTransfer,
    StoreRegisters,
    TmaRows,
    TmemTransfer,
    fixed_layout,
    variables_of,
)
from smalto.errors import InferenceError
from smalto.hw.values import Reg, Smem, Tmem

if TYPE_CHECKING:
    # (A type only: the fixes' source edits are made by the diagnosis, never by the pass.)
    from smalto.source.fix_edits import DiagnosedEdit


@value_class(frozen=True)
class Requirement:
    """One requirement in a conflict: which op imposed it, where, and what it says."""

    op: str
    location: str
    text: str
    element: Element = field(repr=False)


# How the changes that change what the kernel computes are offered (a reduction and a
# broadcast that disagree look like a bug: the author says which was meant).
CHOICES = (
    "this looks like a bug; each change below makes the kernel compile, and changes what "
    "it computes: which did you mean?"
)


@value_class(frozen=True)
class ConflictReport:
    """The facts behind an ``InferenceError``, for tools: one problem of the kernel, and in
    ``others`` the problems independent of it (each with its own values and fix)."""

    requirements: list[Requirement]
    values: list[str]  # "%12 : vector<64x64xf32>" for each value involved
    derivations: list[str]  # "%12 is WGMMA because ..."
    suggestion: str | None
    minimal: bool
    # Every element of the core (requirements with the same wording are listed once above).
    core: list[Element] = field(default_factory=list, repr=False)
    # Where each value involved is defined: "%12 : vector<...> is defined by `op` at k.py:3:4".
    origins: list[str] = field(default_factory=list)
    # The single edits verified to make the kernel infer and check, best first
    # (``smalto.diagnose.suggest.SuggestedEdit``), and how many edits were tried.
    edits: list[DiagnosedEdit] = field(default_factory=list)
    edits_tried: int = 0
    # Whether JAX's own dialect lowering took the first edit's answer too (None: not run,
    # the module has no launch to lower it in).
    edits_lowered: bool | None = None
    # The verified changes in words, best first (the message leads with them).
    fixes: list[str] = field(default_factory=list)
    # The verified changes that change what the kernel computes (a reduction's axis, its
    # broadcast), in words: choices for the author, never fixes (their edits follow the
    # fixes' in ``edits``, each marked ``changes_meaning``).
    choices: list[str] = field(default_factory=list)
    # What else to say: what the lowering says of JAX's answer, a faster alternative,
    # hints where no edit was verified.
    notes: list[str] = field(default_factory=list)
    # The fast fix where the verified ones make a transfer unoptimized: the transfer staged
    # through SMEM with a TMA copy (said before them; ``smalto fix`` writes it).
    faster: str | None = None
    # What is wrong, in smalto's words, said first where JAX's phrase blames layout casts
    # the kernel does not have (``s.max(axis=0)`` gives one value per column...).
    headline: str | None = None
    # The kernel's other problems, independent of this one (as a compiler reports every
    # error it finds).
    others: list[ConflictReport] = field(default_factory=list)

    @property
    def ops(self) -> list[str]:
        return list(dict.fromkeys(r.op for r in self.requirements))

    @property
    def locations(self) -> list[str]:
        return list(dict.fromkeys(r.location for r in self.requirements))

    @property
    def problems(self) -> list[ConflictReport]:
        """This problem and the others, in the order found."""
        return [self, *self.others]

    def message(self, *, verbose: bool = False) -> str:
        """The fix first, then why, once each; ``verbose``: also what each value was forced
        to and where each is defined."""
        problems = self.problems
        if len(problems) == 1:
            return "\n".join(self._lines(verbose))
        lines = [f"the kernel has {len(problems)} problems, each with its own fix:"]
        for number, problem in enumerate(problems, 1):
            lines.append(f"problem {number} of {len(problems)}:")
            lines += [f"  {line}" for line in problem._lines(verbose)]
        return "\n".join(lines)

    @property
    def code(self) -> str:
        """The kind of failure, as a stable code (``smalto.basics.codes``; ``smalto explain
        CODE``)."""
        # Each requirement names its op; the core's elements listed once with the same
        # wording are of the same op.
        op_names = {r.element.origin: r.op for r in self.requirements}
        return failure_code(self.core or [r.element for r in self.requirements], op_names)

    def code_line(self) -> str:
        """``error[SM004]: <its title> (`smalto explain SM004`)``: the last line of a problem."""
        return code_line(self.code)

    def fix_lines(self) -> list[str]:
        """The verified fixes, each with the source line it changes (where found); the
        suggestion where none was verified."""
        lines: list[str] = []
        if self.faster and self.fixes:
            lines.append(f"fast fix: {self.faster}")
        # A fix with no edit of its own (the ``allow_unoptimized`` option) has no line:
        # each edit's line goes with the fix that words it.
        edits = iter(self.edits)
        edit = next(edits, None)
        for number, fix in enumerate(self.fixes):
            lines.append(f"fix: {fix}" if number == 0 else f"  or: {fix}")
            if edit is not None and fix.startswith(getattr(edit, "text", "\0")):
                snippet = getattr(edit, "snippet", None)
                edit = next(edits, None)
                if snippet:
                    lines.append(f"    {snippet}")
        if self.choices:
            lines.append(CHOICES)
            for choice in self.choices:
                lines.append(f"  - {choice}")
                if edit is not None and choice.startswith(getattr(edit, "text", "\0")):
                    snippet = getattr(edit, "snippet", None)
                    edit = next(edits, None)
                    if snippet:
                        lines.append(f"      {snippet}")
        if not self.fixes and not self.choices and self.suggestion:
            lines.append(f"suggestion: {self.suggestion}")
        return lines

    def _lines(self, verbose: bool) -> list[str]:
        lines = [f"what is wrong: {self.headline}"] if self.headline else []
        lines += self.fix_lines()
        lines.append("why: these requirements cannot all hold:")
        lines += [f"  - {r.text}" for r in self.requirements]
        said = self.suggestion or "" if not self.fixes and not self.choices else ""
        lines += [f"note: {note}" for note in self.notes if note not in said]
        if self.faster and not self.fixes:
            lines.append(f"note: the fast alternative: {self.faster}")
        if verbose and self.derivations:
            lines.append("where:")
            lines += [f"  - {d}" for d in self.derivations]
        if verbose and self.origins:
            lines.append("the values involved:")
            lines += [f"  - {o}" for o in self.origins]
        lines.append(self.code_line())
        return lines


def failure_code(elements: list[Element], op_names: Mapping[int, str]) -> str:
    """The code of a conflict, by what is wrong rather than by what the core merely holds
    (a minimal core needs every element it has; the code names the one to change): the
    code of the first row of ``CODE_ROWS`` that holds of the conflict's facts.
    ``op_names``: the name of each element's op, by origin."""
    return deciding_row(elements, op_names).code


def deciding_row(elements: list[Element], op_names: Mapping[int, str]) -> CodeRow:
    """The first row of ``CODE_ROWS`` that holds of the conflict (the last always does)."""
    facts = ConflictFacts.of(elements, op_names)
    return next(row for row in CODE_ROWS if row.holds(facts))


@value_class(frozen=True)
class ConflictFacts:
    """What ``CODE_ROWS`` ask of a conflict, found once."""

    elements: list[Element]
    # What ops impose outright, however a rule states it (fixed, or one option).
    imposed: list[Fixed]
    fixed_registers: list[Fixed]
    fixed_smem: list[Fixed]
    # A cast's conversion to the layout it states (not the producer-to-consumer hand-over,
    # which is an equality but from a splat; nor a cast whose target the conflict leaves
    # free, as a ``layout=`` on a value that cannot be a splat is).
    converted: bool
    # A reduction's layout equality, or a broadcast's (the same form: the source is the
    # result reduced).
    reduced: bool
    broadcast: bool
    tmem_transfers: list[TmemTransfer]

    @classmethod
    def of(cls, elements: list[Element], op_names: Mapping[int, str]) -> ConflictFacts:
        imposed = [f for e in elements if (f := fixed_layout(e)) is not None]
        fixed_registers = [f for f in imposed if isinstance(f.value, Reg)]
        stated = {f.var for f in fixed_registers}
        converted = any(
            isinstance(e, Relayout) and not e.strict and stated.intersection(variables_of(e.target))
            for e in elements
        )
        equalities = [
            e
            for e in elements
            if isinstance(e, Equal) and (isinstance(e.lhs, Reduce) or isinstance(e.rhs, Reduce))
        ]
        return cls(
            elements=elements,
            imposed=imposed,
            fixed_registers=fixed_registers,
            fixed_smem=[f for f in imposed if isinstance(f.value, Smem)],
            converted=converted,
            reduced=any(op_names.get(e.origin) not in _BROADCASTS for e in equalities),
            broadcast=any(op_names.get(e.origin) in _BROADCASTS for e in equalities),
            tmem_transfers=[e for e in elements if isinstance(e, TmemTransfer)],
        )

    def has(self, *kinds: type) -> bool:
        return any(isinstance(e, kinds) for e in self.elements)


@value_class(frozen=True)
class CodeRow:
    """One row of ``CODE_ROWS``: where ``holds``, the conflict's code is ``code``, for
    ``reason``."""

    reason: str
    holds: Callable[[ConflictFacts], bool]
    code: str


# The codes of a conflict, in order: the first row that holds decides. A row's place is
# part of its meaning (a conflict with a GMEM transfer in it is SM005 whatever else it
# holds): a new row goes where its reason says it overrides the rows below it, and
# ``tests/diagnosis/test_codes.py`` holds every row to a kernel it decides.
CODE_ROWS: tuple[CodeRow, ...] = (
    CodeRow(
        "a GMEM transfer with no plan: the transfer is what to change",
        lambda f: f.has(GmemTransfer),
        UNCOALESCED_GMEM,
    ),
    CodeRow(
        "an SMEM transfer with no plan where the ref's transforms are fixed or no cast "
        "converts the value (a cast's conversion, with the transfer only keeping its value "
        "from being a splat, is a relayout)",
        lambda f: f.has(SmemTransfer) and (bool(f.fixed_smem) or not f.converted),
        NO_SMEM_PLAN,
    ),
    CodeRow(
        "a TMEM layout imposed (a TMEM ref's, an MMA's)",
        lambda f: any(isinstance(i.value, Tmem) for i in f.imposed),
        TMEM_LAYOUT,
    ),
    CodeRow(
        "a TMA index (a divisibility, a minor tile, the rows of a TMA)",
        lambda f: f.has(Divides, MinorTileDivisible, TmaRows),
        TMA_INDEX,
    ),
    CodeRow("a reduction's layout", lambda f: f.reduced, REDUCTION_LAYOUT),
    CodeRow(
        "only loads from TMEM meet a register layout stated elsewhere, no cast converting "
        "it: the TMEM ref is fine, what a load gives is one register layout (as an MMA's "
        "result is), the layout stated elsewhere (a cast on a loop carry, a `layout=` where "
        "a broadcast of it needs the load's) is the other",
        lambda f: (
            bool(f.tmem_transfers)
            and not f.converted
            and bool(f.fixed_registers)
            and all(e.load for e in f.tmem_transfers)
        ),
        GENERIC,
    ),
    CodeRow(
        "registers a TMEM transfer cannot take, not converted by a cast on the way",
        lambda f: bool(f.tmem_transfers) and not f.converted,
        TMEM_LAYOUT,
    ),
    CodeRow(
        "a cast to a layout its value cannot be converted to", lambda f: f.converted, NO_RELAYOUT
    ),
    CodeRow(
        "one SMEM ref with two sets of transforms",
        lambda f: len(f.fixed_smem) >= 2,
        TWO_SMEM_TRANSFORMS,
    ),
    CodeRow(
        "two layouts stated for one value, or one and a broadcast's (a layout written where "
        "a broadcast needs the other axis's)",
        lambda f: len(f.fixed_registers) >= 2 or (f.broadcast and bool(f.fixed_registers)),
        GENERIC,
    ),
    CodeRow(
        "a layout the shape cannot take: an imposed layout alone, or a requirement of the "
        "shape or element type",
        lambda f: (
            (len(f.elements) == 1 and bool(f.imposed))
            or f.has(NotOfKind, FullyTiled, RegisterBits, StoreRegisters, Broadcast)
        ),
        LAYOUT_FOR_SHAPE,
    ),
    CodeRow("none of the above: a value with two layouts", lambda f: True, GENERIC),
)


# Ops whose layout equality is a broadcast's (the source is the result reduced), not a
# reduction's.
_BROADCASTS = frozenset({"mosaic_gpu.broadcast_in_dim"})


def problems_of(error: BaseException | None) -> list[ConflictReport]:
    """The problems of a failed inference (its conflict's), in the order found; none where
    the error is no diagnosed ``InferenceError``."""
    if not isinstance(error, InferenceError):
        return []
    conflict = error.conflict
    return conflict.problems if isinstance(conflict, ConflictReport) else []
