"""The user's Python source behind a kernel's locations: found where the kernel author
would look, and read once.

A captured module's locations name files as they were when it was captured
(``kernels.py``, relative to where ``smalto capture`` ran, or an absolute path
on another machine). So a file is looked for as named (relative to the current
directory), then beside the module file being read (``near``), first at the
same relative path, then by its base name. ``Sources`` remembers what it read
and which files it could not find, so that a message can say why it shows no
source line.

The code that reads a line (a diagnosis writing a Pallas edit, deep in the
pass) does not know which module file is being read; the command that reads it
does. So the command says it once, around the inference
(``with searching_beside(path): ...``), and every ``Sources()`` made inside
shares that search: the same directories, the same files read, one list of
what was missing for the command to report. A script ``smalto fix`` runs as
edited, in memory, is read as edited (``reading_as_edited``).
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Iterator, Sequence
from contextvars import ContextVar
from pathlib import Path

from smalto.source.lines import python_lines

# Where the command running now looks, and what it found (``searching_beside``).
_ACTIVE: ContextVar[Sources | None] = ContextVar("smalto_sources", default=None)
_NOT_FILES = ("", "-", "<stdin>")  # stdin's names: no directory to look in
# Files read as edited in memory rather than as on disk (``reading_as_edited``), by
# absolute path: their lines.
_EDITED: ContextVar[dict[str, list[str]] | None] = ContextVar("smalto_edited", default=None)


class Sources:
    """Source files looked up from the current directory and beside ``near`` (the module
    files read; their directories are searched).

    Without ``near``, inside ``searching_beside(...)``, the search that block set
    up (shared: its files read once, its missing files reported once); elsewhere, the
    current directory alone."""

    directories: list[Path]
    _lines: dict[str, list[str] | None]
    missing: list[str]  # files named by locations and not found, in order

    def __init__(self, near: Sequence[str | Path] | None = None) -> None:
        active = _ACTIVE.get() if near is None else None
        if active is not None:
            self.directories = active.directories
            self._lines = active._lines
            self.missing = active.missing
            return
        self.directories = [Path(p).parent for p in near or () if str(p) not in _NOT_FILES]
        self._lines = {}
        self.missing = []

    def find(self, file: str) -> Path | None:
        """Where ``file`` (as a location names it) is on this machine; None if nowhere."""
        # (Strings and ``os.path``: pathlib's objects cost several times the look itself,
        # and a file not found is looked for once per message.)
        name = Path(file).name
        candidates = [file]
        for directory in self.directories:
            if not os.path.isabs(file):
                candidates.append(os.path.join(directory, file))
            candidates.append(os.path.join(directory, name))
        found = next((c for c in candidates if os.path.isfile(c)), None)
        return None if found is None else Path(found)

    def lines(self, file: str) -> list[str] | None:
        """The lines of ``file``; None (and it is counted as missing) if it is not found.
        Stdin (``-``) is never found, and never missing: it has no file to look for."""
        if file in _NOT_FILES:
            return None
        edited = _EDITED.get()
        if edited is not None and (lines := edited.get(os.path.abspath(file))) is not None:
            return lines  # never kept: the next edit's text replaces it
        if file not in self._lines:
            path = self.find(file)
            text = None
            if path is not None:
                try:
                    text = python_lines(path.read_text(encoding="utf-8"))
                except (OSError, UnicodeDecodeError):
                    text = None
            if text is None and file not in self.missing:
                self.missing.append(file)
            self._lines[file] = text
        return self._lines[file]

    def line(self, file: str, number: int) -> str | None:
        """Line ``number`` (1-based) of ``file``; None if the file or the line is missing."""
        lines = self.lines(file)
        if lines is None or not 0 < number <= len(lines):
            return None
        return lines[number - 1]

    def missing_note(self) -> str | None:
        """What to say of the files not found, if any."""
        if not self.missing:
            return None
        here = Path.cwd().resolve()
        beside = [d for d in dict.fromkeys(self.directories) if d.resolve() != here]
        where = " or ".join(["the current directory", *(f"beside {d}/" for d in beside)])
        files = ", ".join(self.missing)
        return f"source lines not shown: {files} not found in {where}"


@contextlib.contextmanager
def searching_beside(*modules: str | Path) -> Iterator[Sources]:
    """Inside the block, ``Sources()`` also looks beside these module files, and every one
    shares the search it yields (so its ``missing_note()`` covers them all)."""
    sources = Sources(near=modules)
    token = _ACTIVE.set(sources)
    try:
        yield sources
    finally:
        _ACTIVE.reset(token)


@contextlib.contextmanager
def reading_as_edited(file: str | Path, text: str) -> Iterator[None]:
    """Inside the block, every ``Sources`` reads ``file`` as ``text``: the script ``smalto
    fix`` runs as edited, in memory, before it writes the file (its kernel's locations
    name the file, their lines are the edited text's)."""
    edited = dict(_EDITED.get() or {})
    edited[os.path.abspath(file)] = text.splitlines()
    token = _EDITED.set(edited)
    try:
        yield
    finally:
        _EDITED.reset(token)
