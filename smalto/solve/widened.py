"""The widened search: where JAX's rules leave no layouts that lower, what the lowering takes.

JAX's rules are narrower than its lowering: a value keeps its layout from
producer to consumer (a strict relayout) though the lowering would convert
it (from a splat, a transpose, an upcast layout), and each value's candidates
are those a rule offers. Where no assignment under JAX's rules lowers,
``search.decide`` runs one more complete search (``search.Widened``, ``search.widest``)
over everything the lowering accepts:

- each strict relayout between a producer and its consumer stands as the
  relayout the lowering performs there (``lowered_relayout``), but a strict
  layout cast's (the user's word that no relayout happens there; JAX's
  inference enforces it, not its lowering);
- the lowering requirements JAX's answers may break (``GmemTransfer``) hold
  from the start, and values that cannot be splats are not joined to what
  they relayout into (``propagation``);
- domains are closed under the expressions between variables
  (``domains.close``), so layouts no rule of JAX's offers are tried.
"""

from __future__ import annotations

from smalto.constraints.language import Relayout
from smalto.program.view import Program
from smalto.rules.attributes import strict_cast


def lowered_relayout(c: Relayout, program: Program) -> Relayout | None:
    """The relayout the lowering performs where ``c`` is strict, None where ``c`` stays
    as it is (not strict, or a strict layout cast's)."""
    if not c.strict or strict_cast(program, c.origin):
        return None
    return Relayout(c.source, c.target, c.bitwidth, False, c.origin)
