"""The layouts in a conflict, for pictures: each value of a failed inference in the layout
each side of the conflict wants.

The diagnosis (``InferenceError.conflict``) names the requirements that cannot hold
together (its core: constraints and fixed layouts of the derived system) and says in
words what the values were forced to; it does not hand over those values as data.
This is the face's adapter for that: it derives the module's system again (the
rules are deterministic: the same module gives the same variables and
requirements, checked element by element against the core), then follows each of
the kernel's own annotations (every fixed layout: a cast, an MMA's accumulator...)
alone through the requirements that force one layout from another, and looks
where the conclusions meet the core:

- one value forced to two layouts (by two annotations) is a clash of the two;
- a requirement of the core that fails between the layouts its values are forced
  to (a relayout the lowering cannot make, a transfer with no plan, a layout not
  among an op's options) is a clash of those values, each in its own layout
  (for an op's options, the value in the first option next to the layout it has);
- a value broadcast along a size-1 dim (a ``keepdims=True`` reduction, an ``x[None, :]``)
  has no layout the lowering can give it, so nothing fails between two forced layouts:
  its clash is the layout the broadcast needs, at the value's own shape, next to the
  layout of the value it comes from.

An op's requirement on one value is read as the layouts it allows
(``allowed_layouts``): one layout allowed alone is followed as an annotation is, however
the rule states it (fixed, or one option), and a value in a layout none of several
options allows is titled with all of them.

Nothing here decides anything: where the facts do not line up (another system,
values not forced), there is simply no picture.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

from jax._src.lib.mlir import ir
from jax.experimental.mosaic.gpu import fragmented_array as fa

from smalto.constraints.language import (
    Broadcast,
    Constraint,
    Element,
    Equal,
    Expr,
    Fixed,
    LayoutKind,
    NotOfKind,
    Reduce,
    Relayout,
    Reshape,
    SmemTransfer,
    System,
    TmemTransfer,
    Var,
    allowed_layouts,
    as_solved,
    constraint_variables,
    element_variables,
    expressions_of,
    fixed_layout,
    variables_of,
)
from smalto.errors import InferenceError
from smalto.hw import layouts as hl
from smalto.hw.names import REGISTER_LAYOUTS, describe_value
from smalto.hw.transfers import tmem_transfer_supported
from smalto.hw.values import Const, Reg, Tmem
from smalto.pipeline.describe import describe_allowed
from smalto.program.view import Program
from smalto.rules import derive_system
from smalto.solve.evaluate import FAILS, Forces, judge, simplify
from smalto.source.locations import op_text

MAX_CLASHES = 4
_MAX_STEPS = 10_000  # per annotation followed: far more than any kernel's forced chain


@dataclass(frozen=True)
class Side:
    """One value in one layout, and what wants it there."""

    value: int  # the value's id in the program
    layout: Const
    shape: tuple[int, ...]
    element_type: str  # MLIR's spelling: f32, bf16...
    bitwidth: int
    strides: tuple[int, ...] | None  # memrefs: the ref's strides
    wanted_by: list[str] = field(default_factory=list)  # "the cast result of `op` at k.py:3"

    @property
    def layout_name(self) -> str:
        return describe_value(self.layout)


@dataclass(frozen=True)
class Clash:
    """Layouts that cannot hold together: ``sides`` drawn side by side, under ``title``."""

    title: str  # what cannot hold, with ``{0}``, ``{1}``... for the values' names
    sides: list[Side]


@dataclass
class _Conclusions:
    """What each annotation, followed alone, forces: variable -> layout -> who wants it."""

    wanted: dict[int, dict[Const, list[str]]] = field(default_factory=dict)

    def add(self, var: int, layout: Const, why: str) -> None:
        whys = self.wanted.setdefault(var, {}).setdefault(layout, [])
        if why not in whys:
            whys.append(why)

    def only(self, var: int) -> Const | None:
        layouts = self.wanted.get(var, {})
        return next(iter(layouts)) if len(layouts) == 1 else None


def conflict_clashes(
    program: Program, core: Sequence[Element], arch: tuple[int, int]
) -> list[Clash]:
    """The clashes behind a diagnosis whose requirements are ``core`` (the elements of
    ``InferenceError.conflict``), on ``program``: the module as it came (a failed
    inference leaves it so), read again. Must run inside the module's context. Empty
    where there is nothing to draw."""
    if not core:
        return []
    try:
        system = derive_system(program, arch)
    except (InferenceError, NotImplementedError, ValueError):
        return []  # a rule refused the module: the diagnosis's one requirement says it all
    known = set(system.constraints) | set(system.fixed)
    if any(element not in known for element in core):
        return []  # not the system the diagnosis saw: say nothing rather than guess
    found = _follow_annotations(program, system)
    clashes = _two_layouts(program, system, core, found)
    clashes += _failing_requirements(program, system, core, found)
    clashes += _unit_dim_broadcasts(program, system, core, found)
    clashes += _broadcasts_with_no_layout(program, system, core, found, arch)
    if not clashes:
        clashes = _what_is_fixed(program, system, core, found)
    return _distinct(clashes)[:MAX_CLASHES]


def _follow_annotations(program: Program, system: System) -> _Conclusions:
    """Every layout an op imposes outright (a fixed one, or the one option it allows)
    followed alone through the requirements that force one layout from another (an
    equality, a reduction, a producer-to-consumer pass-through)."""
    watching = _watching(system)
    # Values that cannot be splats: between producer and consumer such a value keeps its
    # layout, so a consumer's layout is its producer's too.
    never_splat = {
        var
        for c in system.constraints
        if isinstance(c, NotOfKind) and c.kind is LayoutKind.SPLAT
        for var in variables_of(c.expr)
    }
    broadcast_of = _broadcast_of(program, system)
    for index, constraint in enumerate(system.constraints):
        if isinstance(constraint, Relayout) and isinstance(constraint.source, Var):
            source = broadcast_of.get(constraint.source.id)
            if source is not None:
                watching.setdefault(source, []).append(index)
    found = _Conclusions()
    _, imposed = as_solved([*system.fixed, *system.constraints])
    never_splat |= _stated_tiled(system, imposed)
    # In program order, however a rule states what it imposes (fixed, or one option): the
    # pictures show a value's layouts in the order their annotations come.
    for fixed in sorted(imposed, key=lambda f: f.origin):
        _follow(program, system, fixed, watching, never_splat, broadcast_of, found)
    return found


def _watching(system: System) -> dict[int, list[int]]:
    """The constraints on each variable, by index (but those that impose a layout outright:
    followed from, never reached)."""
    watching: dict[int, list[int]] = {}
    for index, constraint in enumerate(system.constraints):
        if fixed_layout(constraint) is not None:
            continue
        for var in constraint_variables(constraint):
            watching.setdefault(var, []).append(index)
    return watching


def _broadcast_of(program: Program, system: System) -> dict[int, int]:
    """A broadcast's result by its source. A broadcast is a splat only where its source
    is: once the source's layout is known (a row max, say), the broadcast's consumer's
    layout is the broadcast's too."""
    broadcast_of = {
        c.dst.id: c.src.id
        for c in system.constraints
        if isinstance(c, Broadcast) and isinstance(c.src, Var) and isinstance(c.dst, Var)
    }
    # (A ``broadcast_in_dim`` states its source as its result reduced: the result of a
    # source that cannot be a splat is none either.)
    for c in system.constraints:
        if (
            isinstance(c, Equal)
            and isinstance(c.lhs, Var)
            and isinstance(c.rhs, Reduce)
            and isinstance(c.rhs.expr, Var)
            and program.ops[c.origin].name == "mosaic_gpu.broadcast_in_dim"
        ):
            broadcast_of.setdefault(c.rhs.expr.id, c.lhs.id)
    return broadcast_of


def _follow(
    program: Program,
    system: System,
    fixed: Fixed,
    watching: dict[int, list[int]],
    never_splat: set[int],
    broadcast_of: dict[int, int],
    found: _Conclusions,
) -> None:
    """One imposed layout followed alone, what it forces added to ``found``."""
    annotation = f"{fixed.what} of {op_text(program.ops[fixed.origin])}"
    values: dict[int, Const] = {fixed.var: fixed.value}
    # var -> the ops on the way from the annotation that changed the layout (a
    # reduction, a reshape...): where the layout the picture shows comes from.
    steps_to: dict[int, list[int]] = {fixed.var: []}
    second: list[tuple[Forces, str]] = []  # a value reached a second way, in another layout
    queue = [fixed.var]
    steps = 0
    not_splat = functools.partial(_not_splat, never_splat, broadcast_of, values)
    while queue and steps < _MAX_STEPS:
        var = queue.pop()
        for index in watching.get(var, ()):
            steps += 1
            constraint = system.constraints[index]
            forced = _forced(constraint, values, not_splat)
            if forced is None:
                # One annotation reaching a value along two ways, in two layouts (a row
                # max over the wrong axis, then broadcast along rows): both sides of the
                # conflict, each with the ops it came through.
                for other in _would_force(constraint, values):
                    path = steps_to[var] + [constraint.origin]
                    second.append((other, _why(program, annotation, fixed, path)))
                continue
            changed = forced.value != values[var]
            path = steps_to[var] + ([constraint.origin] if changed else [])
            if forced.var in values:
                continue
            values[forced.var] = forced.value
            steps_to[forced.var] = path
            queue.append(forced.var)
    for var, value in values.items():
        found.add(var, value, _why(program, annotation, fixed, steps_to[var]))
    for other, why in second:  # after the first way, so that pictures show it first
        found.add(other.var, other.value, why)


def _stated_tiled(system: System, imposed: Sequence[Fixed]) -> set[int]:
    """Values an annotation lays out in a layout that is no splat, and the values they are
    handed to unchanged (a strict relayout from such a value is the identity): none is a
    splat, whichever annotation is followed."""
    found = {fixed.var for fixed in imposed if _tiled(fixed.value)}
    handed: dict[int, list[int]] = {}
    for c in system.constraints:
        if isinstance(c, Relayout) and c.strict:
            if isinstance(c.source, Var) and isinstance(c.target, Var):
                handed.setdefault(c.source.id, []).append(c.target.id)
    queue = list(found)
    while queue:
        for target in handed.get(queue.pop(), ()):
            if target not in found:
                found.add(target)
                queue.append(target)
    return found


def _why(program: Program, annotation: str, fixed: Fixed, steps: list[int]) -> str:
    """Who wants a layout: the annotation, and the ops that changed the layout on the way."""
    through = [op for op in dict.fromkeys(steps) if op != fixed.origin]
    if not through:
        return annotation
    return annotation + ", through " + ", ".join(op_text(program.ops[op]) for op in through)


def _would_force(constraint: Constraint, values: dict[int, Const]) -> list[Forces]:
    """Where ``constraint`` fails between the layouts its values were given: the layout it
    would force on each of them from the others' (another than the one it has)."""
    if judge(constraint, values.get) is not FAILS:
        return []
    forces = []
    for var in dict.fromkeys(constraint_variables(constraint)):
        trial = {v: layout for v, layout in values.items() if v != var}
        verdict = judge(constraint, trial.get)
        if isinstance(verdict, Forces) and verdict.var == var and verdict.value != values[var]:
            forces.append(verdict)
    return forces


def _not_splat(
    never_splat: set[int], broadcast_of: dict[int, int], values: dict[int, Const], var: int
) -> bool:
    """Whether ``var`` cannot be a splat: never, or the broadcast of a value that is tiled
    or cannot be a splat itself (a value loaded from memory, whatever annotation lays it
    out)."""
    source = broadcast_of.get(var)
    return var in never_splat or (
        source is not None and (_tiled(values.get(source)) or source in never_splat)
    )


def _tiled(layout: Const | None) -> bool:
    return isinstance(layout, Reg) and not layout.is_splat


def _forced(
    constraint: Constraint, values: dict[int, Const], never_splat: Callable[[int], bool]
) -> Forces | None:
    """The layout ``constraint`` forces on one more variable, given ``values`` (and which
    variables cannot be splats)."""
    verdict = judge(constraint, values.get)
    if isinstance(verdict, Forces):
        return verdict
    if (
        isinstance(constraint, TmemTransfer)
        and constraint.load
        and isinstance(constraint.tmem, Var)
        and isinstance(constraint.reg, Var)
        and constraint.reg.id not in values
    ):
        # A TMEM load that no annotation lays out: the registers in the first layout the
        # search tries for it (TCGEN05, else the TMEM layout's own), for the picture.
        tmem = values.get(constraint.tmem.id)
        if isinstance(tmem, Tmem):
            shape, bits = constraint.shape, constraint.bitwidth
            for layout in (hl.TCGEN05, hl.tmem_as_tiled(tmem.layout)):
                if tmem_transfer_supported(tmem.layout, layout, shape, bits):
                    return Forces(constraint.reg.id, Reg(layout))
    if isinstance(constraint, Relayout) and constraint.strict:
        source = variables_of(constraint.source)
        target = simplify(constraint.target, values.get)
        if (
            len(source) == 1
            and source[0] not in values
            and never_splat(source[0])
            and isinstance(target, Reg)
            and not target.is_splat
            and type(constraint.source) is Var
        ):
            return Forces(source[0], target)
    return None


def _side(program: Program, system: System, var: int, layout: Const, why: list[str]) -> Side:
    variable = system.variables[var]
    value = program.values[variable.key_value]
    element = value.type
    if isinstance(element, ir.ShapedType):
        element = ir.ShapedType(element).element_type
    return Side(
        variable.key_value,
        layout,
        tuple(variable.shape),
        str(element),
        variable.bitwidth or 32,
        variable.strides,
        list(why),
    )


def _two_layouts(
    program: Program, system: System, core: Sequence[Element], found: _Conclusions
) -> list[Clash]:
    """Values of the core that two annotations force to two layouts."""
    clashes = []
    for var in _involved(core):
        layouts = found.wanted.get(var, {})
        if len(layouts) < 2:
            continue
        sides = [_side(program, system, var, layout, why) for layout, why in layouts.items()]
        names = " and ".join(side.layout_name for side in sides)
        clashes.append(Clash(f"{{0}} cannot be both {names}", sides))
    return clashes


def _failing_requirements(
    program: Program, system: System, core: Sequence[Element], found: _Conclusions
) -> list[Clash]:
    """Requirements of the core that fail between the layouts their values are forced to."""
    clashes = []
    # What an op imposes outright is followed as an annotation: its clash is a value in
    # two layouts (``_two_layouts``), not a requirement failing here.
    constraints, _ = as_solved(core)
    for element in constraints:
        variables = list(dict.fromkeys(constraint_variables(element)))
        values = {var: layout for var in variables if (layout := found.only(var)) is not None}
        if len(values) != len(variables) or judge(element, values.get) is not FAILS:
            continue
        op = op_text(program.ops[element.origin])
        if isinstance(element, SmemTransfer | TmemTransfer):
            variables.reverse()  # the registers first, then the memory
        sides = [
            _side(program, system, var, values[var], found.wanted[var][values[var]])
            for var in variables
        ]
        allows = allowed_layouts(element)
        wanted = _what_it_wants(element, values)
        if allows is not None and allows.layouts:
            # An op's options: the value in the first next to the layout it has, titled as
            # two layouts are where the op allows one (a fixed layout), with all options.
            sides.append(
                _side(program, system, allows.var, allows.layouts[0], [f"{allows.what} of {op}"])
            )
            title = (
                f"{{0}} cannot be both {sides[0].layout_name} and "
                f"{describe_allowed(allows.layouts)}"
            )
        elif wanted is not None and len(variables) == 1:
            (var,) = variables
            sides.append(_side(program, system, var, wanted, [op]))
            title = f"{op} needs {{0}} as {describe_value(wanted)}, not {sides[0].layout_name}"
        elif len(sides) == 2:
            first, second = (f"{{{i}}} ({side.layout_name})" for i, side in enumerate(sides))
            if isinstance(element, Relayout):
                title = f"{op} cannot convert {first} to {second}"
            elif isinstance(element, SmemTransfer | TmemTransfer):
                title = f"{op} has no transfer of {first} to or from {second}"
            else:
                title = f"{op} cannot hold between {first} and {second}"
        else:
            continue
        clashes.append(Clash(title, sides))
    return clashes


def _unit_dim_broadcasts(
    program: Program, system: System, core: Sequence[Element], found: _Conclusions
) -> list[Clash]:
    """Values of the core broadcast along a size-1 dim (a ``keepdims=True`` reduction, a
    ``x[None, :]``): the layout the broadcast needs the value in, at the value's own shape
    (the broadcast's result layout, kept along the unit dims), next to the layout the value
    comes from (the nearest value before it that an annotation lays out).

    The core cannot show this itself: JAX's lowering broadcasts only between layouts tiled
    at the value's own rank, so the unit-dim value has no layout at all, and no requirement
    fails between two forced layouts."""
    involved = set(_involved(core))
    onward: dict[int, list[int]] = {}  # var -> the consumers it keeps its layout to
    before: dict[int, list[int]] = {}  # var -> what it is made from
    for c in system.constraints:
        if isinstance(c, Relayout) and c.strict and isinstance(c.source, Var):
            if isinstance(c.target, Var):
                onward.setdefault(c.source.id, []).append(c.target.id)
        for var in constraint_variables(c):
            for source in _sources_of(c, var):
                if isinstance(source, Var):
                    before.setdefault(var, []).append(source.id)
    clashes = []
    for constraint in system.constraints:
        if not (
            isinstance(constraint, Broadcast)
            and isinstance(constraint.src, Var)
            and isinstance(constraint.dst, Var)
        ):
            continue
        src, dst = constraint.src.id, constraint.dst.id
        small, large = system.variables[src].shape, system.variables[dst].shape
        if len(small) != len(large):
            continue  # a new dim, not a unit one: the Equal beside it relates the layouts
        unit = [i for i, (a, b) in enumerate(zip(small, large, strict=True)) if a == 1 < b]
        target = _forward_layout(found, onward, dst)
        if not unit or not isinstance(target, Reg) or target.is_splat:
            continue
        layout = target.layout
        if not isinstance(layout, fa.TiledLayout):
            continue
        for axis in unit:
            layout = hl.keep_dims(layout, axis)
        needed = Reg(layout)
        came_from = _backward_forced(found, before, src)
        if came_from is None:
            continue
        origin, has, chain = came_from
        if not (set(chain) & involved) or has == needed:
            continue
        op = op_text(program.ops[constraint.origin])
        sides = [
            _side(program, system, origin, has, found.wanted[origin][has]),
            _side(program, system, src, needed, [f"{op}, broadcasting it along its unit dim"]),
        ]
        title = (
            f"{op} broadcasts {{1}} along its unit dim, which needs {{1}} as "
            f"{describe_value(needed)}; {{1}} comes from {{0}} as {describe_value(has)}"
        )
        clashes.append(Clash(title, sides))
    return clashes


# The register layouts a broadcast's result is tried in, where nothing forces it: the
# MMA layouts a kernel's tiles have, in the order a user would reach for them.
_BROADCAST_RESULTS = {
    (9, 0): ("WGMMA", "WGMMA_TRANSPOSED"),
    (10, 0): ("TCGEN05", "WGMMA", "TCGEN05_TRANSPOSED", "WGMMA_TRANSPOSED"),
}


def _broadcasts_with_no_layout(
    program: Program,
    system: System,
    core: Sequence[Element],
    found: _Conclusions,
    arch: tuple[int, int],
) -> list[Clash]:
    """A value an annotation lays out, broadcast along an axis (its broadcast's result the
    reduction of it: ``row[None, :]``) where nothing lays out the result: no layout of the
    result reduces to the value's, so nothing fails between two forced layouts. Its clash
    is the value in its layout, next to the layout the broadcast needs it in: the
    reduction of the first named tile layout (``WGMMA``, ``TCGEN05``) that has one."""
    clashes = []
    constraints, _ = as_solved(core)
    names = _BROADCAST_RESULTS.get(arch, _BROADCAST_RESULTS[(10, 0)])
    for element in constraints:
        if not isinstance(element, Equal):
            continue
        pair = _var_and_reduction(element)
        if pair is None:
            continue
        src, dst, reduction = pair
        has = found.only(src)
        if not isinstance(has, Reg) or has.is_splat or found.only(dst) is not None:
            continue
        shape = tuple(system.variables[dst].shape)
        needed: Reg | None = None
        for name in names:
            candidate = Reg(REGISTER_LAYOUTS[name])
            if not hl.fits(candidate, shape):
                continue
            reduced = hl.reduced_layout(
                candidate, reduction.axes, reduction.rank, reduction.keep_dims
            )
            if isinstance(reduced, Reg) and reduced != has:
                needed = reduced
                break
        if needed is None:
            continue
        op = op_text(program.ops[element.origin])
        axes = ", ".join(map(str, reduction.axes))
        sides = [
            _side(program, system, src, has, found.wanted[src][has]),
            _side(program, system, src, needed, [f"{op}, broadcasting it along axis {axes}"]),
        ]
        title = (
            f"{op} broadcasts {{1}} along axis {axes}, which needs it as "
            f"{describe_value(needed)}; it is {describe_value(has)}"
        )
        clashes.append(Clash(title, sides))
    return clashes


def _var_and_reduction(element: Equal) -> tuple[int, int, Reduce] | None:
    """``(v, w, Reduce(w))`` where ``element`` equates a variable ``v`` with a reduction
    of another, ``w``."""
    for var_side, other in ((element.lhs, element.rhs), (element.rhs, element.lhs)):
        if not (isinstance(var_side, Var) and isinstance(other, Reduce)):
            continue
        reduced = other.expr
        if isinstance(reduced, Var) and reduced.id != var_side.id:
            return var_side.id, reduced.id, other
    return None


_MAX_HOPS = 64  # producer-to-consumer steps followed from a broadcast: far more than kernels have


def _forward_layout(found: _Conclusions, onward: dict[int, list[int]], var: int) -> Const | None:
    """The layout forced on ``var``, else on the consumer it keeps its layout to."""
    for _ in range(_MAX_HOPS):
        layout = found.only(var)
        if layout is not None or len(onward.get(var, ())) != 1:
            return layout
        (var,) = onward[var]
    return None


def _backward_forced(
    found: _Conclusions, before: dict[int, list[int]], var: int
) -> tuple[int, Reg, list[int]] | None:
    """The nearest variable before ``var`` (through pass-throughs, reshapes and
    broadcasts) that an annotation lays out in registers, not as a splat (a constant
    operand of the way is one): the variable, its layout, and the variables on the way."""
    queue: list[list[int]] = [[var]]
    seen = {var}
    while queue and len(seen) < _MAX_HOPS:
        chain = queue.pop(0)
        layout = found.only(chain[-1])
        if len(chain) > 1 and isinstance(layout, Reg) and not layout.is_splat:
            return chain[-1], layout, chain
        for source in before.get(chain[-1], ()):
            if source not in seen:
                seen.add(source)
                queue.append([*chain, source])
    return None


def _sources_of(constraint: Constraint, var: int) -> list[Expr]:
    """What ``constraint`` makes ``var`` from: a relayout's source, a reshape's input, a
    broadcast's source."""
    if isinstance(constraint, Relayout) and constraint.target == Var(var):
        return [constraint.source]
    if isinstance(constraint, Broadcast) and constraint.dst == Var(var):
        return [constraint.src]
    if (
        isinstance(constraint, Equal)
        and constraint.lhs == Var(var)
        and isinstance(constraint.rhs, Reshape)
    ):
        return [constraint.rhs.expr]
    return []


def _what_is_fixed(
    program: Program, system: System, core: Sequence[Element], found: _Conclusions
) -> list[Clash]:
    """Where no requirement can be seen failing between two layouts (it fails for every
    layout of a value nothing forces): the values of the core whose layouts are forced,
    each in its layout, for the reader to compare."""
    sides: list[Side] = []
    for var in _involved(core):
        layout = found.only(var)
        if layout is None:
            continue
        side = _side(program, system, var, layout, found.wanted[var][layout])
        if all((side.value, side.layout) != (s.value, s.layout) for s in sides):
            sides.append(side)
    if len(sides) < 2:
        return []
    return [Clash("the layouts the requirements fix, which cannot all hold", sides)]


def _what_it_wants(element: Element, values: dict[int, Const]) -> Const | None:
    """The layout a one-value equality asks for, where it names one."""
    if isinstance(element, Equal):
        for expr in expressions_of(element):
            if not variables_of(expr):
                value = simplify(expr, values.get)
                return value if isinstance(value, Const) else None  # None: a contradiction
    return None


def _involved(core: Sequence[Element]) -> list[int]:
    """The variables of the core's requirements, in order."""
    involved: list[int] = []
    for element in core:
        for var in element_variables(element):
            if var not in involved:
                involved.append(var)
    return involved


def _distinct(clashes: list[Clash]) -> list[Clash]:
    """The clashes that draw differently (the same layouts at the same shapes, for two
    values, are one picture)."""
    seen: set[tuple[tuple[Const, tuple[int, ...]], ...]] = set()
    out = []
    for clash in clashes:
        key = tuple(sorted(((s.layout, s.shape) for s in clash.sides), key=repr))
        if key not in seen:
            seen.add(key)
            out.append(clash)
    return out
