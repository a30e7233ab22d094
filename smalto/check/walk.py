"""The walk: decode every annotated op, run its rule, then check what flows between ops."""

from __future__ import annotations

from jax._src.lib.mlir import ir

# The per-dialect modules register their rules on import.
from smalto.check import arith, copies, memref, mosaic_gpu, scf, tmem, vector  # noqa: F401
from smalto.check.core import (
    IN,
    LAYOUTS,
    NOT_ANNOTATED,
    OPAQUE,
    OUT,
    PREFIX,
    RULES,
    TMEM,
    TRANSFORMS,
    Checker,
    Violation,
    family_of,
)
from smalto.check.decode import decode
from smalto.check.flow import check_aliases, check_free_refs, check_uses
from smalto.check.smem_budget import check_smem_budget
from smalto.check.smem_overlap import check_smem_overlaps
from smalto.program.reader import read_program
from smalto.program.view import Op, Program


def check(
    module: ir.Module,
    arch: tuple[int, int] = (9, 0),
    *,
    source_name: str | None = None,
    program: Program | None = None,
) -> list[Violation]:
    """Every violation of a lowering requirement in the annotated ``module``.

    Empty when the annotations are consistent. ``source_name`` replaces the
    parser's buffer name (``-``) in locations. Never modifies the module.
    ``program``: the module's program view where the caller has read it already
    (``smalto.program.reader.read_program``, with any consumers: each use of a
    value needing a layout is in it), so that it is not read again; the checker
    reads nothing else from it but the ops and values, and the layouts from the
    ops' attributes as they are now.
    """
    with module.context, ir.Location.unknown(module.context):
        if program is None:
            program = read_program(module)
        major, minor = arch  # a list from a caller becomes the tuple the checker keys on
        checker = Checker(program, (major, minor), source_name)
        run(checker)
    return sorted(checker.violations, key=lambda v: v.op_index)


def run(c: Checker) -> None:
    for top in c.program.top_level:
        _collect(c, c.program.ops[top])
    if _not_annotated(c):
        return
    for op in c.annotated:
        decode(c, op)
    for op in c.annotated:
        rule = RULES.get(op.name)
        if rule is None and (op.name.startswith("arith.") or op.name.startswith("math.")):
            rule = arith.elementwise
        if rule is not None:
            try:
                rule(c, op)
            except Exception as error:  # noqa: BLE001 -- a broken op is a finding
                c.report(op, f"cannot be checked: {type(error).__name__}: {error}")
        check_uses(c, op)
    check_aliases(c)
    check_free_refs(c)
    check_smem_budget(c)
    check_smem_overlaps(c)
    tmem.check_collective(c)


def _collect(c: Checker, top: Op) -> None:
    """``top`` and the ops inside it, in pre-order (a stack, not recursion: a module may
    nest hundreds of regions deep)."""
    pending = [top]
    while pending:
        op = pending.pop()
        c.annotated.append(op)
        if op.name in OPAQUE:
            continue
        inner = [i for region in op.regions for _, body in region for i in body]
        pending.extend(c.program.ops[i] for i in reversed(inner))


# Every attribute that carries layouts.
LAYOUT_ATTRIBUTES = tuple(
    f"{PREFIX[role]}_{family.suffix}"
    for role in (IN, OUT)
    for family in (LAYOUTS, TMEM, TRANSFORMS)
)


def _not_annotated(c: Checker) -> bool:
    """A module with no layout attribute at all, where ops need them (one not yet
    inferred): one violation says so, rather than one per op."""
    for op in c.annotated:
        attributes = op.operation.attributes  # (read once per op: a binding call)
        if any(name in attributes for name in LAYOUT_ATTRIBUTES):
            return False
    values = c.program.values
    needing = [
        op
        for op in c.annotated
        if any(family_of(values[v]) is not None for v in (*op.operands, *op.results))
    ]
    if not needing:
        return False  # nothing to lay out: nothing missing
    where = c.source_name or c.location(needing[0])
    c.violations.append(
        Violation(
            where,
            "builtin.module",
            f"the module has no layout attributes ({len(needing)} ops need them): run "
            "`smalto infer` first, and check what it writes",
            NOT_ANNOTATED,
        )
    )
    return True
