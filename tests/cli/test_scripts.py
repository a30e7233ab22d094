"""``SCRIPT.py:FUNCTION`` loaded as ``python SCRIPT.py`` would load it, for ``smalto capture``
and ``smalto fix`` (``smalto.source.scripts``): neighbours importable, the ``__main__``
part not run, and the user's mistakes said in one line by both commands."""

from __future__ import annotations

import os
import sys
from pathlib import Path

import pytest

from smalto.cli.main import main
from smalto.source.scripts import ScriptError, script_function


def _script(folder: Path, body: str) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    script = folder / "kernel.py"
    script.write_text(body)
    return script


def test_the_function_sees_its_neighbours_and_main_does_not_run(tmp_path: Path) -> None:
    folder = tmp_path / "project"
    _script(folder, "")
    (folder / "helper_mod_for_scripts.py").write_text("VALUE = 41\n")
    script = _script(
        folder,
        "import helper_mod_for_scripts\n"
        "def f():\n    return helper_mod_for_scripts.VALUE + 1\n"
        "if __name__ == '__main__':\n    raise SystemExit('ran as main')\n",
    )
    before = list(sys.path)
    function = script_function(script, "f", run_name="__test__")
    assert function() == 42
    assert sys.path == before  # the script's folder is on sys.path only while it loads
    sys.modules.pop("helper_mod_for_scripts", None)


@pytest.mark.parametrize(
    ("body", "message"),
    [
        ("raise SystemExit(3)\n", "'{script}' exited while being loaded"),
        ("1 / 0\n", "loading '{script}' failed: ZeroDivisionError: division by zero"),
        ("g = 1\n", "'{script}' defines no function 'f'"),
    ],
)
def test_a_script_that_cannot_be_used(tmp_path: Path, body: str, message: str) -> None:
    script = _script(tmp_path, body)
    with pytest.raises(ScriptError) as error:
        script_function(script, "f", run_name="__test__")
    assert str(error.value) == message.format(script=script)
    # A copy of a script names it as the user knows it.
    with pytest.raises(ScriptError, match="the script (exited|failed|defines)"):
        script_function(script, "f", run_name="__test__", subject="the script")


def test_capture_reports_a_failing_script_in_one_line(
    tmp_path: Path, capsys: pytest.CaptureFixture
) -> None:
    script = _script(tmp_path, "import no_such_module_anywhere\n")
    assert main(["capture", f"{script}:f", "--arg", "f32[8]"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert err == [
        f"smalto: error: loading '{script}' failed: ModuleNotFoundError: "
        "No module named 'no_such_module_anywhere'"
    ]


def test_the_script_runs_in_its_own_place(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    folder = tmp_path / "project"
    script = _script(
        folder,
        "import os, sys\n"
        "SEEN = (__file__, os.getcwd(), sys.path[0], sys.argv[0])\n"
        "def f():\n    return SEEN\n",
    )
    monkeypatch.chdir(tmp_path)
    function = script_function(Path("project/kernel.py"), "f", run_name="__test__")
    # As python project/kernel.py: __file__ absolute, the working directory the user's, the
    # script's real folder first on sys.path, argv[0] the path as given.
    assert function() == (str(script), str(tmp_path), os.path.realpath(folder), "project/kernel.py")


def test_an_edited_text_runs_in_the_files_place(tmp_path: Path) -> None:
    script = _script(tmp_path, "def f():\n    return 1\n")
    edited = "\ufeffdef f():\n    return __file__\n"  # a BOM, as an editor may keep it
    assert script_function(script, "f", run_name="__test__", text=edited)() == str(script)
    assert script.read_text() == "def f():\n    return 1\n"  # nothing written
    assert sorted(p.name for p in tmp_path.iterdir()) == ["kernel.py"]  # nor copied


def test_sources_read_a_script_running_as_edited_as_edited(tmp_path: Path) -> None:
    from smalto.source.files import Sources, reading_as_edited

    script = _script(tmp_path, "as on disk\n")
    with reading_as_edited(script, "as edited\n"):
        assert Sources().line(str(script), 1) == "as edited"
    assert Sources().line(str(script), 1) == "as on disk"
