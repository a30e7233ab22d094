"""The minimal-core search's small solves share what does not change between them
(issue #33 point 8: a refusal's words within 10x JAX's pass).

``find_core`` asks dozens of times whether a handful of a kernel's requirements hold
together. The domains of their values are made once for all the questions
(``complete.DomainsMade``), and each handful is cut out of the system without
``dataclasses.replace``'s field walk (``subsystem``). Neither may change an answer:
every question of the search is answered as a solver of its own answers it, and a
subsystem is the one ``dataclasses.replace`` made.
"""

from __future__ import annotations

import dataclasses
from pathlib import Path

import pytest
import reference

from smalto.constraints.language import Element, Fixed, System, Var
from smalto.diagnose import core
from smalto.diagnose.subsystem import subsystem
from smalto.infer import in_context
from smalto.program.reader import read_program
from smalto.program.view import Program
from smalto.rules import consumers, derive_system
from smalto.solve.complete import DomainsMade
from smalto.solve.decision import Exhausted, Solved
from smalto.solve.options import SolveOptions
from smalto.solve.search import widest

UNSAT = Path(__file__).parents[1] / "unsat"
KERNELS = (
    "registers_not_equal",
    "relayout_unsupported",
    "pallas_strided_loop_carry",
    "pallas_column_max_cast_to_rows",
    "fixes_transposed_tile_load",
)


def _alone(
    system: System, elements: list[Element], program: Program, arch: tuple[int, int]
) -> bool | None:
    """The question answered by a solver of its own, sharing nothing."""
    decision = widest(subsystem(system, elements), program, SolveOptions(fuel=5_000, arch=arch))
    return None if isinstance(decision, Exhausted) else isinstance(decision, Solved)


@pytest.mark.parametrize("name", KERNELS)
def test_each_question_of_the_core_search_is_answered_as_alone(
    name: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    text = (UNSAT / f"{name}.mlir").read_text()
    arch = reference.text_arch(text)
    module = reference.parse(text, reference.make_context())
    asked: list[tuple[list[Element], bool | None, int]] = []
    real = core._satisfiable

    def watched(
        system: System,
        elements: list[Element],
        program: Program,
        options: SolveOptions,
        made: DomainsMade | None = None,
        fuel: core.CoreFuel | None = None,
    ) -> bool | None:
        answer = real(system, elements, program, options, made, fuel)
        asked.append((list(elements), answer, len(made or {})))
        return answer

    monkeypatch.setattr(core, "_satisfiable", watched)
    with in_context(module):
        program = read_program(module, consumers())
        system = derive_system(program, arch)
        found, _ = core.find_core(program, system, SolveOptions(arch=arch), set())
        assert found
        assert len(asked) > 3
        assert asked[-1][2] > 0  # the domains were shared
        for elements, answer, _ in asked:
            assert answer == _alone(system, elements, program, arch)


@pytest.mark.parametrize("name", KERNELS)
def test_a_subsystem_is_the_one_dataclasses_replace_makes(name: str) -> None:
    text = (UNSAT / f"{name}.mlir").read_text()
    arch = reference.text_arch(text)
    module = reference.parse(text, reference.make_context())
    with in_context(module):
        program = read_program(module, consumers())
        system = derive_system(program, arch)
    elements: list[Element] = [*system.fixed, *system.constraints]
    cut = subsystem(system, elements)
    # (The subsystem's variables: those the elements mention, then one per hint.)
    mentioned = _mentioned(system, elements)
    ids = {
        old.id: new.id for old, new in zip(mentioned, cut.variables[: len(mentioned)], strict=True)
    }
    for old, new in ids.items():
        assert cut.variables[new] == dataclasses.replace(system.variables[old], id=new, sites=[])
    renamed = [_replaced(c, ids) for c in system.constraints]
    assert cut.constraints == renamed
    assert all(type(a) is type(b) for a, b in zip(cut.constraints, renamed, strict=True))


def _mentioned(system: System, elements: list[Element]) -> list:
    from smalto.constraints.language import constraint_variables

    seen: dict[int, None] = {}
    for e in elements:
        for v in (e.var,) if isinstance(e, Fixed) else constraint_variables(e):
            seen.setdefault(v)
    return [system.variables[v] for v in seen]


def _replaced(c: object, ids: dict[int, int]) -> object:
    """A constraint renamed with ``dataclasses.replace``, field by field (what the
    subsystem did before)."""
    changes = {}
    for field in dataclasses.fields(c):  # type: ignore[arg-type]
        if field.init:
            changes[field.name] = _expr(getattr(c, field.name), ids)
    return dataclasses.replace(c, **changes)  # type: ignore[type-var]


def _expr(value: object, ids: dict[int, int]) -> object:
    if isinstance(value, Var):
        return Var(ids[value.id])
    if dataclasses.is_dataclass(value) and hasattr(value, "expr"):
        return dataclasses.replace(value, expr=_expr(value.expr, ids))  # type: ignore[type-var]
    return value
