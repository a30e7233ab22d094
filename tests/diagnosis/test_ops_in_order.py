"""The ops of a module by position, as the program view numbers them, and the shorter
walk a verified edit's copy makes: up to the last op an edit names, the same ops."""

from __future__ import annotations

from pathlib import Path

import pytest
import reference

from smalto.program.reader import read_program
from smalto.program.view import ops_in_order

CORPUS = Path(__file__).parents[1] / "corpus"
MODULES = sorted(CORPUS.glob("*/*.mlir"))


@pytest.mark.parametrize("path", MODULES, ids=[p.stem for p in MODULES])
def test_the_view_s_ids_and_a_walk_cut_short_anywhere(path: Path) -> None:
    context = reference.make_context()
    module = reference.parse(path.read_text(), context)
    with context:
        program = read_program(module)
        every = ops_in_order(module.operation)
        assert [op.name for op in every] == list(program.op_names)
        for until in sorted({0, 1, len(every) // 3, len(every) - 1, len(every) + 4}):
            assert ops_in_order(module.operation, until=until) == every[: until + 1]
