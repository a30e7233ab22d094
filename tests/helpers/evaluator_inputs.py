"""The random values the reference evaluator (``tests/helpers/evaluator.py``) runs a module on.

- Arrays (a buffer's contents, a vector argument): floats from N(0, 2).
  Trials differ in what else they hold (the trial is the seed):

  - every third trial (0, 3, ...) is plain, so that sums over a whole array
    stay finite;
  - the others sprinkle IEEE special values in: NaN, +-inf, -0.0, the largest
    finite value, the smallest subnormal. Trials 1, 4, ... change a few
    scattered elements (1 per 256, 1 to 8), the first to NaN, the others to
    any special; trials 2, 5, ... change more (each special value at least
    once where the array has 12 elements or more, at most half of them). In
    both, arrays of rank 2 or more get one line along each dim (all other
    coordinates fixed) filled with -0.0 (a quarter of the time +0.0), so a row
    reduced whole can sum to -0.0, where dropping an ``acc`` of +0.0 shows.

  Integers are small (like indices and trip counts) in even trials and wide
  in odd ones, with the type's minimum and maximum, -1 and 0 sprinkled in
  like the float specials; ``i1`` is random both ways.
- Scalars: an ``i1`` is random both ways, an integer small (a loop bound, an
  ``index_switch`` selector: from -1, so that a loop may run no iteration and
  a switch take its default), a float from N(0, 2) or now and then special.

``specials=False`` draws the plain values only (to compare with another
implementation that may order NaN-producing steps differently).
"""

from __future__ import annotations

from typing import Any

import ml_dtypes
import numpy as np

Array = np.ndarray

SMALL_INTS = (-2, 6)  # [low, high): small integers, in even trials
WIDE_INTS = (-1000, 1000)  # in odd trials
SCALAR_INTS = (-1, 4)  # a scalar argument: a loop bound, a switch selector
MADE_UP_INTS = (0, 4)  # what an op the evaluator does not model returns (thread ids, ...)


def _float_specials(dtype: np.dtype) -> list[float]:
    info = ml_dtypes.finfo(dtype)
    return [np.nan, np.inf, -np.inf, -0.0, float(info.max), float(info.smallest_subnormal)]


def _int_specials(dtype: np.dtype) -> list[int]:
    info = np.iinfo(dtype)
    return [int(info.min), int(info.max), -1, 0]


def random_array(
    rng: np.random.Generator,
    shape: tuple[int, ...],
    dtype: Any,
    *,
    trial: int = 0,
    specials: bool = True,
) -> Array:
    """Random contents of ``shape`` and ``dtype`` (see the module's docstring)."""
    dtype = np.dtype(dtype)
    if dtype == np.bool_:
        return rng.integers(0, 2, shape).astype(np.bool_)
    mode = trial % 3 if specials and int(np.prod(shape, dtype=np.int64)) >= 2 else 0
    if np.issubdtype(dtype, np.integer):
        low, high = SMALL_INTS if trial % 2 == 0 else WIDE_INTS
        values = rng.integers(low, high, shape).astype(dtype)
        if mode:
            _scatter(rng, values, _int_specials(dtype), mode)
        return values
    values = rng.normal(0.0, 2.0, shape)
    if mode:
        if values.ndim >= 2:
            _lines(rng, values)
        _scatter(rng, values, _float_specials(dtype), mode)
    return values.astype(dtype)


def _scatter(rng: np.random.Generator, values: Array, specials: list[Any], mode: int) -> None:
    """Mode 1: a few elements become special values, the first the first special
    (NaN for floats). Mode 2: more, cycling through every special value."""
    few = int(np.clip(values.size // 256, 1, 8))
    if mode == 1:
        chosen = [specials[0]] + [specials[int(i)] for i in rng.integers(0, len(specials), few - 1)]
    else:
        count = min(values.size // 2, max(len(specials), 2 * few))
        start = int(rng.integers(0, len(specials)))
        chosen = [specials[(start + i) % len(specials)] for i in range(count)]
    at = rng.choice(values.size, size=len(chosen), replace=False)
    values.reshape(-1)[at] = np.array(chosen).astype(values.dtype)


def _lines(rng: np.random.Generator, values: Array) -> None:
    """Along each dim longer than 1, one line of -0.0 (a quarter of the time +0.0)."""
    for dim, length in enumerate(values.shape):
        if length < 2:
            continue
        index: list[Any] = [int(rng.integers(0, n)) for n in values.shape]
        index[dim] = slice(None)
        values[tuple(index)] = 0.0 if rng.random() < 0.25 else -0.0


def random_scalar(rng: np.random.Generator, dtype: Any, *, made_up: bool = False) -> Array:
    """A scalar argument (``made_up``: the result of an op the evaluator does not model)."""
    dtype = np.dtype(dtype)
    if dtype == np.bool_:
        return np.asarray(bool(rng.integers(0, 2)))
    if np.issubdtype(dtype, np.integer):
        low, high = MADE_UP_INTS if made_up else SCALAR_INTS
        return np.asarray(rng.integers(low, high), dtype)
    if rng.random() < 0.125:
        return np.asarray(rng.choice(_float_specials(dtype)), dtype)
    return np.asarray(rng.normal(0.0, 2.0), dtype)
