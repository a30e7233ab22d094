"""The SMEM map equals what JAX's own dialect lowering allocates: every slice JAX's lowering
makes (its offset and bytes) is an allocation of the map, every allocation of the map but a
reduction's (which JAX slices only where the reduction crosses warps) is a slice JAX makes,
and the size JAX checks the slices against is the launch's size the map reports.

The corpus: the shared one when present (``../shared/corpus``: every Hopper and Blackwell
module), else a fixed sample of the bundled one (``tests/corpus``). Each module is inferred
by smalto's pass (the allocations do not depend on the layouts; the lowering needs some),
then lowered by JAX's dialect lowering in the launch context its ``gpu.launch`` calls for.
"""

from __future__ import annotations

import pytest
import reference
from smem_lowering import jax_slices

from smalto.basics.mlir import make_context, parse_module
from smalto.errors import InferenceError
from smalto.infer import infer_layout
from smalto.smem.allocations import REDUCTION, read_smem_map

_WHICH, _ENTRIES = reference.selected_entries()
# The bundled sample, thinned to keep CI quick: every kernel, every fifth other module.
_SAMPLE = (
    _ENTRIES
    if _WHICH == "full"
    else [e for n, e in enumerate(_ENTRIES) if e.folder == "kernels" or n % 5 == 0]
)


@pytest.mark.parametrize("entry", _SAMPLE, ids=lambda e: e.key)
def test_map_equals_jax_lowering(entry: reference.CorpusEntry) -> None:
    if entry.arch not in ((9, 0), (10, 0)):
        pytest.skip("not an arch of the warpgroup lowering")
    text = entry.path.read_text()
    with make_context():
        module = parse_module(text)
        smem = read_smem_map(module, entry.arch)
        try:
            infer_layout(module, arch=entry.arch)
        except (InferenceError, NotImplementedError):
            pytest.skip("no layouts to lower with")
        try:
            seen = jax_slices(module)
        except (ValueError, NotImplementedError) as error:
            pytest.skip(f"JAX's lowering refuses the layouts: {error}")
    mapped = {(a.offset, a.bytes) for a in smem.allocations}
    always = {(a.offset, a.bytes) for a in smem.allocations if a.kind != REDUCTION}
    sliced = set(seen.slices)
    assert sliced <= mapped, f"JAX slices what the map lacks: {sorted(sliced - mapped)}"
    assert always <= sliced, f"the map has what JAX never slices: {sorted(always - sliced)}"
    assert seen.sizes <= {smem.size}
    assert not smem.overlaps()
