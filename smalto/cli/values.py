"""A kernel's value found by name after inference, for ``smalto explain`` and ``smalto draw``.

``smalto explain FILE %N`` and ``smalto draw FILE %N`` find a value the same way: FILE
is inferred as ``smalto infer`` infers it (rescues included, their notes on stderr),
and the name (``%12``, ``%95#0``) or line (``@40``) is looked up in the module ``smalto
infer FILE`` prints, or in FILE itself.
"""

from __future__ import annotations

from smalto.basics.mlir import in_context, module_arch
from smalto.draw.value import InferenceFailed, KernelValue, ValueLookupError
from smalto.infer import SolveOptions, infer_keeping_the_solution
from smalto.report.printed import printed_module
from smalto.report.reasons import Explainer


def kernel_value(path: str, name: str, arch: tuple[int, int] | None = None) -> KernelValue:
    """The value ``name`` (``%12``, ``%95#0``, ``@40``) of the kernel in ``path`` and its
    inferred layout, found as ``smalto explain`` and ``smalto draw`` find it. Raises
    ``ValueLookupError`` or ``InferenceFailed``."""
    from smalto.basics.inputs import read_input
    from smalto.cli.infer import rescue_notes
    from smalto.errors import InferenceError

    source = read_input(path)
    target = arch or module_arch(source.module) or (9, 0)
    # (Errors of the diagnosis are cut to their first line: no source lines are read.)
    try:
        with in_context(source.module), rescue_notes("smalto draw"):
            inference = infer_keeping_the_solution(source.module, SolveOptions(arch=target))
            printed = printed_module(
                source.module,
                inference.program,
                input_text=source.text,
                input_files=source.files,
            )
            explainer = Explainer(inference, source.name, printed)
            try:
                found = explainer.find(name)
            except LookupError as error:
                raise ValueLookupError(f"{error.args[0]} (in {source.name})") from None
            if len(found) > 1:
                names = ", ".join(f"{explainer.name(v)} ({explainer.place(v)})" for v in found)
                lines = [printed.value_lines.get(v) for v in found]
                by_line = " or ".join(f"@{line}" for line in lines if line is not None)
                raise ValueLookupError(
                    f"{name} names {len(found)} values: {names}; name one"
                    + (f" by its line: {by_line}" if by_line else "")
                )
            (vid,) = found
            described = value_to_draw(explainer, vid, target, tuple(explainer.notes))
    except (InferenceError, NotImplementedError) as error:
        first = str(error).strip().splitlines()[0] if str(error).strip() else type(error).__name__
        raise InferenceFailed(
            f"smalto cannot infer the layouts of {source.name}: {first}"
        ) from None
    return described


def value_to_draw(
    explainer: Explainer, vid: int, arch: tuple[int, int], notes: tuple[str, ...] = ()
) -> KernelValue:
    """What the drawing needs of value ``vid`` of an explained inference: its layout, shape,
    element type, name and place. Raises ``ValueLookupError`` where it got no layout. Must
    run inside the module's context."""
    from jax._src.lib.mlir import ir

    state = explainer.state
    variable = explainer.var_of_value.get(vid)
    layout = None if variable is None else state.value[state.root[variable]]
    if layout is None:
        raise ValueLookupError(f"{explainer.name(vid)} ({explainer.place(vid)}) got no layout")
    value = explainer.program.values[vid]
    element = str(ir.ShapedType(value.type).element_type)
    return KernelValue(
        layout,
        tuple(value.shape),
        element,
        explainer.name(vid),
        explainer.place(vid),
        arch,
        notes,
        value.strides,
    )
