"""Checks on the input before inference: what smalto refuses, and why, in one sentence."""

from __future__ import annotations

from smalto.program import Program


def check_input(program: Program, *, fuel: int, arch: tuple[int, int]) -> None:
    """Raises ValueError (bad arguments) or InferenceError (a module smalto cannot take)."""
    if not isinstance(fuel, int) or fuel <= 0:
        raise ValueError(f"fuel must be a positive integer, got {fuel!r}")
    if tuple(arch) not in ((9, 0), (10, 0)):
        raise ValueError(f"unsupported arch {arch}: smalto targets sm_90 (9, 0) and sm_100 (10, 0)")
