"""The GPU the end-to-end tests under ``tests/gpu/`` run on, if any."""

from __future__ import annotations

import jax


def gpu_arch() -> tuple[int, int] | None:
    """The compute capability of the first GPU JAX sees, e.g. (9, 0); None without one."""
    try:
        device = jax.devices("gpu")[0]
    except RuntimeError:
        return None
    capability = getattr(device, "compute_capability", None)
    if not capability:
        return None
    major, minor = capability.split(".")
    return int(major), int(minor)
