"""The suggestion for a conflict: single edits that were verified to fix it, in Pallas terms.

``suggest`` lists the candidate edits (``candidates``), tries them on copies
of the module (``verify``) and words the ones that work, smallest first:
"change the layout cast at kernels.py:52:24 from WGMMA_COL to WGMMA_ROW:
``plgpu.Layout.WGMMA.reduce(1)``". Where none works it says so, with the hint
the conflict's shape gives (``pl.multiple_of`` for an offset, the relayouts
that exist...), so that every conflict ends with something to do.
"""

from __future__ import annotations

import dataclasses
from dataclasses import field
from pathlib import Path
from typing import TYPE_CHECKING

from jax._src.lib.mlir import ir

from smalto.basics.records import value_class
from smalto.constraints.conflict_report import ConflictReport
from smalto.constraints.language import Element, Role, Site, System
from smalto.diagnose.candidates import (
    INLINE,
    LAYOUT_CAST,
    TMEM_CAST,
    Candidates,
    annotation_edits,
)
from smalto.diagnose.edits import ADD_CAST, DROP, RETARGET, UNOPTIMIZE, Edit, attribute_of
from smalto.diagnose.verify import Budget, Trial, try_edits
from smalto.errors import InferenceError
from smalto.hw.encode import AttributeCache
from smalto.hw.names import describe_value, pallas_layout, tmem_name
from smalto.hw.values import Const, Reg, Smem, Tmem
from smalto.pipeline.describe import Namer
from smalto.program.view import Op, Program
from smalto.rewrite.transfers import describe_ops
from smalto.solve.options import SolveOptions
from smalto.source.files import Sources
from smalto.source.locations import FilePosition, file_position, location_text, op_text

if TYPE_CHECKING:
    from smalto.source.pallas_edits import SourceChange, StatementEdit

VERIFIED = "smalto infers the kernel with this change and its checker accepts the layouts"
LOWERED = (
    "smalto infers the kernel with this change, its checker accepts the layouts and JAX's "
    "Mosaic GPU dialect lowering takes them"
)
VERIFIED_SHORT = "verified: smalto infers the kernel with it and its checker accepts the layouts"
LOWERED_SHORT = "verified: smalto infers the kernel with it and JAX's Mosaic GPU lowering takes it"
# Said of a verified edit whose layouts only smalto's own searches find.
NEEDS_SMALTO = (
    "verified with smalto's pass; JAX's own pass still rejects the edited kernel: "
    "needs smalto installed"
)


@value_class(frozen=True)
class SuggestedEdit:
    """A verified edit, as data: what to change where, and the words for it.

    ``ops`` are the ops the edit changes, as ``(op name, location)``
    (ADD_CAST: the op the new cast follows, or precedes when ``use`` is set);
    ``attribute`` the attribute it changes and ``new_attribute`` its new text
    (the whole array for an ``inline_mgpu``'s layouts); ``old``/``new`` the
    layouts by name.
    """

    kind: str  # "retarget", "drop" or "add_cast"
    text: str
    pallas: str | None
    ops: list[tuple[str, str]]
    old: str | None
    new: str | None
    attribute: str | None
    old_attribute: str | None
    new_attribute: str | None
    value: str | None = None  # ADD_CAST: the value cast
    result: int | None = None  # ADD_CAST after its producer: which result
    use: tuple[str, str, int] | None = None  # ADD_CAST before a use: (op, location, operand)
    edit: Edit | None = field(default=None, repr=False, compare=False)
    # The user's source line the edit changes, as ``kernels.py:52 | <the line>``, where found.
    snippet: str | None = None
    # The edit of the user's files, line for line, where their source was read (a tool
    # applies these: each says which lines read what, and what they become).
    changes: tuple[SourceChange, ...] = ()
    # With the edit made, JAX's own pass still finds no layouts that lower (only smalto's
    # searches do): the fix works with smalto installed, not without.
    needs_smalto: bool = False
    # A TMEM ref Pallas declares as scratch (at no line of the kernel) declared otherwise:
    # the located ops that use it, ``(op name, location)``, from which ``smalto fix``
    # finds its ``plgpu.TMEM(...)`` among several.
    uses: tuple[tuple[str, str], ...] = ()
    # The edit changes what the kernel computes (the module, its layouts set aside, is
    # another: ``smalto.diagnose.meaning``): an axis, a broadcast. Never a fix made
    # unasked: a person chooses among such edits.
    changes_meaning: bool = False


@value_class(frozen=True)
class Suggestion:
    text: str
    edits: list[SuggestedEdit]
    tried: int
    complete: bool
    seconds: float
    lowered: bool | None = None  # JAX's lowering took the first edit's answer (None: not run)
    # The verified edits in words, best first, each with what verified it.
    fixes: list[str] = field(default_factory=list)
    # What else to say: the conflict's hint, or why no single edit works.
    notes: list[str] = field(default_factory=list)


def suggest(
    program: Program,
    system: System,
    options: SolveOptions,
    elements: list[Element],
    forced: dict[int, Const],
    namer: Namer,
    hint: str | None,
    budget: Budget | None = None,
    *,
    hint_first: bool = False,
    unoptimize: tuple[int, ...] = (),
    background: tuple[Edit, ...] = (),
) -> Suggestion:
    """Tries the edits the conflict suggests and words the result (``hint_first``: the
    hint is the likelier fix, e.g. a proof of divisibility, and comes before the edits;
    ``unoptimize``: the conflict's transfers which, unoptimized, resolve it;
    ``background``: the other problems' fixes, made with each candidate)."""
    candidates = Candidates(program, system, options, elements, forced, unoptimize)
    trial = try_edits(program, system, options, candidates, budget, background)
    words = EditWords(program, system, namer)
    edits = [words.suggested(edit, edit in trial.needs_smalto) for edit in trial.verified]
    text = _text(edits, trial, hint, words, hint_first=hint_first)
    fixes = [f"{e.text} ({_short_claim(e, trial)})" for e in edits]
    notes: list[str] = []
    if hint and edits:
        notes.append(hint)
    elif not edits:
        notes.append(text)
    return Suggestion(
        text, edits, trial.tried, trial.complete, trial.seconds, trial.lowered, fixes, notes
    )


def suggest_at_derivation(error: Exception, program: Program, options: SolveOptions) -> None:
    """For an annotation whose layout its value cannot take (found while deriving the
    rules): tries its other targets and its removal, and adds what works to ``error``
    (``options``: the caller's)."""
    report = getattr(error, "conflict", None)
    if not isinstance(error, InferenceError) or not isinstance(report, ConflictReport):
        return
    if len(report.requirements) != 1 or report.suggestion:
        return
    op_id = report.requirements[0].element.origin
    try:
        trial = try_edits(program, None, options, annotation_edits(program, options.arch, op_id))
        words = EditWords(program, None, Namer(program, None))
        edits = [words.suggested(edit, edit in trial.needs_smalto) for edit in trial.verified]
    except Exception:  # noqa: BLE001 -- a diagnosis never hides the error it explains
        # (Still closed by its code, as every problem's message is.)
        error.restate("\n".join([error.reason, report.code_line()]), report)
        return
    text = _text(edits, trial, None, words)
    updated = dataclasses.replace(
        report,
        suggestion=text,
        edits=[*edits],
        edits_tried=trial.tried,
        edits_lowered=trial.lowered,
        fixes=[f"{e.text} ({_short_claim(e, trial)})" for e in edits],
    )
    # The code closes the message, as it closes each problem a conflict's diagnosis words.
    if error.phrase is None:  # the rule's words are the first line: the fix after them
        lines = [error.reason, *updated.fix_lines()]
    else:  # JAX's phrase, then the fix, then why
        lines = [*updated.fix_lines(), f"why: {error.reason}"]
    error.restate("\n".join([*lines, updated.code_line()]), updated)


def _short_claim(edit: SuggestedEdit, trial: Trial) -> str:
    """What verified ``edit``, in the fix line's parenthesis (JAX's lowering ran on the
    first verified edit only)."""
    if edit.needs_smalto:
        return NEEDS_SMALTO
    lowered = trial.lowered and trial.verified and edit.edit == trial.verified[0]
    return LOWERED_SHORT if lowered else VERIFIED_SHORT


def _text(
    edits: list[SuggestedEdit],
    trial: Trial,
    hint: str | None,
    words: EditWords,
    *,
    hint_first: bool = False,
) -> str:
    claim = LOWERED if trial.lowered else VERIFIED
    if edits and edits[0].needs_smalto:
        claim = f"{claim}; JAX's own pass still rejects the edited kernel: needs smalto installed"
    if edits and hint and hint_first:
        return f"{hint}\n  or: {edits[0].text} ({claim})" + "".join(
            f"\n  or: {e.text}" for e in edits[1:]
        )
    if edits:
        text = f"{edits[0].text} ({claim})"
        if len(edits) > 1:
            text += "\n  or: " + "\n  or: ".join(e.text for e in edits[1:])
        if hint:
            text += f"\nnote: {hint}"
        return text
    if trial.tried == 0:
        none = "no layout annotation of the kernel is involved, so no single edit of one helps"
    elif trial.complete:
        none = (
            f"no single edit of the layout annotations involved fixes the kernel "
            f"(smalto tried {trial.tried}: other targets for each cast and for the SMEM/TMEM "
            "refs' layouts, removing each cast, adding one)"
        )
    else:
        none = (
            f"none of the {trial.tried} single edits smalto tried within its budget fixes "
            "the kernel"
        )
    if trial.rejected:
        # The closest miss says what else stands in the way, in JAX's words.
        edit, why = trial.rejected[0]
        none += (
            f". The closest: {words.text(edit)}; with it smalto infers the kernel and its "
            f"checker accepts the layouts, but JAX's Mosaic GPU lowering rejects them: "
            f"{why.rstrip('.')}"
        )
        return f"{hint}\nnote: {none}" if hint else none
    if hint:
        return f"{hint}\nnote: {none}"
    return (
        f"{none}; change the conflicting requirements together (e.g. the casts' targets, or the op "
        "that fixes a layout), or cast a value where a supported relayout exists"
    )


class EditWords:
    """Says an edit the way an author would make it, in Pallas terms."""

    def __init__(self, program: Program, system: System | None, namer: Namer) -> None:
        self.program = program
        self.system = system
        self.namer = namer
        self.sources = namer.sources or Sources()
        self._statements: dict[Edit, tuple[str, StatementEdit] | None] = {}
        # Per op id, its place in words and its file position: the words of an edit name
        # its op several times, and each reads the op's location through the bindings.
        self._places: dict[int, str] = {}
        self._positions: dict[int, FilePosition | None] = {}

    def statement(self, edit: Edit) -> tuple[str, StatementEdit] | None:
        """The user's statement the edit changes, as written and edited, and its file: a
        layout cast's target changed or the cast removed (``plgpu.layout_cast(s, L)``, or
        the ``layout=`` of a ``plgpu.load``/``plgpu.broadcasted_iota``... that made it), or
        a cast added where a value is assigned; None where the line cannot be read so."""
        if edit not in self._statements:
            self._statements[edit] = self._statement(edit)
        return self._statements[edit]

    def _statement(self, edit: Edit) -> tuple[str, StatementEdit] | None:
        op = self.program.ops[edit.ops[0]]
        position = self.position(op.id)
        if position is None or position.file == "-":
            return None
        lines = self.sources.lines(position.file)
        if lines is None:
            return None
        # (The source edits are loaded only where a user's line was read.)
        from smalto.source.fix_edits import in_kernel_words
        from smalto.source.pallas_edits import cast_where_defined, stated_layout

        layout = pallas_layout(edit.new) if isinstance(edit.new, Reg) else None
        if layout is not None:  # in the kernel's own names (an alias of a layout, a size)
            layout = in_kernel_words(lines, layout, position.line, position.column)
        found: StatementEdit | None = None
        if op.name == LAYOUT_CAST and edit.attribute is None and edit.kind == DROP:
            found = stated_layout(lines, position.line, position.column, None)
        elif op.name == LAYOUT_CAST and edit.attribute is None and edit.kind == RETARGET:
            if layout is not None:
                found = stated_layout(lines, position.line, position.column, layout)
        elif edit.kind == ADD_CAST and edit.use is None and layout is not None:
            found = cast_where_defined(lines, position.line, position.column, layout)
        return (position.file, found) if found is not None else None

    def changes(self, edit: Edit) -> tuple[SourceChange, ...]:
        """The edit, line for line, in the user's files (none where they were not read)."""
        found = self.statement(edit)
        if found is not None:
            file, statement = found
            return (statement.change(file),)
        if edit.kind != UNOPTIMIZE:
            return ()
        changes = []
        for transfer in describe_ops(self.program, edit.ops, self.sources):
            position, made = transfer.position, transfer.edit
            if position is None or made is None:
                return ()
            line = self.sources.line(position.file, position.line)
            if line is None or line.strip() != made.before:
                return ()
            indent = line[: len(line) - len(line.lstrip())]
            from smalto.source.pallas_edits import SourceChange

            changes.append(SourceChange(position.file, position.line, line, indent + made.after))
        return tuple(changes)

    def where(self, op_id: int) -> str:
        place = self._places.get(op_id)
        if place is None:
            place = self._places[op_id] = location_text(self.program.ops[op_id].location)
        return place

    def position(self, op_id: int) -> FilePosition | None:
        """The op's position in the user's files (``locations.file_position``)."""
        if op_id not in self._positions:
            self._positions[op_id] = file_position(self.program.ops[op_id].location)
        return self._positions[op_id]

    def suggested(self, edit: Edit, needs_smalto: bool = False) -> SuggestedEdit:
        ops = [(self.program.ops[i].name, self.where(i)) for i in edit.ops]
        attribute, old_attr, new_attr = self._attributes(edit)
        value = result = use = None
        if edit.kind == ADD_CAST:
            assert edit.value is not None
            value = self.namer.value(edit.value)
            result = edit.position if edit.use is None else None
            if edit.use is not None:
                consumer, operand = edit.use
                use = (self.program.ops[consumer].name, self.where(consumer), operand)
        return SuggestedEdit(
            kind=edit.kind,
            text=self.text(edit),
            pallas=self.pallas(edit),
            ops=ops,
            old=describe_value(edit.old) if edit.old is not None else None,
            new=describe_value(edit.new) if edit.new is not None else None,
            attribute=attribute,
            old_attribute=old_attr,
            new_attribute=new_attr,
            value=value,
            result=result,
            use=use,
            edit=edit,
            snippet=self.snippet(edit),
            changes=self.changes(edit),
            needs_smalto=needs_smalto,
            uses=self._scratch_uses(edit),
        )

    def snippet(self, edit: Edit) -> str | None:
        """``kernels.py:52 | <the line>``: the user's line the edit changes, where found."""
        position = self.position(edit.ops[0])
        if position is None or position.file == "-":
            return None
        line = self.sources.line(position.file, position.line)
        if line is None or not line.strip():
            return None
        statement = self.statement(edit)
        # A statement spread over lines reads as one (the fix quotes it so too).
        text = statement[1].written if statement is not None else line.strip()
        if len(text) > 100:
            text = text[:97] + "..."
        return f"{Path(position.file).name}:{position.line} | {text}"

    def _attributes(self, edit: Edit) -> tuple[str | None, str | None, str | None]:
        op = self.program.ops[edit.ops[0]]
        attrs = op.operation.attributes
        if edit.kind == UNOPTIMIZE:
            old = str(attrs["optimized"]) if "optimized" in attrs else None
            return "optimized", old, "false"
        if edit.kind == ADD_CAST:
            assert edit.new is not None
            return (
                "new_layout",
                None,
                str(attribute_of(edit.new, AttributeCache(self.program.context))),
            )
        if edit.kind == DROP:
            name = "transforms" if op.name == "mosaic_gpu.with_transforms" else "new_layout"
            return name, str(attrs[name]), None
        assert edit.new is not None
        new = attribute_of(edit.new, AttributeCache(self.program.context))
        if edit.attribute is not None:
            assert edit.position is not None
            entries = list(ir.ArrayAttr(attrs[edit.attribute]))
            old_text = str(ir.ArrayAttr.get(entries))
            entries[edit.position] = new
            return edit.attribute, old_text, str(ir.ArrayAttr.get(entries))
        name = "transforms" if op.name == "mosaic_gpu.with_transforms" else "new_layout"
        return name, str(attrs[name]), str(new)

    # --- words -----------------------------------------------------------------------

    def text(self, edit: Edit) -> str:
        op = self.program.ops[edit.ops[0]]
        if edit.kind == UNOPTIMIZE:
            return self._unoptimize_text(edit)
        code = self.pallas(edit)
        tail = f": `{code}`" if code else ""
        old = describe_value(edit.old) if edit.old is not None else ""
        new = describe_value(edit.new) if edit.new is not None else ""
        statement = self.statement(edit)
        stated = statement[1].call if statement is not None else ""
        keyword = bool(stated) and not stated.endswith("layout_cast")
        if edit.kind == RETARGET and op.name == LAYOUT_CAST and keyword:
            # The layout is a ``layout=`` of the call that made the value: edited there.
            return (
                f"change the layout `{stated}` states at {self.where(op.id)} from {old} to "
                f"{new}{tail}"
            )
        if edit.kind == RETARGET and op.name == LAYOUT_CAST:
            return f"change the layout cast at {self.where(op.id)} from {old} to {new}{tail}"
        if edit.kind == RETARGET and op.name == TMEM_CAST and not self._declared(op):
            # A cast the author wrote (not one Pallas makes for a ``plgpu.TMEM`` scratch).
            return (
                f"change the TMEM layout cast at {self.where(op.id)} from {old} to {new}"
                f"{f': `{self._tmem_layout(edit)}`' if self._tmem_layout(edit) else ''}"
            )
        if edit.kind == RETARGET and op.name == TMEM_CAST:
            return f"declare the TMEM ref {self._ref_place(edit)} as {new}, not {old}{tail}"
        if edit.kind == RETARGET and op.name == INLINE:
            which = "result" if edit.attribute == "out_layouts" else "argument"
            return (
                f"change the layout the `plgpu.inline_mgpu` at {self.where(op.id)} states for "
                f"its {which} #{edit.argument} from {old} to {new}{tail}"
            )
        if edit.kind == RETARGET:
            return (
                f"change the transforms of the SMEM ref {self._ref_place(edit)} from {old} "
                f"to {new}{tail}"
            )
        if edit.kind == DROP and op.name == LAYOUT_CAST and keyword:
            return f"drop the `layout=` ({old}) of `{stated}` at {self.where(op.id)}{tail}"
        if edit.kind == DROP and op.name == LAYOUT_CAST:
            return f"remove the layout cast to {old} at {self.where(op.id)}{tail}"
        if edit.kind == DROP:
            return f"declare the SMEM ref {self._ref_place(edit)} without transforms (not {old})"
        assert edit.kind == ADD_CAST and edit.value is not None
        name = self.namer.value(edit.value)
        if edit.use is not None:
            consumer = self.program.ops[edit.use[0]]
            return f"cast {name} to {new} just before {op_text(consumer)} uses it{tail}"
        return f"cast {name} to {new} right where {op_text(op)} defines it{tail}"

    def _unoptimize_text(self, edit: Edit) -> str:
        """Each transfer made unoptimized, as the user's line reads then."""
        made = describe_ops(self.program, edit.ops, self.sources)
        said = "; ".join(f"`{t.pallas_edit}` at {t.location}" for t in made)
        these = "this transfer" if len(made) == 1 else f"these {len(made)} transfers"
        return f"make {these} unoptimized where written: {said} ({made[0].cost}, so slower)"

    def _declared(self, op: Op) -> bool:
        """Whether a TMEM layout cast is how Pallas states a ``plgpu.TMEM`` scratch's layout
        (it casts the scratch's slice of TMEM), not a cast the author wrote."""
        source = self.program.values[op.operands[0]].producer
        return source is not None and self.program.ops[source.op].name == "mosaic_gpu.slice_tmem"

    def _tmem_layout(self, edit: Edit) -> str | None:
        """The new layout of a TMEM cast as Python names it, where it has a name."""
        if not isinstance(edit.new, Tmem):
            return None
        named = tmem_name(edit.new.layout)
        if named is None or named.kind != "default":
            return None
        return f"tcgen05.tmem_default_layout(packing={named.packing})"

    def pallas(self, edit: Edit) -> str | None:
        """The Pallas code of the edited line, as it reads after the edit (the whole
        statement, its own names and assignment kept, where the source was read; else the
        call with the value's name where known, else the layout alone)."""
        new = edit.new
        if edit.kind == UNOPTIMIZE:
            made = describe_ops(self.program, edit.ops, self.sources)
            return "; ".join(t.pallas_edit for t in made)
        statement = self.statement(edit)
        if statement is not None:
            return statement[1].text
        if edit.kind == DROP:
            return None
        if isinstance(new, Reg):
            layout = pallas_layout(new)
            if layout is None:
                return None
            if edit.kind == RETARGET and edit.attribute is not None:
                return layout
            cast = edit.value if edit.kind == ADD_CAST else None
            if cast is None and self.program.ops[edit.ops[0]].operands:
                cast = self.program.ops[edit.ops[0]].operands[0]
            name = self.namer.user_name(cast) if cast is not None else None
            return f"plgpu.layout_cast({name}, {layout})" if name else layout
        if isinstance(new, Smem):
            return smem_pallas(new)
        if isinstance(new, Tmem):
            op = self.program.ops[edit.ops[0]]
            value = self.program.values[op.results[0]]
            return tmem_pallas(new, value.type, value.bitwidth)
        return None

    def _ref_place(self, edit: Edit) -> str:
        """``%67 (64×128 f32, at kernels.py:40:8)``: a ref by name, type and where it is
        stated, else where it is used (Pallas states scratch refs at no line of the kernel)."""
        op = self.program.ops[edit.ops[0]]
        name = self.namer.value(op.results[0])
        value = self.program.values[op.results[0]]
        kind = _element_type(value.type)
        shape = "×".join(map(str, value.shape))
        located = [self.where(i) for i in edit.ops if ":" in self.where(i)]
        if located:
            return f"{name} ({shape} {kind}, at {', '.join(dict.fromkeys(located))})"
        users = [op_text(self.program.ops[user]) for user in self._located_users(op)]
        used = f", used by {users[0]}" if users else ""
        return f"{name} ({shape} {kind}{used})"

    def _located_users(self, op: Op) -> list[int]:
        """The ops at a line of the kernel that use the ref ``op`` makes (its variable's
        operand sites; none without a system)."""
        var = self.system.var_of_site.get(Site(op.id, Role.RESULT, 0)) if self.system else None
        if self.system is None or var is None:
            return []
        sites = self.system.variables[var].sites
        located = (s.op for s in sites if s.role == Role.OPERAND and ":" in self.where(s.op))
        return list(dict.fromkeys(located))

    def _scratch_uses(self, edit: Edit) -> tuple[tuple[str, str], ...]:
        """For a TMEM ref Pallas declares as scratch, retargeted: where it is used."""
        op = self.program.ops[edit.ops[0]] if edit.ops else None
        if edit.kind != RETARGET or op is None or op.name != TMEM_CAST or not self._declared(op):
            return ()
        users = self._located_users(op)
        return tuple((self.program.ops[user].name, self.where(user)) for user in users)


_DTYPES = {
    "f32": "jnp.float32",
    "f16": "jnp.float16",
    "bf16": "jnp.bfloat16",
    "f64": "jnp.float64",
    "i32": "jnp.int32",
    "i16": "jnp.int16",
    "i8": "jnp.int8",
    "i1": "jnp.bool_",
    "f8E4M3FN": "jnp.float8_e4m3fn",
    "f8E5M2": "jnp.float8_e5m2",
    "f8E8M0FNU": "jnp.float8_e8m0fnu",
}


def _element_type(ty: ir.Type) -> str:
    try:
        return str(ir.ShapedType(ty).element_type)
    except (ValueError, TypeError):
        return str(ty)


def smem_pallas(value: Smem) -> str:
    """``transforms=(plgpu.TilingTransform((8, 64)), plgpu.SwizzleTransform(128))``."""
    parts = []
    if value.tiling is not None:
        parts.append(f"plgpu.TilingTransform({tuple(value.tiling)})")
    if value.swizzle is not None:
        parts.append(f"plgpu.SwizzleTransform({value.swizzle})")
    inner = ", ".join(parts) + ("," if len(parts) == 1 else "")
    return f"transforms=({inner})"


def tmem_pallas(value: Tmem, ty: ir.Type, bitwidth: int | None) -> str | None:
    """How a Pallas kernel declares a TMEM ref of type ``ty`` with this layout: by its
    rows, ``collective=`` and ``packed=`` where they pick it, else ``layout=``."""
    named = tmem_name(value.layout)
    if named is None:
        return None
    shaped = ir.ShapedType(ty)
    shape = tuple(shaped.shape)
    element = str(shaped.element_type)
    dtype = _DTYPES.get(element, f"jnp.dtype('{element}')")
    bits = bitwidth or 32
    args = [f"{shape}", dtype]
    if named.kind in ("default", "half_lane", "m64_collective"):
        if named.kind == "m64_collective":
            args.append("collective=True")
        if named.packing * bits == 32 and bits < 32:
            args.append("packed=True")
        elif named.packing == 1 and bits < 32:
            args.append("packed=False")
        elif named.packing != 1:
            return None  # a packing Pallas picks no other way than by ``layout=``
        return f"plgpu.TMEM({', '.join(args)})"
    enum = {
        "scales": "SCALES_LAYOUT",
        "b_scales_m64_collective": "SCALES_M64_COLLECTIVE_LAYOUT",
        "sparse_meta": "SPARSE_METADATA_LAYOUT",
    }[named.kind]
    return f"plgpu.TMEM({', '.join(args)}, layout=plgpu.TMEMLayout.{enum})"


__all__ = ["SuggestedEdit", "Suggestion", "smem_pallas", "suggest", "tmem_pallas"]
