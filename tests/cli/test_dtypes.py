"""``--arg DTYPE[SHAPE]``'s element types: ``smalto capture`` and ``smalto fix`` read the
same names (short ones in any case, fp8 included), from one table (``smalto.basics.dtypes``)."""

from __future__ import annotations

import jax.numpy as jnp
import pytest

from smalto.basics.dtypes import dtype_name
from smalto.cli import capture as capture_cli
from smalto.cli import fix as fix_command


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
def test_capture_and_fix_read_the_same_dtypes(text: str, expected: object) -> None:
    assert jnp.dtype(dtype_name(text)) == jnp.dtype(expected)
    for read in (capture_cli._shape_dtype, fix_command._shape_dtype):
        sds = read(text, (64, 128))
        assert sds.dtype == jnp.dtype(expected) and sds.shape == (64, 128)


def test_an_unknown_dtype_is_a_usage_error_for_both() -> None:
    with pytest.raises(Exception, match="unknown dtype 'f7'"):
        capture_cli._shape_dtype("f7", (8,))
    with pytest.raises(Exception, match="unknown dtype 'f7'"):
        fix_command._shape_dtype("f7", (8,))
