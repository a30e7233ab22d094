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


# Names numpy reads as a byte count where a user may mean a bit count: refused, naming both.
_AMBIGUOUS = {
    "f8": "float64 to numpy (8 bytes; write f64), or an 8-bit float (write f8e4m3fn, "
    "f8e5m2, or another float8_* name)",
    "f4": "float32 to numpy (4 bytes; write f32), or a 4-bit float (write float4_e2m1fn)",
}


class AmbiguousDtype(ValueError):
    """An element type name that means two types (``f8``)."""


def dtype_name(text: str) -> str:
    """The name ``jnp.dtype`` reads for an ``--arg``'s element type. Raises
    ``AmbiguousDtype`` for a name that could mean two (``f8``: float64 or a float8)."""
    meanings = _AMBIGUOUS.get(text.lower())
    if meanings is not None:
        raise AmbiguousDtype(f"dtype {text!r} is ambiguous: it is {meanings}")
    return _SHORT.get(text.lower(), text)
