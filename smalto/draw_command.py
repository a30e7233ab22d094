"""``smalto draw``: the drawing library's command line, given the way to find a kernel's
value (``smalto draw FILE %N``).

The value is found as ``smalto explain`` finds it (``Explainer.find``: names and
lines of the module ``smalto infer FILE`` prints, or of FILE itself), after the
inference ``smalto infer`` runs (``infer_keeping_the_solution``, rewrite included),
so that the picture shows the layout ``infer`` writes on that value. JAX and the
pass are imported only when a value is looked up (``--help`` stays quick).
"""

from __future__ import annotations

from smalto.draw.cli import draw_main as draw_with
from smalto.draw.value import InferenceFailed, KernelValue, ValueLookupError


def draw_main(argv: list[str]) -> int:
    """Runs ``smalto draw`` on ``argv`` (the arguments after ``draw``); returns the exit code."""
    return draw_with(argv, lookup=kernel_value)


def kernel_value(path: str, name: str, arch: tuple[int, int] | None = None) -> KernelValue:
    """The value ``name`` (``%12``, ``%95#0``, ``@40``) of the kernel in ``path`` and its
    inferred layout. Raises ``ValueLookupError`` or ``InferenceFailed``."""
    from jax._src.lib.mlir import ir

    from smalto.errors import InferenceError
    from smalto.explainer import Explainer
    from smalto.infer import DEFAULT_FUEL, in_context
    from smalto.infer_command import infer_keeping_the_solution, rescue_notes
    from smalto.inputs import read_input
    from smalto.mlir import module_arch
    from smalto.printed import printed_module

    source = read_input(path)
    target = arch or module_arch(source.module) or (9, 0)
    try:
        with in_context(source.module), rescue_notes("smalto draw"):
            inference = infer_keeping_the_solution(source.module, DEFAULT_FUEL, target)
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
            variable = explainer.var_of_value[vid]
            layout = inference.solver.value[inference.solver.root[variable]]
            if layout is None:
                raise ValueLookupError(
                    f"{explainer.name(vid)} ({explainer.place(vid)}) got no layout"
                )
            value = inference.program.values[vid]
            element = str(ir.ShapedType(value.type).element_type)
            described = KernelValue(
                layout,
                tuple(value.shape),
                element,
                explainer.name(vid),
                explainer.place(vid),
                target,
                tuple(explainer.notes),
            )
    except (InferenceError, NotImplementedError) as error:
        first = str(error).strip().splitlines()[0] if str(error).strip() else type(error).__name__
        raise InferenceFailed(
            f"smalto cannot infer the layouts of {source.name}: {first}"
        ) from None
    return described
