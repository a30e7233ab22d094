"""Writing a user's file so that it is never lost: whole or not at all, and never over a
save made since it was read.

Every command that writes a file the user named (``smalto fix`` the script,
``-o FILE`` outputs) writes through ``write_file``: the bytes go to a temporary
file in the same folder (same file system, so the rename is atomic), are
flushed to the disk, and only then take the file's name. A full disk, a crash
or a signal halfway leaves the old file as it was, and the temporary one is
removed. A symlink is followed (the link stays a link, its target is replaced),
and the file keeps its mode (and, as root, its owner). What is no regular file (a
device such as ``/dev/null``, a pipe) is written to as it is, never replaced.

Given what was read (``since``, a ``Snapshot``), the file is checked again
right before the rename, under a lock (``flock`` on the file itself: another
``smalto`` writing it waits, and then sees the file changed). An editor takes
no lock, so the rename is an exchange where the system has one
(``renameat2(RENAME_EXCHANGE)``): the old file is then still at hand under the
temporary name, and if it changed in the instant between the check and the
exchange (a save in place), or another file took its place (a save by rename),
the exchange is undone and the save kept. Where the system has no exchange,
a save in place that landed in that instant is put back.

A read-only file (no write permission in its mode bits, for whoever writes;
as root, none at all) is refused rather than replaced: root may replace any
file, but a file made read-only is one its owner asked not to have written.

The file keeps its identity: its mode, owner (as root) and extended attributes
(ACLs, security labels, ``user.*`` ones) are copied onto the temporary file
before the rename. Where the rename would lose something (the file has other
hard links, which would keep the old bytes; an attribute cannot be copied), the
file is written in place instead: a copy of the old bytes first (a full disk
fails there, the file untouched), the space for the new ones reserved, then
the bytes, then the copy removed; a write that fails on the way puts the old
bytes back.

A name for one of this process's own file descriptors (``-o /dev/stdout``,
``/dev/stderr``, ``/dev/fd/N``, ``/proc/self/fd/N``) is written through that
descriptor, as any program writes to its output: appended where the shell
opened it to append (``>> build.log``), into a pipe or a socket as it comes.
"""

from __future__ import annotations

import contextlib
import ctypes
import errno
import fcntl
import functools
import os
import stat
import sys
import tempfile
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path

_CHUNK = 1 << 16


class NotWritten(OSError):
    """The file was not written, and is as it was (or as the user last saved it).
    ``strerror`` says why (a command's ``cannot write 'FILE': ...`` reads it, as for any
    ``OSError``), ``filename`` names the file."""

    code = errno.EPERM

    def __init__(self, path: object, why: str) -> None:
        super().__init__(self.code, why, str(path))

    def __str__(self) -> str:
        return f"{self.filename}: {self.strerror}"


class ReadOnly(NotWritten):
    """The file's mode bits forbid writing it."""

    code = errno.EACCES


class ChangedSinceRead(NotWritten):
    """The file changed after it was read: not written."""

    code = errno.EAGAIN


class SavedWhileWriting(NotWritten):
    """A save landed between the last check and the rename: the save is kept."""

    code = errno.EAGAIN


@dataclass(frozen=True)
class Snapshot:
    """A file as read: its bytes, and which file (device and inode) they came from."""

    path: Path
    data: bytes
    device: int
    inode: int


def snapshot(path: str | os.PathLike[str]) -> Snapshot:
    """``path`` read whole, with which file it was (raises ``OSError``)."""
    with open(path, "rb") as file:
        data = file.read()
        status = os.fstat(file.fileno())
    return Snapshot(Path(path), data, status.st_dev, status.st_ino)


def real_path(path: str | os.PathLike[str]) -> Path:
    """The file ``path`` names, symlinks followed: the one to replace."""
    return Path(os.path.realpath(path))


def read_only(path: str | os.PathLike[str]) -> bool:
    """Whether ``path``'s mode bits forbid whoever runs this to write it (root: no write
    bit at all). The mode bits, not ``os.access``: root is allowed everything."""
    try:
        status = os.stat(path)
    except OSError:
        return False
    mode = status.st_mode
    if os.geteuid() == 0:
        return not mode & (stat.S_IWUSR | stat.S_IWGRP | stat.S_IWOTH)
    if status.st_uid == os.geteuid():
        return not mode & stat.S_IWUSR
    if status.st_gid == os.getegid() or status.st_gid in os.getgroups():
        return not mode & stat.S_IWGRP
    return not mode & stat.S_IWOTH


def write_file(
    path: str | os.PathLike[str], data: bytes | str, *, since: Snapshot | None = None
) -> Path:
    """Writes ``data`` (text as UTF-8) to ``path`` atomically; returns the file written
    (symlinks followed). With ``since``, only if the file is still what was read.

    Raises ``ReadOnly``, ``ChangedSinceRead``, ``SavedWhileWriting`` (all
    ``NotWritten``, an ``OSError``), or another ``OSError`` (a full disk, no
    permission...), the file unchanged in every case."""
    payload = data.encode("utf-8") if isinstance(data, str) else data
    descriptor = own_descriptor(path)
    if descriptor is not None:
        _write_to_descriptor(descriptor, payload)
        return Path(path)
    target = real_path(path)
    if read_only(target):
        raise ReadOnly(path, "it is read-only")
    existing = _status(target)
    if existing is not None and not stat.S_ISREG(existing.st_mode):
        # A device, a pipe (``-o /dev/stdout``, ``/dev/null``, a FIFO): written to, as any
        # program writes to it. Renaming a file over it would replace the device itself.
        with open(target, "wb") as stream:
            stream.write(payload)
        return target
    with _locked(path, target if since is not None else None) as held:
        if since is not None:
            _check_unchanged(path, target, since, held)
        temporary = _temporary_beside(target)
        try:
            if existing is not None and existing.st_nlink > 1:
                _fill(temporary, _read_bytes(target), existing)  # the old bytes, kept
                if since is not None:
                    _check_unchanged(path, target, since, held)
                _write_in_place(target, payload, temporary)
            else:
                kept = _fill(temporary, payload, existing, target if existing else None)
                if since is not None:
                    _check_unchanged(path, target, since, held)  # again, right before the rename
                if kept:
                    _put_in_place(path, temporary, target, since, held, existing is not None)
                else:  # an attribute the rename would lose: in place, the old bytes kept aside
                    _fill(temporary, _read_bytes(target), existing)
                    _write_in_place(target, payload, temporary)
        finally:
            with contextlib.suppress(FileNotFoundError):
                os.unlink(temporary)
    _sync_folder(target.parent)
    return target


# The names of a process's own descriptors: ``/dev/stdout`` (1), ``/dev/stderr`` (2),
# ``/dev/fd/N``, ``/proc/self/fd/N``.
_OWN_DESCRIPTORS = {"/dev/stdin": 0, "/dev/stdout": 1, "/dev/stderr": 2}
_DESCRIPTOR_FOLDERS = ("/dev/fd/", "/proc/self/fd/")


def own_descriptor(path: str | os.PathLike[str]) -> int | None:
    """The descriptor of this process that ``path`` names (``/dev/stdout``: 1), where it
    names one that is open; else None."""
    name = os.path.normpath(os.fspath(path))
    number = _OWN_DESCRIPTORS.get(name)
    for folder in _DESCRIPTOR_FOLDERS:
        if name.startswith(folder) and name[len(folder) :].isdigit():
            number = int(name[len(folder) :])
    if number is None:
        return None
    try:
        os.fstat(number)
    except OSError:
        return None  # not open here: the name says what the system says of it
    return number


def _write_to_descriptor(descriptor: int, payload: bytes) -> None:
    """``payload`` written through ``descriptor``, after what Python's own streams on it
    hold (so that the order of the output is the order it was made in)."""
    for stream in (sys.stdout, sys.stderr):
        with contextlib.suppress(AttributeError, OSError, ValueError):
            if stream is not None and stream.fileno() == descriptor:
                stream.flush()
    view = memoryview(payload)
    while view:
        view = view[_write(descriptor, view) :]


def _read_bytes(target: Path) -> bytes:
    with open(target, "rb") as file:
        return file.read()


def _write_in_place(target: Path, payload: bytes, kept: Path) -> None:
    """``payload`` written over ``target``'s own bytes (its inode, hence its hard links and
    attributes, stay), the old bytes in ``kept`` meanwhile. The space is reserved before
    any byte changes (a full disk fails there); a write that fails halfway puts the old
    bytes back."""
    old = kept.read_bytes()
    descriptor = os.open(target, os.O_WRONLY | os.O_CLOEXEC)
    try:
        if len(payload) > len(old):
            with contextlib.suppress(AttributeError):
                _reserve(descriptor, len(payload))
        try:
            _write_at_start(descriptor, payload)
            os.ftruncate(descriptor, len(payload))
            os.fsync(descriptor)
        except BaseException:
            _write_at_start(descriptor, old)
            os.ftruncate(descriptor, len(old))
            os.fsync(descriptor)
            raise
    finally:
        os.close(descriptor)


def _reserve(descriptor: int, size: int) -> None:
    try:
        os.posix_fallocate(descriptor, 0, size)
    except OSError as error:
        if error.errno in (errno.EOPNOTSUPP, errno.EINVAL, errno.ENOSYS):
            return  # a file system that reserves nothing ahead: the write will say
        raise


def _write_at_start(descriptor: int, payload: bytes) -> None:
    view, offset = memoryview(payload), 0
    while offset < len(payload):
        offset += os.pwrite(descriptor, view[offset:], offset)


def _copy_attributes(source: Path, descriptor: int) -> bool:
    """``source``'s extended attributes (ACLs, security labels, ``user.*``) set on the file
    open as ``descriptor``; False where one could not be (the rename would lose it)."""
    try:
        names = os.listxattr(source)
    except (AttributeError, OSError):
        return True  # a system or file system with no extended attributes: none to lose
    for name in names:
        try:
            os.setxattr(descriptor, name, os.getxattr(source, name))
        except OSError:
            with contextlib.suppress(OSError):
                if os.getxattr(descriptor, name) == os.getxattr(source, name):
                    continue  # given by the folder (an inherited ACL): the same already
            return False
    return True


def _status(path: Path) -> os.stat_result | None:
    try:
        return os.stat(path)
    except FileNotFoundError:
        return None


@contextlib.contextmanager
def _locked(shown: object, target: Path | None) -> Iterator[int | None]:
    """An exclusive ``flock`` on ``target`` while the block runs (its descriptor, opened
    read-only: it also reads the file as it is when the block checks); None without."""
    if target is None:
        yield None
        return
    try:
        descriptor = os.open(target, os.O_RDONLY | os.O_CLOEXEC)
    except FileNotFoundError:
        raise ChangedSinceRead(shown, "it was removed since it was read") from None
    try:
        fcntl.flock(descriptor, fcntl.LOCK_EX)
        yield descriptor
    finally:
        os.close(descriptor)  # releases the lock


def _check_unchanged(shown: object, target: Path, since: Snapshot, held: int | None) -> None:
    """Raises ``ChangedSinceRead`` unless the name still holds the file read, with the
    same bytes."""
    now = _status(target)
    if (
        now is None
        or held is None
        or (now.st_dev, now.st_ino) != (since.device, since.inode)
        or _read_all(held) != since.data
    ):
        raise ChangedSinceRead(shown, "it changed since it was read")


def _read_all(descriptor: int) -> bytes:
    chunks, offset = [], 0
    while chunk := os.pread(descriptor, _CHUNK, offset):
        chunks.append(chunk)
        offset += len(chunk)
    return b"".join(chunks)


def _temporary_beside(target: Path) -> Path:
    descriptor, name = tempfile.mkstemp(
        prefix=f".{target.name}.", suffix=".smalto-tmp", dir=target.parent
    )
    os.close(descriptor)
    return Path(name)


def _fill(
    temporary: Path,
    payload: bytes,
    existing: os.stat_result | None,
    attributes_of: Path | None = None,
) -> bool:
    """The bytes written and flushed to the disk, with the old file's mode and owner (and
    ``attributes_of``'s extended attributes); False where an attribute could not be
    copied."""
    descriptor = os.open(temporary, os.O_WRONLY | os.O_TRUNC | os.O_CLOEXEC)
    copied = True
    try:
        view = memoryview(payload)
        while view:
            view = view[_write(descriptor, view) :]
        if existing is not None:
            os.fchmod(descriptor, stat.S_IMODE(existing.st_mode))
            if os.geteuid() == 0:
                with contextlib.suppress(OSError):
                    os.fchown(descriptor, existing.st_uid, existing.st_gid)
        else:
            os.fchmod(descriptor, 0o666 & ~_umask())
        if attributes_of is not None:
            copied = _copy_attributes(attributes_of, descriptor)
        os.fsync(descriptor)
    finally:
        os.close(descriptor)
    return copied


def _write(descriptor: int, view: memoryview) -> int:
    return os.write(descriptor, view)


def _umask() -> int:
    mask = os.umask(0o022)
    os.umask(mask)
    return mask


def _put_in_place(
    shown: object,
    temporary: Path,
    target: Path,
    since: Snapshot | None,
    held: int | None,
    exists: bool,
) -> None:
    """The temporary file renamed to ``target``: exchanged with it where the system can
    (then undone if what it replaced is not what was read), else replaced."""
    if since is not None and exists and _exchange(temporary, target):
        replaced = _status(temporary)  # what ``target`` held at the instant of the exchange
        if (
            replaced is None
            or (replaced.st_dev, replaced.st_ino) != (since.device, since.inode)
            or held is None
            or _read_all(held) != since.data
        ):
            _exchange(temporary, target)  # the save back in place, whole
            raise _saved_meanwhile(shown)
        return
    os.replace(temporary, target)
    if since is not None and held is not None and _read_all(held) != since.data:
        # A save in place landed on the old file after the check: it is no longer at
        # its name, but still open here; put it back.
        _restore(target, _read_all(held))
        raise _saved_meanwhile(shown)


def _saved_meanwhile(shown: object) -> SavedWhileWriting:
    return SavedWhileWriting(shown, "it was saved while being written; the save is kept")


def _restore(target: Path, saved: bytes) -> None:
    temporary = _temporary_beside(target)
    try:
        _fill(temporary, saved, _status(target))
        os.replace(temporary, target)
    finally:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(temporary)


_RENAME_EXCHANGE = 2
_AT_FDCWD = -100


def _exchange(first: Path, second: Path) -> bool:
    """Swaps the files two names hold, atomically; False where the system cannot
    (no ``renameat2``, or a file system without exchange)."""
    renameat2 = _renameat2()
    if renameat2 is None:
        return False
    result = renameat2(
        _AT_FDCWD, os.fsencode(first), _AT_FDCWD, os.fsencode(second), _RENAME_EXCHANGE
    )
    if result == 0:
        return True
    code = ctypes.get_errno()
    if code in (errno.ENOSYS, errno.EINVAL, errno.EOPNOTSUPP):
        return False
    raise OSError(code, os.strerror(code), str(second))


@functools.cache
def _renameat2() -> Callable[..., int] | None:
    """glibc's ``renameat2`` (Linux), or None."""
    try:
        function = ctypes.CDLL(None, use_errno=True).renameat2
    except (AttributeError, OSError):
        return None
    function.argtypes = [
        ctypes.c_int,
        ctypes.c_char_p,
        ctypes.c_int,
        ctypes.c_char_p,
        ctypes.c_uint,
    ]
    function.restype = ctypes.c_int
    return function


def _sync_folder(folder: Path) -> None:
    """The rename itself flushed to the disk (best effort: not every system can)."""
    with contextlib.suppress(OSError):
        descriptor = os.open(folder, os.O_RDONLY | os.O_CLOEXEC)
        try:
            os.fsync(descriptor)
        finally:
            os.close(descriptor)
