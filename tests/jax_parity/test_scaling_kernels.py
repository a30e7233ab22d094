"""The scaling benchmark's kernels (``scaling_kernels``): smalto answers them as JAX's pass
does, and they grow linearly (nothing is timed)."""

from __future__ import annotations

import pytest
import reference
from scaling_kernels import FAMILIES, attention_kernel

HOPPER = (9, 0)


@pytest.mark.parametrize("n", [1, 2])
def test_attention_kernel_parses_and_smalto_matches_jax(n: int) -> None:
    text = attention_kernel(n)
    jax_attributes, _ = reference.jax_attributes(text, HOPPER)
    smalto_attributes, _ = reference.smalto_attributes(text, HOPPER)
    assert jax_attributes, "JAX's pass annotated nothing"
    assert reference.diff_attributes(jax_attributes, smalto_attributes) == []


@pytest.mark.parametrize("family", sorted(FAMILIES))
def test_scaling_kernels_of_sixteen_blocks_match_jax(family: str) -> None:
    """Each family of the scaling benchmark, large enough that the search takes
    over a hundred decisions in JAX's order: smalto's attributes are JAX's."""
    text = FAMILIES[family](16)
    jax_attributes, _ = reference.jax_attributes(text, HOPPER)
    smalto_attributes, _ = reference.smalto_attributes(text, HOPPER)
    assert len(jax_attributes) > 16 * 8
    assert reference.diff_attributes(jax_attributes, smalto_attributes) == []


@pytest.mark.parametrize("family", sorted(FAMILIES))
def test_scaling_kernels_grow_linearly(family: str) -> None:
    sizes = [len(FAMILIES[family](n).splitlines()) for n in (1, 2, 3)]
    assert sizes[2] - sizes[1] == sizes[1] - sizes[0] > 0


def test_attention_kernel_grows_linearly() -> None:
    # Every block adds the same ops, so the benchmark's sizes are comparable.
    sizes = [len(attention_kernel(n).splitlines()) for n in (1, 2, 3)]
    assert sizes[2] - sizes[1] == sizes[1] - sizes[0] > 0
