"""Shared pytest set-up: markers; ``tests/helpers/`` (and ``tests/``, for ``fuzz``) on
``sys.path`` so that the helper modules (``reference``, ``rule_kit``, the evaluator...)
import by their bare names whatever import mode pytest uses, and the
repository root so that ``smalto`` is this working tree's even when not
installed."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

_TESTS = Path(__file__).resolve().parent
for _path in (_TESTS.parent, _TESTS, _TESTS / "helpers"):
    if str(_path) not in sys.path:
        sys.path.insert(0, str(_path))


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line("markers", "blackwell: a corpus module for Blackwell (arch 10.0)")
