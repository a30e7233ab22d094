"""One printer for what the commands say besides their answer (issue #35, part 4).

Every ``PROG: error: ...``, ``PROG: note: ...`` and ``PROG: warning: ...`` line is
printed by ``smalto.cli.output`` (``fail``, ``note``, ``warning``), so that every
command words and routes them the same way (on stderr, after the command's name)
and a library hands its notes up instead of printing them. This test reads the
source: a ``print(...)`` or ``....write(...)`` call anywhere else under ``smalto/``
whose literal text holds such a line breaks the rule.
"""

from __future__ import annotations

import ast
import re
from pathlib import Path

import pytest

_PACKAGE = Path(__file__).resolve().parents[2] / "smalto"
_PRINTER = _PACKAGE / "cli" / "output.py"
# "error: ...", "smalto: note: ...", "{prog}: warning: ...": a message line's kind, at
# the start of the text or after a command's name (not "error[SM004]", not "errors:").
_KIND = re.compile(r"(?:^|: |\n)(?:error|note|warning):(?: |$)")


def _literal_text(node: ast.expr) -> str:
    """The constant text of a string or f-string argument (its placeholders as ``{}``)."""
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        return node.value
    if isinstance(node, ast.JoinedStr):
        return "".join(
            _literal_text(part) if isinstance(part, ast.Constant) else "{}" for part in node.values
        )
    if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Add):
        return _literal_text(node.left) + _literal_text(node.right)
    return ""


def _is_output_call(call: ast.Call) -> bool:
    """``print(...)``, or ``X.write(...)`` (``sys.stderr.write``, ``stream.write``)."""
    function = call.func
    if isinstance(function, ast.Name):
        return function.id == "print"
    return isinstance(function, ast.Attribute) and function.attr == "write"


def message_printers(source: str, file: str = "<source>") -> list[str]:
    """``file:line: text`` of each call in ``source`` that prints a message line itself."""
    found = []
    for node in ast.walk(ast.parse(source, filename=file)):
        if isinstance(node, ast.Call) and _is_output_call(node):
            for argument in node.args:
                text = _literal_text(argument)
                if _KIND.search(text):
                    found.append(f"{file}:{node.lineno}: {text!r}")
    return found


def test_only_the_output_module_prints_error_note_and_warning_lines() -> None:
    printers = []
    for path in sorted(_PACKAGE.rglob("*.py")):
        if path != _PRINTER:
            relative = str(path.relative_to(_PACKAGE.parent))
            printers += message_printers(path.read_text(encoding="utf-8"), relative)
    assert not printers, "print through smalto.cli.output (fail, note, warning):\n" + "\n".join(
        printers
    )


def test_the_output_module_is_where_they_are_printed() -> None:
    # (Else the scan above would pass by finding nothing anywhere.)
    assert len(message_printers(_PRINTER.read_text(encoding="utf-8"))) >= 2


@pytest.mark.parametrize(
    "line",
    [
        'print(f"smalto explain: note: {note}", file=sys.stderr)',
        'print(f"{command}: warning: {message.transfer}", file=sys.stderr)',
        'print(f"smalto draw: note: {note}", flush=True)',
        'sys.stderr.write("smalto: error: " + message + "\\n")',
        'print(f"note: not made: {held.edit.text}", file=report)',
    ],
)
def test_a_message_printed_by_hand_is_found(line: str) -> None:
    assert message_printers(line)


@pytest.mark.parametrize(
    "line",
    [
        'print(f"{target} lowers as written: nothing to fix", file=report)',
        'print(f"error[{code}]: {text}")',  # a diagnosis's own heading, on stdout
        'lines += [f"note: {note}" for note in notes]',  # text built, not printed
        'print(f"{count} errors: none fixed")',
    ],
)
def test_other_text_is_not_taken_for_a_message(line: str) -> None:
    assert not message_printers(line)
