"""The per-context caches (``smalto.basics.percontext``) of the context last asked about.

Each inference asks for a handful of named caches of its module's context
(the reader two, the rules six); ``percontext.cache`` finds each through a
weak dictionary keyed by the context, about a microsecond apiece, which on a
module of a few ops is a tenth of the pass. JAX hands one context to many
kernels in a row (its thread's context, reused ten times), so the caches of
the last context asked about are kept here, named by a weak reference to it:
a dead context, or another one, is simply a miss.
"""

from __future__ import annotations

import weakref
from typing import Any

from jax._src.lib.mlir import ir

from smalto.basics import percontext

# The same bound as ``percontext``'s: past it, a cache is asked for afresh (emptied there).
_LIMIT = 4096


class _Last:
    """The context last asked about (weakly) and the caches handed out for it, by name."""

    __slots__ = ("context", "caches")

    def __init__(self) -> None:
        self.context: weakref.ref[ir.Context] | None = None
        self.caches: dict[str, dict[Any, Any]] = {}


_last = _Last()


def cache(context: ir.Context, name: str) -> dict[Any, Any]:
    """``percontext.cache(context, name)``, kept for the context last asked about."""
    last = _last
    ref = last.context
    if ref is None or ref() is not context:
        last.context = weakref.ref(context)
        last.caches = {}
    found = last.caches.get(name)
    if found is None or len(found) >= _LIMIT:
        found = last.caches[name] = percontext.cache(context, name)
    return found
