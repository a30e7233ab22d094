"""A user's script run at its top level without taking smalto with it: a time limit, and
no process of its left behind.

smalto runs the user's script in its own process (``smalto.source.scripts``), so
what the script does at import happens to smalto: a loop that never ends, a
wait on a process that never exits, or an ``os.fork()`` whose child goes on
running smalto's own code (or holds its output pipe open, so that whoever reads
smalto's output waits for ever). ``confined`` runs the script's code with

- a time limit (``SMALTO_SCRIPT_TIME_LIMIT`` seconds, 300 unless set): past it,
  the code is interrupted (where it runs Python, or waits in a system call) and
  ``OutOfTime`` is raised;
- its processes found and ended: smalto is made the reaper of its orphans while
  the code runs (``PR_SET_CHILD_SUBREAPER``, Linux), so that a child's own
  children come back to it; every process the code started and left (running, or
  exited and not waited for) is killed and waited for, and ``LeftProcesses`` says
  so. A forked child that returns into smalto's code ends there at once.

Where the time limit cannot be set (not the main thread, no ``SIGALRM``), the
code runs without one.
"""

from __future__ import annotations

import contextlib
import ctypes
import functools
import os
import signal
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

TIME_LIMIT_VARIABLE = "SMALTO_SCRIPT_TIME_LIMIT"
DEFAULT_TIME_LIMIT = 300.0
_PR_SET_CHILD_SUBREAPER = 36
_PR_GET_CHILD_SUBREAPER = 37


class OutOfTime(BaseException):
    """The script's code ran past its time limit. (A ``BaseException``: a script's own
    ``except Exception`` does not swallow it.)"""

    def __init__(self, limit: float) -> None:
        super().__init__(limit)
        self.limit = limit


class LeftProcesses(Exception):
    """The script's code left processes behind (now ended)."""

    def __init__(self, pids: list[int]) -> None:
        super().__init__(pids)
        self.pids = pids


def time_limit() -> float:
    """The seconds a script's top level may run (``SMALTO_SCRIPT_TIME_LIMIT``; 0 or less:
    none)."""
    text = os.environ.get(TIME_LIMIT_VARIABLE, "")
    try:
        return float(text) if text.strip() else DEFAULT_TIME_LIMIT
    except ValueError:
        return DEFAULT_TIME_LIMIT


def confined(code: Callable[[], Any]) -> None:
    """Runs ``code`` within the time limit, and ends every process it left; raises what
    ``code`` raises, else ``OutOfTime`` or ``LeftProcesses``."""
    parent = os.getpid()
    before = set(_children())
    left: list[int] = []
    try:
        with _reaping(), _limited(time_limit()):
            try:
                code()
            finally:
                if os.getpid() != parent:
                    os._exit(0)  # a forked child back in smalto's code: it ends here
                left = _end_children(before)
    finally:
        left += _end_children(before)  # those given back to smalto as their parents ended
    if left:
        raise LeftProcesses(sorted(set(left)))


@contextlib.contextmanager
def _limited(seconds: float) -> Iterator[None]:
    if (
        seconds <= 0
        or threading.current_thread() is not threading.main_thread()
        or not hasattr(signal, "setitimer")
    ):
        yield
        return

    def out_of_time(signum: int, frame: object) -> None:
        raise OutOfTime(seconds)

    previous = signal.signal(signal.SIGALRM, out_of_time)
    signal.setitimer(signal.ITIMER_REAL, seconds)
    try:
        yield
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)


@functools.cache
def _prctl() -> Callable[..., int] | None:
    try:
        function: Callable[..., int] = ctypes.CDLL(None, use_errno=True).prctl
    except (AttributeError, OSError):
        return None
    return function


@contextlib.contextmanager
def _reaping() -> Iterator[None]:
    """This process the reaper of its descendants' orphans while the block runs."""
    prctl = _prctl()
    if prctl is None:
        yield
        return
    was = ctypes.c_int(0)
    if prctl(_PR_GET_CHILD_SUBREAPER, ctypes.byref(was), 0, 0, 0) != 0:
        yield
        return
    prctl(_PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0)
    try:
        yield
    finally:
        prctl(_PR_SET_CHILD_SUBREAPER, was.value, 0, 0, 0)


def _children() -> list[int]:
    """This process's children (Linux: ``/proc/self/task/*/children``); none elsewhere."""
    found: list[int] = []
    with contextlib.suppress(OSError):
        for task in Path("/proc/self/task").iterdir():
            with contextlib.suppress(OSError):
                found += [int(pid) for pid in (task / "children").read_text().split()]
    return found


def _end_children(before: set[int]) -> list[int]:
    """Every child not in ``before`` killed and waited for (again, for the grandchildren
    each one's end hands back to this process); their ids."""
    ended: list[int] = []
    for _ in range(20):
        new = [pid for pid in _children() if pid not in before]
        if not new:
            break
        for pid in new:
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)
        for pid in new:
            with contextlib.suppress(ChildProcessError):
                os.waitpid(pid, 0)
            ended.append(pid)
        time.sleep(0.01)  # a grandchild handed back a moment after its parent ended
    return ended


__all__ = [
    "DEFAULT_TIME_LIMIT",
    "LeftProcesses",
    "OutOfTime",
    "TIME_LIMIT_VARIABLE",
    "confined",
    "time_limit",
]
