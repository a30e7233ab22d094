"""What ``smalto capture`` and ``smalto fix`` are pointed at: ``SCRIPT.py:FUNCTION``, and the
``--arg DTYPE[SHAPE]`` values the function is lowered for.

JAX is imported only inside ``shape_dtype`` (the arguments are read without it).
"""

from __future__ import annotations

import runpy
import sys
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from smalto.basics.dtypes import dtype_name
from smalto.cli.output import UsageError


def script_target(target: str) -> tuple[Path, str]:
    """``SCRIPT.py:FUNCTION`` split into the script's path and the function's name.
    Raises ``UsageError`` where it is not of that form or the script does not exist."""
    script, sep, name = target.rpartition(":")
    if not sep or not script or not name.isidentifier():
        raise UsageError(f"expected SCRIPT.py:FUNCTION, got {target!r}")
    path = Path(script)
    if not path.is_file():
        raise UsageError(f"cannot read '{script}': no such file")
    return path, name


def shape_dtype(dtype: str, shape: tuple[int, ...]) -> Any:
    """``jax.ShapeDtypeStruct`` of a ``--arg`` (``f16``, ``bfloat16``...)."""
    import jax
    import jax.numpy as jnp

    try:
        return jax.ShapeDtypeStruct(shape, jnp.dtype(dtype_name(dtype)))
    except TypeError:
        raise UsageError(f"argument --arg: unknown dtype {dtype!r}") from None


def load_function(target: str) -> Callable[..., Any]:
    """The function ``SCRIPT.py:FUNCTION`` names, from running the script as ``python
    SCRIPT.py`` would (its neighbours importable). Raises ``UsageError``."""
    path, name = script_target(target)
    script = str(path)
    try:
        with script_directory_on_path(path):
            namespace = runpy.run_path(str(path), run_name="__smalto_capture__")
    except SystemExit:
        raise UsageError(f"'{script}' exited while being loaded") from None
    except Exception as error:
        raise UsageError(f"loading '{script}' failed: {one_line(error)}") from None
    function = namespace.get(name)
    if not callable(function):
        raise UsageError(f"'{script}' defines no function {name!r}")
    return function


@contextmanager
def script_directory_on_path(script: Path) -> Iterator[None]:
    # As `python SCRIPT.py` would: the script's own imports find its neighbours.
    directory = str(script.resolve().parent)
    sys.path.insert(0, directory)
    try:
        yield
    finally:
        if directory in sys.path:
            sys.path.remove(directory)


def one_line(error: BaseException, *, typed: bool = True) -> str:
    """The first line of ``error``'s message (after its type's name, with ``typed``)."""
    text = str(error).strip().splitlines()
    if not text:
        return type(error).__name__
    return f"{type(error).__name__}: {text[0]}" if typed else text[0]
