"""smalto restates one JAX: the installed one must be it, and the pins, the constant and the
upgrade page must agree on which (docs/jax_upgrade.md says what to redo when it moves)."""

from __future__ import annotations

import re
import tomllib
from pathlib import Path

import pytest

from smalto.basics.version import JAX_PINNED, dependency_version

ROOT = Path(__file__).resolve().parents[2]
PAGE = ROOT / "docs" / "jax_upgrade.md"


def _pins() -> dict[str, str]:
    with (ROOT / "pyproject.toml").open("rb") as file:
        dependencies = tomllib.load(file)["project"]["dependencies"]
    found = (re.fullmatch(r"(jax|jaxlib)==(\S+)", d.replace(" ", "")) for d in dependencies)
    return {m[1]: m[2] for m in found if m is not None}


def test_pyproject_pins_the_version_the_code_names() -> None:
    assert _pins() == {"jax": JAX_PINNED, "jaxlib": JAX_PINNED}


def test_the_upgrade_page_names_the_pinned_version() -> None:
    assert PAGE.is_file()
    assert f"jax=={JAX_PINNED}" in PAGE.read_text()


@pytest.mark.parametrize("distribution", ["jaxlib", "jax"])
def test_the_installed_jax_is_the_pinned_one(distribution: str) -> None:
    installed = dependency_version(distribution)
    assert installed == JAX_PINNED, (
        f"{distribution} {installed} is installed, smalto restates {JAX_PINNED}: "
        f"follow {PAGE.relative_to(ROOT)} (the pins, the generated tables, the layouts built "
        "without JAX's constructors, JAX's phrases, the hooks, then the differential)"
    )
