"""``hw.bank_plan`` finds the plan JAX's ``plan_tiled_transfer`` finds, plan for plan.

JAX's planner is the reference: on a grid of register layouts (every named
layout smalto offers, MMA operands, vectors of 1 to 8, the widened search's
row layouts), refs (row-major, transposed, windows), tilings, swizzles and
element types, both must give the same plan (trivial, or the same stagger,
dim, size and group stride) or raise the same exception type. The grid must
reach every answer: trivial plans, staggered ones, and no plan.
"""

from __future__ import annotations

import itertools
import random
from collections.abc import Iterator
from typing import Any

from jax.experimental.mosaic.gpu import fragmented_array as fa
from test_schedule_model import _layouts

from smalto.hw import bank_plan, schedule
from smalto.hw import layouts as hl

SHAPES = [(64, 64), (128, 64), (64, 128), (128, 128), (256, 32)]


def _row_layouts() -> list[fa.TiledLayout]:
    """Layouts with one row a warp and short vectors: what the widened search offers a
    transposed store, and where JAX's planner tries most staggers."""
    layouts = []
    for vector in (1, 2, 4):
        # A row of 4 warps of 32 lanes of ``vector`` elements each.
        layouts.append(
            fa.TiledLayout(
                fa.Tiling(((1, 128 * vector), (32 * vector,), (vector,))),
                warp_dims=(-3,),
                lane_dims=(-2,),
                vector_dim=-1,
            )
        )
    return layouts


def _outcome(run: Any, args: tuple[Any, ...]) -> object:
    try:
        return run(*args)
    except Exception as error:  # noqa: BLE001 -- the exception's type is the answer
        return type(error)


def _questions(count: int, seed: int) -> Iterator[tuple[Any, ...]]:
    """Planner questions as the schedule asks them: a tiled ref, nested per dim."""
    rng = random.Random(seed)
    layouts = [*_layouts(), *_row_layouts(), *(hl.tmem_native(v) for v in (1, 2))]
    for _ in range(count):
        layout = rng.choice(layouts)
        shape = rng.choice(SHAPES)
        bitwidth = rng.choice((8, 16, 32))
        if layout.vector_length * bitwidth % 8:
            continue
        swizzle = rng.choice((16, 32, 64, 128))
        columns = swizzle * 8 // bitwidth
        tiling = rng.choice(((8, columns), (1, columns), (64, columns), (8, 8), (32, 1), (32, 8)))
        strides = rng.choice(((shape[1], 1), (1, shape[0])))
        try:
            nested_shape, nested_strides = schedule._nested_ref(tiling, shape, strides, False)
        except Exception:  # noqa: BLE001 -- a ref the lowering cannot tile: no question
            continue
        try:
            layout.tiling.tile_nested_shape_strides(nested_shape, nested_strides)
        except Exception:  # noqa: BLE001 -- the layout does not tile this ref
            continue
        yield nested_shape, nested_strides, layout, bitwidth, swizzle


def test_the_plans_are_jax_plans() -> None:
    kinds: dict[str, int] = {}
    for args in itertools.islice(_questions(4000, seed=20261207), 250):
        expected = _outcome(fa.plan_tiled_transfer, args)
        assert _outcome(bank_plan.plan_tiled_transfer, args) == expected, args
        kind = expected.__name__ if isinstance(expected, type) else type(expected).__name__
        kinds[kind] = kinds.get(kind, 0) + 1
    # Every kind of answer is reached, so a planner that always gives one of them fails.
    assert kinds.get("TrivialTransferPlan", 0) > 20, kinds
    assert kinds.get("StaggeredTransferPlan", 0) > 5, kinds
    assert kinds.get("TransferPlanDerivationError", 0) > 20, kinds


def test_a_transposed_fp8_store_with_vectors_of_one_has_no_plan() -> None:
    """A question that cost an FP8 cast-transpose's first call 0.3 s: the widened search's
    row layout, 8-bit vectors of 1, through the transposed view of a (8, 128)-tiled,
    128-byte swizzled ref. JAX's planner tries every stagger and finds none."""
    layout = _row_layouts()[0]
    args = (((1, 128), (16, 8)), ((1024, 1), (1024, 128)), layout, 8, 128)
    assert _outcome(fa.plan_tiled_transfer, args) is fa.TransferPlanDerivationError
    assert _outcome(bank_plan.plan_tiled_transfer, args) is fa.TransferPlanDerivationError
