"""The module a command works on: read from a file or stdin, parsed, and a Mosaic GPU kernel.

Every refusal is an ``MlirInputError`` with a one-line message (the command
line exits 2): a file (or stdin) that cannot be read, is not UTF-8 or is larger
than ``MAX_INPUT_BYTES``, an empty one, text nested deeper than smalto takes
(``smalto.basics.nesting``, said by ``parse_module``), text that does not parse or
verify, and a module that is no Mosaic GPU kernel (a StableHLO module, say), named by
what it holds, since inferring nothing and echoing it back would look like success.
"""

from __future__ import annotations

import ast
import sys
from collections import Counter
from dataclasses import dataclass
from pathlib import Path

from jax._src.lib.mlir import ir

from smalto.basics.file_names import is_printable, printable
from smalto.basics.mlir import MlirInputError, parse_module

STDIN = "-"
# The most a command reads of one input: far above any kernel's module, and a bound on
# what a device or an endless pipe given by mistake costs.
MAX_INPUT_BYTES = 64 << 20
_OPS_NAMED = 4  # ops named in the message about a module that is no kernel


@dataclass
class Input:
    """A parsed module and where it came from."""

    module: ir.Module
    text: str
    name: str  # as messages call it: the path given, or "<stdin>"
    files: tuple[str, ...]  # the file names its ops' parser locations carry


def read_input(name: str, *, kernel: bool = True) -> Input:
    """Reads, parses and (with ``kernel``) vets the module in file ``name`` (``-``: stdin).

    A regular file is parsed from its path, so that ops without ``loc(...)``
    are located in it (``kernel.mlir:12:5``); stdin is located in ``-``.
    """
    text, source_name = _read_text(name)
    # A name the file system holds but that is no UTF-8 (``k\xff.mlir``) cannot reach
    # MLIR's parser as a path: its text is parsed instead, located in ``-`` as stdin is.
    from_file = name != STDIN and is_printable(name) and Path(name).is_file()
    if name.endswith((".py", ".pyw")):
        raise MlirInputError(_python_source(source_name, text))
    if not _has_content(text):
        raise MlirInputError(
            f"{source_name} is empty: expected a Mosaic GPU module (the .mlir files "
            "`smalto capture` writes)"
        )
    try:
        module = parse_module(text, source_name=source_name, path=name if from_file else None)
    except MlirInputError:
        if _parses_as_python(text):
            raise MlirInputError(_python_source(source_name, text)) from None
        raise
    if kernel:
        require_kernel(module, source_name)
    return Input(module, text, source_name, (name,) if from_file else ("-",))


def _read_text(name: str) -> tuple[str, str]:
    if name == STDIN:
        stream = getattr(sys.stdin, "buffer", None)
        if stream is None:  # a text stream put in its place (tests): already decoded
            return _limited(sys.stdin.read(MAX_INPUT_BYTES + 1), "<stdin>"), "<stdin>"
        return _decoded(stream.read(MAX_INPUT_BYTES + 1), "<stdin>"), "<stdin>"
    try:
        with open(name, "rb") as file:
            # Read no further than the limit: a device (/dev/zero) or a pipe has no size.
            data = file.read(MAX_INPUT_BYTES + 1)
    except OSError as error:
        shown = printable(name)
        raise MlirInputError(f"cannot read '{shown}': {error.strerror or error}") from None
    shown = printable(name)
    return _decoded(data, f"'{shown}'"), shown


def _decoded(data: bytes, subject: str) -> str:
    _limited(data, subject)
    try:
        # Line ends as text mode reads them (``\r\n`` and ``\r`` as ``\n``).
        return data.decode("utf-8").replace("\r\n", "\n").replace("\r", "\n")
    except UnicodeDecodeError as error:
        raise MlirInputError(
            f"cannot read {subject}: not UTF-8 text (byte {data[error.start]:#04x} at offset "
            f"{error.start})"
        ) from None


def _limited[T: (str, bytes)](data: T, subject: str) -> T:
    if len(data) > MAX_INPUT_BYTES:
        raise MlirInputError(
            f"cannot read {subject}: larger than {MAX_INPUT_BYTES >> 20} MiB, the most smalto "
            "reads (a Mosaic GPU kernel's module is a few hundred KiB)"
        )
    return data


def _parses_as_python(text: str) -> bool:
    """Whether ``text`` is a Python script: it parses, and imports or defines something
    (a bare expression such as ``this is not mlir`` parses too)."""
    try:
        tree = ast.parse(text)
    except (SyntaxError, ValueError):
        return False
    script = (ast.Import, ast.ImportFrom, ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)
    return any(isinstance(node, script) for node in tree.body)


_FUNCTIONS_NAMED = 6  # functions of a Python file named in the message that points to capture


def _python_source(source_name: str, text: str) -> str:
    """What to say of a Python file given where a module is expected: how to get the
    modules out of it (``smalto capture``), naming the functions it defines (parsed, never
    run)."""
    try:
        tree = ast.parse(text)
    except (SyntaxError, ValueError):
        tree = None
    functions = [
        node.name
        for node in (tree.body if tree is not None else [])
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef)
        and not node.name.startswith("_")
    ]
    script = source_name if source_name != "<stdin>" else "SCRIPT.py"
    function = functions[0] if len(functions) == 1 else "FUNCTION"
    hint = "one --arg per argument, e.g. f16[256,128]"
    if len(functions) > 1:
        shown = functions[:_FUNCTIONS_NAMED]
        if len(functions) > _FUNCTIONS_NAMED:
            shown.append("...")
        hint = f"FUNCTION: one of {', '.join(shown)}; {hint}"
    return (
        f"{source_name} is Python, not an MLIR module: write the Mosaic GPU modules Pallas "
        f"builds from it with `smalto capture {script}:{function} --arg DTYPE[SHAPE] ... "
        f"-o DIR` ({hint}), then run `smalto infer DIR/*.mlir`"
    )


def _has_content(text: str) -> bool:
    """Whether ``text`` holds more than blank lines and ``//`` comments."""
    return any(line.strip() and not line.lstrip().startswith("//") for line in text.splitlines())


def require_kernel(module: ir.Module, source_name: str) -> None:
    """Raises unless ``module`` has a ``mosaic_gpu`` op or a vector value: the modules
    Pallas' Mosaic GPU lowering hands to layout inference have both."""
    names: Counter[str] = Counter()
    tensors: Counter[str] = Counter()
    kernel = False

    def visit(operation: ir.Operation) -> ir.WalkResult:
        nonlocal kernel
        name = operation.name
        names[name] += 1
        if name.startswith("mosaic_gpu."):
            kernel = True
            return ir.WalkResult.INTERRUPT
        types = [value.type for value in (*operation.operands, *operation.results)]
        if any(isinstance(ty, ir.VectorType) for ty in types):
            kernel = True
            return ir.WalkResult.INTERRUPT
        if any(isinstance(ty, ir.RankedTensorType | ir.UnrankedTensorType) for ty in types):
            tensors[name] += 1
        return ir.WalkResult.ADVANCE

    with module.context:
        for view in module.body.operations:
            view.operation.walk(visit, ir.WalkOrder.PRE_ORDER)
            if kernel:
                return
    raise MlirInputError(f"{source_name} is not a Mosaic GPU kernel: {_contents(names, tensors)}")


def _contents(names: Counter[str], tensors: Counter[str]) -> str:
    if not names:
        return "the module is empty (no ops)"
    total = sum(names.values())
    found = f"it has {total} op{'s' if total > 1 else ''} ({_most_common(names)})"
    if tensors:
        found += f", {sum(tensors.values())} of them on tensors ({_most_common(tensors)})"
    return (
        f"{found} and no mosaic_gpu op or vector value; smalto lays out the modules Pallas' "
        "Mosaic GPU lowering builds (`smalto capture SCRIPT.py:FUNCTION` writes them)"
    )


def _most_common(counts: Counter[str]) -> str:
    shown = [f"{name} x{n}" if n > 1 else name for name, n in counts.most_common(_OPS_NAMED)]
    if len(counts) > _OPS_NAMED:
        shown.append("...")
    return ", ".join(shown)
