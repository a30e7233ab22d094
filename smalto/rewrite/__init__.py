"""The unit-dim rewrite: where a module as written has no layouts, compute values
expanded by unit dims without them (see ``webs`` for what is rewritten and
``patterns`` for why each change keeps the values)."""

from smalto.rewrite.patterns import RewrittenOp
from smalto.rewrite.unit_dims import rewritable_webs, rewrite_unit_dims

__all__ = ["RewrittenOp", "rewritable_webs", "rewrite_unit_dims"]
