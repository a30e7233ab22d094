"""Use smalto from JAX: route Pallas' Mosaic GPU compile path through smalto.

While smalto is enabled, every layout-inference call JAX 0.12.0.1 makes (the
one in ``core.lower_mgpu_module``, which every warpgroup kernel goes through:
Pallas' Mosaic GPU lowering and ``as_gpu_kernel``; and the probe modules of
Pallas' layout rules) runs ``smalto.infer_layout`` on the same module, with the
same fuel and arch::

    import smalto.jax

    with smalto.jax.enabled():
        out = my_pallas_kernel(x)      # compiled with smalto's layouts

    smalto.jax.install()               # or for the rest of the process
    smalto.jax.uninstall()             # JAX's own pass again, exactly

    with smalto.jax.enabled(rewrite=False):
        out = my_pallas_kernel(x)      # options of smalto.infer_layout, for every call

``install``, ``enabled`` and ``lower`` pass keywords of ``smalto.infer_layout``
(but the fuel and the arch, which JAX's own call gives) to every call:
``install``'s hold until ``uninstall``, and ``enabled`` and ``lower`` add
theirs to those in force while they run.

``enabled``, ``lower``, ``capture`` and ``fix`` set the pass, options and arch of
the calling thread only (``hooks.Route``); ``install`` those of every thread in no
block of its own. The route is part of the key of JAX's caches, so nothing compiled
on one is handed to another.

For code you cannot edit, run it with ``python -m smalto.jax run script.py``,
or set ``SMALTO_JAX=1`` where something imports ``smalto.jax`` (importing it
with the variable set installs the hook). ``SMALTO_JAX_DUMP=DIR`` writes every
module to DIR before and after inference; ``SMALTO_JAX_ALLOW_UNOPTIMIZED=1``
installs it with ``allow_unoptimized=True`` (kernels whose optimized transfers
have no plan compile with the fewest of them unoptimized, one warning each);
``SMALTO_JAX_STAGE_THROUGH_SMEM=1`` with ``stage_through_smem=True`` (those
transfers routed through a new SMEM buffer instead, every transfer optimized);
``SMALTO_JAX_REWRITE=0`` with ``rewrite=False``: each setting of ``SolveOptions`` that
is not per call has its variable (``Setting.environment``). A variable whose value
says neither on (1, true, yes, on) nor off (0, false, no, off) is refused: importing
``smalto.jax`` raises ``ValueError`` naming it.

``capture(fn, *args)`` lowers ``fn`` for the GPU on any machine, GPU or not, and
returns the modules JAX handed to layout inference (``CapturedModule``).
``lower(fn, *args, arch=(10, 0))`` lowers ``fn`` for that GPU, on any machine,
with smalto inferring and JAX's own Mosaic GPU lowering consuming the layouts,
and says at which stage it failed, if it did (``KernelLoweringError``).
``fix(fn, *args, arch=(9, 0))`` returns the verified fixes of a kernel that has no
layouts as edits of its Python source (spans, replacement texts, applicability;
``smalto.source.fix_edits.SourceEdit``), writing nothing; ``smalto fix`` applies them.
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Iterator
from typing import TYPE_CHECKING

from smalto.basics.lazy_names import lazy_names
from smalto.jax.capture import CapturedModule, Dumper, capture
from smalto.jax.hooks import (
    current_route,
    jax_infer_arch,
    jax_infer_layout,
    routed,
    set_installed,
)

if TYPE_CHECKING:
    from smalto.jax.fixing import fix
    from smalto.jax.lowering import KernelLoweringError, Lowering, lower

# Loaded on first use: a process that only installs the route (``install``, ``enabled``)
# never loads what fixing a kernel's source or lowering it on its own takes (issue #52:
# the first kernel on the route pays the import of what it uses).
_LAZY = {
    "fix": "smalto.jax.fixing",
    "KernelLoweringError": "smalto.jax.lowering",
    "Lowering": "smalto.jax.lowering",
    "lower": "smalto.jax.lowering",
}


__getattr__, __dir__ = lazy_names(__name__, _LAZY, globals())


__all__ = [
    "CapturedModule",
    "KernelLoweringError",
    "Lowering",
    "capture",
    "enabled",
    "fix",
    "install",
    "is_installed",
    "jax_infer_arch",
    "jax_infer_layout",
    "lower",
    "uninstall",
]

ENV_ENABLE = "SMALTO_JAX"
ENV_DUMP = "SMALTO_JAX_DUMP"
# With SMALTO_JAX, each setting's own variable (``SolveOptions``' ``Setting.environment``:
# SMALTO_JAX_ALLOW_UNOPTIMIZED=1, ...) sets its keyword of infer_layout on every call.
_TRUE = ("1", "true", "yes", "on")
_FALSE = ("0", "false", "no", "off", "")


def install(*, dump_to: str | os.PathLike[str] | None = None, **options: object) -> None:
    """Routes JAX's Mosaic GPU layout inference through smalto from now on, in every
    thread (but inside a block of its own: ``enabled``, ``lower``, ``capture``).

    Idempotent. Kernels compiled before are compiled again with smalto: the pass in
    force is part of the key of JAX's caches. With ``dump_to``, every module is also
    written to that directory before and after inference. ``options``: keywords of
    ``smalto.infer_layout`` for every call (``rewrite=False``), in place of those of an
    earlier ``install``.
    """
    observers = (Dumper(dump_to),) if dump_to is not None else ()
    set_installed(True, options=options, observers=observers)


def uninstall() -> None:
    """Puts JAX's own pass back: its functions are again the very objects they were
    (once no thread is inside a block of its own either).

    Stops the dumping ``install`` started, forgets its options. Idempotent.
    """
    set_installed(None)


def is_installed() -> bool:
    """Whether JAX's layout inference runs smalto for calls the calling thread makes now
    (inside an ``enabled()`` block of its own, or after ``install()``)."""
    return current_route().use_smalto


@contextlib.contextmanager
def enabled(*, dump_to: str | os.PathLike[str] | None = None, **options: object) -> Iterator[None]:
    """Routes layout inference through smalto inside the block, for the calling thread only.

    Other threads keep the pass in force for them (JAX's, or an ``install``'s); the
    block's kernels are never handed to them from JAX's caches, nor theirs to the
    block. On exit the thread's previous route returns (installed or not, and its
    options). ``dump_to`` writes the modules seen inside the block, as in ``install``;
    ``options``, keywords of ``smalto.infer_layout`` for every call inside it, are added
    to those in force (an ``install``'s, an enclosing block's).
    """
    observer = Dumper(dump_to) if dump_to is not None else None
    with routed(use_smalto=True, options=options, observer=observer):
        yield


def _install_from_environment() -> None:
    wanted = _switch(ENV_ENABLE)
    options = environment_options()  # (read whether wanted or not: a junk value is refused)
    dump_to = os.environ.get(ENV_DUMP) or None
    observers = (Dumper(dump_to),) if dump_to is not None else ()
    if wanted:
        set_installed(True, options=options, observers=observers)
    elif observers:
        # Dumping alone: JAX's pass stays, its modules are written.
        set_installed(False, observers=observers)


def environment_options() -> dict[str, object]:
    """The keywords of ``smalto.infer_layout`` the environment sets: each setting's variable
    (``SolveOptions``' ``Setting.environment``) that is set, as its value says; unset or
    empty, the setting keeps its default. Raises ``ValueError`` for a value that says
    neither on nor off."""
    from smalto.solve.options import switches

    options: dict[str, object] = {}
    for field, setting in switches():
        variable = setting.environment
        if variable is not None and os.environ.get(variable, "").strip():
            options[field.name] = _switch(variable)
    return options


def _switch(variable: str) -> bool:
    """Whether ``variable`` says on (1, true, yes, on) or off (0, false, no, off, unset or
    empty), in any case; anything else is refused, naming the variable."""
    text = os.environ.get(variable, "").strip().lower()
    if text in _TRUE:
        return True
    if text in _FALSE:
        return False
    raise ValueError(
        f"{variable}={os.environ[variable]!r}: expected {', '.join(_TRUE)} (on) or "
        f"{', '.join(_FALSE[:-1])} (off; unset or empty: off)"
    )


_install_from_environment()
