"""smalto's version: the installed package's metadata, else the checkout's pyproject.toml.

Light on purpose (no JAX): ``smalto --version`` reads it.
"""

from __future__ import annotations

from importlib import metadata
from pathlib import Path

_PYPROJECT = Path(__file__).resolve().parents[2] / "pyproject.toml"  # smalto/basics/ -> root

# The JAX (and jaxlib) smalto restates, and pyproject.toml pins: the one place code names
# it. What to redo when it moves: docs/jax_upgrade.md.
JAX_PINNED = "0.12.0.1"


def version() -> str:
    """``0.1.0``; from a source checkout that was never installed, its pyproject's version."""
    try:
        return metadata.version("smalto")
    except metadata.PackageNotFoundError:
        pass
    import tomllib  # only a checkout never installed reads it; the rules import this module

    try:
        with _PYPROJECT.open("rb") as file:
            return str(tomllib.load(file)["project"]["version"])
    except (OSError, KeyError, tomllib.TOMLDecodeError):
        return "unknown"


def dependency_version(name: str) -> str | None:
    """The installed version of a distribution (``jax``), without importing it."""
    try:
        return metadata.version(name)
    except metadata.PackageNotFoundError:
        return None
