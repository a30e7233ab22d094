"""Reading and writing MLIR text with jaxlib's bindings.

Everything here is a thin layer over ``jax._src.lib.mlir``: a context that
knows every dialect a Mosaic GPU kernel uses, parsing that turns MLIR's
diagnostics into one readable line, and printing in pretty or generic form.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator

from jax._src.interpreters import mlir as jax_mlir
from jax._src.lib import mosaic_gpu_dialect
from jax._src.lib.mlir import ir

from smalto.basics.nesting import bracket_depth, parse_with_room, text_too_deep

__all__ = [
    "MlirInputError",
    "clone_module",
    "in_context",
    "make_context",
    "module_arch",
    "parse_module",
    "print_module",
]

# The buffer name jaxlib's ``Module.parse`` gives its input in diagnostics and
# in the locations of ops that carry no explicit ``loc(...)``.
_PARSER_BUFFER_NAME = "-"


class MlirInputError(ValueError):
    """MLIR text that does not parse or does not verify.

    The message is a single line, ``NAME:LINE:COL: what went wrong``, in the
    style of compiler diagnostics.
    """


def make_context() -> ir.Context:
    """Returns a fresh context with JAX's upstream dialects and ``mosaic_gpu``.

    This is the set of dialects Pallas' Mosaic GPU lowering emits (``arith``,
    ``math``, ``vector``, ``scf``, ``memref``, ``func``, ``gpu``, ``llvm``,
    ``nvvm``, ...), so any kernel JAX hands to its layout-inference pass parses.
    """
    # jax 0.12's ``make_ir_context`` hands the same context out up to ten
    # times per thread; a module parsed here must not share one with JAX's
    # own lowering (or with the previous input), so build a new one.
    create = getattr(jax_mlir, "_create_ir_context", jax_mlir.make_ir_context)
    context = create()
    mosaic_gpu_dialect.register_dialect(context)
    return context


@contextlib.contextmanager
def in_context(module: ir.Module) -> Iterator[None]:
    """Enters the module's context with an unknown location (attribute construction needs both)."""
    with module.context, ir.Location.unknown(module.context):
        yield


def clone_module(module: ir.Module | ir.Operation) -> ir.Module:
    """A copy of ``module`` (or of a ``builtin.module`` op) in its context, made without
    printing or parsing (the module need not verify). Must run inside the module's
    context.

    A detached module of its own: never placed at an insertion point the caller
    holds (``Operation.clone`` puts its copy there; inside JAX's lowering that
    is a function body, where a module does not verify).
    """
    operation = module.operation
    copy = ir.Module.create()
    attributes = operation.attributes
    for name in attributes:
        copy.operation.attributes[name] = attributes[name]
    body = ir.InsertionPoint(copy.body)
    for op in operation.regions[0].blocks[0].operations:
        op.operation.clone(ip=body)
    return copy


def parse_module(
    text: str,
    *,
    context: ir.Context | None = None,
    source_name: str = "<input>",
    path: str | None = None,
) -> ir.Module:
    """Parses MLIR text (pretty or generic form) into a verified module.

    ``context`` defaults to a fresh one from ``make_context()``. ``source_name``
    names the input in error messages. With ``path``, the file there is parsed
    instead of ``text`` (which should be its contents), so that the ops it
    gives no ``loc(...)`` are located in it (``kernel.mlir:12:5``) rather than
    in ``-``, as ``mlir-opt`` does. Raises ``MlirInputError`` with a one-line
    message if the text does not parse or the module does not verify, or nests deeper
    than smalto takes (``smalto.basics.nesting``: refused before MLIR's parser recurses
    into it).
    """
    depth = bracket_depth(text)
    too_deep = text_too_deep(text, source_name, depth)
    if too_deep is not None:
        raise MlirInputError(too_deep)
    if context is None:
        context = make_context()
    parsing_in = context

    def parse() -> ir.Module:
        if path is not None:
            return ir.Module.parseFile(path, context=parsing_in)
        return ir.Module.parse(text, context=parsing_in)

    try:
        return parse_with_room(parse, depth)
    except ir.MLIRError as error:
        raise MlirInputError(_summarize(error, source_name)) from None


def print_module(module: ir.Module, *, generic: bool, debug_info: bool = False) -> str:
    """Returns the module's text: generic op form if ``generic``, else pretty.

    With ``debug_info`` every op's ``loc(...)`` is printed too, as
    ``mlir-opt --mlir-print-debuginfo`` does. Ops that had no explicit location
    in the parsed text carry the parser's own, ``loc("-":LINE:COL)``.
    """
    return operation_text(module.operation, generic=generic, debug_info=debug_info)


def operation_text(
    operation: ir.Operation | ir.OpView, *, generic: bool = False, debug_info: bool = False
) -> str:
    """The operation's text, as ``print_module`` prints it."""
    text = operation.get_asm(print_generic_op_form=generic, enable_debug_info=debug_info)
    # The bindings' stubs type get_asm as object: it is bytes only with binary=True.
    assert isinstance(text, str)
    return text


def module_arch(module: ir.Module) -> tuple[int, int] | None:
    """The ``(major, minor)`` GPU architecture the module says it targets.

    Read from the module op's ``mosaic_gpu.arch_major`` and
    ``mosaic_gpu.arch_minor`` integer attributes (minor defaults to 0); ``None``
    when the module does not say. Raises ``MlirInputError`` if they are not
    integers.
    """
    attributes = module.operation.attributes
    if "mosaic_gpu.arch_major" not in attributes:
        return None
    try:
        major = ir.IntegerAttr(attributes["mosaic_gpu.arch_major"]).value
        minor_attribute = attributes.get("mosaic_gpu.arch_minor")
        minor = 0 if minor_attribute is None else ir.IntegerAttr(minor_attribute).value
    except ValueError:
        raise MlirInputError(
            "the module's mosaic_gpu.arch_major/arch_minor attributes must be integers"
        ) from None
    return major, minor


def _summarize(error: ir.MLIRError, source_name: str) -> str:
    """The first error diagnostic of ``error`` as ``NAME:LINE:COL: message``."""
    diagnostics = error.error_diagnostics
    if not diagnostics:
        first_line = next((line for line in str(error).splitlines() if line.strip()), "")
        return f"{source_name}: {first_line or 'invalid MLIR'}"
    first = diagnostics[0]
    summary = f"{_describe_location(first.location, source_name)}: {_one_line(first.message)}"
    if len(diagnostics) > 1:
        summary += f" (and {len(diagnostics) - 1} more errors)"
    return summary


def _describe_location(location: ir.Location, source_name: str) -> str:
    try:
        file_location = ir.FileLineColLoc(location)
    except ValueError:
        # A name, call-site or fused location written in the input: show it as is.
        text = str(location)
        return text.removeprefix("loc(").removesuffix(")")
    filename = file_location.filename
    if filename == _PARSER_BUFFER_NAME:
        filename = source_name
    return f"{filename}:{file_location.start_line}:{file_location.start_col}"


def _one_line(message: str) -> str:
    return " ".join(message.split())
