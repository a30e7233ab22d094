"""How deep a module nests, bounded before anything walks it.

MLIR's parser, verifier and printer, and every walk of a module, recurse once per
nested region (the C++ ones on the thread's stack: MLIR's parser overflows an 8 MiB
stack, killing the process, at about 3 000 nested regions). A kernel nests a few
dozen deep; smalto takes modules nested at most ``MAX_REGION_DEPTH`` regions deep and
says so, in one line naming the depth, of any module deeper: its text before it is
parsed (``text_too_deep``), a parsed module as it is read (``smalto.program.reader``).
"""

from __future__ import annotations

import re
from itertools import accumulate

# Regions inside regions that smalto takes: far above any kernel (a few dozen), and
# far below where MLIR's parser or a Python walk runs out of stack.
MAX_REGION_DEPTH = 512
# Brackets a region's text nests in, at most: a region in generic form is ``({...})``,
# and the attributes of an op inside it nest a few more (``<{value = dense<[...]>}>``).
_BRACKETS_PER_REGION = 2
_ATTRIBUTE_BRACKETS = 16
MAX_BRACKET_DEPTH = MAX_REGION_DEPTH * _BRACKETS_PER_REGION + _ATTRIBUTE_BRACKETS

# Strings and comments, whose brackets nest nothing (escapes skipped whole).
_QUOTED = re.compile(r'"[^"\\\n]*(?:\\.[^"\\\n]*)*"|//[^\n]*')
_NOT_BRACKETS = bytes(c for c in range(256) if c not in b"()[]{}")
_STEP = {ord(c): (1 if c in "([{" else -1) for c in "()[]{}"}


def too_deep_message(subject: str, depth: int, what: str = "regions") -> str:
    """The one line said of a module nested deeper than smalto takes."""
    return (
        f"{subject} nests {what} {depth} deep: smalto takes modules nested at most "
        f"{MAX_REGION_DEPTH} regions deep (a kernel nests a few dozen; MLIR's parser and "
        "walks recurse once per level)"
    )


def bracket_depth(text: str) -> int:
    """How deep the brackets of MLIR text nest (``(``, ``[``, ``{``), strings and comments
    aside; unclosed ones count."""
    if "//" in text or '\\"' in text:  # comments, or escaped quotes: the slow way
        text = _QUOTED.sub("", text)
    elif '"' in text:  # outside strings: every other piece between quotes
        text = "".join(text.split('"')[::2])
    brackets = text.encode("utf-8", "surrogatepass").translate(None, _NOT_BRACKETS)
    return max(accumulate(map(_STEP.__getitem__, brackets)), default=0)


def text_too_deep(text: str, subject: str) -> str | None:
    """The message for MLIR text nested deeper than smalto takes (before it is parsed,
    which would overflow the stack), else None. ``subject`` names the text."""
    depth = bracket_depth(text)
    if depth <= MAX_BRACKET_DEPTH:
        return None
    line = _line_reaching(text, MAX_BRACKET_DEPTH + 1)
    where = f"{subject} (from line {line})" if line else subject
    return too_deep_message(where, depth, "brackets")


def _line_reaching(text: str, depth: int) -> int:
    """The line where the brackets first nest ``depth`` deep (the slow way: only for the
    message about a module refused)."""
    stripped = _QUOTED.sub(lambda m: "\n" * m.group().count("\n"), text)
    level, line = 0, 1
    for char in stripped:
        if char == "\n":
            line += 1
        elif char in "([{":
            level += 1
            if level >= depth:
                return line
        elif char in ")]}":
            level -= 1
    return 0
