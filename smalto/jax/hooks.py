"""Routing JAX's layout-inference calls through one dispatcher, per thread.

JAX 0.12.0.1 runs its pass from two places, and both look the function up by
attribute at call time:

- ``jax.experimental.mosaic.gpu.core.lower_mgpu_module``, the one path every
  warpgroup kernel takes (the Pallas Mosaic GPU lowering and ``as_gpu_kernel``),
  calls ``layout_inference.infer_layout(module, arch=utils._infer_arch())``;
- Pallas' layout rules for explicitly laid-out arrays
  (``jax._src.pallas.mosaic_gpu.layout_rules``) infer small probe modules with
  ``jax.experimental.mosaic.gpu.infer_layout(module)``.

Replacing those two attributes with ``dispatch``, and ``utils._infer_arch``
(which every reader of the target architecture asks at call time: the module's
``mosaic_gpu.arch_*`` attributes, the arch handed to inference, Pallas'
pipelining) with ``_routed_arch``, is therefore enough; putting the saved
originals back restores JAX exactly.

What a call does is its thread's ``Route``: whose pass, with which options (keywords of
``smalto.infer_layout`` beyond the fuel and arch JAX's call gives), for which forced
arch, and who watches (``Observer``). A block (``routed``: ``smalto.jax.enabled``,
``lower``, ``capture``) sets its thread's route only; ``install`` sets the route of
every thread that is in no block. The route lives in a JAX user context
(``jax.make_user_context``): thread-local, and part of the key of JAX's tracing,
lowering and compilation caches, so a lowering made on one route is never handed to
a call on another (another pass, options or arch), and switching routes never needs
JAX's caches cleared. The attributes themselves are patched while any route is in
force anywhere and restored when none is; with no route in force in its thread a
call through them is JAX's own, unchanged.
"""

from __future__ import annotations

import contextlib
import functools
import gc
import itertools
import sys
import threading
import warnings
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass
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


@dataclass(frozen=True)
class Route:
    """What a hooked call does in the thread that makes it.

    Hashable, compared by value: it is part of the key of JAX's caches.
    ``watchers`` names the observers (``_State.watchers``): a route with observers of
    its own has a number no other route has, so its lowerings run the pass again
    where the observers can see it rather than come from a cache.
    """

    use_smalto: bool = False
    options: tuple[tuple[str, object], ...] = ()
    arch: tuple[int, int] | None = None
    watchers: int | None = None
    # On JAX's pass: smalto's solver first, and JAX's pass not run (``PredictedFailure``)
    # where it proves the module has no layouts that lower (``smalto.jax.prediction``).
    predicted: bool = False

    @property
    def by(self) -> Pass:
        return "smalto" if self.use_smalto else "jax"


# The route of the calling thread (its innermost block's), else the installed one. (Made
# once, as this module is imported: JAX asks that user contexts be made before other
# threads use JAX; setting and reading one is thread-safe.)
_ROUTE: Any = jax.make_user_context(None)


def current_route() -> Route:
    """The route in force in the calling thread (JAX's own pass where none is)."""
    route = _ROUTE.value
    return route if isinstance(route, Route) else Route()


def _jax_modules() -> tuple[ModuleType, ModuleType, ModuleType]:
    """JAX's package namespace, its inference module, and the module owning ``_infer_arch``."""
    from jax.experimental.mosaic import gpu as mgpu
    from jax.experimental.mosaic.gpu import layout_inference, utils

    return mgpu, layout_inference, utils


class _State:
    """The one process-wide part: JAX's attributes patched while routes are in force
    (``users``: open blocks in every thread, and an installed route), and the observers
    of each route that has some."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.users = 0
        # (module, attribute) -> JAX's original object, while patched.
        self.saved: dict[tuple[ModuleType, str], object] = {}
        self.watchers: dict[int, tuple[Observer, ...]] = {}
        self.numbers = itertools.count(1)

    def acquire(self) -> None:
        with self.lock:
            self.users += 1
            if self.users == 1:
                self._patch()

    def release(self) -> None:
        with self.lock:
            self.users -= 1
            if self.users == 0:
                self._restore()

    def watch(self, observers: tuple[Observer, ...]) -> int:
        with self.lock:
            number = next(self.numbers)
            self.watchers[number] = observers
            return number

    def unwatch(self, number: int | None) -> None:
        with self.lock:
            self.watchers.pop(number or 0, None)

    def observers(self, route: Route) -> tuple[Observer, ...]:
        return self.watchers.get(route.watchers or 0, ())

    def _patch(self) -> None:
        from jax.experimental.mosaic.gpu import core

        mgpu, layout_inference, utils = _jax_modules()
        for module, name, replacement in (
            (mgpu, "infer_layout", dispatch),
            (layout_inference, "infer_layout", dispatch),
            (utils, "_infer_arch", _routed_arch),
            (core, "_lower_as_gpu_kernel", _lower_as_gpu_kernel),
        ):
            self.saved[(module, name)] = getattr(module, name)
            setattr(module, name, replacement)

    def _restore(self) -> None:
        for (module, name), original in self.saved.items():
            if getattr(module, name) in _STAND_INS:
                setattr(module, name, original)
                continue
            # Someone replaced the attribute after us; clobbering their patch would be
            # worse than leaving ours out of the chain.
            warnings.warn(
                f"smalto.jax: {module.__name__}.{name} was replaced by someone else while "
                "smalto's hook was installed; leaving it as it is",
                RuntimeWarning,
                stacklevel=3,
            )
        self.saved.clear()

    def original(self, module: ModuleType, name: str) -> object:
        current = getattr(module, name)
        if current in _STAND_INS:
            # (A call racing the restore still finds JAX's own: it was saved first.)
            return self.saved.get((module, name), getattr(module, name))
        return current


_STATE = _State()


def jax_infer_layout() -> Callable[..., None]:
    """JAX's own ``infer_layout``, whether or not the hook is installed."""
    mgpu, _, _ = _jax_modules()
    return cast(Callable[..., None], _STATE.original(mgpu, "infer_layout"))


def jax_infer_arch() -> Callable[[], tuple[int, int]]:
    """JAX's own ``utils._infer_arch``, whether or not an architecture is forced."""
    _, _, utils = _jax_modules()
    return cast(Callable[[], tuple[int, int]], _STATE.original(utils, "_infer_arch"))


def _routed_arch() -> tuple[int, int]:
    """Stands in for JAX's ``utils._infer_arch``: the arch the thread's route forces, else
    JAX's own answer (the device's, ``(9, 0)`` without one)."""
    arch = current_route().arch
    return arch if arch is not None else jax_infer_arch()()


def dispatch(module: ir.Module, *, fuel: int | None = None, arch: tuple[int, int] = (9, 0)) -> None:
    """Stands in for JAX's ``infer_layout`` while the hook is installed.

    Runs ``smalto.infer_layout`` with the same module, fuel and arch where the calling
    thread's route says smalto (smalto's default fuel when the caller passed none; JAX
    never does), with the route's options; JAX's own pass otherwise; and tells the
    route's observers.
    """
    route = current_route()
    observers = _STATE.observers(route)
    # The arch may come as a list: the observers and the pass get a tuple.
    arch = cast(tuple[int, int], tuple(arch))
    call = InferenceCall(module, arch, fuel, route.by)
    for observer in observers:
        observer.before(call)
    try:
        if route.use_smalto:
            if "smalto.infer" not in sys.modules:
                _import_the_pass()
            import smalto
            from smalto.infer import saying_smalto_only

            # Keywords ``check_options`` checked by name; their values reach the pass as given.
            options: dict[str, Any] = dict(route.options)
            # (A kernel only smalto's layouts compile is said, at its line, once.)
            with saying_smalto_only():
                if fuel is None:
                    smalto.infer_layout(module, arch=call.arch, **options)
                else:
                    smalto.infer_layout(module, fuel=fuel, arch=call.arch, **options)
        else:
            if route.predicted:
                _refuse_if_predicted(module, call.arch, fuel)
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


def _refuse_if_predicted(module: ir.Module, arch: tuple[int, int], fuel: int | None) -> None:
    """Raises ``PredictedFailure`` where smalto's solver proves JAX's pass cannot lay
    ``module`` out in a way that lowers (its search would spend its fuel for nothing)."""
    from smalto.jax.prediction import PREDICTED, PredictedFailure, jax_finds_none

    if jax_finds_none(module, arch, fuel):
        raise PredictedFailure(f"JAX's layout inference {PREDICTED}")


def _import_the_pass() -> None:
    """Imports ``smalto.infer`` (the first kernel on the route does) with the collector
    paused: making the pass's classes allocates enough to set off collections that would
    traverse every object of the process, JAX's included (issue #52: the first kernel pays
    the import)."""
    paused = gc.isenabled()
    gc.disable()
    try:
        import smalto.infer  # noqa: F401
    finally:
        if paused:
            gc.enable()


def _lower_as_gpu_kernel(*args: Any, **kwargs: Any) -> Any:
    """Stands in for JAX's ``core._lower_as_gpu_kernel`` (every kernel's launch, built before
    its body reaches inference): JAX's own. Where the route is smalto's and JAX refuses the
    kernel's SMEM (``Mosaic GPU kernel exceeds available shared memory``, raised before the
    pass can run), the same error, JAX's words first, then what uses the SMEM at the
    kernel's lines and the verified changes that bring it under."""
    from jax.experimental.mosaic.gpu import core

    original = cast(Callable[..., Any], _STATE.original(core, "_lower_as_gpu_kernel"))
    try:
        return original(*args, **kwargs)
    except ValueError as refused:
        if not current_route().use_smalto:
            raise
        from smalto.jax.kernel_overrun import kernel_overrun_explained

        explained = kernel_overrun_explained(original, args, kwargs, refused)
        if explained is None:
            raise
        raise ValueError(f"{refused}\n{explained}").with_traceback(refused.__traceback__) from None


_STAND_INS = (dispatch, _routed_arch, _lower_as_gpu_kernel)


def check_options(options: Mapping[str, object]) -> None:
    """Raises ``TypeError`` for a keyword ``smalto.infer_layout`` does not take through the
    route (``fuel`` and ``arch`` are JAX's call's), or a value that cannot key JAX's caches."""
    unknown = sorted(set(options) - pass_options())
    if unknown:
        raise TypeError(
            f"smalto.infer_layout takes no option {', '.join(map(repr, unknown))} "
            f"(it takes {', '.join(map(repr, sorted(pass_options())))}; the fuel and the "
            "arch are those of JAX's call)"
        )
    for name, value in options.items():
        try:
            hash(value)
        except TypeError:
            raise TypeError(
                f"smalto.jax: option {name!r} must be hashable (it keys JAX's caches), "
                f"not {type(value).__name__}"
            ) from None


@functools.cache
def pass_options() -> frozenset[str]:
    """The keywords ``check_options`` accepts: the settings of ``smalto.infer_layout`` that
    are not per call (all but ``fuel`` and ``arch``: ``SolveOptions``' switches)."""
    from smalto.solve.options import switches

    return frozenset(f.name for f, _ in switches())


def _route_from(
    outer: Route,
    *,
    use_smalto: bool | None,
    options: Mapping[str, object] | None,
    arch: tuple[int, int] | None,
    watchers: int | None,
    predicted: bool | None = None,
) -> Route:
    merged = dict(outer.options)
    if options:
        check_options(options)
        merged.update(options)
    return Route(
        use_smalto=outer.use_smalto if use_smalto is None else use_smalto,
        options=tuple(sorted(merged.items())),
        arch=outer.arch if arch is None else (int(arch[0]), int(arch[1])),
        watchers=outer.watchers if watchers is None else watchers,
        predicted=outer.predicted if predicted is None else predicted,
    )


@contextlib.contextmanager
def routed(
    *,
    use_smalto: bool | None = None,
    options: Mapping[str, object] | None = None,
    arch: tuple[int, int] | None = None,
    observer: Observer | None = None,
    predicted: bool | None = None,
) -> Iterator[Route]:
    """Sets the calling thread's route inside the block: the one in force, with the pass
    (``use_smalto``), ``options`` added, ``arch`` forced, ``observer`` watching too and
    JAX's pass asked only where smalto's solver does not prove it fails (``predicted``,
    ``Route.predicted``), where given. Other threads' routes are untouched; the thread's
    own is back on exit."""
    outer = current_route()
    watchers = None
    if observer is not None:
        watchers = _STATE.watch((*_STATE.observers(outer), observer))
    try:
        route = _route_from(
            outer,
            use_smalto=use_smalto,
            options=options,
            arch=arch,
            watchers=watchers,
            predicted=predicted,
        )
        _STATE.acquire()
        try:
            with _ROUTE(route):
                yield route
        finally:
            _STATE.release()
    finally:
        _STATE.unwatch(watchers)


# What ``install`` set: its route and the observers it numbered (``set_installed``).
_installed_lock = threading.Lock()


def set_installed(
    use_smalto: bool | None,
    *,
    options: Mapping[str, object] | None = None,
    observers: tuple[Observer, ...] = (),
) -> None:
    """Sets the route of every thread in no block (``None``: JAX's own pass, unhooked),
    with ``options`` and ``observers``, in place of the one set before."""
    with _installed_lock:
        if use_smalto is None and observers:
            use_smalto = False  # observers alone: JAX's pass, watched
        watchers = _STATE.watch(observers) if observers else None
        try:
            new = None
            if use_smalto is not None:
                new = _route_from(
                    Route(), use_smalto=use_smalto, options=options, arch=None, watchers=watchers
                )
        except TypeError:
            _STATE.unwatch(watchers)
            raise
        previous = _ROUTE.get_global()
        _ROUTE.set_global(new)
        if previous is None and new is not None:
            _STATE.acquire()
        if isinstance(previous, Route):
            _STATE.unwatch(previous.watchers)
            if new is None:
                _STATE.release()


def observing(observer: Observer) -> contextlib.AbstractContextManager[Route]:
    """Tells ``observer`` about every inference call the calling thread makes inside the
    block."""
    return routed(observer=observer)


def forced_arch(arch: tuple[int, int]) -> contextlib.AbstractContextManager[Route]:
    """Makes JAX's Mosaic GPU lowering in the calling thread target ``arch`` inside the
    block, whatever device (if any) is present."""
    return routed(arch=arch)
