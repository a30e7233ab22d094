"""Lowering a kernel that asks for more SMEM than a block may have, to see what asks for it.

JAX 0.12.0.1 checks a kernel's SMEM against the device's limit as it opens the
launch (``mosaic_gpu.core._launch``: ``Mosaic GPU kernel exceeds available shared
memory``), before it lowers the kernel's body: an over-limit kernel leaves no module
to read. ``room_for_any_smem`` lets the calling thread's lowering past that check
(the device it reads reports room for any size), so that its module reaches layout
inference and the module can be captured, its SMEM map read (``smalto.smem``) and
the overrun explained. Other threads see the real devices; the real limit is
``smem_limit_of_device``.

The check reads ``jax.local_devices()[0].shared_memory_per_block_optin`` through
the ``jax`` name of ``mosaic_gpu.core``: that name is given, once, a stand-in for
``jax`` that answers ``local_devices`` for the calling thread only while it is
inside ``room_for_any_smem``, and is ``jax`` itself for everything else.
"""

from __future__ import annotations

import contextlib
import functools
import inspect
import threading
from collections.abc import Callable, Iterator
from types import ModuleType
from typing import TYPE_CHECKING, Any

import jax

if TYPE_CHECKING:
    from smalto.report.smem_map import Verdict
    from smalto.smem.cuts import Cut

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


def overrun_explained(
    fn: Callable[..., Any],
    args: tuple[Any, ...],
    arch: tuple[int, int] | None,
    raised: BaseException,
) -> str | None:
    """Where ``raised`` is JAX's ``Mosaic GPU kernel exceeds available shared memory``:
    ``fn(*args)`` lowered again past the check, and the first kernel over the limit
    explained (what uses its SMEM at the peak, at its lines; the verified changes that
    bring it under). None for any other failure, or where the lowering again fails."""
    from smalto.report.smem_map import JAX_PHRASE

    if JAX_PHRASE not in str(raised):
        return None
    from smalto.basics.mlir import in_context
    from smalto.jax.capture import capture
    from smalto.report.smem_map import lowered_cuts, over_limit_text
    from smalto.smem.allocations import read_smem_map
    from smalto.smem.cuts import smem_cuts

    try:
        with room_for_any_smem():
            captured = capture(fn, *args, arch=arch, by="smalto")
    except Exception:  # noqa: BLE001 -- the explanation is extra; JAX's error stands
        return None
    for kernel in captured:
        module = kernel.module()
        with in_context(module):
            smem = read_smem_map(module, kernel.arch)
            if not smem.over:
                continue
            cuts = smem_cuts(smem, module, kernel.arch)
            verdicts = relowered(fn, args, arch, cuts, lowered_cuts(cuts, kernel.arch))
            # (The first line is JAX's own, which the caller shows already.)
            text = over_limit_text(smem, cuts, verdicts)
            return text.split("\n", 1)[1]
    return None


def kernel_overrun_explained(
    lower_kernel: Callable[..., Any],
    args: tuple[Any, ...],
    kwargs: dict[str, Any],
    raised: BaseException,
) -> str | None:
    """Where ``raised`` is JAX's ``Mosaic GPU kernel exceeds available shared memory``
    from ``lower_kernel(*args, **kwargs)`` (JAX's ``core._lower_as_gpu_kernel``, as the
    route sees a user's own ``jax.jit``): the kernel built again past the check, and what
    uses its SMEM at the peak, at its lines, and the changes that bring it under, each
    lowered again by JAX. None for any other failure, or where building it again fails.
    (No function to lower again here: a cut of stages is verified on the module only.)"""
    from smalto.report.smem_map import JAX_PHRASE

    if JAX_PHRASE not in str(raised):
        return None
    from jax._src.lib.mlir import passmanager
    from jax.experimental.mosaic.gpu import utils

    from smalto.basics.mlir import in_context
    from smalto.report.smem_map import lowered_cuts, over_limit_text
    from smalto.smem.allocations import read_smem_map
    from smalto.smem.cuts import smem_cuts

    try:
        with room_for_any_smem():
            module = lower_kernel(*args, **kwargs)[0]
        with in_context(module):
            # The module as inference would have had it (``core.lower_mgpu_module``'s
            # clean-up first), so the map reads what ``smalto.jax.capture`` reads.
            cleanup = passmanager.PassManager.parse("builtin.module(canonicalize,cse)")
            cleanup.enable_verifier(False)
            cleanup.run(module.operation)
            major, minor = utils._infer_arch()
            arch = (int(major), int(minor))
            smem = read_smem_map(module, arch)
            if not smem.over:
                return None
            cuts = smem_cuts(smem, module, arch)
            text = over_limit_text(smem, cuts, lowered_cuts(cuts, arch))
    except Exception:  # noqa: BLE001 -- the explanation is extra; JAX's error stands
        return None
    # (The first line is JAX's own, which the caller says already.)
    return text.split("\n", 1)[1]


_STEPS = "max_concurrent_steps"


def relowered(
    fn: Callable[..., Any],
    args: tuple[Any, ...],
    arch: tuple[int, int] | None,
    cuts: list[Cut],
    verdicts: list[Verdict],
) -> list[Verdict]:
    """``verdicts``, where a cut of stages could be made on ``fn`` itself (it takes
    ``max_concurrent_steps``), replaced by the kernel lowered again with it."""
    return [
        _lowered_with_fewer_stages(fn, args, arch, cut, cut.changed.limit) or verdict
        for cut, verdict in zip(cuts, verdicts, strict=True)
    ]


def _lowered_with_fewer_stages(
    fn: Callable[..., Any],
    args: tuple[Any, ...],
    arch: tuple[int, int] | None,
    cut: Cut,
    limit: int,
) -> Verdict | None:
    """Where ``fn`` takes the pipeline's stages as a keyword (``max_concurrent_steps``): the
    kernel lowered again with the cut's stages, and whether it then takes what the cut says.
    None where ``fn`` takes no such keyword, or the cut is of another kind."""
    from smalto.basics.mlir import in_context
    from smalto.jax.capture import capture
    from smalto.report.smem_map import Verdict
    from smalto.smem.allocations import read_smem_map
    from smalto.smem.cuts import FEWER_STAGES

    if cut.kind != FEWER_STAGES or cut.stages is None:
        return None
    try:
        takes = _STEPS in inspect.signature(fn).parameters
    except (TypeError, ValueError):
        takes = False
    if not takes:
        return None
    changed = functools.partial(fn, **{_STEPS: cut.stages})
    try:
        with room_for_any_smem():
            captured = capture(changed, *args, arch=arch, by="smalto")
    except Exception:  # noqa: BLE001 -- the map's verdict stands
        return None
    for kernel in captured:
        module = kernel.module()
        with in_context(module):
            total = read_smem_map(module, kernel.arch).total
        if total == cut.total:
            fits = "within" if total <= limit else "still over"
            return Verdict(
                True,
                relowered=f"the kernel lowered again with {_STEPS}={cut.stages} takes "
                f"{total} bytes, {fits} the limit",
            )
    return None
