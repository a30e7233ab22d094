"""What staging through SMEM costs the pass, on the epilogue kernels that need it.

``python -m bench.staging [--repeat N]``

For each kernel of the staging tests' epilogue family
(``tests/helpers/staging_kernels.py``: tcgen05 and wgmma results stored as bf16, f16 and fp8,
row vectors, two warpgroups, GMEM loads), captured as it reaches layout
inference, it times in process CPU time (the median of ``--repeat`` runs, each
on a freshly parsed copy, the parse subtracted):

- ``as written``: smalto refusing the module as written (``infer_layout``, which
  raises);
- ``unoptimized``: ``infer_layout(..., allow_unoptimized=True)``;
- ``staged``: ``infer_layout(..., stage_through_smem=True)``: the refusal, the
  plan, the staged copy inferred, then the module staged and inferred;
- ``jax``: JAX's own pass on the same module (it answers with layouts its
  lowering rejects);

and the ratio of ``staged`` to ``jax``. The first call in a fresh process is
in the first of the repeats (the median hides it: ``--repeat 1`` shows it).

Then the SMEM per block of each kernel, and of the kernels whose staging reuses
dead SMEM (issue #50: several epilogues, the sm_100 ragged dot with an f32
output): as written, staged with every buffer past the end (``_dead_regions``
finding none), and staged now; a kernel that does not fit in what a block may have
says so.
"""

from __future__ import annotations

import argparse
import re
import statistics
import sys
import time
import warnings
from collections.abc import Callable
from pathlib import Path
from typing import Any

from jax._src.lib.mlir import ir

TESTS = Path(__file__).resolve().parents[1] / "tests"


def _cpu_ms(run: Callable[[], None], repeat: int) -> float:
    times = []
    for _ in range(repeat):
        start = time.process_time()
        run()
        times.append((time.process_time() - start) * 1000)
    return statistics.median(times)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=5)
    args = parser.parse_args(argv)
    sys.path.insert(0, str(TESTS / "helpers"))
    from jax.experimental.mosaic.gpu import layout_inference  # the reference
    from staging_kernels import SMEM_REUSE_KERNELS, STAGED_KERNELS

    import smalto
    import smalto.jax
    from smalto.basics.mlir import parse_module

    rows = []
    for name, arch, fn, kernel_args, *_ in STAGED_KERNELS:
        (captured,) = smalto.jax.capture(fn, *kernel_args)
        text = captured.text

        def infer(options: dict[str, Any], text: str = text, arch: Any = arch) -> None:
            module = parse_module(text)
            with warnings.catch_warnings(), module.context, ir.Location.unknown():
                warnings.simplefilter("ignore")
                try:
                    smalto.infer_layout(module, arch=arch, **options)
                except smalto.InferenceError:
                    if options:
                        raise

        def jax_pass(text: str = text) -> None:
            module = parse_module(text)
            with module.context, ir.Location.unknown():
                try:
                    layout_inference.infer_layout(module)
                except ValueError:
                    pass

        def parse_only(text: str = text) -> None:
            parse_module(text)

        parse_ms = _cpu_ms(parse_only, args.repeat)
        runs: list[Callable[[], None]] = [
            lambda: infer({}),
            lambda: infer({"allow_unoptimized": True}),
            lambda: infer({"stage_through_smem": True}),
            jax_pass,
        ]
        rows.append((name, *[_cpu_ms(run, args.repeat) - parse_ms for run in runs]))
    header = ("as written", "unoptimized", "staged", "jax", "staged/jax")
    print(f"{'kernel':34s}" + "".join(f"{h:>13s}" for h in header))
    for name, written, unoptimized, staged, jax_ms in rows:
        figures = "".join(f"{f:11.1f}ms" for f in (written, unoptimized, staged, jax_ms))
        print(f"{name:34s}{figures}{staged / jax_ms:13.2f}")
    ratios = [staged / jax_ms for *_, staged, jax_ms in rows]
    print(f"median ratio (staged / JAX's pass): {statistics.median(ratios):.2f}")
    print()
    _smem_totals([(k[0], k[1], k[2], k[3]) for k in (*STAGED_KERNELS, *SMEM_REUSE_KERNELS)])
    return 0


def _smem_totals(kernels: list[tuple[str, Any, Callable[..., Any], Any]]) -> None:
    """The SMEM per block of each kernel as written, staged past the end, and staged now."""
    import smalto
    import smalto.jax
    from smalto.basics.launch import dynamic_smem
    from smalto.basics.mlir import parse_module
    from smalto.rewrite import staging

    def staged_smem(text: str, arch: Any) -> str:
        module = parse_module(text)
        with warnings.catch_warnings(), module.context, ir.Location.unknown():
            warnings.simplefilter("ignore")
            try:
                smalto.infer_layout(module, arch=arch, stage_through_smem=True)
            except smalto.InferenceError as error:
                note = " ".join(getattr(error, "__notes__", []))
                needed = re.search(r"needs (\d+) bytes", note)
                return f"{needed.group(1)} (over)" if needed else "refused"
            return str(_launch_smem(module))

    def _launch_smem(module: Any) -> int | None:
        found: list[int | None] = []

        def visit(op: Any) -> Any:
            if op.name == "gpu.launch":
                found.append(dynamic_smem(op))
            return ir.WalkResult.ADVANCE

        module.operation.walk(visit, ir.WalkOrder.PRE_ORDER)
        return found[0] if found else None

    print(
        f"{'kernel (SMEM bytes per block)':34s}{'as written':>13s}{'past the end':>16s}{'now':>13s}"
    )
    for name, arch, fn, kernel_args in kernels:
        (captured,) = smalto.jax.capture(fn, *kernel_args)
        text = captured.text
        written = _launch_smem(parse_module(text))
        keep = staging._dead_regions
        staging._dead_regions = lambda *_: {}  # every buffer past the end
        try:
            before = staged_smem(text, arch)
        finally:
            staging._dead_regions = keep
        now = staged_smem(text, arch)
        print(f"{name:34s}{written!s:>13s}{before:>16s}{now:>13s}")


if __name__ == "__main__":
    sys.exit(main())
