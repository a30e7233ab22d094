"""The fuzz families that reach the rescues (``fuzz/rescues``), judged by their oracles
(``fuzz/rescue_property``: the checker, JAX's pass and dialect lowering, the reference
evaluator on the module as written against the rescued one).

1 000 modules a family, the same every run (``SEED``), in chunks of 100 that
pytest-xdist spreads over its workers: each chunk asserts that none of its modules fails
an oracle, and that its family reaches its rescue there (at least half its modules have
no layouts as written and are rescued by it; the general fuzzer barely reaches staging).
A module costs 70 ms of CPU on average (32 ms unoptimized, 63 ms staging, 114 ms unit
dims; small tiles mostly: JAX's lowering and the evaluator grow with a tile's
registers), the 3 000 about 210 s. ``make fuzz`` runs ``python -m fuzz.run_rescues``:
1 000 modules a family with a fresh seed.
"""

from __future__ import annotations

import functools
from collections import Counter

import pytest
from fuzz.rescue_property import judge
from fuzz.rescues import FAMILIES, RescueModule, cases

SEED = 52  # fixed: CI judges the same modules every run
MODULES = 1_000  # a family
CHUNK = 100  # modules a test


@functools.cache
def _family(rescue: str) -> list[RescueModule]:
    """The family's modules, drawn once a process (each xdist worker draws its own)."""
    return cases(rescue, MODULES, SEED)


@pytest.mark.parametrize("chunk", range(MODULES // CHUNK), ids=lambda chunk: f"chunk{chunk}")
@pytest.mark.parametrize("rescue", sorted(FAMILIES))
def test_family_reaches_its_rescue_and_every_rescue_holds(rescue: str, chunk: int) -> None:
    modules = _family(rescue)[chunk * CHUNK : (chunk + 1) * CHUNK]
    assert len(modules) == CHUNK  # (the family has a thousand distinct modules and more)
    verdicts: Counter[str] = Counter()
    failures: list[str] = []
    for number, case in enumerate(modules, start=chunk * CHUNK):
        verdict = judge(case)
        verdicts[verdict.kind] += 1
        if verdict.failed:
            failures.append(f"module {number}: {verdict.kind}: {verdict.detail}\n{case!r}")
    assert not failures, f"{len(failures)} failed ({dict(verdicts)}); the first:\n{failures[0]}"
    # Reached: at least half the chunk's modules are rescued by this very rescue.
    assert verdicts["rescued"] * 2 >= CHUNK, verdicts
