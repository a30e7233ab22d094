"""The first kernel as JAX's route meets it, import included: the whole Pallas lowering,
with JAX's pass and with smalto's (``smalto.jax.install()``), in fresh processes.

``python -m bench.route_first_kernel [--repeat N]``

A user who puts smalto on JAX's route writes ``import smalto.jax;
smalto.jax.install()`` at the top of a script that already imports JAX and
Pallas; the first kernel the script compiles then pays for loading smalto. For
each kernel below taken first, ``--repeat`` fresh processes per route (in
turns) import JAX, Pallas' Mosaic GPU package and the kernels (not timed: the
script imports them either way), then time by process CPU time:

- **first**: for smalto's route, ``import smalto.jax``, ``install()``, and the
  first kernel's whole lowering (``jax.jit(f).trace(*args).lower(
  lowering_platforms=("cuda",))``: Pallas' lowering, layout inference, JAX's
  Mosaic GPU dialect lowering, no GPU needed); for JAX's, the same lowering;
- **later**: each of the other kernels' whole lowering, after it, in the same
  process.

Each figure is the median over the processes. Issue #52: the first kernel
costs no more than a few percent over JAX's whole lowering, and every later
one less. The kernels are Hopper kernels as Pallas users write them (this
host has no GPU, and JAX's lowering takes Hopper then): the repository's
example matmul and attention, an elementwise chain and a bf16 GELU. Each
lowers with both passes to the same layouts.
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import time
from collections.abc import Callable, Sequence
from typing import Any

from bench import REPO_ROOT

ROUTES = ("jax", "smalto")


def _kernels() -> dict[str, tuple[Callable[..., Any], tuple[Any, ...]]]:
    """The kernels by name: (function, example arguments)."""
    import jax
    import jax.numpy as jnp
    from jax.experimental.pallas import mosaic_gpu as plgpu

    sys.path.insert(0, str(REPO_ROOT / "examples"))
    import pallas_attention
    import pallas_matmul

    def elementwise(x: jax.Array, y: jax.Array) -> jax.Array:
        def body(x_ref, y_ref, o_ref):  # type: ignore[no-untyped-def]
            o_ref[...] = jnp.exp(x_ref[...] * 0.5) + y_ref[...]

        return plgpu.kernel(body, out_type=jax.ShapeDtypeStruct(x.shape, x.dtype))(x, y)

    def gelu(x: jax.Array) -> jax.Array:
        def body(x_ref, o_ref):  # type: ignore[no-untyped-def]
            x = x_ref[...].astype(jnp.float32)
            o_ref[...] = (0.5 * x * (1 + jnp.tanh(0.79788456 * x))).astype(o_ref.dtype)

        return plgpu.kernel(body, out_type=jax.ShapeDtypeStruct(x.shape, x.dtype))(x)

    f32 = jax.ShapeDtypeStruct((256, 256), jnp.float32)
    return {
        "matmul": (pallas_matmul.matmul, pallas_matmul.example_args()),
        "attention": (pallas_attention.attention, pallas_attention.example_args()),
        "elementwise": (elementwise, (f32, f32)),
        "gelu": (gelu, (jax.ShapeDtypeStruct((128, 256), jnp.bfloat16),)),
    }


def _child(first: str, route: str) -> dict[str, Any]:
    """In a fresh process: the first kernel's cost (import included), then the others'."""
    import jax
    from jax.experimental.pallas import mosaic_gpu  # noqa: F401 -- the user's script's imports

    kernels = _kernels()
    order = [first, *(name for name in kernels if name != first)]
    loaded = sorted(name for name in sys.modules if name.split(".")[0] == "smalto")
    if loaded:  # the first kernel would not pay the import it is here to time
        raise RuntimeError(f"smalto is imported before the timing starts: {', '.join(loaded)}")

    def lower(name: str) -> None:
        fn, args = kernels[name]
        jax.jit(fn).trace(*args).lower(lowering_platforms=("cuda",))

    start = time.process_time()
    if route == "smalto":
        import smalto.jax

        smalto.jax.install()
    lower(first)
    figures: dict[str, Any] = {"first": (time.process_time() - start) * 1e3, "later": {}}
    for name in order[1:]:
        start = time.process_time()
        lower(name)
        figures["later"][name] = (time.process_time() - start) * 1e3
    return figures


def _fresh(first: str, route: str) -> dict[str, Any]:
    # (Here, not at the top: the child process that imports this module must not load
    # smalto before its timing starts, and these modules import it.)
    from bench.first_call import _child_environment

    argv = [sys.executable, "-m", "bench.route_first_kernel", "--child", first, route]
    done = subprocess.run(
        argv, cwd=REPO_ROOT, env=_child_environment(), capture_output=True, text=True, check=False
    )
    if done.returncode != 0:
        raise RuntimeError(f"{' '.join(argv)} failed:\n{done.stderr}")
    figures: dict[str, Any] = json.loads(done.stdout.strip().splitlines()[-1])
    return figures


def _median(runs: dict[str, list[dict[str, Any]]], route: str, name: str | None = None) -> float:
    """The median over a route's processes of its first kernel's ms, or of kernel ``name``'s."""
    if name is None:
        return statistics.median(run["first"] for run in runs[route])
    return statistics.median(run["later"][name] for run in runs[route])


HEADERS = (
    "first kernel",
    "JAX ms",
    "smalto ms (import incl.)",
    "smalto/JAX",
    "later kernels: smalto/JAX, median",
    "worst later",
)


def _positive_int(text: str) -> int:
    from bench.run import positive_int  # (not in the child: see ``_fresh``)

    return positive_int(text)


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.route_first_kernel", description=__doc__)
    parser.add_argument("--repeat", type=_positive_int, default=5)
    parser.add_argument("--child", nargs=2, metavar=("KERNEL", "ROUTE"), help=argparse.SUPPRESS)
    parser.add_argument("-k", dest="only", default="", help="only first kernels named with TEXT")
    args = parser.parse_args(argv)
    if args.child:
        print(json.dumps(_child(*args.child)))
        return 0
    from bench.run import text_table  # (not in the child: see ``_fresh``)

    names = ["matmul", "attention", "elementwise", "gelu"]
    _fresh(names[0], "smalto")  # fills the bytecode cache, as an installed package has it
    rows = []
    firsts: list[float] = []
    laters: list[float] = []
    for first in (n for n in names if args.only in n):
        print(f"  {first} first ...", file=sys.stderr, flush=True)
        runs: dict[str, list[dict[str, Any]]] = {route: [] for route in ROUTES}
        for _ in range(args.repeat):
            for route in ROUTES:  # in turns, so that a busy spell falls on both
                runs[route].append(_fresh(first, route))

        ratio = _median(runs, "smalto") / _median(runs, "jax")
        later = [_median(runs, "smalto", n) / _median(runs, "jax", n) for n in names if n != first]
        firsts.append(ratio)
        laters += later
        rows.append(
            [
                first,
                f"{_median(runs, 'jax'):.1f}",
                f"{_median(runs, 'smalto'):.1f}",
                f"{ratio:.3f}x",
                f"{statistics.median(later):.3f}x",
                f"{max(later):.3f}x",
            ]
        )
    print(text_table(list(HEADERS), rows))
    print(
        f"\nfirst kernel, smalto's route / JAX's (import included): median "
        f"{statistics.median(firsts):.3f}x, worst {max(firsts):.3f}x; later kernels: median "
        f"{statistics.median(laters):.3f}x, worst {max(laters):.3f}x (median of {args.repeat} "
        "fresh processes per route, process CPU time)"
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
