"""Caches that live as long as an MLIR context: facts of its types and attributes.

Types and attributes are unique within their context and live as long as it
does, so within one context an object's hash (its pointer) names it: a cache
keyed by it spares reading a type's parts, printing an attribute or building
one through JAX on every inference of every module in that context (JAX
compiles many kernels in one context). The caches go with their context; each
is bounded, lest a long session grow it.
"""

from __future__ import annotations

import weakref
from typing import Any

from jax._src.lib.mlir import ir

_LIMIT = 4096

_caches: weakref.WeakKeyDictionary[ir.Context, dict[str, dict[Any, Any]]] = (
    weakref.WeakKeyDictionary()
)


def cache(context: ir.Context, name: str) -> dict[Any, Any]:
    """The cache ``name`` of ``context`` (emptied when it reaches its bound)."""
    caches = _caches.get(context)
    if caches is None:
        caches = _caches[context] = {}
    found = caches.get(name)
    if found is None or len(found) >= _LIMIT:
        found = caches[name] = {}
    return found
