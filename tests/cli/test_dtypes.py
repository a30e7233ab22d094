"""``--arg DTYPE[SHAPE]``'s element types: ``smalto capture`` and ``smalto fix`` read the
same names (short ones in any case, fp8 included), from one table (``smalto.basics.dtypes``)."""

from __future__ import annotations

from pathlib import Path

import jax.numpy as jnp
import pytest

from smalto.basics.dtypes import dtype_name
from smalto.cli.main import main
from smalto.cli.output import UsageError
from smalto.cli.targets import shape_dtype


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("bf16", jnp.bfloat16),
        ("BF16", jnp.bfloat16),
        ("f8e4m3fn", jnp.float8_e4m3fn),
        ("f8e5m2", jnp.float8_e5m2),
        ("i8", jnp.int8),
        ("int4", jnp.int4),
        ("float32", jnp.float32),
    ],
)
def test_arg_dtypes_are_read_by_every_spelling(text: str, expected: object) -> None:
    assert jnp.dtype(dtype_name(text)) == jnp.dtype(expected)
    sds = shape_dtype(text, (64, 128))
    assert sds.dtype == jnp.dtype(expected) and sds.shape == (64, 128)


def test_an_unknown_dtype_is_a_usage_error() -> None:
    with pytest.raises(UsageError, match="unknown dtype 'f7'"):
        shape_dtype("f7", (8,))


@pytest.mark.parametrize("command", ["capture", "fix"])
def test_capture_and_fix_refuse_an_unknown_dtype_alike(
    command: str, tmp_path: Path, capsys: pytest.CaptureFixture
) -> None:
    """Both commands read ``--arg`` through one function (``smalto.cli.targets``): the same
    refusal, exit status 2, one line."""
    script = tmp_path / "kernel.py"
    script.write_text("def f(x):\n    return x\n")
    assert main([command, f"{script}:f", "--arg", "f7[8]"]) == 2
    err = capsys.readouterr().err
    assert err.strip().splitlines() == ["smalto: error: argument --arg: unknown dtype 'f7'"]
