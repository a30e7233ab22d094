"""The `arith` and `math` ops that are elementwise, named once.

Elementwise by their MLIR definition (the `Elementwise` trait): every result
element depends only on the operand elements at the same index, and all
vector operands and results have one shape. Their attributes (predicates,
fastmath and overflow flags, rounding modes) say nothing about shapes. The
layout rules give them one layout for operands and result
(``smalto.rules.arith``); the unit-dim rewrite computes them at any shape
(``smalto.rewrite``). No JAX import: the rewrite and the checker read it too.
"""

from __future__ import annotations

# Casts between element types: the shape is kept, the registers may be repacked.
CONVERSIONS = (
    "arith.extf",
    "arith.extsi",
    "arith.extui",
    "arith.truncf",
    "arith.trunci",
    "arith.fptosi",
    "arith.fptoui",
    "arith.sitofp",
    "arith.uitofp",
)

ELEMENTWISE = (
    # arith: integer and float arithmetic, bitwise, shifts, min/max
    "arith.addi",
    "arith.addf",
    "arith.subi",
    "arith.subf",
    "arith.muli",
    "arith.mulf",
    "arith.divsi",
    "arith.divui",
    "arith.divf",
    "arith.floordivsi",
    "arith.ceildivsi",
    "arith.ceildivui",
    "arith.remsi",
    "arith.remui",
    "arith.remf",
    "arith.andi",
    "arith.ori",
    "arith.xori",
    "arith.shli",
    "arith.shrui",
    "arith.shrsi",
    "arith.maximumf",
    "arith.minimumf",
    "arith.maxnumf",
    "arith.minnumf",
    "arith.maxsi",
    "arith.maxui",
    "arith.minsi",
    "arith.minui",
    "arith.negf",
    # comparisons and selects (a select's condition is a scalar or a vector of
    # the result's shape)
    "arith.cmpi",
    "arith.cmpf",
    "arith.select",
    # element type changes
    "arith.bitcast",
    *CONVERSIONS,
    # math: transcendental and rounding functions
    "math.exp",
    "math.exp2",
    "math.log",
    "math.log2",
    "math.log1p",
    "math.sin",
    "math.cos",
    "math.tanh",
    "math.sqrt",
    "math.rsqrt",
    "math.absf",
    "math.absi",
    "math.round",
    "math.roundeven",
    "math.copysign",
    "math.ctlz",
    "math.erf",
    "math.powf",
    "math.atan2",
)
