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

For code you cannot edit, run it with ``python -m smalto.jax run script.py``,
or set ``SMALTO_JAX=1`` where something imports ``smalto.jax`` (importing it
with the variable set installs the hook). ``SMALTO_JAX_DUMP=DIR`` writes every
module to DIR before and after inference; ``SMALTO_JAX_ALLOW_UNOPTIMIZED=1``
installs it with ``allow_unoptimized=True`` (kernels whose optimized transfers
have no plan compile with the fewest of them unoptimized, one warning each);
``SMALTO_JAX_STAGE_THROUGH_SMEM=1`` with ``stage_through_smem=True`` (those
transfers routed through a new SMEM buffer instead, every transfer optimized).

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

from smalto.jax.capture import CapturedModule, Dumper, capture
from smalto.jax.fixing import fix
from smalto.jax.hooks import (
    add_observer,
    jax_infer_arch,
    jax_infer_layout,
    observing,
    options_in_force,
    remove_observer,
    set_options,
    set_smalto,
    smalto_enabled,
)
from smalto.jax.lowering import KernelLoweringError, Lowering, lower

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
# With SMALTO_JAX: infer_layout(..., allow_unoptimized=True) on every call.
ENV_ALLOW_UNOPTIMIZED = "SMALTO_JAX_ALLOW_UNOPTIMIZED"
# With SMALTO_JAX: infer_layout(..., stage_through_smem=True) on every call.
ENV_STAGE_THROUGH_SMEM = "SMALTO_JAX_STAGE_THROUGH_SMEM"
_TRUE = frozenset({"1", "true", "yes", "on"})

# The dumper ``install(dump_to=...)`` started; ``uninstall`` stops it.
_installed_dumper: list[Dumper] = []


def install(*, dump_to: str | os.PathLike[str] | None = None, **options: object) -> None:
    """Routes JAX's Mosaic GPU layout inference through smalto from now on.

    Idempotent. Clears JAX's compilation caches, so kernels compiled before
    are compiled again with smalto. With ``dump_to``, every module is also
    written to that directory before and after inference. ``options``:
    keywords of ``smalto.infer_layout`` for every call (``rewrite=False``),
    in place of those of an earlier ``install``.
    """
    set_options(options)
    set_smalto(True)
    if dump_to is not None:
        _stop_dumping()
        dumper = Dumper(dump_to)
        add_observer(dumper)
        _installed_dumper.append(dumper)


def uninstall() -> None:
    """Puts JAX's own pass back: its functions are again the very objects they were.

    Stops the dumping ``install`` started, forgets its options. Clears JAX's
    compilation caches if smalto was installed. Idempotent.
    """
    _stop_dumping()
    set_smalto(False)
    set_options({})


def is_installed() -> bool:
    """Whether JAX's layout inference currently runs smalto."""
    return smalto_enabled()


@contextlib.contextmanager
def enabled(*, dump_to: str | os.PathLike[str] | None = None, **options: object) -> Iterator[None]:
    """Routes layout inference through smalto inside the block.

    On exit the previous state returns (installed or not, and its options).
    ``dump_to`` writes the modules seen inside the block, as in ``install``;
    ``options``, keywords of ``smalto.infer_layout`` for every call inside it,
    are added to those in force (an ``install``'s, an enclosing block's).
    """
    previous_options = set_options({**options_in_force(), **options})
    previous = set_smalto(True)
    try:
        if dump_to is None:
            yield
        else:
            with observing(Dumper(dump_to)):
                yield
    finally:
        set_smalto(previous)
        set_options(previous_options)


def _stop_dumping() -> None:
    while _installed_dumper:
        remove_observer(_installed_dumper.pop())


def _install_from_environment() -> None:
    wanted = _true(ENV_ENABLE)
    dump_to = os.environ.get(ENV_DUMP) or None
    if wanted:
        options = {
            keyword: True
            for keyword, variable in (
                ("allow_unoptimized", ENV_ALLOW_UNOPTIMIZED),
                ("stage_through_smem", ENV_STAGE_THROUGH_SMEM),
            )
            if _true(variable)
        }
        install(dump_to=dump_to, **options)
    elif dump_to is not None:
        # Dumping alone: JAX's pass stays, its modules are written.
        dumper = Dumper(dump_to)
        add_observer(dumper)
        _installed_dumper.append(dumper)


def _true(variable: str) -> bool:
    return os.environ.get(variable, "").strip().lower() in _TRUE


_install_from_environment()
