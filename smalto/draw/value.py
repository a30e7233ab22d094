"""``smalto draw FILE %N``: what the drawing needs of a kernel's value (``KernelValue``),
and the errors of finding it.

Finding the value and inferring its layout is the pass's and ``smalto explain``'s
work, a layer above the pictures: the command (``smalto.cli.draw``) hands the
drawing a ``Lookup`` that does it.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from smalto.hw.values import Const


class ValueLookupError(ValueError):
    """The module names no such value, or it has no layout (a usage error)."""


class InferenceFailed(RuntimeError):
    """smalto cannot infer the module's layouts, so it has none to draw."""


@dataclass(frozen=True)
class KernelValue:
    """A value of a kernel and the layout smalto infers for it."""

    layout: Const
    shape: tuple[int, ...]
    element_type: str  # MLIR's spelling: bf16, f32, i8, ...
    name: str  # as the printed module names it: %12
    place: str  # where it is defined: line 40, kernel.py:88
    arch: tuple[int, int]  # the target the layouts were inferred for
    notes: tuple[str, ...]  # what explain would say about names of FILE vs the printed module
    strides: tuple[int, ...] | None = None  # an SMEM ref's, where its type gives them


# (FILE, the value's name, the target or None for the module's own) -> the value.
Lookup = Callable[[str, str, tuple[int, int] | None], KernelValue]
