"""Caches that live as long as an MLIR context: facts of its types and attributes.

Types and attributes are unique within their context and live as long as it
does, so within one context an object's hash (its pointer) names it: a cache
keyed by it spares reading a type's parts, printing an attribute or building
one through JAX on every inference of every module in that context (JAX
compiles many kernels in one context). The caches go with their context; each
is bounded, lest a long session grow it.

Each inference asks for a handful of caches (the reader, the rules, the
writer, the checker); finding a context's caches in the weak dictionary costs
about a microsecond, a tenth of the pass on a module of a few ops. JAX hands
one context to many kernels in a row (its thread's context, reused ten
times), so the caches of the context last asked about are kept at hand, named
by a weak reference to it: a dead context, or another one, is looked up.
"""

from __future__ import annotations

import weakref
from typing import Any

from jax._src.lib.mlir import ir

_LIMIT = 4096

_caches: weakref.WeakKeyDictionary[ir.Context, dict[str, dict[Any, Any]]] = (
    weakref.WeakKeyDictionary()
)


class _Last:
    """The context last asked about (weakly) and its caches (its entry in ``_caches``)."""

    __slots__ = ("context", "caches")

    def __init__(self) -> None:
        self.context: weakref.ref[ir.Context] | None = None
        self.caches: dict[str, dict[Any, Any]] = {}


_last = _Last()


def cache(context: ir.Context, name: str) -> dict[Any, Any]:
    """The cache ``name`` of ``context`` (emptied when it reaches its bound)."""
    last = _last
    ref = last.context
    caches: dict[str, dict[Any, Any]]
    if ref is not None and ref() is context:
        caches = last.caches
    else:
        caches = _caches.setdefault(context, {})
        last.context, last.caches = weakref.ref(context), caches
    found = caches.get(name)
    if found is None or len(found) >= _LIMIT:
        found = caches[name] = {}
    return found
