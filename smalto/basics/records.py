"""The one decorator for the pass's small value objects (constraints, layouts, reasons)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import dataclass_transform


@dataclass_transform(eq_default=True)
def record[T](cls: type[T]) -> type[T]:
    """A slotted class compared and hashed by its fields, never changed once made.

    Not a *frozen* dataclass: its ``__init__`` sets each field through
    ``object.__setattr__``, five times the cost of a plain one, and a kernel
    makes thousands of these (a constraint per op, a reason per decision).
    Immutability is the convention instead: nothing assigns to a field after
    construction. ``dataclass_transform`` tells type checkers it makes a
    dataclass (its ``__init__`` takes the fields).
    """
    # dataclass() is typed to return the class it was given only when called on
    # it directly; called through its keyword form, its result is a callable.
    return dataclass(slots=True, unsafe_hash=True)(cls)
