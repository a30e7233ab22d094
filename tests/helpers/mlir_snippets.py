"""Small MLIR modules for unit tests: wrap a few ops in a function and parse them.

Op text is MLIR's generic form (``"dialect.op"(%x) <{...}> : (...) -> ...``),
as in the corpus. Values the body uses but does not define are the function's
arguments, given as ``(name, type)`` pairs without the ``%``.

Note for SMEM refs: JAX's pass cannot look through a function argument that is
an SMEM or TMEM ref (it raises ``KeyError``), so a snippet meant to be compared
with JAX should create its refs with ``slice_smem`` / ``tmem_alloc`` ops, as
real kernels do. ``slice_smem`` below does that.
"""

from __future__ import annotations

import itertools
from collections.abc import Iterable, Sequence
from typing import Any

import reference

SMEM_SPACE = "#gpu.address_space<workgroup>"
TMEM_SPACE = "#mosaic_gpu.tmem"

Argument = tuple[str, str]


def func_module(
    body: str | Iterable[str], args: Sequence[Argument] = (), name: str = "kernel"
) -> str:
    """A module with one function ``@name(args)`` whose body is ``body`` then ``return``."""
    lines = body.splitlines() if isinstance(body, str) else list(body)
    params = ", ".join(f"%{arg}: {ty}" for arg, ty in args)
    inner = "\n".join(f"  {line}" for line in lines if line.strip())
    return f"func.func @{name}({params}) {{\n{inner}\n  return\n}}\n"


def parse(text: str, ctx: Any | None = None) -> Any:
    """Parses ``text`` (a whole module) in ``ctx`` (default: the shared test context)."""
    return reference.parse(text, ctx if ctx is not None else reference.shared_context())


def smem_type(shape_and_element: str, strides: Sequence[int] | None = None) -> str:
    """``memref<...>`` in shared memory, e.g. ``smem_type("128x64xf16")``."""
    layout = f", strided<[{', '.join(map(str, strides))}]>" if strides is not None else ""
    return f"memref<{shape_and_element}{layout}, {SMEM_SPACE}>"


def tmem_type(shape_and_element: str) -> str:
    """``memref<...>`` in tensor memory, e.g. ``tmem_type("128x128xf32")``."""
    return f"memref<{shape_and_element}, {TMEM_SPACE}>"


class SmemSlicer:
    """Emits ``mosaic_gpu.slice_smem`` ops at distinct offsets, one per ref."""

    def __init__(self, start: int = 0, step: int = 65536) -> None:
        self._offsets = itertools.count(start, step)

    def __call__(self, name: str, ref_type: str) -> str:
        offset = next(self._offsets)
        return (
            f'%{name} = "mosaic_gpu.slice_smem"() <{{offset = {offset} : i32}}> : () -> {ref_type}'
        )
