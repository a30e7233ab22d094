"""The module as ``smalto infer`` prints it: each op's line and each value's name there,
and the names the input file gave the same values.

MLIR keeps no SSA names: the printer names values afresh (``%cst``, ``%95#0``),
and the pretty form is laid out differently from a generic-form input (or from
one that carries ``loc(...)`` on every op). So a name of the input file (``%2``)
may name another value in the printed module, and its lines are others. The
commands that speak of values (``smalto explain``, ``smalto infer --summary``,
the report) use the printed module's names and lines, which a reader has in
front of them, and accept the input file's names too.

How: the printed text is parsed again, so that each op of the copy carries its
position in that text (MLIR gives an op parsed without ``loc(...)`` the
position of its name, a block argument that of its own name); the copy has the
structure of the original, so the two pre-order walks pair every op. The
input's names come from its own text the same way, from the positions of its
ops where the parser gave them, else by counting definitions in order.

Where a solved module's values and ops are (``Places``): ``smalto explain``, the
summary and the report name a value as the printed module does (``%12``,
``%95#0``), place it by the printed module's line (``line 88``), and an op from a
Python file by its source position (``kernel.py:88``): what a reader can find in
what they have in front of them.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from dataclasses import dataclass, field

from jax._src.lib.mlir import ir

from smalto.basics.mlir import operation_text
from smalto.basics.nesting import bracket_depth, parse_with_room
from smalto.program.view import Program, ops_in_order
from smalto.source.locations import file_position, location_name, location_text

# One SSA name as MLIR prints it (``%12``, ``%cst_3``, ``%arg4``), and the
# definitions of an op's results at the start of a line (``%95:3 = ``, ``%a, %b = ``).
_NAME = r"%[A-Za-z0-9_$.\-]+"
_NAME_AT = re.compile(_NAME)
_GROUP = re.compile(rf"({_NAME})(?::(\d+))?")
_DEFINITION = re.compile(
    rf"^[ \t]*((?:{_NAME}(?::\d+)?)(?:[ \t]*,[ \t]*{_NAME}(?::\d+)?)*)[ \t]*=", re.MULTILINE
)


@dataclass
class PrintedModule:
    """Where each op and value of a ``Program`` is in the printed module, and its names.

    ``lines``: printed line of each op (by op id), None where unknown;
    ``names``: printed name of each value that has one (by value id);
    ``value_lines``: printed line where each value is defined;
    ``input_names``: the name the input file gave each value, where it differs or not.
    """

    text: str
    lines: list[int | None]
    names: dict[int, str] = field(default_factory=dict)
    value_lines: dict[int, int] = field(default_factory=dict)
    input_names: dict[int, str] = field(default_factory=dict)

    def line_of_op(self, op: int) -> int | None:
        return self.lines[op] if 0 <= op < len(self.lines) else None

    def values_named(self, name: str) -> list[int]:
        """Ids of the values printed as ``name``; ``%N`` also names every result of a
        multi-result op (``%N#0``, ``%N#1``...)."""
        return _lookup(self.names, name)

    def values_named_in_input(self, name: str) -> list[int]:
        return _lookup(self.input_names, name)

    def values_at_line(self, line: int) -> list[int]:
        return sorted(vid for vid, at in self.value_lines.items() if at == line)


def _lookup(names: dict[int, str], name: str) -> list[int]:
    prefix = name + "#"  # names restart in each function: %N may be both
    return sorted(vid for vid, n in names.items() if n == name or n.startswith(prefix))


def printed_module(
    module: ir.Module | ir.Operation,
    program: Program,
    *,
    generic: bool = False,
    input_text: str | None = None,
    input_files: tuple[str, ...] = ("-",),
) -> PrintedModule:
    """The positions and names of ``program``'s ops and values in ``module`` as printed
    (as ``smalto infer`` prints it: pretty, or generic op form with ``generic``).

    ``module`` is the module (or its op); ``program`` must have been read from it
    (the same ops, in pre-order).
    ``input_text``, the text ``module`` was parsed from, gives the input's names;
    ``input_files`` are the file names its ops' parser locations carry (``-`` for
    text parsed from a string). Must run inside the module's context.
    """
    operation = module.operation if isinstance(module, ir.Module) else module
    text = operation_text(operation, generic=generic)
    printed = PrintedModule(text, [None] * len(program.ops))
    try:
        copy = parse_with_room(
            lambda: ir.Module.parse(text, context=operation.context), bracket_depth(text)
        )
    except (ir.MLIRError, ValueError):
        return printed  # the printed form does not parse back: no positions, no names
    copy_ops = ops_in_order(copy.operation)
    if len(copy_ops) != len(program.ops):
        return printed
    lines = text.splitlines()
    for op, operation in zip(program.ops, copy_ops, strict=True):
        position = _position(operation.location, ("-",))
        if position is None:
            continue
        printed.lines[op.id] = position[0]
        for vid, name in zip(op.results, _result_names(lines, position), strict=False):
            printed.names[vid] = name
            printed.value_lines[vid] = position[0]
        for vid, argument in _arguments(program, op.id, operation):
            at = _position(argument.location, ("-",))
            if at is not None and (argument_name := _name_at(lines, at)) is not None:
                printed.names[vid] = argument_name
                printed.value_lines[vid] = at[0]
    if input_text is not None:
        printed.input_names = input_names(program, input_text, input_files)
    return printed


def input_names(program: Program, text: str, files: tuple[str, ...] = ("-",)) -> dict[int, str]:
    """The names ``text`` (the input ``program`` was read from) gives ``program``'s values.

    Results: at each op's parser position where every op with results has one,
    else the definitions of ``text`` in order (when they pair up, result counts
    and all); block arguments: at their parser positions.
    """
    lines = text.splitlines()
    names: dict[int, str] = {}
    operations = [op.operation for op in program.ops]
    with_results = [op for op in program.ops if op.results]
    positions = {op.id: _position(operations[op.id].location, files) for op in with_results}
    # A location names a file and a place; it is this text's only if the op is there
    # (a module printed with its locations and read again carries the old ones).
    if all(_names_op(lines, positions[op.id], op.name) for op in with_results):
        for op in with_results:
            position = positions[op.id]
            assert position is not None
            for vid, name in zip(op.results, _result_names(lines, position), strict=False):
                names[vid] = name
    else:
        definitions = [_expand(found[1]) for found in _DEFINITION.finditer(text)]
        if len(definitions) == len(with_results) and all(
            len(d) == len(op.results) for d, op in zip(definitions, with_results, strict=True)
        ):
            for op, defined in zip(with_results, definitions, strict=True):
                names.update(zip(op.results, defined, strict=True))
    for op in program.ops:
        if not _names_op(lines, _position(operations[op.id].location, files), op.name):
            continue
        for vid, argument in _arguments(program, op.id, operations[op.id]):
            at = _position(argument.location, files)
            if at is not None and (argument_name := _name_at(lines, at)) is not None:
                names[vid] = argument_name
    return names


def _names_op(lines: list[str], position: tuple[int, int] | None, name: str) -> bool:
    """Whether the text at ``position`` is the op ``name`` (generic form, or pretty, where
    the dialect may be left out)."""
    if position is None or not 0 < position[0] <= len(lines):
        return False
    text = lines[position[0] - 1][position[1] - 1 :].lstrip('"')
    return text.startswith(name) or text.startswith(name.split(".", 1)[-1])


def _arguments(
    program: Program, op_id: int, operation: ir.Operation
) -> Iterator[tuple[int, ir.Value]]:
    """(value id, the bindings' block argument) for each block argument of an op's regions."""
    for r, region in enumerate(program.ops[op_id].regions):
        blocks = list(operation.regions[r].blocks)
        for b, (arguments, _) in enumerate(region):
            if b < len(blocks):
                yield from zip(arguments, blocks[b].arguments, strict=False)


def _position(location: ir.Location, files: tuple[str, ...]) -> tuple[int, int] | None:
    """(line, column) of a parser location in one of ``files``; None for any other."""
    try:
        position = ir.FileLineColLoc(location)
    except (ValueError, TypeError):
        return None
    if position.filename not in files:
        return None
    return position.start_line, position.start_col


def _result_names(lines: list[str], position: tuple[int, int]) -> list[str]:
    """The names an op's results are defined with, read before its name on its line."""
    line, column = position
    if not 0 < line <= len(lines):
        return []
    found = _DEFINITION.match(lines[line - 1][: max(column - 1, 0)] + " ")
    return _expand(found[1]) if found else []


def _expand(definition: str) -> list[str]:
    """``%95:3`` -> ``%95#0 %95#1 %95#2``; ``%a, %b`` -> ``%a %b``."""
    names: list[str] = []
    for group in definition.split(","):
        found = _GROUP.fullmatch(group.strip())
        if found is None:
            return []
        if found[2] is None:
            names.append(found[1])
        else:
            names.extend(f"{found[1]}#{k}" for k in range(int(found[2])))
    return names


def _name_at(lines: list[str], position: tuple[int, int]) -> str | None:
    line, column = position
    if not 0 < line <= len(lines):
        return None
    found = _NAME_AT.match(lines[line - 1], max(column - 1, 0))
    return found[0] if found else None


# --- places: names and lines of values and ops, by the printed module --------------------

_PARSER_BUFFER = "-"  # the file name MLIR gives ops parsed without an explicit loc(...)


class Places:
    """Names and places of one module's values and ops, by the printed module."""

    def __init__(
        self, program: Program, source_name: str = "<input>", printed: PrintedModule | None = None
    ) -> None:
        """``printed``: the module as ``smalto infer`` prints it, whose names and lines are
        used (default: the pretty form of the module the program was read from)."""
        self.program = program
        self.source_name = source_name
        if printed is None:
            printed = printed_module(self._top_operation(), self.program)
        self.printed = printed
        # Each op's text, made once: an explanation names the ops of its chain, and the
        # chains of a loop nest pass the same ops for every value carried through it.
        self._op_texts: dict[int, str] = {}

    def name(self, vid: int) -> str:
        """The value's SSA name as the printed module has it (``%12``, ``%95#0``, ``%arg3``)."""
        name = self.printed.names.get(vid)
        if name is None:  # a module whose printed form did not parse back: ask the printer
            name = self.printed.names[vid] = self._asm_name(vid)
        return name

    def _asm_name(self, vid: int) -> str:
        producer = self.program.values[vid].producer
        if producer is None:
            return f"<value {vid}>"
        operation = self.program.ops[producer.op].operation
        if producer.region is None:
            value = operation.results[producer.index]
        else:
            value = operation.regions[producer.region].blocks[0].arguments[producer.index]
        return value.get_name(ir.AsmState(self._top_operation()))

    def _top_operation(self) -> ir.Operation:
        operation = self.program.ops[self.program.top_level[0]].operation
        while operation.parent is not None:
            operation = operation.parent
        return operation

    def in_input(self, op_id: int) -> bool:
        """Whether the op is located in the input module itself (not in a Python file)."""
        position = file_position(self.program.ops[op_id].location)
        return position is None or position.file in (_PARSER_BUFFER, self.source_name)

    def where(self, op_id: int) -> str:
        """``line 88`` (of the printed module) for an op of the input itself, else its
        source position (``kernel.py:88``)."""
        line = self.printed.line_of_op(op_id)
        if line is not None and self.in_input(op_id):
            return f"line {line}"
        return describe_location(self.program.ops[op_id].location, self.source_name)

    def place(self, vid: int) -> str:
        """Where a value is defined: ``line 260`` of the printed module, and its source
        position when it has one (``line 9, kernel.py:7``)."""
        value = self.program.values[vid]
        if value.producer is None:
            return "an argument"
        line = self.printed.value_lines.get(vid, self.printed.line_of_op(value.producer.op))
        if line is None:
            return self.where(value.producer.op)
        if self.in_input(value.producer.op):
            return f"line {line}"
        return f"line {line}, {self.where(value.producer.op)}"

    def source_location(self, vid: int) -> str | None:
        """``file:line:col`` of the op that defines a value, where it has one."""
        producer = self.program.values[vid].producer
        if producer is None:
            return None
        return str(file_position(self.program.ops[producer.op].location) or "") or None

    def op_text(self, op_id: int) -> str:
        """```scf.for` at line 12``, ```arith.addf` (`add`) at kernel.py:9``."""
        text = self._op_texts.get(op_id)
        if text is None:
            text = self._op_texts[op_id] = self._describe_op(op_id)
        return text

    def _describe_op(self, op_id: int) -> str:
        op = self.program.ops[op_id]
        # The name JAX gave the location (the primitive) when it says more than the op's.
        name = location_name(op.location)
        if name is None or name == op.name.rsplit(".", 1)[-1]:
            return f"`{op.name}` at {self.where(op_id)}"
        return f"`{op.name}` (`{name}`) at {self.where(op_id)}"


def describe_location(location: ir.Location, source_name: str) -> str:
    """``line 88`` in the input itself, ``file.py:88`` elsewhere (the innermost file position,
    through the name and call-site locations JAX wraps it in), else the location's name."""
    position = file_position(location)
    if position is None:
        return location_text(location)
    if position.file in (_PARSER_BUFFER, source_name):
        return f"line {position.line}"
    return f"{position.file}:{position.line}"


# --- command line ---------------------------------------------------------------------------
