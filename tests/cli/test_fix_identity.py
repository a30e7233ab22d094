"""``smalto fix`` keeps the file it writes the file it was (hard links, extended attributes,
line ends, the comment on a line it rewrites, the file's indentation), writes through a
descriptor it is given (``-o /dev/stdout >> build.log``, a pipe), and runs the user's
script as ``python SCRIPT.py`` runs it: ``sys.argv`` the script alone, a ``chdir`` at
import its own, a fork or a loop at import stopped after a time limit with no process
left, and a trace that differs from run to run said as such."""

from __future__ import annotations

import errno
import os
import re
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
from cli_run import run

from smalto.basics import writing
from smalto.basics.writing import snapshot, write_file
from smalto.source.scripts import ScriptError, run_script

REPO = Path(__file__).resolve().parents[2]
KERNELS = REPO / "tests" / "fix_kernels"
ROW_SUM = ("--arg", "f32[128,128]")
WRONG, RIGHT = b"WGMMA.reduce(0)", b"WGMMA.reduce(1)"  # hopper_row_sum.py's cast, and its fix
BLACKWELL = ("--arch", "10.0", "--arg", "f16[128,64]", "--arg", "f16[64,128]")


def _kernel(folder: Path, text: str | bytes | None = None, name: str = "kernel.py") -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    script = folder / name
    data = text if text is not None else (KERNELS / "hopper_row_sum.py").read_bytes()
    script.write_bytes(data.encode() if isinstance(data, str) else data)
    return script


def _xattrs_supported(folder: Path) -> bool:
    probe = folder / ".probe"
    probe.write_text("")
    try:
        os.setxattr(probe, "user.smalto-probe", b"1")
    except (AttributeError, OSError):
        return False
    finally:
        probe.unlink()
    return True


# --- the file's identity --------------------------------------------------------------------


def test_a_hard_linked_script_is_fixed_under_every_name_with_its_attributes(
    tmp_path: Path,
) -> None:
    """The fix is written into the file itself: the other name of a hard link sees it
    (a rename would have left it the unfixed file), and its extended attributes stay."""
    script = _kernel(tmp_path)
    other = tmp_path / "same_kernel.py"
    os.link(script, other)
    os.chmod(script, 0o640)
    labelled = _xattrs_supported(tmp_path)
    if labelled:
        os.setxattr(script, "user.origin", b"reviewed")
    inode = os.stat(script).st_ino
    ran = run("fix", f"{script}:row_sums", *ROW_SUM)
    assert ran.status == 0, ran.err
    assert RIGHT in other.read_bytes() and WRONG not in other.read_bytes()
    assert os.stat(script).st_ino == os.stat(other).st_ino == inode
    assert os.stat(script).st_nlink == 2
    assert os.stat(script).st_mode & 0o777 == 0o640
    if labelled:
        assert os.getxattr(script, "user.origin") == b"reviewed"
    assert sorted(os.listdir(tmp_path)) == ["kernel.py", "same_kernel.py"]


def test_extended_attributes_travel_with_the_renamed_file(tmp_path: Path) -> None:
    if not _xattrs_supported(tmp_path):
        pytest.skip("this file system keeps no user.* extended attributes")
    path = tmp_path / "out.txt"
    path.write_text("old\n")
    os.setxattr(path, "user.label", b"kept")
    write_file(path, "new\n", since=snapshot(path))
    assert path.read_text() == "new\n"
    assert os.getxattr(path, "user.label") == b"kept"


def test_an_attribute_the_rename_would_lose_makes_it_write_in_place(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """An attribute that cannot be copied (a security label only the system sets): the
    file is written in place, so nothing of it is lost; its old bytes come back where
    the write fails halfway."""
    path = tmp_path / "out.txt"
    path.write_text("old and longer\n")
    inode = os.stat(path).st_ino
    monkeypatch.setattr(writing, "_copy_attributes", lambda source, descriptor: False)
    write_file(path, "new\n", since=snapshot(path))
    assert path.read_text() == "new\n" and os.stat(path).st_ino == inode
    assert os.listdir(tmp_path) == ["out.txt"]

    def failing(descriptor: int, payload: bytes) -> None:
        if payload != b"new\n":
            raise OSError(errno.EIO, "Input/output error")
        os.pwrite(descriptor, payload, 0)

    monkeypatch.setattr(writing, "_write_at_start", failing)
    with pytest.raises(OSError, match="Input/output"):
        write_file(path, "a third text, never whole\n", since=snapshot(path))
    assert path.read_text() == "new\n" and os.listdir(tmp_path) == ["out.txt"]


def test_crlf_lines_a_trailing_comment_and_two_space_indentation_are_kept(
    tmp_path: Path,
) -> None:
    """The staged epilogue adds lines: in a CRLF file they end in CRLF, they are indented
    by the file's own step (two spaces), and the store's comment stays with the store."""
    text = (KERNELS / "blackwell_bf16_epilogue.py").read_text()
    text = text.replace(
        "o_gmem[...] = acc.astype(jnp.bfloat16)",
        "o_gmem[...] = acc.astype(jnp.bfloat16)  # the bf16 result, out",
    )
    two_spaces = "\n".join(
        " " * ((len(line) - len(line.lstrip())) // 2) + line.lstrip() if line.strip() else line
        for line in text.split("\n")
    )
    script = _kernel(tmp_path, two_spaces.replace("\n", "\r\n").encode())
    ran = run("fix", f"{script}:matmul_bf16", *BLACKWELL)
    assert ran.status == 0, ran.err
    fixed = script.read_bytes()
    assert b"copy_smem_to_gmem" in fixed
    assert fixed.count(b"\n") == fixed.count(b"\r\n")  # every line still ends in CRLF
    lines = fixed.decode().split("\r\n")
    store = next(line for line in lines if "acc.astype(jnp.bfloat16)" in line)
    assert store.endswith("  # the bf16 result, out")
    nested = lines[lines.index(store) - 1]
    assert nested.lstrip().startswith("def _store_o_gmem_through_smem")
    assert len(store) - len(store.lstrip()) == len(nested) - len(nested.lstrip()) + 2
    assert all((len(line) - len(line.lstrip())) % 2 == 0 for line in lines)


# --- writing through a descriptor -----------------------------------------------------------

WRITE = "from smalto.basics.writing import write_file; write_file('/dev/stdout', 'second\\n')"


def _python(code: str, **kwargs: object) -> subprocess.CompletedProcess[bytes]:
    environment = {**os.environ, "PYTHONPATH": str(REPO)}
    return subprocess.run(
        [sys.executable, "-c", code], env=environment, check=True, timeout=60, **kwargs
    )


def test_output_to_dev_stdout_appends_to_a_redirect_and_fills_a_pipe(tmp_path: Path) -> None:
    """``-o /dev/stdout >> build.log`` appends (the shell opened the log to append; a
    rename would have replaced it), and into a pipe the output flows."""
    log = tmp_path / "build.log"
    log.write_text("first\n")
    with open(log, "ab") as appending:
        _python(WRITE, stdout=appending)
    assert log.read_text() == "first\nsecond\n" and os.listdir(tmp_path) == ["build.log"]
    piped = _python(WRITE, stdout=subprocess.PIPE)
    assert piped.stdout == b"second\n"


# --- the script, run as python runs it ------------------------------------------------------

ARGUMENTS_AND_CHDIR = """
import argparse as _argparse
import os as _os
import sys as _sys

_parser = _argparse.ArgumentParser()
_parser.add_argument("--rows", type=int, default=128)
ROWS = _parser.parse_args().rows  # smalto's own arguments would make this exit 2
assert _sys.argv == [__file__] or _sys.argv[0].endswith("kernel.py"), _sys.argv
assert len(_sys.argv) == 1, _sys.argv
_os.chdir(_os.path.dirname(_os.path.dirname(__file__)))
"""


def test_top_level_argparse_and_a_chdir_at_import(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """``sys.argv`` is the script alone; a script that changes directory at import is fixed
    and written where the user named it (no false "changed since smalto fix read it")."""
    project = tmp_path / "project"
    script = _kernel(
        project / "kernels", (KERNELS / "hopper_row_sum.py").read_text() + ARGUMENTS_AND_CHDIR
    )
    monkeypatch.chdir(project)
    ran = run("fix", "kernels/kernel.py:row_sums", *ROW_SUM)
    assert ran.status == 0, ran.err
    assert RIGHT in script.read_bytes()
    assert os.getcwd() == str(project)


def _script(folder: Path, text: str) -> Path:
    path = folder / "script.py"
    path.write_text(textwrap.dedent(text))
    return path


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    return True


@pytest.mark.filterwarnings("ignore:.*fork:RuntimeWarning", "ignore:.*fork:DeprecationWarning")
@pytest.mark.parametrize(
    ("text", "said"),
    [
        (
            """
            import os, time
            if os.fork() == 0:
                while True:
                    time.sleep(1)
            def f(): pass
            """,
            "did not wait for it (a fork at import?",
        ),
        (
            """
            import os
            os.fork()  # both go on: the child into smalto's own code
            def f(): pass
            """,
            "did not wait for it (a fork at import?",
        ),
        (
            """
            import os, time
            child = os.fork()
            if child == 0:
                time.sleep(600)
            os.waitpid(child, 0)
            """,
            "did not finish loading within 1 s",
        ),
        ("while True:\n    pass\n", "did not finish loading within 1 s"),
    ],
    ids=["fork-and-loop", "fork-and-return", "fork-and-wait", "loop"],
)
def test_a_fork_or_a_loop_at_import_is_stopped_with_no_process_left(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, text: str, said: str
) -> None:
    if not any(Path("/proc/self/task").glob("*/children")):
        pytest.skip("this system lists no process's children (/proc/PID/task/TID/children)")
    monkeypatch.setenv("SMALTO_SCRIPT_TIME_LIMIT", "1")
    script = _script(tmp_path, text)
    before = set(_children())
    with pytest.raises(ScriptError, match="it was stopped") as raised:
        run_script(script, run_name="__smalto_test__")
    assert said in str(raised.value)
    left = [pid for pid in _children() if pid not in before]
    assert left == []
    named = re.search(r"process ([\d, ]+)\)", str(raised.value))
    for pid in named[1].split(", ") if named else []:
        assert not _alive(int(pid))


def test_the_command_says_so_and_exits_2(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("SMALTO_SCRIPT_TIME_LIMIT", "1")
    script = _script(tmp_path, "import time\nwhile True:\n    time.sleep(0.05)\n")
    ran = run("fix", f"{script}:f", "--arg", "f32[8]")
    assert ran.status == 2
    assert "did not finish loading within 1 s" in ran.err
    assert "SMALTO_SCRIPT_TIME_LIMIT=SECONDS" in ran.err and "Traceback" not in ran.err


def _children() -> list[int]:
    found: list[int] = []
    for task in Path("/proc/self/task").iterdir():
        try:
            found += [int(pid) for pid in (task / "children").read_text().split()]
        except OSError:
            pass
    return found


RANDOM_LITERAL = """
import random as _random

SCALE = 1.0 + _random.random()  # a new literal each run


def scaled_row_sums(x):
    return row_sums(x * SCALE)
"""


def test_a_trace_that_differs_from_run_to_run_is_said_so(tmp_path: Path) -> None:
    """A random literal at the top level makes every run's trace differ: no edit can be
    proven, and that is what is said (not "would change what the kernel computes")."""
    script = _kernel(tmp_path, (KERNELS / "hopper_row_sum.py").read_text() + RANDOM_LITERAL)
    before = script.read_bytes()
    ran = run("fix", f"{script}:scaled_row_sums", *ROW_SUM)
    assert ran.status == 1
    assert "differs between two runs of the unedited script" in ran.err
    assert "would change what the kernel computes" not in ran.err
    assert script.read_bytes() == before
