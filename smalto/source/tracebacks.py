"""A Python traceback that ends at the kernel line an op came from.

JAX's pass raises its unsatisfiability errors with a traceback rebuilt from
the culprit op's location, so that a Pallas author's debugger, IDE and
`traceback.print_exc` land on their own line (e.g. the `layout_cast` that
cannot be honoured) rather than inside the pass. smalto does the same, and
also for plain file locations (``loc("kernel.py":22:8)``), which JAX's
rebuilding does not read.
"""

from __future__ import annotations

import functools
import os
import types

from jax._src import traceback_util
from jax._src.lib import xla_client
from jax._src.lib.mlir import ir

from smalto.source.locations import frames


def traceback_for(location: ir.Location, op_name: str) -> types.TracebackType | None:
    """Frames for each file position of ``location`` (innermost last, as Python prints
    them); ``None`` when it names no file, or only JAX's own."""
    # "-" is the parser's name for text without a file: no frame to show for it.
    found = [(name, position) for name, position in frames(location) if position.file != "-"]
    if not found:
        return None
    try:
        # Drops frames in JAX's own sources, as JAX does for its errors.
        kept = [(name, position) for name, position in found if _users_file(position.file)]
        if not kept:
            return None
        return xla_client.Traceback.traceback_from_frames(
            [
                xla_client.Frame(position.file, name or op_name, -1, position.line)
                for name, position in kept
            ]
        )
    except Exception:  # noqa: BLE001 -- a traceback is a courtesy: never hide the error
        return None


@functools.cache
def _users_file(path: str) -> bool:
    """Whether a frame in ``path`` is shown: in none of the paths JAX excludes from its
    tracebacks (its own sources), as ``traceback_util.include_filename`` decides it.

    JAX's test compares the path with each of some thirty excluded paths, and where
    the path is not under one, asks whether their common ancestor is that path by two
    ``stat`` calls (a symbolic link): 0.3 ms at a process's first refusal, which JAX's
    own pass raises in under one. The same answer with each excluded path's kind read
    once per process: a file is never the same as a directory above it, so only the
    excluded directories (a handful) are compared by ``stat``.
    """
    target = os.path.abspath(path)
    for excluded in traceback_util._exclude_paths:
        prefix = os.path.abspath(excluded)
        if target == prefix or target.startswith(prefix.rstrip(os.sep) + os.sep):
            return False
        if _is_directory(prefix) and _same_file(_common(target, prefix), prefix):
            return False
    return True


def _common(path: str, prefix: str) -> str | None:
    try:
        return os.path.commonpath([path, prefix])
    except ValueError:  # (different drives)
        return None


@functools.lru_cache(maxsize=256)
def _is_directory(path: str) -> bool:
    """Whether an excluded path names a directory (read once per process)."""
    return os.path.isdir(path)


def _same_file(path: str | None, other: str) -> bool:
    """``os.path.samefile``, False where either is missing."""
    if path is None:
        return False
    try:
        return os.path.samefile(path, other)
    except OSError:
        return False


# The attribute of an error that says how many frames at the end of its traceback are the
# kernel's (made by ``with_op_traceback``): frames of the pass that raised it, and of its
# callers, come before them as the error unwinds.
_KERNEL_FRAMES = "_smalto_kernel_frames"


def with_op_traceback(error: BaseException, operation: ir.Operation, op_name: str) -> BaseException:
    """``error`` carrying the traceback of ``operation``'s source, when it has one."""
    tb = traceback_for(operation.location, op_name)
    if tb is not None:
        error.__traceback__ = tb
        setattr(error, _KERNEL_FRAMES, _length(tb))
    return error


def repoint_traceback(error: BaseException, operation: ir.Operation, op_name: str) -> None:
    """Makes the traceback of ``error``, raised already, end at ``operation``'s source
    instead of the kernel line it ended at (the diagnosis found the line to fix): the
    frames it unwound through are kept."""
    tb = traceback_for(operation.location, op_name)
    if tb is None:
        return
    old = getattr(error, _KERNEL_FRAMES, 0)
    nodes: list[types.TracebackType] = []
    node = error.__traceback__
    while node is not None:
        nodes.append(node)
        node = node.tb_next
    kept = len(nodes) - old
    if kept <= 0:
        error.__traceback__ = tb
    else:
        nodes[kept - 1].tb_next = tb
    setattr(error, _KERNEL_FRAMES, _length(tb))


def _length(tb: types.TracebackType | None) -> int:
    count = 0
    while tb is not None:
        count += 1
        tb = tb.tb_next
    return count
