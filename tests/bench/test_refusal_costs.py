"""``bench.refusal_costs`` switches parts of the refusal path off by name: each name
still names a function of the path, each is put back, and with all of them off the
pass still refuses (what it times is a raise, not some other outcome)."""

from __future__ import annotations

import pytest
import reference

import smalto
from bench import refusal_costs


def _current() -> list[object]:
    return [getattr(owner, name) for _, owner, name, _ in refusal_costs.PARTS]


def test_every_part_names_a_function_of_the_path() -> None:
    for what, owner, name, _ in refusal_costs.PARTS:
        assert callable(getattr(owner, name, None)), (what, owner, name)


def test_parts_switched_off_are_put_back_and_the_pass_still_refuses() -> None:
    before = _current()
    everything = [part[0] for part in refusal_costs.PARTS]
    text = refusal_costs.DEFAULT_FILES[0].read_text()
    with refusal_costs._without(everything):
        assert all(now is not then for now, then in zip(_current(), before, strict=True))
        module = reference.parse(text, reference.make_context())
        with pytest.raises(smalto.InferenceError, match="Cannot cast to layout WGMMA"):
            smalto.infer_layout(module, arch=(9, 0))
    assert _current() == before


def test_a_row_for_jax_the_whole_path_each_part_and_all() -> None:
    rows = refusal_costs.measure(refusal_costs.DEFAULT_FILES[0], repeat=3, runs=1)
    labels = [label.strip() for label, _, _ in rows]
    assert labels[:2] == ["JAX's pass", "smalto, whole"]
    assert labels[-1] == "without all of them"
    assert len(rows) == len(refusal_costs.PARTS) + 3
    assert all(micros > 0 for _, micros, _ in rows)
