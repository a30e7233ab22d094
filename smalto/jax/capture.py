"""Getting the Mosaic GPU modules JAX hands to layout inference, without a GPU.

JAX serializes a Mosaic GPU kernel into a custom call once it is lowered, after
layout inference and the dialect lowering have run, so the module inference
sees exists only during that one call. ``capture`` lowers a function for the
CUDA platform (which works on a machine without a GPU) while an observer on the
hooked inference call copies the module out, before and after the pass.

A capture is over once the module is copied: what JAX does next (its pass
finding no layouts, its lowering rejecting the layouts the pass wrote) is
recorded on the module, never raised, so the module is still there for
``smalto infer``.
"""

from __future__ import annotations

import contextlib
import dataclasses
import itertools
import os
import traceback
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import jax
from jax._src.lib.mlir import ir

from smalto.jax.hooks import InferenceCall, Observer, Pass, Route, routed


@dataclass(frozen=True)
class CapturedModule:
    """One Mosaic GPU module as it reached layout inference during a lowering.

    ``text`` is the module before inference, ``inferred_text`` after it
    (``None`` when the pass failed; ``error`` then holds what it raised). Both
    are MLIR text in the pretty form with every op's ``loc(...)``, so the
    locations of the user's Python source survive into ``smalto infer`` and
    its messages. ``lowering_error`` is what JAX's Mosaic GPU lowering raised
    on the layouts the pass wrote (the pass answered, ``ok`` is true, and the
    kernel still does not compile: a bf16 WGMMA or TMEM result stored straight
    to GMEM, with JAX's pass); ``None`` where it took them or never ran.
    """

    name: str  # the module's sym_name: Pallas names it after the kernel function
    arch: tuple[int, int]
    text: str
    inferred_text: str | None
    inferred_by: Pass
    error: BaseException | None = field(default=None, compare=False)
    lowering_error: BaseException | None = field(default=None, compare=False)

    @property
    def ok(self) -> bool:
        """The pass answered (its layouts may still be rejected: ``lowering_error``)."""
        return self.error is None

    @property
    def compiles(self) -> bool:
        """The pass answered and JAX's lowering took its layouts."""
        return self.error is None and self.lowering_error is None

    def module(self, *, inferred: bool = False, context: ir.Context | None = None) -> ir.Module:
        """Parses the text (``inferred_text`` if ``inferred``) into a fresh module.

        ``context`` defaults to a new one with every dialect Mosaic GPU uses.
        """
        from smalto.basics.mlir import parse_module

        text = self.inferred_text if inferred else self.text
        if text is None:
            raise ValueError(f"layout inference failed for {self.name!r}: {self.error}")
        return parse_module(text, context=context, source_name=f"<{self.name}>")


def module_text(module: ir.Module) -> str:
    """Pretty form with locations: what ``smalto infer`` reads back unchanged."""
    return str(module.operation.get_asm(enable_debug_info=True))


def module_name(module: ir.Module) -> str:
    attributes = module.operation.attributes
    if "sym_name" in attributes:
        return str(ir.StringAttr(attributes["sym_name"]).value)
    return "kernel"


class Recorder(Observer):
    """Collects a ``CapturedModule`` for every inference call it sees."""

    def __init__(self) -> None:
        self.route = Route()  # the route its calls were made on, once recording
        self.captured: list[CapturedModule] = []
        self._before: dict[int, str] = {}

    def before(self, call: InferenceCall) -> None:
        self._before[id(call)] = module_text(call.module)

    def after(self, call: InferenceCall, error: BaseException | None) -> None:
        self.captured.append(
            CapturedModule(
                name=module_name(call.module),
                arch=call.arch,
                text=self._before.pop(id(call)),
                inferred_text=None if error else module_text(call.module),
                inferred_by=call.inferred_by,
                error=error,
            )
        )

    def rejected(self, error: BaseException) -> None:
        """JAX's lowering raised ``error`` on the layouts of the last module inferred."""
        self.captured[-1] = dataclasses.replace(self.captured[-1], lowering_error=error)


class Dumper(Observer):
    """Writes every module to ``directory``: ``NNN-NAME.mlir`` before inference,
    ``NNN-NAME.inferred.mlir`` after it (when the pass succeeded)."""

    def __init__(self, directory: str | os.PathLike[str]) -> None:
        self.directory = Path(directory)
        self.directory.mkdir(parents=True, exist_ok=True)
        # (``install``'s dumper sees every thread's calls: ``next`` numbers each once.)
        self._numbers = itertools.count(1)
        self._stems: dict[int, str] = {}

    def before(self, call: InferenceCall) -> None:
        stem = f"{next(self._numbers):03d}-{module_name(call.module)}"
        self._stems[id(call)] = stem
        (self.directory / f"{stem}.mlir").write_text(module_text(call.module), encoding="utf-8")

    def after(self, call: InferenceCall, error: BaseException | None) -> None:
        stem = self._stems.pop(id(call))
        if error is None:
            path = self.directory / f"{stem}.inferred.mlir"
            path.write_text(module_text(call.module), encoding="utf-8")


def capture(
    fn: Callable[..., Any],
    *args: Any,
    arch: tuple[int, int] | None = None,
    by: Pass | None = None,
) -> list[CapturedModule]:
    """Lowers ``fn(*args)`` for the GPU and returns the Mosaic GPU modules it made.

    Works without a GPU: ``fn`` is lowered with ``lowering_platforms=("cuda",)``
    (``fn`` may already be ``jax.jit``-wrapped; ``args`` may be arrays or
    ``jax.ShapeDtypeStruct``s). Every Mosaic GPU kernel the lowering builds in
    warpgroup semantics (Pallas Mosaic GPU kernels, unless they ask for
    ``LoweringSemantics.Lane``; ``as_gpu_kernel`` with
    ``thread_semantics=Warpgroup``) yields one ``CapturedModule``, in order,
    holding the module exactly as ``core.lower_mgpu_module`` hands it to the
    pass (after its ``canonicalize,cse``, with the ``mosaic_gpu.dump_basename``
    attribute it sets).

    The pass that runs is ``by`` (``"smalto"`` or ``"jax"``) for the duration,
    or, by default, the one in force: smalto inside ``smalto.jax.enabled()``
    or after ``install()``, JAX's otherwise. To get the modules only, pass
    ``by="smalto"``: the module is the same whichever pass follows, and
    smalto's is fast where JAX's may spend seconds running out of fuel.
    ``arch`` forces the target architecture, e.g. ``(10, 0)`` for Blackwell;
    by default JAX picks it from the device, which is ``(9, 0)`` without a GPU.

    What JAX does with a module once it is captured is recorded, not raised:
    where the pass fails, the module comes back with ``error`` set; where the
    pass answers and JAX's lowering rejects its layouts, with
    ``lowering_error`` set. The lowering stops there, so the modules captured
    so far are returned, the failing one last. Any other failure of the
    lowering (before a module reached the pass) propagates.
    """
    use_smalto = None if by is None else by == "smalto"
    with recording(arch, use_smalto=use_smalto) as recorder:
        try:
            lower_for_cuda(fn, args)
        except Exception as raised:
            if inference_error(raised, recorder) is not None:
                pass
            elif rejected_after_inference(raised, recorder):
                recorder.rejected(raised)
            else:
                raise
    return recorder.captured


@contextlib.contextmanager
def recording(
    arch: tuple[int, int] | None,
    *,
    use_smalto: bool | None = None,
    options: Mapping[str, object] | None = None,
    predicted: bool | None = None,
) -> Iterator[Recorder]:
    """Records every inference call the calling thread makes inside the block, on its
    route with ``arch`` forced, the pass chosen (``use_smalto``), ``options`` added and
    JAX's pass skipped where smalto proves it fails (``predicted``), where given
    (``recorder.route``).

    The recorder's route is one no other call has, so JAX's caches hand the block
    nothing lowered before (its inference would go unseen): every kernel is lowered
    again. JAX's caches are cleared on the way out: they hold the block's lowerings,
    which no call will look up again (JAX has no way to drop those alone).
    """
    recorder = Recorder()
    try:
        with routed(
            use_smalto=use_smalto,
            options=options,
            arch=arch,
            observer=recorder,
            predicted=predicted,
        ) as route:
            recorder.route = route
            yield recorder
    finally:
        jax.clear_caches()


def lower_for_cuda(fn: Callable[..., Any], args: tuple[Any, ...]) -> jax.stages.Lowered:
    """``jax.jit(fn)`` lowered for CUDA: runs Pallas' and Mosaic GPU's lowerings, on any host."""
    jitted = fn if hasattr(fn, "trace") else jax.jit(fn)
    return jitted.trace(*args).lower(lowering_platforms=("cuda",))


def inference_error(raised: BaseException, recorder: Recorder) -> BaseException | None:
    """The failed inference call behind ``raised``: the last recorded one, if it caused it."""
    failed = recorder.captured[-1].error if recorder.captured else None
    if failed is not None and _caused_by(raised, failed):
        return failed
    return None


def _caused_by(raised: BaseException, error: BaseException) -> bool:
    return any(current is error for current in _chain(raised))


def _chain(raised: BaseException) -> Iterator[BaseException]:
    """``raised``, then what caused it (or was being handled), each once."""
    seen: set[int] = set()
    current: BaseException | None = raised
    while current is not None and id(current) not in seen:
        yield current
        seen.add(id(current))
        current = current.__cause__ or current.__context__


def rejected_after_inference(raised: BaseException, recorder: Recorder) -> bool:
    """Whether ``raised`` is JAX's lowering rejecting the last module inferred.

    JAX lowers each module right after inferring it, inside
    ``core.lower_mgpu_module``: an error from there, after the last recorded
    call succeeded, is that module's dialect lowering or verification.
    """
    return (
        bool(recorder.captured)
        and recorder.captured[-1].ok
        and _raised_in_lower_mgpu_module(raised)
    )


def _raised_in_lower_mgpu_module(raised: BaseException) -> bool:
    # JAX may filter its own frames out of the traceback that reaches the
    # user, keeping the full one on a chained exception: look at the chain.
    return any(
        frame.name == "lower_mgpu_module"
        for current in _chain(raised)
        for frame in traceback.extract_tb(current.__traceback__)
    )
