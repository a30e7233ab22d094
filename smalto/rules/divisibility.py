"""What is statically known to divide an index: constants, `assume_multiple`, arithmetic.

Slices of SMEM refs may only be tiled by sizes that divide their offsets.
This walks the defining ops of an index on the program view (no MLIR calls but
to read a constant's value), with the same reasoning and depth bound as the
lowering's own check, so both agree on what is known.
"""

from __future__ import annotations

import enum
import math
from typing import Final, cast

from jax._src.lib.mlir import ir

from smalto.hw.numbers import prime_factors
from smalto.program.view import Kind, Program

_MAX_DEPTH = 10
# Divisible when both operands are: sums, differences, extrema, and remainders
# (a - q*b, so divisible by whatever divides both a and b).
_BOTH = frozenset(
    {
        "arith.addi",
        "arith.subi",
        "arith.maxsi",
        "arith.minsi",
        "arith.maxui",
        "arith.minui",
        "arith.remui",
        "arith.remsi",
    }
)


# A value asked about: its id in the program view, or (for a scalar the view
# has not registered) the bindings' value itself.
Node = int | ir.Value


class Divisibility:
    def __init__(self, program: Program) -> None:
        self.program = program
        # Kernels slice many refs at the same few offsets (a loop index times a
        # block size): answers are remembered. Per (value, divisor), the depths
        # known to prove it and known not to: a proof within fewer steps is one
        # within more, so a question at another depth is often answered too.
        # Values are keyed by id, or by hash (a negative id) where unregistered.
        self._proved_at: dict[tuple[int, int], int] = {}  # least depth known to prove
        self._failed_at: dict[tuple[int, int], int] = {}  # greatest depth known to fail
        self._known: dict[tuple[int, int], int] = {}
        self._definitions: dict[int, _Definition | None] = {}
        # Constants by value key: each is asked about once per divisor tried.
        self._constants: dict[int, int | None] = {}

    def _key(self, node: Node) -> int:
        # Hashes of values are pointers, ids small non-negative ints: apart.
        return node if type(node) is int else -1 - (hash(node) & _MASK)

    def _definition(self, node: Node) -> _Definition | None:
        """What defines a value: the op's name, operands and operation; None if unknown."""
        key = node if type(node) is int else self._key(node)
        known = self._definitions.get(key, _UNKNOWN)
        if known is not _UNKNOWN:
            return known
        definition: _Definition | None = None
        program = self.program
        if type(node) is int:
            bound = program.bound_value(node)
            if bound is not None:
                definition = _bound_definition(bound, program)
            else:
                producer = program.values[node].producer
                if producer is not None:
                    op = program.ops[producer.op]
                    if producer.region is None:
                        definition = (op.name, op.operands, op.operation)
                    elif op.name == "mosaic_gpu.warp_map":
                        # warp_map forwards its operands to its body's arguments.
                        definition = (_FORWARDED, (op.operands[producer.index],), op.operation)
        else:
            # Not an id, so a value (``type(node) is int`` narrows only the if branch).
            definition = _bound_definition(cast(ir.Value, node), program)
        self._definitions[key] = definition
        return definition

    def constant(self, node: Node) -> int | None:
        """The integer value of an `arith.constant` result, else None."""
        key = node if type(node) is int else self._key(node)
        known = self._constants.get(key, _UNKNOWN)
        if known is not _UNKNOWN:
            return known
        definition = self._definition(node)
        value: int | None = None
        if definition is not None and definition[0] == "arith.constant":
            attr = definition[2].attributes["value"]
            if isinstance(attr, ir.IntegerAttr):
                value = ir.IntegerAttr(attr).value
        self._constants[key] = value
        return value

    def divides(self, node: Node, divisor: int, depth: int = _MAX_DEPTH) -> bool:
        """Whether ``divisor`` is known to divide the value ``node``."""
        if divisor == 1:
            return True
        if depth < 0:
            return False
        key = (node if type(node) is int else self._key(node), divisor)
        if self._proved_at.get(key, _MAX_DEPTH + 1) <= depth:
            return True
        if self._failed_at.get(key, -1) >= depth:
            return False
        if self._divides_uncached(node, divisor, depth):
            self._proved_at[key] = depth
            return True
        self._failed_at[key] = depth
        return False

    def _divides_uncached(self, node: Node, divisor: int, depth: int) -> bool:
        definition = self._definition(node)
        if definition is None:
            return False
        name, operands, operation = definition
        deeper = depth - 1
        if name == _FORWARDED:
            return self.divides(operands[0], divisor, deeper)
        match name:
            case "mosaic_gpu.assume_multiple":
                multiple = ir.IntegerAttr(operation.attributes["multiple"]).value
                return multiple % divisor == 0 or self.divides(operands[0], divisor, deeper)
            case "arith.index_cast":
                return self.divides(operands[0], divisor, deeper)
            case "arith.constant":
                value = self.constant(node)
                return value is not None and value % divisor == 0
            case "arith.muli":
                return self.divides(operands[0], divisor, deeper) or self.divides(
                    operands[1], divisor, deeper
                )
            case "arith.select":
                return self.divides(operands[1], divisor, deeper) and self.divides(
                    operands[2], divisor, deeper
                )
            case name if name in _BOTH:
                return self.divides(operands[0], divisor, deeper) and self.divides(
                    operands[1], divisor, deeper
                )
            case "arith.andi":
                return divisor.bit_count() == 1 and (
                    self.divides(operands[0], divisor, deeper)
                    or self.divides(operands[1], divisor, deeper)
                )
            case "arith.trunci":
                return divisor.bit_count() == 1 and self.divides(operands[0], divisor, deeper)
        return False

    def known_divisor(self, size: int, vid: int) -> int:
        """The largest divisor of ``size`` known to divide the value ``vid``."""
        if size <= 0:
            raise ValueError(f"slice size {size} is not positive")
        if size == 1:
            return 1  # (without reading how the value is defined)
        if self.program.values[vid].kind == Kind.VECTOR:
            return 1  # gather indices: nothing is known of the elements
        key = (vid, size)
        known = self._known.get(key)
        if known is None:
            known = self._known[key] = self._known_divisor(size, vid)
        return known

    def _known_divisor(self, size: int, vid: int) -> int:
        constant = self.constant(vid)
        if constant is not None:
            return math.gcd(size, constant)
        # What is known to divide a value is closed under taking divisors, so
        # when the whole size divides, so does each product the loop below
        # would try: one question instead of one per prime factor (offsets are
        # usually multiples of the slice size).
        if self.divides(vid, size):
            return size
        # Factors come smallest first: once ``known * p`` fails, each further
        # p would ask the same question again (``known`` stays), so is skipped.
        known, failed = 1, 0
        for factor in prime_factors(size):
            if factor != failed:
                if self.divides(vid, known * factor):
                    known *= factor
                else:
                    failed = factor
        return known


class _Unknown(enum.Enum):
    """What a cache holds for a value not asked about yet (None is an answer)."""

    UNKNOWN = enum.auto()


# One member: ``known is not _UNKNOWN`` narrows what a cache lookup found to an answer.
_UNKNOWN: Final = _Unknown.UNKNOWN
# The name a warp_map body argument's definition goes by: its operand, forwarded.
_FORWARDED = "(forwarded)"
_MASK = (1 << 62) - 1
# (op name, operands, operation) of a value's defining op.
_Definition = tuple[str, "tuple[Node, ...]", ir.Operation]


def _bound_definition(value: ir.Value, program: Program) -> _Definition | None:
    """The definition of a value the program view has not registered, from the bindings.

    Its operands stay bindings' values, but those the view has ids for.
    (The bindings hand out values cast to ``OpResult`` or ``BlockArgument``.)
    """
    if type(value) is ir.OpResult:
        # The owner is an OpView or an Operation; each gives its Operation (itself).
        operation = value.owner.operation
        name = operation.name
        if name not in _READ:
            return (name, (), operation)  # nothing is known through it
        find = program.find
        # Indexed: iterating an operand list through the bindings costs more.
        bound = operation.operands
        operands: list[Node] = []
        for i in range(len(bound)):
            v = bound[i]
            vid = find(v)
            operands.append(v if vid is None else vid)
        return (name, tuple(operands), operation)
    if isinstance(value, ir.BlockArgument):
        argument: ir.BlockArgument[ir.Type] = ir.BlockArgument(value)
        operation = argument.owner.owner.operation
        if operation.name != "mosaic_gpu.warp_map":
            return None
        forwarded = operation.operands[argument.arg_number]
        vid = program.find(forwarded)
        return (_FORWARDED, (forwarded if vid is None else vid,), operation)
    if isinstance(value, ir.OpResult):
        return _bound_definition(ir.OpResult(value), program)
    return None


# The ops whose operands the analysis looks through.
_READ = _BOTH | {
    "mosaic_gpu.assume_multiple",
    "arith.index_cast",
    "arith.constant",
    "arith.muli",
    "arith.select",
    "arith.andi",
    "arith.trunci",
}
