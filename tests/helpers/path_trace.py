"""How straight the pass reads: the modules one value's path through it touches.

The value: a ``vector.multi_reduction`` of a ``mosaic_gpu.wgmma`` accumulator
(a row sum of an MMA's result, as a softmax takes it), followed from
``smalto.infer_layout`` to the attribute written on the reduction. The pass
is traced (``sys.setprofile``: Python calls only) and, of smalto's own code,
two figures are counted:

- *modules*: the distinct smalto modules entered;
- *doubles back*: the distinct pairs (module B, module A) where control
  returns to a module it had left, against the layers' one direction:
  B, called (directly or not) from A, calls back into A (a callback, an
  object calling the code that made it); or a method in B calls one of
  the same object's methods written in A (one state spread over classes in
  several files: the reader of a method must open both).

A call from a module into itself, or into a module not on the stack and on
another object, is neither. Each pair counts once however often it happens
(one per op would measure the kernel, not the code).

Run: ``python -m bench.trace_path`` (``--list`` names the modules and pairs).
The ceiling test (``tests/codebase/test_trace_path.py``) holds the figures down.
(Test support, so under ``tests/helpers/``; ``bench/trace_path.py`` is its
command line.)
"""

from __future__ import annotations

import argparse
import sys
from dataclasses import dataclass, field
from types import FrameType
from typing import Any

from jax._src.lib.mlir import ir

import smalto
from smalto.basics.mlir import make_context

_SMEM = "#gpu.address_space<workgroup>"
_A, _B = f"memref<64x64xf16, {_SMEM}>", f"memref<64x128xf16, {_SMEM}>"

# The kernel: an MMA into an f32 accumulator, its rows summed.
KERNEL = f"""
func.func @k() {{
  %a = "mosaic_gpu.slice_smem"() <{{offset = 0 : i32}}> : () -> {_A}
  %b = "mosaic_gpu.slice_smem"() <{{offset = 65536 : i32}}> : () -> {_B}
  %acc = "arith.constant"() <{{value = dense<0.0> : vector<64x128xf32>}}> : () -> vector<64x128xf32>
  %d = "mosaic_gpu.wgmma"(%acc, %a, %b) : (vector<64x128xf32>, {_A}, {_B}) -> vector<64x128xf32>
  %zero = "arith.constant"() <{{value = dense<0.0> : vector<64xf32>}}> : () -> vector<64xf32>
  %r = "vector.multi_reduction"(%d, %zero)
    <{{kind = #vector.kind<add>, reduction_dims = array<i64: 1>}}>
    : (vector<64x128xf32>, vector<64xf32>) -> vector<64xf32>
  "func.return"() : () -> ()
}}
"""

HOPPER = (9, 0)


@dataclass
class Trace:
    """What the profile saw of smalto's modules."""

    modules: list[str] = field(default_factory=list)  # in the order first entered
    doubles_back: list[tuple[str, str]] = field(default_factory=list)  # (from, back into)


def _module_of(frame: FrameType) -> str | None:
    name = frame.f_globals.get("__name__")
    if isinstance(name, str) and (name == "smalto" or name.startswith("smalto.")):
        return name
    return None


def _smalto_stack(frame: FrameType | None) -> list[str]:
    """The smalto modules on the stack below ``frame`` (innermost first), runs merged."""
    stack: list[str] = []
    while frame is not None:
        module = _module_of(frame)
        if module is not None and (not stack or stack[-1] != module):
            stack.append(module)
        frame = frame.f_back
    return stack


def _same_self(frame: FrameType) -> bool:
    """Whether the caller is a method of the object this method is called on."""
    caller = frame.f_back
    if caller is None or "self" not in frame.f_locals or "self" not in caller.f_locals:
        return False
    return frame.f_locals["self"] is caller.f_locals["self"]


def trace(module: ir.Module, arch: tuple[int, int] = HOPPER) -> Trace:
    """Infers ``module``'s layouts under the profile (the module is annotated)."""
    found = Trace()
    seen: set[str] = set()
    pairs: set[tuple[str, str]] = set()

    def profile(frame: FrameType, event: str, arg: Any) -> None:
        if event != "call":
            return
        module = _module_of(frame)
        if module is None:
            return
        if module not in seen:
            seen.add(module)
            found.modules.append(module)
        below = _smalto_stack(frame.f_back)
        if not below or below[0] == module:
            return  # the entry, or a call within the module
        if module in below[1:] or _same_self(frame):
            pair = (below[0], module)
            if pair not in pairs:
                pairs.add(pair)
                found.doubles_back.append(pair)

    sys.setprofile(profile)
    try:
        smalto.infer_layout(module, arch=arch)
    finally:
        sys.setprofile(None)
    return found


def kernel_module() -> ir.Module:
    ctx = make_context()
    with ctx, ir.Location.unknown():
        return ir.Module.parse(KERNEL)


def warm() -> None:
    """Imports and per-context caches first, so the traced run is the path itself."""
    smalto.infer_layout(kernel_module(), arch=HOPPER)


def measure() -> Trace:
    warm()
    module = kernel_module()
    result = trace(module)
    reduction = next(
        op
        for op in module.body.operations[0].regions[0].blocks[0].operations
        if op.operation.name == "vector.multi_reduction"
    )
    if "out_layouts" not in reduction.operation.attributes:
        raise AssertionError("the reduction was given no layout")
    return result


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--list", action="store_true", help="name the modules and pairs")
    args = parser.parse_args(argv)
    result = measure()
    print(f"modules entered: {len(result.modules)}")
    print(f"doubles back:    {len(result.doubles_back)}")
    if args.list:
        print("\nmodules, in the order first entered:")
        for name in result.modules:
            print(f"  {name}")
        print("\ndoubles back (from -> back into):")
        for below, back in result.doubles_back:
            print(f"  {below} -> {back}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
