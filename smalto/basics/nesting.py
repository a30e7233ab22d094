"""How deep a module nests, bounded before anything walks it.

MLIR's parser, printer and cloning recurse once per nested region, in C++, on the
calling thread's stack; a stack they overflow kills the process. Measured (jaxlib's
bindings, x86-64, generic-form ``scf.for`` nests; pretty ``scf.for`` costs the parser
about as much a bracket): the parser takes 2 047 regions on an 8 MiB stack (the main
thread's, and by default every thread's), 506 on 2 MiB, 250 on 1 MiB; the printer about
1 150 regions a MiB; cloning about 3 200 a MiB; the verifier, MLIR's walk and freeing a
module over 4 000 a MiB. Angle brackets (types and attributes nested in types and
attributes: ``tuple<tuple<...>>``) cost the parser less, 175 to 350 bytes each (a 2 MiB
stack takes 6 000 ``tuple<``, not 12 000; the printer about 1 900 a MiB), but recurse
all the same, so they count as brackets. So smalto parses deeply nested text on a thread
of its own with a stack far larger than the parse needs (``parse_with_room``), and takes
modules nested at most ``MAX_REGION_DEPTH`` regions deep, half what the parser takes on
the default stack, and under what the printer takes on a 1 MiB one. Its own walks use
stacks of their own, not recursion. Any module deeper is said so, in one line naming the
depth: its text before it is parsed (``text_too_deep``), a parsed module as it is read
(``smalto.program.reader``).
"""

from __future__ import annotations

import re
import threading
from collections.abc import Callable
from itertools import accumulate

# Regions inside regions that smalto takes: far above any kernel (a few dozen), and
# far below where MLIR runs out of stack (see above). JAX's own tracing fails (Python's
# recursion limit) on kernels a few hundred ``fori_loop``s deep, before this.
MAX_REGION_DEPTH = 1024
# Brackets a region's text nests in, at most: a region in generic form is ``({...})``,
# and the attributes and types of an op inside it nest a few more
# (``<{value = dense<[...]>}>``, ``memref<..., #gpu.address_space<workgroup>>``).
_BRACKETS_PER_REGION = 2
_ATTRIBUTE_BRACKETS = 32
MAX_BRACKET_DEPTH = MAX_REGION_DEPTH * _BRACKETS_PER_REGION + _ATTRIBUTE_BRACKETS

# Strings and comments, whose brackets nest nothing (escapes skipped whole).
_QUOTED = re.compile(r'"[^"\\\n]*(?:\\.[^"\\\n]*)*"|//[^\n]*')
# Angle brackets nest types and attributes (``tuple<tuple<...>>``, ``#a<b<...>>``), which
# the parser recurses into as it does into regions: they count, but for the arrows of
# function types and affine maps (``(d0) -> (d0)``) and the comparisons of integer sets
# (``d0 - 4 >= 0``), which are no brackets.
_NOT_ANGLE_BRACKETS = ("->", ">=", "<=")
_OPENING, _CLOSING = "([{<", ")]}>"
_NOT_BRACKETS = bytes(c for c in range(256) if chr(c) not in _OPENING + _CLOSING)
_STEP = {ord(c): (1 if c in _OPENING else -1) for c in _OPENING + _CLOSING}


# Text nested deeper than this (in brackets) is parsed on a thread of its own, with a
# stack of ``_PARSER_STACK_BYTES``; shallower text (every kernel) on the caller's, which
# takes it on any stack of 512 KiB or more (about 4 KiB of stack a bracket, at most).
_SHALLOW_BRACKETS = 100
# Room for the deepest text smalto parses (``MAX_BRACKET_DEPTH``, at most 4 KiB a
# bracket: 8 MiB) eight times over; a thread's stack is reserved, not used, until needed.
_PARSER_STACK_BYTES = 64 << 20
_STACK_SIZE_LOCK = threading.Lock()  # threading.stack_size is the process's setting


def parse_with_room[T](parse: Callable[[], T], depth: int) -> T:
    """``parse()``, which parses text nested ``depth`` brackets deep (``bracket_depth``;
    MLIR's parser recurses once per bracket), run where the stack has room for it: on the
    calling thread where the text nests shallowly, else on a thread with a stack of its
    own (the caller's may be small: a thread's is 2 MiB where the stack's limit is
    unlimited). Its result or exception is the caller's."""
    if depth > MAX_BRACKET_DEPTH:
        raise ValueError(
            f"text nested {depth} brackets deep: parsed only up to {MAX_BRACKET_DEPTH}"
        )
    if depth <= _SHALLOW_BRACKETS:
        return parse()
    outcome: list[T] = []
    failure: list[BaseException] = []

    def run() -> None:
        try:
            outcome.append(parse())
        except BaseException as error:  # handed to the caller, raised there
            failure.append(error)

    with _STACK_SIZE_LOCK:
        before = threading.stack_size(_PARSER_STACK_BYTES)
        try:
            parser = threading.Thread(target=run, name="smalto-parse", daemon=True)
            parser.start()
        finally:
            threading.stack_size(before)
    parser.join()
    if failure:
        raise failure[0]
    return outcome[0]


def too_deep_message(subject: str, depth: int, what: str = "regions") -> str:
    """The one line said of a module nested deeper than smalto takes."""
    return (
        f"{subject} nests {what} {depth} deep: smalto takes modules nested at most "
        f"{MAX_REGION_DEPTH} regions deep (a kernel nests a few dozen; MLIR's parser and "
        "walks recurse once per level)"
    )


def bracket_depth(text: str) -> int:
    """How deep the brackets of MLIR text nest (``(``, ``[``, ``{``, ``<``), strings,
    comments, arrows and comparisons aside; unclosed ones count."""
    if "//" in text or '\\"' in text:  # comments, or escaped quotes: the slow way
        text = _QUOTED.sub("", text)
    elif '"' in text:  # outside strings: every other piece between quotes
        text = "".join(text.split('"')[::2])
    text = _without_angle_lookalikes(text)
    brackets = text.encode("utf-8", "surrogatepass").translate(None, _NOT_BRACKETS)
    return max(accumulate(map(_STEP.__getitem__, brackets)), default=0)


def _without_angle_lookalikes(text: str) -> str:
    """The text without its ``->``, ``>=`` and ``<=``, whose ``<`` and ``>`` close or open
    nothing."""
    for lookalike in _NOT_ANGLE_BRACKETS:
        if lookalike in text:
            text = text.replace(lookalike, "")
    return text


def text_too_deep(text: str, subject: str, depth: int | None = None) -> str | None:
    """The message for MLIR text nested deeper than smalto takes (before it is parsed,
    which would overflow the stack), else None. ``subject`` names the text; ``depth`` is
    its ``bracket_depth``, where known."""
    if depth is None:
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
    stripped = _without_angle_lookalikes(stripped)
    level, line = 0, 1
    for char in stripped:
        if char == "\n":
            line += 1
        elif char in _OPENING:
            level += 1
            if level >= depth:
                return line
        elif char in _CLOSING:
            level -= 1
    return 0
