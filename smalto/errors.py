"""Errors raised by smalto."""

from __future__ import annotations

FAILURE_PREFIX = "Failed to infer a possible set of layouts"


class InferenceError(ValueError):
    """A kernel for which no valid layout assignment was found.

    The message always begins with ``FAILURE_PREFIX`` (tools grep for it).
    With a ``phrase`` (JAX 0.12.0.1's own message for this kind of failure,
    itself starting with the prefix), the message is that phrase, then, on the
    next lines, why in smalto's words; without one, ``prefix: reason``.
    """

    def __init__(
        self, reason: str, *, conflict: object | None = None, phrase: str | None = None
    ) -> None:
        if phrase is not None:
            message = f"{phrase}\n{reason}" if reason else phrase
        else:
            message = f"{FAILURE_PREFIX}: {reason}" if reason else FAILURE_PREFIX
        super().__init__(message)
        self.reason = reason
        self.phrase = phrase
        # Structured facts about the failure (ops, locations, constraints) for
        # tools; ``None`` where there is nothing more to say than the message.
        self.conflict = conflict

    def restate(self, reason: str, conflict: object | None) -> None:
        """Says more after JAX's phrase (a diagnosis that found a fix), keeping the traceback."""
        fresh = InferenceError(reason, conflict=conflict, phrase=self.phrase)
        self.args, self.reason, self.conflict = fresh.args, reason, conflict


class UnitDimRewriteWarning(UserWarning):
    """smalto changed ops of a module that has no layouts as written (the unit-dim
    rewrite, ``smalto.rewrite``); ``rewritten`` lists them (``RewrittenOp``s, in
    program order). ``infer_layout(..., rewrite=False)``, or the CLI's
    ``--no-rewrite``, turns the rewrite off."""

    def __init__(self, message: str, rewritten: tuple[object, ...] = ()) -> None:
        super().__init__(message)
        self.rewritten = rewritten


class UnoptimizedTransferWarning(UserWarning):
    """smalto made a transfer unoptimized (``optimized = false`` on a ``vector_load``,
    ``vector_store`` or ``async_store_smem``) where the module as written has no layouts
    that lower, as ``infer_layout(..., allow_unoptimized=True)`` (the CLI's
    ``--allow-unoptimized``) allows; one warning per changed op, at its source line.
    ``transfer`` says which op, what it costs and the fast alternative."""

    def __init__(self, message: str, transfer: object = None) -> None:
        super().__init__(message)
        self.transfer = transfer
