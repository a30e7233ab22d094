"""Shared pytest set-up: markers; ``tests/helpers/`` (and ``tests/``, for ``fuzz``) on
``sys.path`` so that the helper modules (``reference``, ``rule_kit``, the evaluator...)
import by their bare names whatever import mode pytest uses, and the
repository root so that ``smalto`` is this working tree's even when not
installed."""

from __future__ import annotations

import os
import random
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
    config.addinivalue_line(
        "markers",
        "sample(k): one of many cases of a test that take the same path; CI runs k of "
        "them (a fixed seed), SMALTO_SLOW=1 all",
    )


def _cpu_quota() -> int | None:
    """The cores a cgroup (v2) quota grants this process, rounded down; None without one."""
    try:
        quota, period = Path("/sys/fs/cgroup/cpu.max").read_text().split()[:2]
    except (OSError, ValueError):
        return None
    return None if quota == "max" else max(1, int(quota) // int(period))


@pytest.hookimpl(optionalhook=True)  # a hook of pytest-xdist, unknown without it
def pytest_xdist_auto_num_workers(config: pytest.Config) -> int:
    """``make test`` runs ``-n auto``: one worker a core this process may use (its CPU
    affinity and any cgroup quota, which ``os.cpu_count`` ignores), but no more than
    one per 3 GiB of memory (a worker holds JAX, the corpus's modules and their caches:
    0.8 GiB at its peak in a whole run, the commands it starts beside it).
    ``PYTEST_XDIST_AUTO_NUM_WORKERS`` overrides."""
    configured = os.environ.get("PYTEST_XDIST_AUTO_NUM_WORKERS")
    if configured:
        return int(configured)
    # No affinity on macOS: there, every core.
    affinity = getattr(os, "sched_getaffinity", None)
    cores = len(affinity(0)) if affinity else (os.cpu_count() or 1)
    quota = _cpu_quota()
    if quota is not None:
        cores = min(cores, quota)
    try:
        memory = os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")
    except (OSError, ValueError):
        return cores
    return max(1, min(cores, memory // (3 << 30)))


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """``slow`` tests run only with ``SMALTO_SLOW=1``: CI (2 cores, a 10-minute goal) runs
    their cheaper twins. Of the cases of one test marked ``sample(k)``, CI runs ``k``
    chosen by a fixed seed (the same in every run and in every xdist worker, whose
    collections must agree); ``SMALTO_SLOW=1`` runs them all."""
    if os.environ.get("SMALTO_SLOW") == "1":
        return
    skip = pytest.mark.skip(reason="slow: its cheaper twin runs in CI; SMALTO_SLOW=1 runs it")
    for item in items:
        if "slow" in item.keywords:
            item.add_marker(skip)
    _sample(items)


def _sample(items: list[pytest.Item]) -> None:
    groups: dict[tuple[str, str, int], list[pytest.Item]] = {}
    for item in items:
        marker = item.get_closest_marker("sample")
        if marker is not None:
            name = getattr(item, "originalname", item.name)
            groups.setdefault((item.nodeid.split("::")[0], name, marker.args[0]), []).append(item)
    for (path, name, keep), cases in groups.items():
        # A string seeds Random by its SHA-512, not by hash(), which varies by process.
        chosen = random.Random(f"{path}::{name}").sample(range(len(cases)), min(keep, len(cases)))
        kept = set(chosen)
        skip = pytest.mark.skip(
            reason=f"sampled: CI runs {len(kept)} of these {len(cases)} cases (a fixed seed); "
            "SMALTO_SLOW=1 runs them all"
        )
        for index, item in enumerate(cases):
            if index not in kept:
                item.add_marker(skip)
