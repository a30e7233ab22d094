"""The per-context caches, found at once for the context last asked about, and what a
refusal reads of locations and types through them (issue #33 point 8: a refusal raises
quickly).

``percontext.cache`` hands out one dict per context and name (emptied at the
bound), the same whether the context was the last asked about (kept at hand)
or looked up; a context that died, or another one, gets its own.
``locations.frames`` answers by a class test where the bindings cast
locations already, the same frames as before for every kind of location;
``validate`` asks a type's problem once per type text.
"""

from __future__ import annotations

import gc

import reference
from jax._src.lib.mlir import ir

from smalto.basics import percontext
from smalto.pipeline import validate
from smalto.program.reader import read_program
from smalto.source.locations import FilePosition, frames, location_name, location_text


def test_one_dict_per_context_and_name_whichever_was_asked_last() -> None:
    # (Not JAX's ``make_ir_context``: it hands out one context ten times.)
    first, second = ir.Context(), ir.Context()
    layouts = percontext.cache(first, "test layouts")
    layouts[1] = "one"
    assert percontext.cache(first, "test layouts") is layouts  # kept at hand
    # Another context (asked in between): its own cache, then the first's again, looked up.
    other = percontext.cache(second, "test layouts")
    assert other is not layouts and other == {}
    assert percontext.cache(first, "test layouts") is layouts
    assert percontext.cache(first, "test other") is not layouts
    assert percontext.cache(second, "test layouts") is other
    # What is kept at hand is the context's own entry: a name first asked for at hand is
    # found when the context is looked up again.
    made_at_hand = percontext.cache(second, "test made at hand")
    percontext.cache(first, "test layouts")
    assert percontext.cache(second, "test made at hand") is made_at_hand


def test_a_cache_at_the_bound_is_replaced() -> None:
    context = ir.Context()
    full = percontext.cache(context, "test bounded")
    full.update((i, i) for i in range(percontext._LIMIT))
    fresh = percontext.cache(context, "test bounded")
    assert fresh is not full and fresh == {}
    assert percontext.cache(context, "test bounded") is fresh


def test_a_dead_context_is_a_miss() -> None:
    context = ir.Context()
    percontext.cache(context, "test dead")[0] = "kept"
    del context
    gc.collect()
    again = ir.Context()
    assert percontext.cache(again, "test dead") == {}


def test_frames_of_every_kind_of_location() -> None:
    with reference.make_context():
        file = ir.Location.file("kernel.py", 22, 8)
        jax_file = ir.Location.file("/x/jax/_src/pallas/core.py", 5, 1)
        named = ir.Location.name("layout_cast:", childLoc=ir.Location.name("layout_cast", file))
        call = ir.Location.callsite(named, [jax_file])
        fused = ir.Location.fused([call, ir.Location.name("swap", file)])
        unknown = ir.Location.unknown()
        here = FilePosition("kernel.py", 22, 8)
        there = FilePosition("/x/jax/_src/pallas/core.py", 5, 1)
        assert frames(file) == [(None, here)]
        assert frames(named) == [("layout_cast", here)]
        assert frames(call) == [("layout_cast", here), (None, there)]
        assert frames(fused) == [("layout_cast", here), (None, there), ("swap", here)]
        assert frames(unknown) == []
        assert location_name(named) == "layout_cast"
        assert location_name(file) is None
        assert location_text(call) == "kernel.py:22:8"
        assert location_text(unknown) == "unknown"


def test_a_type_problem_is_asked_once_per_type_text() -> None:
    text = """
    module {
      func.func @kernel() {
        %r = "mosaic_gpu.slice_smem"() <{offset = 0 : i32}>
          : () -> memref<0x64xf16, #gpu.address_space<workgroup>>
        %d = "arith.constant"() <{value = dense<1.0> : vector<32x32xf32>}> : () -> vector<32x32xf32>
        return
      }
    }
    """
    for _ in range(2):  # the second time from the cache: the same answers
        context = reference.make_context()
        module = reference.parse(text, context)
        with context:
            program = read_program(module)
        problems = sorted(
            (str(value.type), validate._type_problem(value)) for value in program.layout_types
        )
        assert problems == [
            (
                "memref<0x64xf16, #gpu.address_space<workgroup>>",
                "zero-sized dimensions are not supported",
            ),
            ("vector<32x32xf32>", None),
        ]
