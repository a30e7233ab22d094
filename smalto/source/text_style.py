"""How a Python file is written, for text an edit adds to it: its line end, its step of
indentation, and the comment a line ends with.

An edit that adds lines writes them the file's way, as its author would: ``\\r\\n``
in a file whose lines end so (an LF-only line in a CRLF file shows as a change of
every line in some editors, and breaks byte-exact tools), the file's own step of
indentation (two spaces where its blocks are indented by two), and a statement it
rewrites keeps the comment at its end.
"""

from __future__ import annotations

import io
import re
import tokenize
from collections import Counter

from smalto.source.lines import python_lines

_ENDS = ("\r\n", "\r", "\n")
_BARE_NEWLINE = re.compile(r"\r\n|\r|\n")


def line_end(text: str, line: int | None = None) -> str:
    """The line end of ``text``'s line ``line`` (1-based), where it has one; else the end
    most of its lines have (``\\n`` for a text of one line)."""
    lines = python_lines(text, keepends=True)
    if line is not None and 0 < line <= len(lines):
        for end in _ENDS:
            if lines[line - 1].endswith(end):
                return end
    counts = Counter(end for each in lines for end in _ENDS if each.endswith(end))
    return counts.most_common(1)[0][0] if counts else "\n"


def with_line_end(replacement: str, end: str) -> str:
    """``replacement`` with each of its line ends written ``end``."""
    if end == "\n" or not any(e in replacement for e in _ENDS):
        return replacement
    return _BARE_NEWLINE.sub(end, replacement)


def indent_step(text: str) -> str:
    """The step by which ``text`` indents a block (the commonest increase of indentation
    from a line that opens one, ``:``, to the next); four spaces where it has none."""
    steps: Counter[str] = Counter()
    previous: str | None = None
    for line in python_lines(text):
        stripped = line.strip()
        if not stripped or stripped.startswith("#"):
            continue
        indent = line[: len(line) - len(line.lstrip())]
        if previous is not None and indent.startswith(previous) and len(indent) > len(previous):
            steps[indent[len(previous) :]] += 1
        previous = indent if stripped.endswith(":") else None
    return steps.most_common(1)[0][0] if steps else "    "


def trailing_comment(line: str) -> str:
    """The comment ``line`` (one line of code) ends with, ``#`` included; empty where none
    (a ``#`` in a string is no comment)."""
    try:
        tokens = list(tokenize.generate_tokens(io.StringIO(line.rstrip("\r\n") + "\n").readline))
    except (tokenize.TokenError, SyntaxError):
        return ""
    for token in tokens:
        if token.type == tokenize.COMMENT:
            return token.string
    return ""


__all__ = ["indent_step", "line_end", "trailing_comment", "with_line_end"]
