# ruff: noqa: E501  (MLIR fixtures read best one op per line)
"""Bad input: each gets a clear error, and a module is never left half-annotated.

Library: malformed text fails to parse with a one-line ``MlirInputError``;
types smalto cannot lay out (dynamic, zero-sized, scalable or huge shapes,
element types without a power-of-two bitwidth) raise ``UnsupportedInput`` (a
``ValueError``, and an ``MlirInputError`` for the command line); ops without a
rule raise ``NotImplementedError`` naming the op; bad ``fuel``/``arch`` raise
``ValueError``. An annotated module is accepted and re-inferred identically.

Command line (``smalto infer``): input errors exit 2 with one line, inference
errors exit 1, never a traceback.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest
import reference
from jax._src.lib.mlir import ir

import smalto
from smalto.basics.mlir import MlirInputError, parse_module
from smalto.cli.main import main
from smalto.pipeline.validate import UnsupportedInput

REPO = Path(__file__).resolve().parents[2]
SMEM = "#gpu.address_space<workgroup>"
TMEM = "#mosaic_gpu.tmem"


def kernel(body: str, args: str = "") -> str:
    return f'func.func @k({args}) {{\n{body}\n  "func.return"() : () -> ()\n}}\n'


GOOD = kernel(
    f"""
  %r = "mosaic_gpu.slice_smem"() <{{offset = 0 : i32}}> : () -> memref<128x64xf16, {SMEM}>
  %x = "mosaic_gpu.vector_load"(%r) : (memref<128x64xf16, {SMEM}>) -> vector<128x64xf16>
  %y = "arith.addf"(%x, %x) : (vector<128x64xf16>, vector<128x64xf16>) -> vector<128x64xf16>
  "mosaic_gpu.vector_store"(%y, %r) : (vector<128x64xf16>, memref<128x64xf16, {SMEM}>) -> ()
"""
)

UNSAT = kernel(
    """
  %c = "arith.constant"() <{value = dense<1.0> : vector<128x128xf32>}> : () -> vector<128x128xf32>
  %a = "mosaic_gpu.layout_cast"(%c) <{new_layout = #mosaic_gpu.WGStridedFragLayout<[128, 128], 4>}> : (vector<128x128xf32>) -> vector<128x128xf32>
  %b = "mosaic_gpu.layout_cast"(%a) <{new_layout = #mosaic_gpu.TiledLayout<[[64, 8], [16, 8], [8, 8], [2]], warp_dims = [-7], lane_dims = [-3, -2], vector_dim = -1>}> : (vector<128x128xf32>) -> vector<128x128xf32>
"""
)

NO_RULE = kernel(
    """
  %c = "arith.constant"() <{value = dense<1.0> : vector<128x64xf32>}> : () -> vector<128x64xf32>
  %t = "vector.transpose"(%c) <{permutation = array<i64: 1, 0>}> : (vector<128x64xf32>) -> vector<64x128xf32>
  %u = "arith.addf"(%t, %t) : (vector<64x128xf32>, vector<64x128xf32>) -> vector<64x128xf32>
"""
)

# Modules that parse but whose types smalto cannot lay out: (text, what the message says).
UNSUPPORTED = {
    "huge-vector": (
        kernel(
            '  %c = "mosaic_gpu.broadcasted_iota"() <{dimension = 0 : i32}> : () -> vector<1073741824x1073741824xi32>'
        ),
        "more than smalto supports",
    ),
    "huge-smem": (
        kernel(
            f'  %r = "mosaic_gpu.slice_smem"() <{{offset = 0 : i32}}> : () -> memref<65536x65536xf16, {SMEM}>\n'
            f'  %x = "mosaic_gpu.vector_load"(%r) : (memref<65536x65536xf16, {SMEM}>) -> vector<65536x65536xf16>'
        ),
        "more than smalto supports",
    ),
    "zero-sized-smem": (
        kernel(
            f'  %r = "mosaic_gpu.slice_smem"() <{{offset = 0 : i32}}> : () -> memref<0x64xf16, {SMEM}>\n'
            f'  %w = "mosaic_gpu.with_transforms"(%r) <{{transforms = []}}> : (memref<0x64xf16, {SMEM}>) -> memref<0x64xf16, {SMEM}>'
        ),
        "zero-sized dimensions",
    ),
    "dynamic-smem": (
        kernel(
            f'  %d = "memref.cast"(%r) : (memref<?x64xf16, {SMEM}>) -> memref<128x64xf16, {SMEM}>\n'
            f'  %x = "mosaic_gpu.vector_load"(%d) : (memref<128x64xf16, {SMEM}>) -> vector<128x64xf16>',
            f"%r: memref<?x64xf16, {SMEM}>",
        ),
        "dynamic shapes",
    ),
    "dynamic-tmem": (
        kernel(
            f'  %t = "memref.cast"(%r) : (memref<?x128xf32, {TMEM}>) -> memref<128x128xf32, {TMEM}>\n'
            f'  %x = "mosaic_gpu.async_load_tmem"(%t) : (memref<128x128xf32, {TMEM}>) -> vector<128x128xf32>',
            f"%r: memref<?x128xf32, {TMEM}>",
        ),
        "dynamic shapes",
    ),
    "scalable-vector": (
        kernel(
            '  %c = "arith.constant"() <{value = dense<1.0> : vector<[4]xf32>}> : () -> vector<[4]xf32>\n'
            '  %d = "arith.addf"(%c, %c) : (vector<[4]xf32>, vector<[4]xf32>) -> vector<[4]xf32>'
        ),
        "scalable vectors",
    ),
    "index-elements": (
        kernel(
            '  %c = "mosaic_gpu.broadcasted_iota"() <{dimension = 0 : i32}> : () -> vector<128xindex>'
        ),
        "element type index is not supported",
    ),
    "odd-bitwidth": (
        kernel(
            '  %c = "arith.constant"() <{value = dense<1> : vector<128xi3>}> : () -> vector<128xi3>\n'
            '  %d = "arith.addi"(%c, %c) : (vector<128xi3>, vector<128xi3>) -> vector<128xi3>'
        ),
        "element type i3 is not supported",
    ),
}

# Text that does not parse: (text, a fragment of the one-line message).
MALFORMED = {
    "truncated": (GOOD[: len(GOOD) // 2], "<input>:"),
    "garbage": ("this is not MLIR at all\n", "<input>:1:1"),
    "empty-op-name": ('func.func @k() {\n  "" () : () -> ()\n}\n', "<input>:"),
    "unregistered-dialect": (
        kernel('  %x = "frobnicate.twiddle"() : () -> vector<128xf32>'),
        "unregistered dialect",
    ),
    "type-mismatch": (
        kernel(
            '  %c = "arith.constant"() <{value = dense<1.0> : vector<128xf32>}> : () -> vector<128xf32>\n'
            '  %d = "arith.addf"(%c, %c) : (vector<128xf32>, vector<128xf32>) -> vector<64xf32>'
        ),
        "<input>:",
    ),
    "zero-sized-vector": (
        kernel(
            '  %c = "arith.constant"() <{value = dense<1.0> : vector<0x128xf32>}> : () -> vector<0x128xf32>'
        ),
        "positive constant sizes",
    ),
}


def parse(text: str) -> ir.Module:
    return reference.parse(text, reference.shared_context())


def infer_unchanged(
    text: str, error: type[BaseException], *, named: bool = False, **kwargs: object
) -> str:
    """Runs smalto expecting ``error``; checks the module is as it came in (but for the dump
    name a failed search leaves, as JAX's does, when ``named``); returns the message."""
    module = parse(text)
    before = str(module)
    with pytest.raises(error) as raised:
        smalto.infer_layout(module, **kwargs)  # type: ignore[arg-type]
    assert (reference.pop_dump_name(module) is not None) == named
    assert str(module) == before
    message = str(raised.value)
    return message


# --- library ------------------------------------------------------------------------


@pytest.mark.parametrize("name", sorted(MALFORMED))
def test_malformed_text_is_one_line(name: str) -> None:
    text, fragment = MALFORMED[name]
    with pytest.raises(MlirInputError) as raised:
        parse_module(text)
    message = str(raised.value)
    assert len(message.splitlines()) == 1 and fragment in message, message


@pytest.mark.parametrize("name", sorted(UNSUPPORTED))
def test_unsupported_types_are_refused_in_one_sentence(name: str) -> None:
    text, fragment = UNSUPPORTED[name]
    message = infer_unchanged(text, UnsupportedInput)
    assert len(message.splitlines()) == 1 and fragment in message, message
    # The op and the offending type are named.
    assert "`" in message and ("vector<" in message or "memref<" in message), message


def test_unsupported_input_is_a_value_error_and_an_input_error() -> None:
    assert issubclass(UnsupportedInput, ValueError)
    assert issubclass(UnsupportedInput, MlirInputError)
    assert not issubclass(UnsupportedInput, smalto.InferenceError)


def test_op_without_a_rule_is_named() -> None:
    message = infer_unchanged(NO_RULE, NotImplementedError)
    assert "vector.transpose" in message


def test_unsatisfiable_module_is_left_unchanged() -> None:
    message = infer_unchanged(UNSAT, smalto.InferenceError, named=True)
    assert message.startswith(smalto.FAILURE_PREFIX)


@pytest.mark.parametrize("fuel", [0, -1, -100_000, True, 1.5, "10", None])
def test_bad_fuel(fuel: object) -> None:
    message = infer_unchanged(GOOD, ValueError, fuel=fuel)
    assert "fuel must be a positive integer" in message


@pytest.mark.parametrize("arch", [(8, 0), (9, 1), (11, 0)])
def test_bad_arch(arch: tuple[int, int]) -> None:
    message = infer_unchanged(GOOD, ValueError, arch=arch)
    assert "unsupported arch" in message


def test_tiny_fuel_fails_cleanly_or_succeeds() -> None:
    module = parse(GOOD)
    try:
        smalto.infer_layout(module, fuel=1)
    except smalto.InferenceError:
        assert "layouts" not in str(module)


@pytest.mark.parametrize(
    "body, args",
    [
        # Tensors and other types carry no layout: nothing to do, nothing annotated.
        (
            '  %c = "arith.constant"() <{value = dense<1.0> : tensor<128xf32>}> : () -> tensor<128xf32>\n'
            '  %d = "arith.addf"(%c, %c) : (tensor<128xf32>, tensor<128xf32>) -> tensor<128xf32>',
            "",
        ),
        # A GMEM ref and a pointer: no layout either, but the loaded vector has one.
        (
            '  %x = "mosaic_gpu.vector_load"(%g) : (memref<128xf32>) -> vector<128xf32>\n'
            '  "llvm.store"(%x, %p) <{ordering = 0 : i64}> : (vector<128xf32>, !llvm.ptr) -> ()',
            "%g: memref<128xf32>, %p: !llvm.ptr",
        ),
        # A vector that no op defines (a function argument) is a free value.
        (
            '  %d = "arith.addf"(%a, %a) : (vector<128xf32>, vector<128xf32>) -> vector<128xf32>',
            "%a: vector<128xf32>",
        ),
        # A 0-D vector.
        (
            '  %c = "arith.constant"() <{value = dense<1.0> : vector<f32>}> : () -> vector<f32>\n'
            '  %d = "arith.addf"(%c, %c) : (vector<f32>, vector<f32>) -> vector<f32>',
            "",
        ),
    ],
    ids=["tensor", "gmem-and-pointer", "vector-argument", "rank-0-vector"],
)
def test_oddities_that_are_fine(body: str, args: str) -> None:
    module = parse(kernel(body, args))
    try:
        smalto.infer_layout(module)
    except (smalto.InferenceError, NotImplementedError) as error:
        # A clear refusal is fine too; anything else (or a half-annotated module) is not.
        assert "layouts" not in str(module), error
        return
    assert smalto.check.check(module) == []


def test_smem_ref_with_an_affine_map_layout() -> None:
    text = kernel(
        f'  %r = "mosaic_gpu.slice_smem"() <{{offset = 0 : i32}}> : () -> memref<128x64xf16, affine_map<(d0, d1) -> (d1, d0)>, {SMEM}>\n'
        f'  %x = "mosaic_gpu.vector_load"(%r) : (memref<128x64xf16, affine_map<(d0, d1) -> (d1, d0)>, {SMEM}>) -> vector<128x64xf16>'
    )
    message = infer_unchanged(text, UnsupportedInput)
    assert "strided" in message


# --- an already-annotated module: re-inferred, identically -----------------------------------


def test_running_twice_gives_the_same_module() -> None:
    for text in (GOOD, (REPO / "examples" / "hopper_matmul.mlir").read_text()):
        module = parse(text)
        smalto.infer_layout(module)
        once = str(module)
        smalto.infer_layout(module)
        assert str(module) == once


def test_a_module_annotated_by_jax_is_reinferred_identically() -> None:
    entry = next(
        e for e in reference.bundled_entries() if e.key.startswith("kernels/hopper_matmul")
    )
    jax = reference.jax_outcome(entry.path, entry.arch)
    assert jax.attributes is not None
    module = parse(entry.path)
    with module.context, ir.Location.unknown():
        index = 0
        by_index = {int(k.split(":")[0]): attrs for k, attrs in jax.attributes}

        def visit(op: ir.Operation) -> ir.WalkResult:
            nonlocal index
            for name, value in by_index.get(index, {}).items():
                op.attributes[name] = ir.Attribute.parse(value)
            index += 1
            return ir.WalkResult.ADVANCE

        module.operation.walk(visit, ir.WalkOrder.PRE_ORDER)
    annotated = str(module)
    smalto.infer_layout(module, arch=entry.arch)
    assert str(module) == annotated


def test_wrong_annotations_are_overwritten() -> None:
    fresh = parse(GOOD)
    smalto.infer_layout(fresh)
    module = parse(GOOD)
    add = next(
        op
        for op in module.body.operations[0].regions[0].blocks[0].operations
        if op.operation.name == "arith.addf"
    )
    with module.context:
        add.attributes["in_layouts"] = ir.Attribute.parse(
            "[#mosaic_gpu.WGSplatFragLayout<[128, 64]>, #mosaic_gpu.WGSplatFragLayout<[128, 64]>]"
        )
        add.attributes["out_layouts"] = ir.Attribute.parse(
            "[#mosaic_gpu.WGSplatFragLayout<[128, 64]>]"
        )
    smalto.infer_layout(module)
    reference.pop_dump_name(fresh), reference.pop_dump_name(module)  # numbered per run
    assert str(module) == str(fresh)


# --- command line --------------------------------------------------------------------------


def run_cli(
    tmp_path: Path, text: str, *args: str, capsys: pytest.CaptureFixture[str]
) -> tuple[int, str, str]:
    path = tmp_path / "k.mlir"
    path.write_text(text)
    status = main(["infer", str(path), *args])
    out, err = capsys.readouterr()
    assert "Traceback" not in err
    return status, out, err


@pytest.mark.parametrize("name", sorted(MALFORMED))
def test_cli_malformed_exits_2(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], name: str
) -> None:
    status, out, err = run_cli(tmp_path, MALFORMED[name][0], capsys=capsys)
    assert status == 2 and out == ""
    assert len(err.splitlines()) == 1 and err.startswith("smalto: error: "), err


@pytest.mark.parametrize("name", sorted(UNSUPPORTED))
def test_cli_unsupported_exits_2(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], name: str
) -> None:
    status, out, err = run_cli(tmp_path, UNSUPPORTED[name][0], capsys=capsys)
    assert status == 2 and out == ""
    assert len(err.splitlines()) == 1 and UNSUPPORTED[name][1] in err, err


def test_cli_no_rule_exits_1(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    status, out, err = run_cli(tmp_path, NO_RULE, capsys=capsys)
    assert status == 1 and out == ""
    assert len(err.splitlines()) == 1 and "vector.transpose" in err, err


def test_cli_unsatisfiable_exits_1(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    status, out, err = run_cli(tmp_path, UNSAT, capsys=capsys)
    assert status == 1 and out == ""
    assert err.startswith(f"smalto: error: {smalto.FAILURE_PREFIX}"), err


PALLAS_SCRIPT = """\
import jax
from jax.experimental.pallas import mosaic_gpu as plgpu


def add_one(x):
    def body(x_ref, o_ref):
        o_ref[...] = x_ref[...] + 1.0

    return plgpu.kernel(body, out_type=jax.ShapeDtypeStruct(x.shape, x.dtype))(x)


def _helper():
    pass
"""


@pytest.mark.parametrize("name", ["kernel.py", "kernel.txt"])
def test_cli_python_file_points_to_capture(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], name: str
) -> None:
    """A Pallas script given to `infer` (by its .py name, or any name: it parses as Python
    and not as MLIR): one line that says how to get its modules, never MLIR's parse error."""
    path = tmp_path / name
    path.write_text(PALLAS_SCRIPT)
    for command in (["infer"], ["explain"], ["check"]):
        status = main([*command, str(path)])
        out, err = capsys.readouterr()
        assert status == 2 and out == "" and len(err.splitlines()) == 1, err
        assert f"{path} is Python, not an MLIR module" in err
        # The one public function it defines is the one to capture (never run, only parsed).
        assert f"`smalto capture {path}:add_one --arg DTYPE[SHAPE] ... -o DIR`" in err
        assert "operation name" not in err


@pytest.mark.parametrize("fuel", ["0", "-1", "ten", "1e3"])
def test_cli_bad_fuel_exits_2(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], fuel: str
) -> None:
    status, out, err = run_cli(tmp_path, GOOD, f"--fuel={fuel}", capsys=capsys)
    assert status == 2 and out == ""
    assert "fuel" in err


def test_cli_annotated_input_is_reinferred(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    status, once, _ = run_cli(tmp_path, GOOD, capsys=capsys)
    assert status == 0
    status, twice, _ = run_cli(tmp_path, once, capsys=capsys)
    assert status == 0 and twice == once


@pytest.mark.parametrize(
    "text, status",
    [(MALFORMED["truncated"][0], 2), (UNSUPPORTED["dynamic-smem"][0], 2), (NO_RULE, 1)],
    ids=["truncated", "dynamic", "no-rule"],
)
def test_cli_process_prints_no_traceback(tmp_path: Path, text: str, status: int) -> None:
    path = tmp_path / "k.mlir"
    path.write_text(text)
    smalto_bin = Path(sys.executable).parent / "smalto"
    command = [str(smalto_bin)] if smalto_bin.exists() else [sys.executable, "-m", "smalto"]
    done = subprocess.run(
        [*command, "infer", str(path)], capture_output=True, text=True, timeout=120, cwd=REPO
    )
    assert done.returncode == status, done.stderr
    assert "Traceback" not in done.stderr
    assert len(done.stderr.splitlines()) == 1, done.stderr
    assert done.stdout == ""
