"""The unit-dim rewrite: where a module as written has no layouts, compute values
expanded by unit dims without them (see ``webs`` for what is rewritten and
``patterns`` for why each change keeps the values)."""

from smalto.rewrite.patterns import RewrittenOp
from smalto.rewrite.unit_dims import rewritable_webs, rewrite_unit_dims
from smalto.rewrite.webs import may_have_webs

__all__ = ["RewrittenOp", "may_have_webs", "rewritable_webs", "rewrite_unit_dims"]
