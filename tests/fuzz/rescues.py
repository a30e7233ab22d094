"""Fuzz families that reach the rescues: modules with no layouts as written that
``stage_through_smem``, ``allow_unoptimized`` or the unit-dim rewrite make lower.

The general fuzzer (``fuzz.strategies``) rarely writes such a module: a rescue is
needed where a value's layout is forced (an MMA's accumulator, a strict cast) and a
transfer of it has no optimized plan, or where a ``keepdims`` statistic is broadcast
back against its tile. These families write exactly that, at random around it:

- ``staged``: the epilogue of a Hopper or Blackwell kernel in a ``gpu.launch`` (which
  staging needs, to grow the kernel's SMEM), a tile in the MMA's layout (a strict
  cast) through a random elementwise chain, narrowed (bf16, f16, f8) and stored to
  GMEM, sometimes in a loop, sometimes beside a row statistic;
- ``unoptimized``: the same epilogues with no launch, so that staging has nowhere to
  put its buffer, and GMEM columns of a table (elements a row apart);
- ``unit_dims``: statistics with ``keepdims`` (``x - max(x, axis, keepdims=True)``,
  RMS norm, softmax), reduced by a random kind, combined through a random chain and
  broadcast back against the tile.

Tiles are small mostly, large now and then (``MMA_ROWS``, ``COLUMNS``...): what the
oracles cost grows with a tile's registers, what the families must reach does not.

A family is written once, against its choices (``Pick``): ``FAMILIES`` are its hypothesis
strategies, ``cases`` draws a fixed list of distinct modules from a seed (CI, and the
long run ``fuzz.run_rescues``, judge slices of it).

The oracles (``fuzz.rescue_property.judge``): the module as written goes through the
fuzz property of ``fuzz.property`` (the checker, JAX's pass) where smalto answers, and
where it does not, JAX's pass must not have layouts its lowering takes; with the rescue,
smalto either refuses and leaves the module as it came, or its answer passes the
checker, the reference evaluator finds the rescued module computing what the module as
written does, bit for bit, and JAX's dialect lowering takes it. The tests
(``tests/beyond_jax/test_fuzz_rescues.py``) assert that each family reaches its rescue.
"""

from __future__ import annotations

import random
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Protocol, TypeVar

from hypothesis import strategies as st

WGMMA = (
    "#mosaic_gpu.TiledLayout<[[64, 8], [16, 8], [8, 8], [2]], warp_dims = [-7], "
    "lane_dims = [-3, -2], vector_dim = -1>"
)
TCGEN05 = (
    "#mosaic_gpu.TiledLayout<[[128, 8], [32, 8], [8, 8], [2]], warp_dims = [-7], "
    "lane_dims = [-3, -2], vector_dim = -1>"
)
HOPPER, BLACKWELL = (9, 0), (10, 0)
NARROW = ("bf16", "f16", "f8E4M3FN", "f8E5M2")
# On Hopper, a WGMMA tile narrowed to 16 bits stores as written: f8 mostly, to reach.
HOPPER_NARROW = ("f8E4M3FN", "f8E5M2", "f8E4M3FN", "f8E5M2", "bf16")
BID = "mosaic_gpu.broadcast_in_dim"
# Where a reduction across warps keeps its partial results, as Pallas reserves it (the
# first 2 KiB of the kernel's SMEM).
SCRATCH_BYTES = 2048
# A subview's run-time offset, as MLIR writes it.
DYNAMIC = -9223372036854775808
SCRATCH = f"{{offset = 0 : i32, scratch_size = {SCRATCH_BYTES} : i32}}"

# The sizes the families draw from: small tiles mostly, a large one now and then. What
# costs a module's oracles time (JAX's dialect lowering, the evaluator) grows with the
# registers of its tiles; what the families must reach does not: a row narrower than a
# coalesced store, a column of a table, a statistic with a unit dim, at any size.
# (Repeated entries weigh a size: ``sampled_from`` draws evenly.)
MMA_ROWS = {HOPPER: (64, 64, 64, 128), BLACKWELL: (128, 128, 128, 256)}
COLUMNS = (8, 16, 16, 32, 32, 64, 128)
# Table columns: 64 rows (fewer than a warpgroup's threads) have no coalesced plan; 128
# and 256 infer as written (strided, an element or two a thread): kept, less often.
TABLE_ROWS = (64, 64, 64, 64, 128, 256)
# Statistics: a tile of 16 rows has no layouts even rewritten (refused, left as it came).
STAT_ROWS = (16, 64, 64, 64, 128, 128)

# What each family's rescue is called (``infer_layout``'s keyword) and says.
RESCUES = ("stage_through_smem", "allow_unoptimized", "rewrite")
T = TypeVar("T")


@dataclass(frozen=True)
class RescueModule:
    """A generated module, its arch, and the rescue its family is for."""

    text: str
    arch: tuple[int, int]
    rescue: str

    def __repr__(self) -> str:
        return f"RescueModule(arch={self.arch}, rescue={self.rescue}, text=\n{self.text})"


class Pick(Protocol):
    """The choices a family makes: from hypothesis (``FAMILIES``: strategies) or from a
    seeded ``random.Random`` (``cases``)."""

    def one(self, options: Sequence[T]) -> T:
        """One of ``options``, evenly (repeat an option to weigh it)."""
        ...

    def flag(self) -> bool: ...

    def between(self, low: int, high: int) -> int:
        """An integer in [low, high]."""
        ...


class _Drawn:
    def __init__(self, draw: st.DrawFn) -> None:
        self.draw = draw

    def one(self, options: Sequence[T]) -> T:
        return self.draw(st.sampled_from(options))

    def flag(self) -> bool:
        return self.draw(st.booleans())

    def between(self, low: int, high: int) -> int:
        return self.draw(st.integers(low, high))


class _Random:
    def __init__(self, rng: random.Random) -> None:
        self.rng = rng

    def one(self, options: Sequence[T]) -> T:
        return options[self.rng.randrange(len(options))]

    def flag(self) -> bool:
        return self.rng.random() < 0.5

    def between(self, low: int, high: int) -> int:
        return self.rng.randint(low, high)


def _vec(shape: tuple[int, ...], elt: str) -> str:
    return f"vector<{'x'.join(map(str, shape))}x{elt}>"


def _mem(shape: tuple[int, ...], elt: str) -> str:
    return f"memref<{'x'.join(map(str, shape))}x{elt}>"


class _Lines:
    """Ops as generic MLIR lines, with fresh names."""

    def __init__(self) -> None:
        self.lines: list[str] = []
        self.count = 0
        self.args: list[str] = []

    def fresh(self) -> str:
        self.count += 1
        return f"%v{self.count}"

    def op(self, text: str) -> str:
        name = self.fresh()
        self.lines.append(f"{name} = {text}")
        return name

    def void(self, text: str) -> None:
        self.lines.append(text)

    def arg(self, ty: str) -> str:
        self.args.append(ty)
        return f"%arg{len(self.args) - 1}"

    def load(self, ref: str, ref_type: str, ty: str) -> str:
        """An optimized ``vector_load`` (as Pallas emits ``x_ref[...]``)."""
        return self.op(
            f'"mosaic_gpu.vector_load"({ref}) <{{optimized = true}}> : ({ref_type}) -> {ty}'
        )

    def store(self, value: str, ty: str, ref: str, ref_type: str) -> None:
        """An optimized ``vector_store`` (as Pallas emits ``o_ref[...] = x``)."""
        self.void(
            f'"mosaic_gpu.vector_store"({value}, {ref}) <{{optimized = true}}> : '
            f"({ty}, {ref_type}) -> ()"
        )

    def index(self, value: int) -> str:
        return self.op(f'"arith.constant"() <{{value = {value} : index}}> : () -> index')

    def splat(self, ty: str, literal: str) -> str:
        return self.op(f'"arith.constant"() <{{value = dense<{literal}> : {ty}}}> : () -> {ty}')


def _chain(pick: Pick, out: _Lines, value: str, ty: str, length: int) -> str:
    """A random elementwise chain from ``value`` (floats), as an epilogue computes."""
    for _ in range(length):
        kind = pick.one(("mulf", "addf", "maximumf", "subf", "exp", "tanh", "neg"))
        if kind in ("exp", "tanh"):
            value = out.op(f'"math.{kind}"({value}) : ({ty}) -> {ty}')
        elif kind == "neg":
            value = out.op(f'"arith.negf"({value}) : ({ty}) -> {ty}')
        else:
            other = value
            if pick.flag():
                other = out.splat(ty, pick.one(("5.000000e-01", "2.000000e+00")))
            value = out.op(f'"arith.{kind}"({value}, {other}) : ({ty}, {ty}) -> {ty}')
    return value


def _epilogue(pick: Pick, arch: tuple[int, int]) -> tuple[_Lines, list[str]]:
    """The ops of an MMA epilogue (their lines), and the launch's SMEM need (none yet)."""
    out = _Lines()
    layout = WGMMA if arch == HOPPER else TCGEN05
    m = pick.one(MMA_ROWS[arch])
    n = pick.one(COLUMNS)
    narrow = pick.one(NARROW if arch == BLACKWELL else HOPPER_NARROW)
    tile, small = _vec((m, n), "f32"), _vec((m, n), narrow)
    source = out.arg(_mem((m, n), "f32"))
    x = out.load(source, _mem((m, n), "f32"), tile)
    acc = out.op(
        f'"mosaic_gpu.layout_cast"({x}) <{{new_layout = {layout}, strict = true}}> : '
        f"({tile}) -> {tile}"
    )
    looped = pick.flag()
    if looped:  # the epilogue inside a loop over tiles, the accumulator carried
        lb, ub, step = (out.index(v) for v in (0, 2, 1))
        result = out.fresh()
        out.lines.append(f'{result} = "scf.for"({lb}, {ub}, {step}, {acc}) ({{')
        index, carried = out.fresh(), out.fresh()
        out.lines.append(f"^bb0({index}: index, {carried}: {tile}):")
        acc = carried
    value = _chain(pick, out, acc, tile, pick.between(0, 3))
    narrowed = out.op(f'"arith.truncf"({value}) : ({tile}) -> {small}')
    target = out.arg(_mem((m, n), narrow))
    out.store(narrowed, small, target, _mem((m, n), narrow))
    if pick.flag():  # a row statistic beside it, stored whole (f32)
        row = _vec((m,), "f32")
        init = out.splat(row, "0.000000e+00")
        kind = pick.one(("add", "maximumf"))
        stat = out.op(
            f'"vector.multi_reduction"({value}, {init}) <{{kind = #vector.kind<{kind}>, '
            f"reduction_dims = array<i64: 1>}}> {SCRATCH} : ({tile}, {row}) -> {row}"
        )
        rows = out.arg(_mem((m,), "f32"))
        out.store(stat, row, rows, _mem((m,), "f32"))
    if looped:
        out.void(f'"scf.yield"({value}) : ({tile}) -> ()')
        out.void(f"}}) : (index, index, index, {tile}) -> {tile}")
    return out, []


def _table_column(pick: Pick) -> _Lines:
    """A column of a GMEM table read (``w_ref[:, j]``: its elements a row apart), used
    against a tile and stored."""
    out = _Lines()
    rows = pick.one(TABLE_ROWS)
    cols = pick.one((2, 4, 8))
    elt = pick.one(("f32", "bf16", "f16"))
    table = out.arg(_mem((rows, cols), elt))
    column_ty = f"memref<{rows}x{elt}, strided<[{cols}], offset: ?>>"
    j = out.index(pick.between(0, cols - 1))
    column = out.op(
        f'"memref.subview"({table}, {j}) <{{operandSegmentSizes = array<i32: 1, 1, 0, 0>, '
        f"static_offsets = array<i64: 0, {DYNAMIC}>, static_sizes = array<i64: {rows}, 1>, "
        f"static_strides = array<i64: 1, 1>}}> : ({_mem((rows, cols), elt)}, index) -> "
        f"memref<{rows}x1x{elt}, strided<[{cols}, 1], offset: ?>>"
    )
    flat = out.op(
        f'"memref.collapse_shape"({column}) <{{reassociation = [[0, 1]]}}> : '
        f"(memref<{rows}x1x{elt}, strided<[{cols}, 1], offset: ?>>) -> {column_ty}"
    )
    vec = _vec((rows,), elt)
    loaded = out.load(flat, column_ty, vec)
    value = loaded
    if elt == "f32":
        value = _chain(pick, out, loaded, vec, pick.between(0, 2))
    target = out.arg(_mem((rows,), elt))
    out.store(value, vec, target, _mem((rows,), elt))
    return out


def _function(out: _Lines, arch: tuple[int, int]) -> str:
    params = ", ".join(f"%arg{i}: {t}" for i, t in enumerate(out.args))
    body = "\n".join("  " + line for line in out.lines)
    return (
        f"module attributes {{mosaic_gpu.arch_major = {arch[0]} : i32, "
        f"mosaic_gpu.arch_minor = {arch[1]} : i32}} {{\n"
        f'func.func @kernel({params}) {{\n{body}\n  "func.return"() : () -> ()\n}}\n}}\n'
    )


def _launched(out: _Lines, arch: tuple[int, int], smem: int) -> str:
    """The ops in a ``gpu.launch`` of one warpgroup with ``smem`` bytes of dynamic SMEM."""
    params = ", ".join(f"%arg{i}: {t}" for i, t in enumerate(out.args))
    body = "\n".join("    " + line for line in out.lines)
    block = ", ".join(f"%b{i}: index" for i in range(12))
    return (
        f"module attributes {{mosaic_gpu.arch_major = {arch[0]} : i32, "
        f"mosaic_gpu.arch_minor = {arch[1]} : i32}} {{\n"
        f"func.func @kernel({params}) {{\n"
        '  %one = "arith.constant"() <{value = 1 : index}> : () -> index\n'
        '  %threads = "arith.constant"() <{value = 128 : index}> : () -> index\n'
        f'  %smem = "arith.constant"() <{{value = {smem} : i32}}> : () -> i32\n'
        '  "gpu.launch"(%one, %one, %one, %threads, %one, %one, %smem) <{operandSegmentSizes = '
        "array<i32: 0, 1, 1, 1, 1, 1, 1, 0, 0, 0, 1, 0>}> ({\n"
        f"  ^bb0({block}):\n{body}\n"
        '    "gpu.terminator"() : () -> ()\n'
        "  }) : (index, index, index, index, index, index, i32) -> ()\n"
        '  "func.return"() : () -> ()\n}\n}\n'
    )


def _staged(pick: Pick) -> RescueModule:
    """MMA epilogues in a launch whose narrow GMEM store has no coalesced plan."""
    arch = pick.one((HOPPER, BLACKWELL))
    out, _ = _epilogue(pick, arch)
    smem = SCRATCH_BYTES + pick.one((0, 1024, 8192))
    return RescueModule(_launched(out, arch, smem), arch, "stage_through_smem")


def _unoptimized(pick: Pick) -> RescueModule:
    """The same epilogues with no launch (staging has nowhere to go), and table columns."""
    arch = pick.one((HOPPER, BLACKWELL))
    out = _epilogue(pick, arch)[0] if pick.flag() else _table_column(pick)
    return RescueModule(_function(out, arch), arch, "allow_unoptimized")


def _unit_dims(pick: Pick) -> RescueModule:
    """``keepdims`` statistics of a tile, combined and broadcast back against it."""
    arch = pick.one((HOPPER, BLACKWELL))
    out = _Lines()
    m = pick.one(STAT_ROWS)
    n = pick.one(COLUMNS)
    axis = pick.one((0, 1))
    kept = m if axis == 1 else n
    tile = _vec((m, n), "f32")
    stat_shape = (m, 1) if axis == 1 else (1, n)
    squeezed, keep = _vec((kept,), "f32"), _vec(stat_shape, "f32")
    source = out.arg(_mem((m, n), "f32"))
    x = out.load(source, _mem((m, n), "f32"), tile)
    if arch == HOPPER and m % 64 == 0 and pick.flag():
        x = out.op(f'"mosaic_gpu.layout_cast"({x}) <{{new_layout = {WGMMA}}}> : ({tile}) -> {tile}')
    operand = x
    if pick.flag():  # RMS norm: the squares' statistic
        operand = out.op(f'"arith.mulf"({x}, {x}) : ({tile}, {tile}) -> {tile}')
    kind = pick.one(("add", "maximumf", "minimumf"))
    init = out.splat(
        squeezed,
        "0.000000e+00" if kind == "add" else "0xFF800000" if kind == "maximumf" else "0x7F800000",
    )
    stat = out.op(
        f'"vector.multi_reduction"({operand}, {init}) <{{kind = #vector.kind<{kind}>, '
        f"reduction_dims = array<i64: {axis}>}}> {SCRATCH} : ({tile}, {squeezed}) -> {squeezed}"
    )
    kept_dim = 0 if axis == 1 else 1
    dims = f"broadcast_dimensions = array<i64: {kept_dim}>"
    stat = out.op(f'"{BID}"({stat}) <{{{dims}}}> : ({squeezed}) -> {keep}')
    stat = _chain(pick, out, stat, keep, pick.between(0, 3))
    if pick.flag():
        stat = out.op(f'"math.rsqrt"({stat}) : ({keep}) -> {keep}')
    wide = out.op(
        f'"{BID}"({stat}) <{{broadcast_dimensions = array<i64: 0, 1>}}> : ({keep}) -> {tile}'
    )
    combine = pick.one(("subf", "mulf", "addf", "divf"))
    y = out.op(f'"arith.{combine}"({x}, {wide}) : ({tile}, {tile}) -> {tile}')
    if pick.flag():
        y = out.op(f'"math.exp"({y}) : ({tile}) -> {tile}')
    target = out.arg(_mem((m, n), "f32"))
    out.store(y, tile, target, _mem((m, n), "f32"))
    if pick.flag():  # the statistic itself stored too, keepdims and all
        stats = out.arg(_mem(stat_shape, "f32"))
        out.store(stat, keep, stats, _mem(stat_shape, "f32"))
    return RescueModule(_function(out, arch), arch, "rewrite")


def _strategy(
    make: Callable[[Pick], RescueModule],
) -> Callable[[], st.SearchStrategy[RescueModule]]:
    """The family ``make`` writes, as a hypothesis strategy of its modules."""

    @st.composite
    def modules(draw: st.DrawFn) -> RescueModule:
        return make(_Drawn(draw))

    return modules


staged_modules = _strategy(_staged)
unoptimized_modules = _strategy(_unoptimized)
unit_dim_modules = _strategy(_unit_dims)
FAMILIES = {
    "stage_through_smem": staged_modules,
    "allow_unoptimized": unoptimized_modules,
    "rewrite": unit_dim_modules,
}
# The same families as functions of their choices (``cases``).
WRITERS: dict[str, Callable[[Pick], RescueModule]] = {
    "stage_through_smem": _staged,
    "allow_unoptimized": _unoptimized,
    "rewrite": _unit_dims,
}


def cases(family: str, count: int, seed: int) -> list[RescueModule]:
    """The first ``count`` distinct modules of ``family`` drawn from ``seed``: the same list
    wherever it is made (a CI chunk, a worker of ``fuzz.run_rescues``), so that slices of
    it split one family's run without a module judged twice. Drawn by a seeded
    ``random.Random`` (a tenth of a millisecond a module; hypothesis takes 2.5 ms, a
    tenth of what a module's oracles cost); fewer where the family has fewer."""
    rng = random.Random(f"fuzz.rescues/{family}/{seed}")
    pick, write = _Random(rng), WRITERS[family]
    drawn: dict[str, RescueModule] = {}
    for _ in range(4 * count):
        if len(drawn) == count:
            break
        case = write(pick)
        drawn.setdefault(case.text, case)
    return list(drawn.values())
