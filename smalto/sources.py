"""The user's Python source behind a kernel's locations: found where the kernel author
would look, and read once.

A captured module's locations name files as they were when it was captured
(``kernels.py``, relative to where ``smalto capture`` ran, or an absolute path
on another machine). So a file is looked for as named (relative to the current
directory), then beside the module file being read (``near``), first at the
same relative path, then by its base name. ``Sources`` remembers what it read
and which files it could not find, so that a message can say why it shows no
source line.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path


class Sources:
    """Source files looked up from the current directory and beside ``near`` (the module
    files read; their directories are searched)."""

    def __init__(self, near: Sequence[str | Path] = ()) -> None:
        self.directories = [Path(p).parent for p in near if str(p) not in ("", "-")]
        self._lines: dict[str, list[str] | None] = {}
        self.missing: list[str] = []  # files named by locations and not found, in order

    def find(self, file: str) -> Path | None:
        """Where ``file`` (as a location names it) is on this machine; None if nowhere."""
        named = Path(file)
        candidates = [named]
        for directory in self.directories:
            if not named.is_absolute():
                candidates.append(directory / named)
            candidates.append(directory / named.name)
        return next((c for c in candidates if c.is_file()), None)

    def lines(self, file: str) -> list[str] | None:
        """The lines of ``file``; None (and it is counted as missing) if it is not found."""
        if file not in self._lines:
            path = self.find(file)
            text = None
            if path is not None:
                try:
                    text = path.read_text(encoding="utf-8").splitlines()
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
        where = " or ".join(
            ["the current directory", *(f"beside {d}/" for d in dict.fromkeys(self.directories))]
        )
        files = ", ".join(self.missing)
        return f"source lines not shown: {files} not found in {where}"
