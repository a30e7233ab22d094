"""Errors raised by smalto."""

from __future__ import annotations

FAILURE_PREFIX = "Failed to infer a possible set of layouts"


class InferenceError(ValueError):
    """A kernel for which no valid layout assignment was found.

    The message always begins with ``FAILURE_PREFIX`` (tools grep for it) and
    then says why in smalto's own words.
    """

    def __init__(self, reason: str, *, conflict: object | None = None) -> None:
        message = f"{FAILURE_PREFIX}: {reason}" if reason else FAILURE_PREFIX
        super().__init__(message)
        self.reason = reason
        # Structured facts about the failure (ops, locations, constraints) for
        # tools; ``None`` where there is nothing more to say than the message.
        self.conflict = conflict
