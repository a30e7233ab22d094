"""Lowering a kernel that asks for more SMEM than a block may have, to see what asks for it.

JAX 0.12.0.1 checks a kernel's SMEM against the device's limit before it lowers the
kernel's body: an over-limit kernel leaves no module to read. Within
``room_for_any_smem`` (``smalto.jax.launch_room``: the calling thread's lowerings
pass that check) the kernel is captured again, its SMEM map read (``smalto.smem``)
and the overrun explained: what uses the SMEM at the peak, at the kernel's lines,
and the changes that bring it under, a change of stages lowered again on the
function itself (``smalto.jax.lower``, ``smalto capture``, ``smalto smem``). The
route's error for a user's own ``jax.jit`` says the same from the module alone
(``smalto.jax.kernel_overrun``).
"""

from __future__ import annotations

import functools
import inspect
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

# (The room, made where no module imports the hook back: ``smalto.jax.launch_room``.)
from smalto.jax.launch_room import room_for_any_smem, smem_limit_of_device

if TYPE_CHECKING:
    from smalto.report.smem_map import Verdict
    from smalto.smem.cuts import Cut

__all__ = ["overrun_explained", "relowered", "room_for_any_smem", "smem_limit_of_device"]


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
