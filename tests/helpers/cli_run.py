"""Running the ``smalto`` command line in this process, its output captured.

A fresh process pays JAX's import (seconds) each time; the tests that need
one (a closed pipe, what an import loads, no traceback through ``python -m``)
make one, the others call ``smalto.cli.main.main`` here.
"""

from __future__ import annotations

import contextlib
import io
from dataclasses import dataclass
from pathlib import Path

from smalto.cli.main import main


@dataclass(frozen=True)
class Ran:
    status: int
    out: str
    err: str


def run(*args: str | Path) -> Ran:
    """``smalto ARGS`` in this process: exit status, stdout, stderr."""
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        status = main([str(a) for a in args])
    return Ran(status, out.getvalue(), err.getvalue())


def infer_output(path: Path, *args: str) -> str:
    """What ``smalto infer PATH ARGS`` prints (it must succeed)."""
    ran = run("infer", path, *args)
    assert ran.status == 0, ran.err
    return ran.out
