"""``value_class`` (and ``record``) make the class ``dataclasses.dataclass`` makes, with
the same keywords: the same fields, signature, docstring, ``__match_args__``, slots, and
instances that are made, shown, compared, hashed, frozen, copied and pickled the same,
errors included. Random classes (hypothesis), each made both ways side by side."""

from __future__ import annotations

import copy
import dataclasses
import inspect
import pickle
from collections.abc import Callable
from functools import partial
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from smalto.basics.records import record, value_class

POST_INITS: list[str] = []


def _outcome(make: Callable[[], Any]) -> tuple[str, Any]:
    """What ``make()`` gives: its value, or the kind and words of what it raises."""
    try:
        return "ok", make()
    except Exception as error:  # compared as outcomes, raised or not
        return "raised", (type(error).__name__, str(error))


_FIELD = st.fixed_dictionaries(
    {
        "default": st.sampled_from(["none", "value", "factory"]),
        "init": st.booleans(),
        "repr": st.booleans(),
        "compare": st.booleans(),
        "hash": st.sampled_from([None, True, False]),
    }
)
_CLASS = st.fixed_dictionaries(
    {
        "eq": st.booleans(),
        "frozen": st.booleans(),
        "unsafe_hash": st.booleans(),
        "repr": st.booleans(),
        "slots": st.booleans(),
    }
)


def _namespace(fields: list[dict[str, Any]], documented: bool, post_init: bool) -> dict[str, Any]:
    annotations: dict[str, str] = {}
    namespace: dict[str, Any] = {"__module__": __name__, "__qualname__": "Made"}
    for i, spec in enumerate(fields):
        name = f"f{i}"
        annotations[name] = "int" if spec["default"] != "factory" else "list[int]"
        options = {key: spec[key] for key in ("init", "repr", "compare", "hash")}
        if spec["default"] == "value":
            namespace[name] = dataclasses.field(default=i, **options)
        elif spec["default"] == "factory":
            namespace[name] = dataclasses.field(default_factory=list, **options)
        else:
            namespace[name] = dataclasses.field(**options)
    namespace["__annotations__"] = annotations
    if documented:
        namespace["__doc__"] = "A made class."
    if post_init:

        def __post_init__(self: Any) -> None:
            POST_INITS.append(type(self).__module__)

        namespace["__post_init__"] = __post_init__
    return namespace


def _made(maker: Callable[[type], type], namespace: dict[str, Any]) -> tuple[str, Any]:
    return _outcome(lambda: maker(type("Made", (), dict(namespace))))


def _instances(cls: Any, fields: list[dict[str, Any]]) -> list[Any]:
    """Two instances of one set of values, and one of another (where the class has any
    field its ``__init__`` takes without a default)."""
    needed = [
        f"f{i}" for i, spec in enumerate(fields) if spec["init"] and spec["default"] == "none"
    ]
    first = cls(*range(10, 10 + len(needed)))
    again = cls(*range(10, 10 + len(needed)))
    other = cls(*range(20, 20 + len(needed)))
    return [first, again, other]


def _behaviour(cls: Any, fields: list[dict[str, Any]]) -> dict[str, Any]:
    """Everything a user of the class sees, as comparable values."""
    seen: dict[str, Any] = {
        "doc": cls.__doc__,
        "signature": _outcome(lambda: str(inspect.signature(cls))),
        "match_args": getattr(cls, "__match_args__", None),
        "slots": getattr(cls, "__slots__", None),
        "unhashable": cls.__hash__ is None,
        "fields": [(f.name, f.init, f.repr, f.compare, f.hash) for f in dataclasses.fields(cls)],
    }
    del POST_INITS[:]
    made = _outcome(lambda: _instances(cls, fields))
    seen["made"] = made[0] if made[0] == "ok" else made
    seen["post_inits"] = len(POST_INITS)
    if made[0] != "ok":
        return seen
    first, again, other = made[1]
    if type(first).__repr__ is not object.__repr__:  # (object's names the address)
        seen["repr"] = [_outcome(partial(repr, one)) for one in (first, other)]
    seen["eq"] = [
        _outcome(lambda: first == again),
        _outcome(lambda: first == other),
        _outcome(lambda: first != again),
        _outcome(lambda: first.__eq__(3)),
    ]
    if not seen["unhashable"]:
        seen["hash"] = [
            _outcome(lambda: hash(first) == hash(again)),
            _outcome(lambda: hash(first) == hash(other)),
        ]
    seen["values"] = [_outcome(partial(getattr, first, f.name)) for f in dataclasses.fields(cls)]
    seen["assign"] = _outcome(lambda: setattr(first, "f0", 5) if fields else None)
    seen["delete"] = _outcome(lambda: delattr(again, "f0") if fields else None)
    seen["new attribute"] = _outcome(lambda: setattr(other, "extra", 1))
    replaced = _outcome(lambda: dataclasses.replace(other))
    seen["replace"] = replaced[0] if replaced[0] == "ok" else replaced
    seen["copy"] = _outcome(lambda: copy.copy(other) == other)
    return seen


@settings(max_examples=150, deadline=None)
@given(
    fields=st.lists(_FIELD, max_size=4),
    keywords=_CLASS,
    documented=st.booleans(),
    post_init=st.booleans(),
)
def test_a_value_class_is_the_dataclass_it_stands_for(
    fields: list[dict[str, Any]], keywords: dict[str, bool], documented: bool, post_init: bool
) -> None:
    namespace = _namespace(fields, documented, post_init)
    ours = _made(value_class(**keywords), namespace)
    theirs = _made(dataclasses.dataclass(**keywords), namespace)
    assert ours[0] == theirs[0]
    if ours[0] != "ok":
        assert ours == theirs  # the same error, in the same words
        return
    our_behaviour, their_behaviour = _behaviour(ours[1], fields), _behaviour(theirs[1], fields)
    if keywords["frozen"] and keywords["slots"] and "new attribute" in our_behaviour:
        # Python 3.12's frozen slotted dataclass refuses a new attribute with a TypeError
        # from its own super() call (its __setattr__ names the class before the slots
        # made it anew, CPython gh-90562); a value class says the frozen instance's error.
        assert our_behaviour.pop("new attribute") == (
            "raised",
            ("FrozenInstanceError", "cannot assign to field 'extra'"),
        )
        their_behaviour.pop("new attribute")
    assert our_behaviour == their_behaviour


@record
class _Pair:
    left: int
    right: tuple[int, ...] = ()


@value_class(frozen=True, slots=True)
class _Frozen:
    name: str
    sizes: tuple[int, ...]


def test_a_record_is_a_slotted_dataclass_hashed_by_its_fields() -> None:
    pair = _Pair(1, (2, 3))
    assert repr(pair) == "_Pair(left=1, right=(2, 3))"
    assert pair == _Pair(1, (2, 3)) and pair != _Pair(1) and hash(pair) == hash((1, (2, 3)))
    assert vars(_Pair)["__slots__"] == _Pair.__match_args__ == ("left", "right")
    assert dataclasses.replace(pair, left=4) == _Pair(4, (2, 3))


def test_a_frozen_slotted_value_class_pickles_and_refuses_assignment() -> None:
    frozen = _Frozen("tile", (8, 64))
    assert pickle.loads(pickle.dumps(frozen)) == frozen
    assert copy.deepcopy(frozen) == frozen
    try:
        frozen.name = "other"  # type: ignore[misc]
    except dataclasses.FrozenInstanceError as error:
        assert str(error) == "cannot assign to field 'name'"
    else:
        raise AssertionError("a frozen value class took an assignment")
