"""Shared pytest set-up: markers; ``tests/helpers/`` (and ``tests/``, for ``fuzz``) on
``sys.path`` so that the helper modules (``reference``, ``rule_kit``, the evaluator...)
import by their bare names whatever import mode pytest uses, and the
repository root so that ``smalto`` is this working tree's even when not
installed."""

from __future__ import annotations

import os
import sys
from pathlib import Path

import pytest

_TESTS = Path(__file__).resolve().parent
for _path in (_TESTS.parent, _TESTS, _TESTS / "helpers"):
    if str(_path) not in sys.path:
        sys.path.insert(0, str(_path))


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line("markers", "blackwell: a corpus module for Blackwell (arch 10.0)")
    config.addinivalue_line(
        "markers",
        "slow: a heavy end-to-end test (tens of seconds of CPU, most of it JAX's own pass "
        "failing) whose behaviour a cheaper test checks in CI; run with SMALTO_SLOW=1",
    )


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """``slow`` tests run only with ``SMALTO_SLOW=1``: CI (2 cores, a 10-minute goal) runs
    their cheaper twins."""
    if os.environ.get("SMALTO_SLOW") == "1":
        return
    skip = pytest.mark.skip(reason="slow: its cheaper twin runs in CI; SMALTO_SLOW=1 runs it")
    for item in items:
        if "slow" in item.keywords:
            item.add_marker(skip)
