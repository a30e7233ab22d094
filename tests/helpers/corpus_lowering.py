"""Corpus modules annotated by JAX's pass (from the reference cache) and lowered by JAX.

``jax_annotated`` writes JAX's cached answer onto a fresh parse of a corpus
module; ``lower_with_jax`` runs JAX's own dialect lowering on an annotated
corpus module, with the launch context its ``gpu.launch`` calls for (no GPU
involved); ``jax_answer_rejected`` says whether JAX's own answer breaks a
lowering requirement the checker states and JAX's lowering enforces (an
optimized GMEM transfer that does not coalesce): there, smalto may answer
differently from JAX, or not at all.
"""

from __future__ import annotations

import functools

import reference
from jax._src.lib.mlir import ir

from smalto.check import Violation, check
from smalto.diagnose.jax_lowering import lower_in_own_launch


def apply_attributes(module: ir.Module, attributes: reference.Attributes) -> None:
    """Writes layout attributes (as ``reference.layout_attributes`` lists them) onto a module."""
    by_index = {int(key.split(":", 1)[0]): attrs for key, attrs in attributes}
    index = 0

    def visit(op: ir.Operation) -> ir.WalkResult:
        nonlocal index
        for name, text in by_index.get(index, {}).items():
            op.attributes[name] = ir.Attribute.parse(text)
        index += 1
        return ir.WalkResult.ADVANCE

    with module.context, ir.Location.unknown():
        module.operation.walk(visit, ir.WalkOrder.PRE_ORDER)


def jax_annotated(entry: reference.CorpusEntry) -> ir.Module:
    """A fresh parse of ``entry`` with JAX's (cached) layout attributes on it."""
    outcome = reference.jax_outcome(entry.path, entry.arch)
    assert outcome.attributes is not None, outcome.error
    module = reference.parse(entry.path, reference.shared_context())
    apply_attributes(module, outcome.attributes)
    return module


def gmem_violations(violations: list[Violation]) -> list[Violation]:
    """The checker's findings of optimized GMEM transfers that do not coalesce."""
    return [v for v in violations if "GMEM ref" in v.message]


@functools.cache
def jax_answer_rejected(entry: reference.CorpusEntry) -> str | None:
    """Why JAX's answer on a corpus module does not lower (the checker's first GMEM
    finding), or None where the checker finds no such problem in it."""
    found = gmem_violations(check(jax_annotated(entry), entry.arch))
    return str(found[0]) if found else None


def lower_with_jax(module: ir.Module) -> None:
    """Runs JAX's dialect lowering on an annotated kernel, then verifies the result.

    The launch context JAX's lowering needs (for TMA descriptors and the like)
    is built from the kernel's own ``gpu.launch`` and buffer pointer, as
    ``mosaic_gpu.core`` builds it: no GPU is involved, only IR.
    """
    lower_in_own_launch(module.operation)


def smalto_fixes_jax_answer(entry: reference.CorpusEntry, smalto_error: str | None) -> str | None:
    """Where smalto's outcome differs from JAX's answer: a one-line account if that is
    because JAX's answer does not lower, else None.

    JAX's answer must break a lowering requirement (``jax_answer_rejected``),
    and smalto must either answer with layouts the checker accepts or fail
    with an ``InferenceError`` that names the requirement no layout meets.
    """
    why = jax_answer_rejected(entry)
    if why is None:
        return None
    if smalto_error is not None:
        if smalto_error.startswith("InferenceError") and "GMEM" in smalto_error:
            return f"no layout lowers (JAX's answer: {why})"
        return None
    import smalto

    module = reference.parse(entry.path, reference.make_context())
    smalto.infer_layout(module, arch=entry.arch)
    if check(module, entry.arch):
        return None
    return f"smalto's answer passes the checker (JAX's answer: {why})"
