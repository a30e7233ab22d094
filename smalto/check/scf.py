"""Requirements of `scf` control flow: a carried value keeps one layout.

The solver's statement: ``smalto.rules.scf`` (policy: docs/rules_and_checks.md).
"""

from __future__ import annotations

from collections.abc import Sequence

from smalto.check.core import (
    FOR_BOUNDS,
    IN,
    LAYOUTS,
    OUT,
    ROLE,
    TERMINATORS,
    Checker,
    family_of,
    rule,
)
from smalto.check.names import describe
from smalto.program.view import Op


def _terminator(c: Checker, op: Op, region: int) -> Op | None:
    blocks = op.regions[region] if region < len(op.regions) else []
    if not blocks or not blocks[0][1]:
        return None
    last = c.program.ops[blocks[0][1][-1]]
    return last if last.name in TERMINATORS else None


def _same_across(c: Checker, sites: Sequence[tuple[Op, int, int]], why: str) -> None:
    """Sites on different ops that are one value carried through control flow."""
    known = [(o, role, i, c.get(o, role, i)) for o, role, i in sites]
    known = [entry for entry in known if entry[3] is not None]
    if not known:
        return
    first_op, first_role, first_index, first = known[0]
    for o, role, i, layout in known[1:]:
        if layout != first:
            c.report(
                o,
                f"{ROLE[role]} #{i} is {describe(layout)} but {ROLE[first_role]} #{first_index} "
                f"of {first_op.name} ({c.location(first_op)}) is {describe(first)}; {why}",
            )


@rule("scf.for")
def _for(c: Checker, op: Op) -> None:
    yield_op = _terminator(c, op, 0)
    for index in range(FOR_BOUNDS, len(op.operands)):
        if family_of(c.value(op, IN, index)) is None:
            continue
        carried = index - FOR_BOUNDS
        sites = [(op, IN, index), (op, OUT, carried)]
        if yield_op is not None:
            sites.append((yield_op, IN, carried))
        _same_across(c, sites, "a loop-carried value keeps one layout")


@rule("scf.while")
def _while(c: Checker, op: Op) -> None:
    condition, yield_op = _terminator(c, op, 0), _terminator(c, op, 1)
    for i in range(len(op.operands)):
        if family_of(c.value(op, IN, i)) is LAYOUTS:
            sites = [(op, IN, i)] + ([(yield_op, IN, i)] if yield_op is not None else [])
            _same_across(c, sites, "a loop-carried value keeps one layout")
    for i in range(len(op.results)):
        if family_of(c.value(op, OUT, i)) is LAYOUTS:
            sites = [(op, OUT, i)] + ([(condition, IN, i + 1)] if condition is not None else [])
            _same_across(c, sites, "a value leaving the loop keeps its layout")


@rule("scf.index_switch")
def _index_switch(c: Checker, op: Op) -> None:
    yields = [_terminator(c, op, r) for r in range(len(op.regions))]
    for i in range(len(op.results)):
        if family_of(c.value(op, OUT, i)) is not LAYOUTS:
            continue
        sites = [(op, OUT, i)] + [(y, IN, i) for y in yields if y is not None]
        _same_across(c, sites, "every case yields the result in one layout")
