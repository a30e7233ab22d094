"""Checks on the input before inference: what smalto refuses, and why, in one sentence.

Two kinds of refusal, both ``ValueError`` as JAX's pass raises:

- bad arguments (``fuel``, ``arch``): a plain ``ValueError``;
- a module whose values smalto cannot lay out at all (dynamic, zero-sized,
  scalable or huge shapes, element types without a power-of-two bitwidth, SMEM
  refs without strides): ``UnsupportedInput``, which is an ``MlirInputError``
  so that the command line reports it like any unusable input (one line, exit
  status 2).

A module that already carries layout attributes is accepted: inference does not
read them and overwrites them, so running smalto twice gives the same module.
"""

from __future__ import annotations

from jax._src.lib.mlir import ir

from smalto.basics.archs import SUPPORTED_ARCHS, parse_arch  # noqa: F401 (this module's API)
from smalto.basics.mlir import MlirInputError
from smalto.program.view import Kind, Op, Program, TypeInfo, Value, within

# Far beyond any kernel (a warpgroup's registers hold about 32K 32-bit values,
# SMEM and TMEM 256 KiB each) yet small enough that no size computation
# overflows or takes long.
MAX_ELEMENTS = 1 << 24
# Ops whose regions are already lowered: their bodies are not inferred.
_OPAQUE = frozenset({"mosaic_gpu.custom_primitive"})


class UnsupportedInput(MlirInputError):
    """A module smalto cannot take, for a reason in its types (one sentence)."""


def check_input(program: Program, *, fuel: int, arch: tuple[int, int]) -> None:
    """Raises ValueError (bad arguments) or UnsupportedInput (a module smalto cannot take)."""
    if isinstance(fuel, bool) or not isinstance(fuel, int) or fuel <= 0:
        raise ValueError(f"fuel must be a positive integer, got {fuel!r}")
    if tuple(arch) not in SUPPORTED_ARCHS:
        raise ValueError(f"unsupported arch {arch}: smalto targets sm_90 (9, 0) and sm_100 (10, 0)")
    # A value's problem follows from its type alone: when no type of a value
    # needing a layout has one, no value has, and no op needs a look.
    if not any(_type_problem(value) for value in program.layout_types):
        return
    # Only values that need a layout can be refused, and only ops with such a
    # value (Program.layout_ops, in pre-order) have any: the others need no look.
    # A value's problem follows from its type alone; values are used many
    # times and share a handful of types.
    checked: dict[int, str | None] = {}
    # By the identity of the values' type facts (one object per type text):
    # keying by the ir.Type itself would cost two binding calls per lookup.
    by_type: dict[int, str | None] = {}
    opaque: dict[int, bool] = {}
    for op_id in program.layout_ops:
        op = program.ops[op_id]
        if within(program, op, _OPAQUE, opaque):
            continue
        for role, ids in (("operand", op.operands), ("result", op.results)):
            for index, vid in enumerate(ids):
                if vid in checked:
                    problem = checked[vid]
                else:
                    value = program.values[vid]
                    if value.info is None:  # a scalar, token or pointer: no layout
                        problem = None
                    else:
                        key = id(value.info)
                        if key in by_type:
                            problem = by_type[key]
                        else:
                            problem = by_type[key] = _problem(value)
                    checked[vid] = problem
                if problem is not None:
                    raise UnsupportedInput(
                        f"{_where(op)}: `{op.name}` {role} #{index} has type "
                        f"{program.values[vid].type}: {problem}"
                    )


# ``_problem`` by the identity of a value's type facts: one object per type text
# (``smalto.program.type_facts``), and the problem follows from the type alone. Each
# entry keeps its facts, so that their id names no other while it lives. Bounded.
_PROBLEMS_LIMIT = 4096
_problems: dict[int, tuple[TypeInfo, str | None]] = {}


def _type_problem(value: Value) -> str | None:
    """``_problem(value)``, asked once per type (the bindings' reads it makes, a few us,
    once per type text rather than once per inference)."""
    info = value.info
    if info is None:
        return _problem(value)
    found = _problems.get(id(info))
    if found is None or found[0] is not info:
        if len(_problems) >= _PROBLEMS_LIMIT:
            _problems.clear()
        found = _problems[id(info)] = (info, _problem(value))
    return found[1]


def _problem(value: Value) -> str | None:
    """Why smalto cannot lay out this value; None if it can (or it needs no layout)."""
    if value.kind == Kind.OTHER or (value.kind == Kind.SMEM and not value.transformable):
        return None
    ty = value.type
    if isinstance(ty, ir.VectorType) and any(ir.VectorType(ty).scalable_dims):
        return "scalable vectors are not supported"
    if any(ir.ShapedType.is_dynamic_size(d) for d in value.shape):
        return "dynamic shapes are not supported"
    if any(d == 0 for d in value.shape):
        return "zero-sized dimensions are not supported"
    elements = 1
    for d in value.shape:
        elements *= d
    if elements > MAX_ELEMENTS:
        return f"{elements} elements are more than smalto supports ({MAX_ELEMENTS})"
    if value.bitwidth is None:
        element = ir.ShapedType(ty).element_type
        return f"element type {element} is not supported (not an integer or float of 2^k bits)"
    if value.kind == Kind.SMEM and value.strides is None:
        return "SMEM refs must have a strided layout"
    return None


def _where(op: Op) -> str:
    location = op.location
    try:
        file = ir.FileLineColLoc(location)
    except (ValueError, TypeError):
        return str(location).removeprefix("loc(").removesuffix(")")
    name = "<input>" if file.filename == "-" else file.filename
    return f"{name}:{file.start_line}:{file.start_col}"
