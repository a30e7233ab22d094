"""Judging one layout at one op twice: by smalto's solver and by smalto's checker.

The rules (``smalto.rules``) and the checker (``smalto.check``) state each op's
requirements independently. A ``Candidate`` is a minimal kernel in which a
few values are pinned to given layouts (by a ``layout_cast``, ``with_transforms``
or ``tmem_layout_cast`` the generator writes around the op under test, whose
location is ``loc("op")``). Both sides then give a verdict:

- the solver accepts the candidate when inference succeeds and each pinned
  value carries its pin where it is made and at the op under test (a solver
  that succeeds by relayouting a splat around the pin has avoided the layout,
  not taken it; a pinned splat need only be made a splat, since a splat may
  reach any use converted);
- the checker accepts it when smalto's answer passes it whole; where the
  solver refuses, the checker is asked about a hand-annotated module: an
  accepted answer of a kernel with the same ops, with the pinned values
  retargeted to their pins at their producer and every user. It refuses the
  layout when it reports a violation at the op under test (or at a
  terminator of its regions, which the generators locate with it).

Where the two verdicts differ, a rule was changed without its check (or the
other way round), and the message names the side that changed. A solver that
avoids a pinned layout by converting a tiled value between ops, which JAX's
rules never do (only a splat changes layout from producer to user; smalto's
widened search converts as the lowering does, where JAX's rules leave nothing
that lowers), changed whatever the checker says: that answer is solved again
with the widened search kept to JAX's relayouts, and if it still converts, the
rules were loosened. The refused side is weaker where an op relates several
sites: the hand-annotated module keeps the accepted answer's layouts at the
sites a candidate does not pin, so a generator pins every site it means.
"""

from __future__ import annotations

import enum
from collections.abc import Sequence
from dataclasses import dataclass, field

import reference
from jax._src.lib.mlir import ir
from rule_kit import HOPPER, parse

import smalto
from smalto.check import Violation, check

OP_TAG = "op"  # the location name of the op under test


@dataclass(frozen=True)
class Pin:
    """The value ``tag``'s op defines as result ``index`` has layout ``layout``.

    ``layout`` is attribute text: a register layout, a transform list
    (``[#mosaic_gpu.tile<...>, ...]``) or a TMEM layout.
    """

    tag: str
    index: int
    layout: str


@dataclass(frozen=True)
class Candidate:
    """One kernel with the layouts of ``pins`` forced around the op under test."""

    label: str
    text: str
    pins: tuple[Pin, ...]
    arch: tuple[int, int] = HOPPER
    # Where the rule, like JAX's inference, refuses a layout JAX's lowering takes
    # (and the checker, which states the lowering's requirements, accepts): why.
    stricter: str = ""
    # The pins must hold at the op under test too, a splat's as well: the kind is asked of
    # the op itself. A splat's producer relayouts it for free at any use, so without this
    # the solver takes a pinned splat by converting it on the way and the checker is never
    # asked about a splat at the op (a check loosened there would pass unseen).
    at_op: bool = False


@dataclass(frozen=True)
class Cases:
    """What a generator derives for one op.

    ``restricted``: the op's rule allows only some layouts at the sizes used,
    so at least one candidate must be refused by both sides (the generator
    offers layouts the op does not take).
    """

    op: str
    candidates: tuple[Candidate, ...]
    restricted: bool = True


class Verdict(enum.Enum):
    ACCEPTED = "accepted"
    REFUSED = "refused"


@dataclass
class Judged:
    """Both verdicts on one candidate, and what the checker said."""

    candidate: Candidate
    solver: Verdict
    checker: Verdict
    violations: list[Violation] = field(default_factory=list)
    solver_error: str = ""
    # Where the solver, under JAX's rules alone, avoided a pin by converting a tiled
    # value between ops (``between_ops``): the rules' side changed, whatever the checker says.
    relayouted: tuple[str, ...] = ()
    # Why the checker could not be asked (no accepted kernel of the same ops to annotate).
    unjudged: str = ""

    def disagreement(self) -> str | None:
        if self.unjudged:
            return f"{self.candidate.label}: {self.unjudged}"
        if self.relayouted:
            return (
                f"{self.candidate.label}: the solver (smalto/rules) changed: it avoids the "
                "pinned layout by converting a value between ops that JAX's rules keep (only "
                "a splat changes layout from its producer to a user), with no need of the "
                "widened search; a loosened rule, or producer-to-consumer relayouts "
                "(smalto.rules.vector_relayouts) no longer strict?\n  "
                + "\n  ".join(self.relayouted)
            )
        if self.solver == self.checker:
            return None
        said = "\n  ".join(str(v) for v in self.violations) or "(nothing)"
        if self.solver is Verdict.ACCEPTED:
            return (
                f"{self.candidate.label}: the solver (smalto/rules) takes this layout, the "
                f"checker (smalto/check) flags smalto's answer; a rule loosened without its "
                f"check?\n  {said}"
            )
        return (
            f"{self.candidate.label}: the solver (smalto/rules) refuses this layout "
            f"({self.solver_error or 'it avoids the pinned layout'}), the checker "
            "(smalto/check) accepts it at the op; a rule tightened without its check?\n  "
            f"checker: {said}"
        )


# --- reading and writing layout attributes ----------------------------------------------


def walk(module: ir.Module) -> list[ir.Operation]:
    found: list[ir.Operation] = []

    def visit(op: ir.Operation) -> ir.WalkResult:
        found.append(op)
        return ir.WalkResult.ADVANCE

    module.operation.walk(visit, ir.WalkOrder.PRE_ORDER)
    return found


def tagged(module: ir.Module, tag: str) -> ir.Operation:
    text = f'loc("{tag}")'
    for op in walk(module):
        if str(op.location) == text:
            return op
    raise AssertionError(f'no op at loc("{tag}") in the kernel')


def _family(ty: ir.Type) -> str | None:
    """The attribute suffix of a value of type ``ty`` (as ``smalto.check`` decodes)."""
    if isinstance(ty, ir.VectorType):
        return "layouts"
    if not isinstance(ty, ir.MemRefType):
        return None
    space = ir.MemRefType(ty).memory_space
    if space is None:
        return None
    if "tmem" in str(space):
        return "tmem_layouts"
    if "barrier" in str(ir.MemRefType(ty).element_type):
        return None
    return "transforms"


def _position(values: Sequence[ir.Value], index: int) -> tuple[str, int] | None:
    """The attribute suffix and entry of ``values[index]`` among values of its family."""
    family = _family(values[index].type)
    if family is None:
        return None
    return family, sum(1 for v in values[:index] if _family(v.type) == family)


def _set_entry(op: ir.Operation, name: str, entry: int, attr: ir.Attribute) -> None:
    entries = list(ir.ArrayAttr(op.attributes[name]))
    entries[entry] = attr
    op.attributes[name] = ir.ArrayAttr.get(entries)


def _sites(module: ir.Module, value: ir.Value) -> list[tuple[ir.Operation, str, int]]:
    """Every (op, attribute name, entry) that states ``value``'s layout."""
    found = []
    for op in walk(module):
        for prefix, values in (("out", list(op.results)), ("in", list(op.operands))):
            for i, v in enumerate(values):
                if v == value:
                    position = _position(values, i)
                    if position is not None:
                        found.append((op, f"{prefix}_{position[0]}", position[1]))
    return found


def pinned_sites_hold(module: ir.Module, pins: Sequence[Pin], at_op: bool = False) -> bool:
    """Whether each pinned value carries its pin where it is made and at the op under test.

    (A splat may reach any use converted: it need only be made a splat; but ``at_op``,
    where it must reach the op under test a splat.)
    """
    if not pins:
        return True
    under_test = tagged(module, OP_TAG)
    with module.context:
        for pin in pins:
            wanted = ir.Attribute.parse(pin.layout)
            producer = tagged(module, pin.tag)
            value = producer.results[pin.index]
            splat = pin.layout.startswith("#mosaic_gpu.WGSplatFragLayout") and not at_op
            for op, name, entry in _sites(module, value):
                # A splat may be converted at any use, the op under test's too.
                if op != producer and (splat or op != under_test):
                    continue
                if name not in op.attributes or ir.ArrayAttr(op.attributes[name])[entry] != wanted:
                    return False
    return True


def retargeted(answer: ir.Module, candidate: Candidate) -> ir.Module:
    """``candidate``'s kernel with ``answer``'s attributes, its pinned values retargeted."""
    module = parse(candidate.text)
    ours, theirs = walk(module), walk(answer)
    assert [o.name for o in ours] == [o.name for o in theirs], "kernels of different ops"
    with module.context:
        for mine, given in zip(ours, theirs, strict=True):
            for name in reference.LAYOUT_ATTRIBUTE_NAMES:
                if name in given.attributes:
                    mine.attributes[name] = given.attributes[name]
        for pin in candidate.pins:
            value = tagged(module, pin.tag).results[pin.index]
            attr = ir.Attribute.parse(pin.layout)
            for op, name, entry in _sites(module, value):
                _set_entry(op, name, entry, attr)
    return module


# --- the verdicts ---------------------------------------------------------------------------


def _answer(candidate: Candidate) -> tuple[ir.Module | None, str]:
    """smalto's answer to the candidate's kernel, else None and why not."""
    module = parse(candidate.text)
    try:
        smalto.infer_layout(module, arch=candidate.arch)
    except (smalto.InferenceError, NotImplementedError) as error:
        return None, str(error).splitlines()[0][:300]
    return module, ""


def between_ops(module: ir.Module) -> list[str]:
    """Where an annotated module converts a register value between its producer and a
    user other than from a splat: what JAX's rules never do (only the lowering, which
    smalto's widened search asks, where JAX's rules leave nothing that lowers)."""
    found = []
    with module.context:
        for op in walk(module):
            if "in_layouts" not in op.attributes:
                continue
            operands = list(op.operands)
            for i, value in enumerate(operands):
                if isinstance(value.owner, ir.Block) or _family(value.type) != "layouts":
                    continue  # (a block argument's layout is its region owner's)
                producer = value.owner.operation
                results = list(producer.results)
                index = next(k for k, r in enumerate(results) if r == value)
                made, used = _position(results, index), _position(operands, i)
                if made is None or used is None or "out_layouts" not in producer.attributes:
                    continue
                given = ir.ArrayAttr(producer.attributes["out_layouts"])[made[1]]
                taken = ir.ArrayAttr(op.attributes["in_layouts"])[used[1]]
                if given != taken and "WGSplatFragLayout" not in str(given):
                    found.append(
                        f"made as {_named(given)} at {producer.location}, used as "
                        f"{_named(taken)} at {op.location}"
                    )
    return found


def _named(attr: ir.Attribute) -> str:
    """A register layout attribute by name (``WGMMA``, ``strided ×2``), as smalto's
    messages name it."""
    from jax.experimental.mosaic.gpu import layouts as layouts_lib

    from smalto.check.names import describe
    from smalto.hw.values import Reg

    return describe(Reg(layouts_lib.from_layout_attr(attr)))


def _under_jax_rules(candidate: Candidate) -> ir.Module | None:
    """smalto's answer with the widened search kept to JAX's relayouts between ops."""
    from unittest import mock

    import smalto.solve.propagation as propagation

    assert hasattr(propagation, "lowered_relayout"), "the widened search's relayouts moved"
    with mock.patch.object(propagation, "lowered_relayout", lambda c, program: None):
        return _answer(candidate)[0]


# What a candidate pins: the attributes that differ between candidates of one kernel.
_PIN_ATTRIBUTES = frozenset({"new_layout", "strict", "transforms"})


def _structure(text: str) -> tuple[tuple[str, ...], ...]:
    """The kernel's ops, with their types and their attributes but the pins: candidates
    of one kernel in other layouts share it (a generator may offer several kernels of
    one op, in other shapes, element types or attributes)."""
    # The module must outlive its ops: an op of a freed module aborts the process.
    module = parse(text)
    return tuple(
        (
            op.name,
            *(str(v.type) for v in op.operands),
            "->",
            *(str(v.type) for v in op.results),
            *sorted(
                f"{name}={op.attributes[name]}"
                for name in op.attributes
                if name not in _PIN_ATTRIBUTES and name not in reference.LAYOUT_ATTRIBUTE_NAMES
            ),
        )
        for op in walk(module)
    )


def judge_all(cases: Cases) -> list[Judged]:
    """Both verdicts on every candidate of ``cases``."""
    answers: dict[str, tuple[ir.Module | None, str]] = {}
    # Solved, but not in the pinned layouts (an error-free refusal): where the answer
    # converts between ops under JAX's rules alone, if it does.
    relayouted: dict[str, tuple[str, ...]] = {}
    for c in cases.candidates:
        module, error = _answer(c)
        if module is not None and not pinned_sites_hold(module, c.pins, c.at_op):
            relayouted[c.label] = _relayouted(c, module)
            module = None
        answers[c.label] = (module, error)
    accepted_by_structure: dict[tuple[tuple[str, ...], ...], ir.Module] = {}
    converting = {_structure(c.text) for c in cases.candidates if relayouted.get(c.label)}
    for c in cases.candidates:
        module = answers[c.label][0]
        if module is not None:
            accepted_by_structure.setdefault(_structure(c.text), module)
    judged = []
    for c in cases.candidates:
        module, error = answers[c.label]
        if module is not None:
            violations = check(module, c.arch)
            verdict = Verdict.REFUSED if violations else Verdict.ACCEPTED
            judged.append(Judged(c, Verdict.ACCEPTED, verdict, violations))
            continue
        moved = relayouted.get(c.label)
        if moved:
            judged.append(Judged(c, Verdict.REFUSED, Verdict.ACCEPTED, relayouted=moved))
            continue
        base = accepted_by_structure.get(_structure(c.text))
        if base is None and _structure(c.text) in converting:
            unjudged = (
                "cannot be judged: the solver takes the other candidates of this kernel only "
                "by converting between ops (above), so none gives the attributes to "
                "hand-annotate it from"
            )
            judged.append(Judged(c, Verdict.REFUSED, Verdict.REFUSED, [], error, (), unjudged))
            continue
        if base is None:
            # A generator offers a layout each kernel takes: a rule that refuses them all
            # was tightened (or the generator offers none).
            unjudged = (
                f"the solver (smalto/rules) refuses every candidate of this kernel "
                f"({error or 'it avoids the pinned layouts'}), so none gives the attributes to "
                "hand-annotate it from: a rule tightened, or a generator with no layout the "
                "op takes?"
            )
            judged.append(Judged(c, Verdict.REFUSED, Verdict.REFUSED, [], error, (), unjudged))
            continue
        violations = [v for v in check(retargeted(base, c), c.arch) if v.location == OP_TAG]
        verdict = Verdict.REFUSED if violations else Verdict.ACCEPTED
        judged.append(Judged(c, Verdict.REFUSED, verdict, violations, error))
    return judged


def problems(cases: Cases, judged: Sequence[Judged]) -> list[str]:
    """What is wrong with the verdicts on ``cases``: a disagreement of the two sides, a
    known stricter rule no longer alone in refusing, or verdicts too uniform to judge."""
    found = []
    for j in judged:
        reason = j.candidate.stricter
        if j.relayouted or j.unjudged:
            found.append(f"{j.disagreement()}")
        elif reason:
            # Known: the rule refuses, like JAX's inference, what the lowering takes.
            if (j.solver, j.checker) != (Verdict.REFUSED, Verdict.ACCEPTED):
                found.append(
                    f"{j.candidate.label}: expected the rule alone to refuse it ({reason}); "
                    f"solver {j.solver.value}, checker {j.checker.value}"
                )
        elif (disagreement := j.disagreement()) is not None:
            found.append(disagreement)
    verdicts = {j.solver for j in judged}
    # Not hollow: some kernel is solved and checked whole, and where the rule
    # restricts layouts, some layout is refused by both sides.
    if Verdict.ACCEPTED not in verdicts:
        found.append(f"no candidate solved ({describe_verdicts(judged)})")
    if cases.restricted and not any(j.solver is j.checker is Verdict.REFUSED for j in judged):
        found.append(f"no layout refused by both sides ({describe_verdicts(judged)})")
    return found


def _relayouted(candidate: Candidate, answer: ir.Module) -> tuple[str, ...]:
    """Where ``answer``, smalto's answer to a kernel that avoids its pins, converts tiled
    values between ops even under JAX's rules alone (none, where only the widened search
    converts them)."""
    if not between_ops(answer):
        return ()
    narrowed = _under_jax_rules(candidate)
    return tuple(between_ops(narrowed)) if narrowed is not None else ()


def describe_verdicts(judged: Sequence[Judged]) -> str:
    return ", ".join(f"{j.candidate.label}={j.solver.value}" for j in judged)


def tag(line: str, name: str = OP_TAG) -> str:
    """``line`` (one op in generic form) located at ``loc("name")``."""
    return f'{line} loc("{name}")'
