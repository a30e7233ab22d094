"""The single edits worth trying for a conflict, likeliest first.

Only the user's own annotations are edited (a ``layout_cast``, a TMEM ref's
layout, an SMEM ref's transforms, the layouts an ``inline_mgpu`` states), and
only those the conflict involves: those that imposed one of its requirements
or that define or read one of its values. Each may get another target: first
the layout the rest of the kernel gives the value once the annotation states
none (a solution of the system without it), then the layouts the conflict's
values are forced to, then the named layouts of the architecture that fit;
or go away; and a value of the conflict may get a new ``layout_cast``.
Retargets come before removals, removals before new casts: the smallest
change of the author's own code first.
"""

from __future__ import annotations

from collections.abc import Iterator
from functools import lru_cache

from jax._src.lib.mlir import ir
from jax.experimental.mosaic.gpu import fragmented_array as fa
from jax.experimental.mosaic.gpu import tcgen05

from smalto.constraints.language import (
    Element,
    Role,
    Site,
    System,
    element_variables,
    fixed_layout,
    value_at,
)
from smalto.diagnose.edits import ADD_CAST, DROP, RETARGET, UNOPTIMIZE, Edit
from smalto.diagnose.origins import cast_layout
from smalto.hw import encode
from smalto.hw import layouts as hl
from smalto.hw.names import HOPPER_NAMES, REGISTER_LAYOUTS
from smalto.hw.values import Const, Reg, Smem, Tmem
from smalto.program.view import Kind, Op, Program
from smalto.solve.decision import Solved
from smalto.solve.for_diagnosis import for_diagnosis
from smalto.solve.options import SolveOptions

LAYOUT_CAST = "mosaic_gpu.layout_cast"
TMEM_CAST = "mosaic_gpu.tmem_layout_cast"
WITH_TRANSFORMS = "mosaic_gpu.with_transforms"
INLINE = "mosaic_gpu.custom_primitive"
ANNOTATIONS = frozenset({LAYOUT_CAST, TMEM_CAST, WITH_TRANSFORMS, INLINE})
# Layouts only special ops produce: never a useful cast target.
_NOT_TARGETS = frozenset({"TMA_INDICES", "TMA_INDICES_4", "WGMMA_ACC_32BIT"})


def elements_variables(elements: list[Element]) -> list[int]:
    """The variables the elements involve, in order of first mention."""
    found: dict[int, None] = {}
    for e in elements:
        for v in element_variables(e):
            found.setdefault(v)
    return list(found)


class Candidates:
    """Edits for one conflict: ``elements`` (its requirements), ``forced`` (what its values
    are forced to), on ``program``/``system`` under the caller's ``options``."""

    def __init__(
        self,
        program: Program,
        system: System,
        options: SolveOptions,
        elements: list[Element],
        forced: dict[int, Const],
        unoptimize: tuple[int, ...] = (),
    ) -> None:
        self.program = program
        self.system = system
        self.options = options
        self.arch = options.arch
        self.elements = elements
        # The fewest transfers of the conflict which, unoptimized, resolve it.
        self.unoptimize = unoptimize
        self.variables = elements_variables(elements)
        # Layouts the conflict states or forces: what the rest of the kernel wants.
        wanted: dict[Const, None] = {}
        for e in elements:
            imposed = fixed_layout(e)
            if imposed is not None:
                wanted.setdefault(imposed.value)
        for value in forced.values():
            wanted.setdefault(value)
        self.wanted = list(wanted)

    def __iter__(self) -> Iterator[Edit]:
        seen: set[Edit] = set()
        for edit in self._all():
            if edit not in seen:
                seen.add(edit)
                yield edit

    def _all(self) -> Iterator[Edit]:
        annotations = self._annotation_ops()
        # A transfer with no plan (GMEM or SMEM, load or store): making it unoptimized is
        # the one-word change at the user's line, and what ``allow_unoptimized`` makes;
        # it comes first. The edits that keep it fast (other transforms, other casts)
        # follow it.
        if self.unoptimize:
            yield Edit(UNOPTIMIZE, self.unoptimize)
        # Retargets before removals before new casts: the smallest change first.
        for op_id in annotations:
            yield from self._retargets(op_id)
        for op_id in annotations:
            yield from self._drops(op_id)
        yield from self._new_casts()

    # --- which annotations ------------------------------------------------------------

    def _annotation_ops(self) -> list[int]:
        """The annotation ops of the conflict: those that imposed a requirement (fixed
        layouts first), then those whose result or operand is one of its values."""
        ops: dict[int, None] = {}
        ordered = sorted(self.elements, key=lambda e: fixed_layout(e) is None)
        for e in ordered:
            if self.program.ops[e.origin].name in ANNOTATIONS:
                ops.setdefault(e.origin)
        for var in self.variables:
            for site in self.system.variables[var].sites:
                if self.program.ops[site.op].name in ANNOTATIONS:
                    ops.setdefault(site.op)
        return list(ops)

    def _same_ref_transforms(self, op_id: int) -> tuple[int, ...]:
        """Every ``with_transforms`` stating the same transforms for the same ref: Pallas
        states an SMEM ref's transforms at each use, and the author writes them once."""
        var = self.system.var_of_site.get(_result_site(op_id))
        stated = cast_layout(self.program, op_id)
        if var is None:
            return (op_id,)
        ops = [
            site.op
            for site in self.system.variables[var].sites
            if site.role == Role.RESULT
            and self.program.ops[site.op].name == WITH_TRANSFORMS
            and cast_layout(self.program, site.op) == stated
        ]
        return tuple(sorted(set(ops) | {op_id}))

    # --- retargets ---------------------------------------------------------------------

    def _retargets(self, op_id: int) -> Iterator[Edit]:
        op = self.program.ops[op_id]
        if op.name == INLINE:
            yield from self._inline_retargets(op_id)
            return
        old = cast_layout(self.program, op_id)
        if old is None:
            return
        value = self.program.values[op.results[0]]
        ops = self._same_ref_transforms(op_id) if op.name == WITH_TRANSFORMS else (op_id,)
        var = self.system.var_of_site.get(_result_site(op_id))
        free = self._unannotated_value(ops, var)
        for new in self._targets(old, value.shape, value.bitwidth, value.strides, free):
            yield Edit(RETARGET, ops, old=old, new=new)

    def _unannotated_value(self, ops: tuple[int, ...], var: int | None) -> Const | None:
        """The layout the rest of the kernel gives a value once ``ops`` state none for it
        (from a solution of the system without what they fix): the likeliest target."""
        if var is None:
            return None
        fixed = [f for f in self.system.fixed if not (f.origin in ops and f.var == var)]
        if len(fixed) == len(self.system.fixed):
            return None
        if self._holds_without(ops, var):
            return None
        sub = System(self.system.variables, self.system.constraints, fixed, self.system.var_of_site)
        # (A search that needs more steps than its small fuel is not worth the wait: the
        # target is only a preference.)
        decision = for_diagnosis(self.options).under_jax_rules(sub, self.program)
        if not isinstance(decision, Solved):
            return None
        return decision.state.solution()[var]

    def _holds_without(self, ops: tuple[int, ...], var: int) -> bool:
        """Whether the conflict's requirements, every one of them the system's own (not one
        another problem's fix changed), hold without what ``ops`` fix for ``var``: then
        the system without it has no solution either, and a search would only spend its
        fuel finding that out."""
        own = {id(e) for e in (*self.system.fixed, *self.system.constraints)}
        imposed = (fixed_layout(e) for e in self.elements)
        return all(id(e) in own for e in self.elements) and not any(
            f is not None and f.origin in ops and f.var == var for f in imposed
        )

    def _inline_retargets(self, op_id: int) -> Iterator[Edit]:
        """Each layout or transforms an ``inline_mgpu`` states for a value of the conflict."""
        op = self.program.ops[op_id]
        involved = set(self.variables)
        vectors = refs = 0
        for index, vid in enumerate(op.operands):
            value = self.program.values[vid]
            if value.kind == Kind.VECTOR:
                position, attribute = vectors, "in_layouts"
                vectors += 1
            elif value.kind == Kind.SMEM and value.transformable:
                position, attribute = refs, "in_transforms"
                refs += 1
            else:
                continue
            var = self.system.var_of_site.get(_operand_site(op_id, index))
            if var in involved:
                yield from self._entry_retargets(op_id, attribute, position, index, vid)
        results = 0
        for index, vid in enumerate(op.results):
            if self.program.values[vid].kind != Kind.VECTOR:
                continue
            var = self.system.var_of_site.get(_result_site(op_id, index))
            if var in involved:
                yield from self._entry_retargets(op_id, "out_layouts", results, index, vid)
            results += 1

    def _entry_retargets(
        self, op_id: int, attribute: str, position: int, argument: int, vid: int
    ) -> Iterator[Edit]:
        attr = list(ir.ArrayAttr(self.program.ops[op_id].operation.attributes[attribute]))[position]
        try:
            old: Const = (
                encode.decode_transforms(ir.ArrayAttr(attr))
                if attribute == "in_transforms"
                else Reg(encode.decode_layout(attr))
            )
        except (ValueError, NotImplementedError):
            return
        value = self.program.values[vid]
        var = self.system.var_of_site.get(
            _result_site(op_id, argument)
            if attribute == "out_layouts"
            else _operand_site(op_id, argument)
        )
        free = self._unannotated_value((op_id,), var)
        for new in self._targets(old, value.shape, value.bitwidth, value.strides, free):
            yield Edit(
                RETARGET,
                (op_id,),
                old=old,
                new=new,
                attribute=attribute,
                position=position,
                argument=argument,
            )

    def _targets(
        self,
        old: Const,
        shape: tuple[int, ...],
        bitwidth: int | None,
        strides: tuple[int, ...] | None,
        free: Const | None = None,
    ) -> Iterator[Const]:
        wanted = self.wanted
        if free is not None and free in _named_targets(old, shape, bitwidth, strides, self.arch):
            wanted = [free, *wanted]  # (an odd layout the search happened on is no suggestion)
        return targets(old, shape, bitwidth, strides, self.arch, wanted)

    # --- removals and new casts ------------------------------------------------------

    def _drops(self, op_id: int) -> Iterator[Edit]:
        op = self.program.ops[op_id]
        if op.name == LAYOUT_CAST:
            yield Edit(DROP, (op_id,), old=cast_layout(self.program, op_id))
        elif op.name == WITH_TRANSFORMS:
            ops = self._same_ref_transforms(op_id)
            yield Edit(DROP, ops, old=cast_layout(self.program, op_id))

    def _new_casts(self) -> Iterator[Edit]:
        """A ``layout_cast`` to a wanted layout on a register value of the conflict: where
        it is defined (for every use), or just before the op of the conflict that uses it."""
        consumers = {e.origin for e in self.elements}
        for var in self.variables:
            variable = self.system.variables[var]
            if variable.kind != Kind.VECTOR:
                continue
            targets = [
                w for w in self.wanted if isinstance(w, Reg) and _fits_register(w, variable.shape)
            ]
            for site in variable.sites:
                vid = value_at(self.program, site)
                producer = self.program.values[vid].producer
                if site.role == Role.RESULT and self.program.ops[site.op].name != LAYOUT_CAST:
                    assert producer is not None
                    for new in targets:
                        yield Edit(ADD_CAST, (site.op,), new=new, value=vid, position=site.index)
                elif site.role == Role.OPERAND and site.op in consumers:
                    if self.program.ops[site.op].name == LAYOUT_CAST:
                        continue  # a cast before a cast: the second one's target is the edit
                    for new in targets:
                        yield Edit(
                            ADD_CAST, (site.op,), new=new, value=vid, use=(site.op, site.index)
                        )


def targets(
    old: Const,
    shape: tuple[int, ...],
    bitwidth: int | None,
    strides: tuple[int, ...] | None,
    arch: tuple[int, int],
    wanted: list[Const],
) -> Iterator[Const]:
    """Layouts of ``old``'s family a value of this type can take, ``wanted`` ones first."""
    fit: list[Const]
    options = [*wanted, *_named_targets(old, shape, bitwidth, strides, arch)]
    if isinstance(old, Reg):
        fit = [o for o in options if isinstance(o, Reg) and _fits_register(o, shape)]
    elif isinstance(old, Tmem):
        fit = [o for o in options if isinstance(o, Tmem) and hl.fits(o, shape)]
    else:
        fit = [
            o for o in options if isinstance(o, Smem) and hl.smem_valid(o, shape, strides, bitwidth)
        ]
    for option in dict.fromkeys(fit):
        if option != old:
            yield option


def _named_targets(
    old: Const,
    shape: tuple[int, ...],
    bitwidth: int | None,
    strides: tuple[int, ...] | None,
    arch: tuple[int, int],
) -> list[Const]:
    """The layouts of ``old``'s family an author would write for such a value."""
    if isinstance(old, Reg):
        return list(register_targets(shape, bitwidth, arch))
    if isinstance(old, Tmem):
        return list(tmem_targets(shape, bitwidth))
    return list(smem_targets(shape, bitwidth, strides))


def annotation_edits(program: Program, arch: tuple[int, int], op_id: int) -> Iterator[Edit]:
    """Edits of one annotation op, for a kernel whose rules could not even be derived
    (an annotation states a layout its value's shape cannot take): other targets, then
    removing it. Transforms stated alike for the same SMEM ref change together."""
    op = program.ops[op_id]
    old = cast_layout(program, op_id)
    if old is None or op.name not in (LAYOUT_CAST, TMEM_CAST, WITH_TRANSFORMS):
        return
    ops = _alike_transforms(program, op_id) if op.name == WITH_TRANSFORMS else (op_id,)
    value = program.values[op.results[0]]
    for new in targets(old, value.shape, value.bitwidth, value.strides, arch, []):
        yield Edit(RETARGET, ops, old=old, new=new)
    if op.name != TMEM_CAST:
        yield Edit(DROP, ops, old=old)


def _alike_transforms(program: Program, op_id: int) -> tuple[int, ...]:
    """The ``with_transforms`` ops stating the same transforms on the same SMEM allocation
    (the same value, or slices of one alias id)."""
    stated = cast_layout(program, op_id)

    def allocation(op: Op) -> object:
        source = program.values[op.operands[0]]
        producer = source.producer
        if producer is not None and producer.region is None:
            made = program.ops[producer.op]
            alias = made.operation.attributes
            if made.name == "mosaic_gpu.slice_smem" and "alias_id" in alias:
                return ("alias", str(alias["alias_id"]))
        return ("value", source.id)

    mine = allocation(program.ops[op_id])
    return tuple(
        op.id
        for op in program.ops
        if op.name == WITH_TRANSFORMS
        and allocation(op) == mine
        and cast_layout(program, op.id) == stated
    )


@lru_cache(maxsize=1024)
def register_targets(
    shape: tuple[int, ...], bitwidth: int | None, arch: tuple[int, int]
) -> tuple[Reg, ...]:
    """The named register layouts of ``arch`` a value of this shape and width can take.

    (Kept per type: a value of JAX's layouts hashes its layout when made, a walk over
    its tiling, and a diagnosis asks for the targets of the few types it edits again.)
    """
    # Blackwell's own layouts first: there, TMEM and tcgen05 speak them.
    order = HOPPER_NAMES if arch[0] < 10 else sorted(REGISTER_LAYOUTS, key=_hopper_name)
    names = [
        name
        for name in order
        if name not in _NOT_TARGETS
        and ("8BIT" not in name or bitwidth == 8)
        and ("UPCAST" not in name or (bitwidth or 32) < 8)
    ]
    targets = [Reg(REGISTER_LAYOUTS[name]) for name in names]
    if arch[0] >= 10 and len(shape) == 2 and shape[-1] % 16 == 0:
        targets.append(Reg(hl.m64_collective(shape[-1])))
    strided = hl.default_strided(shape, bitwidth)
    if strided is not None:
        targets.append(strided)
    return tuple(t for t in targets if _fits_register(t, shape))


def _hopper_name(name: str) -> bool:
    return name in HOPPER_NAMES


def tmem_targets(shape: tuple[int, ...], bitwidth: int | None) -> list[Tmem]:
    """The TMEM layouts ``tcgen05`` builds for a ref of this shape (default, half_lane,
    m64_collective), unpacked and packed."""
    if len(shape) != 2:
        return []
    rows, columns = shape
    out: list[Tmem] = []
    for packing in dict.fromkeys((1, 32 // (bitwidth or 32))):
        if rows == 128:
            out.append(Tmem(tcgen05.tmem_default_layout(packing)))
        if rows == 64 and columns % 16 == 0:
            if packing <= columns // 2:
                out.append(Tmem(tcgen05.tmem_half_lane_layout(columns, packing)))
            out.append(Tmem(tcgen05.tmem_m64_collective_layout(columns, packing)))
    return [t for t in out if hl.fits(t, shape)]


def smem_targets(
    shape: tuple[int, ...], bitwidth: int | None, strides: tuple[int, ...] | None
) -> list[Smem]:
    """The MMA-style transforms of an SMEM ref: tile (8, 8·s/bitwidth) with swizzle s,
    widest first (transposed on a transposed ref), then the 16-byte tile unswizzled."""
    if not bitwidth or len(shape) < 2:
        return []
    transposed = strides is not None and hl.is_transposed(strides)
    out = []
    for swizzle in (*hl.SWIZZLES, None):
        elems = 8 * (swizzle or 16) // bitwidth
        tile = (elems, 8) if transposed else (8, elems)
        value = Smem(tile, swizzle)
        if hl.fits(value, shape) and hl.smem_valid(value, shape, strides, bitwidth):
            out.append(value)
    return out


def _fits_register(value: Reg, shape: tuple[int, ...]) -> bool:
    """Fits, and tiles every dim (a layout tiling fewer dims is no cast an author writes)."""
    if value.is_splat:
        return False
    layout = value.layout
    if isinstance(layout, fa.TiledLayout) and len(layout.base_tile_shape) != len(shape):
        return False
    return hl.fits(value, shape)


def _result_site(op_id: int, index: int = 0) -> Site:
    return Site(op_id, Role.RESULT, index)


def _operand_site(op_id: int, index: int) -> Site:
    return Site(op_id, Role.OPERAND, index)


__all__ = [
    "ANNOTATIONS",
    "Candidates",
    "annotation_edits",
    "targets",
    "register_targets",
    "smem_targets",
    "tmem_targets",
]
