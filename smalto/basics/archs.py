"""The GPU architectures smalto targets, and ``MAJOR.MINOR`` as the command line spells them.

Light on purpose (no JAX): the command line parses its arguments with it.
"""

from __future__ import annotations

import re

SUPPORTED_ARCHS = ((9, 0), (10, 0))


def parse_arch(text: str) -> tuple[int, int]:
    """``MAJOR.MINOR`` as an arch tuple; ValueError unless smalto supports it."""
    match = re.fullmatch(r"(\d+)\.(\d+)", text.strip())
    arch = (int(match[1]), int(match[2])) if match else None
    if arch not in SUPPORTED_ARCHS:
        raise ValueError(f"unsupported architecture {text!r} (expected 9.0 or 10.0)")
    return arch
