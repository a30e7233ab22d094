"""Lowering a kernel all the way through JAX, with a chosen layout-inference pass.

``lower`` answers "does this kernel compile for that GPU with smalto's
layouts?" on any machine: it lowers the function for CUDA (no GPU needed) with
the architecture forced, lets smalto (or JAX, for comparison) infer the
layouts, and lets JAX's own Mosaic GPU dialect lowering and verifier consume
them. A success means JAX's lowering accepted every layout the pass wrote; a
failure says at which stage it broke.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Literal

import jax

from smalto.jax.capture import (
    CapturedModule,
    Recorder,
    inference_error,
    lower_for_cuda,
    recording,
    rejected_after_inference,
)
from smalto.jax.hooks import Pass, jax_infer_arch
from smalto.jax.smem_room import overrun_explained

Stage = Literal["before inference", "inference", "after inference", "no kernel"]


@dataclass(frozen=True)
class Lowering:
    """A function lowered for CUDA, and the Mosaic GPU kernels its lowering inferred."""

    lowered: jax.stages.Lowered
    kernels: tuple[CapturedModule, ...]  # in lowering order, all inferred successfully
    arch: tuple[int, int]
    inferred_by: Pass


class KernelLoweringError(RuntimeError):
    """``lower`` failed; ``stage`` says where, ``__cause__`` holds what was raised.

    - ``"before inference"``: tracing or Pallas' lowering failed before any
      (further) module reached layout inference;
    - ``"inference"``: the pass failed on ``kernels[-1]``;
    - ``"after inference"``: the pass succeeded, then JAX's dialect lowering or
      verifier rejected the module (``kernels[-1]`` holds its inferred text);
    - ``"no kernel"``: the lowering succeeded but built no warpgroup kernel, so
      no layout inference ran at all.
    """

    def __init__(
        self, message: str, *, stage: Stage, kernels: tuple[CapturedModule, ...], by: Pass
    ) -> None:
        super().__init__(message)
        self.stage: Stage = stage
        self.kernels = kernels
        self.inferred_by: Pass = by


def lower(
    fn: Callable[..., Any],
    *args: Any,
    arch: tuple[int, int] | None = None,
    by: Pass = "smalto",
    predicted: bool = False,
    **options: object,
) -> Lowering:
    """Lowers ``fn(*args)`` for CUDA with ``by`` as the layout-inference pass.

    ``fn`` may be ``jax.jit``-wrapped; ``args`` arrays or ``jax.ShapeDtypeStruct``s.
    ``arch`` forces the target, e.g. ``(9, 0)`` Hopper or ``(10, 0)``
    Blackwell (default: the GPU's, ``(9, 0)`` without one). ``by="jax"`` runs
    JAX's own pass instead, to compare. The pass in force before the call is
    back in force after it. Every kernel must be in warpgroup semantics (the
    only ones that run layout inference) and at least one must be built.
    ``options``: keywords of ``smalto.infer_layout`` for every call smalto
    makes (``rewrite=False``), added to those in force (``enabled``,
    ``install``), which are back after. ``predicted`` (with ``by="jax"``):
    JAX's pass is not run on a kernel smalto's solver proves has no layouts
    that lower (``smalto.jax.prediction``); that kernel's inference fails with
    ``PredictedFailure`` at once, where JAX's search could spend minutes.

    Returns the lowering; raises ``KernelLoweringError`` naming the stage that
    failed.
    """
    with recording(
        arch, use_smalto=by == "smalto", options=options, predicted=predicted
    ) as recorder:
        target = recorder.route.arch or _own_arch()
        try:
            lowered = lower_for_cuda(fn, args)
        except Exception as raised:
            kernels = tuple(recorder.captured)
            stage = _failed_stage(raised, recorder)
            message = _message(stage, kernels, by, target, raised)
            if stage == "before inference":
                # JAX's SMEM limit says only by how much; the map says what to cut.
                explained = overrun_explained(fn, args, arch, raised)
                if explained is not None:
                    # (This one, able to lower ``fn`` again with fewer stages, stands in for
                    # the one the route's error carries.)
                    said = str(raised).split("\n", 1)[0]
                    message = f"{_message(stage, kernels, by, target, raised, said)}\n{explained}"
            raise KernelLoweringError(
                message,
                stage=stage,
                kernels=kernels,
                by=by,
            ) from raised
    kernels = tuple(recorder.captured)
    if not kernels:
        raise KernelLoweringError(
            "the lowering built no Mosaic GPU kernel in warpgroup semantics "
            "(plgpu.CompilerParams(lowering_semantics=plgpu.LoweringSemantics.Warpgroup)), "
            "so no layout inference ran",
            stage="no kernel",
            kernels=kernels,
            by=by,
        )
    return Lowering(lowered, kernels, target, by)


def _own_arch() -> tuple[int, int]:
    """The arch JAX targets where none is forced: the GPU's, ``(9, 0)`` without one."""
    major, minor = jax_infer_arch()()
    return (major, minor)


def _failed_stage(raised: BaseException, recorder: Recorder) -> Stage:
    if inference_error(raised, recorder) is not None:
        return "inference"
    if rejected_after_inference(raised, recorder):
        return "after inference"
    return "before inference"


def _message(
    stage: Stage,
    kernels: tuple[CapturedModule, ...],
    by: Pass,
    arch: tuple[int, ...],
    raised: BaseException,
    said: str | None = None,
) -> str:
    """``said``: what to quote of ``raised`` (all it says, by default)."""
    target = f"sm_{arch[0]}{arch[1]}"
    name = kernels[-1].name if kernels else "?"
    what = {
        "before inference": f"lowering for {target} failed before layout inference",
        "inference": f"{by}'s layout inference failed on kernel {name!r} ({target})",
        "after inference": f"JAX's Mosaic GPU lowering rejected kernel {name!r} ({target}) "
        f"after layout inference by {by}",
    }[stage]
    return f"{what}: {type(raised).__name__}: {raised if said is None else said}"
