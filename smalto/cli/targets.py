"""What ``smalto capture`` and ``smalto fix`` are pointed at: ``SCRIPT.py:FUNCTION``, and the
``--arg DTYPE[SHAPE]`` values the function is lowered for.

JAX is imported only inside ``shape_dtype`` (the arguments are read without it).
"""

from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path
from typing import Any

from smalto.basics.dtypes import AmbiguousDtype, dtype_name
from smalto.basics.file_names import is_printable, printable
from smalto.cli.output import UsageError
from smalto.source.scripts import ScriptError, check_arguments, script_function


def script_target(target: str) -> tuple[Path, str]:
    """``SCRIPT.py:FUNCTION`` split into the script's path and the function's name.
    Raises ``UsageError`` where it is not of that form or the script does not exist."""
    script, sep, name = target.rpartition(":")
    if not sep or not script or not name.isidentifier():
        raise UsageError(f"expected SCRIPT.py:FUNCTION, got {target!r}")
    path = Path(script)
    if path.is_dir():
        raise UsageError(f"cannot read '{script}': it is a folder (expected SCRIPT.py:FUNCTION)")
    if not path.is_file():
        what = "not a file" if path.exists() else "no such file"
        raise UsageError(f"cannot read '{script}': {what}")
    where = os.path.abspath(path)
    if not is_printable(where):
        # The script's path names its code and every Pallas location in it, and MLIR takes
        # only UTF-8 file names (JAX's lowering of it fails on a C++ std::bad_cast).
        raise UsageError(
            f"cannot lower functions of '{printable(where)}': its path is not UTF-8, and MLIR "
            "locations (which Pallas names after the script) take only UTF-8 file names; "
            "rename it (or its folder)"
        )
    return path, name


def shape_dtype(dtype: str, shape: tuple[int, ...]) -> Any:
    """``jax.ShapeDtypeStruct`` of a ``--arg`` (``f16``, ``bfloat16``...)."""
    import jax
    import jax.numpy as jnp

    try:
        return jax.ShapeDtypeStruct(shape, jnp.dtype(dtype_name(dtype)))
    except AmbiguousDtype as error:
        raise UsageError(f"argument --arg: {error}") from None
    except TypeError:
        raise UsageError(f"argument --arg: unknown dtype {dtype!r}") from None


def load_function(target: str, arguments: int) -> Callable[..., Any]:
    """The function ``SCRIPT.py:FUNCTION`` names, from running the script as ``python
    SCRIPT.py`` would (its neighbours importable), callable with ``arguments`` positional
    arguments. Raises ``UsageError``."""
    path, name = script_target(target)
    try:
        function = script_function(path, name, run_name="__smalto_capture__")
        check_arguments(function, arguments, target)
    except ScriptError as error:
        raise UsageError(str(error)) from None
    return function
