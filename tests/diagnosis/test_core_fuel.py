"""The core search and the trial of edits are bounded by counted work, never by a clock
(issue #52): a refusal's message is the same on a busy machine as on an idle one.

Under load a 3-second deadline once cut a core short (``cast_strided_then_wgmma``: 11
requirements, not minimal, where an idle machine finds 7) and changed a kernel's code.
Here every clock the process reads runs a hundred seconds a reading: the message stays
the one the real clock gives. And the bound itself: with almost no work allowed, the
core search stops, says the core is not minimal, and stops at the same place each run.
"""

from __future__ import annotations

import time
import warnings
from collections.abc import Callable
from pathlib import Path

import pytest
import reference

import smalto
from smalto.constraints.conflict_report import ConflictReport
from smalto.diagnose import core

UNSAT = Path(__file__).parents[1] / "unsat"
KERNEL = "cast_strided_then_wgmma"


def _refusal(name: str) -> smalto.InferenceError:
    text = (UNSAT / f"{name}.mlir").read_text()
    module = reference.parse(text, reference.make_context())
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        with pytest.raises(smalto.InferenceError) as info:
            smalto.infer_layout(module, arch=reference.text_arch(text))
    return info.value


def _message(name: str) -> str:
    return str(_refusal(name))


def _report(name: str) -> ConflictReport:
    report = _refusal(name).conflict
    assert isinstance(report, ConflictReport)
    return report


def _racing(real: Callable[[], float], readings: list[int]) -> Callable[[], float]:
    """``real``, read as a busy machine's clock: 100 s later at each reading."""

    def read() -> float:
        readings[0] += 1
        return float(real()) + 100.0 * readings[0]

    return read


def test_a_clock_racing_changes_no_word_of_the_message() -> None:
    idle = _message(KERNEL)
    assert _report(KERNEL).minimal
    readings = [0]
    with pytest.MonkeyPatch.context() as patch:
        for name in ("monotonic", "perf_counter", "time", "process_time"):
            patch.setattr(time, name, _racing(getattr(time, name), readings))
        busy = _message(KERNEL)
    assert readings[0] > 0  # (the clocks were read: the message was made under them)
    assert busy == idle


def test_the_core_search_stops_where_its_work_runs_out(monkeypatch: pytest.MonkeyPatch) -> None:
    whole = _report(KERNEL)
    assert whole.minimal
    monkeypatch.setattr(core, "CORE_WORK", 3)
    cut = [_report(KERNEL) for _ in range(2)]
    assert not cut[0].minimal
    # Stopped early, at the same place each time: a core larger than the minimal one.
    assert len(cut[0].core) > len(whole.core)
    assert list(cut[0].core) == list(cut[1].core)
