"""Routing JAX's layout-inference calls through one dispatcher.

JAX 0.12.0.1 runs its pass from two places, and both look the function up by
attribute at call time:

- ``jax.experimental.mosaic.gpu.core.lower_mgpu_module``, the one path every
  warpgroup kernel takes (the Pallas Mosaic GPU lowering and ``as_gpu_kernel``),
  calls ``layout_inference.infer_layout(module, arch=utils._infer_arch())``;
- Pallas' layout rules for explicitly laid-out arrays
  (``jax._src.pallas.mosaic_gpu.layout_rules``) infer small probe modules with
  ``jax.experimental.mosaic.gpu.infer_layout(module)``.

Replacing those two attributes with ``dispatch`` is therefore enough, and
putting the saved originals back restores JAX exactly. ``utils._infer_arch`` is
replaced too, but only while an architecture is forced (``forced_arch``): every
reader of the target architecture (the module's ``mosaic_gpu.arch_*``
attributes, the arch handed to inference, Pallas' pipelining) asks it at call
time.

Everything here is process-wide, as the patch itself is: one ``_Hooks``
instance records who needs the patch (smalto enabled, observers, a forced
arch) and the options smalto's pass gets (``set_options``: keywords of
``smalto.infer_layout`` beyond the fuel and arch JAX's call gives); the
attributes are patched while anyone does and restored as soon as no one does.
"""

from __future__ import annotations

import contextlib
import functools
import inspect
import threading
import warnings
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field
from types import ModuleType
from typing import Any, Literal, cast

import jax
from jax._src.lib.mlir import ir

Pass = Literal["smalto", "jax"]


@dataclass(frozen=True)
class InferenceCall:
    """One call JAX made to its layout-inference pass while hooked."""

    module: ir.Module
    arch: tuple[int, int]
    fuel: int | None  # None: the caller did not pass one
    inferred_by: Pass


class Observer:
    """Sees every hooked inference call: before the pass runs and after it.

    ``after`` gets the exception the pass raised, or ``None`` on success; it is
    called before the exception propagates into JAX.
    """

    def before(self, call: InferenceCall) -> None:
        del call

    def after(self, call: InferenceCall, error: BaseException | None) -> None:
        del call, error


def _jax_modules() -> tuple[ModuleType, ModuleType, ModuleType]:
    """JAX's package namespace, its inference module, and the module owning ``_infer_arch``."""
    from jax.experimental.mosaic import gpu as mgpu
    from jax.experimental.mosaic.gpu import layout_inference, utils

    return mgpu, layout_inference, utils


@dataclass
class _Hooks:
    use_smalto: bool = False
    # Keywords for smalto.infer_layout on every call (``set_options``).
    options: dict[str, object] = field(default_factory=dict)
    observers: list[Observer] = field(default_factory=list)
    arch: tuple[int, int] | None = None
    # (module, attribute) -> JAX's original object, while patched.
    saved: dict[tuple[ModuleType, str], object] = field(default_factory=dict)
    lock: threading.RLock = field(default_factory=threading.RLock)
    # Whether smalto's pass has answered (layouts written) since smalto last cleared JAX's
    # caches: only then can they hold a lowering made with its layouts (a pass that
    # raises leaves nothing in them: JAX caches what a lowering returns).
    smalto_answered: bool = False

    def needed(self) -> bool:
        return self.use_smalto or bool(self.observers) or self.arch is not None

    def sync(self) -> None:
        """Patches or restores JAX's attributes to match who needs them."""
        mgpu, layout_inference, utils = _jax_modules()
        wanted: dict[tuple[ModuleType, str], object] = {}
        if self.needed():
            wanted[(mgpu, "infer_layout")] = dispatch
            wanted[(layout_inference, "infer_layout")] = dispatch
        if self.arch is not None:
            wanted[(utils, "_infer_arch")] = _forced_arch
        for key in list(self.saved):
            if key not in wanted:
                _restore(key, self.saved.pop(key))
        for key, replacement in wanted.items():
            module, name = key
            if key not in self.saved:
                self.saved[key] = getattr(module, name)
                setattr(module, name, replacement)

    def original(self, module: ModuleType, name: str) -> object:
        return self.saved.get((module, name), getattr(module, name))


def _restore(key: tuple[ModuleType, str], original: object) -> None:
    module, name = key
    current = getattr(module, name)
    if current is dispatch or current is _forced_arch:
        setattr(module, name, original)
        return
    # Someone replaced the attribute after us; clobbering their patch would be
    # worse than leaving ours out of the chain.
    warnings.warn(
        f"smalto.jax: {module.__name__}.{name} was replaced by someone else while "
        "smalto's hook was installed; leaving it as it is",
        RuntimeWarning,
        stacklevel=2,
    )


_HOOKS = _Hooks()


def _forced_arch() -> tuple[int, int]:
    arch = _HOOKS.arch
    assert arch is not None, "the architecture hook is only installed while forced"
    return arch


def jax_infer_layout() -> Callable[..., None]:
    """JAX's own ``infer_layout``, whether or not the hook is installed."""
    mgpu, _, _ = _jax_modules()
    return cast(Callable[..., None], _HOOKS.original(mgpu, "infer_layout"))


def jax_infer_arch() -> Callable[[], tuple[int, int]]:
    """JAX's own ``utils._infer_arch``, whether or not an architecture is forced."""
    _, _, utils = _jax_modules()
    return cast(Callable[[], tuple[int, int]], _HOOKS.original(utils, "_infer_arch"))


def dispatch(module: ir.Module, *, fuel: int | None = None, arch: tuple[int, int] = (9, 0)) -> None:
    """Stands in for JAX's ``infer_layout`` while the hook is installed.

    Runs ``smalto.infer_layout`` with the same module, fuel and arch while
    smalto is enabled (smalto's default fuel when the caller passed none; JAX
    never does), and the options set (``set_options``); JAX's own pass
    otherwise; and tells the observers.
    """
    with _HOOKS.lock:
        use_smalto = _HOOKS.use_smalto
        # Keywords ``set_options`` checked by name; their values reach the pass as given.
        options: dict[str, Any] = dict(_HOOKS.options)
        observers = list(_HOOKS.observers)
    # The arch may come as a list: the observers and the pass get a tuple.
    arch = cast(tuple[int, int], tuple(arch))
    call = InferenceCall(module, arch, fuel, "smalto" if use_smalto else "jax")
    for observer in observers:
        observer.before(call)
    try:
        if use_smalto:
            import smalto
            from smalto.infer import saying_smalto_only

            # (A kernel only smalto's layouts compile is said, at its line, once.)
            with saying_smalto_only():
                if fuel is None:
                    smalto.infer_layout(module, arch=call.arch, **options)
                else:
                    smalto.infer_layout(module, fuel=fuel, arch=call.arch, **options)
            _HOOKS.smalto_answered = True
        else:
            original = jax_infer_layout()
            if fuel is None:
                original(module, arch=call.arch)
            else:
                original(module, fuel=fuel, arch=call.arch)
    except BaseException as error:
        for observer in observers:
            observer.after(call, error)
        raise
    for observer in observers:
        observer.after(call, None)


def set_smalto(use: bool) -> bool:
    """Turns routing to smalto on or off; returns the previous setting.

    Also clears JAX's compilation caches when the setting changes, so kernels
    lowered before are lowered again with the pass now chosen: turning smalto
    on, always (JAX's pass may have run unhooked); turning it off, where
    smalto's pass has answered since (``_smalto_lowerings_cached``).
    """
    with _HOOKS.lock:
        previous = _HOOKS.use_smalto
        _HOOKS.use_smalto = use
        _HOOKS.sync()
        # (Turning it on clears them whatever was cached: forgotten as well.)
        stale = previous != use and (_smalto_lowerings_cached() or use)
    if stale:
        jax.clear_caches()
    return previous


def _smalto_lowerings_cached() -> bool:
    """Whether JAX's caches may hold a lowering made with smalto's layouts, forgetting it
    (the caller clears them; under ``_HOOKS.lock``).

    Every inference while smalto is enabled runs through ``dispatch``, and JAX
    caches what a lowering returns, never an error: where smalto's pass has
    answered no call since the last clearing (a block whose kernels it refused),
    there is nothing of it to clear, and the refusal's caller does not wait on
    JAX's whole cache being thrown away as the error leaves ``enabled()``.
    """
    cached = _HOOKS.smalto_answered
    _HOOKS.smalto_answered = False
    return cached


def smalto_enabled() -> bool:
    return _HOOKS.use_smalto


def set_options(options: Mapping[str, object]) -> dict[str, object]:
    """Sets the keywords smalto's pass gets on every hooked call (``smalto.infer_layout``'s,
    e.g. ``rewrite=False``; not ``fuel`` nor ``arch``, which JAX's call gives); returns the
    previous ones. Raises ``TypeError`` for a keyword ``infer_layout`` does not take.

    Clears JAX's compilation caches when they change while smalto is enabled (and
    has answered since they were last cleared: ``_smalto_lowerings_cached``), so
    kernels lowered before are lowered again with them.
    """
    wanted = dict(options)
    unknown = sorted(set(wanted) - pass_options())
    if unknown:
        raise TypeError(
            f"smalto.infer_layout takes no option {', '.join(map(repr, unknown))} "
            f"(it takes {', '.join(map(repr, sorted(pass_options())))}; the fuel and the "
            "arch are those of JAX's call)"
        )
    with _HOOKS.lock:
        previous = _HOOKS.options
        _HOOKS.options = wanted
        stale = _HOOKS.use_smalto and previous != wanted and _smalto_lowerings_cached()
    if stale:
        jax.clear_caches()
    return previous


def options_in_force() -> dict[str, object]:
    """The keywords smalto's pass gets now (``set_options``)."""
    with _HOOKS.lock:
        return dict(_HOOKS.options)


@functools.cache
def pass_options() -> frozenset[str]:
    """The keywords ``set_options`` accepts: ``smalto.infer_layout``'s keyword-only
    parameters but ``fuel`` and ``arch`` (read once: ``enabled()`` asks on the way in and
    out of every block, in the time a refusal's caller waits for)."""
    from smalto.infer import infer_layout

    parameters = inspect.signature(infer_layout).parameters.values()
    keywords = {p.name for p in parameters if p.kind is inspect.Parameter.KEYWORD_ONLY}
    return frozenset(keywords - {"fuel", "arch"})


def add_observer(observer: Observer) -> None:
    """Tells ``observer`` about every inference call from now on."""
    with _HOOKS.lock:
        _HOOKS.observers.append(observer)
        _HOOKS.sync()


def remove_observer(observer: Observer) -> None:
    """Stops telling ``observer``; restores JAX's functions if no one else needs the hook."""
    with _HOOKS.lock:
        _HOOKS.observers.remove(observer)
        _HOOKS.sync()


@contextlib.contextmanager
def observing(observer: Observer) -> Iterator[None]:
    """Tells ``observer`` about every inference call made inside the block."""
    add_observer(observer)
    try:
        yield
    finally:
        remove_observer(observer)


@contextlib.contextmanager
def forced_arch(arch: tuple[int, int]) -> Iterator[None]:
    """Makes JAX's Mosaic GPU lowering target ``arch`` whatever device (if any) is present.

    Clears JAX's compilation caches on entry and exit: lowerings are cached
    without the architecture in their key.
    """
    with _HOOKS.lock:
        previous = _HOOKS.arch
        _HOOKS.arch = (int(arch[0]), int(arch[1]))
        _HOOKS.sync()
    jax.clear_caches()
    try:
        yield
    finally:
        with _HOOKS.lock:
            _HOOKS.arch = previous
            _HOOKS.sync()
        jax.clear_caches()
