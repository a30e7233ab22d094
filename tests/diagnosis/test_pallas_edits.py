"""The user's Pallas lines, rewritten (a transfer made unoptimized) and read for names.

JAX locates a load at the column of its subscript and a store at its target's
(0-based, as Python's ``ast`` counts); the lines here are as Pallas users write them.
"""

from __future__ import annotations

import pytest

from smalto.source.pallas_edits import source_name, unoptimized_transfer


@pytest.mark.parametrize(
    ("line", "column", "after"),
    [
        (
            "        o_gmem[...] = acc.astype(out_dtype)",
            8,
            "plgpu.store(o_gmem, acc.astype(out_dtype), optimized=False)",
        ),
        (
            "            st_ref[:, 0] = jnp.max(acc, axis=1)",
            12,
            "plgpu.store(st_ref.at[:, 0], jnp.max(acc, axis=1), optimized=False)",
        ),
    ],
)
def test_a_store_becomes_plgpu_store(line: str, column: int, after: str) -> None:
    edit = unoptimized_transfer(line, column, store=True)
    assert edit is not None and edit.before == line.strip() and edit.after == after


@pytest.mark.parametrize(
    ("line", "column", "after"),
    [
        (
            "    scale = w_ref[:, column]",
            12,
            "scale = plgpu.load(w_ref.at[:, column], optimized=False)",
        ),
        (
            # The ref's own subscript, not the indexing of the loaded value after it.
            "    o_ref[...] = acc * w_ref[:, 1][:, None]",
            23,
            "o_ref[...] = acc * plgpu.load(w_ref.at[:, 1], optimized=False)[:, None]",
        ),
        (
            "    o_ref[...] = x_ref[...] * 2",
            17,
            "o_ref[...] = plgpu.load(x_ref, optimized=False) * 2",
        ),
    ],
)
def test_a_load_becomes_plgpu_load(line: str, column: int, after: str) -> None:
    edit = unoptimized_transfer(line, column, store=False)
    assert edit is not None and edit.after == after


@pytest.mark.parametrize(
    ("line", "column"),
    [
        ("    o_ref[...] += x", 4),  # a read and a write: no one call says it
        ("    o_ref[...] = (x +", 4),  # a statement spread over lines
        ("    y = x + 1", 4),  # no store there
    ],
)
def test_what_is_not_one_transfer_is_not_rewritten(line: str, column: int) -> None:
    assert unoptimized_transfer(line, column, store=True) is None


def test_a_value_is_named_as_the_user_names_it() -> None:
    assert source_name("    s = jnp.sum(x, axis=1)", 8) == "s"
    line = "    r_gmem[...] = jnp.sum(acc, axis=1).astype(jnp.bfloat16)"
    assert source_name(line, 18, primitive="reduce_sum") == "jnp.sum(acc, axis=1)"
    assert source_name(line, 18, primitive="convert_element_type") == (
        "jnp.sum(acc, axis=1).astype(...)"
    )
    assert source_name("    o[...] = acc * w_ref[:, 1][:, None]", 19, load=True) == "w_ref[:, 1]"
    long = "    out[...] = plgpu.layout_cast(jnp.max(acc, axis=1), plgpu.Layout.TCGEN05.reduce(1))"
    assert source_name(long, 15) == "plgpu.layout_cast(...)"
    assert source_name("    x = (1 +", 8) is None
