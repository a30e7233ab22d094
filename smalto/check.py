"""An independent checker for annotated Mosaic GPU modules.

``check(module, arch=...)`` reads the layout attributes already on a module
(written by smalto, by JAX's pass or by hand) and verifies, op by op and from
those attributes alone, that every op can be lowered with them:

- each op carries one ``in_/out_layouts`` entry per vector, one
  ``in_/out_transforms`` entry per transformable SMEM ref and one
  ``in_/out_tmem_layouts`` entry per TMEM ref, and every entry fits its value;
- each op's own requirements hold (MMA accumulators and operands, SMEM <->
  register and TMEM <-> register transfers, tilings that divide slices,
  reductions, broadcasts, reshapes, casts, loops...);
- between a producer and each consumer a register value only changes layout
  where that is free (from a splat), and a memory ref keeps its transforms.

It shares nothing with the solver but the hardware facts (``smalto.hw``) and
the program view (``smalto.program``): the requirements are written here again,
from the ops' semantics, so that a bug in a rule is not repeated by the check.
"""

from __future__ import annotations

import argparse
import math
import sys
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

from jax._src.lib.mlir import ir
from jax.experimental.mosaic.gpu import fragmented_array as fa
from jax.experimental.mosaic.gpu import tcgen05
from jax.experimental.mosaic.gpu import utils as mgpu_utils

from smalto.hw import encode
from smalto.hw import layouts as hl
from smalto.hw.numbers import prime_factors
from smalto.hw.transfers import Transfer, smem_transfer_supported, tmem_transfer_supported
from smalto.hw.values import Reg, Smem, Tmem
from smalto.program import Kind, Op, Program, Value, read_program
from smalto.validate import SUPPORTED_ARCHS, parse_arch

__all__ = ["Violation", "check", "check_main"]

IN, OUT = 0, 1
_PREFIX = {IN: "in", OUT: "out"}
_ROLE = {IN: "operand", OUT: "result"}
# Ops whose regions hold already-lowered code: nothing inside carries layouts.
_OPAQUE = frozenset({"mosaic_gpu.custom_primitive"})
_TERMINATORS = frozenset({"scf.yield", "scf.condition"})
_FOR_BOUNDS = 3  # scf.for: lower bound, upper bound, step come first


@dataclass(frozen=True, slots=True)
class Violation:
    """One requirement an annotated op does not meet."""

    location: str  # ``FILE:LINE:COL`` where known, else MLIR's text for the location
    op: str  # the op's name, e.g. ``mosaic_gpu.wgmma``
    message: str
    op_index: int  # the op's pre-order index in the module

    def __str__(self) -> str:
        return f"{self.location}: {self.op}: {self.message}"


def check(
    module: ir.Module, arch: tuple[int, int] = (9, 0), *, source_name: str | None = None
) -> list[Violation]:
    """Every violation of a lowering requirement in the annotated ``module``.

    Empty when the annotations are consistent. ``source_name`` replaces the
    parser's buffer name (``-``) in locations. Never modifies the module.
    """
    with module.context, ir.Location.unknown(module.context):
        program = read_program(module)
        checker = _Checker(program, tuple(arch), source_name)  # type: ignore[arg-type]
        checker.run()
    return sorted(checker.violations, key=lambda v: v.op_index)


# --- site layouts ------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class _Family:
    suffix: str  # attribute name after ``in_``/``out_``
    what: str  # how messages call the values


_LAYOUTS = _Family("layouts", "vector")
_TMEM = _Family("tmem_layouts", "TMEM ref")
_TRANSFORMS = _Family("transforms", "transformable SMEM ref")


def _family_of(value: Value) -> _Family | None:
    if value.kind == Kind.VECTOR:
        return _LAYOUTS
    if value.kind == Kind.TMEM:
        return _TMEM
    if value.kind == Kind.SMEM and value.transformable:
        return _TRANSFORMS
    return None


def _smem_positions(program: Program, ids: Sequence[int]) -> list[int]:
    return [i for i, v in enumerate(ids) if program.values[v].kind == Kind.SMEM]


Layout = Reg | Tmem | Smem


class _Checker:
    def __init__(self, program: Program, arch: tuple[int, int], source_name: str | None) -> None:
        self.program = program
        self.arch = arch
        self.source_name = source_name
        self.violations: list[Violation] = []
        # (op id, IN/OUT, operand/result index) -> the layout the attributes give it.
        self.sites: dict[tuple[int, int, int], Layout] = {}
        self.annotated: list[Op] = []

    # --- driver ------------------------------------------------------------------

    def run(self) -> None:
        for top in self.program.top_level:
            self._collect(self.program.ops[top])
        for op in self.annotated:
            self._decode(op)
        for op in self.annotated:
            rule = _RULES.get(op.name)
            if rule is None and (op.name.startswith("arith.") or op.name.startswith("math.")):
                rule = _elementwise
            if rule is not None:
                try:
                    rule(self, op)
                except Exception as error:  # noqa: BLE001 -- a broken op is a finding
                    self.report(op, f"cannot be checked: {type(error).__name__}: {error}")
            self._check_uses(op)
        self._check_aliases()
        self._check_free_refs()

    def _collect(self, op: Op) -> None:
        self.annotated.append(op)
        if op.name in _OPAQUE:
            return
        for region in op.regions:
            for _, body in region:
                for inner in body:
                    self._collect(self.program.ops[inner])

    def report(self, op: Op, message: str) -> None:
        self.violations.append(Violation(self._location(op), op.name, message, op.id))

    def _location(self, op: Op) -> str:
        location = op.location
        try:
            file = ir.FileLineColLoc(location)
        except (ValueError, TypeError):
            text = str(location)
            return text.removeprefix("loc(").removesuffix(")")
        name = file.filename
        if name == "-" and self.source_name is not None:
            name = self.source_name
        return f"{name}:{file.start_line}:{file.start_col}"

    # --- decoding the attributes ---------------------------------------------------

    def _decode(self, op: Op) -> None:
        values = self.program.values
        attributes = op.operation.attributes
        for role, ids in ((IN, op.operands), (OUT, op.results)):
            for family in (_LAYOUTS, _TMEM, _TRANSFORMS):
                positions = [i for i, v in enumerate(ids) if _family_of(values[v]) is family]
                name = f"{_PREFIX[role]}_{family.suffix}"
                if name not in attributes:
                    if positions:
                        self.report(op, f"has no {name} for its {len(positions)} {family.what}(s)")
                    continue
                try:
                    entries = list(ir.ArrayAttr(attributes[name]))
                except (ValueError, TypeError):
                    self.report(op, f"{name} is not an array: {attributes[name]}")
                    continue
                if (
                    op.name in _OPAQUE
                    and family is _TRANSFORMS
                    and len(entries) != len(positions)
                    and len(entries) == len(smem := _smem_positions(self.program, ids))
                ):
                    # A custom primitive declares transforms for every SMEM ref
                    # it takes, barriers included (which have none).
                    entries = [e for e, i in zip(entries, smem, strict=True) if i in positions]
                if len(entries) != len(positions):
                    self.report(
                        op,
                        f"{name} has {len(entries)} entries for {len(positions)} {family.what}(s)",
                    )
                    continue
                for index, entry in zip(positions, entries, strict=True):
                    layout = self._decode_entry(op, role, index, family, entry)
                    if layout is not None:
                        self.sites[(op.id, role, index)] = layout

    def _decode_entry(
        self, op: Op, role: int, index: int, family: _Family, entry: ir.Attribute
    ) -> Layout | None:
        value = self.value(op, role, index)
        where = f"{_ROLE[role]} #{index}"
        try:
            if family is _LAYOUTS:
                layout: Layout = Reg(encode.decode_layout(entry))
            elif family is _TMEM:
                layout = Tmem(encode.decode_tmem_layout(entry))
            else:
                tiling, swizzle = encode.decode_transforms(ir.ArrayAttr(entry))
                layout = Smem(tiling)
                if not self._swizzle_ok(op, where, value, tiling, swizzle):
                    return None
        except Exception as error:  # noqa: BLE001 -- any undecodable entry is a finding
            self.report(op, f"cannot read the {family.suffix} entry of {where} ({entry}): {error}")
            return None
        if isinstance(layout, Smem) and len(layout.tiling or ()) > len(value.shape):
            self.report(op, f"{where} of shape {value.shape} cannot be {_name(layout)}")
            return None
        if not hl.fits(layout, value.shape):
            self.report(op, f"{where} of shape {value.shape} cannot be laid out as {_name(layout)}")
            return None
        return layout

    def _swizzle_ok(
        self,
        op: Op,
        where: str,
        value: Value,
        tiling: tuple[int, ...] | None,
        swizzle: int | None,
    ) -> bool:
        if tiling is None or swizzle is None or value.strides is None or value.bitwidth is None:
            return True
        if len(tiling) > len(value.strides):
            self.report(op, f"{where}: tiling {tiling} has more dims than {value.type}")
            return False
        try:
            implied = hl.swizzle_for(tiling, value.strides, value.bitwidth)
        except ValueError as error:
            self.report(op, f"{where}: {error}")
            return False
        if implied != swizzle:
            self.report(
                op,
                f"{where}: swizzle {swizzle} does not match tiling {tiling}, which implies "
                f"{implied} for {value.type}",
            )
            return False
        return True

    # --- access -----------------------------------------------------------------------

    def value(self, op: Op, role: int, index: int) -> Value:
        ids = op.operands if role == IN else op.results
        return self.program.values[ids[index]]

    def get(self, op: Op, role: int, index: int) -> Layout | None:
        return self.sites.get((op.id, role, index))

    def reg(self, op: Op, role: int, index: int) -> Reg | None:
        layout = self.get(op, role, index)
        return layout if isinstance(layout, Reg) else None

    def smem(self, op: Op, role: int, index: int) -> Smem | None:
        layout = self.get(op, role, index)
        return layout if isinstance(layout, Smem) else None

    def tmem(self, op: Op, role: int, index: int) -> Tmem | None:
        layout = self.get(op, role, index)
        return layout if isinstance(layout, Tmem) else None

    def vector_sites(self, op: Op) -> list[tuple[int, int]]:
        values = self.program.values
        sites = [(IN, i) for i, v in enumerate(op.operands) if values[v].kind == Kind.VECTOR]
        sites += [(OUT, i) for i, v in enumerate(op.results) if values[v].kind == Kind.VECTOR]
        return sites

    # --- common requirements ----------------------------------------------------------------

    def expect(self, op: Op, role: int, index: int, wanted: Layout, why: str) -> None:
        got = self.get(op, role, index)
        if got is not None and got != wanted:
            self.report(
                op, f"{_ROLE[role]} #{index} is {_name(got)} but {why} must be {_name(wanted)}"
            )

    def same(self, op: Op, sites: Sequence[tuple[int, int]], why: str) -> None:
        """All of ``sites`` (role, index) that have a layout have the same one."""
        known = [(site, self.get(op, *site)) for site in sites]
        known = [(site, layout) for site, layout in known if layout is not None]
        if not known:
            return
        (first_site, first), *rest = known
        for site, layout in rest:
            if layout != first:
                self.report(
                    op,
                    f"{_ROLE[site[0]]} #{site[1]} is {_name(layout)} but "
                    f"{_ROLE[first_site[0]]} #{first_site[1]} is {_name(first)}; {why}",
                )

    def not_kinds(self, op: Op, role: int, index: int, *, splat: bool, strided: bool) -> None:
        layout = self.reg(op, role, index)
        if layout is None:
            return
        if splat and layout.is_splat:
            self.report(op, f"{_ROLE[role]} #{index} cannot be a splat ({_name(layout)})")
        if strided and layout.is_strided:
            self.report(op, f"{_ROLE[role]} #{index} cannot be strided ({_name(layout)})")

    def divides(self, op: Op, role: int, index: int, multiple: Sequence[int], what: str) -> None:
        """The tile of a site divides ``multiple`` (aligned on the trailing dims)."""
        layout = self.get(op, role, index)
        tile = _tile_of(layout)
        if tile is None:
            return
        if len(tile) > len(multiple) or any(
            m % t for t, m in zip(reversed(tile), reversed(tuple(multiple)), strict=False)
        ):
            self.report(
                op,
                f"the tile {tile} of {_ROLE[role]} #{index} does not divide {what} "
                f"{tuple(multiple)}",
            )

    def mma_tiling(
        self, op: Op, index: int, bitwidth: int, *, unswizzled: bool, operand: str
    ) -> None:
        layout = self.smem(op, IN, index)
        if layout is None:
            return
        tiling = layout.tiling
        if _transposed(self.value(op, IN, index)):
            tiling = _swap(tiling)
        swizzles = (16, 32, 64, 128) if unswizzled else (32, 64, 128)
        valid = {(8, 8 * s // bitwidth) for s in swizzles}
        if tiling not in valid:
            self.report(
                op,
                f"{operand} (operand #{index}) is tiled {layout.tiling}; an MMA operand of "
                f"{bitwidth}-bit elements needs one of {sorted(valid)}"
                + (" (logically, it is transposed)" if tiling != layout.tiling else ""),
            )

    def known_divisor(self, size: int, operand: int, op: Op) -> int:
        """The largest divisor of ``size`` known to divide a dynamic index operand."""
        value = op.operation.operands[operand]
        if isinstance(value.type, ir.VectorType):
            return 1  # gather indices: nothing is known of the elements
        owner = value.owner
        if isinstance(owner, ir.OpView) and owner.operation.name == "arith.constant":
            attr = owner.operation.attributes["value"]
            if isinstance(attr, ir.IntegerAttr):
                return math.gcd(size, ir.IntegerAttr(attr).value)
        known = 1
        for factor in prime_factors(size):
            if mgpu_utils.is_known_divisible(value, known * factor):
                known *= factor
        return known

    # --- producers and consumers ------------------------------------------------------------

    def produced_layout(self, vid: int) -> Layout | None:
        """The layout a value has where it is defined; None where nothing says."""
        producer = self.program.values[vid].producer
        if producer is None:
            return None
        if producer.region is None:
            return self.sites.get((producer.op, OUT, producer.index))
        owner = self.program.ops[producer.op]
        match owner.name, producer.region:
            case "scf.for", 0 if producer.index >= 1:
                return self.sites.get((owner.id, IN, _FOR_BOUNDS + producer.index - 1))
            case "scf.while", 0:
                return self.sites.get((owner.id, IN, producer.index))
            case "scf.while", 1:
                return self.sites.get((owner.id, OUT, producer.index))
            case "mosaic_gpu.warp_map", 0:
                return self.sites.get((owner.id, IN, producer.index))
        return None

    def _check_uses(self, op: Op) -> None:
        """Each operand's layout is reachable from what its producer gives."""
        values = self.program.values
        for index, vid in enumerate(op.operands):
            value = values[vid]
            family = _family_of(value)
            if family is None:
                continue
            used = self.get(op, IN, index)
            given = self.produced_layout(vid)
            if used is None or given is None or used == given:
                continue
            if family is _LAYOUTS:
                assert isinstance(used, Reg) and isinstance(given, Reg)
                if hl.relayout_allowed(given, used, value.bitwidth or 0, strict=True):
                    continue
                self.report(
                    op,
                    f"operand #{index} is used as {_name(used)} but produced as "
                    f"{_name(given)}; only a splat may change layout between ops "
                    "(use mosaic_gpu.layout_cast)",
                )
            else:
                self.report(
                    op,
                    f"operand #{index} is used with {family.suffix} {_name(used)} but the "
                    f"ref was defined with {_name(given)}",
                )

    def _check_aliases(self) -> None:
        """Slices of SMEM/TMEM with the same offset and alias id are one ref."""
        seen: dict[tuple[str, int, int], tuple[Op, Layout]] = {}
        for op in self.annotated:
            if op.name not in ("mosaic_gpu.slice_smem", "mosaic_gpu.slice_tmem"):
                continue
            attributes = op.operation.attributes
            if "alias_id" not in attributes:
                continue
            layout = self.get(op, OUT, 0)
            if layout is None:
                continue
            offset = ir.IntegerAttr(attributes["offset"]).value
            key = (op.name, offset, ir.IntegerAttr(attributes["alias_id"]).value)
            if key not in seen:
                seen[key] = (op, layout)
            elif seen[key][1] != layout:
                first, first_layout = seen[key]
                self.report(
                    op,
                    f"aliases the slice at {self._location(first)} (offset {offset}, alias_id "
                    f"{key[2]}) but is {_name(layout)} where that one is {_name(first_layout)}",
                )

    def _check_free_refs(self) -> None:
        """A ref whose definition says nothing (a function argument) has one layout at all uses."""
        first_use: dict[int, tuple[Op, int, Layout]] = {}
        for op in self.annotated:
            for index, vid in enumerate(op.operands):
                value = self.program.values[vid]
                if _family_of(value) in (None, _LAYOUTS) or self.produced_layout(vid) is not None:
                    continue
                layout = self.get(op, IN, index)
                if layout is None:
                    continue
                if vid not in first_use:
                    first_use[vid] = (op, index, layout)
                elif first_use[vid][2] != layout:
                    other, other_index, other_layout = first_use[vid]
                    self.report(
                        op,
                        f"operand #{index} is {_name(layout)} but the same ref is "
                        f"{_name(other_layout)} at operand #{other_index} of {other.name} "
                        f"({self._location(other)})",
                    )


# --- layout semantics -------------------------------------------------------------------


def _tile_of(layout: Layout | None) -> tuple[int, ...] | None:
    """The tile a tiling constraint sees; None where any slicing is fine."""
    match layout:
        case Reg(layout=fa.TiledLayout() as tiled):
            return tuple(tiled.base_tile_shape)
        case Smem(tiling=tiling):
            return tiling
        case Tmem(layout=tmem):
            return tuple(tmem.base_tile_shape)
    return None


def _swap(tiling: tuple[int, ...] | None) -> tuple[int, ...] | None:
    """A 2D tiling read through a transposed view; None (untiled) stays None."""
    if tiling is None:
        return None
    if len(tiling) != 2:
        return (-1,)  # never a valid MMA tiling: tiled and untiled dims would swap
    return (tiling[1], tiling[0])


def _transposed(value: Value) -> bool:
    strides = value.strides or ()
    return any(later > earlier for earlier, later in zip(strides, strides[1:], strict=False))


def _reduced_shape(shape: tuple[int, ...], axes: Sequence[int], keep: bool) -> tuple[int, ...]:
    if keep:
        return tuple(1 if i in axes else d for i, d in enumerate(shape))
    return tuple(d for i, d in enumerate(shape) if i not in axes)


def _reduce(layout: Reg, axes: Sequence[int], rank: int, keep: bool) -> Reg | None:
    """The layout of a reduction over ``axes``; None where the lowering has no such reduction."""
    axes = sorted(axes)
    inner = layout.layout
    if isinstance(inner, fa.WGSplatFragLayout):
        return hl.splat(_reduced_shape(inner.shape, axes, keep))
    if isinstance(inner, fa.WGStridedFragLayout):
        # Each thread keeps whole vectors only when the reduced axes are major
        # to at least one full warpgroup's worth of vectors.
        minor = math.prod(inner.shape[axes[-1] + 1 :])
        if minor % (inner.vec_size * hl.WARPGROUP_SIZE):
            return None
        return hl.strided(_reduced_shape(inner.shape, axes, keep), inner.vec_size)
    if keep:
        return None
    tile_rank = len(inner.base_tile_shape)
    first_tiled = rank - tile_rank
    in_tile = [a - first_tiled for a in axes if a >= first_tiled]
    return Reg(inner.reduce(in_tile)) if in_tile else layout


def _reshape(layout: Reg, source: tuple[int, ...], target: tuple[int, ...]) -> Reg | None:
    """The layout of a reshape that moves no element between threads; None otherwise."""
    inner = layout.layout
    if isinstance(inner, fa.WGSplatFragLayout):
        return hl.splat(target)
    if isinstance(inner, fa.WGStridedFragLayout):
        return hl.strided(target, inner.vec_size)
    tile = tuple(inner.base_tile_shape)
    n = len(tile)
    if len(target) < n or len(source) < n:
        return None
    if any(s % t for s, t in zip(source[-n:], tile, strict=True)):
        return None
    # Only the untiled dims and the major tiled dim may change, and the latter
    # must still hold whole tiles.
    if source[len(source) - n + 1 :] != target[len(target) - n + 1 :]:
        return None
    if target[-n] % tile[0]:
        return None
    return layout


def _transpose_tiling(
    tiling: tuple[int, ...] | None, permutation: Sequence[int]
) -> tuple[int, ...] | None | bool:
    """The tiling of a permuted ref; False where tiled and untiled dims would mix."""
    if tiling is None:
        return None
    first_tiled = len(permutation) - len(tiling)
    minor = permutation[first_tiled:]
    if any(dim < first_tiled for dim in minor):
        return False
    return tuple(tiling[dim - first_tiled] for dim in minor)


def _collapse_tiling(
    tiling: tuple[int, ...] | None, shape: tuple[int, ...], groups: Sequence[int]
) -> tuple[int, ...] | None | bool:
    """The tiling after merging groups of dims; False where the tiles do not survive."""
    if tiling is None:
        return None
    n = len(tiling)
    tiled_shape = shape[len(shape) - n :]
    if any(s % t for s, t in zip(tiled_shape, tiling, strict=False)):
        return False
    new: list[int] = []
    # Walk the groups from the minor end; each consumes the tiled dims it merges.
    remaining_tiles, remaining_dims = list(tiling), list(tiled_shape)
    for size in reversed(groups):
        if not remaining_tiles:
            break
        if size > len(remaining_tiles):
            return False  # would merge tiled with untiled dims
        tiles, dims = remaining_tiles[-size:], remaining_dims[-size:]
        del remaining_tiles[-size:], remaining_dims[-size:]
        # Within a group, read major to minor: unit tiles, at most one partial
        # tile, then tiles spanning their whole dim.
        k = len(tiles)
        while k and tiles[k - 1] == dims[k - 1]:
            k -= 1
        if any(t != 1 for t in tiles[: max(k - 1, 0)]):
            return False
        new.append(math.prod(tiles))
    return tuple(reversed(new))


def _name(layout: Layout | None) -> str:
    match layout:
        case None:
            return "nothing"
        case Reg(layout=inner):
            name = _NAMED.get(inner)
            if name is not None:
                return name
            if isinstance(inner, fa.WGSplatFragLayout):
                return f"splat{inner.shape}"
            if isinstance(inner, fa.WGStridedFragLayout):
                return f"strided{inner.shape}/vec{inner.vec_size}"
            return str(inner)
        case Tmem(layout=inner):
            return f"TMEM {inner}"
        case Smem(tiling=None):
            return "untiled"
        case Smem(tiling=tiling):
            return f"tiled {tiling}"
    return str(layout)


_NAMED: dict[object, str] = {}
for _name_, _layout_ in (
    ("WGMMA", fa.WGMMA_LAYOUT),
    ("WGMMA_8BIT", fa.WGMMA_LAYOUT_8BIT),
    ("WGMMA_TRANSPOSED", fa.WGMMA_TRANSPOSED_LAYOUT),
    ("WGMMA_ROW", fa.WGMMA_ROW_LAYOUT),
    ("WGMMA_COL", fa.WGMMA_COL_LAYOUT),
    ("WGMMA_UPCAST_2X", fa.WGMMA_LAYOUT_UPCAST_2X),
    ("WGMMA_UPCAST_4X", fa.WGMMA_LAYOUT_UPCAST_4X),
    ("TCGEN05", fa.TCGEN05_LAYOUT),
    ("TCGEN05_TRANSPOSED", fa.TCGEN05_TRANSPOSED_LAYOUT),
    ("TCGEN05_ROW", fa.TCGEN05_ROW_LAYOUT),
    ("TCGEN05_COL", fa.TCGEN05_COL_LAYOUT),
    ("TMEM_NATIVE", fa.TMEM_NATIVE_LAYOUT),
    ("TMA_INDICES", fa.TMA_INDICES_LAYOUT),
    ("TMA_INDICES_4", fa.TMA_INDICES_4_LAYOUT),
):
    _NAMED.setdefault(_layout_, _name_)  # equal layouts keep their first name


def _bool_attr(op: Op, name: str) -> bool | None:
    attributes = op.operation.attributes
    if name not in attributes:
        return None
    return bool(ir.BoolAttr(attributes[name]).value)


def _ints(attr: ir.Attribute) -> tuple[int, ...]:
    if isinstance(attr, ir.DenseI64ArrayAttr):
        return tuple(attr)
    if isinstance(attr, ir.DenseI32ArrayAttr):
        return tuple(attr)
    return tuple(ir.IntegerAttr(a).value for a in ir.ArrayAttr(attr))


# --- per-op requirements -------------------------------------------------------------------

Rule = Callable[[_Checker, Op], None]
_RULES: dict[str, Rule] = {}


def _rule(*names: str) -> Callable[[Rule], Rule]:
    def register(fn: Rule) -> Rule:
        for name in names:
            _RULES[name] = fn
        return fn

    return register


def _elementwise(c: _Checker, op: Op) -> None:
    """Elementwise ops compute each element in place: one layout for all their vectors."""
    c.same(op, c.vector_sites(op), "an elementwise op keeps one layout")


@_rule("arith.constant")
def _constant(c: _Checker, op: Op) -> None:
    if not op.results or c.program.values[op.results[0]].kind != Kind.VECTOR:
        return
    attr = op.operation.attributes["value"]
    shape = c.value(op, OUT, 0).shape
    if isinstance(attr, ir.DenseElementsAttr) and ir.DenseElementsAttr(attr).is_splat:
        c.expect(op, OUT, 0, hl.splat(shape), "a splat constant")
    else:
        c.not_kinds(op, OUT, 0, splat=True, strided=False)


@_rule("mosaic_gpu.vector_load")
def _vector_load(c: _Checker, op: Op) -> None:
    c.not_kinds(op, OUT, 0, splat=True, strided=False)
    optimized = _bool_attr(op, "optimized")
    mode = Transfer.UNOPTIMIZED if optimized is False else Transfer.OPTIMIZED
    _smem_transfer(c, op, smem=0, reg=(OUT, 0), mode=mode)


def _store_mode(op: Op) -> Transfer:
    optimized = _bool_attr(op, "optimized")
    if optimized is None:
        return Transfer.DOWNGRADABLE
    return Transfer.OPTIMIZED if optimized else Transfer.UNOPTIMIZED


@_rule("mosaic_gpu.vector_store")
def _vector_store(c: _Checker, op: Op) -> None:
    _smem_transfer(c, op, smem=1, reg=(IN, 0), mode=_store_mode(op))


@_rule("mosaic_gpu.async_store_smem")
def _async_store_smem(c: _Checker, op: Op) -> None:
    _vector_store(c, op)
    c.not_kinds(op, IN, 0, splat=True, strided=True)
    value = c.reg(op, IN, 0)
    if value is None or not value.is_tiled:
        return
    # The lowering stores each register with one st.async of 32 or 64 bits,
    # from threads that each own distinct elements.
    layout = value.layout
    if any(isinstance(d, fa.Replicated) for d in (*layout.warp_dims, *layout.lane_dims)):
        c.report(op, f"the lowering cannot store {_name(value)}: it replicates elements")
    bits = layout.vector_length * (c.value(op, IN, 0).bitwidth or 0)
    if bits not in (32, 64):
        c.report(
            op, f"the lowering stores 32- or 64-bit registers; {_name(value)} has {bits}-bit ones"
        )


def _smem_transfer(c: _Checker, op: Op, smem: int, reg: tuple[int, int], mode: Transfer) -> None:
    ref = c.value(op, IN, smem)
    if ref.kind != Kind.SMEM:
        return
    tiles, registers = c.smem(op, IN, smem), c.reg(op, *reg)
    if tiles is None or registers is None or ref.strides is None or ref.bitwidth is None:
        return
    if not smem_transfer_supported(
        tiles.tiling, registers.layout, ref.shape, ref.strides, ref.bitwidth, mode
    ):
        c.report(
            op,
            f"no {mode.value} transfer between registers in {_name(registers)} and the SMEM "
            f"ref {ref.type} {_name(tiles)}",
        )


@_rule("mosaic_gpu.multimem_load_reduce", "mosaic_gpu.broadcasted_iota")
def _not_splat_result(c: _Checker, op: Op) -> None:
    c.not_kinds(op, OUT, 0, splat=True, strided=False)


@_rule("mosaic_gpu.optimization_barrier")
def _optimization_barrier(c: _Checker, op: Op) -> None:
    for i, vid in enumerate(op.operands):
        if c.program.values[vid].kind == Kind.VECTOR:
            c.same(op, [(IN, i), (OUT, i)], "a value passes an optimization barrier unchanged")


@_rule("mosaic_gpu.layout_cast")
def _layout_cast(c: _Checker, op: Op) -> None:
    wanted = Reg(encode.decode_layout(op.operation.attributes["new_layout"]))
    c.expect(op, OUT, 0, wanted, "the result of the cast")
    source, result = c.reg(op, IN, 0), c.reg(op, OUT, 0)
    if source is None or result is None:
        return
    bitwidth = c.value(op, IN, 0).bitwidth or 0
    # A strict cast converts only from a splat.
    strict = bool(_bool_attr(op, "strict"))
    if not hl.relayout_allowed(source, result, bitwidth, strict=strict):
        c.report(op, f"cannot relayout {_name(source)} to {_name(result)}")


@_rule("mosaic_gpu.wgmma")
def _wgmma(c: _Checker, op: Op) -> None:
    for role in (IN, OUT):
        c.expect(op, role, 0, Reg(hl.WGMMA), "the accumulator")
    b = c.value(op, IN, 2)
    bitwidth = b.bitwidth or 0
    c.mma_tiling(op, 2, bitwidth, unswizzled=False, operand="B")
    a = c.value(op, IN, 1)
    if a.kind == Kind.VECTOR:
        wanted = hl.WGMMA_8BIT if a.bitwidth == 8 else hl.WGMMA
        c.expect(op, IN, 1, Reg(wanted), "a register A operand")
        return
    a_tiles, b_tiles = c.smem(op, IN, 1), c.smem(op, IN, 2)
    if a_tiles is None or b_tiles is None:
        return
    # Both operands are read with the same physical tiles.
    expected = b_tiles.tiling if _transposed(a) == _transposed(b) else _swap(b_tiles.tiling)
    if a_tiles.tiling != expected:
        c.report(
            op,
            f"A is {_name(a_tiles)} but B is {_name(b_tiles)}; A must be tiled "
            f"{expected} to match B",
        )


@_rule("mosaic_gpu.mma")
def _mma(c: _Checker, op: Op) -> None:
    m, n = c.value(op, IN, 0).shape
    try:
        layouts = hl.mma_layouts(c.value(op, IN, 1).type.element_type, m, n)
    except ValueError as e:
        c.report(op, str(e))
        return
    c.expect(op, IN, 0, Reg(layouts.acc), "the accumulator")
    c.expect(op, OUT, 0, Reg(layouts.acc), "the accumulator")
    c.expect(op, IN, 1, Reg(layouts.lhs), "operand A")
    c.expect(op, IN, 2, Reg(layouts.rhs), "operand B")


@_rule("vector.broadcast")
def _vector_broadcast(c: _Checker, op: Op) -> None:
    c.expect(op, OUT, 0, hl.splat(c.value(op, OUT, 0).shape), "a broadcast scalar")


@_rule("vector.multi_reduction")
def _multi_reduction(c: _Checker, op: Op) -> None:
    c.not_kinds(op, IN, 0, splat=False, strided=True)
    c.same(op, [(IN, 1), (OUT, 0)], "the accumulator and the result are one value")
    source = c.reg(op, IN, 0)
    result = c.reg(op, OUT, 0)
    if source is None or result is None:
        return
    dims = _ints(op.operation.attributes["reduction_dims"])
    rank = len(c.value(op, IN, 0).shape)
    if source.is_tiled and len(source.layout.base_tile_shape) != rank:
        # JAX's lowering of this op looks the reduced dim up in the tiling by
        # its index in the vector: a tiling of fewer dims is misread or fails.
        c.report(
            op,
            f"the source is {_name(source)}, a tiling of {len(source.layout.base_tile_shape)} "
            f"of its {rank} dims; the lowering reduces only fully tiled sources",
        )
    reduced = _reduce(source, dims, rank, keep=False)
    if reduced is None:
        c.report(op, f"cannot reduce {_name(source)} over dims {dims}")
    elif reduced != result:
        c.report(
            op,
            f"reducing {_name(source)} over dims {dims} gives {_name(reduced)}, "
            f"not the result's {_name(result)}",
        )


@_rule("mosaic_gpu.broadcast_in_dim")
def _broadcast_in_dim(c: _Checker, op: Op) -> None:
    source, result = c.reg(op, IN, 0), c.reg(op, OUT, 0)
    if source is None or result is None:
        return
    src_shape, dst_shape = c.value(op, IN, 0).shape, c.value(op, OUT, 0).shape
    dims = _ints(op.operation.attributes["broadcast_dimensions"])
    origin = {d: s for s, d in enumerate(dims)}
    grown = [
        d for d in range(len(dst_shape)) if d in origin and src_shape[origin[d]] == 1 < dst_shape[d]
    ]
    added = [d for d in range(len(dst_shape)) if d not in origin]
    # The source must be the result with the broadcast dims reduced away.
    expected: Reg | None = result
    if grown:
        expected = _reduce(result, grown, len(dst_shape), keep=True)
    if expected is not None and added:
        expected = _reduce(expected, added, len(dst_shape), keep=False)
    if expected is None:
        c.report(op, f"cannot broadcast into {_name(result)} along dims {tuple(grown + added)}")
    elif expected != source:
        c.report(
            op,
            f"broadcasting into {_name(result)} needs the source in {_name(expected)}, "
            f"not {_name(source)}",
        )
    if result.is_tiled and len(result.layout.base_tile_shape) != len(dst_shape):
        c.report(
            op,
            f"the result is {_name(result)}, a tiling of {len(result.layout.base_tile_shape)} of "
            f"its {len(dst_shape)} dims; the lowering broadcasts only into fully tiled layouts",
        )
    if source.is_strided and result.is_strided:
        if not fa.is_supported_strided_layout_broadcast(source.layout, result.layout, dims):
            c.report(op, f"unsupported strided broadcast {_name(source)} -> {_name(result)}")
    elif type(source.layout) is not type(result.layout):
        c.report(op, f"cannot broadcast {_name(source)} into {_name(result)}")


@_rule("vector.shape_cast")
def _shape_cast(c: _Checker, op: Op) -> None:
    source, result = c.reg(op, IN, 0), c.reg(op, OUT, 0)
    if source is None or result is None:
        return
    src_shape, dst_shape = c.value(op, IN, 0).shape, c.value(op, OUT, 0).shape
    for a, b, a_shape, b_shape in (
        (source, result, src_shape, dst_shape),
        (result, source, dst_shape, src_shape),
    ):
        reshaped = _reshape(a, a_shape, b_shape)
        if reshaped is None:
            c.report(op, f"reshaping {_name(a)} from {a_shape} to {b_shape} moves elements")
            return
        if reshaped != b:
            c.report(
                op,
                f"reshaping {_name(a)} from {a_shape} to {b_shape} gives {_name(reshaped)}, "
                f"not {_name(b)}",
            )
            return


def _unit_strides(c: _Checker, op: Op) -> bool:
    strides = _ints(op.operation.attributes["strides"])
    if any(s != 1 for s in strides):
        c.report(op, f"non-unit strides {strides} cannot be lowered")
        return False
    return True


@_rule("vector.extract_strided_slice")
def _extract_strided_slice(c: _Checker, op: Op) -> None:
    if not _unit_strides(c, op):
        return
    c.same(op, [(IN, 0), (OUT, 0)], "a slice keeps the source's layout")
    c.not_kinds(op, OUT, 0, splat=True, strided=True)
    offsets = _ints(op.operation.attributes["offsets"])
    c.divides(op, IN, 0, offsets, "the slice offsets")


@_rule("vector.extract")
def _extract(c: _Checker, op: Op) -> None:
    source_shape = c.value(op, IN, 0).shape
    if c.value(op, OUT, 0).kind != Kind.VECTOR:
        c.expect(op, IN, 0, hl.splat(source_shape), "a vector a scalar is extracted from")
        return
    c.same(op, [(IN, 0), (OUT, 0)], "a sub-vector keeps the source's layout")
    c.not_kinds(op, OUT, 0, splat=True, strided=True)
    c.divides(op, IN, 0, source_shape, "the source shape")
    c.divides(op, OUT, 0, c.value(op, OUT, 0).shape, "the result shape")


@_rule("vector.insert_strided_slice")
def _insert_strided_slice(c: _Checker, op: Op) -> None:
    if not _unit_strides(c, op):
        return
    c.same(op, [(IN, 0), (IN, 1), (OUT, 0)], "an inserted slice keeps the layout")
    c.not_kinds(op, IN, 1, splat=True, strided=True)
    c.divides(op, IN, 1, _ints(op.operation.attributes["offsets"]), "the slice offsets")


# --- memory refs ------------------------------------------------------------------------------


def _untiled(c: _Checker, op: Op, index: int, what: str) -> None:
    c.expect(op, IN, index, Smem(None), what)


@_rule("memref.load")
def _memref_load(c: _Checker, op: Op) -> None:
    _untiled(c, op, 0, "a ref read by memref.load")


@_rule("memref.store")
def _memref_store(c: _Checker, op: Op) -> None:
    _untiled(c, op, 1, "a ref written by memref.store")


@_rule("mosaic_gpu.try_cluster_cancel", "mosaic_gpu.query_cluster_cancel")
def _cluster_cancel(c: _Checker, op: Op) -> None:
    _untiled(c, op, 0, "the cancellation response")


@_rule("memref.cast", "mosaic_gpu.get_cluster_ref")
def _same_ref(c: _Checker, op: Op) -> None:
    c.same(op, [(IN, 0), (OUT, 0)], "the result is the same ref")


@_rule("mosaic_gpu.with_transforms")
def _with_transforms(c: _Checker, op: Op) -> None:
    attr = ir.ArrayAttr(op.operation.attributes["transforms"])
    tiling, swizzle = encode.decode_transforms(attr)
    ref = c.value(op, IN, 0)
    c._swizzle_ok(op, "the transforms attribute", ref, tiling, swizzle)
    for role in (IN, OUT):
        c.expect(op, role, 0, Smem(tiling), "the ref given transforms")


@_rule("memref.subview")
def _subview(c: _Checker, op: Op) -> None:
    c.same(op, [(IN, 0), (OUT, 0)], "a window keeps the ref's tiling")
    view = op.view
    if any(s != 1 for s in view.static_strides):
        c.report(op, "non-unit strides cannot be lowered")
        return
    source_shape = c.value(op, IN, 0).shape
    dynamic = iter(range(1, 1 + len(view.offsets)))
    multiple: list[int] = []
    for dim, (size, offset) in enumerate(zip(view.static_sizes, view.static_offsets, strict=True)):
        offset_operand = next(dynamic) if ir.ShapedType.is_dynamic_size(offset) else None
        if ir.ShapedType.is_dynamic_size(size):
            multiple = []
            continue
        divisor = math.gcd(size, source_shape[dim])
        if offset_operand is None:
            divisor = math.gcd(divisor, offset)
        else:
            divisor = c.known_divisor(divisor, offset_operand, op)
        multiple.append(divisor)
    c.divides(op, IN, 0, multiple, "the window's sizes and offsets, known divisors")


@_rule("memref.transpose")
def _transpose(c: _Checker, op: Op) -> None:
    source, result = c.smem(op, IN, 0), c.smem(op, OUT, 0)
    if source is None or result is None:
        return
    permutation = tuple(
        ir.AffineDimExpr(e).position
        for e in ir.AffineMapAttr(op.operation.attributes["permutation"]).value.results
    )
    expected = _transpose_tiling(source.tiling, permutation)
    if expected is False:
        c.report(op, f"permutation {permutation} mixes tiled and untiled dims of {_name(source)}")
    elif Smem(expected) != result:  # type: ignore[arg-type]
        c.report(
            op,
            f"transposing {_name(source)} by {permutation} gives tiling {expected}, "
            f"not {_name(result)}",
        )


@_rule("memref.expand_shape")
def _expand_shape(c: _Checker, op: Op) -> None:
    c.same(op, [(IN, 0), (OUT, 0)], "an expanded ref keeps its tiling")
    attributes = op.operation.attributes
    groups = [len(ir.ArrayAttr(g)) for g in ir.ArrayAttr(attributes["reassociation"])]
    output_shape = list(ir.DenseI64ArrayAttr(attributes["static_output_shape"]))
    kept: list[int] = []
    for dim, group in zip(reversed(output_shape), reversed(groups), strict=False):
        if ir.ShapedType.is_dynamic_size(dim) or group > 1:
            break
        kept.append(dim)
    c.divides(op, IN, 0, tuple(reversed(kept)), "the trailing dims the expansion keeps")


@_rule("memref.collapse_shape")
def _collapse_shape(c: _Checker, op: Op) -> None:
    source, result = c.smem(op, IN, 0), c.smem(op, OUT, 0)
    if source is None or result is None:
        return
    groups = [len(ir.ArrayAttr(g)) for g in ir.ArrayAttr(op.operation.attributes["reassociation"])]
    expected = _collapse_tiling(source.tiling, c.value(op, IN, 0).shape, groups)
    if expected is False:
        c.report(op, f"collapsing dims {groups} breaks the tiles of {_name(source)}")
    elif Smem(expected) != result:  # type: ignore[arg-type]
        c.report(
            op,
            f"collapsing {_name(source)} by groups {groups} gives tiling {expected}, "
            f"not {_name(result)}",
        )


# The operand segment of a TMA op's indices; before it, the refs and (for
# async_load) an optional barrier.
_INDEX_SEGMENT = {
    "mosaic_gpu.async_load": 3,
    "mosaic_gpu.async_store": 2,
    "mosaic_gpu.async_prefetch": 1,
}


def _first_index(op: Op) -> int:
    """The operand position of a TMA op's first index (segments before it may be empty)."""
    sizes = op.operation.attributes["operandSegmentSizes"]
    return sum(sizes[i] for i in range(_INDEX_SEGMENT[op.name]))  # type: ignore[index]


def _index_layouts(c: _Checker, op: Op) -> None:
    first = _first_index(op)
    for i in range(len(op.view.indices)):
        value = c.value(op, IN, first + i)
        if value.kind != Kind.VECTOR:
            continue
        if value.shape[0] % 16 == 0:
            wanted = hl.TMA_INDICES
        elif value.shape[0] % 4 == 0:
            wanted = hl.TMA_INDICES_4
        else:
            c.report(op, f"gather/scatter indices of shape {value.shape} are not a multiple of 4")
            continue
        c.expect(op, IN, first + i, Reg(wanted), "gather/scatter indices")


@_rule("mosaic_gpu.async_load", "mosaic_gpu.async_store")
def _async_copy(c: _Checker, op: Op) -> None:
    view = op.view
    is_load = op.name == "mosaic_gpu.async_load"
    smem = 1 if is_load else 0
    first = _first_index(op)
    multiple: list[int] = []
    gather = False
    for i, size in enumerate(view.slice_lengths):
        if size == -1:
            continue  # squeezed away: not a dim of the SMEM ref
        if c.value(op, IN, first + i).kind == Kind.VECTOR:
            gather = True
            multiple.append(size)
        else:
            multiple.append(c.known_divisor(size, first + i, op))
    c.divides(op, IN, smem, multiple, "the copied slice (sizes and known offset divisors)")
    if gather:
        bitwidth = c.value(op, IN, 0).bitwidth or 8
        divisor = 256 // bitwidth  # rows move four at a time, 1024 bits aligned
        lengths = [s for s in view.slice_lengths if s != -1]
        if lengths and lengths[-1] % divisor:
            c.report(op, f"a gather's minor dim ({lengths[-1]}) is not a multiple of {divisor}")
        tiles = c.smem(op, IN, smem)
        if tiles is not None and tiles.tiling and tiles.tiling[-1] % divisor:
            c.report(
                op,
                f"a gather needs the minor tile of {_name(tiles)} to be a multiple of "
                f"{divisor} elements",
            )
    _index_layouts(c, op)


@_rule("mosaic_gpu.async_prefetch")
def _async_prefetch(c: _Checker, op: Op) -> None:
    _index_layouts(c, op)


# --- tensor memory ------------------------------------------------------------------------------


def _tmem_for(shape: tuple[int, ...], collective: bool, packing: int) -> Tmem | None:
    try:
        return hl.tmem_for_shape(shape, collective, packing)
    except ValueError:
        return None


@_rule("mosaic_gpu.tmem_alloc")
def _tmem_alloc(c: _Checker, op: Op) -> None:
    _untiled(c, op, 0, "the SMEM word receiving a TMEM address")


@_rule("mosaic_gpu.tmem_layout_cast")
def _tmem_layout_cast(c: _Checker, op: Op) -> None:
    wanted = Tmem(encode.decode_tmem_layout(op.operation.attributes["new_layout"]))
    for role in (IN, OUT):
        c.expect(op, role, 0, wanted, "a ref cast to a TMEM layout")


@_rule("mosaic_gpu.tcgen05_mma")
def _tcgen05_mma(c: _Checker, op: Op) -> None:
    view = op.view
    collective = bool(_bool_attr(op, "collective"))
    acc = c.value(op, IN, 0)
    wanted = _tmem_for(acc.shape, collective, 1)
    if wanted is None:
        c.report(op, f"no TMEM layout exists for an accumulator of shape {acc.shape}")
    else:
        c.expect(op, IN, 0, wanted, "the accumulator")
    b = c.value(op, IN, 2)
    bitwidth = b.bitwidth or 0
    c.mma_tiling(op, 2, bitwidth, unswizzled=False, operand="B")
    if acc.shape[0] == 64 and not collective:
        # N is split in two lane groups; B's tiles must not straddle them.
        n = b.shape[1]
        widest = next(
            (8 * s // bitwidth for s in (128, 64, 32, 16) if 8 * s // bitwidth <= n // 2), None
        )
        if widest is None:
            c.report(op, f"B of {n} columns cannot be split in two lane groups")
        else:
            tile = (widest, 8) if _transposed(b) else (8, widest)
            c.divides(op, IN, 2, tile, "the half-N lane group tile")
    a = c.value(op, IN, 1)
    if a.kind == Kind.TMEM:
        wanted_a = _tmem_for(a.shape, collective, 32 // (a.bitwidth or 32))
        if wanted_a is None:
            c.report(op, f"no TMEM layout exists for an A operand of shape {a.shape}")
        else:
            c.expect(op, IN, 1, wanted_a, "a TMEM A operand")
    else:
        c.mma_tiling(op, 1, bitwidth, unswizzled=False, operand="A")
    operands = list(view.operation.operands)
    if view.a_sparse_metadata is not None:
        index = operands.index(view.a_sparse_metadata)
        c.expect(op, IN, index, Tmem(tcgen05.sparse_meta_layout()), "the sparsity metadata")
    if (view.a_scale is None) != (view.b_scale is None):
        c.report(op, "has one scale operand without the other")
    elif view.a_scale is not None:
        m = acc.shape[0]
        for scale, is_b in ((view.a_scale, False), (view.b_scale, True)):
            index = operands.index(scale)
            if collective and is_b and m == 64:
                layout = tcgen05.b_scales_m64_collective_layout()
            else:
                layout = tcgen05.scales_layout()
            c.expect(op, IN, index, Tmem(layout), "the B scales" if is_b else "the A scales")


def _tmem_transfer(c: _Checker, op: Op, tmem: tuple[int, int], reg: tuple[int, int]) -> None:
    memory, registers = c.tmem(op, *tmem), c.reg(op, *reg)
    if memory is None or registers is None:
        return
    value = c.value(op, *reg)
    if not tmem_transfer_supported(
        memory.layout, registers.layout, value.shape, value.bitwidth or 32
    ):
        c.report(
            op, f"no transfer between TMEM in {_name(memory)} and registers in {_name(registers)}"
        )


@_rule("mosaic_gpu.async_load_tmem")
def _async_load_tmem(c: _Checker, op: Op) -> None:
    _tmem_transfer(c, op, (IN, 0), (OUT, 0))
    if len(op.results) < 2:
        return
    # A fused row reduction: the loaded layout reduced over the columns.
    loaded, reduced = c.reg(op, OUT, 0), c.reg(op, OUT, 1)
    if loaded is None or reduced is None:
        return
    expected = _reduce(loaded, (1,), 2, keep=False)
    if expected is None or expected != reduced:
        c.report(
            op,
            f"the row reduction of {_name(loaded)} is "
            f"{'impossible' if expected is None else _name(expected)}, not {_name(reduced)}",
        )


@_rule("mosaic_gpu.vector_concat")
def _vector_concat(c: _Checker, op: Op) -> None:
    # The lowering stacks register arrays: one tiled layout for all.
    sites = [(IN, i) for i in range(len(op.operands))] + [(OUT, 0)]
    c.same(op, sites, "a concatenation keeps its operands' layout")
    c.not_kinds(op, OUT, 0, splat=True, strided=True)


@_rule("mosaic_gpu.async_store_tmem")
def _async_store_tmem(c: _Checker, op: Op) -> None:
    _tmem_transfer(c, op, (IN, 1), (IN, 0))


@_rule("mosaic_gpu.async_store_smem_to_tmem")
def _smem_to_tmem(c: _Checker, op: Op) -> None:
    bitwidth = c.value(op, IN, 1).bitwidth or 32
    c.expect(op, IN, 1, hl.tmem_default(32 // bitwidth), "a TMEM copy destination")
    c.mma_tiling(op, 0, bitwidth, unswizzled=True, operand="the SMEM source")


@_rule("mosaic_gpu.async_store_sparse_metadata_smem_to_tmem")
def _sparse_metadata_to_tmem(c: _Checker, op: Op) -> None:
    _untiled(c, op, 0, "the sparsity metadata in SMEM")
    c.expect(op, IN, 1, Tmem(tcgen05.sparse_meta_layout()), "the sparsity metadata in TMEM")


@_rule("mosaic_gpu.async_store_scales_smem_to_tmem")
def _scales_to_tmem(c: _Checker, op: Op) -> None:
    _untiled(c, op, 0, "the scales in SMEM")
    source_shape = c.value(op, IN, 0).shape
    k_tiles = c.value(op, IN, 1).shape[1] // 4
    if source_shape == (1, k_tiles, 64, 16):
        layout = tcgen05.b_scales_m64_collective_layout()
    else:
        layout = tcgen05.scales_layout()
    c.expect(op, IN, 1, Tmem(layout), "the scales in TMEM")


# --- control flow ------------------------------------------------------------------------------


def _terminator(c: _Checker, op: Op, region: int) -> Op | None:
    blocks = op.regions[region] if region < len(op.regions) else []
    if not blocks or not blocks[0][1]:
        return None
    last = c.program.ops[blocks[0][1][-1]]
    return last if last.name in _TERMINATORS else None


def _same_across(c: _Checker, sites: Sequence[tuple[Op, int, int]], why: str) -> None:
    """Sites on different ops that are one value carried through control flow."""
    known = [(o, role, i, c.get(o, role, i)) for o, role, i in sites]
    known = [entry for entry in known if entry[3] is not None]
    if not known:
        return
    first_op, first_role, first_index, first = known[0]
    for o, role, i, layout in known[1:]:
        if layout != first:
            c.report(
                o,
                f"{_ROLE[role]} #{i} is {_name(layout)} but {_ROLE[first_role]} #{first_index} "
                f"of {first_op.name} ({c._location(first_op)}) is {_name(first)}; {why}",
            )


@_rule("scf.for")
def _for(c: _Checker, op: Op) -> None:
    yield_op = _terminator(c, op, 0)
    for index in range(_FOR_BOUNDS, len(op.operands)):
        if _family_of(c.value(op, IN, index)) is None:
            continue
        carried = index - _FOR_BOUNDS
        sites = [(op, IN, index), (op, OUT, carried)]
        if yield_op is not None:
            sites.append((yield_op, IN, carried))
        _same_across(c, sites, "a loop-carried value keeps one layout")


@_rule("scf.while")
def _while(c: _Checker, op: Op) -> None:
    condition, yield_op = _terminator(c, op, 0), _terminator(c, op, 1)
    for i in range(len(op.operands)):
        if _family_of(c.value(op, IN, i)) is _LAYOUTS:
            sites = [(op, IN, i)] + ([(yield_op, IN, i)] if yield_op is not None else [])
            _same_across(c, sites, "a loop-carried value keeps one layout")
    for i in range(len(op.results)):
        if _family_of(c.value(op, OUT, i)) is _LAYOUTS:
            sites = [(op, OUT, i)] + ([(condition, IN, i + 1)] if condition is not None else [])
            _same_across(c, sites, "a value leaving the loop keeps its layout")


@_rule("scf.index_switch")
def _index_switch(c: _Checker, op: Op) -> None:
    yields = [_terminator(c, op, r) for r in range(len(op.regions))]
    for i in range(len(op.results)):
        if _family_of(c.value(op, OUT, i)) is not _LAYOUTS:
            continue
        sites = [(op, OUT, i)] + [(y, IN, i) for y in yields if y is not None]
        _same_across(c, sites, "every case yields the result in one layout")


# --- command line -------------------------------------------------------------------------------


EXIT_OK, EXIT_VIOLATIONS, EXIT_BAD_INPUT = 0, 1, 2


def check_main(argv: Sequence[str]) -> int:
    """``smalto check FILE|- [--arch 9.0|10.0]``; ``argv`` is what follows ``check``.

    Prints one line per violation, ``LOCATION: op: message``, on stdout and
    returns 1; returns 0 when there is none; on unreadable or unparsable input
    or bad usage prints one line on stderr and returns 2.
    """
    from smalto.mlir import MlirInputError, module_arch, parse_module

    parser = argparse.ArgumentParser(
        prog="smalto check",
        description="Check the layout annotations of a Mosaic GPU module, op by op.",
    )
    parser.add_argument("input", metavar="FILE", help="annotated MLIR module ('-' for stdin)")
    parser.add_argument(
        "--arch",
        metavar="MAJOR.MINOR",
        help="9.0 (Hopper) or 10.0 (Blackwell); default: the "
        "module's mosaic_gpu.arch_major/arch_minor, else 9.0",
    )
    try:
        args = parser.parse_args(list(argv))
    except SystemExit as exit_request:
        code = exit_request.code
        return code if isinstance(code, int) else EXIT_BAD_INPUT
    try:
        arch = parse_arch(args.arch) if args.arch is not None else None
        if args.input == "-":
            text, name = sys.stdin.read(), "<stdin>"
        else:
            try:
                text, name = Path(args.input).read_text(encoding="utf-8"), args.input
            except OSError as error:
                raise ValueError(f"cannot read '{args.input}': {error.strerror or error}") from None
            except UnicodeDecodeError:
                raise ValueError(f"cannot read '{args.input}': not UTF-8 text") from None
        module = parse_module(text, source_name=name)
        if arch is None:
            arch = module_arch(module) or (9, 0)
            if arch not in SUPPORTED_ARCHS:
                raise ValueError(
                    f"the module targets architecture {arch[0]}.{arch[1]}, which smalto does "
                    "not support (9.0 or 10.0); pass --arch to override"
                )
        violations = check(module, arch, source_name=name)
    except (MlirInputError, ValueError) as error:
        print(f"smalto: error: {_one_line(str(error))}", file=sys.stderr)
        return EXIT_BAD_INPUT
    for violation in violations:
        print(_one_line(str(violation)))
    return EXIT_VIOLATIONS if violations else EXIT_OK


def _one_line(text: str) -> str:
    return " ".join(text.split())
