"""What is statically known to divide an index: constants, `assume_multiple`, arithmetic.

Slices of SMEM refs may only be tiled by sizes that divide their offsets.
This walks the defining ops of an index on the program view (no MLIR calls but
to read a constant's value), with the same reasoning and depth bound as the
lowering's own check, so both agree on what is known.
"""

from __future__ import annotations

import math

from jax._src.lib.mlir import ir

from smalto.hw.numbers import prime_factors
from smalto.program import Kind, Program

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


class Divisibility:
    def __init__(self, program: Program) -> None:
        self.program = program
        self._constants: dict[int, int | None] = {}
        # Kernels slice many refs at the same few offsets (a loop index times a
        # block size): answers are remembered. Per (value, divisor), the depths
        # known to prove it and known not to: a proof within fewer steps is one
        # within more, so a question at another depth is often answered too.
        self._proved_at: dict[tuple[int, int], int] = {}  # least depth known to prove
        self._failed_at: dict[tuple[int, int], int] = {}  # greatest depth known to fail
        self._known: dict[tuple[int, int], int] = {}

    def constant(self, vid: int) -> int | None:
        """The integer value of an `arith.constant` result, else None."""
        if vid in self._constants:
            return self._constants[vid]
        value = None
        producer = self.program.values[vid].producer
        if producer is not None and producer.region is None:
            op = self.program.ops[producer.op]
            if op.name == "arith.constant":
                attr = op.operation.attributes["value"]
                if isinstance(attr, ir.IntegerAttr):
                    value = ir.IntegerAttr(attr).value
        self._constants[vid] = value
        return value

    def divides(self, vid: int, divisor: int, depth: int = _MAX_DEPTH) -> bool:
        """Whether ``divisor`` is known to divide the value ``vid``."""
        if divisor == 1:
            return True
        if depth < 0:
            return False
        key = (vid, divisor)
        if self._proved_at.get(key, _MAX_DEPTH + 1) <= depth:
            return True
        if self._failed_at.get(key, -1) >= depth:
            return False
        if self._divides_uncached(vid, divisor, depth):
            self._proved_at[key] = depth
            return True
        self._failed_at[key] = depth
        return False

    def _divides_uncached(self, vid: int, divisor: int, depth: int) -> bool:
        producer = self.program.values[vid].producer
        if producer is None:
            return False
        op = self.program.ops[producer.op]
        operands = op.operands
        deeper = depth - 1
        if producer.region is not None:
            # warp_map forwards its operands to its body's arguments.
            if op.name == "mosaic_gpu.warp_map":
                return self.divides(operands[producer.index], divisor, deeper)
            return False
        match op.name:
            case "mosaic_gpu.assume_multiple":
                multiple = ir.IntegerAttr(op.operation.attributes["multiple"]).value
                return multiple % divisor == 0 or self.divides(operands[0], divisor, deeper)
            case "arith.index_cast":
                return self.divides(operands[0], divisor, deeper)
            case "arith.constant":
                value = self.constant(vid)
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
        known = 1
        for factor in prime_factors(size):
            if self.divides(vid, known * factor):
                known *= factor
        return known
