"""Shared pytest set-up: markers; ``tests/`` on ``sys.path`` so that the helper
module ``reference`` imports whatever import mode pytest uses, and the
repository root so that ``smalto`` is this working tree's even when not
installed."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

for _path in (Path(__file__).resolve().parents[1], Path(__file__).resolve().parent):
    if str(_path) not in sys.path:
        sys.path.insert(0, str(_path))


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line("markers", "blackwell: a corpus module for Blackwell (arch 10.0)")
