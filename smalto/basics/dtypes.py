"""Element types as ``--arg DTYPE[SHAPE]`` names them (``smalto capture``, ``smalto fix``).

Light on purpose (no JAX): the command line parses its arguments with it.
"""

from __future__ import annotations

# Short names (f16, bf16, f8e4m3fn...), any case; any other name is read by ``jnp.dtype``.
_SHORT = {
    "pred": "bool",
    "i1": "bool",
    "bf16": "bfloat16",
    "f16": "float16",
    "f32": "float32",
    "f64": "float64",
    "f8e4m3fn": "float8_e4m3fn",
    "f8e5m2": "float8_e5m2",
    **{f"i{n}": f"int{n}" for n in (8, 16, 32, 64)},
    **{f"u{n}": f"uint{n}" for n in (8, 16, 32, 64)},
}


def dtype_name(text: str) -> str:
    """The name ``jnp.dtype`` reads for an ``--arg``'s element type."""
    return _SHORT.get(text.lower(), text)
