"""Letting one thread's lowerings past JAX's check of a kernel's SMEM against the device's
limit.

JAX 0.12.0.1 checks a kernel's SMEM against the device's limit as it opens the
launch (``mosaic_gpu.core._launch``: ``Mosaic GPU kernel exceeds available shared
memory``), before it lowers the kernel's body: an over-limit kernel leaves no module
to read. ``room_for_any_smem`` lets the calling thread's lowering past that check
(the device it reads reports room for any size), so that its module is built and
its SMEM map can be read (``smalto.smem``). Other threads see the real devices; the
real limit is ``smem_limit_of_device``.

The check reads ``jax.local_devices()[0].shared_memory_per_block_optin`` through
the ``jax`` name of ``mosaic_gpu.core``: that name is given, once, a stand-in for
``jax`` that answers ``local_devices`` for the calling thread only while it is
inside ``room_for_any_smem``, and is ``jax`` itself for everything else.
"""

from __future__ import annotations

import contextlib
import threading
from collections.abc import Iterator
from types import ModuleType
from typing import Any

import jax

_ROOM = 1 << 31  # more than any kernel asks for
_LOCK = threading.Lock()


class _Inside(threading.local):
    """How deep the calling thread is in ``room_for_any_smem`` blocks."""

    depth = 0


_INSIDE = _Inside()


class _RoomyDevice:
    """A device as ``core._launch`` reads it: room for any SMEM."""

    shared_memory_per_block_optin = _ROOM

    def __init__(self, device: Any) -> None:
        self._device = device

    def __getattr__(self, name: str) -> Any:
        return getattr(self._device, name)


class _JaxForLaunch(ModuleType):
    """``jax``, but for ``local_devices`` on a thread inside ``room_for_any_smem``."""

    def __init__(self) -> None:
        super().__init__("jax")

    def __getattr__(self, name: str) -> Any:
        value = getattr(jax, name)
        if name == "local_devices" and _INSIDE.depth:
            return lambda *args, **kwargs: [_RoomyDevice(d) for d in value(*args, **kwargs)]
        return value


def _install() -> None:
    from jax.experimental.mosaic.gpu import core

    with _LOCK:
        if not isinstance(core.jax, _JaxForLaunch):
            core.jax = _JaxForLaunch()


@contextlib.contextmanager
def room_for_any_smem() -> Iterator[None]:
    """Within the block, this thread's lowerings pass JAX's SMEM limit check."""
    _install()
    _INSIDE.depth = _INSIDE.depth + 1
    try:
        yield
    finally:
        _INSIDE.depth -= 1


def smem_limit_of_device() -> int:
    """The limit JAX checks a kernel's SMEM against: the device's, else 227 KiB (JAX's
    default without a GPU), less any test bound JAX sets."""
    from jax.experimental.mosaic.gpu import core

    device = jax.local_devices()[0]
    limit = int(getattr(device, "shared_memory_per_block_optin", 227 * 1024))
    bound = getattr(core, "_SMEM_SIZE_BOUND", None)
    return limit if bound is None else min(limit, int(bound))
