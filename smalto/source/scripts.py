"""A function of the user's Python script, loaded as ``python SCRIPT.py`` would load it.

``smalto capture`` and ``smalto fix`` are pointed at ``SCRIPT.py:FUNCTION``: the script
runs (under a name of smalto's, so that its ``if __name__ == "__main__":`` part does
not), with its own folder first on ``sys.path`` so that its imports find its
neighbours, ``__file__`` its absolute path and the working directory the user's (a
script that reads a file beside itself finds it), and the function is taken from what
it defined. ``smalto fix`` runs an edited script's text in the file's place, in
memory. Anything the script does wrong while loading is the user's error, reported in
one line (``ScriptError``).
"""

from __future__ import annotations

import inspect
import os
import sys
import types
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from smalto.source.confined import TIME_LIMIT_VARIABLE, LeftProcesses, OutOfTime, confined


class ScriptError(Exception):
    """The script cannot be used: it exited or failed while loading, or lacks the function."""


def script_function(
    script: Path,
    function: str,
    *,
    run_name: str,
    text: str | None = None,
    subject: str = "",
) -> Callable[..., Any]:
    """``function`` as defined by running ``script`` (``run_script``). ``text``: what runs
    as the script (default: the file's own). ``subject``: how messages name the script
    (default ``'SCRIPT'``). Raises ``ScriptError``."""
    subject = subject or f"'{script}'"
    found = run_script(script, run_name=run_name, text=text, subject=subject).get(function)
    if not callable(found):
        raise ScriptError(f"{subject} defines no function {function!r}")
    return found


def run_script(
    script: Path, *, run_name: str, text: str | None = None, subject: str = ""
) -> dict[str, Any]:
    """Runs ``script`` as ``python SCRIPT.py`` would, under ``run_name``; returns what it
    defined. ``__file__`` is its absolute path (and its code's file name: tracebacks and
    Pallas' locations name it), ``sys.argv`` the path as given alone, its real folder (symlinks
    followed) first on ``sys.path``, the working directory the caller's. ``text``, where
    given, runs in memory in the file's place (an edited script, not written yet: nothing
    is copied anywhere). Raises ``ScriptError``."""
    subject = subject or f"'{script}'"
    file = os.path.abspath(script)
    module = types.ModuleType(run_name)
    module.__dict__.update(
        __file__=file, __cached__=None, __loader__=None, __package__=None, __spec__=None
    )
    try:
        source: str | bytes = Path(script).read_bytes() if text is None else text
        if isinstance(source, str):
            source = source.removeprefix("\ufeff")  # compiled as text, a BOM is no character
        code = compile(source, file, "exec", dont_inherit=True)
        with (
            folder_on_path(Path(os.path.realpath(script)).parent),
            _as_main(script, module),
            _in_working_directory(),
        ):
            confined(lambda: exec(code, module.__dict__))
    except SystemExit:
        raise ScriptError(f"{subject} exited while being loaded") from None
    except OutOfTime as late:
        raise ScriptError(
            f"{subject} did not finish loading within {late.limit:g} s (a loop at its top "
            "level, or a wait on a process it started?): it was stopped; "
            f"{TIME_LIMIT_VARIABLE}=SECONDS gives it longer"
        ) from None
    except LeftProcesses as left:
        pids = ", ".join(str(pid) for pid in left.pids)
        raise ScriptError(
            f"{subject} started a process while being loaded and did not wait for it (a fork at "
            f"import? process {pids}): it was stopped; smalto runs the script in its own "
            "process, which a process left behind would hold"
        ) from None
    except Exception as error:  # the user's script: their error, reported in one line
        raise ScriptError(f"loading {subject} failed: {one_line(error)}") from None
    return dict(module.__dict__)


@contextmanager
def _in_working_directory() -> Iterator[None]:
    """The working directory as it was before the block, after it (a script's
    ``os.chdir`` at import changes its own run, not smalto's: the paths the user gave
    still name their files)."""
    directory = os.getcwd()
    try:
        yield
    finally:
        if os.getcwd() != directory:
            os.chdir(directory)


@contextmanager
def _as_main(script: Path, module: types.ModuleType) -> Iterator[None]:
    """``sys.argv`` the script alone and ``sys.modules`` holding its module while it runs
    (as ``python SCRIPT.py`` has them: a top-level ``argparse`` sees no argument of
    smalto's; a dataclass or a pickle looks its module up there)."""
    name = module.__name__
    saved_argv = sys.argv
    saved_module = sys.modules.get(name)
    sys.modules[name] = module
    sys.argv = [str(script)]
    try:
        yield
    finally:
        sys.argv = saved_argv
        if saved_module is None:
            sys.modules.pop(name, None)
        else:
            sys.modules[name] = saved_module


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
