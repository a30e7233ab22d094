"""Already-lowered bodies (``inline_mgpu``'s ``mosaic_gpu.custom_primitive``) in the reader.

A Pallas kernel that scales a tile with ``plgpu.inline_mgpu`` (as the int4
ragged dots of ``bench/quantized_ragged_dot.py`` do, captured in
``tests/corpus/quantized``) carries, inside the primitive, the lowered loop
over every register: hundreds of ops that need no layout, and that JAX's pass
never enters. The reader gives them ids and reads
nothing else of them, in the one lean walk; answers stay JAX's.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import reference
from jax._src.lib.mlir import ir

from smalto.program import reader as reader_module
from smalto.program.reader import read_program
from smalto.program.view import OPAQUE_REGIONS, Kind, Program, within
from smalto.rules import consumers

BLACKWELL = (10, 0)
QUANTIZED = reference.BUNDLED_ROOT / "quantized"
INT4_RAGGED_DOT = QUANTIZED / "blackwell_int4_ragged_dot_m128n128k64_s4_split2_v8.mlir"
# A Pallas test: an int8 tile upcast to bf16 and scaled by a row of scales in `inline_mgpu`.
INLINE_MGPU = (
    reference.BUNDLED_ROOT / "pallas_tests" / "PallasCallWGTest.test_inline_mgpu_layout_args2.mlir"
)
PRIMITIVE = "mosaic_gpu.custom_primitive"


@pytest.fixture(scope="module")
def ctx() -> Any:
    return reference.shared_context()


def _reads(monkeypatch: pytest.MonkeyPatch) -> list[object]:
    """Records the consumers of every reader ``read_program`` makes."""
    made: list[object] = []
    real_init = reader_module._Reader.__init__

    def recording_init(self: Any, *, by_hash: bool, consumers: Any = None) -> None:
        real_init(self, by_hash=by_hash, consumers=consumers)
        made.append(consumers)

    monkeypatch.setattr(reader_module._Reader, "__init__", recording_init)
    return made


def _body_ops(program: Program) -> list[int]:
    memo: dict[int, bool] = {}
    return [op.id for op in program.ops if within(program, op, OPAQUE_REGIONS, memo)]


@pytest.mark.parametrize(
    "path", [INT4_RAGGED_DOT, INLINE_MGPU], ids=["int4_ragged_dot", "inline_mgpu"]
)
def test_a_lowered_body_is_passed_over_in_the_one_lean_walk(
    path: Path, ctx: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    module = reference.parse(path, ctx)
    reads = _reads(monkeypatch)
    with ctx, ir.Location.unknown():
        program = read_program(module, consumers())
        # The body's register values are used by ops no rule reads (a cast into
        # registers, extracts): counting their uses used to send the reader back
        # over the whole module, reading every op's operands.
        assert reads == [consumers()]
        body = _body_ops(program)
        assert body, "the kernel has an inline_mgpu body"
        # Its ops have their ids and parents, and none is an op to lay out.
        assert [program.ops[i].id for i in body] == body
        assert not set(body) & set(program.layout_ops)
        primitive = next(op for op in program.ops if op.name == PRIMITIVE)
        assert primitive.id in program.layout_ops
        # Asked for, the body's values say what they are; none records uses.
        (((arguments, _),),) = primitive.regions
        kinds = {program.values[a].kind for a in arguments}
        assert Kind.VECTOR in kinds
        registers = [
            v for i in body for v in program.ops[i].results if program.values[v].kind is Kind.VECTOR
        ]
        assert registers
        assert all(not program.values[v].uses for v in (*arguments, *registers))


@pytest.mark.parametrize(
    "path", [INT4_RAGGED_DOT, INLINE_MGPU], ids=["int4_ragged_dot", "inline_mgpu"]
)
def test_kernels_with_lowered_bodies_get_jax_attributes(path: Path) -> None:
    jax_attributes, _ = reference.jax_attributes(path, BLACKWELL)
    smalto_attributes, _ = reference.smalto_attributes(path, BLACKWELL)
    assert jax_attributes
    assert reference.diff_attributes(jax_attributes, smalto_attributes) == []
