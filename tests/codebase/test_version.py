"""``smalto --version`` says the package's version from a checkout never installed too:
its ``pyproject.toml``'s (read only then: the pass, which imports the module, never is)."""

from __future__ import annotations

from importlib import metadata

import pytest

from smalto.basics import version


def test_a_checkout_never_installed_reads_its_pyproject(monkeypatch: pytest.MonkeyPatch) -> None:
    installed = version.version()

    def not_installed(name: str) -> str:
        raise metadata.PackageNotFoundError(name)

    monkeypatch.setattr(metadata, "version", not_installed)
    assert version.version() == installed != "unknown"
