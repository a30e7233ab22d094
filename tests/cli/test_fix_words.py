"""What a fix writes reads as the kernel's own code (issue #49, item 5): a layout named
through another alias (``ROW = WGMMA.reduce(1)``) is written by that name; lines an edit
adds keep the file's line ends and its step of indentation; a rewritten statement keeps
its comment."""

from __future__ import annotations

from smalto.source.fix_edits import Part, Span, apply_parts, in_kernel_words
from smalto.source.text_style import indent_step, line_end, trailing_comment, with_line_end

ALIASED = """\
from jax.experimental.pallas import mosaic_gpu as plgpu

WGMMA = plgpu.Layout.WGMMA
ROW = WGMMA.reduce(1)


def kernel(s):
    return plgpu.layout_cast(s, WGMMA.reduce(0))
"""


def test_a_layout_named_through_another_alias_is_written_by_its_name() -> None:
    lines = ALIASED.splitlines()
    assert in_kernel_words(lines, "plgpu.Layout.WGMMA.reduce(1)", 8) == "ROW"
    assert in_kernel_words(lines, "plgpu.Layout.WGMMA.reduce(0)", 8) == "WGMMA.reduce(0)"
    assert in_kernel_words(lines, "plgpu.Layout.WGMMA", 8) == "WGMMA"


def test_a_name_bound_twice_is_not_taken_for_an_alias() -> None:
    text = ALIASED.replace("ROW = WGMMA.reduce(1)\n", "ROW = WGMMA.reduce(1)\nROW = None\n")
    assert in_kernel_words(text.splitlines(), "plgpu.Layout.WGMMA.reduce(1)", 9) == (
        "WGMMA.reduce(1)"
    )


def test_lines_added_to_a_crlf_file_end_in_crlf() -> None:
    text = "def f(x):\r\n  y = x\r\n  return y\r\n"
    part = Part(Span("k.py", 2, 3, 2, 8), "y = x", "z = x\n  y = z")
    edited = apply_parts(text, [part])
    assert edited == "def f(x):\r\n  z = x\r\n  y = z\r\n  return y\r\n"
    lf = "def f(x):\n  y = x\n"
    assert apply_parts(lf, [Part(Span("k.py", 2, 3, 2, 8), "y = x", "z = x\n  y = z")]) == (
        "def f(x):\n  z = x\n  y = z\n"
    )


def test_the_files_own_style() -> None:
    two = "def f(x):\n  if x:\n    return 1\n  return 2\n"
    assert indent_step(two) == "  "
    assert indent_step("def f(x):\n    return x\n") == "    "
    assert indent_step("x = 1\n") == "    "  # (no block: four spaces, PEP 8's)
    assert indent_step("def f(x):\n\treturn x\n") == "\t"
    assert line_end("a\r\nb\r\n") == "\r\n" and line_end("a\nb\r\n", 1) == "\n"
    assert with_line_end("a\nb", "\r\n") == "a\r\nb"
    assert trailing_comment("    o[...] = acc  # the result, out\r\n") == "# the result, out"
    assert trailing_comment('    o[...] = "#not a comment"') == ""


def test_what_is_wrong_names_the_transfer_not_the_accumulator() -> None:
    """The uncoalesced transfer is a bias load three lines below the wgmma: `what is
    wrong:` names that load and its line, not `plgpu.wgmma(...)` at the accumulator's."""
    import runpy
    import warnings
    from pathlib import Path

    import jax

    import smalto.jax

    path = Path(__file__).resolve().parents[1] / "fix_kernels" / "hopper_bias_below_accumulator.py"
    fn = runpy.run_path(str(path))["matmul_bias"]
    shapes = [((64, 64), "float16"), ((64, 128), "float16"), ((128,), "bfloat16")]
    args = [jax.ShapeDtypeStruct(shape, dtype) for shape, dtype in shapes]
    load = next(
        i for i, line in enumerate(path.read_text().splitlines(), 1) if "bias_gmem[...]" in line
    )
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        try:
            smalto.jax.lower(fn, *args, arch=(9, 0))
        except smalto.jax.KernelLoweringError as failed:
            message = str(failed.kernels[-1].error)
        else:
            raise AssertionError("the kernel lowered as written")
    wrong = next(line for line in message.splitlines() if line.startswith("what is wrong:"))
    assert "a GMEM transfer that cannot be coalesced" in wrong
    assert "`bias_gmem[...]`" in wrong and f"{path}:{load}:" in wrong
    assert "wgmma" not in wrong


def test_a_store_unrolled_twice_by_a_python_loop_is_one_problem() -> None:
    import runpy
    import warnings
    from pathlib import Path

    import jax

    import smalto.jax

    path = Path(__file__).resolve().parents[1] / "fix_kernels" / "hopper_fp8_epilogue_unrolled.py"
    fn = runpy.run_path(str(path))["matmul_fp8"]
    args = [jax.ShapeDtypeStruct((64, 64), "float16"), jax.ShapeDtypeStruct((64, 128), "float16")]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        try:
            smalto.jax.lower(fn, *args, arch=(9, 0))
        except smalto.jax.KernelLoweringError as failed:
            error = failed.kernels[-1].error
        else:
            raise AssertionError("the kernel lowered as written")
    message = str(error)
    assert "problems" not in message and message.count("what is wrong:") == 1
    assert len(error.conflict.others) == 0  # one problem in the report too (--json)
    assert "plgpu.store(out, acc.astype(jnp.float8_e4m3fn), optimized=False)" in message
