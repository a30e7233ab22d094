"""Writes a generated table of the package (``smalto/hw/*_table.py``) from its generator."""

from __future__ import annotations

import sys
from collections.abc import Callable
from pathlib import Path


def regenerate(table: Path, source: Callable[[], str]) -> int:
    """Rewrites ``table`` with what ``source`` makes today; the exit status (0)."""
    table.write_text(source())
    print(f"wrote {table}", file=sys.stderr)
    return 0
