"""What the route's error says of a kernel over the SMEM limit, where JAX refuses it before
smalto's pass runs (a user's own ``jax.jit`` under ``smalto.jax.install()``): the kernel
built again past JAX's check (``launch_room``), its SMEM map's top users at the
kernel's lines, and the changes that bring it under, each lowered again by JAX.

Imported by the hook (``hooks``) on that failure only; it reaches no module that
imports the hook.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from smalto.jax.launch_room import room_for_any_smem


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
