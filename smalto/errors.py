"""Errors raised by smalto."""

from __future__ import annotations

import re
import sys
import weakref
from collections.abc import Callable
from types import FrameType
from typing import Protocol, cast

FAILURE_PREFIX = "Failed to infer a possible set of layouts"
# What a message made when first read says of the kernel where the module has changed
# since the pass refused it (its ops, which the diagnosis reads, may be gone).
MODULE_CHANGED = (
    "the module has changed since smalto's pass refused it, and the diagnosis reads its "
    "ops: read the message before changing the module"
)


class _ArgsSlot(Protocol):
    """``BaseException``'s own ``args`` slot, a data descriptor."""

    def __get__(
        self, instance: BaseException, owner: type | None = None, /
    ) -> tuple[object, ...]: ...

    def __set__(self, instance: BaseException, value: tuple[object, ...], /) -> None: ...


# ``InferenceError.args`` is a property over this slot (reading it makes the diagnosis);
# typeshed declares ``BaseException.args`` a plain attribute, not the descriptor it is.
_ARGS = cast(_ArgsSlot, BaseException.__dict__["args"])


class InferenceError(ValueError):
    """A kernel for which no valid layout assignment was found.

    The message always begins with ``FAILURE_PREFIX`` (tools grep for it).
    With a ``phrase`` (JAX 0.12.0.1's own message for this kind of failure,
    itself starting with the prefix), the message is that phrase, then, on the
    next lines, why in smalto's words; without one, ``prefix: reason``.

    A ``phrase`` may be a function that makes it, called when the message is
    first read (JAX's phrase may print an op, which numbers the whole function:
    0.14 ms on a Pallas kernel of a hundred ops, on a path that should raise as
    soon as JAX's pass does). Like a diagnosis, it is made from the module as
    it is when read; where its ops changed since (``Program.unchanged``), both
    say so (``MODULE_CHANGED``) without reading them.

    With ``diagnose``, the reason and the conflict are made when first asked
    for (the message, ``reason``, ``conflict``, ``args``): a diagnosis costs
    many times the inference that failed, and a caller that catches the error
    and goes on (a probe, a sweep over configurations) never reads it.
    ``diagnose`` returns ``(reason, conflict)``; where it fails, the message
    says so after JAX's phrase (the error itself is never lost). With both a
    ``reason`` and ``diagnose``, the message is that reason from the start and
    only the conflict is made when read (``diagnose`` returns the same reason).
    """

    def __init__(
        self,
        reason: str = "",
        *,
        conflict: object | None = None,
        phrase: str | Callable[[], str] | None = None,
        diagnose: Callable[[], tuple[str, object | None]] | None = None,
        code: str | None = None,
    ) -> None:
        self._phrase = phrase
        # What smalto says beyond the diagnosis (a rescue tried in vain), on the message's
        # last lines: see ``say_also``.
        self._notes: tuple[str, ...] = ()
        # The kind of failure (``smalto.basics.codes``) where no conflict report says it: a
        # refusal a rule makes outright (a gather the hardware cannot do).
        self.code = code
        self._reason, self._conflict = reason, conflict
        self._diagnose = diagnose
        # (With ``diagnose`` and a ``reason`` already said, the message says it at once, and
        # only the conflict waits to be read.)
        if callable(phrase):
            # (The message until it is read; reading any of it makes the phrase.)
            super().__init__(FAILURE_PREFIX)
            self._phrase_made = False
        else:
            super().__init__(
                self._message(reason)
                if diagnose is None or reason
                else self._opening() or FAILURE_PREFIX
            )
            self._phrase_made = True

    @property
    def phrase(self) -> str | None:
        """JAX's message for this kind of failure, where it has one (made when first read)."""
        phrase = self._phrase
        if callable(phrase):
            phrase = self._phrase = phrase()
        return phrase

    def _make_phrase(self) -> None:
        """Puts the phrase in the message, where it waited to be read."""
        if not self._phrase_made:
            self._phrase_made = True
            reason = self._reason
            _ARGS.__set__(
                self,
                (self._message(reason) if self._diagnose is None or reason else self._opening(),),
            )

    @property
    def headline(self) -> str | None:
        """The message's first line: JAX's phrase in smalto's words (layouts by name, no
        Python repr, no op printed in MLIR); None without a phrase."""
        phrase = self.phrase
        return None if phrase is None else in_our_words(phrase)

    def _opening(self) -> str | None:
        """The headline, then, where JAX's words differ, JAX's phrase as said (``jax: ``):
        code written against JAX's pass finds it in the message."""
        phrase = self.phrase
        if phrase is None:
            return None
        ours = in_our_words(phrase)
        return ours if ours == phrase else f"{ours}\n{JAX_LABEL}{phrase}"

    def _message(self, reason: str) -> str:
        opening = self._opening()
        if opening is not None:
            said = f"{opening}\n{reason}" if reason else opening
        else:
            said = f"{FAILURE_PREFIX}: {reason}" if reason else FAILURE_PREFIX
        return "\n".join((said, *self._notes))

    @property
    def notes(self) -> tuple[str, ...]:
        """What smalto says beyond the diagnosis (``say_also``), each also on the
        message's last lines."""
        return self._notes

    def say_also(self, note: str) -> None:
        """Says ``note`` on the message's last lines, after the diagnosis (a rescue smalto
        tried in vain). In the message itself, not an exception note (``add_note``): every
        door shows the message (the Pallas route's error quotes it, a tool prints it), few
        show an inner exception's notes."""
        self._notes = (*self._notes, note)
        if self._phrase_made and self._diagnose is None:
            # (A message still to be made says it when made.)
            _ARGS.__set__(self, (f"{_ARGS.__get__(self)[0]}\n{note}",))

    def _resolve(self) -> None:
        diagnose, self._diagnose = self._diagnose, None
        if diagnose is None:
            self._make_phrase()
            return
        try:
            self._reason, self._conflict = diagnose()
        except Exception as error:  # noqa: BLE001 -- the diagnosis never hides the error
            self._reason = f"(smalto could not diagnose it: {type(error).__name__}: {error})"
        self._phrase_made = True
        _ARGS.__set__(self, (self._message(self._reason),))

    @property
    def diagnosed(self) -> bool:
        """Whether the diagnosis has been made (it is made when first asked for)."""
        return self._diagnose is None

    @property
    def reason(self) -> str:
        self._resolve()
        return self._reason

    @property
    def conflict(self) -> object | None:
        """Structured facts about the failure (ops, locations, constraints) for tools;
        ``None`` where there is nothing more to say than the message."""
        self._resolve()
        return self._conflict

    @property
    def args(self) -> tuple[object, ...]:
        self._resolve()
        return _ARGS.__get__(self)

    @args.setter
    def args(self, value: tuple[object, ...]) -> None:
        self._phrase_made = True
        _ARGS.__set__(self, value)

    def __str__(self) -> str:
        if self._diagnose is not None and _copied_while_unwinding():
            # JAX's copy of the message, made as the error unwinds through a traced op:
            # JAX's phrase alone (all JAX's own pass would say); the diagnosis is made
            # when whoever catches the error reads it, not on the way up.
            self._make_phrase()
            return super().__str__()
        self._resolve()
        return super().__str__()

    def __reduce__(self) -> tuple[object, ...]:
        self._resolve()
        return (
            _restored,
            (self._reason, self.phrase, self._notes),
            self.__dict__ | {"_conflict": None},
        )

    def defer(self, more: Callable[[], None]) -> None:
        """Says more when the error is first read: ``more`` restates it (``restate``), as
        a diagnosis made on demand would (a caller that catches it never pays for it).
        A diagnosis still to be made is made first: ``more`` reads what it says."""
        earlier = self._diagnose
        # (Itself named weakly: the error keeps this function, and a cycle through it would
        # be left for the collector wherever the message is never read. It is alive while
        # it is read.)
        me = weakref.ref(self)

        def diagnose() -> tuple[str, object | None]:
            error = me()
            assert error is not None, "a diagnosis is made while its error is read"
            if earlier is not None:
                error._reason, error._conflict = earlier()
            more()
            return error._reason, error._conflict

        self._diagnose = diagnose

    def restate(self, reason: str, conflict: object | None) -> None:
        """Says more after JAX's phrase (a diagnosis that found a fix), keeping the traceback."""
        self._diagnose = None
        self._reason, self._conflict = reason, conflict
        self._phrase_made = True
        self.args = (self._message(reason),)


# The label of the line that says JAX's phrase as JAX's pass says it, where smalto's first
# line says it in smalto's words.
JAX_LABEL = "jax: "

# JAX's phrases print layouts and transforms as Python reprs, and some an op in MLIR's
# text; smalto's first line names them as its other lines do (``smalto.hw.names``).
# Patterns as text, compiled by ``re`` (and kept in its cache) when a message is first
# worded: compiling them at import cost every process that never words one.
_STRIDED = r"WGStridedFragLayout\(shape=(\([\d, ]*\)), vec_size=(\d+)\)"
_SPLAT = r"WGSplatFragLayout\(shape=\([\d, ]*\)\)"
_TILE_TRANSFORM = r"TileTransform\(tiling=\(([\d, ]*)\), rounding=None\)"
# A ref's transforms as JAX prints them: ``(TilingTransform((32, 1)), SwizzleTransform(128))``.
_TRANSFORMS = r"\(((?:(?:TilingTransform\(\([\d, ]*\)\)|SwizzleTransform\(\d+\)),? ?)+)\)"
_TILING = r"TilingTransform\(\(([\d, ]*)\)\)"
_SWIZZLE = r"SwizzleTransform\((\d+)\)"
# `` in %53 = mosaic_gpu.layout_cast x(%52 : ...) <...>.``: the op, printed.
_PRINTED_OP = r" in %[\w#]+ = ([\w.]+)\b.*?(\.?)$"


def in_our_words(phrase: str) -> str:
    """JAX's phrase as smalto says it on a message's first line: a strided layout as
    ``strided ×2 over (64, 128)`` (its own shape said: it may not be the value's), a
    splat as ``splat``, a tiling as ``8×64``, a ref's transforms as ``tiled 32×1 + swizzle
    128``, JAX's typo mended, and an op JAX prints
    whole by its name (the traceback and the lines after say where it is)."""
    if "(" not in phrase and "notcompatible" not in phrase:
        return phrase
    ours = re.sub(_STRIDED, lambda m: f"strided ×{m[2]} over {m[1]}", phrase)
    ours = re.sub(_SPLAT, "splat", ours)
    ours = re.sub(_TILE_TRANSFORM, lambda m: "×".join(m[1].replace(" ", "").split(",")), ours)
    ours = re.sub(_TRANSFORMS, lambda m: _transforms_in_our_words(m[1]), ours)
    ours = ours.replace("notcompatible", "not compatible")
    return re.sub(_PRINTED_OP, lambda m: f" in `{m[1]}`{m[2]}", ours, flags=re.DOTALL)


def _transforms_in_our_words(printed: str) -> str:
    """``TilingTransform((32, 1)), SwizzleTransform(128)`` as ``tiled 32×1 + swizzle 128``."""
    parts = [
        f"tiled {'×'.join(m[1].replace(' ', '').split(','))}" for m in re.finditer(_TILING, printed)
    ]
    parts += [f"swizzle {m[1]}" for m in re.finditer(_SWIZZLE, printed)]
    return " + ".join(parts)


# The module whose exit copies the message of every exception unwinding through a traced
# op (``source_info_util.user_context``, into a ``JaxStackTraceBeforeTransformation``).
_UNWINDING_COPIER = "jax._src.source_info_util"


def _copied_while_unwinding() -> bool:
    """Whether the message is being read by JAX's ``user_context`` as the error unwinds
    (a few frames up: ``traceback.format_exception_only`` and JAX's wrapper of it)."""
    frame: FrameType | None = sys._getframe(2)
    for _ in range(8):
        if frame is None:
            return False
        if frame.f_globals.get("__name__") == _UNWINDING_COPIER:
            return True
        frame = frame.f_back
    return False


def _restored(reason: str, phrase: str | None, notes: tuple[str, ...] = ()) -> InferenceError:
    """An unpickled ``InferenceError``: its words (the conflict's objects do not travel)."""
    error = InferenceError(reason, phrase=phrase)
    for note in notes:
        error.say_also(note)
    return error


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


class StagedThroughSmemWarning(UserWarning):
    """smalto routed a transfer with no optimized plan through a new SMEM buffer (a store
    into it, a load back, in layouts of their own) where the module as written has no
    layouts that lower, as ``infer_layout(..., stage_through_smem=True)`` (the CLI's
    ``--stage-through-smem``) allows; one warning per staged op, at its source line.
    ``staged`` says which op and how many bytes of SMEM it added."""

    def __init__(self, message: str, staged: object = None) -> None:
        super().__init__(message)
        self.staged = staged


class SlowLayoutsWarning(UserWarning):
    """The layouts smalto found for a kernel JAX's own pass finds none for that lower
    cost speed: vectors narrower than JAX gives such values, transfers narrower than a
    bank word, relayouts. Said once per kernel, at the line of the first place, with
    the cause where one is found (a transfer through a transposed view);
    ``report`` lists the places (``smalto.pipeline.speed.SpeedReport``)."""

    def __init__(self, message: str, report: object = None) -> None:
        super().__init__(message)
        self.report = report


class SmaltoOnlyWarning(UserWarning):
    """smalto's pass answered a kernel for which JAX's own pass finds no layouts that its
    lowering accepts (smalto's complete or widened search found them): the kernel compiles
    with smalto installed and fails without it. Said once per kernel line when a kernel
    is lowered with smalto as the pass (``smalto.jax``); ``relayouts`` lists what
    smalto's answer asks of the lowering that JAX's pass did not find
    (``smalto.pipeline.relayouts.Relayout``). ``smalto fix`` looks for the edit that
    makes JAX's own pass accept it."""

    def __init__(self, message: str, relayouts: tuple[object, ...] = ()) -> None:
        super().__init__(message)
        self.relayouts = relayouts
