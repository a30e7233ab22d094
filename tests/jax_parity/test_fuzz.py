"""Fuzzing smalto against its checker and against JAX's pass.

``test_fuzz_property`` runs 200 random modules (``fuzz/strategies``)
through the property of ``fuzz/property``: smalto annotates a module and the
independent checker accepts it, or it raises ``InferenceError``; and where
JAX's pass (on little fuel) finishes, both agree on satisfiability. The run is
derandomized, so it is the same in every ``make test``; ``make fuzz`` runs
10 000 fresh ones. ``test_regression`` replays the modules earlier runs found
(``fuzz/regressions/``).
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest
import reference
from fuzz import property as prop
from fuzz.strategies import FuzzModule, modules
from hypothesis import HealthCheck, given, settings

EXAMPLES = int(os.environ.get("SMALTO_FUZZ_EXAMPLES", "200"))


@settings(
    max_examples=EXAMPLES,
    deadline=None,
    derandomize=True,
    database=None,
    suppress_health_check=list(HealthCheck),
)
@given(modules())
def test_fuzz_property(module: FuzzModule) -> None:
    verdict = prop.judge(module.text, module.arch)
    if verdict.failed and verdict.known_bug is None:
        raise AssertionError(f"{verdict.kind}: {verdict.detail}")


@settings(
    max_examples=50,
    deadline=None,
    derandomize=True,
    database=None,
    suppress_health_check=list(HealthCheck),
)
@given(modules())
def test_generated_modules_parse_and_verify(module: FuzzModule) -> None:
    """The generator writes modules jaxlib 0.12.0.1 parses and verifies (none is wasted)."""
    parsed = reference.parse(module.text, reference.shared_context())
    assert parsed.operation.verify()


def _regressions() -> list[object]:
    params = []
    for path in sorted(prop.REGRESSIONS.glob("*.mlir")):
        text, _ = prop.read_regression(path)
        known = next(
            (line.split(":", 1)[1].strip() for line in text.splitlines()
             if line.startswith("// known bug:")),
            None,
        )  # fmt: skip
        marks = [pytest.mark.xfail(strict=True, reason=known)] if known else []
        params.append(pytest.param(path, marks=marks, id=path.stem))
    return params


@pytest.mark.parametrize("path", _regressions())
def test_regression(path: Path) -> None:
    """A module a fuzz run once failed on: it must pass the property now."""
    text, arch = prop.read_regression(path)
    expect_sat = "// expect: sat" in text
    verdict = prop.judge(text, arch, fuel=prop.smalto.DEFAULT_FUEL)
    assert not verdict.failed, f"{verdict.kind}: {verdict.detail}"
    if expect_sat:
        assert verdict.smalto == "ok", f"smalto: {verdict.smalto}: {verdict.detail}"


def test_regressions_are_named_by_kind() -> None:
    for path in prop.REGRESSIONS.glob("*.mlir"):
        assert path.read_text().startswith("// fuzz regression: "), path
