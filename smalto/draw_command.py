"""``smalto draw``: the drawing library's command line, given the way to find a kernel's
value (``smalto draw FILE %N``).

The value is found as ``smalto explain`` finds it (``smalto.explain.kernel_value``:
names and lines of the module ``smalto infer FILE`` prints, or of FILE itself), after
the inference ``smalto infer`` runs (rewrite included), so that the picture shows the
layout ``infer`` writes on that value. JAX and the pass are imported only when a value
is looked up (``--help`` stays quick).
"""

from __future__ import annotations

from smalto.draw.cli import draw_main as draw_with
from smalto.draw.value import KernelValue


def draw_main(argv: list[str]) -> int:
    """Runs ``smalto draw`` on ``argv`` (the arguments after ``draw``); returns the exit code."""
    return draw_with(argv, lookup=kernel_value)


def kernel_value(path: str, name: str, arch: tuple[int, int] | None = None) -> KernelValue:
    """The value ``name`` (``%12``, ``%95#0``, ``@40``) of the kernel in ``path`` and its
    inferred layout. Raises ``ValueLookupError`` or ``InferenceFailed``."""
    from smalto.explain import kernel_value as found

    return found(path, name, arch)
