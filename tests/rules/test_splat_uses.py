"""Splat values used where an op cannot take a splat: smalto converts them at the use.

JAX 0.12.0.1's rules forbid a splat as the operand of `vector.extract_strided_slice`,
of `vector.insert_strided_slice` (its destination) and of
`mosaic_gpu.async_store_smem`. Its constraints then allow the splat producer
to be converted to a tiled layout at the use (a relayout its lowering
performs), but its search never tries that assignment and reports that no
layouts exist; JAX's own tests expect that failure. smalto's search finds the
conversion, and JAX's own lowering accepts the answer.
"""

from __future__ import annotations

import pytest
from rule_kit import (
    BARRIER,
    HOPPER,
    WGMMA,
    in_layouts,
    kernel,
    lower_in_launch,
    op,
    out_layouts,
    run_jax,
    run_smalto,
    slice_smem,
    smem,
    splat,
    vec,
)

from smalto.check import check

SHAPE = (128, 128)
V = vec(SHAPE, "bf16")
HALF = vec((128, 64), "bf16")


def _splat(name: str) -> list[str]:
    return ["%s = arith.constant 1.0 : bf16", f"%{name} = vector.broadcast %s : bf16 to {V}"]


def _extract() -> str:
    return kernel(
        [
            *_splat("x"),
            f'%y = "vector.extract_strided_slice"(%x) <{{offsets = [0, 64], sizes = [128, 64], '
            f"strides = [1, 1]}}> : ({V}) -> {HALF}",
            f"%z = arith.addf %y, %y : {HALF}",
        ]
    )


def _insert() -> str:
    return kernel(
        [
            *_splat("x"),
            "%t = arith.constant 2.0 : bf16",
            f"%h = vector.broadcast %t : bf16 to {HALF}",
            f'%y = "vector.insert_strided_slice"(%h, %x) <{{offsets = [0, 64], strides = [1, 1]}}> '
            f": ({HALF}, {V}) -> {V}",
            f"%z = arith.addf %y, %y : {V}",
        ]
    )


def _async_store() -> str:
    ref = smem(SHAPE, "bf16")
    return kernel(
        [
            *_splat("x"),
            slice_smem("r", ref),
            slice_smem("b", BARRIER, offset=65536),
            "%c = arith.constant 0 : i32",
            f'"mosaic_gpu.async_store_smem"(%x, %r, %b, %c) <{{cluster_dim = 0 : i32, '
            f"optimized = true}}> : ({V}, {ref}, {BARRIER}, i32) -> ()",
        ]
    )


CASES = {
    "vector.extract_strided_slice": _extract,
    "vector.insert_strided_slice": _insert,
    "mosaic_gpu.async_store_smem": _async_store,
}


@pytest.mark.parametrize("name", list(CASES))
def test_jax_finds_no_layouts(name: str) -> None:
    with pytest.raises(ValueError, match="Failed to infer a possible set of layouts"):
        run_jax(CASES[name]())


@pytest.mark.parametrize("name", list(CASES))
def test_the_splat_is_converted_at_the_use_and_lowers(name: str) -> None:
    module = run_smalto(CASES[name]())
    assert out_layouts(op(module, "vector.broadcast")) == [splat(*SHAPE)]
    # The operand that may not be a splat (the destination of an insert).
    assert in_layouts(op(module, name))[-1 if name.startswith("vector.insert") else 0] == WGMMA
    assert check(module, HOPPER) == []
    lower_in_launch(module)
