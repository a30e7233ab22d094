"""What every command says besides its answer: exit statuses, errors and notes on stderr.

One place for the words and the codes, so that every command ends the same way:
``PROG: error: MESSAGE`` (``fail``), ``PROG: note: TEXT`` (``note``) or ``PROG:
warning: TEXT`` (``warning``) on stderr, and the exit status 0 (done), 1 (the
kernel has no layouts, violations, a lowering that failed), 2 (bad usage or input
that cannot be used: ``UsageError``), 130 (interrupted), 143 (terminated). No other module prints
such lines (``tests/cli/test_one_printer.py``): a library hands its notes up to
the command, which prints them here.
"""

from __future__ import annotations

import contextlib
import errno
import os
import signal
import sys
import threading
from collections.abc import Iterator

from smalto.basics.file_names import printable

EXIT_OK = 0
EXIT_FAILED = 1
EXIT_INFERENCE_FAILED = EXIT_FAILED
EXIT_USAGE = 2
EXIT_INTERRUPTED = 130
EXIT_TERMINATED = 128 + signal.SIGTERM


# What writing to a file or stdout may fail with, the disk (or /dev/full) being full.
WRITE_ERRORS = frozenset({errno.ENOSPC, errno.EDQUOT, errno.EFBIG, errno.EIO})


class UsageError(Exception):
    """Bad arguments or unusable input: reported on one line, exit status 2."""


class Terminated(BaseException):
    """SIGTERM arrived: raised where the command is, so that it unwinds as on Ctrl-C (its
    ``finally`` blocks remove temporary files; a file half written is never renamed)."""


@contextlib.contextmanager
def terminating_as_interrupt() -> Iterator[None]:
    """SIGTERM raises ``Terminated`` while the block runs (where this thread may handle
    signals and nobody else has claimed SIGTERM); Python raises ``KeyboardInterrupt`` on
    SIGINT by itself."""
    if (
        threading.current_thread() is not threading.main_thread()
        or signal.getsignal(signal.SIGTERM) is not signal.SIG_DFL
    ):
        yield
        return

    def terminated(signum: int, frame: object) -> None:
        raise Terminated

    previous = signal.signal(signal.SIGTERM, terminated)
    try:
        yield
    finally:
        signal.signal(signal.SIGTERM, previous)


def stdout_closed() -> int:
    """Points stdout at /dev/null, so that the interpreter's last flush does not fail
    again on the closed pipe; returns the exit status for a reader that left (0)."""
    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
    except (OSError, ValueError):  # a stdout with no file descriptor (tests)
        pass
    return EXIT_OK


def stdout_unwritable(error: OSError, prog: str = "smalto") -> int | None:
    """Says that writing the answer to stdout failed (``> /dev/full``, a full disk) and
    returns the exit status (2); ``None`` where ``error`` is not that (the caller re-raises
    it). Every file a command writes is named by its own error; a full disk's names none,
    and stdout is the one file written without a name."""
    if error.filename is not None or error.errno not in WRITE_ERRORS:
        return None
    stdout_closed()
    return fail(f"cannot write to stdout: {error.strerror or error}", EXIT_USAGE, prog)


def fail(message: str, status: int, prog: str = "smalto") -> int:
    """Prints ``prog: error: message`` on stderr; returns ``status``."""
    print(f"{prog}: error: {printable(message)}", file=sys.stderr)
    return status


def note(text: str, prog: str = "smalto") -> None:
    """Prints ``prog: note: text`` on stderr (what the answer alone does not say)."""
    print(f"{prog}: note: {printable(text)}", file=sys.stderr)


def warning(text: str, prog: str = "smalto") -> None:
    """Prints ``prog: warning: text`` on stderr (done, at a cost the user should know)."""
    print(f"{prog}: warning: {printable(text)}", file=sys.stderr)
