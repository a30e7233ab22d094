"""Staging through SMEM, for the tests: the staged module against the module as written.

``assert_staging_exact(before, after)`` runs both modules on the same random
inputs (``equivalence``'s trials) and asserts they leave the same bits in every
buffer of the module as written but SMEM (which ends with the block). SMEM is
modelled as what it is, one block of bytes (``SmemArena``): every ``slice_smem``
is a view of it at its offset, the same random bytes in both runs, and a TMA copy
out of it lands in GMEM at once, so that a staging buffer placed in SMEM the
kernel still needs overwrites what the kernel reads or copies out there, and the
runs differ. The ops
staging adds carry ``smalto.staged``: the evaluator runs them (the store into the
staging buffer, the load back), but their buffer is no buffer of the kernel (not
compared, and not counted in the order that seeds the kernel's own buffers), and
the scalars they make up (the thread index) come from streams of their own, so
that both modules see the same inputs and the same scalars everywhere else.
"""

from __future__ import annotations

import functools
from typing import Any

import numpy as np
from equivalence import Verdict, assert_same_results, requirements
from evaluator import Evaluator, walk
from evaluator_inputs import random_array
from evaluator_ops import shape_and_dtype
from jax._src.lib.mlir import ir

from smalto.basics.mlir import clone_module, in_context
from smalto.hw.memory import STAGED
from smalto.pipeline.steps import Unsatisfiable, solve_as_written
from smalto.rewrite.staging import stage
from smalto.rewrite.transfers import Plan
from smalto.solve.options import SolveOptions


def without_proven_ends(monkeypatch: Any) -> None:
    """The liveness analysis as it was before the ends of asynchronous accesses were
    proven (TMA loads and MMA operands never end): for the tests of staging past the end
    of SMEM or into the reductions' scratch, which the MMA operands' dead bytes would
    otherwise serve first."""
    from smalto.program.smem_liveness import SmemLiveness

    monkeypatch.setattr(SmemLiveness, "_end_asynchronous", lambda *_: None)


def staged(op: ir.Operation) -> bool:
    return STAGED in op.attributes


_ARENA_BYTES = 1 << 19  # past any block's SMEM (227 KiB) and what staging may add


@functools.lru_cache(maxsize=16)  # (the trials of a module: a few seeds)
def _arena_bytes(seed: int) -> np.ndarray:
    """A trial's SMEM bytes, drawn once a process (half a MiB: drawing them costs more
    than a small kernel's run); each run writes to a copy."""
    rng = np.random.default_rng([seed, 7_000_000])
    arena = rng.integers(0, 256, _ARENA_BYTES, dtype=np.uint8)
    arena.flags.writeable = False
    return arena


class SmemArena(Evaluator):
    """The reference evaluator with SMEM as one block of random bytes (the same in every
    run of a trial): each ``slice_smem`` a view of it at its offset."""

    def __init__(self, module: ir.Module, seed: int = 0, *, specials: bool = True) -> None:
        super().__init__(module, seed, specials=specials)
        self.arena = _arena_bytes(seed).copy()
        self.smem_buffers: set[int] = set()  # the numbers of the buffers that are SMEM

    def _results(self, op: ir.Operation) -> list[Any]:
        if op.name == "mosaic_gpu.async_store" and self._copy_out(op):
            return []
        return super()._results(op)

    def _copy_out(self, op: ir.Operation) -> bool:
        """A TMA copy of an SMEM buffer into a window of a GMEM one, made at once (the
        bytes the kernel leaves in GMEM: what is compared); False where it is of a form
        not modelled here (a reduction, a broadcast), left to the evaluator."""
        if "reduction_op" in op.attributes:
            return False
        segments = list(ir.DenseI32ArrayAttr(op.attributes["operandSegmentSizes"]))
        if len(segments) < 3 or any(segments[3:]):
            return False
        source, destination = self.values[op.operands[0]], self.values[op.operands[1]]
        lengths = list(ir.DenseI64ArrayAttr(op.attributes["slice_lengths"]))
        indices = [int(self.values[v]) for v in list(op.operands)[2 : 2 + segments[2]]]
        if len(indices) != len(lengths) or not isinstance(destination, np.ndarray):
            return False
        window = tuple(
            i if n == -1 else slice(i, i + n) for i, n in zip(indices, lengths, strict=True)
        )
        destination[window] = np.asarray(source).reshape(destination[window].shape)
        return True

    def smem_view(self, op: ir.Operation, ty: ir.Type) -> np.ndarray | None:
        """The bytes a slice views, as its elements (None: not data, e.g. barriers)."""
        try:
            shape, dtype = shape_and_dtype(ty)
        except NotImplementedError:
            return None
        offset = int(ir.IntegerAttr(op.attributes["offset"]).value)
        size = int(np.prod(shape, dtype=np.int64)) * np.dtype(dtype).itemsize
        assert offset + size <= _ARENA_BYTES, "a slice past the modelled SMEM"
        return self.arena[offset : offset + size].view(dtype).reshape(shape)

    def fresh(self, op: Any, ty: ir.Type, index: int = 0) -> np.ndarray:
        if isinstance(op, ir.Value) or op.name != "mosaic_gpu.slice_smem":
            return super().fresh(op, ty, index)
        made = self._made.setdefault(op, [])
        if index < len(made):
            return made[index]
        view = self.smem_view(op, ty)
        if view is None:
            return super().fresh(op, ty, index)
        if not staged(op):
            # The kernel's own buffers are numbered (seeding those made after); SMEM's last
            # bytes are no output (the block's SMEM ends with it): not compared.
            self.buffers.append(view)
            self.smem_buffers.add(len(self.buffers) - 1)
        made.append(view)
        return view


class StagingAwareEvaluator(SmemArena):
    """The reference evaluator, with the ops staging added kept apart (see the module)."""

    def __init__(self, module: ir.Module, seed: int = 0, *, specials: bool = True) -> None:
        super().__init__(module, seed, specials=specials)
        # The kernel's own made-up scalars numbered without the staging ops, as in the module
        # as written; the staging ops' from streams of their own.
        own = [op for op in self._streams if not staged(op)]
        extra = [op for op in self._streams if staged(op)]
        self._streams = {
            op: np.random.default_rng([seed, 2_000_000 + i]) for i, op in enumerate(own)
        } | {op: np.random.default_rng([seed, 5_000_000 + i]) for i, op in enumerate(extra)}
        self.staging_buffers: list[np.ndarray] = []

    def fresh(self, op: Any, ty: ir.Type, index: int = 0) -> np.ndarray:
        if isinstance(op, ir.Value) or not staged(op) or op.name == "mosaic_gpu.slice_smem":
            return super().fresh(op, ty, index)
        made = self._made.setdefault(op, [])
        if index < len(made):
            return made[index]
        shape, dtype = shape_and_dtype(ty)
        rng = np.random.default_rng([self.seed, 6_000_000 + len(self.staging_buffers)])
        buffer = random_array(rng, shape, dtype, trial=self.seed, specials=self.specials)
        self.staging_buffers.append(buffer)
        made.append(buffer)
        return buffer


def assert_staging_exact(
    before: ir.Module, after: ir.Module, *, min_trials: int = 6, max_trials: int = 60
) -> Verdict:
    """Asserts the staged ``after`` leaves every buffer of ``before`` as ``before`` does, over
    the trials ``equivalence.assert_equivalent`` would run (every branch and loop covered)."""
    with after.context:
        assert any(staged(op) for op in walk(after)), "nothing was staged"
    with before.context:
        regions, varying = requirements(before)
    verdict = Verdict(0)
    for trial in range(max_trials):
        with before.context:
            first = SmemArena(before, trial)
            first_buffers = first.run()
        with after.context:
            second = StagingAwareEvaluator(after, trial)
            second_buffers = second.run()
        # What the kernel leaves in GMEM (a staging buffer over SMEM the kernel still
        # needs changes what it computes there); SMEM is gone with the block.
        assert first.smem_buffers == second.smem_buffers
        outputs = [i for i in range(len(first_buffers)) if i not in first.smem_buffers]
        assert_same_results(
            [first_buffers[i] for i in outputs], [second_buffers[i] for i in outputs], trial
        )
        verdict.trials = trial + 1
        verdict.coverage |= first.coverage
        for number, counts in first.trip_counts.items():
            verdict.trip_counts.setdefault(number, set()).update(counts)
        if verdict.trials >= min_trials and all(key in verdict.coverage for key in regions):
            if all(len(verdict.trip_counts.get(n, set())) >= 2 for n in varying):
                return verdict
    raise AssertionError(f"not covered in {max_trials} trials")


def staged_text(module: ir.Module, arch: tuple[int, int]) -> str:
    """The module as ``stage_through_smem`` changes it, before any layout is written: the
    transfers the plan finds in the way, staged (on a copy)."""
    options = SolveOptions(arch=arch)
    with in_context(module):
        try:
            solve_as_written(module, options)
        except Unsatisfiable as failure:
            ops = Plan(failure.program, failure.system, options).fewest()
        else:
            raise AssertionError("the module infers as written: nothing to stage")
        assert ops is not None
        copy = clone_module(module)
        stage(copy, ops)
        return str(copy)
