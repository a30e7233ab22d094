"""A reference evaluator for the vector level of Mosaic GPU modules, in numpy.

The test oracle of the unit-dim rewrite (``smalto.rewrite``): a module and its
rewrite, run on the same random inputs, must leave the same bits in every
buffer (``equivalence.assert_equivalent`` runs both over several trials and
checks that every branch and loop that computes on vectors ran). Each op is
evaluated from its MLIR definition (``evaluator_ops``, ``evaluator_arith``),
at warpgroup level: one evaluation of the kernel body, vectors as whole numpy
arrays.

- Memory: every ref that an op makes out of nothing (a kernel argument, an
  SMEM slice, a TMEM allocation, an ``alloca``) is a numpy array filled with
  random values (``evaluator_inputs``: with NaN, infinities and -0.0 in most
  trials), a new one per op (``buffers``, in the order they are made; the
  rewrite never adds, removes or reorders them); views are numpy views of it.
- Scalars are random too: a scalar function argument (an ``i1`` either way, an
  integer small, like a trip count or a switch selector) and the scalar
  results of the ops the evaluator does not model (``nvvm.elect.sync``,
  ``gpu.thread_id``, ...): each such op draws from a stream of its own, so
  both modules of a comparison see the same scalars in the same order. So
  ``scf.if``, ``scf.index_switch``, ``scf.while`` and argument-bounded
  ``scf.for`` run every way over the trials, and the evaluator records which
  (``coverage``, ``trip_counts``).
- Ops with neither vector operands nor results whose meaning is not needed
  (barriers, fences, TMA copies, ``llvm`` bookkeeping) do nothing. An op with
  a vector operand or result that the evaluator does not know raises
  ``NotImplementedError``: nothing is silently ignored where the rewrite acts.

``run(module, seed)`` returns the buffers after the kernel ran.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from typing import Any

import numpy as np
from evaluator_inputs import random_array, random_scalar
from evaluator_ops import (
    HANDLERS,
    broadcast_in_dim,
    elementwise,
    ints,
    is_modelled,
    numpy_dtype,
    shape_and_dtype,
)
from jax._src.lib.mlir import ir

__all__ = ["CONTROL_FLOW", "Evaluator", "broadcast_in_dim", "run", "walk"]

Array = np.ndarray

CONTROL_FLOW = ("scf.for", "scf.while", "scf.if", "scf.index_switch")
MAX_ITERATIONS = 100_000  # a loop that runs longer is an input the evaluator does not run
_TERMINATORS = ("scf.yield", "scf.condition", "func.return", "gpu.terminator")


def walk(module: ir.Module) -> Iterator[ir.Operation]:
    """Every op of ``module`` in program order (an op before the ops nested in it)."""

    def ops_in(op: ir.Operation) -> Iterator[ir.Operation]:
        for region in op.regions:
            for block in region.blocks:
                for inner in block.operations:
                    inner = inner.operation
                    yield inner
                    yield from ops_in(inner)

    yield from ops_in(module.operation)


class Evaluator:
    """Runs one module once; ``buffers`` holds the memory it made, in order.

    ``seed`` draws the inputs; it is also the trial number (``evaluator_inputs``
    varies what it draws by trial). ``specials=False``: no NaN, infinities or
    -0.0 in the inputs.
    """

    def __init__(self, module: ir.Module, seed: int = 0, *, specials: bool = True) -> None:
        self.module = module
        self.seed = seed
        self.specials = specials
        self.values: dict[ir.Value, Any] = {}
        self.buffers: list[Array] = []
        self._made: dict[ir.Operation | ir.Value, list[Array]] = {}
        # Ops numbered in program order, the same in a module and its rewrite
        # (which adds and removes vector ops only): control flow, and the ops
        # whose scalar results the evaluator makes up.
        ops = list(walk(module))
        self.control_flow = [op for op in ops if op.name in CONTROL_FLOW]
        self._control_number = {op: i for i, op in enumerate(self.control_flow)}
        made_up = [op for op in ops if not is_modelled(op.name) and _has_scalar_result(op)]
        self._streams = {
            op: np.random.default_rng([seed, 2_000_000 + i]) for i, op in enumerate(made_up)
        }
        # (control-flow op number, region number) of every region that ran; the
        # trip counts of each scf.for and scf.while.
        self.coverage: set[tuple[int, int]] = set()
        self.trip_counts: dict[int, set[int]] = {}

    # -- driving

    def run(self) -> list[Array]:
        for op in self.module.body.operations:
            op = op.operation
            if op.name == "func.func" and list(op.regions[0].blocks):
                block = list(op.regions[0].blocks)[0]
                for number, argument in enumerate(block.arguments):
                    self.values[argument] = self._argument(number, argument)
                self.block(block)
        return self.buffers

    def block(self, block: ir.Block) -> list[Any]:
        """Evaluates a block; returns its terminator's operand values."""
        for op in block.operations:
            op = op.operation
            if op.name in _TERMINATORS:
                return [self.values.get(v) for v in op.operands]
            self.op(op)
        return []

    def region(self, region: ir.Region, arguments: Sequence[Any]) -> list[Any]:
        block = list(region.blocks)[0]
        for argument, value in zip(block.arguments, arguments, strict=True):
            self.values[argument] = value
        return self.block(block)

    def op(self, op: ir.Operation) -> None:
        with np.errstate(all="ignore"):  # NaNs and infinities are values like any other
            results = self._results(op)
        for result, value in zip(op.results, results, strict=True):
            self.values[result] = value

    def _results(self, op: ir.Operation) -> list[Any]:
        name = op.name
        if name in _CONTROL_FLOW_RULES:
            return _CONTROL_FLOW_RULES[name](self, op)
        if name in HANDLERS:
            return HANDLERS[name](self, op)
        if is_modelled(name):
            return elementwise(self, op)
        return self.unknown(op)

    def operands(self, op: ir.Operation) -> list[Any]:
        return [self.values[v] for v in op.operands]

    def unknown(self, op: ir.Operation) -> list[Any]:
        """An op the evaluator does not model: only where no vector is involved."""
        involved = [*op.operands, *op.results]
        if any(isinstance(v.type, ir.VectorType) for v in involved):
            raise NotImplementedError(f"the evaluator has no rule for {op.name} on vectors")
        if op.name == "gpu.launch":
            # One block of the grid: block ids 0, grid and block sizes 1.
            sizes = [np.asarray(1, np.int64)] * 6
            block = list(op.regions[0].blocks)[0]
            count = len(list(block.arguments))
            arguments = ([np.asarray(0, np.int64)] * 6 + sizes)[:count]
            arguments += [np.asarray(0, np.int64)] * (count - len(arguments))
            self.region(op.regions[0], arguments)
            return [self.made_up(op, r.type) for r in op.results]
        if any(list(region.blocks) for region in op.regions):
            raise NotImplementedError(f"the evaluator has no rule for {op.name}, which has regions")
        return [self.result(op, r.type) for r in op.results]

    def result(self, op: ir.Operation, ty: ir.Type, index: int = 0) -> Any:
        """What an op makes out of nothing: a new buffer for a ref, else a made-up scalar."""
        if isinstance(ty, ir.MemRefType):
            return self.fresh(op, ty, index)
        return self.made_up(op, ty)

    # -- control flow

    def took(self, op: ir.Operation, region: int) -> None:
        self.coverage.add((self._control_number[op], region))

    def counted(self, op: ir.Operation, trips: int) -> None:
        self.trip_counts.setdefault(self._control_number[op], set()).add(trips)

    # -- values

    def _argument(self, number: int, argument: ir.Value) -> Any:
        """A function argument: a ref is a new buffer, a vector or scalar random input."""
        ty = argument.type
        if isinstance(ty, ir.MemRefType):
            return self.fresh(argument, ty)
        rng = np.random.default_rng([self.seed, 1_000_000 + number])
        if isinstance(ty, ir.VectorType):
            shape, dtype = shape_and_dtype(ty)
            return random_array(rng, shape, dtype, trial=self.seed, specials=self.specials)
        try:
            return random_scalar(rng, numpy_dtype(ty))
        except NotImplementedError:
            return None

    def made_up(self, op: ir.Operation, ty: ir.Type) -> Any:
        """A scalar result of an op the evaluator does not model: random, from the op's
        own stream (else nothing: a token, a pointer)."""
        try:
            dtype = numpy_dtype(ty)
        except NotImplementedError:
            return None
        stream = self._streams.get(op)
        if stream is None:  # (a modelled op that makes a ref also makes up its scalars)
            stream = self._streams.setdefault(op, np.random.default_rng([self.seed, 3_000_000]))
        return random_scalar(stream, dtype, made_up=True)

    def fresh(self, op: ir.Operation | ir.Value, ty: ir.Type, index: int = 0) -> Array:
        """The buffer ``op`` makes (the same each time it runs), random."""
        made = self._made.setdefault(op, [])
        if index < len(made):
            return made[index]
        try:
            shape, dtype = shape_and_dtype(ty)
        except NotImplementedError:  # barriers and the like: not data
            made.append(np.zeros((), np.int64))
            return made[-1]
        if any(n < 0 for n in shape):
            raise NotImplementedError(f"a dynamically shaped buffer from {op}")
        rng = np.random.default_rng([self.seed, len(self.buffers)])
        buffer = random_array(rng, shape, dtype, trial=self.seed, specials=self.specials)
        self.buffers.append(buffer)
        made.append(buffer)
        return buffer


def _has_scalar_result(op: ir.Operation) -> bool:
    return any(not isinstance(r.type, ir.VectorType | ir.MemRefType) for r in op.results)


# --- scf ---------------------------------------------------------------------------


def _for(ev: Evaluator, op: ir.Operation) -> list[Any]:
    lower, upper, step, *carried = ev.operands(op)
    unsigned = "unsignedCmp" in op.attributes
    dtype = np.asarray(lower).dtype
    i, trips = int(lower), 0
    stop, by = int(upper), int(step)
    if unsigned:
        bits = dtype.itemsize * 8
        i, stop = i % (1 << bits), stop % (1 << bits)
    # A step of 0 or less is undefined: the evaluator runs no iteration.
    while by > 0 and i < stop:
        trips += 1
        if trips > MAX_ITERATIONS:
            raise NotImplementedError(f"scf.for ran more than {MAX_ITERATIONS} iterations")
        ev.took(op, 0)
        induction = np.asarray(i, np.uint64 if unsigned else np.int64).astype(dtype)
        carried = ev.region(op.regions[0], [induction, *carried])
        i += by
    ev.counted(op, trips)
    return carried


def _while(ev: Evaluator, op: ir.Operation) -> list[Any]:
    carried = ev.operands(op)
    for trips in range(MAX_ITERATIONS + 1):
        ev.took(op, 0)
        condition, *passed = ev.region(op.regions[0], carried)
        if not bool(condition):
            ev.counted(op, trips)
            return passed
        ev.took(op, 1)
        carried = ev.region(op.regions[1], passed)
    raise NotImplementedError(f"scf.while ran more than {MAX_ITERATIONS} iterations")


def _if(ev: Evaluator, op: ir.Operation) -> list[Any]:
    (condition,) = ev.operands(op)
    taken = 0 if bool(condition) else 1
    ev.took(op, taken)
    region = op.regions[taken]
    if not list(region.blocks):
        return []
    return ev.region(region, [])


def _index_switch(ev: Evaluator, op: ir.Operation) -> list[Any]:
    (index,) = ev.operands(op)
    cases = ints(op.attributes["cases"])
    # The default region first, then one per case.
    taken = 1 + cases.index(int(index)) if int(index) in cases else 0
    ev.took(op, taken)
    return ev.region(op.regions[taken], [])


_CONTROL_FLOW_RULES = {
    "scf.for": _for,
    "scf.while": _while,
    "scf.if": _if,
    "scf.index_switch": _index_switch,
}


def run(module: ir.Module, seed: int = 0, *, specials: bool = True) -> list[Array]:
    """The buffers ``module`` leaves after one run on random inputs drawn from ``seed``."""
    with module.context:
        return Evaluator(module, seed, specials=specials).run()
