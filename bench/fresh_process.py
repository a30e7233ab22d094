"""One pass's first and second call, in the fresh process that runs this module.

``python -m bench.fresh_process FILE {jax,smalto} MAJOR.MINOR`` prints one line of
JSON: the process CPU milliseconds of

- ``jax_import``: ``import jax.experimental.mosaic.gpu``, JAX's Mosaic GPU package
  (a Pallas compile for GPU imports it anyway), with its layout-inference pass;
- ``smalto_import`` (``smalto`` only): then ``import smalto.infer``, the pass's modules;
- ``first``: the pass on the module, parsed in a context made as JAX's lowering makes
  one (every cache empty, the other pass never run in this process);
- ``second``: the pass again, on a fresh parse of the same text in the same context;
- ``words`` (where the first call raised): then reading the error's message
  (``str``), which smalto words when it is first read (its diagnosis, verified
  fixes included), and JAX's pass has worded already;

and ``outcome``: ``ok``, or the name of the exception the first call raised, and
``answer``: a digest of the layout attributes the first call wrote (taken after
the timing), to compare the two passes' answers.

Run by ``bench.first_call``, which starts a process per (module, pass). Only the
standard library is imported before the timing starts, so that each import is timed
whole.
"""

from __future__ import annotations

import json
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any


def _milliseconds(start: float) -> float:
    return (time.process_time() - start) * 1e3


def _call(run: Callable[[Any], object], module: Any) -> tuple[float, str, float | None]:
    """(ms to return or raise, the outcome, ms to read the message where it raised)."""
    start = time.process_time()
    try:
        run(module)
    except Exception as error:  # a refusal: its time is what the user waits for
        raised = _milliseconds(start)
        start = time.process_time()
        str(error)
        return raised, type(error).__name__, _milliseconds(start)
    return _milliseconds(start), "ok", None


def measure(path: Path, which: str, arch: tuple[int, int]) -> dict[str, Any]:
    text = path.read_text()
    result: dict[str, Any] = {}
    start = time.process_time()
    import jax.experimental.mosaic.gpu  # noqa: F401 -- timed: JAX's own Mosaic GPU package
    from jax.experimental.mosaic.gpu import layout_inference

    result["jax_import"] = _milliseconds(start)
    run: Callable[[Any], object]
    if which == "smalto":
        start = time.process_time()
        import smalto.infer

        result["smalto_import"] = _milliseconds(start)

        def run(module: Any) -> object:
            return smalto.infer.infer_layout(module, arch=arch)
    else:

        def run(module: Any) -> object:
            return layout_inference.infer_layout(module, arch=arch)

    # The context as JAX's lowering makes it (jax._src.interpreters.mlir), with the
    # Mosaic GPU dialect registered as Pallas' lowering registers it.
    from jax._src.interpreters import mlir as jax_mlir
    from jax._src.lib import mosaic_gpu_dialect
    from jax._src.lib.mlir import ir

    context = jax_mlir.make_ir_context()
    mosaic_gpu_dialect.register_dialect(context)
    with context, ir.Location.unknown():
        module = ir.Module.parse(text)
        result["first"], result["outcome"], words = _call(run, module)
        if words is not None:
            result["words"] = words
        result["second"], *_ = _call(run, ir.Module.parse(text))
        import reference

        from bench.run import answer_fingerprint

        result["answer"] = answer_fingerprint(reference.layout_attributes(module))
    return result


def main(argv: list[str]) -> int:
    path, which, arch_text = argv
    if which not in ("jax", "smalto"):
        print(f"bench.fresh_process: error: no pass {which!r}", file=sys.stderr)
        return 2
    major, minor = (int(part) for part in arch_text.split("."))
    print(json.dumps(measure(Path(path), which, (major, minor))))
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
