"""The strided default layout (JAX 0.12), also for sub-byte element types, on Hopper.

What the lowering needs of a strided layout: each of the 128 threads holds
vectors of at most 64 bits of consecutive elements, the element count splits
evenly over them, and a vector fills whole bytes. Since JAX 0.12 sub-byte types
(i1, i4, f4) get one too: a 128x128 i1 value is strided with 64 elements a
vector. A value with no strided layout and nothing else to take fails.
"""

from __future__ import annotations

import pytest
from jax._src.lib.mlir import ir
from jax.experimental.mosaic.gpu import fragmented_array as fa
from jax.experimental.mosaic.gpu import utils as mgpu_utils
from rule_kit import (
    gmem,
    in_layouts,
    infer_like_jax,
    kernel,
    op,
    out_layouts,
    rejected_like_jax,
    shared_context,
    strided,
    vec,
    vector_load,
    vector_store,
)

from smalto.hw import layouts as hl
from smalto.program.type_facts import element_bitwidth as _element_bitwidth

ELEMENT_TYPES = ["i1", "i2", "i4", "f4E2M1FN", "i8", "f8E4M3FN", "bf16", "i32", "f64"]
SHAPES = [(128,), (256,), (1, 128), (2, 128), (4, 128), (8, 128), (128, 128), (3, 128), (96,)]


@pytest.mark.parametrize("dtype", ELEMENT_TYPES)
@pytest.mark.parametrize("shape", SHAPES, ids=lambda s: "x".join(map(str, s)))
def test_the_default_is_jaxs(dtype: str, shape: tuple[int, ...]):
    """smalto's default strided layout is exactly JAX's, for every width and shape here."""
    with shared_context(), ir.Location.unknown():
        element = ir.Type.parse(dtype)
        theirs = fa.WGStridedFragLayout.from_shaped_type(ir.VectorType.get(shape, element))
        bitwidth = _element_bitwidth(element)
    ours = hl.default_strided(shape, bitwidth)
    assert (ours.layout if ours is not None else None) == theirs


@pytest.mark.parametrize(
    ("shape", "dtype", "vec_size"),
    [
        ((128, 128), "i1", 64),
        ((128, 128), "i4", 16),
        ((8, 128), "f4E2M1FN", 8),
        ((2, 128), "i4", 2),
    ],
)
def test_sub_byte_values_are_strided(shape: tuple[int, ...], dtype: str, vec_size: int):
    v = vec(shape, dtype)
    module = infer_like_jax(
        kernel(
            [
                vector_load("x", "arg0", gmem(shape, dtype), v),
                vector_store("x", v, "arg1", gmem(shape, dtype)),
            ],
            [gmem(shape, dtype), gmem(shape, dtype)],
        )
    )
    assert out_layouts(op(module, "mosaic_gpu.vector_load")) == [strided(shape, vec_size)]
    assert in_layouts(op(module, "mosaic_gpu.vector_store")) == [strided(shape, vec_size)]


def test_a_comparison_takes_the_width_of_its_i1_result():
    """cmpi's variable is keyed by its i1 result, but the operands' i32 layout wins.

    (The mask selects between i32 values, which are stored: an i1 value in
    that layout, 2 bits a thread, moves in no whole bytes, and JAX's lowering
    would refuse to store it.)"""
    s = (128, 128)
    i32, i1 = vec(s, "i32"), vec(s, "i1")
    module = infer_like_jax(
        kernel(
            [
                vector_load("x", "arg0", gmem(s, "i32"), i32),
                f"%z = arith.constant dense<0> : {i32}",
                f"%c = arith.cmpi slt, %x, %z : {i32}",
                f"%r = arith.select %c, %x, %z : {i1}, {i32}",
                vector_store("r", i32, "arg1", gmem(s, "i32")),
            ],
            [gmem(s, "i32"), gmem(s, "i32")],
        )
    )
    assert out_layouts(op(module, "arith.cmpi")) == [strided(s, 2)]


@pytest.mark.parametrize(("shape", "dtype"), [((1, 128), "i4"), ((4, 128), "i1")])
def test_sub_byte_values_too_small_for_whole_bytes_are_rejected(shape: tuple[int, ...], dtype: str):
    """128 i4 (or 512 i1) elements: one (four) per thread, less than a byte."""
    v = vec(shape, dtype)
    rejected_like_jax(
        kernel(
            [
                vector_load("x", "arg0", gmem(shape, dtype), v),
                vector_store("x", v, "arg1", gmem(shape, dtype)),
            ],
            [gmem(shape, dtype), gmem(shape, dtype)],
        )
    )


@pytest.mark.parametrize(
    ("dtype", "bits"),
    [
        ("!mosaic_gpu.b6x16_p32<f6E2M3FN>", 128),
        ("!mosaic_gpu.p2b6<f6E3M2FN>", 8),
        ("i6", None),
        ("f6E2M3FN", None),
    ],
)
def test_element_widths_are_jaxs(dtype: str, bits: int | None):
    """The packed 6-bit types count whole; other widths than powers of two have none
    (JAX's lowering refuses them)."""
    with shared_context(), ir.Location.unknown():
        element = ir.Type.parse(dtype)
        if bits is None:
            with pytest.raises(ValueError, match="power of 2"):
                mgpu_utils.bitwidth(element)
        else:
            assert mgpu_utils.bitwidth(element) == bits
    assert _element_bitwidth(element) == bits
