"""Deliberately wrong rewrites: what the evaluator-based check must catch.

Each mutant is a keep-dims module (written as Pallas emits it: statistics
reduced from a loaded tile with a broadcast ``acc``, expanded to (N, 1) by
``broadcast_in_dim``, broadcast back against the tile) and a wrong way to
rewrite it: the unit-dim rewrite with one pattern patched, or the rewritten
module corrupted the way a plausible bug would. Every mutant verifies, and
changes what the module computes only on some inputs: a branch or loop that
runs only for some arguments, NaN, -0.0, unsigned or ``i1`` integers.
``tests/beyond_jax/test_mutants.py`` asserts the check catches each one (and passes the
real rewrite).
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass
from unittest import mock

from jax._src.lib.mlir import ir
from mlir_snippets import func_module, parse

from smalto.rewrite import RewrittenOp, patterns, rewrite_unit_dims
from smalto.rewrite.webs import Web, i64_array

BID = "mosaic_gpu.broadcast_in_dim"
STORE = "mosaic_gpu.vector_store"
LOAD = "mosaic_gpu.vector_load"


@dataclass(frozen=True)
class Mutant:
    name: str
    why: str  # what is wrong, and which inputs show it
    text: str  # the module as written
    rewrite_wrongly: Callable[[ir.Module], ir.Module]  # the module wrongly rewritten


def rewritten(module: ir.Module) -> ir.Module:
    """``module`` rewritten by the real rewrite (in place); asserts it changed something."""
    with module.context, ir.Location.unknown():
        assert rewrite_unit_dims(module), "the rewrite left the module alone"
    return module


# --- Wrong rewrites ------------------------------------------------------------------


def _fold_along_the_dropped_dims(op: ir.Operation, web: Web) -> RewrittenOp:
    """A wrong ``fold_broadcast``: maps the squeezed value's dim to where the dropped
    unit dim went instead of where the kept dim went (a transposed broadcast)."""
    dims = i64_array(op.attributes["broadcast_dimensions"])
    folded = [dims[d] for d in web.dropped]
    op.attributes["broadcast_dimensions"] = ir.DenseI64ArrayAttr.get(folded)
    return RewrittenOp(op.name, "(mutant)", None, f"now broadcasts along {folded}")


def with_wrong_folds(module: ir.Module) -> ir.Module:
    with mock.patch.object(patterns, "fold_broadcast", _fold_along_the_dropped_dims):
        return rewritten(module)


def text_mutation(pattern: str, replacement: str) -> Callable[[ir.Module], ir.Module]:
    """The real rewrite, then one textual change of the rewritten module (which must
    match exactly once)."""

    def rewrite_wrongly(module: ir.Module) -> ir.Module:
        text = str(rewritten(module))
        changed, count = re.subn(pattern, replacement, text)
        assert count == 1, f"{pattern!r} matched {count} times in\n{text}"
        return parse(changed, module.context)

    return rewrite_wrongly


def renumbered_case(module: ir.Module) -> ir.Module:
    """The real rewrite, then ``index_switch`` case 1 renumbered 2 (its region is now
    taken for 2, and 1 takes the default): regions rebuilt out of order."""
    rewritten(module)
    with module.context:
        (switch,) = [op for op in _ops(module) if op.name == "scf.index_switch"]
        cases = [2 if c == 1 else c for c in i64_array(switch.attributes["cases"])]
        switch.attributes["cases"] = ir.DenseI64ArrayAttr.get(cases)
    return module


def _ops(module: ir.Module) -> list[ir.Operation]:
    found: list[ir.Operation] = []

    def visit(op: ir.Operation) -> None:
        for region in op.regions:
            for block in region.blocks:
                for inner in block.operations:
                    found.append(inner.operation)
                    visit(inner.operation)

    visit(module.operation)
    return found


# --- The modules -----------------------------------------------------------------------


def _row_mean(tile: str = "8x8") -> str:
    """The row mean of a loaded tile as a (8, 1) statistic, as Pallas emits
    ``jnp.mean(x, axis=-1, keepdims=True)``."""
    return f"""
%x = "{LOAD}"(%x_ref) : (memref<{tile}xf32>) -> vector<{tile}xf32>
%zero = arith.constant 0.0 : f32
%acc = vector.broadcast %zero : f32 to vector<8xf32>
%sum = vector.multi_reduction <add>, %x, %acc [1] : vector<{tile}xf32> to vector<8xf32>
%keep = {BID}(%sum : vector<8xf32>) <broadcast_dimensions = [0]> -> vector<8x1xf32>
%scale = arith.constant dense<0.125> : vector<8x1xf32>
%mean = arith.mulf %keep, %scale : vector<8x1xf32>
"""


_CENTER = f"""
%wide = {BID}(%mean : vector<8x1xf32>) <broadcast_dimensions = [0, 1]> -> vector<8x8xf32>
%centered = arith.subf %x, %wide : vector<8x8xf32>
"""

_TILE_ARGS = [("x_ref", "memref<8x8xf32>")]
_OUT = ("out", "memref<8x8xf32>")


def _store(value: str, shape: str = "8x8", element: str = "f32", out: str = "out") -> str:
    ty = f"{shape}x{element}"
    return f'"{STORE}"(%{value}, %{out}) : (vector<{ty}>, memref<{ty}>) -> ()'


FOLD_IN_IF = func_module(
    f"""{_row_mean()}
%y = scf.if %flag -> (vector<8x8xf32>) {{
{_CENTER}
  scf.yield %centered : vector<8x8xf32>
}} else {{
  scf.yield %x : vector<8x8xf32>
}}
{_store("y")}
""",
    [*_TILE_ARGS, ("flag", "i1"), _OUT],
)

FOLD_IN_FOR = func_module(
    f"""{_row_mean()}
%c0 = arith.constant 0 : index
%c1 = arith.constant 1 : index
%y = scf.for %i = %c0 to %n step %c1 iter_args(%t = %x) -> (vector<8x8xf32>) {{
  %wide = {BID}(%mean : vector<8x1xf32>) <broadcast_dimensions = [0, 1]> -> vector<8x8xf32>
  %next = arith.subf %t, %wide : vector<8x8xf32>
  scf.yield %next : vector<8x8xf32>
}}
{_store("y")}
""",
    [*_TILE_ARGS, ("n", "index"), _OUT],
)

# ``lax.while_loop`` on a trip count read from a ref, as Pallas emits it.
FOLD_IN_WHILE = func_module(
    f"""{_row_mean()}
%c0 = arith.constant 0 : index
%c0_i32 = arith.constant 0 : i32
%c1_i32 = arith.constant 1 : i32
%view = memref.subview %n_ref[0] [1] [1] : memref<1xi32> to memref<i32, strided<[]>>
%n = memref.load %view[] : memref<i32, strided<[]>>
%w:2 = scf.while (%i = %c0_i32, %t = %x) : (i32, vector<8x8xf32>) -> (i32, vector<8x8xf32>) {{
  %go = arith.cmpi slt, %i, %n : i32
  scf.condition(%go) %i, %t : i32, vector<8x8xf32>
}} do {{
^bb0(%j: i32, %u: vector<8x8xf32>):
  %k = arith.addi %j, %c1_i32 : i32
  %wide = {BID}(%mean : vector<8x1xf32>) <broadcast_dimensions = [0, 1]> -> vector<8x8xf32>
  %next = arith.subf %u, %wide : vector<8x8xf32>
  scf.yield %k, %next : i32, vector<8x8xf32>
}}
{_store("w#1")}
""",
    [*_TILE_ARGS, ("n_ref", "memref<1xi32>"), _OUT],
)

# ``lax.switch`` on an index: a (8, 1) statistic computed three ways.
SWITCH = func_module(
    f"""{_row_mean()}
%s = scf.index_switch %which -> vector<8x1xf32>
case 0 {{
  %a = arith.addf %mean, %mean : vector<8x1xf32>
  scf.yield %a : vector<8x1xf32>
}}
case 1 {{
  %b = math.exp %mean : vector<8x1xf32>
  scf.yield %b : vector<8x1xf32>
}}
default {{
  %c = arith.negf %mean : vector<8x1xf32>
  scf.yield %c : vector<8x1xf32>
}}
%wide = {BID}(%s : vector<8x1xf32>) <broadcast_dimensions = [0, 1]> -> vector<8x8xf32>
%y = arith.subf %x, %wide : vector<8x8xf32>
{_store("y")}
""",
    [*_TILE_ARGS, ("which", "index"), _OUT],
)

# ``x - jnp.max(x, axis=-1, keepdims=True)``: a max reduction with acc -inf.
ROW_MAX = func_module(
    f"""
%x = "{LOAD}"(%x_ref) : (memref<8x16xf32>) -> vector<8x16xf32>
%ninf = arith.constant 0xFF800000 : f32
%acc = vector.broadcast %ninf : f32 to vector<8xf32>
%m = vector.multi_reduction <maximumf>, %x, %acc [1] : vector<8x16xf32> to vector<8xf32>
%keep = {BID}(%m : vector<8xf32>) <broadcast_dimensions = [0]> -> vector<8x1xf32>
%wide = {BID}(%keep : vector<8x1xf32>) <broadcast_dimensions = [0, 1]> -> vector<8x16xf32>
%y = arith.subf %x, %wide : vector<8x16xf32>
{_store("y", "8x16")}
""",
    [("x_ref", "memref<8x16xf32>"), ("out", "memref<8x16xf32>")],
)

ROW_MEAN = func_module(
    f"""{_row_mean()}
{_CENTER}
{_store("centered")}
""",
    [*_TILE_ARGS, _OUT],
)

# ``x - jnp.max(x, axis=-1, keepdims=True)`` on uint32: Pallas reduces with maxui, acc 0.
UNSIGNED_ROW_MAX = func_module(
    f"""
%x = "{LOAD}"(%x_ref) : (memref<8x16xi32>) -> vector<8x16xi32>
%c0 = arith.constant 0 : i32
%acc = vector.broadcast %c0 : i32 to vector<8xi32>
%m = vector.multi_reduction <maxui>, %x, %acc [1] : vector<8x16xi32> to vector<8xi32>
%keep = {BID}(%m : vector<8xi32>) <broadcast_dimensions = [0]> -> vector<8x1xi32>
%wide = {BID}(%keep : vector<8x1xi32>) <broadcast_dimensions = [0, 1]> -> vector<8x16xi32>
%y = arith.subi %wide, %x : vector<8x16xi32>
{_store("y", "8x16", "i32")}
""",
    [("x_ref", "memref<8x16xi32>"), ("out", "memref<8x16xi32>")],
)

# ``jnp.where(~(m <= 0), m, 0)`` on a (8, 1) statistic: NaN passes (unordered compare).
UNORDERED_WHERE = func_module(
    f"""
%r = "{LOAD}"(%r_ref) : (memref<8xf32>) -> vector<8xf32>
%x = "{LOAD}"(%x_ref) : (memref<8x8xf32>) -> vector<8x8xf32>
%keep = {BID}(%r : vector<8xf32>) <broadcast_dimensions = [0]> -> vector<8x1xf32>
%zero = arith.constant dense<0.0> : vector<8x1xf32>
%positive = arith.cmpf ugt, %keep, %zero : vector<8x1xf32>
%kept = arith.select %positive, %keep, %zero : vector<8x1xi1>, vector<8x1xf32>
%wide = {BID}(%kept : vector<8x1xf32>) <broadcast_dimensions = [0, 1]> -> vector<8x8xf32>
%y = arith.mulf %x, %wide : vector<8x8xf32>
{_store("y")}
""",
    [("r_ref", "memref<8xf32>"), *_TILE_ARGS, _OUT],
)

# ``r[:, None] + 0.0`` broadcast: adding +0.0 turns -0.0 into +0.0.
PLUS_ZERO = func_module(
    f"""
%r = "{LOAD}"(%r_ref) : (memref<8xf32>) -> vector<8xf32>
%x = "{LOAD}"(%x_ref) : (memref<8x8xf32>) -> vector<8x8xf32>
%keep = {BID}(%r : vector<8xf32>) <broadcast_dimensions = [0]> -> vector<8x1xf32>
%zero = arith.constant dense<0.0> : vector<8x1xf32>
%plus = arith.addf %keep, %zero : vector<8x1xf32>
%wide = {BID}(%plus : vector<8x1xf32>) <broadcast_dimensions = [0, 1]> -> vector<8x8xf32>
%y = math.copysign %x, %wide : vector<8x8xf32>
{_store("y")}
""",
    [("r_ref", "memref<8xf32>"), *_TILE_ARGS, _OUT],
)

# ``jnp.maximum(a > 0, b > 0)`` on (8, 1) masks: ``maxsi`` on i1 reads true as -1,
# so it is an "and", not an "or".
MASK_MAX = func_module(
    f"""
%a = "{LOAD}"(%a_ref) : (memref<8xi32>) -> vector<8xi32>
%b = "{LOAD}"(%b_ref) : (memref<8xi32>) -> vector<8xi32>
%x = "{LOAD}"(%x_ref) : (memref<8x8xf32>) -> vector<8x8xf32>
%zero = arith.constant dense<0> : vector<8xi32>
%pa = arith.cmpi sgt, %a, %zero : vector<8xi32>
%pb = arith.cmpi sgt, %b, %zero : vector<8xi32>
%ka = {BID}(%pa : vector<8xi1>) <broadcast_dimensions = [0]> -> vector<8x1xi1>
%kb = {BID}(%pb : vector<8xi1>) <broadcast_dimensions = [0]> -> vector<8x1xi1>
%both = arith.maxsi %ka, %kb : vector<8x1xi1>
%wide = {BID}(%both : vector<8x1xi1>) <broadcast_dimensions = [0, 1]> -> vector<8x8xi1>
%fill = arith.constant dense<0.0> : vector<8x8xf32>
%y = arith.select %wide, %x, %fill : vector<8x8xi1>, vector<8x8xf32>
{_store("y")}
""",
    [("a_ref", "memref<8xi32>"), ("b_ref", "memref<8xi32>"), *_TILE_ARGS, _OUT],
)

_ZERO = r"arith\.constant 0\.000000e\+00 : f32"

MUTANTS = [
    Mutant(
        "fold_in_an_if_along_the_wrong_dim",
        "the broadcast inside an scf.if on an argument folds along the unit dim "
        "(transposed): wrong only when the flag is true",
        FOLD_IN_IF,
        with_wrong_folds,
    ),
    Mutant(
        "fold_in_a_for_along_the_wrong_dim",
        "the same inside an scf.for bounded by an argument: wrong only when it iterates",
        FOLD_IN_FOR,
        with_wrong_folds,
    ),
    Mutant(
        "fold_in_a_while_along_the_wrong_dim",
        "the same inside an scf.while on a trip count read from a ref",
        FOLD_IN_WHILE,
        with_wrong_folds,
    ),
    Mutant(
        "fold_along_the_wrong_dim",
        "the same with no control flow (wrong on any input)",
        ROW_MEAN,
        with_wrong_folds,
    ),
    Mutant(
        "switch_case_renumbered",
        "index_switch case 1 taken for 2 (1 takes the default): wrong only when the "
        "selector is 1 or 2",
        SWITCH,
        renumbered_case,
    ),
    Mutant(
        "maximumf_reduction_as_maxnumf",
        "the row max ignores NaN (maxnumf) where maximumf propagates it: wrong only on NaN",
        ROW_MAX,
        text_mutation("<maximumf>", "<maxnumf>"),
    ),
    Mutant(
        "dropped_zero_acc",
        "the row sum drops its acc of +0.0 (starts from -0.0, the identity): wrong only "
        "where a row sums to -0.0",
        ROW_MEAN,
        text_mutation(_ZERO, "arith.constant -0.000000e+00 : f32"),
    ),
    Mutant(
        "unsigned_max_as_signed",
        "the uint32 row max compares signed (maxsi for maxui): wrong where a row holds "
        "values of 2**31 and up",
        UNSIGNED_ROW_MAX,
        text_mutation("<maxui>", "<maxsi>"),
    ),
    Mutant(
        "unordered_compare_as_ordered",
        "cmpf ugt made ogt: wrong only on NaN",
        UNORDERED_WHERE,
        text_mutation(r"arith\.cmpf ugt", "arith.cmpf ogt"),
    ),
    Mutant(
        "dropped_add_of_zero",
        "x + 0.0 dropped (the constant made -0.0, the identity): wrong only on -0.0",
        PLUS_ZERO,
        text_mutation(
            r"dense<0\.000000e\+00> : vector<8xf32>", "dense<-0.000000e+00> : vector<8xf32>"
        ),
    ),
    Mutant(
        "i1_maxsi_as_ori",
        "maxsi on i1 masks made ori: true is -1 signed, so maxsi is an and",
        MASK_MAX,
        text_mutation(r"arith\.maxsi", "arith.ori"),
    ),
]
