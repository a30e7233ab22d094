"""Whether two modules compute the same: the reference evaluator's verdict.

Results are compared bit for bit (so -0.0 differs from +0.0, and integers and
``i1`` must match exactly), except that every NaN equals every NaN: MLIR
leaves a NaN result's sign and payload unspecified (the GPU returns its own
canonical NaN whatever numpy's payload would be). Nothing is compared with a
tolerance: a change to the module must keep the results exactly.

``assert_equivalent`` runs both modules over several trials (the inputs and
scalars differ per trial, see ``evaluator``) and insists that, over the
trials, every ``scf.if`` branch and ``scf.index_switch`` case that computes on
vectors ran, every loop that does ran its body, and every ``scf.for`` whose
bounds are not constants ran with two trip counts at least.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

import numpy as np
from evaluator import CONTROL_FLOW, Evaluator, walk
from jax._src.lib.mlir import ir

Array = np.ndarray


def same_bits(a: Array, b: Array) -> Array:
    """Per element: the same bits, or both NaN."""
    a, b = np.ascontiguousarray(a), np.ascontiguousarray(b)
    if a.dtype.itemsize == 0 or a.size == 0:
        return np.ones(a.shape, np.bool_)
    unsigned = np.dtype(f"u{a.dtype.itemsize}") if a.dtype.itemsize in (1, 2, 4, 8) else None
    if unsigned is None:
        same = (a.view(np.uint8) == b.view(np.uint8)).reshape(*a.shape, -1).all(-1)
    else:
        same = a.view(unsigned) == b.view(unsigned)
    if a.dtype.kind not in "iub":
        same |= np.isnan(a.astype(np.float32)) & np.isnan(b.astype(np.float32))
    return same


def assert_same_results(before: Sequence[Array], after: Sequence[Array], trial: int = 0) -> None:
    """Asserts two runs left the same buffers (``same_bits`` everywhere)."""
    assert len(before) == len(after), f"{len(before)} buffers before, {len(after)} after"
    for i, (a, b) in enumerate(zip(before, after, strict=True)):
        assert a.shape == b.shape and a.dtype == b.dtype, (i, a.shape, a.dtype, b.shape, b.dtype)
        same = same_bits(a, b)
        if not same.all():
            where = tuple(int(k) for k in np.argwhere(~same)[0])
            raise AssertionError(
                f"trial {trial}: buffer {i} ({a.shape} {a.dtype}) differs at "
                f"{int((~same).sum())} elements, first at {where}: "
                f"{a[where]!r} vs {b[where]!r}\n{a}\nvs\n{b}"
            )


@dataclass
class Verdict:
    """What the trials of ``assert_equivalent`` ran."""

    trials: int
    coverage: set[tuple[int, int]] = field(default_factory=set)
    trip_counts: dict[int, set[int]] = field(default_factory=dict)


def _touches_vectors(op: ir.Operation) -> bool:
    def vector(values: Sequence[ir.Value]) -> bool:
        return any(isinstance(v.type, ir.VectorType) for v in values)

    for region in op.regions:
        for block in region.blocks:
            if vector(list(block.arguments)):
                return True
            for inner in block.operations:
                inner = inner.operation
                if vector([*inner.operands, *inner.results]) or _touches_vectors(inner):
                    return True
    return False


def _region_touches_vectors(op: ir.Operation, number: int) -> bool:
    blocks = list(op.regions[number].blocks)
    if not blocks:
        return False
    for inner in blocks[0].operations:
        inner = inner.operation
        values = [*inner.operands, *inner.results]
        if any(isinstance(v.type, ir.VectorType) for v in values) or _touches_vectors(inner):
            return True
    return False


def _constant(value: ir.Value) -> bool:
    owner = value.owner
    return not isinstance(owner, ir.Block) and owner.operation.name == "arith.constant"


def requirements(module: ir.Module) -> tuple[dict[tuple[int, int], str], dict[int, str]]:
    """What the trials must run: the regions ((op number, region number) -> what it
    is) and the scf.for loops that must run with two trip counts (op number -> what)."""
    regions: dict[tuple[int, int], str] = {}
    varying: dict[int, str] = {}
    control = [op for op in walk(module) if op.name in CONTROL_FLOW]
    for number, op in enumerate(control):
        where = f"{op.name} at {op.location}"
        if op.name == "scf.for":
            if _touches_vectors(op):
                regions[(number, 0)] = f"the body of {where}"
                if not all(_constant(v) for v in list(op.operands)[:3]):
                    varying[number] = where
        elif op.name == "scf.while":
            if _touches_vectors(op):
                regions[(number, 1)] = f"the body of {where}"
        else:
            for region in range(len(op.regions)):
                if _region_touches_vectors(op, region):
                    regions[(number, region)] = f"region {region} of {where}"
    return regions, varying


def assert_equivalent(
    before: ir.Module,
    after: ir.Module,
    *,
    min_trials: int = 6,
    max_trials: int = 100,
    specials: bool = True,
) -> Verdict:
    """Asserts ``before`` and ``after`` leave the same buffers on the same random
    inputs, trial after trial, until ``min_trials`` ran and every requirement of
    ``requirements(before)`` was met; fails if that takes more than ``max_trials``."""
    with before.context:
        regions, varying = requirements(before)
    verdict = Verdict(0)
    for trial in range(max_trials):
        with before.context:
            first = Evaluator(before, trial, specials=specials)
            first_buffers = first.run()
        with after.context:
            second_buffers = Evaluator(after, trial, specials=specials).run()
        assert_same_results(first_buffers, second_buffers, trial)
        verdict.trials = trial + 1
        verdict.coverage |= first.coverage
        for number, counts in first.trip_counts.items():
            verdict.trip_counts.setdefault(number, set()).update(counts)
        if verdict.trials >= min_trials and not _missing(verdict, regions, varying):
            return verdict
    missing = _missing(verdict, regions, varying)
    raise AssertionError(f"not covered in {max_trials} trials: " + "; ".join(missing))


def _missing(
    verdict: Verdict, regions: dict[tuple[int, int], str], varying: dict[int, str]
) -> list[str]:
    missing = [f"{what} never ran" for key, what in regions.items() if key not in verdict.coverage]
    missing += [
        f"{what} always ran {sorted(verdict.trip_counts.get(number, set()))} times"
        for number, what in varying.items()
        if len(verdict.trip_counts.get(number, set())) < 2
    ]
    return missing
