"""What smalto says of an answer JAX's own pass has not found (its relayouts, where its
layouts cost speed: ``SlowLayoutsWarning``, ``SmaltoOnlyWarning``) is read off the
solver's answer as ``infer_layout`` returns it (``SolvedLayouts``: no walk over the
module through the bindings, issue #52's first call), and reads the same off the
module once annotated (``WrittenLayouts``): place by place, cause and words.

The kernels: the FP8 cast-transposes (narrow strided values and their cause; relayouts
and a narrow transfer) and an int4 upcast (a relayout only).
"""

from __future__ import annotations

import warnings
from pathlib import Path

import pytest
from reference import make_context, parse, text_arch

import smalto
from smalto.infer import solve_with
from smalto.pipeline.relayouts import SolvedLayouts, WrittenLayouts, relayouts, transfer_layouts
from smalto.pipeline.speed import answer_speed_costs, speed_costs
from smalto.pipeline.steps import SolveOptions, write
from smalto.program.reader import read_program

TESTS = Path(__file__).resolve().parents[1]
KERNELS = [
    TESTS / "beyond_jax" / "cast_transpose" / "fp8_cast_transpose_through_gmem.mlir",
    TESTS / "beyond_jax" / "cast_transpose" / "fp8_cast_transpose_through_smem.mlir",
    TESTS / "corpus" / "pallas_tests" / "PallasCallWGTest.test_subbyte_upcast8.mlir",
]


@pytest.mark.parametrize("path", KERNELS, ids=lambda p: p.stem)
def test_the_solved_answer_and_the_written_module_say_the_same(path: Path) -> None:
    context = make_context()
    module = parse(path, context)
    arch = text_arch(path.read_text())
    with context, warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        inference = solve_with(module, SolveOptions.of({"arch": arch}, "infer_layout"))
        write(inference)
        assert not inference.solved.in_jax_order  # (smalto's own search answered)
        solution = inference.solved.state.solution()
        solved = SolvedLayouts(inference.program, inference.system, solution)
        written = WrittenLayouts(read_program(module))
        from_solver = answer_speed_costs(solved)
        from_module = speed_costs(module)
        assert from_solver.costs  # something to say
        assert from_solver == from_module
        assert from_solver.message() == from_module.message()
        assert relayouts(solved) == relayouts(written)
        assert transfer_layouts(solved) == transfer_layouts(written)
        # What infer_layout says, as a warning, is the report of the module it annotated.
        again = parse(path, context)
        smalto.infer_layout(again, arch=arch)
        said = [w.message for w in caught if isinstance(w.message, smalto.SlowLayoutsWarning)]
        assert [s.report for s in said] == [speed_costs(again)]
        assert str(said[0]) == from_module.message()
