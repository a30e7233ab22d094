"""The benchmarks stand below the faces: no module of ``bench/`` imports ``smalto.cli``
(nor ``smalto.__main__``), not even in the code it hands a fresh process to run; a command
is run as the user runs it, ``python -m smalto ...``."""

from __future__ import annotations

import ast
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

BENCH = Path(__file__).resolve().parents[2] / "bench"
FACES = ("smalto.cli", "smalto.__main__")


def _imported(tree: ast.AST) -> Iterator[tuple[int, str]]:
    """Every module ``tree`` imports, with its line, and those of the Python source in its
    string constants (a script handed to ``python -c``)."""
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            yield from ((node.lineno, alias.name) for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and not node.level:
            yield node.lineno, node.module
            yield from ((node.lineno, f"{node.module}.{alias.name}") for alias in node.names)
        elif isinstance(node, ast.Constant) and isinstance(node.value, str):
            try:
                script = ast.parse(node.value)
            except SyntaxError:
                continue
            yield from ((node.lineno, name) for _, name in _imported(script))


def _is_face(name: str) -> bool:
    return any(name == face or name.startswith(f"{face}.") for face in FACES)


def test_no_benchmark_imports_the_command_line() -> None:
    found = [
        f"{path.relative_to(BENCH.parent)}:{line}: {name}"
        for path in sorted(BENCH.rglob("*.py"))
        for line, name in _imported(ast.parse(path.read_text(), str(path)))
        if _is_face(name)
    ]
    assert not found, "bench/ imports the command line:\n" + "\n".join(found)


def test_the_finder_sees_an_import_in_a_script_string() -> None:
    # (What the test above would miss were the script strings not read.)
    script = 'CODE = """\nimport sys\nfrom smalto.cli.draw import build_parser\n"""\n'
    assert any(_is_face(name) for _, name in _imported(ast.parse(script)))


@pytest.mark.parametrize("child", ["bench.route_first_kernel", "bench.fresh_process"])
def test_a_fresh_process_benchmark_loads_no_smalto_before_it_times_the_import(child: str) -> None:
    # The child processes of ``bench.route_first_kernel`` and ``bench.first_call`` time
    # ``import smalto...`` as a user's process pays it: importing the module that runs
    # them must not have loaded smalto already (bench.run and the corpus helpers do).
    script = (
        f"import sys, {child}; "
        "print(sorted(name for name in sys.modules if name.split('.')[0] == 'smalto'))"
    )
    done = subprocess.run(
        [sys.executable, "-c", script],
        cwd=BENCH.parent,
        capture_output=True,
        text=True,
        check=True,
    )
    assert done.stdout.strip() == "[]", done.stdout
