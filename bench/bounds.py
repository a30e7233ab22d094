"""What a layout pass written in Python on the MLIR bindings cannot avoid paying.

``python -m bench.bounds [FILES...] [--repeat N] [--clock cpu|wall]``

For each module (default: the corpus kernels, as ``bench.run``), on
separately parsed copies in one process, it times a ladder of pre-order
walks, each doing a little more of what any such pass must do, beside the IR
floor (``bench.run``) and smalto's own read and whole pass:

1. ``walk``: the walk's callback alone, reading nothing;
2. ``names``: each op's name read and its handle kept (a pass must tell ops
   apart and keep the handles of those it writes attributes on);
3. ``skeleton``: also each op's result types, in one call per op (without
   them no pass can tell which values are vectors or refs, hence which ops
   carry layouts);
4. ``dataflow``: also, for the ops smalto's read looks into (those with a
   vector or memref result, and those that may use a value needing a
   layout), their operands' and results' identities, and the arguments
   (identity and type) of each block of an op with regions: the binding
   calls smalto's read makes, without its analysis;
5. ``read``: smalto's program view (``read_program``);
6. ``pass``: ``smalto.infer_layout``.

Each figure is the minimum over ``--repeat`` runs, after a full garbage
collection. Prints the table per module and the sums, in milliseconds and in
multiples of the floor: how far below the pass's cost a Python pass could go
if everything after the skeleton were free, and what the analysis (the pass
less its read) costs on its own.
"""

from __future__ import annotations

import argparse
import gc
import sys
from collections.abc import Callable, Sequence
from functools import partial
from pathlib import Path

import reference
from jax._src.lib.mlir import ir

import smalto
from bench.run import (
    CLOCKS,
    DEFAULT_ARCH,
    Arch,
    attribute_plan,
    display_name,
    floor_walk,
    index_arch,
    kernel_files,
    positive_int,
    text_table,
    timed,
)
from smalto.basics.mlir import module_arch
from smalto.program.reader import read_program
from smalto.rules import consumers as rule_consumers

LADDER = ("walk", "names", "skeleton", "dataflow", "read", "pass")
DEFAULT_REPEAT = 7


def walk_only(module: ir.Module) -> None:
    advance = ir.WalkResult.ADVANCE
    module.operation.walk(lambda op: advance, ir.WalkOrder.PRE_ORDER)


def names_and_handles(module: ir.Module) -> None:
    handles: list[ir.Operation] = []
    names: list[str] = []
    keep, name = handles.append, names.append
    advance = ir.WalkResult.ADVANCE

    def visit(op: ir.Operation) -> ir.WalkResult:
        keep(op)
        name(op.name)
        return advance

    module.operation.walk(visit, ir.WalkOrder.PRE_ORDER)


def skeleton(module: ir.Module) -> None:
    handles: list[ir.Operation] = []
    names: list[str] = []
    types: list[list[ir.Type]] = []
    keep, name, result_types = handles.append, names.append, types.append
    advance = ir.WalkResult.ADVANCE

    def visit(op: ir.Operation) -> ir.WalkResult:
        keep(op)
        name(op.name)
        result_types(op.results.types)
        return advance

    module.operation.walk(visit, ir.WalkOrder.PRE_ORDER)


def dataflow(module: ir.Module, consumers: frozenset[str]) -> None:
    """``consumers``: the names of the ops whose operands smalto's read reads though
    their results need no layout (``smalto.rules.consumers``)."""
    handles: list[ir.Operation] = []
    names: list[str] = []
    identities: list[object] = []
    keep, name, identity = handles.append, names.append, identities.append
    has_regions: dict[str, bool] = {}
    shaped = (ir.VectorType, ir.MemRefType)
    shaped_classes: dict[type, bool] = {}
    advance = ir.WalkResult.ADVANCE

    def visit(op: ir.Operation) -> ir.WalkResult:
        keep(op)
        op_name = op.name
        name(op_name)
        looked_into = op_name in consumers
        for ty in op.results.types:
            cls = ty.__class__
            is_shaped = shaped_classes.get(cls)
            if is_shaped is None:
                is_shaped = shaped_classes[cls] = issubclass(cls, shaped)
            if is_shaped:
                looked_into = True
                break
        if looked_into:
            identity(tuple(map(hash, op.operands)))
            identity(tuple(map(hash, op.results)))
        regions = has_regions.get(op_name)
        if regions is None:
            regions = has_regions[op_name] = len(op.regions) > 0
        if regions:
            for region in op.regions:
                for block in region.blocks:
                    identity([(hash(a), a.type) for a in block.arguments])
                    identity(len(block.operations))
        return advance

    module.operation.walk(visit, ir.WalkOrder.PRE_ORDER)


def measure(text: str, arch: Arch | None, repeat: int, clock: Callable[[], float]) -> list[float]:
    """Minimum milliseconds of the floor, then of each rung of ``LADDER``."""
    ctx = reference.make_context()
    with ctx, ir.Location.unknown():
        first = reference.parse(text, ctx)
        arch = arch or module_arch(first) or DEFAULT_ARCH
        smalto.infer_layout(first, arch=arch)
        plan = attribute_plan(first)
        runs: list[Callable[[ir.Module], object]] = [
            lambda m: floor_walk(m, plan),
            walk_only,
            names_and_handles,
            skeleton,
            partial(dataflow, consumers=rule_consumers()),
            read_program,
            lambda m: smalto.infer_layout(m, arch=arch),
        ]
        best = [float("inf")] * len(runs)
        for _ in range(repeat):
            for index, run in enumerate(runs):
                module = reference.parse(text, ctx)
                gc.collect()
                best[index] = min(best[index], timed(run, module, clock))  # type: ignore[arg-type]
    return [t * 1e3 for t in best]


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.bounds", description=__doc__)
    parser.add_argument("files", nargs="*", type=Path, metavar="FILES")
    parser.add_argument("--repeat", type=positive_int, default=DEFAULT_REPEAT)
    parser.add_argument("--clock", choices=sorted(CLOCKS), default="cpu")
    args = parser.parse_args(argv)
    files = kernel_files(args.files, "bench.bounds")
    if files is None:
        return 2
    clock = CLOCKS[args.clock]
    headers = ("module", "floor", *LADDER, "pass - read")
    rows, totals = [], [0.0] * (1 + len(LADDER))
    for path in files:
        times = measure(path.read_text(), index_arch(path), args.repeat, clock)
        totals = [a + b for a, b in zip(totals, times, strict=True)]
        rows.append(
            [display_name(path), *(f"{t:.2f}" for t in times), f"{times[-1] - times[-2]:.2f}"]
        )
    rows.append(["total", *(f"{t:.1f}" for t in totals), f"{totals[-1] - totals[-2]:.1f}"])
    floor = totals[0]
    analysis = (totals[-1] - totals[-2]) / floor
    rows.append(["x floor", *(f"{t / floor:.2f}" for t in totals), f"{analysis:.2f}"])
    print(f"Milliseconds, minimum of {args.repeat} runs ({args.clock} clock).")
    print(text_table(headers, rows))
    return 0


if __name__ == "__main__":
    sys.exit(main())
