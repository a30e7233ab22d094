"""``smalto fix`` never loses a file: written whole or not at all (a full disk), never over a
save made meanwhile, never read-only ones; a fix in a helper other functions share only
where they still lower; the script run where it lives, as ``python SCRIPT.py`` runs it,
said on stderr, its prints off the diff; no copy of it left behind by a signal."""

from __future__ import annotations

import errno
import fcntl
import json
import os
import runpy
import shutil
import signal
import stat
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import jax
import jax.numpy as jnp
import pytest
from cli_run import Ran, run

import smalto.jax
from smalto.basics import writing
from smalto.basics.writing import ChangedSinceRead, snapshot, write_file

REPO = Path(__file__).resolve().parents[2]
KERNELS = REPO / "tests" / "fix_kernels"
ROW_SUM = ("--arg", "f32[128,128]")
WRONG, RIGHT = b"WGMMA.reduce(0)", b"WGMMA.reduce(1)"  # hopper_row_sum.py's cast, and its fix


def _kernel(folder: Path, text: str | None = None, name: str = "kernel.py") -> Path:
    """``hopper_row_sum.py`` (or ``text``) as ``folder/name``."""
    folder.mkdir(parents=True, exist_ok=True)
    script = folder / name
    script.write_text(text if text is not None else (KERNELS / "hopper_row_sum.py").read_text())
    return script


def _fix(script: Path | str, *args: str) -> Ran:
    return run("fix", f"{script}:row_sums", *ROW_SUM, *args)


def _lowers(script: Path, function: str, *args: Any) -> bool:
    fn = runpy.run_path(str(script))[function]
    try:
        smalto.jax.lower(fn, *args, arch=(9, 0))
    except smalto.jax.KernelLoweringError:
        return False
    return True


def _leftovers(folder: Path, *expected: str) -> list[str]:
    """Files in ``folder`` besides those expected (a temporary file left behind)."""
    return sorted(set(os.listdir(folder)) - set(expected))


# --- written whole, or not at all ----------------------------------------------------------


@pytest.fixture
def small_disk(tmp_path: Path) -> Iterator[Path]:
    """A folder on a 64 KiB tmpfs (root only, where mounting is allowed; else skipped)."""
    folder = tmp_path / "small"
    folder.mkdir()
    if os.geteuid() != 0 or shutil.which("mount") is None:
        pytest.skip("mounting a small tmpfs needs root")
    mounted = subprocess.run(
        ["mount", "-t", "tmpfs", "-o", "size=64k", "tmpfs", str(folder)],
        capture_output=True,
        text=True,
    )
    if mounted.returncode != 0:
        pytest.skip(f"cannot mount a tmpfs here: {mounted.stderr.strip()}")
    try:
        yield folder
    finally:
        subprocess.run(["umount", "-l", str(folder)], capture_output=True)


def test_a_full_disk_leaves_the_script_whole(small_disk: Path) -> None:
    # 40 KB of script on a 64 KiB disk: the fixed copy cannot be written beside it.
    padding = "".join(f"# note {i}: {'x' * 70}\n" for i in range(500))
    script = _kernel(small_disk, (KERNELS / "hopper_row_sum.py").read_text() + padding)
    before = script.read_bytes()
    ran = _fix(script)
    assert ran.status == 1
    assert f"cannot write '{script}': No space left on device; {script} is unchanged" in ran.err
    assert script.read_bytes() == before
    assert _leftovers(small_disk, "kernel.py") == []
    assert "Traceback" not in ran.err


def test_a_write_that_fails_halfway_leaves_the_script_whole(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    script = _kernel(tmp_path)
    before = script.read_bytes()

    def half_then_full(descriptor: int, view: memoryview) -> int:
        os.write(descriptor, view[: len(view) // 2])
        raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))

    monkeypatch.setattr(writing, "_write", half_then_full)
    ran = _fix(script)
    assert ran.status == 1
    assert "No space left on device" in ran.err and "is unchanged" in ran.err
    assert script.read_bytes() == before
    assert _leftovers(tmp_path, "kernel.py") == []


def test_an_interrupt_while_writing_leaves_no_temporary_file(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    target = tmp_path / "out.txt"
    target.write_text("as it was\n")
    monkeypatch.setattr(writing.os, "fsync", _interrupted)
    with pytest.raises(KeyboardInterrupt):
        write_file(target, "half\n", since=snapshot(target))
    assert target.read_text() == "as it was\n"
    assert _leftovers(tmp_path, "out.txt") == []


def _interrupted(descriptor: int) -> None:
    raise KeyboardInterrupt


def test_the_file_a_symlink_names_is_written_with_its_mode(tmp_path: Path) -> None:
    script = _kernel(tmp_path / "real")
    script.chmod(0o640)
    link = tmp_path / "link.py"
    link.symlink_to(script)
    ran = _fix(link)
    assert ran.status == 0, ran.err
    assert link.is_symlink() and link.resolve() == script.resolve()
    assert RIGHT in script.read_bytes() and WRONG not in script.read_bytes()
    assert stat.S_IMODE(script.stat().st_mode) == 0o640


def test_a_read_only_script_is_refused(tmp_path: Path) -> None:
    script = _kernel(tmp_path)
    script.chmod(0o444)  # as root too: the mode bits say no, whatever root may do
    before = script.read_bytes()
    ran = _fix(script)
    assert ran.status == 1
    assert f"smalto: error: {script} is read-only: not written" in ran.err
    assert script.read_bytes() == before
    assert stat.S_IMODE(script.stat().st_mode) == 0o444


# --- a save meanwhile is kept --------------------------------------------------------------


def _save_in_place(path: Path, data: bytes) -> None:
    path.write_bytes(data)  # as most editors save: truncate, then write


def _save_by_rename(path: Path, data: bytes) -> None:
    fresh = path.with_name(path.name + ".editor-save")
    fresh.write_bytes(data)
    os.replace(fresh, path)  # as vim's writebackup and JetBrains' safe write do


@pytest.mark.parametrize(
    ("save", "exchange"),
    [(_save_in_place, True), (_save_by_rename, True), (_save_in_place, False)],
    ids=["in place", "by rename", "in place, no exchange"],
)
def test_a_save_between_the_check_and_the_rename_is_kept(
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    save: Any,
    exchange: bool,
) -> None:
    script = _kernel(tmp_path)
    saved = script.read_bytes() + b"# the author's own edit\n"
    real_exchange = writing._exchange
    saves: list[bool] = []

    def save_first(first: Path, second: Path) -> bool:
        if not saves:  # the save lands after the last check, just before the rename
            saves.append(True)
            save(second, saved)
        return real_exchange(first, second) if exchange else False

    monkeypatch.setattr(writing, "_exchange", save_first)
    ran = _fix(script)
    assert saves, "the fix reached the rename"
    assert ran.status == 1
    assert f"{script} was saved while smalto fix was writing it: the save is kept" in ran.err
    assert script.read_bytes() == saved  # whole: neither the fix, nor a mix
    assert _leftovers(tmp_path, "kernel.py") == []


def test_another_writer_holding_the_lock_is_waited_for(tmp_path: Path) -> None:
    target = tmp_path / "kernel.py"
    target.write_text("as read\n")
    read = snapshot(target)
    raised: list[BaseException] = []

    def write() -> None:
        try:
            write_file(target, "the fix\n", since=read)
        except BaseException as error:
            raised.append(error)

    with open(target, "rb") as other:
        fcntl.flock(other, fcntl.LOCK_EX)  # another smalto, writing it
        writer = threading.Thread(target=write)
        writer.start()
        time.sleep(0.3)
        assert writer.is_alive()  # waiting for the lock
        os.replace(_written(tmp_path / "theirs", "their fix\n"), target)
    writer.join(timeout=10)
    assert not writer.is_alive()
    assert [type(e) for e in raised] == [ChangedSinceRead]
    assert target.read_text() == "their fix\n"


def _written(path: Path, text: str) -> Path:
    path.write_text(text)
    return path


# --- a helper other functions share --------------------------------------------------------


def test_a_shared_helper_is_changed_only_where_the_others_still_lower(tmp_path: Path) -> None:
    script = tmp_path / "hopper_shared_helper.py"
    shutil.copy(KERNELS / script.name, script)
    ran = _fix(script)
    assert ran.status == 0, ran.err
    # The helper's cast retargeted would fix row sums and break column sums: not made.
    assert (
        f"not made: change the layout cast at {script}:13:11 from WGMMA_COL to WGMMA_ROW"
    ) in ran.err
    assert "(it changes _as_sums, which col_sums uses too, and col_sums would no longer lower)" in (
        ran.err
    )
    # The edited text ran once (for JAX's trace of it), and that run served the check of
    # col_sums too: no second run of the same text.
    edited_runs = f"running {script} as edited, to compare JAX's trace of it with the original's"
    assert ran.err.count(edited_runs) == 2  # the retargeted cast, then the cast removed
    assert "to check that col_sums still lowers" not in ran.err
    # The cast removed instead: both lower.
    text = script.read_text()
    assert "def _as_sums(s):\n    return s\n" in text
    x = jax.ShapeDtypeStruct((128, 128), jnp.float32)
    assert _lowers(script, "row_sums", x) and _lowers(script, "col_sums", x)


def test_a_helper_shared_with_a_function_smalto_cannot_lower_is_left(tmp_path: Path) -> None:
    script = tmp_path / "hopper_shared_helper.py"
    text = (KERNELS / script.name).read_text()
    # Another user of the helper, with another signature: the --arg given do not fit it.
    script.write_text(text + "\n\ndef scaled_col_sums(x, scale):\n    return _sums(x, 0) * scale\n")
    before = script.read_bytes()
    ran = _fix(script)
    assert ran.status == 1
    assert (
        "which scaled_col_sums uses too, and scaled_col_sums cannot be lowered with these "
        "arguments to check it still lowers"
    ) in ran.err
    assert "still fails" in ran.err
    assert script.read_bytes() == before


# --- the script runs where it lives ----------------------------------------------------------

SEES = """
import json as _json, os as _os, sys as _sys
from pathlib import Path as _Path

_here = _Path(__file__).parent
SCALE = float((_here / "scale.txt").read_text())  # a file beside the script
_seen = _here / "seen.json"
_runs = _json.loads(_seen.read_text()) if _seen.exists() else []
_runs.append({"file": __file__, "cwd": _os.getcwd(), "path0": _sys.path[0]})
_seen.write_text(_json.dumps(_runs))
"""


@pytest.mark.parametrize(("source", "runs"), [("hopper_row_sum.py", 2), ("hopper_working.py", 1)])
def test_the_script_runs_as_python_runs_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, source: str, runs: int
) -> None:
    project = tmp_path / "project"
    script = _kernel(project, (KERNELS / source).read_text() + SEES)
    (project / "scale.txt").write_text("2.0\n")
    monkeypatch.chdir(tmp_path)
    function = "row_sums" if source == "hopper_row_sum.py" else "matmul"
    args = ROW_SUM if function == "row_sums" else ("--arg", "f16[64,64]", "--arg", "f16[64,128]")
    ran = run("fix", f"project/kernel.py:{function}", *args)
    assert ran.status == 0, ran.err
    seen = json.loads((project / "seen.json").read_text())
    # Once as written, once more as edited (a kernel that lowers as written: once; JAX's
    # own pass lowers the same function), each time announced.
    assert len(seen) == runs
    assert ran.err.count("smalto: note: running project/kernel.py") == runs
    for each in seen:
        assert each == {
            "file": str(tmp_path / "project" / "kernel.py"),  # absolute, as python gives
            "cwd": str(tmp_path),  # the user's own
            "path0": os.path.realpath(project),  # the script's folder
        }
    assert _leftovers(project, "kernel.py", "scale.txt", "seen.json") == []
    if runs == 2:
        assert RIGHT in script.read_bytes()


PRINTS = """
import os as _os

print("the script prints while it loads")
_os.write(1, b"and writes to its standard output itself\\n")
"""


def _smalto(*args: str, cwd: Path, **kwargs: Any) -> subprocess.Popen[str]:
    environment = {**os.environ, "PYTHONPATH": str(REPO)}
    environment.update(kwargs.pop("env", {}))
    return subprocess.Popen(
        [sys.executable, "-m", "smalto", *args],
        cwd=cwd,
        env=environment,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        **kwargs,
    )


def test_under_diff_the_scripts_prints_stay_off_stdout(tmp_path: Path) -> None:
    text = (KERNELS / "hopper_row_sum.py").read_text()
    text = text.replace(
        "        s = jnp.sum(x, axis=1)\n",
        "        print('the kernel body prints while traced')\n        s = jnp.sum(x, axis=1)\n",
    )
    script = _kernel(tmp_path, text + PRINTS)
    before = script.read_bytes()
    process = _smalto("fix", "kernel.py:row_sums", *ROW_SUM, "--diff", cwd=tmp_path)
    out, err = process.communicate(timeout=300)
    assert process.returncode == 0, err
    assert out.startswith("--- a/kernel.py\n+++ b/kernel.py\n@@ ")
    assert all(line[:1] in " +-@" for line in out.splitlines())
    for printed in (
        "the script prints while it loads",
        "and writes to its standard output itself",
        "the kernel body prints while traced",
    ):
        assert printed in err
    assert script.read_bytes() == before
    subprocess.run(["git", "init", "-q"], cwd=tmp_path, check=True)
    applied = subprocess.run(
        ["git", "apply", "-"], cwd=tmp_path, input=out, text=True, capture_output=True
    )
    assert applied.returncode == 0, applied.stderr
    assert RIGHT in script.read_bytes()


SLOW_SECOND_RUN = """
import time as _time
from pathlib import Path as _Path

_runs = _Path(__file__).with_name("runs.txt")
_count = len(_runs.read_text()) if _runs.exists() else 0
_runs.write_text("x" * (_count + 1))
if _count == 1:  # the edited script's run: smalto holds the edit, not yet written
    _Path(__file__).with_name("started").write_text("")
    _time.sleep(120)
"""


@pytest.mark.parametrize(
    ("signum", "status"), [(signal.SIGTERM, 143), (signal.SIGINT, 130)], ids=["TERM", "INT"]
)
def test_a_signal_during_fix_leaves_nothing_behind(
    tmp_path: Path, signum: signal.Signals, status: int
) -> None:
    project = tmp_path / "project"
    script = _kernel(project, (KERNELS / "hopper_row_sum.py").read_text() + SLOW_SECOND_RUN)
    before = script.read_bytes()
    temporary = tmp_path / "tmp"
    temporary.mkdir()
    process = _smalto(
        "fix", f"{script}:row_sums", *ROW_SUM, cwd=tmp_path, env={"TMPDIR": str(temporary)}
    )
    try:
        deadline = time.monotonic() + 240
        while not (project / "started").exists():
            assert process.poll() is None, process.communicate()
            assert time.monotonic() < deadline, "the script's second run never started"
            time.sleep(0.1)
        process.send_signal(signum)
        out, err = process.communicate(timeout=60)
    finally:
        if process.poll() is None:
            process.kill()
    assert process.returncode == status, err
    assert "Traceback" not in err
    assert script.read_bytes() == before
    assert _leftovers(project, "kernel.py", "runs.txt", "started") == []
    assert os.listdir(temporary) == []  # no copy of the script anywhere


HELPERS = """\
LAYOUT = plgpu.Layout.WGMMA.reduce(0)


def _cast(s):
    return plgpu.layout_cast(s, LAYOUT)


@functools.partial(jax.jit)
def fixed(x):
    return _body(x)


def _body(x):
    return _cast(x)


def other(x):
    return _cast(x) + 1


def caller_of_fixed(x):
    return fixed(x) * 2
"""


@pytest.mark.parametrize(
    ("line", "shared"),
    [
        (1, [("LAYOUT", ("other",))]),  # a constant both reach
        (5, [("_cast", ("other",))]),  # the helper both call
        (10, []),  # the function being fixed (its decorator)
        (14, []),  # a helper of the function being fixed alone
        (18, []),  # another function: it is not a helper of the one fixed
        (22, []),  # reaches the helper only through the function being fixed
    ],
)
def test_which_other_functions_use_what_an_edit_changes(
    line: int, shared: list[tuple[str, tuple[str, ...]]]
) -> None:
    from smalto.source.script_uses import shared_definitions

    found = shared_definitions(HELPERS, [line], "fixed")
    assert [(s.name, s.users) for s in found] == shared


# --- other commands write the same way -------------------------------------------------------


def test_infer_output_is_written_whole_through_a_symlink_and_refused_read_only(
    tmp_path: Path,
) -> None:
    module = next((REPO / "tests" / "corpus" / "kernels").glob("*.mlir"))
    output = tmp_path / "out.mlir"
    output.write_text("kept\n")
    output.chmod(0o444)
    ran = run("infer", module, "-o", output)
    assert ran.status == 2
    assert ran.err.strip() == f"smalto: error: cannot write '{output}': it is read-only"
    assert output.read_text() == "kept\n"
    output.chmod(0o644)
    link = tmp_path / "link.mlir"
    link.symlink_to(output)
    assert run("infer", module, "-o", link).status == 0
    assert link.is_symlink() and output.read_text().startswith("module")
    assert _leftovers(tmp_path, "out.mlir", "link.mlir") == []


def test_what_is_no_regular_file_is_written_to_not_replaced(tmp_path: Path) -> None:
    """A pipe (or a device: ``-o /dev/stdout``, ``/dev/full``) is written to as any program
    writes to it: renaming a file over its name would replace the device itself (as root,
    ``smalto infer -o /dev/full`` once turned ``/dev/full`` into a regular file)."""
    fifo = tmp_path / "pipe"
    os.mkfifo(fifo)
    received: list[bytes] = []
    reader = threading.Thread(target=lambda: received.append(fifo.read_bytes()))
    reader.start()
    write_file(fifo, "through the pipe\n")
    reader.join(timeout=10)
    assert received == [b"through the pipe\n"]
    assert stat.S_ISFIFO(os.stat(fifo).st_mode)
    assert _leftovers(tmp_path, "pipe") == []
