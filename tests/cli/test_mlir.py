"""Tests of smalto.basics.mlir: context, parsing with one-line errors, printing."""

from __future__ import annotations

from pathlib import Path

import pytest

from smalto.basics.mlir import MlirInputError, make_context, module_arch, parse_module, print_module

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"

KERNEL = """\
module attributes {mosaic_gpu.arch_major = 10 : i32, mosaic_gpu.arch_minor = 0 : i32} {
  func.func @kernel(%x: vector<128xf32>) -> vector<128xf32> {
    %y = arith.addf %x, %x : vector<128xf32>
    %z = "mosaic_gpu.layout_cast"(%y) <{new_layout = #mosaic_gpu.WGStridedFragLayout<[128], 1>}>
        : (vector<128xf32>) -> vector<128xf32>
    return %z : vector<128xf32>
  }
}
"""


def test_make_context_gives_a_fresh_context_each_time() -> None:
    assert make_context() is not make_context()


def test_make_context_knows_mosaic_gpu_and_upstream_dialects() -> None:
    context = make_context()
    for dialect in ("mosaic_gpu", "arith", "vector", "scf", "memref", "llvm", "nvvm", "gpu"):
        assert context.is_registered_operation(f"{dialect}.{_AN_OP[dialect]}"), dialect


_AN_OP = {
    "mosaic_gpu": "layout_cast",
    "arith": "addf",
    "vector": "broadcast",
    "scf": "for",
    "memref": "subview",
    "llvm": "mlir.undef",
    "nvvm": "read.ptx.sreg.tid.x",
    "gpu": "launch",
}


def test_parse_module_reads_a_mosaic_gpu_kernel() -> None:
    module = parse_module(KERNEL)
    text = print_module(module, generic=False)
    assert "mosaic_gpu.layout_cast" in text
    assert "arith.addf" in text


def test_parse_module_uses_the_given_context() -> None:
    context = make_context()
    module = parse_module(KERNEL, context=context)
    assert module.context == context


def test_generic_and_pretty_forms_round_trip() -> None:
    module = parse_module(KERNEL)
    generic = print_module(module, generic=True)
    pretty = print_module(module, generic=False)
    assert generic.startswith('"builtin.module"()')
    assert pretty.startswith("module attributes")
    assert print_module(parse_module(generic), generic=False) == pretty
    assert print_module(parse_module(pretty), generic=True) == generic


def test_debug_info_prints_locations() -> None:
    module = parse_module(
        KERNEL.replace("vector<128xf32>\n    return", 'vector<128xf32> loc("k.py":3:4)\n    return')
    )
    assert 'loc("k.py":3:4)' in print_module(module, generic=False, debug_info=True)
    assert "loc(" not in print_module(module, generic=False)


@pytest.mark.parametrize("path", sorted(EXAMPLES.glob("*.mlir")), ids=lambda p: p.name)
def test_examples_parse_and_target_hopper(path: Path) -> None:
    module = parse_module(path.read_text(), source_name=str(path))
    assert module_arch(module) == (9, 0)


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("garbage", "k.mlir:1:1: custom op 'garbage' is unknown"),
        ('"builtin.module"() ({', "k.mlir:1:21: expected operation name in quotes"),
        ("\n\n  %0 = arith.addi %x, %x : i32\n", "k.mlir:3:19: use of undeclared SSA value name"),
        (
            '"nope.op"() : () -> ()',
            "k.mlir:1:10: operation being parsed with an unregistered dialect",
        ),
    ],
)
def test_malformed_text_raises_one_line_with_location(text: str, expected: str) -> None:
    with pytest.raises(MlirInputError) as caught:
        parse_module(text, source_name="k.mlir")
    message = str(caught.value)
    assert message.startswith(expected)
    assert "\n" not in message


def test_verifier_errors_are_reported_too() -> None:
    text = 'module {\n  %0 = "arith.constant"() <{value = 1 : i32}> : () -> i64\n}\n'
    with pytest.raises(
        MlirInputError, match=r"^k\.mlir:2:8: 'arith\.constant' op failed to verify"
    ):
        parse_module(text, source_name="k.mlir")


def test_explicit_locations_are_kept_in_errors() -> None:
    text = (
        'module {\n  %0 = "arith.constant"() <{value = 1 : i32}> : () -> i64 loc("k.py":7:3)\n}\n'
    )
    with pytest.raises(MlirInputError, match=r"^k\.py:7:3: 'arith\.constant'"):
        parse_module(text)


def test_mlir_input_error_is_a_value_error() -> None:
    with pytest.raises(ValueError):
        parse_module("garbage")


def test_module_arch() -> None:
    assert module_arch(parse_module(KERNEL)) == (10, 0)
    assert module_arch(parse_module("module {}")) is None
    only_major = parse_module("module attributes {mosaic_gpu.arch_major = 9 : i32} {}")
    assert module_arch(only_major) == (9, 0)
    not_an_int = parse_module('module attributes {mosaic_gpu.arch_major = "9"} {}')
    with pytest.raises(MlirInputError, match="must be integers"):
        module_arch(not_an_int)
