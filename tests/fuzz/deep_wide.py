"""The fuzz family of deep and wide modules: what no kernel looks like, yet a user can
hand to any command.

A deep module carries a vector through ``depth`` nested regions (``scf.for`` loops,
now and then an ``scf.index_switch``), with a random program of the fuzzer's
(``fuzz.strategies.Builder``) at the bottom; a wide one is a long random program
followed by a chain of elementwise ops thousands long. Their property
(``tests/cli/test_deep_and_wide.py``): every command answers in one line or with its
answer, never a traceback, with exit status 2 and the depth named where the module
nests deeper than smalto takes (``smalto.basics.nesting.MAX_REGION_DEPTH``), and every
answer passes the checker.
"""

from __future__ import annotations

from dataclasses import dataclass

from hypothesis import strategies as st

from fuzz.strategies import SHAPES_2D, Builder, VType
from smalto.basics.nesting import MAX_REGION_DEPTH

# Depths at and just past the limit, and far past it (MLIR's parser overflows an 8 MiB
# stack at about 2 000), besides random ones.
EDGE_DEPTHS = (MAX_REGION_DEPTH, MAX_REGION_DEPTH + 1, 10_000)


@dataclass(frozen=True)
class ShapedModule:
    """A generated module, its arch, and how deep its regions nest."""

    text: str
    arch: tuple[int, int]
    depth: int

    def __repr__(self) -> str:  # shown by hypothesis on failure (the head of it)
        return f"ShapedModule(arch={self.arch}, depth={self.depth}, text=\n{self.text[:3000]})"


def _nested(builder: Builder, depth: int, carried: VType, draw: st.DrawFn) -> str:
    """Emits ``depth`` regions around a random program, carrying a value of ``carried``
    through each; returns the name of the outermost result."""
    lb, ub, step = builder.index(0), builder.index(2), builder.index(1)
    value = builder.vector(carried)
    closers: list[tuple[str, str]] = []  # per level, outside in: (kind, result name)
    # Switches only now and then: each has a second region that yields what came in.
    switch_at = set(draw(st.lists(st.integers(0, max(depth - 1, 0)), max_size=3)))
    ty = str(carried)
    for level in range(depth):
        result = builder.fresh("n")
        if level in switch_at:
            which = builder.index(level % 2)
            builder.emit(f'{result} = "scf.index_switch"({which}) <{{cases = array<i64: 0>}}> ({{')
            builder.emit(f'"scf.yield"({value}) : ({ty}) -> ()')
            builder.emit("}, {")
            closers.append(("switch", result))
        else:
            builder.emit(f'{result} = "scf.for"({lb}, {ub}, {step}, {value}) ({{')
            index, arg = builder.fresh("i"), builder.fresh("a")
            builder.emit(f"^bb0({index}: index, {arg}: {ty}):")
            builder.define(arg, carried)
            value = arg
            closers.append(("for", result))
    builder.depth = 2  # the program at the bottom opens no regions of its own
    for _ in range(draw(st.integers(0, 4))):
        builder.op()
    inner = builder.vector(carried)
    for kind, result in reversed(closers):
        builder.emit(f'"scf.yield"({inner}) : ({ty}) -> ()')
        if kind == "switch":
            builder.emit(f"}}) : (index) -> {ty}")
        else:
            builder.emit(f"}}) : (index, index, index, {ty}) -> {ty}")
        inner = result
    return inner


def _store(builder: Builder, value: str, carried: VType) -> None:
    ref = builder.slice(carried.shape, carried.elt)
    builder.emit(f'"mosaic_gpu.vector_store"({value}, {ref.name}) : ({carried}, {ref.type}) -> ()')


def _finish(builder: Builder) -> str:
    body = "\n".join(builder.lines)
    args = ", ".join(f"%arg{i}: {ty}" for i, ty in enumerate(builder.args))
    return f'func.func @kernel({args}) {{\n{body}\n  "func.return"() : () -> ()\n}}\n'


@st.composite
def deep_modules(draw: st.DrawFn, depths: st.SearchStrategy[int] | None = None) -> ShapedModule:
    """A module whose regions nest ``depth`` deep (the function's own region included)."""
    arch = draw(st.sampled_from([(9, 0), (10, 0)]))
    if depths is None:
        depths = st.one_of(
            st.integers(1, 64), st.integers(1, MAX_REGION_DEPTH), st.sampled_from(EDGE_DEPTHS)
        )
    depth = draw(depths)
    builder = Builder(draw, arch)
    carried = VType(draw(st.sampled_from(SHAPES_2D)), draw(st.sampled_from(("f32", "f16"))))
    result = _nested(builder, depth - 1, carried, draw)
    if draw(st.booleans()):
        _store(builder, result, carried)
    return ShapedModule(_finish(builder), arch, depth)


@st.composite
def wide_modules(draw: st.DrawFn, chain: st.SearchStrategy[int] | None = None) -> ShapedModule:
    """A long random program, then a chain of elementwise ops (``chain`` long) from one
    of its values to a store: long use-def chains, many siblings."""
    arch = draw(st.sampled_from([(9, 0), (10, 0)]))
    builder = Builder(draw, arch)
    builder.depth = 1  # loops, but not loops in loops
    for _ in range(draw(st.integers(20, 60))):
        builder.op()
    length = draw(chain if chain is not None else st.integers(100, 3_000))
    ty = VType(draw(st.sampled_from(SHAPES_2D)), "f32")
    value = builder.vector(ty)
    for step in range(length):  # (drawing each op would make the example too large)
        name = builder.fresh()
        op = "arith.addf" if step % 3 else "arith.mulf"
        builder.emit(f'{name} = "{op}"({value}, {value}) : ({ty}, {ty}) -> {ty}')
        value = name
    _store(builder, value, ty)
    return ShapedModule(_finish(builder), arch, 1)
