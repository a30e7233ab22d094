"""Changes to the ops of a module that has no layouts as written, each kept exact.

The unit-dim rewrite computes values expanded by unit dims without them (``webs``:
what may change; ``patterns``: one function per pattern and why it keeps the values;
``ops``: the replacement ops; ``unit_dims``: the whole rewrite). ``transfers`` makes
the fewest transfers unoptimized that let a kernel infer (only on request: it costs
speed). Below the rescues and the diagnosis, which try them on copies of a module
(``smalto.rescue``; a diagnosis verifying an edit); above the pass, which they run
again on the changed copy.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from smalto.basics.lazy_names import lazy_names

if TYPE_CHECKING:
    from smalto.rewrite.patterns import RewrittenOp
    from smalto.rewrite.unit_dims import rewritable_webs, rewrite_unit_dims
    from smalto.rewrite.webs import may_have_webs

__all__ = ["RewrittenOp", "may_have_webs", "rewritable_webs", "rewrite_unit_dims"]

# Loaded on first use: a refusal asks ``webs.may_have_webs`` whether the unit-dim rewrite
# could apply, and loads the rewrite itself only where it could.
_LAZY = {
    "RewrittenOp": "smalto.rewrite.patterns",
    "may_have_webs": "smalto.rewrite.webs",
    "rewritable_webs": "smalto.rewrite.unit_dims",
    "rewrite_unit_dims": "smalto.rewrite.unit_dims",
}


__getattr__, __dir__ = lazy_names(__name__, _LAZY, globals())
