"""Which frames a refusal's traceback keeps: the user's, not JAX's own sources, decided as
JAX's ``traceback_util.include_filename`` decides it (smalto reads each excluded path's
kind once per process instead of comparing files by ``stat`` at every call)."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from jax._src import traceback_util

from smalto.source import tracebacks


def _paths(tmp: Path) -> list[str]:
    excluded = list(traceback_util._exclude_paths)
    directories = [p for p in excluded if os.path.isdir(p)]
    files = [p for p in excluded if os.path.isfile(p)]
    assert directories and files, "JAX excludes both files and directories"
    inside = next(Path(directories[0]).glob("*.py"))
    link = tmp / "linked_jax_dir"
    link.symlink_to(directories[0], target_is_directory=True)
    beside = Path(files[0]).with_name("not_a_jax_file_really.py")
    return [
        "kernel.py",
        "-",
        "./kernels/kernel.py",
        str(tmp / "kernel.py"),
        str(inside),
        str(link / inside.name),
        str(link),
        str(beside),
        str(Path(files[0]).parent),
        "/",
        *directories,
        *files,
        *(f"{p}/" for p in directories),
        *(os.path.relpath(p) for p in files[:3]),
    ]


def test_the_same_frames_as_jax_keeps(tmp_path: Path) -> None:
    paths = _paths(tmp_path)
    tracebacks._users_file.cache_clear()
    for path in paths:
        assert tracebacks._users_file(path) == traceback_util.include_filename(path), path


@pytest.mark.parametrize("kept", [True, False])
def test_a_directory_reached_through_its_own_ancestor_is_excluded(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, kept: bool
) -> None:
    """Where an excluded directory is the same file as an ancestor of its path (a link back
    up), JAX's ``stat`` comparison excludes what lies beside it: so does smalto's."""
    top = tmp_path / "top"
    top.mkdir()
    (top / "loop").symlink_to(top, target_is_directory=True)
    excluded = str(top / "loop") if not kept else str(tmp_path / "elsewhere")
    monkeypatch.setattr(traceback_util, "_exclude_paths", [excluded])
    tracebacks._users_file.cache_clear()
    tracebacks._is_directory.cache_clear()
    for path in (str(top / "kernel.py"), str(tmp_path / "kernel.py")):
        assert tracebacks._users_file(path) == traceback_util.include_filename(path), path
    tracebacks._users_file.cache_clear()
    tracebacks._is_directory.cache_clear()
