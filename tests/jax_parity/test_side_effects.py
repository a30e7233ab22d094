"""What the pass changes besides layouts, as JAX 0.12.0.1's does: the module's dump name,
and the constraint system dump (``MOSAIC_GPU_DUMP_CONSTRAINT_SYSTEM``, ``--dump-system``)."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest
import reference
from jax._src.lib.mlir import ir
from jax.experimental.mosaic.gpu import layout_inference

import smalto
from smalto.cli.main import main

UNSAT = Path(__file__).parents[1] / "unsat"
REPO = Path(__file__).resolve().parents[2]
GOOD = """
module @my_kernel {
  func.func @kernel() {
    %r = "mosaic_gpu.slice_smem"() <{offset = 0 : i32}> : () -> memref<128x64xf16, #gpu.address_space<workgroup>> loc("kernel.py":3:4)
    %x = "mosaic_gpu.vector_load"(%r) : (memref<128x64xf16, #gpu.address_space<workgroup>>) -> vector<128x64xf16> loc("kernel.py":4:8)
    %y = "arith.addf"(%x, %x) : (vector<128x64xf16>, vector<128x64xf16>) -> vector<128x64xf16> loc("kernel.py":5:8)
    "mosaic_gpu.vector_store"(%y, %r) : (vector<128x64xf16>, memref<128x64xf16, #gpu.address_space<workgroup>>) -> () loc("kernel.py":6:4)
    return
  }
}
"""  # noqa: E501


def _outcome(infer: object, text: str) -> tuple[str | None, str | None]:
    """(dump name afterwards, error type name) of one pass on a fresh parse."""
    ctx = reference.make_context()
    module = reference.parse(text, ctx)
    error = None
    with ctx, ir.Location.unknown():
        try:
            infer(module, arch=(9, 0))  # type: ignore[operator]
        except Exception as e:  # noqa: BLE001 -- the outcome is what we compare
            error = type(e).__name__
    return reference.pop_dump_name(module), error


NAMED = re.compile(r"(?P<stem>.+)_\d+$")


@pytest.mark.parametrize(
    "case",
    [
        "success",
        "named-module",
        "search-fails",
        "derivation-fails",
        "already-named",
    ],
)
def test_the_dump_name_is_set_when_jax_sets_it(case: str) -> None:
    text = {
        "success": GOOD.replace("module @my_kernel", "module"),
        "named-module": GOOD,
        "search-fails": (UNSAT / "relayout_unsupported.mlir").read_text(),
        "derivation-fails": (UNSAT / "cast_does_not_fit.mlir").read_text(),
        "already-named": GOOD.replace(
            "module @my_kernel", 'module @my_kernel attributes {mosaic_gpu.dump_basename = "x"}'
        ),
    }[case]
    jax_name, jax_error = _outcome(layout_inference.infer_layout, text)
    name, error = _outcome(smalto.infer_layout, text)
    assert (jax_error is None) == (error is None)
    if jax_name is None:
        assert name is None
        return
    assert name is not None
    if case == "already-named":
        assert name == jax_name == "x"
        return
    # "<sym_name or mosaic_gpu_module>_<N>", N counted across the process (JAX's count too).
    jax_match, match = NAMED.match(jax_name), NAMED.match(name)
    assert jax_match and match
    assert match["stem"] == jax_match["stem"]
    assert match["stem"] == ("my_kernel" if case == "named-module" else "mosaic_gpu_module")


def _dump_env(tmp_path: Path | None = None) -> dict[str, str]:
    import os

    env = {**os.environ, "JAX_PLATFORMS": "cpu", "MOSAIC_GPU_DUMP_CONSTRAINT_SYSTEM": "1"}
    env.pop("MOSAIC_GPU_DUMP_TO", None)
    if tmp_path is not None:
        env["MOSAIC_GPU_DUMP_TO"] = str(tmp_path)
    return env


_SCRIPT = """
import sys
sys.path.insert(0, {tests!r})
import reference, smalto
ctx = reference.make_context()
module = reference.parse(open({path!r}).read(), ctx)
try:
    smalto.infer_layout(module, arch=(9, 0))
except ValueError as error:
    print("ERROR:", str(error).splitlines()[0], file=sys.stderr)
"""


def _run_with_env(path: Path, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    code = _SCRIPT.format(tests=str(Path(__file__).parents[1] / "helpers"), path=str(path))
    return subprocess.run(
        [sys.executable, "-c", code], env=env, cwd=REPO, capture_output=True, text=True, check=True
    )


def test_environment_variable_dumps_the_system_to_stdout() -> None:
    result = _run_with_env(UNSAT / "relayout_unsupported.mlir", _dump_env())
    out = result.stdout
    assert out.startswith("# smalto constraint system for mosaic_gpu_module_0:"), out
    # Each requirement with its op and source position.
    assert "it is the cast result of `mosaic_gpu.layout_cast` at kernel.py:22:8" in out
    assert "convertible by the layout cast `mosaic_gpu.layout_cast` at kernel.py:23:8" in out
    assert "ERROR: Failed to infer a possible set of layouts: cannot relayout" in result.stderr


def test_environment_variable_with_a_directory_writes_a_file(tmp_path: Path) -> None:
    result = _run_with_env(UNSAT / "relayout_unsupported.mlir", _dump_env(tmp_path))
    assert result.stdout == ""
    (written,) = tmp_path.iterdir()
    assert written.name == "mosaic_gpu_module_0.constraint_system.txt"
    assert "`mosaic_gpu.layout_cast` at kernel.py:23:8" in written.read_text()


def test_a_dump_that_cannot_be_written_is_logged_and_printed(tmp_path: Path) -> None:
    """As JAX's dump: the failure logged (a library does not print its own warnings), and
    the system on stdout instead."""
    not_a_directory = tmp_path / "file"
    not_a_directory.write_text("")
    result = _run_with_env(UNSAT / "relayout_unsupported.mlir", _dump_env(not_a_directory))
    assert result.stdout.startswith("# smalto constraint system for mosaic_gpu_module_0:")
    wanted = f"Failed to write output to {not_a_directory}/mosaic_gpu_module_0.constraint_system"
    assert wanted in result.stderr, result.stderr
    assert "Output will be written to stdout instead." in result.stderr
    assert "smalto: cannot write" not in result.stderr


def test_no_dump_without_the_variable(capsys: pytest.CaptureFixture[str]) -> None:
    _outcome(smalto.infer_layout, GOOD)
    assert capsys.readouterr().out == ""


def test_cli_dump_system_goes_to_stderr(tmp_path: Path, capsys: pytest.CaptureFixture) -> None:
    path = tmp_path / "k.mlir"
    path.write_text(GOOD)
    status = main(["infer", str(path), "--dump-system"])
    captured = capsys.readouterr()
    assert status == 0
    assert captured.err.startswith("# smalto constraint system for my_kernel_")
    assert "`mosaic_gpu.vector_store` at kernel.py:6:4" in captured.err
    assert "variables:" in captured.err and "constraints:" in captured.err
    # The annotated module alone on stdout, with its dump name, as JAX's pass leaves it.
    assert captured.out.startswith("module @my_kernel attributes {mosaic_gpu.dump_basename")
    assert "out_layouts" in captured.out and "# smalto" not in captured.out
