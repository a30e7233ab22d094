"""``smalto draw FILE %N``: the layout smalto infers for a value of a kernel, at the value's
own shape and element type.

The value is found as ``smalto explain`` finds it (``Explainer.find``: names and
lines of the module ``smalto infer FILE`` prints, or of FILE itself), after the
inference ``smalto infer`` runs (``infer_keeping_the_solution``, rewrite included),
so that the picture shows the layout ``infer`` writes on that value.
"""

from __future__ import annotations

from dataclasses import dataclass

from jax._src.lib.mlir import ir

from smalto.hw.values import Const


class ValueLookupError(ValueError):
    """The module names no such value, or it has no layout (a usage error)."""


class InferenceFailed(RuntimeError):
    """smalto cannot infer the module's layouts, so it has none to draw."""


@dataclass(frozen=True)
class KernelValue:
    """A value of a kernel and the layout smalto infers for it."""

    layout: Const
    shape: tuple[int, ...]
    element_type: str  # MLIR's spelling: bf16, f32, i8, ...
    name: str  # as the printed module names it: %12
    place: str  # where it is defined: line 40, kernel.py:88
    arch: tuple[int, int]  # the target the layouts were inferred for
    notes: tuple[str, ...]  # what explain would say about names of FILE vs the printed module


def kernel_value(path: str, name: str, arch: tuple[int, int] | None = None) -> KernelValue:
    """The value ``name`` (``%12``, ``%95#0``, ``@40``) of the kernel in ``path`` and its
    inferred layout. Raises ``ValueLookupError`` or ``InferenceFailed``."""
    from smalto.errors import InferenceError
    from smalto.explain import Explainer
    from smalto.infer import DEFAULT_FUEL, in_context
    from smalto.infer_command import infer_keeping_the_solution, rewrite_notes
    from smalto.inputs import read_input
    from smalto.mlir import module_arch
    from smalto.printed import printed_module

    source = read_input(path)
    target = arch or module_arch(source.module) or (9, 0)
    try:
        with in_context(source.module), rewrite_notes("smalto draw"):
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
