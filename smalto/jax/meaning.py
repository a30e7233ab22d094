"""What a kernel computes, as JAX's own trace says it: the check that an edit keeps it.

An edit of a kernel's source keeps what the kernel computes when JAX's trace of
the edited function (its jaxpr, ``jax.make_jaxpr``) equals the original's once
the layout, transform and ``optimized`` parameters are set aside:

- a ``plgpu.layout_cast(x, L)`` is the identity on values: its result is ``x``;
- a ``layout=`` (of ``plgpu.async_load_tmem``, of ``plgpu.TMEM(...)``), a
  ``new_layout``, an ``optimized`` flag are parameters no value depends on;
- an SMEM ref's ``transforms=`` (tiling, swizzling) change how it is stored,
  not what it holds: its refs are compared by their logical shape (the
  stored one with Pallas' undo transforms applied), and the undo transforms
  Pallas writes at every use of the ref are set aside;
- ``plgpu.store(ref, x, optimized=False)`` is ``ref[...] = x`` and
  ``plgpu.load(ref.at[i], optimized=False)`` is ``ref[i]`` (one primitive for
  both once the flag is set aside).

Everything else counts: every primitive, its dtype, shape and axis parameters,
which value goes to which operand (values are numbered by where they are
made, so two swapped arguments differ), every literal. What says where the
source is (file names, lines: the script is traced from copies) does not.
How the kernel names things (an alias ``WGMMA = plgpu.Layout.WGMMA``,
``from ... import Layout``, a constant imported from another module, a BOM)
never reaches the trace, so it never makes two kernels differ.
"""

from __future__ import annotations

import enum
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import jax
from jax.extend import core as jax_core

# Parameters no value depends on: layouts, transforms, the optimized flag; and where the
# source is (the traced script is a copy, at another path each time).
_SET_ASIDE = frozenset(
    {
        "layout",
        "new_layout",
        "optimized",
        "name_and_src_info",
        "debug_info",
        "metadata",
        "rule",  # a custom_vmap rule: a function made anew by each trace
    }
)
# Pallas' undo transforms of an SMEM ref's ``transforms=``: how it is stored.
_STORAGE_TRANSFORMS = ("UntilingTransform", "UnswizzleRef")
_STORAGE_NODE = re.compile(
    r"CustomNode\((?:" + "|".join(_STORAGE_TRANSFORMS) + r")\[[^\]]*\], \[\]\)(?:, )?"
)
_ADDRESS = re.compile(r" at 0x[0-9a-fA-F]+")
# Primitives that are one once the ``optimized`` flag is set aside (Pallas' Mosaic GPU
# ``load``/``store`` and the state primitives ``get``/``swap`` of ``ref[...]``).
_SAME_PRIMITIVE = {"load": "get", "store": "swap"}
_LAYOUT_CAST = "layout_cast"


@dataclass(frozen=True)
class Meaning:
    """The trace of a function, with what no value depends on set aside: equal for two
    functions that compute the same (``==``)."""

    form: tuple[Any, ...]


class TraceFailed(Exception):
    """The function could not be traced with the arguments (its own error, in one line)."""


def meaning_of(fn: Callable[..., Any], args: Sequence[Any]) -> Meaning:
    """What ``fn(*args)`` computes, from JAX's trace of it (``args``: arrays or
    ``jax.ShapeDtypeStruct``\\ s). Raises ``TraceFailed`` where it cannot be traced."""
    try:
        closed = jax.make_jaxpr(fn)(*args)
    except Exception as error:  # the user's function: its error, said in one line
        text = str(error).strip().splitlines()
        raise TraceFailed(f"{type(error).__name__}: {text[0] if text else ''}") from None
    return Meaning(_Canon().closed(closed))


class _Canon:
    """A jaxpr as nested tuples: values numbered by where they are made, layout casts
    forwarded, layout and transform parameters set aside."""

    def __init__(self) -> None:
        self.numbers: dict[jax_core.Var, int] = {}
        self.forwarded: dict[jax_core.Var, Any] = {}

    def closed(self, closed: jax_core.ClosedJaxpr) -> tuple[Any, ...]:
        consts = tuple(self.constant(c) for c in closed.consts)
        return ("closed", consts, self.jaxpr(closed.jaxpr))

    def jaxpr(self, jaxpr: jax_core.Jaxpr, logical: Sequence[Any] | None = None) -> tuple[Any, ...]:
        """``logical``: the invars' avals as the kernel sees them (an SMEM ref's shape before
        its transforms), where a caller knows them."""
        avals = logical if logical is not None else [v.aval for v in jaxpr.invars]
        invars = tuple((self.define(v), _aval(a)) for v, a in zip(jaxpr.invars, avals, strict=True))
        constvars = tuple((self.define(v), _aval(v.aval)) for v in jaxpr.constvars)
        used = _used(jaxpr)
        eqns = []
        for eqn in jaxpr.eqns:
            name = eqn.primitive.name
            if name == _LAYOUT_CAST and len(eqn.invars) == 1 and len(eqn.outvars) == 1:
                self.forwarded[eqn.outvars[0]] = self.atom(eqn.invars[0])
                continue
            params = self.params(eqn.params)
            operands = tuple(self.atom(v) for v in eqn.invars)
            results = tuple(
                (self.define(v), _aval(v.aval))
                for v in eqn.outvars
                if not isinstance(v, jax_core.DropVar) and v in used
            )
            eqns.append((_SAME_PRIMITIVE.get(name, name), params, operands, results))
        outs = tuple(self.atom(v) for v in jaxpr.outvars)
        return ("jaxpr", constvars, invars, tuple(eqns), outs)

    def define(self, var: jax_core.Var) -> int:
        number = len(self.numbers)
        self.numbers[var] = number
        return number

    def atom(self, atom: Any) -> Any:
        if isinstance(atom, jax_core.Literal):
            return ("literal", _plain(atom.val), _aval(atom.aval))
        if atom in self.forwarded:
            return self.forwarded[atom]
        return ("var", self.numbers.get(atom, -1))

    def constant(self, value: Any) -> Any:
        return ("constant", _plain(value))

    def params(self, params: dict[str, Any]) -> tuple[Any, ...]:
        return tuple(
            (key, self.param(key, value, params))
            for key, value in sorted(params.items())
            if key not in _SET_ASIDE
        )

    def param(self, key: str, value: Any, params: dict[str, Any]) -> Any:
        if isinstance(value, jax_core.ClosedJaxpr):
            return self.closed(value)
        if isinstance(value, jax_core.Jaxpr):
            if key == "jaxpr" and "ref_transforms" in params:
                return self.jaxpr(value, _logical_refs(value, params["ref_transforms"]))
            return self.jaxpr(value)
        if key == "ref_transforms":
            return tuple(tuple(_value(t) for t in chain if not _storage(t)) for chain in value)
        if isinstance(value, tuple | list):
            return tuple(self.param(key, v, params) for v in value)
        return _value(value)


def _used(jaxpr: jax_core.Jaxpr) -> set[jax_core.Var]:
    used: set[jax_core.Var] = set()
    for eqn in jaxpr.eqns:
        used.update(v for v in eqn.invars if isinstance(v, jax_core.Var))
    used.update(v for v in jaxpr.outvars if isinstance(v, jax_core.Var))
    return used


def _logical_refs(jaxpr: jax_core.Jaxpr, chains: Sequence[Sequence[Any]]) -> list[Any]:
    """The avals of a ``run_scoped`` body's refs as the kernel sees them: each stored ref
    with the undo transforms Pallas applies at its uses (``ref_transforms``)."""
    avals = [v.aval for v in jaxpr.invars]
    for index, chain in enumerate(chains):
        if index >= len(avals):
            break
        aval = avals[index]
        for transform in chain:
            if not _storage(transform):
                continue
            try:
                aval = transform.transform_type(aval)
            except Exception:  # noqa: BLE001 -- a transform that cannot say: as stored
                break
        avals[index] = aval
    return avals


def _storage(transform: Any) -> bool:
    return type(transform).__name__ in _STORAGE_TRANSFORMS


def _aval(aval: Any) -> Any:
    """A value's type: its shape and dtype, and for a ref where it lives (a TMEM ref's
    layout set aside)."""
    inner = getattr(aval, "inner_aval", None)
    if inner is not None:
        space = getattr(aval, "memory_space", None)
        return ("ref", str(space), _aval(inner), getattr(aval, "collective", None))
    shape = getattr(aval, "shape", None)
    dtype = getattr(aval, "dtype", None)
    if shape is not None or dtype is not None:
        return (type(aval).__name__, tuple(shape or ()), str(dtype))
    return _value(aval)


def _value(value: Any) -> Any:
    """A parameter's value, comparable: a layout set aside, a tree's storage transforms
    set aside, anything else by its text (no addresses)."""
    if _is_layout(value):
        return "layout"
    if isinstance(value, jax.tree_util.PyTreeDef):
        return _STORAGE_NODE.sub("", str(value)).replace("(,)", "()").replace(", )", ")")
    if isinstance(value, tuple | list):
        return tuple(_value(v) for v in value)
    if isinstance(value, dict):
        return tuple(sorted((str(k), _value(v)) for k, v in value.items()))
    if callable(value) and not isinstance(value, type | enum.Enum):
        return getattr(value, "__qualname__", type(value).__name__)
    return _ADDRESS.sub("", repr(value))


def _plain(value: Any) -> Any:
    try:
        import numpy as np

        array = np.asarray(value)
        return (str(array.dtype), array.shape, array.tobytes())
    except Exception:  # noqa: BLE001 -- not an array: by its text
        return _ADDRESS.sub("", repr(value))


def _is_layout(value: Any) -> bool:
    """A Pallas or Mosaic GPU layout (``plgpu.Layout.WGMMA``, a reduced or parameterized
    one, a TMEM layout), by its class's module and name."""
    kind = type(value)
    module = getattr(kind, "__module__", "") or ""
    if "mosaic" not in module:
        return False
    return any("Layout" in base.__name__ for base in kind.__mro__ if base is not object)


__all__ = ["Meaning", "TraceFailed", "meaning_of"]
