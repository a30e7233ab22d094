"""Unsatisfiable kernels: the error names the conflicting ops, where they are, and a fix."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest
import reference

import smalto
from smalto.diagnose import ConflictReport
from smalto.diagnose.core import _satisfiable
from smalto.infer import in_context, solve_module
from smalto.program.reader import read_program
from smalto.rules import derive_system
from smalto.solve.options import SolveOptions

UNSAT = Path(__file__).parents[1] / "unsat"

# file -> (ops the message must name with their locations, words of the suggestion)
CASES = {
    "cast_strided_then_wgmma": (
        [
            "`mosaic_gpu.layout_cast` at kernel.py:11:8",
            "`mosaic_gpu.layout_cast` at kernel.py:13:8",
            "`mosaic_gpu.vector_load` at kernel.py:10:4",
        ],
        "required to be both",
    ),
    "relayout_unsupported": (
        [
            "`mosaic_gpu.layout_cast` at kernel.py:22:8",
            "`mosaic_gpu.layout_cast` at kernel.py:23:8",
        ],
        "cannot convert WGMMA to strided ×2",
    ),
    "smem_transfer_no_plan": (
        [
            "`mosaic_gpu.vector_store` at kernel.py:34:4",
            "`mosaic_gpu.with_transforms` at kernel.py:31:10",
        ],
        "transforms that work with WGMMA: tiled 8×64 + swizzle 128",
    ),
    "dynamic_offset_not_divisible": (
        ["`memref.subview` at kernel.py:42:10", "`mosaic_gpu.with_transforms` at kernel.py:41:10"],
        "pl.multiple_of",
    ),
    "custom_primitive_conflicting_transforms": (
        [
            "operand #0 of `mosaic_gpu.custom_primitive` at kernel.py:71:4",
            "operand #1 of `mosaic_gpu.custom_primitive` at kernel.py:71:4",
        ],
        None,
    ),
    "cast_does_not_fit": (["`mosaic_gpu.layout_cast` at kernel.py:51:8"], None),
    "with_transforms_does_not_fit": (["`mosaic_gpu.with_transforms` at kernel.py:61:10"], None),
}


def _fail(name: str) -> tuple[smalto.InferenceError, str, str]:
    ctx = reference.make_context()
    module = reference.parse(UNSAT / f"{name}.mlir", ctx)
    before = str(module)
    with pytest.raises(smalto.InferenceError) as info:
        smalto.infer_layout(module, arch=(9, 0))
    reference.pop_dump_name(module)  # the one change a failed search leaves, as in JAX
    return info.value, before, str(module)


@pytest.mark.parametrize("name", sorted(CASES))
def test_message_names_ops_locations_and_fix(name: str) -> None:
    error, before, after = _fail(name)
    message = str(error)
    assert message.startswith("Failed to infer a possible set of layouts")
    ops, suggestion = CASES[name]
    for op in ops:
        assert op in message
    if suggestion is not None:
        assert suggestion in message
    assert after == before, "a failed inference must leave the module unchanged"


@pytest.mark.parametrize("name", sorted(CASES))
def test_conflict_is_data(name: str) -> None:
    error, _, _ = _fail(name)
    report = error.conflict
    assert isinstance(report, ConflictReport)
    assert report.requirements
    for requirement in report.requirements:
        assert requirement.location.startswith("kernel.py:")
        assert requirement.op.startswith(("mosaic_gpu.", "memref.", "arith."))


def _system(name: str):  # noqa: ANN202
    ctx = reference.make_context()
    module = reference.parse(UNSAT / f"{name}.mlir", ctx)
    with in_context(module):
        program = read_program(module)
        return module, program, derive_system(program, (9, 0))


@pytest.mark.parametrize("name", [n for n in sorted(CASES) if not n.endswith("does_not_fit")])
def test_core_is_minimal(name: str) -> None:
    """Dropping any one requirement of the core makes the rest satisfiable."""
    error, _, _ = _fail(name)
    report = error.conflict
    assert report.minimal
    module, program, system = _system(name)
    full = report.core
    assert {id(r.element) for r in report.requirements} <= {id(e) for e in full}
    with in_context(module):
        assert _satisfiable(system, full, program, SolveOptions(arch=(9, 0))) is False
        for i in range(len(full)):
            rest = full[:i] + full[i + 1 :]
            assert _satisfiable(system, rest, program, SolveOptions(arch=(9, 0))) is True, full[i]


def _without_line(name: str, marker: str, rename: tuple[str, str]) -> str:
    lines = (UNSAT / f"{name}.mlir").read_text().splitlines()
    kept = [line for line in lines if marker not in line]
    assert len(kept) == len(lines) - 1
    return "\n".join(kept).replace(*rename)


@pytest.mark.parametrize(
    ("marker", "rename"),
    [
        ('%a = "mosaic_gpu.layout_cast"', ("%a", "%a")),
        ('%c = "mosaic_gpu.layout_cast"', ("%c", "%b")),
    ],
)
def test_removing_either_named_cast_makes_the_kernel_satisfiable(
    marker: str, rename: tuple[str, str]
) -> None:
    text = _without_line("cast_strided_then_wgmma", marker, rename)
    ctx = reference.make_context()
    module = reference.parse(text, ctx)
    smalto.infer_layout(module, arch=(9, 0))
    assert "out_layouts" in str(module)


def test_fuel_exhaustion_says_what_was_spent_and_left() -> None:
    root = reference.corpus_root() or reference.BUNDLED_ROOT
    ctx = reference.make_context()
    module = reference.parse(root / "fuel_exhausted" / "custom_softmax_rows_nohint.mlir", ctx)
    with pytest.raises(smalto.InferenceError) as info:
        smalto.infer_layout(module, arch=(9, 0), fuel=3)
    message = str(info.value)
    assert "ran out of fuel after 3 attempts" in message
    assert "still open: %" in message
    assert "layout_cast" in message


def test_solve_module_exposes_the_same_failure() -> None:
    module, _, _ = _system("relayout_unsupported")
    with in_context(module), pytest.raises(smalto.InferenceError):
        solve_module(module, arch=(9, 0))


@pytest.mark.parametrize("name", ["relayout_unsupported", "cast_does_not_fit"])
def test_cli_reports_without_traceback(name: str) -> None:
    result = subprocess.run(
        [sys.executable, "-m", "smalto", "infer", str(UNSAT / f"{name}.mlir")],
        capture_output=True,
        text=True,
        check=False,
    )
    assert result.returncode == 1
    assert "Failed to infer a possible set of layouts" in result.stderr
    assert "kernel.py:" in result.stderr
    assert "Traceback" not in result.stderr
    assert result.stdout == ""


def test_contradicting_cast_added_to_a_corpus_kernel_is_named() -> None:
    """A real kernel plus one impossible cast: the error points at that cast."""
    import re

    root = reference.corpus_root() or reference.BUNDLED_ROOT
    text = (root / "kernels" / "flash_attn_fwd_wg_hd128_b64x128.mlir").read_text()
    lines = text.splitlines()
    pattern = re.compile(r'\s*(%\w+) = "mosaic_gpu.wgmma".*-> (vector<[^>]+>)')
    found = [(i, m) for i, line in enumerate(lines) if (m := pattern.match(line))]
    assert found, "no wgmma in the kernel"
    i, match = found[0]
    acc, ty = match.groups()
    shape = ty[len("vector<") : -1].split("x")[:-1]
    strided = f"#mosaic_gpu.WGStridedFragLayout<[{', '.join(shape)}], 1>"
    cast = (
        f'  %bad_cast = "mosaic_gpu.layout_cast"({acc}) <{{new_layout = {strided}}}> : '
        f'({ty}) -> {ty} loc("attention.py":88:12)'
    )
    lines.insert(i + 1, cast)
    ctx = reference.make_context()
    module = reference.parse("\n".join(lines), ctx)
    with pytest.raises(smalto.InferenceError) as info:
        smalto.infer_layout(module, arch=(9, 0))
    message = str(info.value)
    assert "`mosaic_gpu.layout_cast` at attention.py:88:12" in message
    assert "cannot convert WGMMA" in message


def test_cli_shows_the_source_lines_it_names(tmp_path: Path) -> None:
    source = tmp_path / "kernel.py"
    source.write_text("def kernel(ref):\n    a = cast(x, WGMMA)\n    b = cast(a, STRIDED)\n")
    text = (UNSAT / "relayout_unsupported.mlir").read_text()
    text = text.replace('"kernel.py":22:8', f'"{source}":2:9')
    text = text.replace('"kernel.py":23:8', f'"{source}":3:9')
    module = tmp_path / "k.mlir"
    module.write_text(text)
    result = subprocess.run(
        [sys.executable, "-m", "smalto", "infer", str(module)],
        capture_output=True,
        text=True,
        check=False,
    )
    assert result.returncode == 1
    assert f"{source}:3:9:\n      b = cast(a, STRIDED)\n          ^" in result.stderr
    assert "Traceback" not in result.stderr


def test_a_value_no_layout_fits_says_so() -> None:
    """A loaded 48x1 vector: not a splat, too small to be strided, no tile divides it
    (a 64x1 one would take WGMMA with a size-1 tile, the keep-dims layout)."""
    small, big = "vector<48x1xf32>", "vector<48x128xf32>"
    dims = "<{broadcast_dimensions = array<i64: 0, 1>}>"
    text = f"""
    module {{
      func.func @kernel(%arg0: memref<48x1xf32>) {{
        %x = "mosaic_gpu.vector_load"(%arg0) : (memref<48x1xf32>) -> {small} loc("k.py":3:8)
        %b = "mosaic_gpu.broadcast_in_dim"(%x) {dims} : ({small}) -> {big} loc("k.py":4:8)
        return
      }}
    }}
    """
    ctx = reference.make_context()
    module = reference.parse(text, ctx)
    with pytest.raises(smalto.InferenceError) as info:
        smalto.infer_layout(module, arch=(9, 0))
    message = str(info.value)
    assert "`mosaic_gpu.vector_load` at k.py:3:8" in message
    assert "no other register layout fits its shape (48, 1)" in message


# --- locations: the user's file and line, never MLIR's location syntax ------------------------

WRAPPED = {
    # jax 0.12.0.1's Pallas lowering: the primitive's name around the user's position.
    'loc("layout_cast:"("layout_cast"("kernel.py":75:20)))': ("kernel.py:75:20", "layout_cast"),
    # A call stack: the innermost frame in the user's files is the one to show.
    'loc(callsite("f"("/x/site-packages/jax/_src/a.py":1:2) at "g"("k.py":3:4)))': (
        "k.py:3:4",
        None,
    ),
    'loc(fused["a.py":1:1, "b.py":2:2])': ("a.py:1:1", None),
    'loc("k.py":3:4)': ("k.py:3:4", None),
    'loc("mpmd_map:"("mpmd_map"))': ("mpmd_map", "mpmd_map"),
}


@pytest.mark.parametrize("text", sorted(WRAPPED))
def test_location_text_unwraps_to_the_innermost_file_position(text: str) -> None:
    from jax._src.lib.mlir import ir

    from smalto.source.locations import location_name, location_text

    ctx = ir.Context()
    ctx.allow_unregistered_dialects = True
    with ctx:
        location = ir.Module.parse(f'"x.y"() : () -> () {text}').body.operations[0].location
        assert (location_text(location), location_name(location)) == WRAPPED[text]


def _wrap_in_pallas_names(text: str) -> str:
    """Each op's position wrapped as jax 0.12.0.1's Pallas lowering wraps it."""
    import re

    return re.sub(
        r'loc\("(kernel\.py)":(\d+):(\d+)\)',
        r'loc("prim:"("prim"("\1":\2:\3)))',
        text,
    )


@pytest.mark.parametrize("name", sorted(CASES))
def test_wrapped_locations_read_as_file_line_and_column(name: str) -> None:
    ctx = reference.make_context()
    module = reference.parse(_wrap_in_pallas_names((UNSAT / f"{name}.mlir").read_text()), ctx)
    with pytest.raises(smalto.InferenceError) as info:
        smalto.infer_layout(module, arch=(9, 0))
    message = str(info.value)
    ops, _ = CASES[name]
    for op in ops:
        # The op, the name JAX gave its location, then the user's position.
        assert op.replace("` at", "` (`prim`) at") in message, message
    assert 'loc("' not in message and "prim:" not in message
    for location in info.value.conflict.locations:
        assert location.startswith("kernel.py:"), location


def test_a_captured_pallas_kernel_names_the_users_lines() -> None:
    """A real module from jax 0.12.0.1's Pallas lowering, with its real locations."""
    import inspect

    import jax
    import jax.numpy as jnp
    from jax.experimental.pallas import mosaic_gpu as plgpu

    import smalto.jax

    def kernel(x: jax.Array) -> jax.Array:
        def body(x_gmem, out_gmem, acc):  # noqa: ANN001, ANN202
            acc[...] = plgpu.layout_cast(x_gmem[...].astype(jnp.float32), plgpu.Layout.WGMMA)
            strided = plgpu.Layout.WG_STRIDED((64, 64), vec_size=2)
            out_gmem[...] = plgpu.layout_cast(acc[...], strided).astype(out_gmem.dtype)  # HERE

        return plgpu.kernel(
            body,
            out_type=jax.ShapeDtypeStruct((64, 64), jnp.float16),
            scratch_types=[plgpu.ACC((64, 64), jnp.float32)],
            compiler_params=plgpu.CompilerParams(
                lowering_semantics=plgpu.LoweringSemantics.Warpgroup
            ),
        )(x)

    (captured,) = smalto.jax.capture(kernel, jax.ShapeDtypeStruct((64, 64), jnp.float16))
    assert 'loc("layout_cast:"' in captured.text or '"layout_cast:"' in captured.text
    lines, first = inspect.getsourcelines(kernel)
    here = first + next(i for i, line in enumerate(lines) if "# HERE" in line)
    import traceback

    with pytest.raises(ValueError) as info:
        smalto.infer_layout(captured.module(), arch=(9, 0))
    me = Path(__file__).name
    # Raised, the traceback ends at the op JAX's phrase blames, as JAX's does...
    last = traceback.extract_tb(info.value.__traceback__)[-1]
    assert (Path(last.filename).name, last.lineno, last.name) == (me, here, "layout_cast")
    message = str(info.value)
    assert f"{me}:{here}:" in message
    assert "`mosaic_gpu.layout_cast` at" in message and "loc(" not in message
    # ... and once the message is read, at the line its first fix names: the other cast.
    fixed = re.search(rf"^fix: .* at \S*{me}:(\d+):", message, re.MULTILINE)
    assert fixed is not None and int(fixed.group(1)) == here - 2, message
    last = traceback.extract_tb(info.value.__traceback__)[-1]
    assert (Path(last.filename).name, last.lineno, last.name) == (me, here - 2, "layout_cast")
