"""JAX's own Mosaic GPU dialect lowering, run on an annotated copy of a kernel, without a GPU.

The checker knows JAX 0.12.0.1's lowering requirements on layouts; the
lowering itself knows a few more (collective attributes that agree, cluster
sizes...). A kernel as JAX hands it to layout inference sits inside its
``gpu.launch``, so the launch context the lowering needs can be rebuilt from
the module: the launch op (for the GMEM scratch of TMA descriptors), its
cluster size, and the launching function's last argument (the buffers). Where
the module has no single ``gpu.launch`` (a bare function, as in hand-written
tests), there is nothing to rebuild it from and the lowering is not run.
"""

from __future__ import annotations

from typing import cast

from jax._src.lib.mlir import ir
from jax._src.lib.mlir.dialects import gpu

from smalto.program.view import Program
from smalto.rules.tmem import mixed_collective_ops

# What JAX's lowering says of such a kernel (its first line).
COLLECTIVE_MIXED = "Collective attributes are inconsistent across operations in the kernel."


class NoLaunchContext(Exception):
    """The module holds no single ``gpu.launch`` to rebuild a launch context from."""


def lower_in_own_launch(module: ir.Operation) -> None:
    """Runs JAX's dialect lowering on the annotated ``module`` (a ``builtin.module`` op,
    consumed) in the launch context its own ``gpu.launch`` calls for, then verifies it.

    Raises what JAX's lowering raises for what it cannot lower, and
    ``NoLaunchContext`` where the module has no launch to rebuild one from.
    """
    from jax.experimental.mosaic.gpu import dialect_lowering
    from jax.experimental.mosaic.gpu import launch_context as lc

    view = module.opview  # the lowering reads the module's ``body``
    launches = _launches(module)
    if len(launches) != 1:
        raise NoLaunchContext(f"{len(launches)} gpu.launch ops")
    launch = launches[0]
    function = launch.parent
    while function is not None and function.name != "func.func":
        function = function.parent
    if function is None or not function.regions[0].blocks[0].arguments:
        raise NoLaunchContext("no launching function with a buffer argument")
    buffers = function.regions[0].blocks[0].arguments[-1]
    cluster = _cluster_size(launch)
    if cluster is None:
        raise NoLaunchContext("a cluster size that is not a constant")
    with module.context, ir.Location.unknown(module.context):
        scratch = lc.Scratch(cast(gpu.LaunchOp, launch.opview))  # a gpu.launch (``_launches``)
        # JAX's annotations ask for an ir.Module; the copy here is a module op, whose view has
        # the same ``body`` and ``context`` the lowering reads (no type of the stubs says so).
        context = lc.LaunchContext(view, scratch, cluster, buffers)  # type: ignore[arg-type]
        dialect_lowering.lower_mgpu_dialect(view, context)  # type: ignore[arg-type]
        context.scratch.finalize_size()
        module.verify()


def jax_lowering_accepts(module: ir.Operation) -> tuple[bool | None, str]:
    """Lowers the annotated ``module`` (a ``builtin.module`` op, consumed) with JAX's
    dialect lowering (``lower_in_own_launch``).

    ``(True, "")`` if it lowers and verifies, ``(False, why)`` if the lowering
    rejects it, ``(None, "")`` if it cannot be run on this module (no single
    ``gpu.launch``, or a part of the launch context it cannot rebuild).
    """
    from jax.experimental.mosaic.gpu import fragmented_array as fa

    rejections = (
        ValueError,
        NotImplementedError,
        ir.MLIRError,
        fa.TransferPlanDerivationError,
    )
    try:
        lower_in_own_launch(module)
    except NoLaunchContext:
        return None, ""
    except rejections as error:
        # What JAX raises for layouts (or anything else) it cannot lower.
        return False, str(error).splitlines()[0] if str(error) else type(error).__name__
    except Exception:  # noqa: BLE001 -- a launch context part this rebuild lacks
        return None, ""
    return True, ""


def collective_mixed(program: Program) -> bool:
    """Whether JAX's lowering rejects the module read into ``program`` for mixing collective
    and 1-CTA ops (``smalto.rules.tmem.mixed_collective_ops``)."""
    return mixed_collective_ops(program) is not None


def _launches(module: ir.Operation) -> list[ir.Operation]:
    found: list[ir.Operation] = []

    def visit(op: ir.Operation) -> ir.WalkResult:
        if op.name == "gpu.launch":
            found.append(op)
            return ir.WalkResult.SKIP
        return ir.WalkResult.ADVANCE

    module.walk(visit, ir.WalkOrder.PRE_ORDER)
    return found


def _cluster_size(launch: ir.Operation) -> tuple[int, int, int] | None:
    """The launch's cluster size, (1, 1, 1) without one; None if it is not constant."""
    view = cast(gpu.LaunchOp, launch.opview)  # only gpu.launch ops come here (``_launches``)
    sizes = [view.clusterSizeX, view.clusterSizeY, view.clusterSizeZ]
    if all(size is None for size in sizes):
        return (1, 1, 1)
    out = []
    for size in sizes:
        owner = getattr(size, "owner", None)
        if owner is None or owner.name != "arith.constant":
            return None
        out.append(ir.IntegerAttr(owner.attributes["value"]).value)
    return (out[0], out[1], out[2])


__all__ = [
    "COLLECTIVE_MIXED",
    "NoLaunchContext",
    "collective_mixed",
    "jax_lowering_accepts",
    "lower_in_own_launch",
]
