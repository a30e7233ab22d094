"""Where a solved module's values and ops are, as the module ``smalto infer`` prints it.

``smalto explain``, the summary and the report name a value as the printed
module does (``%12``, ``%95#0``), place it by the printed module's line
(``line 88``), and an op from a Python file by its source position
(``kernel.py:88``): what a reader can find in what they have in front of them
(see ``smalto.printed``).
"""

from __future__ import annotations

from jax._src.lib.mlir import ir

from smalto.locations import file_position, location_name, location_text
from smalto.printed import PrintedModule, printed_module
from smalto.program import Program

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
