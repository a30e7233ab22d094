"""The ops the unit-dim rewrite knows, by what they do to shapes.

Only ops whose MLIR definition makes them exact under the rewrite are here;
an op not named is treated as needing its operands exactly as written (the
rewrite expands a value back right before it).
"""

from __future__ import annotations

from smalto.basics import elementwise

# Elementwise by definition (``smalto.basics.elementwise``): exact at any shape.
ELEMENTWISE = frozenset(elementwise.ELEMENTWISE)

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
