"""Lowering requirements JAX 0.12.0.1's rules leave out, found by the fuzzer.

Each test lowers JAX's answer through JAX's dialect lowering (with a launch
context) to show that the lowering rejects it, shows the checker flags it,
and lowers smalto's answer, which the checker accepts. (Others of the kind:
``test_gmem_transfer.py``, ``test_rules_arith.py`` for conversions from 4-bit
integers, ``test_blackwell_rules.py`` for TMEM loads of one row tile.)
"""

from __future__ import annotations

import pytest
from jax._src.lib.mlir import ir
from rule_kit import (
    HOPPER,
    kernel,
    lower_in_launch,
    op,
    out_layouts,
    run_jax,
    run_smalto,
    splat,
    vec,
)

from smalto.check import check


def _lowering_rejects_jax_accepts_smalto(text: str, jax_says: str, checker_says: str) -> ir.Module:
    theirs = run_jax(text)
    assert any(checker_says in v.message for v in check(theirs, HOPPER)), check(theirs, HOPPER)
    with pytest.raises(Exception, match=jax_says):
        lower_in_launch(theirs)
    ours = run_smalto(text)
    assert check(ours, HOPPER) == []
    lower_in_launch(run_smalto(text))
    return ours


def test_a_splat_is_stored_only_along_a_contiguous_minor_dim() -> None:
    """A splat of more than one element is stored as a strided value: vector stores
    along the minor dim, which a transposed ref does not have ("most minor
    memref dim must have unit stride"). smalto converts the splat at the store
    to a tiled layout the transposed ref takes."""
    plain = "memref<128x64xf16, #gpu.address_space<workgroup>>"
    view = "memref<64x128xf16, strided<[1, 64]>, #gpu.address_space<workgroup>>"
    v = vec((64, 128), "f16")
    text = kernel(
        [
            "%s = arith.constant 2.0 : f16",
            f"%x = vector.broadcast %s : f16 to {v}",
            f'%r = "mosaic_gpu.slice_smem"() <{{offset = 0 : i32}}> : () -> {plain}',
            f"%t = memref.transpose %r (d0, d1) -> (d1, d0) : {plain} to {view}",
            f'"mosaic_gpu.vector_store"(%x, %t) : ({v}, {view}) -> ()',
        ]
    )
    ours = _lowering_rejects_jax_accepts_smalto(
        text, "unit stride", "a splat is stored as a strided value, and a strided value moves 4"
    )
    assert out_layouts(op(ours, "vector.broadcast")) == [splat(64, 128)]


def test_a_reduction_reduces_a_tiled_value_only() -> None:
    """JAX's rules let a splat be reduced; its lowering raises "Unsupported layout".
    smalto converts the splat to a tiled layout where the reduction takes it."""
    v, row = vec((256, 128), "f32"), vec((256,), "f32")
    text = kernel(
        [
            f"%a = arith.constant dense<1.0> : {row}",
            f"%b = mosaic_gpu.broadcast_in_dim(%a : {row}) <broadcast_dimensions = [0]> -> {v}",
            f"%m = vector.multi_reduction <maximumf>, %b, %a "
            f"{{offset = 0 : i32, scratch_size = 2048 : i32}} [1] : {v} to {row}",
        ]
    )
    _lowering_rejects_jax_accepts_smalto(text, "Unsupported layout", "cannot be a splat")


@pytest.mark.parametrize("space", ["smem", "gmem"])
@pytest.mark.parametrize(
    ("length", "element", "checker_says"),
    [
        # 128 4-bit elements: one a thread, 4 bits, not a whole byte.
        (128, "i4", "(4 bits) a thread, not whole bytes"),
        # 192 elements: gcd(4, 1) = 1 a thread leaves 64 over.
        (192, "f16", "must have a multiple of that many"),
        # Fewer elements than threads.
        (64, "f32", "must have a multiple of that many"),
    ],
)
def test_a_splat_is_stored_only_in_whole_vectors_of_whole_bytes(
    length: int, element: str, checker_says: str, space: str
) -> None:
    """A splat of more than one element is stored as a strided value of
    gcd(64 / bitwidth, elements / 128) elements a thread: all 128 threads' vectors
    full, each whole bytes ("Arrays with the splat layout can only be stored ...",
    "Vector length should be a multiple of byte size"), into SMEM or GMEM alike.
    JAX's rules store the splat as it is; smalto converts it at the store to a
    layout the store takes."""
    v = vec((length,), element)
    smem = "#gpu.address_space<workgroup>"
    ref = (
        f"memref<{length}x{element}, {smem}>" if space == "smem" else f"memref<{length}x{element}>"
    )
    constant = "dense<1>" if element.startswith("i") else "dense<1.0>"
    body = [f"%x = arith.constant {constant} : {v}"]
    if space == "smem":
        body.append(f'%r = "mosaic_gpu.slice_smem"() <{{offset = 0 : i32}}> : () -> {ref}')
    target = "%r" if space == "smem" else "%arg0"
    body.append(
        f'"mosaic_gpu.vector_store"(%x, {target}) <{{optimized = false}}> : ({v}, {ref}) -> ()'
    )
    text = kernel(body, [ref] if space == "gmem" else [])
    theirs = run_jax(text)
    assert any(checker_says in v.message for v in check(theirs, HOPPER)), check(theirs, HOPPER)
    with pytest.raises(NotImplementedError, match="splat layout can only be stored|byte size"):
        lower_in_launch(theirs)
    ours = run_smalto(text)
    assert check(ours, HOPPER) == []
    assert "WGSplatFragLayout" not in str(op(ours, "mosaic_gpu.vector_store").attributes)
    lower_in_launch(ours)
