"""What the unit-dim rewrite costs, on the keepdims kernels that need it.

``python -m bench.rewrite [--repeat N]``

For each kernel of ``tests/helpers/user_kernels_keepdims.py`` (one per variant and
arch), captured as it reaches layout inference, it times in process CPU time
(the median of ``--repeat`` runs, each on a freshly parsed copy):

- ``as written``: smalto proving the module as written has no layouts
  (``infer_layout(..., rewrite=False)``, which raises);
- ``find webs``: the analysis alone (what the rewrite would change);
- ``with rewrite``: the whole ``infer_layout``, which fails as written, tries
  the rewrite on a copy, then rewrites the module and infers it;

and the ratio of the last to the first. Where a module infers as written the
rewrite costs nothing: it is not even imported (``tests/beyond_jax/test_rewrite_infer.py``
checks that it does not look at the module).
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
import warnings
from collections.abc import Callable
from pathlib import Path

from jax._src.lib.mlir import ir

TESTS = Path(__file__).resolve().parents[1] / "tests" / "helpers"


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
    sys.path.insert(0, str(TESTS))
    import user_kernels_keepdims as kernels

    import smalto
    import smalto.jax
    from smalto.basics.mlir import parse_module
    from smalto.rewrite.webs import find_webs

    seen: set[tuple[str, tuple[int, int]]] = set()
    rows = []
    for kernel in kernels.KERNELS:
        if (kernel.name, kernel.arch) in seen:
            continue
        seen.add((kernel.name, kernel.arch))
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", smalto.UnitDimRewriteWarning)
            with smalto.jax.enabled():
                (captured,) = smalto.jax.capture(kernel.written(), *kernel.args, arch=kernel.arch)
        text = captured.text

        def as_written(text: str = text, arch: tuple[int, int] = kernel.arch) -> None:
            module = parse_module(text)
            with module.context, ir.Location.unknown():
                try:
                    smalto.infer_layout(module, arch=arch, rewrite=False)
                except smalto.InferenceError:
                    return
            raise AssertionError("the module as written inferred")

        def webs(text: str = text) -> None:
            module = parse_module(text)
            with module.context:
                find_webs(module)

        def rewritten(text: str = text, arch: tuple[int, int] = kernel.arch) -> None:
            module = parse_module(text)
            with warnings.catch_warnings():
                warnings.simplefilter("ignore", smalto.UnitDimRewriteWarning)
                with module.context, ir.Location.unknown():
                    smalto.infer_layout(module, arch=arch)

        def parse_only(text: str = text) -> None:
            parse_module(text)

        parse_ms = _cpu_ms(parse_only, args.repeat)
        figures = [_cpu_ms(f, args.repeat) - parse_ms for f in (as_written, webs, rewritten)]
        rows.append((kernel.id, *figures))
    print(
        f"{'kernel':50s} {'as written':>11s} {'find webs':>10s} {'with rewrite':>13s} {'ratio':>6s}"
    )
    for name, written, found, total in rows:
        print(f"{name:50s} {written:9.1f}ms {found:8.1f}ms {total:11.1f}ms {total / written:6.2f}")
    ratios = [total / written for _, written, _, total in rows]
    print(f"median ratio (with rewrite / as written): {statistics.median(ratios):.2f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
