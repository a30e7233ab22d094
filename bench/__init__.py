"""Benchmarks of smalto against JAX's layout-inference pass (not part of the package).

Run from the repository root: ``python -m bench.run``, ``python -m bench.scaling``,
``python -m bench.phases`` (where the time goes, step by step),
``python -m bench.family`` (one family, warm and cold: by default the Blackwell
int4 ragged dots that ``python -m bench.quantized_ragged_dot`` captures),
``python -m bench.first_call`` (each held-out kernel's first call, in fresh
processes) or ``make bench``. Importing ``bench`` puts the repository root and ``tests/``
on ``sys.path`` so that ``smalto`` is this working tree's and the corpus
helpers in ``tests/helpers/reference.py`` import as ``reference``, as they do in the tests.
"""

from __future__ import annotations

import sys
from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parents[1]

for _path in (REPO_ROOT, REPO_ROOT / "tests", REPO_ROOT / "tests" / "helpers"):
    if str(_path) not in sys.path:
        sys.path.insert(0, str(_path))
