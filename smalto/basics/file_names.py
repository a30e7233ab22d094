"""File names as a message can print them.

A file name that is no UTF-8 (``k\\xff.mlir``) reaches Python as a ``str`` whose
stray bytes are surrogates (``k\\udcff.mlir``, PEP 383). Such a name opens the
file, but no UTF-8 stream or file can write it, and MLIR's bindings refuse it
as a path: everything that shows a name goes through ``printable`` first.
"""

from __future__ import annotations


def printable(text: str) -> str:
    """``text`` with each stray byte of a file name shown as an escape (``\\xff``)."""
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return text.encode("utf-8", "surrogateescape").decode("utf-8", "backslashreplace")
    return text


def is_printable(text: str) -> bool:
    """Whether ``text`` holds no stray byte (it can be written as UTF-8 as it is)."""
    return printable(text) == text
