"""A refusal leaves nothing for Python's cyclic collector: once the caller drops the error
(its message read or not), the program, the system and the solver it holds are freed with
it. A cycle (a frame the traceback keeps holding the error, a recursive closure) would
keep them until a collection traversed them all, in whatever the caller does next: time
charged to the next kernel (issue #33 point 8).
"""

from __future__ import annotations

import gc
from pathlib import Path

import pytest
import reference

import smalto

UNSAT = Path(__file__).resolve().parents[1] / "unsat"

# A rule's refusal, conflicts found by the search, a conflict in a loop.
KERNELS = ("cast_does_not_fit", "registers_not_equal", "pallas_strided_loop_carry")


def _left_for_the_collector(text: str, read: bool) -> int:
    module = reference.parse(text, reference.make_context())
    gc.collect()
    gc.disable()
    try:
        try:
            smalto.infer_layout(module, arch=reference.text_arch(text))
        except smalto.InferenceError as error:
            if read:
                assert str(error).startswith(smalto.FAILURE_PREFIX)
        else:
            raise AssertionError("the kernel should be refused")
        return gc.collect()
    finally:
        gc.enable()


@pytest.mark.parametrize("read", [False, True], ids=["raised", "read"])
@pytest.mark.parametrize("name", KERNELS)
def test_a_refusal_leaves_no_cycle(name: str, read: bool) -> None:
    text = (UNSAT / f"{name}.mlir").read_text()
    _left_for_the_collector(text, read)  # (the first run fills caches that live on)
    assert _left_for_the_collector(text, read) == 0
