"""The ops the unit-dim rewrite knows, by what they do to shapes.

Only ops whose MLIR definition makes them exact under the rewrite are here;
an op not named is treated as needing its operands exactly as written (the
rewrite expands a value back right before it).
"""

from __future__ import annotations

# Elementwise by definition (`Elementwise` trait in MLIR's arith and math
# dialects): every result element depends only on the operand elements at the
# same index, and all vector operands and results have one shape. Their
# attributes (predicates, fastmath and overflow flags, rounding modes) say
# nothing about shapes.
ELEMENTWISE = frozenset(
    {
        # arith: arithmetic, bitwise, shifts, min/max
        "arith.addf",
        "arith.subf",
        "arith.mulf",
        "arith.divf",
        "arith.remf",
        "arith.negf",
        "arith.maximumf",
        "arith.minimumf",
        "arith.maxnumf",
        "arith.minnumf",
        "arith.addi",
        "arith.subi",
        "arith.muli",
        "arith.divsi",
        "arith.divui",
        "arith.floordivsi",
        "arith.ceildivsi",
        "arith.ceildivui",
        "arith.remsi",
        "arith.remui",
        "arith.andi",
        "arith.ori",
        "arith.xori",
        "arith.shli",
        "arith.shrui",
        "arith.shrsi",
        "arith.maxsi",
        "arith.maxui",
        "arith.minsi",
        "arith.minui",
        # comparisons and selects (a select's condition is a scalar or a vector
        # of the same shape)
        "arith.cmpf",
        "arith.cmpi",
        "arith.select",
        # casts between element types (the shape is kept)
        "arith.extf",
        "arith.truncf",
        "arith.extsi",
        "arith.extui",
        "arith.trunci",
        "arith.fptosi",
        "arith.fptoui",
        "arith.sitofp",
        "arith.uitofp",
        "arith.bitcast",
        # math
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
        "math.erf",
        "math.powf",
        "math.atan2",
    }
)

BROADCAST_IN_DIM = "mosaic_gpu.broadcast_in_dim"
SHAPE_CAST = "vector.shape_cast"
SPLAT_BROADCAST = "vector.broadcast"  # from a scalar only
CONSTANT = "arith.constant"
IOTA = "mosaic_gpu.broadcasted_iota"
MULTI_REDUCTION = "vector.multi_reduction"

FOR = "scf.for"
WHILE = "scf.while"
IF = "scf.if"
INDEX_SWITCH = "scf.index_switch"
YIELD = "scf.yield"
# Passes each operand through as the result of the same position.
OPTIMIZATION_BARRIER = "mosaic_gpu.optimization_barrier"
CONDITION = "scf.condition"
