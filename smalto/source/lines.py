"""A Python file's lines as Python counts them.

Python's tokenizer ends a line at ``\\n``, ``\\r\\n`` or ``\\r`` only, and an ``ast`` node's
``lineno`` and a traceback's line number count those. ``str.splitlines`` also splits at
a form feed, ``\\v``, ``\\x1c``-``\\x1e``, U+0085, U+2028 and U+2029, which a script may
hold in a comment or a string: every line after one would be off by one. Every span and
source line of smalto's is counted here.
"""

from __future__ import annotations

import re

# A line and its end; the last line may have none.
_LINE = re.compile(r"[^\r\n]*(?:\r\n|\r|\n)|[^\r\n]+\Z")
_END = re.compile(r"(?:\r\n|\r|\n)\Z")


def python_lines(text: str, *, keepends: bool = False) -> list[str]:
    """``text`` split into lines where Python's tokenizer splits it (``keepends``: each
    with its line end, so that they join back into ``text``)."""
    lines = _LINE.findall(text)
    if keepends:
        return lines
    return [_END.sub("", line) for line in lines]
