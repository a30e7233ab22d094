"""Pallas lines rewritten where a layout or an axis is written, as users spell them.

``stated_layout`` edits the layout a call states (``plgpu.layout_cast(x, L)``, or any
call's ``layout=``) or removes it; ``with_axis`` edits a reduction's axis; both keep
the statement whole (assignment, names, indentation) and parse it, never run it.
"""

from __future__ import annotations

import pytest

from smalto.source.pallas_edits import expansion_at, expression_at, stated_layout, with_axis

COL = "plgpu.Layout.WGMMA.reduce(0)"


def _edit(source: str, line: int, column: int, layout: str | None) -> tuple[str, ...] | None:
    found = stated_layout(source.splitlines(), line, column, layout)
    return None if found is None else found.after


@pytest.mark.parametrize(
    ("line", "column", "after"),
    [
        (
            "    bias = plgpu.load(bias_ref, layout=plgpu.Layout.WGMMA.reduce(1))",
            11,
            "    bias = plgpu.load(bias_ref, layout=plgpu.Layout.WGMMA.reduce(0))",
        ),
        (
            "    s = plgpu.layout_cast(jnp.sum(x, axis=1), plgpu.Layout.WGMMA.reduce(1))",
            8,
            "    s = plgpu.layout_cast(jnp.sum(x, axis=1), plgpu.Layout.WGMMA.reduce(0))",
        ),
        (
            "    o_ref[...] = plgpu.layout_cast(s, new_layout=plgpu.Layout.WGMMA.reduce(1)) * 2",
            17,
            "    o_ref[...] = plgpu.layout_cast(s, new_layout=plgpu.Layout.WGMMA.reduce(0)) * 2",
        ),
    ],
)
def test_the_stated_layout_is_changed_in_place(line: str, column: int, after: str) -> None:
    assert _edit(line, 1, column, COL) == (after,)


def test_a_call_spread_over_lines_keeps_its_lines() -> None:
    source = (
        "    cols = plgpu.broadcasted_iota(\n"
        "        jnp.int32, (64,), 0, layout=plgpu.Layout.WGMMA.reduce(1),\n"
        "    )\n"
        "    y = cols + 1\n"
    )
    found = stated_layout(source.splitlines(), 1, 11, None)
    assert found is not None and found.first_line == 1 and len(found.before) == 3
    assert found.after[1] == "        jnp.int32, (64,), 0,"
    assert found.text == "cols = plgpu.broadcasted_iota(jnp.int32, (64,), 0,)"
    assert found.written.startswith("cols = plgpu.broadcasted_iota(jnp.int32, (64,), 0, layout=")


@pytest.mark.parametrize(
    ("line", "column", "after"),
    [
        ("    x = plgpu.layout_cast(x_smem[...], plgpu.Layout.WGMMA)", 8, "    x = x_smem[...]"),
        (
            "    acc = plgpu.async_load_tmem(acc_tmem, layout=plgpu.Layout.WGMMA)",
            10,
            "    acc = plgpu.async_load_tmem(acc_tmem)",
        ),
    ],
)
def test_a_stated_layout_is_removed(line: str, column: int, after: str) -> None:
    assert _edit(line, 1, column, None) == (after,)


@pytest.mark.parametrize(
    ("line", "column"),
    [
        ("    y = jnp.exp(x)", 8),  # no layout stated there
        ("    bias = plgpu.load(bias_ref, layout=L)", 4),  # nothing starts at the column
    ],
)
def test_a_line_that_states_no_layout_there_is_left_alone(line: str, column: int) -> None:
    assert _edit(line, 1, column, COL) is None


@pytest.mark.parametrize(
    ("line", "column", "axis", "after"),
    [
        ("    m = s.max(axis=0)", 8, 1, "    m = s.max(axis=1)"),
        (
            "    m = jnp.max(s, axis=-1, keepdims=True)",
            8,
            0,
            "    m = jnp.max(s, axis=0, keepdims=True)",
        ),
        ("    l = jnp.sum(p, 0)", 8, 1, "    l = jnp.sum(p, 1)"),
        ("    l = p.sum(1)", 8, 0, "    l = p.sum(0)"),
    ],
)
def test_a_reduction_s_axis_is_changed_in_place(
    line: str, column: int, axis: int, after: str
) -> None:
    found = with_axis([line], 1, column, axis)
    assert found is not None and found.after == (after,)


def test_a_reduction_without_a_written_axis_is_left_alone() -> None:
    assert with_axis(["    m = s.max()"], 1, 8, 1) is None


def test_the_reduction_and_the_expansion_read_as_written() -> None:
    assert expression_at("    m = s.max(axis=0)", 8, "reduce_max") == "s.max(axis=0)"
    assert expansion_at("    return jnp.exp(s - m[:, None])", 19) == "m[:, None]"
    assert expansion_at("    return s - low.reshape(-1, 1)", 15) == "low.reshape(-1, 1)"
    assert expansion_at("    return s * 2", 11) is None
