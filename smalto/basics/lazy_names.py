"""A package's names loaded on first use (PEP 562): the package's ``__getattr__`` and
``__dir__`` made from a table of each name's defining module, so that importing the
package loads none of them (issue #52: a process pays only for what it uses)."""

from __future__ import annotations

import importlib
from collections.abc import Callable, Mapping
from typing import Any


def lazy_names(
    package: str, table: Mapping[str, str], namespace: dict[str, Any]
) -> tuple[Callable[[str], Any], Callable[[], list[str]]]:
    """``__getattr__`` and ``__dir__`` for ``package`` (its ``__name__``), whose names in
    ``table`` (name -> the module that defines it) load on first use; each loaded name is
    kept in ``namespace`` (the package's ``globals()``), so it loads once."""

    def attribute(name: str) -> Any:
        if name not in table:
            raise AttributeError(f"module {package!r} has no attribute {name!r}")
        value = getattr(importlib.import_module(table[name]), name)
        namespace[name] = value
        return value

    def names() -> list[str]:
        return sorted({*namespace, *table})

    return attribute, names
