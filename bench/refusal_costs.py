"""What each part of a refusal's path costs on a module of a few ops, against JAX's pass.

``python -m bench.refusal_costs [FILE ...] [--repeat N] [--runs N]``

On a module of two ops (``tests/unsat/cast_does_not_fit.mlir``, the default
with ``with_transforms_does_not_fit.mlir``) JAX's pass fails in about 0.06 ms,
and smalto's raise has nothing to win back on the reading and the rules
(issue #33, point 8). This bench says where smalto's extra time goes: it times
JAX's pass and smalto's raise back to back (each on itself, in blocks, hot:
the measure in which a short path gains most), then smalto's raise again with
each part of the path that JAX's pass does not have switched off, one at a
time, and all of them at once.

The parts are what other requirements ask for, so they are switched off only
in this process, by replacing the function that does each with one that does
nothing: the traceback that ends at the kernel's line (point 7), the unit-dim
rescue's look (the rewrite), the input check (input errors), the lazy
diagnosis's set-up (the words), the collector's pause (large kernels), and
the use count that proves the program view missed no use of a value needing
a layout. What the path costs without them is the pass itself: reading the
module and running the rules.

Each figure is the least, over ``--runs`` rounds in which the settings take
turns, of the median of ``--repeat`` runs (process CPU time, separately
parsed copies, parsing never timed).
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from collections.abc import Callable, Iterator
from contextlib import ExitStack, contextmanager
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests" / "helpers"))

import reference  # noqa: E402
from jax._src.lib.mlir import ir  # noqa: E402
from jax.experimental.mosaic.gpu import layout_inference  # noqa: E402

import smalto  # noqa: E402
import smalto.infer  # noqa: E402
import smalto.pipeline.steps  # noqa: E402
import smalto.program.reader  # noqa: E402
import smalto.rescue  # noqa: E402
import smalto.rules.context  # noqa: E402

DEFAULT_FILES = [
    ROOT / "tests" / "unsat" / "cast_does_not_fit.mlir",
    ROOT / "tests" / "unsat" / "with_transforms_does_not_fit.mlir",
]


class _NotPaused:
    """The collector left as it is (``smalto.infer.CyclicGcPaused``'s stand-in)."""

    def __enter__(self) -> None:
        pass

    def __exit__(self, *_: object) -> None:
        pass


def _diagnosed_as_raised(original: Callable[..., Any]) -> Callable[..., Any]:
    """``smalto.infer.diagnosed`` without the lazy diagnosis's set-up, for a rule's refusal:
    the rule's error as it was raised."""

    def diagnosed(failure: Any, arch: tuple[int, int]) -> Any:
        if isinstance(failure, smalto.pipeline.steps.RulesRefused):
            return failure.error
        return original(failure, arch)

    return diagnosed


# Each part of the path: (what it is, the module and name of the function that does it,
# what stands in for it).
PARTS: list[tuple[str, object, str, Callable[[Any], Any]]] = [
    (
        "traceback at the kernel line",
        smalto.rules.context,
        "with_op_traceback",
        lambda _: lambda error, *_: error,
    ),
    # (``smalto.infer`` imports it where a kernel first fails: patched where it is read.)
    ("unit-dim rescue's look", smalto.rescue, "rescue", lambda _: lambda *_, **__: (None, [])),
    ("input check", smalto.pipeline.steps, "check_input", lambda _: lambda *_, **__: None),
    ("lazy diagnosis set-up", smalto.infer, "diagnosed", _diagnosed_as_raised),
    ("collector paused", smalto.infer, "CyclicGcPaused", lambda _: _NotPaused),
    (
        "use count of the view",
        smalto.program.reader._Reader,
        "check_uses",
        lambda _: lambda self: True,
    ),
]


@contextmanager
def _without(names: list[str]) -> Iterator[None]:
    """The parts named switched off within the block (their functions put back after)."""
    with ExitStack() as stack:
        for what, owner, attribute, stand_in in PARTS:
            if what not in names:
                continue
            original = getattr(owner, attribute)
            setattr(owner, attribute, stand_in(original))
            stack.callback(setattr, owner, attribute, original)
        yield


def _time_jax(text: str, context: ir.Context) -> float:
    module = reference.parse(text, context)
    start = time.process_time()
    with module.context, ir.Location.unknown():
        try:
            layout_inference.infer_layout(module)
        except Exception:  # noqa: BLE001 -- it fails: that is what is timed
            pass
    return time.process_time() - start


def _time_smalto(text: str, context: ir.Context) -> float:
    module = reference.parse(text, context)
    arch = reference.text_arch(text)
    start = time.process_time()
    try:
        smalto.infer_layout(module, arch=arch)
    except ValueError:
        pass
    return time.process_time() - start


def measure(path: Path, repeat: int, runs: int) -> list[tuple[str, float, float]]:
    """(what, smalto's raise in us, that over JAX's pass) for the path whole, each part
    off, and all off; the first row is JAX's pass itself.

    The settings take turns, one median each per round (the machine's drift spread
    over all of them), and each keeps its least median.
    """
    text = path.read_text()
    context = reference.make_context()
    settings: list[tuple[str, list[str] | None]] = [("JAX's pass", None), ("smalto, whole", [])]
    settings += [(f"  without {part[0]}", [part[0]]) for part in PARTS]
    settings.append(("  without all of them", [part[0] for part in PARTS]))
    best = {label: float("inf") for label, _ in settings}
    _time_jax(text, context)
    _time_smalto(text, context)  # (each pass's first call warms what it caches)
    for _ in range(runs):
        for label, names in settings:
            if names is None:
                median = statistics.median(_time_jax(text, context) for _ in range(repeat))
            else:
                with _without(names):
                    median = statistics.median(_time_smalto(text, context) for _ in range(repeat))
            best[label] = min(best[label], median)
    jax = best["JAX's pass"]
    return [(label, best[label] * 1e6, best[label] / jax) for label, _ in settings]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.refusal_costs", description=__doc__)
    parser.add_argument("files", nargs="*", type=Path, default=DEFAULT_FILES)
    parser.add_argument("--repeat", type=int, default=301, help="runs per median")
    parser.add_argument("--runs", type=int, default=5, help="medians, of which the least")
    args = parser.parse_args(argv)
    for path in args.files:
        print(f"{path.name} (raise, back to back; process CPU time)")
        whole = None
        for label, micros, ratio in measure(path, args.repeat, args.runs):
            if label == "smalto, whole":
                whole = micros
            change = "" if whole is None or micros == whole else f"  ({micros - whole:+.1f} us)"
            print(f"  {label:42s} {micros:7.1f} us  {ratio:5.2f}x JAX{change}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
