"""The pass's small value objects (constraints, layouts, reasons): dataclasses cheap to
define.

``dataclasses.dataclass`` writes each method as source text and compiles it, through
a wrapper function of its own (``exec``: 0.1 to 0.2 ms a method, more under load), and
``import smalto.infer`` defines a few dozen of these classes: compiling their methods
was half the import (issue #52: the first kernel through JAX's route pays the import).
``value_class`` makes the same class: ``dataclasses.dataclass`` makes it, with its
fields (``fields``, ``replace``, ``__match_args__``, slots), and writes no method; then
only ``__init__``, made on every construction, is compiled, from the smallest source
(a third of the cost); ``__repr__``, ``__eq__``, ``__hash__`` and a frozen class's
``__setattr__``/``__delattr__`` are shared functions that read the fields through one
``attrgetter``, with dataclasses' results (the same fields, tuples, hash, words and
errors). Those are called seldom: a first call hashes a few hundred records.
"""

from __future__ import annotations

import inspect
import reprlib
import sys
from collections.abc import Callable
from dataclasses import MISSING, Field, FrozenInstanceError, dataclass, field, fields
from operator import attrgetter
from types import CodeType, FunctionType
from typing import Any, dataclass_transform


@dataclass_transform(eq_default=True, field_specifiers=(field, Field))
def record[T](cls: type[T]) -> type[T]:
    """A slotted class compared and hashed by its fields, never changed once made.

    Not a *frozen* dataclass: its ``__init__`` sets each field through
    ``object.__setattr__``, five times the cost of a plain one, and a kernel
    makes thousands of these (a constraint per op, a reason per decision).
    Immutability is the convention instead: nothing assigns to a field after
    construction. ``dataclass_transform`` tells type checkers it makes a
    dataclass (its ``__init__`` takes the fields).
    """
    return value_class(slots=True, unsafe_hash=True)(cls)


@dataclass_transform(eq_default=True, field_specifiers=(field, Field))
def value_class[T](
    *,
    eq: bool = True,
    frozen: bool = False,
    unsafe_hash: bool = False,
    repr: bool = True,  # noqa: A002 -- dataclass's own keyword
    slots: bool = False,
) -> Callable[[type[T]], type[T]]:
    """``dataclasses.dataclass`` with these keywords: the same class, fields and methods,
    cheaper to make (the module's docstring says how)."""

    def make(cls: type[T]) -> type[T]:
        own = dict(cls.__dict__)  # what the class body defines (dataclass keeps those)
        undocumented = not cls.__doc__
        if undocumented:  # (dataclass would word a signature it has no __init__ for yet)
            cls.__doc__ = "-"
        made: type[T] = dataclass(init=False, repr=False, eq=False, slots=slots)(cls)
        field_list = fields(made)  # type: ignore[arg-type]
        if "__init__" not in own:
            _method(made, "__init__", _init(made, field_list, frozen=frozen, slots=slots))
        if repr and "__repr__" not in own:
            _method(made, "__repr__", _repr([f.name for f in field_list if f.repr]))
        if eq and "__eq__" not in own:
            _method(made, "__eq__", _eq([f.name for f in field_list if f.compare]))
        hashed = [f.name for f in field_list if _hashed(f)]
        _set_hash(made, own, hashed, eq=eq, frozen=frozen, unsafe_hash=unsafe_hash)
        if frozen:
            _freeze(made, own, slots=slots)
        if undocumented:  # dataclass's words: the name and the signature
            made.__doc__ = made.__name__ + str(inspect.signature(made)).replace(" -> None", "")
        return made

    return make


def _method(cls: type, name: str, function: Callable[..., Any]) -> None:
    function.__qualname__ = f"{cls.__qualname__}.{name}"
    setattr(cls, name, function)


class _HasDefaultFactory:
    """The default of a parameter whose field has a factory (dataclasses' marker)."""

    def __repr__(self) -> str:
        return "<factory>"


_HAS_DEFAULT_FACTORY = _HasDefaultFactory()


def _init(
    cls: type, field_list: tuple[Field[Any], ...], *, frozen: bool, slots: bool
) -> Callable[..., None]:
    """The ``__init__`` dataclasses writes: the fields that ``init`` in order (a default
    after them), each set (a frozen class's through ``object.__setattr__``), defaults and
    factories as dataclasses gives them, then ``__post_init__``.

    Its source names field ``i`` ``_vc_f{i}``, so that classes of one shape (how many
    fields, which have factories, ...) share it: it is compiled once (``_template``), and
    each class's code is that code with its own names put in (``CodeType.replace``), the
    bytecode dataclasses' source compiles to, made in a microsecond.
    """
    every: dict[str, Field[Any]] = cls.__dataclass_fields__  # type: ignore[attr-defined]
    for name in every.keys() - {f.name for f in field_list}:
        if "InitVar" in str(every[name].type):
            raise TypeError(f"value_class: {cls.__name__}.{name}: no InitVar fields")
    # The source's own names, prefixed so that no field (a parameter) hides them.
    names: dict[str, Any] = {"_vc_factory": _HAS_DEFAULT_FACTORY, "_vc_set": object.__setattr__}
    parameters: list[str] = []
    defaults: list[Any] = []
    lines: list[str] = []
    renamed: dict[str, str] = {}
    for i, f in enumerate(field_list):
        if f.kw_only:
            raise TypeError(f"value_class: {cls.__name__}.{f.name}: no keyword-only fields")
        name = f"_vc_f{i}"
        renamed[name] = sys.intern(f.name)
        has_default = f.default is not MISSING
        has_factory = f.default_factory is not MISSING
        if f.init:
            if has_default or has_factory:
                defaults.append(f.default if has_default else _HAS_DEFAULT_FACTORY)
            elif defaults:
                raise TypeError(f"non-default argument {f.name!r} follows default argument")
            parameters.append(name)
        if has_factory:
            names[f"_vc_factory_{i}"] = f.default_factory
            value = (
                f"_vc_factory_{i}() if {name} is _vc_factory else {name}"
                if f.init
                else f"_vc_factory_{i}()"
            )
        elif f.init:
            value = name
        elif has_default and slots:  # no class attribute holds the default
            names[f"_vc_default_{i}"] = f.default
            value = f"_vc_default_{i}"
        else:
            continue
        lines.append(f"_vc_set(self, {name!r}, {value})" if frozen else f"self.{name} = {value}")
    if hasattr(cls, "__post_init__"):
        lines.append("self.__post_init__()")
    source = f"def __init__(self, {', '.join(parameters)}):\n " + ("\n ".join(lines) or "pass")
    template = _template(source)

    def put(strings: tuple[str, ...]) -> tuple[str, ...]:
        return tuple(renamed.get(string, string) for string in strings)

    code = template.replace(
        co_varnames=put(template.co_varnames),
        co_names=put(template.co_names),
        co_consts=tuple(renamed.get(c, c) if type(c) is str else c for c in template.co_consts),
    )
    init = FunctionType(code, names, "__init__", tuple(defaults) or None)
    init.__annotations__ = {f.name: f.type for f in field_list if f.init} | {"return": None}
    init.__module__ = cls.__module__
    return init


# Each shape's ``__init__``, compiled (by its source, in ``_vc_f{i}`` names).
_TEMPLATES: dict[str, CodeType] = {}


def _template(source: str) -> CodeType:
    code = _TEMPLATES.get(source)
    if code is None:
        module = compile(source, "<value_class>", "exec")
        code = _TEMPLATES[source] = next(c for c in module.co_consts if type(c) is CodeType)
    return code


def _hashed(one: Field[Any]) -> bool:
    """Whether dataclasses' ``__hash__`` reads the field ``one``."""
    return one.compare if one.hash is None else bool(one.hash)


def _set_hash(
    cls: type, own: dict[str, Any], names: list[str], *, eq: bool, frozen: bool, unsafe_hash: bool
) -> None:
    """``__hash__`` as ``dataclass`` sets it (its table of the four cases)."""
    body_hash = own.get("__hash__", MISSING)
    # A body that defines __eq__ alone gets __hash__ = None from Python, not from the author.
    explicit = not (body_hash is MISSING or (body_hash is None and "__eq__" in own))
    if unsafe_hash:
        if explicit:
            raise TypeError(f"Cannot overwrite attribute __hash__ in class {cls.__name__}")
        _method(cls, "__hash__", _hash(names))
    elif eq and not explicit:
        if frozen:
            _method(cls, "__hash__", _hash(names))
        else:
            cls.__hash__ = None  # type: ignore[assignment]


def _fields_of(names: list[str]) -> Callable[[Any], tuple[Any, ...]]:
    """The tuple of ``names``' values, as dataclasses' ``(self.a, self.b,)``."""
    if len(names) >= 2:
        return attrgetter(*names)
    if names:
        one = attrgetter(names[0])
        return lambda value: (one(value),)
    return lambda value: ()


def _eq(names: list[str]) -> Callable[[Any, object], Any]:
    key = _fields_of(names)

    def __eq__(self: Any, other: object) -> Any:
        if other.__class__ is self.__class__:
            return key(self) == key(other)
        return NotImplemented

    return __eq__


def _hash(names: list[str]) -> Callable[[Any], int]:
    key = _fields_of(names)

    def __hash__(self: Any) -> int:
        return hash(key(self))

    return __hash__


def _repr(names: list[str]) -> Callable[[Any], str]:
    @reprlib.recursive_repr()
    def __repr__(self: Any) -> str:
        shown = ", ".join(f"{name}={getattr(self, name)!r}" for name in names)
        return f"{self.__class__.__qualname__}({shown})"

    return __repr__


def _freeze(cls: type[Any], own: dict[str, Any], *, slots: bool) -> None:
    """A frozen dataclass's ``__setattr__`` and ``__delattr__`` (and, slotted, the
    ``__getstate__``/``__setstate__`` that let it be pickled)."""
    for name in ("__setattr__", "__delattr__"):
        if name in own:
            raise TypeError(f"Cannot overwrite attribute {name} in class {cls.__name__}")
    names = frozenset(f.name for f in fields(cls))

    def __setattr__(self: Any, name: str, value: Any) -> None:
        if type(self) is cls or name in names:
            raise FrozenInstanceError(f"cannot assign to field {name!r}")
        super(cls, self).__setattr__(name, value)

    def __delattr__(self: Any, name: str) -> None:
        if type(self) is cls or name in names:
            raise FrozenInstanceError(f"cannot delete field {name!r}")
        super(cls, self).__delattr__(name)

    _method(cls, "__setattr__", __setattr__)
    _method(cls, "__delattr__", __delattr__)
    if slots:
        if "__getstate__" not in own:
            cls.__getstate__ = _getstate  # type: ignore[assignment]
        if "__setstate__" not in own:
            cls.__setstate__ = _setstate


def _getstate(self: Any) -> list[Any]:
    return [getattr(self, f.name) for f in fields(self)]


def _setstate(self: Any, state: list[Any]) -> None:
    for one, value in zip(fields(self), state, strict=False):
        object.__setattr__(self, one.name, value)
