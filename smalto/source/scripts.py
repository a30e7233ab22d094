"""A function of the user's Python script, loaded as ``python SCRIPT.py`` would load it.

``smalto capture`` and ``smalto fix`` are pointed at ``SCRIPT.py:FUNCTION``: the script
runs (under a name of smalto's, so that its ``if __name__ == "__main__":`` part does
not), with its own folder first on ``sys.path`` so that its imports find its
neighbours, and the function is taken from what it defined. Anything the script does
wrong while loading is the user's error, reported in one line (``ScriptError``).
"""

from __future__ import annotations

import inspect
import runpy
import sys
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any


class ScriptError(Exception):
    """The script cannot be used: it exited or failed while loading, or lacks the function."""


def script_function(
    script: Path, function: str, *, run_name: str, home: Path | None = None, subject: str = ""
) -> Callable[..., Any]:
    """``function`` as defined by running ``script``. ``home``: the folder put first on
    ``sys.path`` (default: the script's own; a temporary copy of a script gives its
    original's). ``subject``: how messages name the script (default ``'SCRIPT'``).
    Raises ``ScriptError``."""
    subject = subject or f"'{script}'"
    try:
        with folder_on_path(home if home is not None else script.resolve().parent):
            namespace = runpy.run_path(str(script), run_name=run_name)
    except SystemExit:
        raise ScriptError(f"{subject} exited while being loaded") from None
    except Exception as error:  # the user's script: their error, reported in one line
        raise ScriptError(f"loading {subject} failed: {one_line(error)}") from None
    found = namespace.get(function)
    if not callable(found):
        raise ScriptError(f"{subject} defines no function {function!r}")
    return found


def check_arguments(fn: Callable[..., Any], count: int, name: str) -> None:
    """Raises ``ScriptError`` where ``fn`` (the script's function ``name``) cannot be
    called with ``count`` positional arguments: said before any lowering, as the usage
    error it is, rather than as the ``TypeError`` tracing would end in."""
    try:
        signature = inspect.signature(fn)
    except (TypeError, ValueError):  # no signature to read (a builtin): let the call say
        return
    try:
        signature.bind(*range(count))
    except TypeError as error:
        takes = [
            p.name
            for p in signature.parameters.values()
            if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD) and p.default is p.empty
        ]
        wanted = f"{len(takes)} argument{'s' if len(takes) != 1 else ''}"
        if takes:
            wanted += f" ({', '.join(takes)})"
        raise ScriptError(
            f"{name} takes {wanted}, given {count} --arg ({error}): one --arg per argument, "
            "in order"
        ) from None


@contextmanager
def folder_on_path(folder: Path) -> Iterator[None]:
    """``folder`` first on ``sys.path`` while the block runs, as ``python SCRIPT.py`` puts
    the script's folder."""
    directory = str(folder.resolve())
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
